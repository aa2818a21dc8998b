// What runs at a time t in a feedlet: the intervals open on its stack
// (from the resume point before t), the jobs running on its CPUs, the
// locks it holds, and the long intervals that span t from before the
// segment it is in.
#include <algorithm>
#include <bit>
#include <optional>
#include <queue>
#include <span>
#include <tuple>

#include "depth_streams.hpp"
#include "parallel_tasks.hpp"
#include "query_walk.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {

namespace {

WalkState final_state(const FeedletState& f) {
  WalkState w;
  for (const OpenInterval& o : f.final_open) add_to_state(w, o);
  return w;
}

// The parts of what runs across a time that a caller asks for.
enum AcrossPart : unsigned { kOpenPart = 1, kJobsPart = 2, kSpansPart = 4, kHoldsPart = 8, kAllParts = 15 };

// The next resume point's tick after where a walk of chunk k starts: the
// end of the segment that holds t, so of the short complete intervals that
// run across it (span_streams.hpp). UINT64_MAX where the chunk has none (or
// they cannot be read): the walk then takes the chunk to its end, more than
// the segment, never less.
uint64_t segment_end(const State& s, const FeedletState& f, size_t k, const WalkStart& start, ChunkBuffers& buf) {
  thread_local std::vector<WalkFrom> points;  // memory kept
  points.clear();
  const std::span<const uint8_t> packed = s.resume_points(f.chunks[k], buf);
  if (packed.empty() ||
      !list_points(packed.data(), packed.data() + packed.size(), s.chunks[f.chunks[k].chunk].first_ts, points))
    return UINT64_MAX;
  const uint64_t from = start.inside ? start.point.event : 0;
  for (const WalkFrom& p : points)
    if (p.event > from) return p.ts;
  return UINT64_MAX;
}

// The long complete intervals across t: from the span stream's buckets that
// hold one. A leaf of one item names it; a leaf of more is walked over its
// time after t (neighbouring leaves in one walk).
template <class Take>
void long_spans(const State& s, const FeedletState& f, uint64_t t, Take&& take) {
  const int span = f.find(stream_key(StreamKind::Span, 0));
  if (span < 0) return;
  const Stream& st = f.streams[size_t(span)];
  std::vector<std::pair<uint64_t, uint64_t>> walks;  // key ranges
  stab_levels(st, t, [&](uint32_t level, size_t page, Node* nodes) { return s.read_page(st, level, page, nodes); },
              [&](const Node& n) {
                if (n.count == 1) return take(span_leaf_item(n));
                const uint32_t shift = st.info.leaf_shift;
                const uint64_t lo = std::max(n.bucket << shift, t + 1);
                const uint64_t hi =
                    shift + std::bit_width(n.bucket) >= 64 ? UINT64_MAX : ((n.bucket + 1) << shift) - 1;
                if (!walks.empty() && walks.back().second + 1 >= lo) walks.back().second = hi;
                else walks.emplace_back(lo, hi);
              });
  for (const auto& [lo, hi] : walks) walk_items_in(s, f, lo, hi, take);
}

// What runs across t in f (the parts asked, of those f records), with one
// walk of the chunk that holds t: from the resume point before t to t for
// the walk's state there (open intervals, running jobs), on to the end of
// t's segment where complete intervals are asked for. Where t falls between
// chunks, the state is the next chunk's snapshot and no walk is needed.
RunningAcross running_across_in(const State& s, const FeedletState& f, uint64_t t, unsigned parts) {
  RunningAcross out;
  // A feedlet that never begins an interval (a scheduler's, an import's
  // complete events) has no stack, and so on: no walk for what it lacks.
  if (f.type_counts[format::kIntervalBegin] + f.type_counts[format::kFuncEnter] + f.type_counts[format::kLockContend] == 0)
    parts &= ~unsigned(kOpenPart);
  if (f.type_counts[format::kJobStart] + f.type_counts[format::kJobResume] == 0) parts &= ~unsigned(kJobsPart);
  if (f.type_counts[format::kIntervalComplete] == 0) parts &= ~unsigned(kSpansPart);
  if (f.type_counts[format::kLockAcquire] == 0) parts &= ~unsigned(kHoldsPart);
  if (parts == 0) return out;
  auto take_state = [&](WalkState&& w) {
    if (parts & kOpenPart) out.open = std::move(w.stack);
    for (OpenInterval& o : out.open) o.name &= ~kLockWaitBit;
    // (Held locks ride with the running jobs: chunk_walk.hpp, kHoldBit.)
    for (const RunningJob& r : w.running) {
      if (!is_hold(r)) {
        if (parts & kJobsPart) out.jobs.push_back(r);
      } else if (parts & kHoldsPart) {
        out.holds.push_back(HeldLock{r.task & ~kHoldBit, r.job, r.start});
      }
    }
  };
  auto take_span = [&](const Item& it) {
    if (it.complete && it.start <= t && t < it.end) out.spans.push_back(it);
  };
  const size_t after = chunks_starting_by(s, f, t);
  if (after == 0) {  // before the first chunk
    take_state(f.chunks.empty() ? final_state(f) : state_at(f, 0));
  } else if (s.chunks[f.chunks[after - 1].chunk].last_ts <= t) {  // after its events: the next one's snapshot
    take_state(after == f.chunks.size() ? final_state(f) : state_at(f, after));
  } else {
    const size_t k = after - 1;
    PayloadBuffer lease;
    ChunkBuffers& buf = lease.get();
    // From the last resume point at or before t (one stands after events
    // before it only), up to t, or on to the segment's end.
    WalkStart start = start_in(s, f, k, t + 1, UINT64_MAX, buf);
    const uint64_t until = parts & kSpansPart ? segment_end(s, f, k, start, buf) : t;
    // The state at t is the walk's before its first event after t (or at
    // its end where it has none): on_event sees each event before it applies.
    WalkState& w = start.state;
    std::optional<WalkState> at_t;
    walk_feedlet_chunk(
        s, *s.layouts, f, k, w, buf,
        [&](uint64_t ts, uint16_t) {
          if (ts > t && !at_t && (parts & (kOpenPart | kJobsPart | kHoldsPart))) at_t = w;
        },
        take_span, until, start.from());
    take_state(at_t ? std::move(*at_t) : std::move(w));
  }
  std::sort(out.jobs.begin(), out.jobs.end(), [](const RunningJob& a, const RunningJob& b) { return a.cpu < b.cpu; });
  std::sort(out.holds.begin(), out.holds.end(), [](const HeldLock& a, const HeldLock& b) {
    return std::tie(a.start, a.lock, a.id) < std::tie(b.start, b.lock, b.id);
  });
  if (parts & kSpansPart) {
    long_spans(s, f, t, take_span);
    auto order = [](const Item& a) { return std::tie(a.start, a.end, a.depth, a.name); };
    std::sort(out.spans.begin(), out.spans.end(), [&](const Item& a, const Item& b) { return order(a) < order(b); });
    out.spans.erase(std::unique(out.spans.begin(), out.spans.end(),
                                [&](const Item& a, const Item& b) { return order(a) == order(b); }),
                    out.spans.end());
  }
  return out;
}

}  // namespace

RunningAcross TraceIndex::running_across(uint32_t feedlet, uint64_t t) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  return f ? running_across_in(*s_, *f, t, kAllParts) : RunningAcross{};
}

std::vector<OpenInterval> TraceIndex::open_at(uint32_t feedlet, uint64_t t) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  return f ? running_across_in(*s_, *f, t, kOpenPart).open : std::vector<OpenInterval>{};
}

std::vector<RunningJob> TraceIndex::running_at(uint32_t feedlet, uint64_t t) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  return f ? running_across_in(*s_, *f, t, kJobsPart).jobs : std::vector<RunningJob>{};
}

std::vector<HeldLock> TraceIndex::held_at(uint32_t feedlet, uint64_t t) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  return f ? running_across_in(*s_, *f, t, kHoldsPart).holds : std::vector<HeldLock>{};
}

std::vector<Item> TraceIndex::spanning(uint32_t feedlet, uint64_t t) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  return f ? running_across_in(*s_, *f, t, kSpansPart).spans : std::vector<Item>{};
}

}  // namespace tinescope::index
