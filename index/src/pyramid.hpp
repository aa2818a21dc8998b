// A stream's summary pyramid: levels of time buckets, each twice as wide as
// the one below, built in one pass as items arrive in key order. Completed
// nodes go to fixed-size pages in the index file; each level keeps only its
// page table, a partly filled page and the bucket it is still filling.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "tinescope/trace_index.hpp"

namespace tinescope::index {

constexpr uint32_t kPageBytes = 4096;
constexpr uint32_t kNodesPerPage = kPageBytes / sizeof(Node);  // 56
// The finest stored level holds about this many items per bucket where a
// stream is dense; finer zooms decode the chunks instead. It trades index
// size (72 bytes per bucket) against the work of a query below that level.
constexpr uint64_t kLeafItems = 48;
constexpr uint32_t kMaxShift = 62;

struct PageRef {  // 24 bytes
  uint64_t offset = 0;        // in the index file
  uint64_t first_bucket = 0;
  uint16_t count = 0;         // nodes
  uint16_t bytes = 0;         // packed size
  uint32_t checksum = 0;      // low 32 bits of XXH3-64 of the packed bytes
};

// A page's nodes, packed (docs/INDEX.md): varints relative to the previous
// bucket and to the bucket's start, which makes a node about 20 bytes.
void pack_nodes(StreamKind kind, uint32_t shift, const Node* nodes, uint32_t count, std::string& out);
bool unpack_nodes(StreamKind kind, uint32_t shift, uint64_t first_bucket, const uint8_t* p, size_t size,
                  uint32_t count, Node* out);

struct Level {
  std::vector<PageRef> pages;
  std::vector<Node> tail;  // completed, not yet written
  Node open;               // the bucket being filled
  bool has_open = false;
};

// Appends pages to the index file, from any thread.
class PageWriter {
 public:
  explicit PageWriter(int fd, uint64_t first_offset) : fd_(fd), next_(first_offset) {}
  // Writes the nodes as one page; false if the write failed.
  bool write(StreamKind kind, uint32_t shift, const Node* nodes, uint32_t count, PageRef& ref);
  uint64_t end() const { return next_.load(); }
  const std::string& error() const { return error_; }

 private:
  int fd_;
  std::atomic<uint64_t> next_;
  std::string error_;
};

Node leaf_node(const Item& it, uint64_t bucket);
// Folds `later` (whose items all come after into's) into `into`.
void merge(StreamKind kind, Node& into, const Node& later);
bool interval_like(StreamKind kind);

struct Stream {
  StreamInfo info;
  std::vector<Level> levels;

  void add(const Item& it, PageWriter& pages);
  // Closes every open bucket: the stream is complete.
  void finish(PageWriter& pages);

 private:
  void complete(size_t level, Node node, PageWriter& pages);  // by value: `levels` may grow
};

// The leaf shift for a stream that has `count` items in a chunk spanning `span` ticks.
uint32_t choose_leaf_shift(uint64_t count, uint64_t span);

}  // namespace tinescope::index
