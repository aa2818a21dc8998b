// Depth streams (StreamKind::Depth): per feedlet, the intervals of every
// name at one nesting depth, each bucket naming its longest item. A lane of
// 20 names on 3 depths answers a coarse zoom as 3 streams instead of 20
// (docs/INDEX.md, "Depth streams"): its cost follows the rows drawn, not the
// names the lane has.
//
// The indexer adds them after a chunk's name streams, from those streams'
// runs of items: each run (one name, in key order) is folded into buckets
// that cover the chunk's time, one array a depth, and the buckets then go to
// the depth streams' pyramids in order. Every aggregate of a node but the
// longest item is order-free, and that one only breaks ties by order, so
// gathering the depth's items in key order first (a merge of the names'
// runs) is not needed.
#pragma once

#include <cstdint>
#include <vector>

#include "chunk_walk.hpp"
#include "pyramid.hpp"

namespace tinescope::index {

struct FeedletState;

// A depth stream's leaf holds about this many items where it is dense: the
// time of a name's 192 items where a depth holds 8 names. Finer leaves (192
// items for each name the depth has, from 4 names' worth) made index_bench's
// index 0.050 of the trace, past the goal; a depth of one name then repeated
// that name's pyramid (docs/PERFORMANCE.md, index.size_ratio).
constexpr uint64_t kDepthLeafItems = 8 * kLeafItems;

// The depth stream an interval at `depth` belongs to.
inline uint32_t depth_stream_key(uint32_t depth) { return depth < kDepthStreams ? depth : kDepthStreams - 1; }

// The node of one interval in a depth stream: set_leaf(), and its name as the longest.
inline void set_depth_leaf(Node& n, const Item& it, uint64_t bucket) {
  set_leaf(n, it, bucket);
  n.iv.longest_name = it.name;
}

// Folds an interval into a depth stream's answer of buckets of 2^shift
// ticks (in key order), as fold_item() does into a name's, with longer()'s rule.
inline void fold_depth_item(std::vector<Node>& out, const Item& it, uint32_t shift) {
  const uint64_t bucket = it.key() >> shift;
  if (out.empty() || out.back().bucket != bucket) return set_depth_leaf(out.emplace_back(), it, bucket);
  Node& n = out.back();
  const uint64_t dur = it.end - it.start;
  const bool longest = longer(dur, it.end, it.name, n.iv.max_dur, n.iv.longest_end, n.iv.longest_name);
  const uint32_t cut = n.iv.truncated;  // (add_item() judges the longest without names: set again here)
  add_item(n, it);
  n.iv.truncated = cut;
  if (longest) {
    n.iv.max_dur = dur, n.iv.longest_end = it.end, n.iv.longest_name = it.name;
    n.iv.truncated = longest_truncated(cut, it.truncated);
  }
  if (it.truncated)
    n.iv.truncated = count_cut(n.iv.truncated, dur, it.end, it.name, n.iv.max_dur, n.iv.longest_end, n.iv.longest_name);
}

// A worker's buffers for folding chunks into depth streams, kept from chunk to chunk.
class DepthFold {
 public:
  // Adds the chunk's intervals (runs[k]: the items of f.streams[k]) to f's
  // depth streams, making those it lacks (their leaf from their density in
  // the chunk, which spans ticks [first_ts, last_ts]).
  void add_chunk(FeedletState& f, const std::vector<ItemRun>& runs, uint64_t first_ts, uint64_t last_ts,
                 PageWriter& pages);

 private:
  struct Depth {
    int stream = -1;  // in f.streams
    uint32_t shift = 0;
    uint64_t base = 0;        // the bucket of nodes[0]
    uint64_t size = 0;        // buckets an item may fold into: 0 until prepare(), and once done
    std::vector<Node> nodes;  // the chunk's buckets, count 0 where empty
    bool used = false;        // nodes are this chunk's
    bool done = false;        // folded by an earlier pass over this chunk
  };
  void prepare(Depth& d);
  // Folds the items of one name's run that fall in a depth with buckets; the
  // others (a depth without a stream yet, or outside the chunk's buckets)
  // are counted in missing[] or put aside.
  void fold_run(const Item* run, size_t n);
  // An item outside its depth's `size` buckets: counts it as missing, skips
  // it (done), puts it aside, or prepares the depth and returns true to fold it.
  bool fold_rare(Depth& d, uint32_t key, const Item& it);
  void flush(FeedletState& f, PageWriter& pages);
  Depth depth_[kDepthStreams];
  uint64_t first_ts_ = 0, last_ts_ = 0;
  uint64_t missing_[kDepthStreams] = {};  // items of depths without a stream
  std::vector<Item> aside_;  // items outside their depth's buckets (a chunk whose header lies)
};

}  // namespace tinescope::index
