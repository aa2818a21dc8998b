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
  if (buckets > kMostChunkBuckets) {
    d.nodes.clear();  // every item put aside
  } else {
    d.nodes.assign(size_t(buckets), Node());
  }
}

void DepthFold::fold_run(const Item* run, size_t n) {
  for (size_t j = 0; j < n;) {
    const uint32_t key = depth_stream_key(run[j].depth);
    Depth& d = depth_[key];
    if (d.stream < 0) {
      ++missing_[key], ++j;
      continue;
    }
    if (d.done) {
      ++j;
      continue;
    }
    if (!d.used) prepare(d);
    const uint64_t bucket = run[j].key() >> d.shift;
    if (bucket - d.base >= d.nodes.size()) {  // (below base too: it wraps)
      aside_.push_back(run[j++]);
      continue;
    }
    Node& a = d.nodes[size_t(bucket - d.base)];
    if (a.count == 0) set_depth_leaf(a, run[j++], bucket);
    // The rest of the run at this depth and in this bucket, the bucket's
    // fields in registers (as accumulate() does). A run is one name's.
    const size_t first = j;
    uint32_t depth = a.max_depth;
    uint64_t busy = a.iv.busy, min_dur = a.iv.min_dur, max_dur = a.iv.max_dur;
    uint64_t longest_end = a.iv.longest_end, min_start = a.iv.min_start, max_end = a.iv.max_end;
    const uint64_t name = run[0].name;
    uint64_t longest_name = a.iv.longest_name;
    for (; j < n && run[j].key() >> d.shift == bucket && depth_stream_key(run[j].depth) == key; ++j) {
      const Item& it = run[j];
      const uint64_t dur = it.end - it.start;
      depth = std::max(depth, it.depth);
      busy += dur;
      min_dur = std::min(min_dur, dur);
      if (longer(dur, it.end, name, max_dur, longest_end, longest_name))
        max_dur = dur, longest_end = it.end, longest_name = name;
      min_start = std::min(min_start, it.start);
      max_end = std::max(max_end, it.end);
    }
    a.count += uint32_t(j - first);
    a.max_depth = depth;
    a.iv.busy = busy, a.iv.min_dur = min_dur, a.iv.max_dur = max_dur;
    a.iv.longest_end = longest_end, a.iv.min_start = min_start, a.iv.max_end = max_end;
    a.iv.longest_name = longest_name;
  }
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
    d.used = false;
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
    d.used = d.done = false;
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
