#include "depth_streams.hpp"

#include <algorithm>

#include "state.hpp"

namespace tinescope::index {

namespace {

// A chunk's buckets in a depth are an array while they are at most this
// many: a depth's leaf holds ~1 500 items and a chunk ~16 000 events, so a
// chunk spans a few. More (a leaf chosen where the depth was sparse, then a
// burst) and the depth's items are sorted instead.
constexpr uint64_t kMostChunkBuckets = 4096;

}  // namespace

void DepthFold::prepare(Depth& d) {
  d.used = true;
  d.base = first_ts_ >> d.shift;
  const uint64_t buckets = (last_ts_ >> d.shift) - d.base + 1;
  // More buckets than kMostChunkBuckets: size 0, every item put aside.
  d.size = buckets > kMostChunkBuckets ? 0 : buckets;
  // Empty buckets hold what any item replaces, so that folding the first
  // item is folding any other (no branch, no wait on the count's store).
  d.nodes.resize(size_t(d.size));
  for (size_t i = 0; i < d.nodes.size(); ++i) {
    Node& n = d.nodes[i];
    n = Node();
    n.bucket = d.base + i;
    n.iv.min_dur = n.iv.min_start = UINT64_MAX;
    n.iv.longest_end = UINT64_MAX;  // longer() than none: an item of zero ticks too
  }
}

void DepthFold::fold_run(const Item* run, size_t n) {
  // One item at a time, into its bucket in memory. A name's run changes
  // depth every item or two (a function called at two depths), so holding
  // a bucket in registers while the depth stays ended on a mispredicted
  // branch every ~1.5 items, which cost more than the fold (~9 ns an item).
  // Every rare case (a depth with no stream, or already folded, or not yet
  // prepared this chunk, or a bucket outside the chunk's) fails the one
  // range check: its `size` is 0 until prepare().
  const uint64_t name = run[0].name;
  for (size_t j = 0; j < n; ++j) {
    const Item& it = run[j];
    const uint32_t key = depth_stream_key(it.depth);
    Depth& d = depth_[key];
    const uint64_t bucket = it.key() >> d.shift;
    if (bucket - d.base >= d.size) [[unlikely]] {  // (below base too: it wraps)
      if (!fold_rare(d, key, it)) continue;  // else prepared, and it is in range
    }
    Node& a = d.nodes[size_t(bucket - d.base)];
    const uint64_t dur = it.end - it.start;
    ++a.count;
    a.max_depth = std::max(a.max_depth, it.depth);
    a.iv.busy += dur;
    a.iv.min_dur = std::min(a.iv.min_dur, dur);
    a.iv.min_start = std::min(a.iv.min_start, it.start);
    a.iv.max_end = std::max(a.iv.max_end, it.end);
    if (longer(dur, it.end, name, a.iv.max_dur, a.iv.longest_end, a.iv.longest_name)) {
      a.iv.max_dur = dur, a.iv.longest_end = it.end, a.iv.longest_name = uint32_t(name);
      a.iv.truncated = longest_truncated(a.iv.truncated, it.truncated);
    }
    if (it.truncated) [[unlikely]]
      a.iv.truncated = count_cut(a.iv.truncated, dur, it.end, name, a.iv.max_dur, a.iv.longest_end, a.iv.longest_name);
  }
}

bool DepthFold::fold_rare(Depth& d, uint32_t key, const Item& it) {
  if (d.stream < 0) {
    ++missing_[key];
    return false;
  }
  if (d.done) return false;
  if (!d.used) {
    prepare(d);
    if ((it.key() >> d.shift) - d.base < d.size) return true;
  }
  aside_.push_back(it);
  return false;
}

void DepthFold::flush(FeedletState& f, PageWriter& pages) {
  // Items put aside, by depth and key: each joins its depth's buckets in order.
  std::stable_sort(aside_.begin(), aside_.end(), [](const Item& a, const Item& b) {
    const uint32_t da = depth_stream_key(a.depth), db = depth_stream_key(b.depth);
    return da != db ? da < db : a.key() < b.key();
  });
  std::vector<Node> merged;
  size_t next_aside = 0;
  for (uint32_t key = 0; key < kDepthStreams; ++key) {
    Depth& d = depth_[key];
    if (!d.used) continue;
    Stream& st = f.streams[size_t(d.stream)];
    size_t end_aside = next_aside;
    while (end_aside < aside_.size() && depth_stream_key(aside_[end_aside].depth) == key) ++end_aside;
    if (end_aside == next_aside) {
      for (const Node& n : d.nodes)
        if (n.count) st.add_node(n, pages);
    } else {
      merged.clear();
      for (const Node& n : d.nodes)
        if (n.count) merged.push_back(n);
      for (size_t i = next_aside; i < end_aside; ++i)
        set_depth_leaf(merged.emplace_back(), aside_[i], aside_[i].key() >> d.shift);
      std::stable_sort(merged.begin(), merged.end(), [](const Node& a, const Node& b) { return a.bucket < b.bucket; });
      for (const Node& n : merged) st.add_node(n, pages);
    }
    next_aside = end_aside;
    d.used = false, d.size = 0;
  }
}

void DepthFold::add_chunk(FeedletState& f, const std::vector<ItemRun>& runs, uint64_t first_ts, uint64_t last_ts,
                          PageWriter& pages) {
  first_ts_ = first_ts, last_ts_ = last_ts;
  aside_.clear();
  for (uint32_t key = 0; key < kDepthStreams; ++key) {
    Depth& d = depth_[key];
    d.stream = f.find(stream_key(StreamKind::Depth, key));
    d.shift = d.stream < 0 ? 0 : f.streams[size_t(d.stream)].info.leaf_shift;
    d.used = d.done = false, d.size = 0;
    missing_[key] = 0;
  }
  const size_t names = std::min(runs.size(), f.streams.size());
  auto fold_all = [&] {
    for (size_t k = 0; k < names; ++k)
      if (runs[k].size() && f.streams[k].info.kind == StreamKind::Interval) fold_run(runs[k].data(), runs[k].size());
  };
  fold_all();
  // Depths seen for the first time: their streams, then a second pass for them alone.
  bool made = false;
  for (uint32_t key = 0; key < kDepthStreams; ++key) {
    Depth& d = depth_[key];
    d.done = d.stream >= 0;
    d.size = 0;  // a second pass folds nothing more into these
    if (missing_[key] == 0) continue;
    Stream st;
    st.info.kind = StreamKind::Depth;
    st.info.feedlet = f.id;
    st.info.key = key;
    st.info.leaf_shift = choose_leaf_shift(missing_[key], last_ts - first_ts, kDepthLeafItems);
    d.stream = int(f.streams.size());
    d.shift = st.info.leaf_shift;
    f.insert(stream_key(StreamKind::Depth, key), uint32_t(d.stream));
    f.streams.push_back(std::move(st));
    made = true;
  }
  if (made) fold_all();
  flush(f, pages);
}

}  // namespace tinescope::index
