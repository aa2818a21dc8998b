// Needle finding through the pyramids' max-duration summaries.
#include "tinescope/analysis/needles.hpp"

#include <algorithm>
#include <map>
#include <queue>


namespace tinescope::analysis {

using index::Buckets;
using index::Node;
using index::StreamInfo;
using index::TraceIndex;

namespace {

struct Entry {
  uint64_t dur = 0, end = 0;  // the longest item under it (an item: itself)
  uint32_t stream = 0, shift = 0;
  uint64_t bucket = 0;
  bool item = false;
  Record rec;
};
// Longest first; on a tie an item before a bucket, then the earlier end.
struct After {
  bool operator()(const Entry& a, const Entry& b) const {
    if (a.dur != b.dur) return a.dur < b.dur;
    if (a.item != b.item) return !a.item;
    return a.end > b.end;
  }
};

// Base streams of an index, as the search sees them.
struct IndexSource {
  const TraceIndex& ix;
  std::vector<int> ids;
  std::vector<StreamInfo> info;
  size_t size() const { return ids.size(); }
  uint32_t leaf(size_t i) const { return info[i].leaf_shift; }
  uint32_t top(size_t i) const { return info[i].leaf_shift + std::max(info[i].levels, 1u) - 1; }
  Buckets nodes(size_t i, uint64_t t0, uint64_t t1, uint32_t shift) const { return ix.query_shift(ids[i], t0, t1, shift); }
  void items(size_t i, uint64_t t0, uint64_t t1, std::vector<Record>& out) const {
    for (const index::Item& it : ix.items(ids[i], t0, t1)) out.push_back(Record{it.start, it.end, Record::interval_value(it), it.name, info[i].feedlet});
  }
};

struct StoredSource {
  const DerivedStream& s;
  size_t size() const { return 1; }
  uint32_t leaf(size_t) const { return s.leaf_shift(); }
  uint32_t top(size_t) const { return s.top_shift(); }
  Buckets nodes(size_t, uint64_t t0, uint64_t t1, uint32_t shift) const { return s.query_shift(t0, t1, shift); }
  void items(size_t, uint64_t t0, uint64_t t1, std::vector<Record>& out) const {
    auto r = s.records(t0, t1);
    out.insert(out.end(), r.begin(), r.end());
  }
};

template <class Source>
std::vector<Record> search(const Source& src, const NeedleQuery& q, NeedleCost* cost) {
  std::vector<Record> out;
  if (q.k == 0 || q.t1 < q.t0) return out;
  std::priority_queue<Entry, std::vector<Entry>, After> heap;
  auto push_nodes = [&](size_t i, uint64_t t0, uint64_t t1, uint32_t shift) {
    Buckets b = src.nodes(i, t0, t1, shift);
    for (const Node& n : b.nodes)
      if (n.count && n.iv.max_dur >= q.min_duration)
        heap.push(Entry{n.iv.max_dur, n.iv.longest_end, uint32_t(i), b.shift, n.bucket, false, {}});
  };
  for (size_t i = 0; i < src.size(); ++i) push_nodes(i, q.t0, q.t1, src.top(i));
  std::vector<Record> items;
  while (!heap.empty() && out.size() < q.k) {
    Entry e = heap.top();
    heap.pop();
    if (e.item) {
      out.push_back(e.rec);
      continue;
    }
    // The bucket's key range, within the window.
    uint64_t from = std::max(q.t0, e.bucket << e.shift);
    uint64_t last = e.shift >= 64 || ((e.bucket + 1) << e.shift) == 0 ? UINT64_MAX : ((e.bucket + 1) << e.shift) - 1;
    uint64_t to = std::min(q.t1, last);
    if (cost) ++cost->nodes_opened;
    if (e.shift > src.leaf(e.stream)) {
      // Two levels down: the stored (even) levels, up to four children.
      push_nodes(e.stream, from, to, std::max(src.leaf(e.stream), e.shift >= 2 ? e.shift - 2 : 0));
      continue;
    }
    if (cost) ++cost->leaves_decoded;
    items.clear();
    src.items(e.stream, from, to, items);
    for (const Record& r : items)
      if (r.duration() >= q.min_duration) heap.push(Entry{r.duration(), r.end, e.stream, 0, 0, true, r});
  }
  return out;
}

bool plain_base(const Expr& e) {
  return (e.op == Op::Intervals || e.op == Op::Instants) && e.filter.depth < 0 && e.filter.values.empty() &&
         e.filter.where.empty();
}

IndexSource index_source(const TraceIndex& ix, std::vector<int> ids) {
  IndexSource src{ix, std::move(ids), {}};
  auto all = ix.streams();
  for (int id : src.ids) src.info.push_back(all[size_t(id)]);
  return src;
}

}  // namespace

std::vector<Record> longest(const TraceIndex& ix, const std::vector<int>& streams, const NeedleQuery& q, NeedleCost* cost) {
  return search(index_source(ix, streams), q, cost);
}

std::vector<Record> longest(const DerivedStream& s, const NeedleQuery& q, NeedleCost* cost) {
  if (!s.intervals()) return {};
  return search(StoredSource{s}, q, cost);
}

std::vector<Record> longest(const TraceIndex& ix, const Expr& e, const NeedleQuery& q, std::string& error,
                            const EvalOptions& options, NeedleCost* cost) {
  if (!yields_intervals(e)) {
    error = std::string(op_name(e.op)) + " makes samples, not intervals: no durations to rank";
    return {};
  }
  NeedleQuery nq = q;
  nq.t0 = std::max(q.t0, options.t0);
  nq.t1 = std::min(q.t1, options.t1);
  if (plain_base(e)) return longest(ix, select_streams(ix, e), nq, cost);
  if (e.op == Op::Longer && plain_base(e.args[0])) {
    nq.min_duration = std::max(nq.min_duration, duration_ticks(ix, e.ns) + 1);
    return longest(ix, select_streams(ix, e.args[0]), nq, cost);
  }
  auto s = DerivedStream::evaluate(ix, e, error, options);
  if (!s) return {};
  return longest(*s, nq, cost);
}

std::vector<Outlier> outliers(const TraceIndex& ix, const Expr& base, double factor, size_t per_name, NeedleCost* cost) {
  std::vector<Outlier> out;
  if (!plain_base(base)) return out;
  auto all = ix.streams();
  std::map<uint32_t, std::vector<int>> by_name;
  for (int id : select_streams(ix, base)) by_name[all[size_t(id)].key].push_back(id);
  const double tpn = ix.catalog_snapshot()->clock.ticks_per_ns();
  for (auto& [name, ids] : by_name) {
    uint64_t count = 0;
    double busy = 0;
    for (int id : ids) {
      const StreamInfo& s = all[size_t(id)];
      for (const Node& n : ix.query_shift(id, 0, UINT64_MAX, s.leaf_shift + std::max(s.levels, 1u) - 1).nodes)
        count += n.count, busy += double(n.iv.busy);
    }
    if (count == 0) continue;
    const double mean = busy / double(count);
    NeedleQuery q;
    q.k = per_name;
    const double threshold = mean * factor;
    q.min_duration = threshold >= 1.8e19 ? UINT64_MAX : uint64_t(threshold) + 1;
    for (const Record& r : longest(ix, ids, q, cost))
      out.push_back(Outlier{r, mean / tpn, mean > 0 ? double(r.duration()) / mean : 0});
  }
  std::sort(out.begin(), out.end(), [](const Outlier& a, const Outlier& b) { return a.ratio > b.ratio; });
  return out;
}

}  // namespace tinescope::analysis
