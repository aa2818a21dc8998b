#include "tinescope/render/stream_picture.hpp"

#include <algorithm>
#include <cmath>

namespace tinescope::render {

namespace {

// A bucket of intervals where they lie (they are keyed by their end: drawn
// at the bucket's own time, each would be a line at its end).
void add_bar(StreamPicture& p, const index::Node& n, const trace::ClockMap& clock, const TimeAxis& axis) {
  if (!n.count) return;
  const double x0 = axis.x(clock.to_ns(n.iv.min_start)), x1 = axis.x(clock.to_ns(n.iv.max_end));
  const double len = double(n.iv.max_end - n.iv.min_start);
  const float cover = n.count == 1 || len <= 0 ? 1.f : float(std::min(1.0, double(n.iv.busy) / len));
  p.bars.push_back({x0, std::max(x1, x0), cover});
}

}  // namespace

StreamPicture build_stream_picture(const analysis::DerivedStream& s, const trace::ClockMap& clock,
                                   const TimeAxis& axis, int64_t t0, int64_t t1, uint32_t columns) {
  StreamPicture p;
  p.intervals = s.intervals();
  const uint64_t k0 = clock.to_ticks(t0), k1 = std::max(k0, clock.to_ticks(t1));
  const index::Buckets b = s.query(k0, k1, std::max(columns, 1u));
  if (!p.intervals) {
    // The whole stream's range, from the top of its pyramid: the scale stays put while zooming.
    p.lo = INFINITY, p.hi = -INFINITY;
    for (const index::Node& n : s.query_shift(0, UINT64_MAX, s.top_shift()).nodes)
      p.lo = std::min(p.lo, n.s.min), p.hi = std::max(p.hi, n.s.max);
    if (!(p.hi > p.lo)) p.hi = p.lo + 1;
    for (const index::Node& n : b.nodes) {
      if (!n.count) continue;
      p.ranges.push_back({axis.x(clock.to_ns(n.s.first_ts)), axis.x(clock.to_ns(n.s.last_ts)), n.s.min, n.s.max,
                          n.s.first, n.s.last});
    }
    return p;
  }
  for (const index::Node& n : b.nodes) add_bar(p, n, clock, axis);
  // Intervals that end after the window but start in it (or before): keyed
  // past k1, so in none of its buckets. None ends later than k1 plus the
  // stream's longest duration.
  uint64_t longest = 0;
  for (const index::Node& n : s.query_shift(0, UINT64_MAX, s.top_shift()).nodes) longest = std::max(longest, n.iv.max_dur);
  // (From past the last bucket of the window's answer, which holds ends
  // after k1 up to its own end: those it holds are drawn once.)
  const uint64_t covered = b.shift >= 64 ? UINT64_MAX : ((k1 >> b.shift) << b.shift) | ((uint64_t(1) << b.shift) - 1);
  if (longest && covered < UINT64_MAX) {
    const uint64_t until = k1 + std::min(longest, UINT64_MAX - k1);
    if (until > covered)
      for (const index::Node& n : s.query_shift(covered + 1, until, b.shift).nodes)
        if (n.count && n.iv.min_start <= k1) add_bar(p, n, clock, axis);
  }
  return p;
}

}  // namespace tinescope::render
