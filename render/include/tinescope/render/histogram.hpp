// A stream's histogram: of an interval stream its durations (ns), of a
// sample stream (a counter, a field) its values, in linear or logarithmic
// bins; the viewer's Histogram tab and `tinescope render --figure histogram`
// both draw it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinescope/analysis/derived_stream.hpp"

namespace tinescope::render {

// The binned quantities, and how many of them end at or before any time:
// the histogram "plays" (checkpoints every `every` records, so a play head
// costs at most that many records to count).
struct PlayableHistogram {
  bool log_bins = true;
  bool log_asked = true;        // what was asked (values not all above 0 are binned linearly)
  bool durations = true;        // false: the records' values
  double lo_ns = 0, hi_ns = 1;  // log: the bins span [lo, hi] geometrically; linear: durations [0, hi], values [lo, hi]
  uint32_t bins = 48;
  uint64_t every = 1;
  std::vector<std::vector<uint64_t>> checkpoints;  // [k]: counts of records [0, k * every)
  uint32_t bin(double ns) const;
  double bin_low(uint32_t b) const;  // ns (values)
  double quantity(const analysis::Record& r, double ns_per_tick) const {
    return durations ? double(r.duration()) * ns_per_tick : r.value;
  }
  std::string label(double x) const;  // a bin edge as text
  // Counts of the records whose key is at or before `key_ticks`; `shown` gets how many.
  std::vector<uint64_t> up_to(const analysis::DerivedStream& s, const trace::ClockMap& clock, uint64_t key_ticks,
                              uint64_t& shown) const;
  static PlayableHistogram build(const analysis::DerivedStream& s, const trace::ClockMap& clock, bool log_bins);
};

}  // namespace tinescope::render
