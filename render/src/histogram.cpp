#include "tinescope/render/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tinescope/render/time_axis.hpp"

namespace tinescope::render {

using analysis::DerivedStream;
using analysis::Record;

uint32_t PlayableHistogram::bin(double ns) const {
  double f;
  if (log_bins) f = ns <= lo_ns ? 0 : std::log(ns / lo_ns) / std::log(hi_ns / lo_ns);
  else if (durations) f = ns / hi_ns;
  else f = (ns * 0.5 - lo_ns * 0.5) / (hi_ns * 0.5 - lo_ns * 0.5);  // (halves: ±1e308 apart is no overflow)
  if (!(f == f)) f = 0;  // NaN: a value that is none
  return uint32_t(std::clamp(f * bins, 0.0, double(bins - 1)));
}

double PlayableHistogram::bin_low(uint32_t b) const {
  const double f = double(b) / bins;
  return log_bins ? lo_ns * std::pow(hi_ns / lo_ns, f) : durations ? hi_ns * f : lo_ns + (hi_ns * 0.5 - lo_ns * 0.5) * f * 2;
}

std::string PlayableHistogram::label(double x) const {
  if (durations) return format_duration(int64_t(x));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

PlayableHistogram PlayableHistogram::build(const DerivedStream& s, const trace::ClockMap& clock, bool log_bins) {
  PlayableHistogram h;
  h.log_bins = h.log_asked = log_bins;
  h.durations = s.intervals();
  const auto records = s.records();
  const double ns_per_tick = 1 / clock.ticks_per_ns();
  double lo = INFINITY, hi = h.durations ? 0 : -INFINITY;
  for (const Record& r : records) {
    const double d = h.quantity(r, ns_per_tick);
    lo = std::min(lo, d), hi = std::max(hi, d);
  }
  if (h.durations) {
    h.lo_ns = std::max(1.0, lo == INFINITY ? 1.0 : lo);
    h.hi_ns = std::max(h.lo_ns * 1.01, hi * 1.0001 + 1);
  } else {
    // Values: log bins only where every one is above 0.
    if (records.empty()) lo = 0, hi = 1;
    h.log_bins = log_bins && lo > 0;
    h.lo_ns = lo;
    h.hi_ns = std::max(hi + std::fabs(hi) * 1e-4, lo + 1e-9 * std::max(1.0, std::fabs(lo)));
    if (!std::isfinite(h.hi_ns)) h.hi_ns = hi;  // (past the largest double)
  }
  h.every = std::max<uint64_t>(4096, records.size() / 256 + 1);
  std::vector<uint64_t> counts(h.bins, 0);
  h.checkpoints.push_back(counts);
  for (size_t i = 0; i < records.size(); ++i) {
    ++counts[h.bin(h.quantity(records[i], ns_per_tick))];
    if ((i + 1) % h.every == 0) h.checkpoints.push_back(counts);
  }
  return h;
}

std::vector<uint64_t> PlayableHistogram::up_to(const DerivedStream& s, const trace::ClockMap& clock, uint64_t key_ticks,
                                               uint64_t& shown) const {
  const auto records = s.records();
  const size_t n = size_t(std::partition_point(records.begin(), records.end(),
                                               [&](const Record& r) { return r.end <= key_ticks; }) -
                          records.begin());
  const size_t k = std::min(checkpoints.size() - 1, size_t(n / every));
  std::vector<uint64_t> counts = checkpoints[k];
  const double ns_per_tick = 1 / clock.ticks_per_ns();
  for (size_t i = k * every; i < n; ++i) ++counts[bin(quantity(records[i], ns_per_tick))];
  shown = n;
  return counts;
}

}  // namespace tinescope::render
