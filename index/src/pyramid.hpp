// A stream's summary pyramid: levels of time buckets, each twice as wide as
// the one below, built in one pass as items arrive in key order. Completed
// nodes go to fixed-size pages in the index file; each level keeps only its
// page table, a partly filled page and the bucket it is still filling.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "prefault.hpp"
#include "table.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {

constexpr uint32_t kPageBytes = 4096;
constexpr uint32_t kNodesPerPage = kPageBytes / sizeof(Node);  // 56
// The finest stored level holds about this many items per bucket where a
// stream is dense; finer zooms decode the chunks instead. It sets the index
// size (pages are ~16 bytes a bucket: 48 items made 0.126 of the trace, 192
// makes 0.045) against how coarse the zooms just above the decode budget
// are (docs/PERFORMANCE.md, `index.size_ratio`).
constexpr uint64_t kLeafItems = 192;
constexpr uint32_t kMaxShift = 62;

// [offset, offset + size) lies within `total` bytes, without the addition
// (an offset read from a damaged index may be near 2^64).
inline bool fits_in(uint64_t offset, uint64_t size, uint64_t total) { return offset <= total && size <= total - offset; }

struct PageRef {  // 24 bytes
  uint64_t offset = 0;        // in the index file
  uint64_t first_bucket = 0;
  uint16_t count = 0;         // nodes
  uint16_t bytes = 0;         // packed size
  uint32_t checksum = 0;      // low 32 bits of XXH3-64 of the packed bytes
};

// A page's nodes, packed (docs/INDEX.md): interval-like nodes column by
// column, bit-packed at each field's widest width over the page; counter
// nodes as varints relative to the previous bucket and to the bucket's
// start. A node never takes more than kMaxPackedNode bytes. pack_nodes
// writes to out and returns the bytes written; unpack_nodes reads `size`
// bytes and may load up to kPagePadding bytes past them (never used).
constexpr size_t kMaxPackedNode = 96;
constexpr size_t kPagePadding = 16;
size_t pack_nodes(StreamKind kind, uint32_t shift, const Node* nodes, uint32_t count, uint8_t* out);
bool unpack_nodes(StreamKind kind, uint32_t shift, uint64_t first_bucket, const uint8_t* p, size_t size,
                  uint32_t count, Node* out);

struct Level {
  Table<PageRef> pages;
  // One byte a page of a loaded index (in State::verified_pages): 1 once
  // its checksum has matched. The file does not change under its mapping,
  // so a page is checked the first time a query reads it, not every time
  // (that was a sixth of a query over the whole trace). Null while a
  // builder makes the level.
  uint8_t* verified = nullptr;
  std::vector<Node> tail;  // completed, not yet written
  Node open;               // the bucket being filled
  bool has_open = false;
};

// Appends pages to the index file, from any thread. Pages are gathered and
// written a megabyte at a time: a write a page cost ~2 us of system time,
// 230 000 of them at 2*10^9 events. A page is in the file only after flush().
class PageWriter {
 public:
  explicit PageWriter(int fd, uint64_t first_offset)
      : fd_(fd), next_(first_offset), gathered_at_(first_offset) {}
  // Packs the nodes as one page and gives it its place; false if writing failed.
  bool write(StreamKind kind, uint32_t shift, const Node* nodes, uint32_t count, PageRef& ref);
  // Appends other bytes (a chunk's resume points) and gives their place;
  // false if writing failed.
  bool append(const uint8_t* p, size_t n, uint64_t& offset);
  // Writes the pages gathered so far; false if writing failed.
  bool flush();
  uint64_t end() const {
    std::lock_guard lock(mu_);
    return next_;
  }
  const std::string& error() const { return error_; }  // once the writers are done

 private:
  static constexpr size_t kGather = 1u << 20;
  bool flush_locked();
  int fd_;
  mutable std::mutex mu_;
  uint64_t next_;         // the end of the pages, gathered ones included
  uint64_t gathered_at_;  // where gathered_ goes in the file
  std::vector<uint8_t> gathered_;
  std::string error_;
};

// Inline: the indexer folds every item of a trace through these.
inline bool interval_like(StreamKind kind) { return kind != StreamKind::Counter; }
// Job segments name each bucket by its longest item: a CPU's (Sched) by its
// task, a task's (Task) by its CPU.
inline bool names_longest(StreamKind kind) { return kind == StreamKind::Sched || kind == StreamKind::Task; }
[[gnu::always_inline]] inline uint32_t longest_label(const Item& it) {
  return it.kind == StreamKind::Task ? it.cpu : it.name;
}

// Node::iv.truncated plus k items cut (the count stops short of the high bit).
[[gnu::always_inline]] inline uint32_t plus_truncated(uint32_t t, uint32_t k) {
  const uint64_t n = std::min<uint64_t>(uint64_t(t & ~kLongestTruncated) + k, ~kLongestTruncated);
  return (t & kLongestTruncated) | uint32_t(n);
}
// Node::iv.truncated with its high bit saying whether the longest item (a new one) is cut.
[[gnu::always_inline]] inline uint32_t longest_truncated(uint32_t t, bool cut) {
  return (t & ~kLongestTruncated) | (cut ? kLongestTruncated : 0);
}
// A cut item (dur, end, name) counted into a node whose longest it may be
// alike with. Alike ones (a frame cut where the outer one ended, begun at
// its tick) are one to the picture, and which of them a bucket keeps
// depends on the order they were folded in (a lane's nodes by depth, merged,
// against its stream's): the longest is cut if any of them is.
[[gnu::always_inline]] inline uint32_t count_cut(uint32_t t, uint64_t dur, uint64_t end, uint64_t name,
                                                 uint64_t max_dur, uint64_t longest_end, uint64_t longest_name) {
  t = plus_truncated(t, 1);
  return dur == max_dur && end == longest_end && name == longest_name ? t | kLongestTruncated : t;
}

// The node of one item: `n` must be value-initialized (zero).
inline void set_leaf(Node& n, const Item& it, uint64_t bucket) {
  n.bucket = bucket;
  n.count = 1;
  if (it.kind == StreamKind::Counter) {
    n.s.min = n.s.max = n.s.first = n.s.last = n.s.sum = it.value;
    n.s.first_ts = n.s.last_ts = it.end;
    return;
  }
  uint64_t dur = it.end - it.start;
  n.max_depth = it.depth;
  n.iv.busy = it.kind == StreamKind::Send ? uint64_t(it.value) : dur;
  n.iv.min_dur = n.iv.max_dur = dur;
  n.iv.longest_end = it.end;
  if (names_longest(it.kind)) n.iv.longest_name = longest_label(it);  // a CPU's: the task; a task's: the CPU
  n.iv.truncated = it.truncated ? 1 | kLongestTruncated : 0;
  n.iv.min_start = it.start;
  n.iv.max_end = it.end;
}

inline Node leaf_node(const Item& it, uint64_t bucket) {
  Node n;
  set_leaf(n, it, bucket);
  return n;
}

// Whether an item (dur, end, name) is the longest in place of the one a
// node has: the longest; of equal ones the first to end, then the smallest
// name. Items taken in key order (a name's stream) keep the first of equal
// ones by this rule; a depth stream's names come one run after the other,
// and merges join nodes made apart, so each asks. (Shorter, the usual case,
// is settled by the first two compares.)
[[gnu::always_inline]] inline bool longer(uint64_t dur, uint64_t end, uint64_t name, uint64_t max_dur,
                                          uint64_t longest_end, uint64_t longest_name) {
  return dur > max_dur || (dur == max_dur && (end < longest_end || (end == longest_end && name < longest_name)));
}

// Adds an item to a node that holds at least one: what merging its
// leaf_node does, without building that node (the indexer and the decoding
// queries add every item here; a 72-byte node built on the stack and read
// back stalled on store forwarding).
[[gnu::always_inline]] inline void add_item(Node& a, const Item& it) {
  ++a.count;
  if (it.kind == StreamKind::Counter) {
    a.s.min = std::min(a.s.min, it.value);
    a.s.max = std::max(a.s.max, it.value);
    a.s.last = it.value;
    a.s.sum += it.value;
    a.s.last_ts = it.end;
    return;
  }
  const uint64_t dur = it.end - it.start;
  a.max_depth = std::max(a.max_depth, it.depth);
  a.iv.busy += it.kind == StreamKind::Send ? uint64_t(it.value) : dur;
  a.iv.min_dur = std::min(a.iv.min_dur, dur);
  const bool sched = names_longest(it.kind);
  const uint32_t label = longest_label(it);
  if (sched) {  // a CPU's segments: the longest one's task, as merge() keeps it
    if (longer(dur, it.end, label, a.iv.max_dur, a.iv.longest_end, a.iv.longest_name)) {
      a.iv.max_dur = dur, a.iv.longest_end = it.end, a.iv.longest_name = label;
      a.iv.truncated = longest_truncated(a.iv.truncated, it.truncated);
    }
  } else if (dur > a.iv.max_dur) {
    a.iv.max_dur = dur, a.iv.longest_end = it.end;
    a.iv.truncated = longest_truncated(a.iv.truncated, it.truncated);
  }
  if (it.truncated) [[unlikely]]
    a.iv.truncated = count_cut(a.iv.truncated, dur, it.end, sched ? label : 0, a.iv.max_dur, a.iv.longest_end,
                               sched ? a.iv.longest_name : 0);
  a.iv.min_start = std::min(a.iv.min_start, it.start);
  a.iv.max_end = std::max(a.iv.max_end, it.end);
}

// Folds an item into an answer of buckets of 2^shift ticks, as fold() does its leaf_node.
[[gnu::always_inline]] inline void fold_item(std::vector<Node>& out, const Item& it, uint32_t shift) {
  const uint64_t bucket = it.key() >> shift;
  if (!out.empty() && out.back().bucket == bucket) {
    add_item(out.back(), it);
  } else {
    set_leaf(out.emplace_back(), it, bucket);
  }
}

// Adds to `open` (a bucket of 2^shift ticks that holds an item already)
// the items item(j), item(j + 1), ... of one stream of this kind while they
// fall in it: what add_item() does to each, with the bucket's fields held in
// registers and the kind tested once. Returns the first item past it.
template <class ItemAt>
[[gnu::always_inline]] inline size_t accumulate(Node& open, StreamKind kind, uint32_t shift, size_t j, size_t n,
                                                ItemAt&& item) {
  const size_t first = j;
  const uint64_t bucket = open.bucket;
  if (kind == StreamKind::Counter) {
    double mn = open.s.min, mx = open.s.max, last = open.s.last, sum = open.s.sum;
    uint64_t last_ts = open.s.last_ts;
    for (; j < n && item(j).key() >> shift == bucket; ++j) {
      const Item& it = item(j);
      mn = std::min(mn, it.value), mx = std::max(mx, it.value), last = it.value, sum += it.value;
      last_ts = it.end;
    }
    open.s.min = mn, open.s.max = mx, open.s.last = last, open.s.sum = sum, open.s.last_ts = last_ts;
  } else {
    const bool send = kind == StreamKind::Send;
    const bool sched = names_longest(kind);  // names the longest item's task or CPU (add_item())
    uint32_t depth = open.max_depth;
    uint64_t busy = open.iv.busy, min_dur = open.iv.min_dur, max_dur = open.iv.max_dur;
    uint64_t longest_end = open.iv.longest_end, min_start = open.iv.min_start, max_end = open.iv.max_end;
    uint32_t longest_name = open.iv.longest_name, truncated = open.iv.truncated;
    for (; j < n && item(j).key() >> shift == bucket; ++j) {
      const Item& it = item(j);
      const uint32_t label = longest_label(it);
      const uint64_t dur = it.end - it.start;
      depth = std::max(depth, it.depth);
      busy += send ? uint64_t(it.value) : dur;
      min_dur = std::min(min_dur, dur);
      if (sched ? longer(dur, it.end, label, max_dur, longest_end, longest_name) : dur > max_dur) {
        max_dur = dur, longest_end = it.end, longest_name = sched ? label : longest_name;
        truncated = longest_truncated(truncated, it.truncated);
      }
      if (it.truncated) [[unlikely]]
        truncated = count_cut(truncated, dur, it.end, sched ? label : 0, max_dur, longest_end, sched ? longest_name : 0);
      min_start = std::min(min_start, it.start);
      max_end = std::max(max_end, it.end);
    }
    open.max_depth = depth;
    open.iv.busy = busy, open.iv.min_dur = min_dur, open.iv.max_dur = max_dur;
    open.iv.longest_end = longest_end, open.iv.min_start = min_start, open.iv.max_end = max_end;
    open.iv.longest_name = longest_name, open.iv.truncated = truncated;
  }
  open.count += uint32_t(j - first);
  return j;
}

// Folds n items of one stream of this kind (in key order) into an answer of
// buckets of 2^shift ticks: fold_item() on each, a bucket's run at a time.
inline void fold_items(std::vector<Node>& out, StreamKind kind, uint32_t shift, const Item* items, size_t n) {
  auto at = [items](size_t j) -> const Item& { return items[j]; };
  for (size_t j = 0; j < n;) {
    const uint64_t bucket = items[j].key() >> shift;
    if (out.empty() || out.back().bucket != bucket) {
      set_leaf(out.emplace_back(), items[j++], bucket);
    } else {
      j = accumulate(out.back(), kind, shift, j, n, at);
    }
  }
}

// Folds intervals as fold_items does, but a node holds one depth: a bucket
// has a node for each depth its items are at, at the tail of `out` (a lane's
// decoded answer by name, whose nodes the timeline draws in their depth's
// row: one node for a recursion that ended in one column drew the outer call
// in the inner one's row, its own row empty).
inline void fold_intervals_by_depth(std::vector<Node>& out, uint32_t shift, const Item* items, size_t n) {
  size_t first = out.size();  // where the last bucket's nodes begin
  while (first > 0 && out[first - 1].bucket == out.back().bucket) --first;
  for (size_t j = 0; j < n; ++j) {
    const Item& it = items[j];
    const uint64_t bucket = it.key() >> shift;
    if (out.empty() || out.back().bucket != bucket) first = out.size();
    size_t k = first;
    while (k < out.size() && out[k].max_depth != it.depth) ++k;
    if (k == out.size()) set_leaf(out.emplace_back(), it, bucket);
    else accumulate(out[k], StreamKind::Interval, shift, j, j + 1, [items](size_t i) -> const Item& { return items[i]; });
  }
}

// Folds `b` (whose items all come after a's) into `a`. Always inline: it is
// the inner step of every fold, and a training that folded few stored nodes
// made it a call in query_levels (docs/PERFORMANCE.md, index.query_warm_us).
[[gnu::always_inline]] inline void merge(StreamKind kind, Node& a, const Node& b) {
  if (b.count == 0) return;
  if (a.count == 0) {
    uint64_t bucket = a.bucket;
    a = b;
    a.bucket = bucket;
    return;
  }
  a.count += b.count;
  if (!interval_like(kind)) {
    a.s.min = std::min(a.s.min, b.s.min);
    a.s.max = std::max(a.s.max, b.s.max);
    a.s.last = b.s.last;
    a.s.sum += b.s.sum;
    a.s.last_ts = b.s.last_ts;
    return;
  }
  a.max_depth = std::max(a.max_depth, b.max_depth);
  a.iv.busy += b.iv.busy;
  a.iv.min_dur = std::min(a.iv.min_dur, b.iv.min_dur);
  const bool b_longer =
      longer(b.iv.max_dur, b.iv.longest_end, b.iv.longest_name, a.iv.max_dur, a.iv.longest_end, a.iv.longest_name);
  if (b_longer) {
    a.iv.max_dur = b.iv.max_dur, a.iv.longest_end = b.iv.longest_end, a.iv.longest_name = b.iv.longest_name;
    a.iv.truncated = longest_truncated(a.iv.truncated, b.iv.truncated & kLongestTruncated);
  }
  if (b.iv.truncated) [[unlikely]] {  // (nearly never: the stored levels' folds pass it by)
    a.iv.truncated = plus_truncated(a.iv.truncated, truncated_items(b));
    if (!b_longer && b.iv.max_dur == a.iv.max_dur && b.iv.longest_end == a.iv.longest_end &&
        b.iv.longest_name == a.iv.longest_name)
      a.iv.truncated |= b.iv.truncated & kLongestTruncated;  // alike: count_cut()
  }
  a.iv.min_start = std::min(a.iv.min_start, b.iv.min_start);
  a.iv.max_end = std::max(a.iv.max_end, b.iv.max_end);
}

struct Stream {
  StreamInfo info;
  std::vector<Level> levels;

  // Inline: the indexer adds every item of a trace through here, and most
  // fall into the bucket being filled. Forced: g++ made it a call, and
  // inlined it built 2*10^8 events ~1.5 % faster (three alternating pairs).
  [[gnu::always_inline]] void add(const Item& it, PageWriter& pages) {
    ++info.items;
    if (!levels.empty() && levels[0].has_open) {
      Node& open = levels[0].open;
      const uint64_t bucket = it.key() >> info.leaf_shift;
      if (open.bucket == bucket) {
        add_item(open, it);
        return;
      }
    }
    add_new_bucket(it, pages);
  }
  // Adds n items of this stream, in key order (item(j) is the j-th): what
  // add() does to each, a bucket's run at a time (accumulate()).
  template <class ItemAt>
  void add_run(size_t n, ItemAt&& item, PageWriter& pages) {
    for (size_t j = 0; j < n;) {
      if (levels.empty() || !levels[0].has_open || item(j).key() >> info.leaf_shift != levels[0].open.bucket) {
        ++info.items;
        add_new_bucket(item(j++), pages);
        continue;
      }
      const size_t from = j;
      j = accumulate(levels[0].open, info.kind, info.leaf_shift, j, n, item);
      info.items += j - from;
    }
  }
  // Adds a bucket of items gathered elsewhere (a depth stream's, from a
  // chunk), at the leaf level: in bucket order, as items come in key order.
  void add_node(const Node& n, PageWriter& pages);
  // Closes every open bucket: the stream is complete.
  void finish(PageWriter& pages);

 private:
  void add_new_bucket(const Item& it, PageWriter& pages);
  void open_leaf(const Node& n, PageWriter& pages);  // completes the open leaf bucket, and opens n
  void complete(size_t level, Node node, PageWriter& pages);  // by value: `levels` may grow
};

// Unpacks the nodes of page `page` of `st`'s level into out (room for
// kNodesPerPage), from a mapping of its file (or with pread where the
// mapping does not reach): how many, or 0 if the page is damaged.
uint32_t read_page(const Stream& st, uint32_t level, size_t page, const uint8_t* map, size_t map_size, int fd,
                   Node* out);

// Checks the checksum of page `page` of `st`'s level (a loaded index's, in
// the mapping) ahead of its first read, and marks it checked, so that the
// query that first reads it need not (IndexWarmer). False if it is not in
// the mapping, or does not match: a query then checks it and leaves it out.
bool verify_page(const Stream& st, uint32_t level, size_t page, const uint8_t* map, size_t map_size);

// Where a stored answer for buckets of 2^shift ticks (shift >= the stream's
// leaf shift) over [t0, t1] reads: buckets [b0, b1] of stored level
// `stored`, from its page `first`, answered `up` levels above it (odd
// levels are not stored) in buckets of 2^answer_shift ticks.
struct LevelWindow {
  size_t stored;
  uint32_t up, answer_shift;
  uint64_t b0, b1;
  size_t first;
};
LevelWindow level_window(const Stream& st, uint64_t t0, uint64_t t1, uint32_t shift);

// The buckets of 2^shift ticks (shift >= the stream's leaf shift) whose key
// lies in [t0, t1], from the stored levels of a stream, the growing edge
// included. `read(level, page, Node* out)` unpacks page `page` of a level
// into out as read_page does (0: damaged, left out).
template <class ReadPage>
void query_levels(const Stream& st, uint64_t t0, uint64_t t1, uint32_t shift, ReadPage&& read, Buckets& out);

// Asks the kernel at once for the pages of a loaded index (in `map`) that
// query_levels(st, t0, t1, shift) will read and that no one has read yet
// (not checked), at most kAskPages of them, without waiting for them. The
// mapping reads a page a fault (IndexFile::map_pages), and a query's faults
// come one after another: a lane's ~20 streams read a page or more each,
// each fault a trip to the disk. Asked for together, they are read
// together. Returns how many pages it asked for.
constexpr size_t kAskPages = 64;
size_t ask_for_pages(const Stream& st, uint64_t t0, uint64_t t1, uint32_t shift, const uint8_t* map,
                     size_t map_size);

// The leaf shift for a stream that has `count` items in a chunk spanning
// `span` ticks: leaves of about `leaf_items` items.
uint32_t choose_leaf_shift(uint64_t count, uint64_t span, uint64_t leaf_items = kLeafItems);

// Folds a node into the answer: merged with the last one when it has the same bucket.
[[gnu::always_inline]] inline void fold(StreamKind kind, std::vector<Node>& out, const Node& n) {
  if (!out.empty() && out.back().bucket == n.bucket) {
    merge(kind, out.back(), n);
  } else {
    out.push_back(n);
  }
}

template <class ReadPage>
void query_levels(const Stream& st, uint64_t t0, uint64_t t1, uint32_t shift, ReadPage&& read, Buckets& out) {
  const StreamKind kind = st.info.kind;
  const LevelWindow w = level_window(st, t0, t1, shift);  // (a lambda captures these: not a binding, for clang 14)
  const size_t stored = w.stored, first = w.first;
  const uint32_t up = w.up;
  const uint64_t b0 = w.b0, b1 = w.b1;
  out.shift = w.answer_shift;
  const Level& lv = st.levels[stored];
  const size_t pages = lv.pages.size();
  // Reserved once (at most the nodes of the pages read), not grown by
  // doubling; new memory is mapped in one call (prefault.hpp).
  size_t most = lv.tail.size() + st.levels.size();
  for (size_t p = first; p < pages && lv.pages[p].first_bucket <= b1; ++p) most += lv.pages[p].count;
  reserve_prefaulted(out.nodes, out.nodes.size() + most);
  auto take = [&](Node n) {
    n.bucket >>= up;
    fold(kind, out.nodes, n);
  };
  // Each page is unpacked into a page-sized array (in the L1 cache) and
  // taken from there: a stored level's nodes copied whole, an odd level's
  // pairs folded on the way. Unpacking into the answer itself meant
  // zero-filling it first and, for an odd level, writing every node twice.
  Node nodes[kNodesPerPage];
  for (size_t page = first; page < pages && lv.pages[page].first_bucket <= b1; ++page) {
    const uint32_t count = read(uint32_t(stored), page, nodes);
    uint32_t i = 0, j = count;
    while (i < j && nodes[i].bucket < b0) ++i;  // the window's first page
    while (j > i && nodes[j - 1].bucket > b1) --j;  // and its last
    if (up == 0) {
      out.nodes.insert(out.nodes.end(), nodes + i, nodes + j);
      continue;
    }
    // Pairs into one bucket (a pair split by a page boundary too). Not
    // through a copy of the node: rewriting its bucket and reading it back
    // whole stalled on store forwarding, a quarter of the fold.
    for (; i < j; ++i) {
      const uint64_t bucket = nodes[i].bucket >> up;
      if (!out.nodes.empty() && out.nodes.back().bucket == bucket) {
        merge(kind, out.nodes.back(), nodes[i]);
      } else {
        out.nodes.push_back(nodes[i]);
        out.nodes.back().bucket = bucket;
      }
    }
  }
  for (const Node& n : lv.tail)
    if (n.bucket >= b0 && n.bucket <= b1) take(n);
  // Still filling (a growing trace): the open buckets of this level and of
  // those below it, which hold the newest items.
  for (size_t l = stored + 1; l-- > 0;) {
    const Level& below = st.levels[l];
    if (!below.has_open) continue;
    Node n = below.open;
    n.bucket >>= (stored - l);
    if (n.bucket >= b0 && n.bucket <= b1) take(n);
  }
}

// Calls on_leaf(node) for every leaf bucket of an interval-like stream that
// may hold an item running across t: min_start <= t < max_end (a bucket
// after t holds one then; the bucket of t may not, its items before t
// starting early and those after it late). It descends from the top stored
// level into such buckets only, so it reads about levels x (buckets found)
// nodes, not the stream. A growing stream's open buckets, not yet in the
// levels above, are searched as roots too. In bucket order.
template <class ReadPage, class OnLeaf>
void stab_levels(const Stream& st, uint64_t t, ReadPage&& read, OnLeaf&& on_leaf) {
  if (st.levels.empty()) return;
  auto holds = [t](const Node& n) { return n.count && n.iv.min_start <= t && n.iv.max_end > t; };
  // Bucket ranges to search, at each stored (even) level.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> ranges(st.levels.size());
  const size_t top = (st.levels.size() - 1) & ~size_t(1);
  ranges[top].emplace_back(0, UINT64_MAX);
  std::vector<Node> leaves;  // found, to be given in bucket order
  for (size_t l = 0; l < st.levels.size(); ++l) {
    const Level& lv = st.levels[l];
    if (!lv.has_open || !holds(lv.open)) continue;
    if (l == 0) {
      leaves.push_back(lv.open);
      continue;
    }
    const uint64_t b = lv.open.bucket;  // its completed buckets below, one or two levels down
    if (l & 1) ranges[l - 1].emplace_back(b << 1, b << 1 | 1);
    else ranges[l - 2].emplace_back(b << 2, b << 2 | 3);
  }
  Node nodes[kNodesPerPage];
  for (size_t level = top + 2; level >= 2;) {
    level -= 2;
    std::vector<std::pair<uint64_t, uint64_t>>& want = ranges[level];
    if (want.empty()) continue;
    std::sort(want.begin(), want.end());
    const Level& lv = st.levels[level];
    const uint64_t first = t >> std::min<uint32_t>(63, st.info.leaf_shift + uint32_t(level));
    size_t page = SIZE_MAX;  // the page in `nodes`
    uint32_t count = 0;
    auto take = [&](const Node& n, uint64_t lo, uint64_t hi) {
      if (n.bucket < lo || n.bucket > hi || !holds(n)) return;
      if (level == 0) {
        leaves.push_back(n);
      } else {
        ranges[level - 2].emplace_back(n.bucket << 2, n.bucket << 2 | 3);
      }
    };
    for (const std::pair<uint64_t, uint64_t>& range : want) {
      // (Not a structured binding: the lambda below captures lo, which clang 14 refuses of a binding.)
      const uint64_t lo = std::max(range.first, first), hi = range.second;
      if (lo > hi) continue;
      size_t p = partition_index(lv.pages, 0, lv.pages.size(), [&](const PageRef& r) { return r.first_bucket <= lo; });
      for (p = p ? p - 1 : 0; p < lv.pages.size() && lv.pages[p].first_bucket <= hi; ++p) {
        if (p != page) count = read(uint32_t(level), p, nodes), page = p;
        for (uint32_t i = 0; i < count; ++i) take(nodes[i], lo, hi);
      }
      for (const Node& n : lv.tail) take(n, lo, hi);
    }
  }
  std::sort(leaves.begin(), leaves.end(), [](const Node& a, const Node& b) { return a.bucket < b.bucket; });
  for (const Node& n : leaves) on_leaf(n);
}

}  // namespace tinescope::index
