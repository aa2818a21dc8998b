// A summary pyramid over items that are not the trace's: a derived stream's
// records (analysis/). Built and queried by the same code as the trace's
// own streams, so a derived stream answers at every zoom exactly as a
// base stream does. The caller keeps the items, and the file: the node
// pages go into it after whatever the caller wrote there.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {

class ItemPyramid {
 public:
  // For `count` items of `kind` whose keys span `key_span` ticks; pages go
  // to `fd` from offset `pages_at`.
  ItemPyramid(StreamKind kind, uint64_t count, uint64_t key_span, int fd, uint64_t pages_at);
  ~ItemPyramid();
  ItemPyramid(const ItemPyramid&) = delete;
  ItemPyramid& operator=(const ItemPyramid&) = delete;

  // Items in key order (Item::key()).
  void add(const Item& it);
  // Closes every open bucket and writes the last pages: false with a message
  // if writing failed. `file_end`: where the pages end.
  bool finish(uint64_t& file_end, std::string& error);

  uint32_t leaf_shift() const;
  uint32_t top_shift() const;  // the coarsest level's
  // Whether buckets of 2^shift ticks come from the pages (else the caller
  // folds its items with fold_item()).
  bool answers(uint32_t shift) const;
  // The buckets of 2^shift ticks whose key lies in [t0, t1] (answers(shift)),
  // from the pages in `map` (the file mapped, `map_size` bytes) or read
  // from the file beyond it.
  void query(uint64_t t0, uint64_t t1, uint32_t shift, const uint8_t* map, size_t map_size, Buckets& out) const;

  // Folds one item into `nodes`, buckets of 2^shift ticks in key order, as
  // a query finer than a stream's leaves does.
  static void fold_item(std::vector<Node>& nodes, const Item& it, uint32_t shift);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tinescope::index
