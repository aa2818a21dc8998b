// Duration statistics of interval streams: count, total, min, mean, max and
// percentiles per name and per (name, thread), from one pass; and the
// comparison of two runs' distributions that `tinescope compare` reports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinescope/analysis/derived_stream.hpp"

namespace tinescope::analysis {

// Durations in ns in logarithmic bins, 32 to an octave (each under 2.2 %
// wide); a percentile is the geometric middle of its bin, within 1.1 % of
// the true value, clamped to the exact min and max. Count, total, min and
// max are exact.
class DurationHistogram {
 public:
  static constexpr uint32_t kBinsPerOctave = 32;
  void add(uint64_t ns);
  void merge(const DurationHistogram& o);
  // p in [0, 100]: the smallest duration with at least p % of them at or below it.
  double percentile(double p) const;
  uint64_t count() const { return count_; }
  uint64_t total() const { return total_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? double(total_) / double(count_) : 0; }
  const std::vector<uint64_t>& bins() const { return bins_; }
  static uint32_t bin_of(uint64_t ns);
  static double bin_low(uint32_t bin);  // the smallest duration in the bin

 private:
  std::vector<uint64_t> bins_;
  uint64_t count_ = 0, total_ = 0, min_ = UINT64_MAX, max_ = 0;
};

struct DurationStats {
  std::string name;     // "" for intervals an operator made
  std::string thread;   // "" : every thread together
  uint32_t feedlet = kNoFeedlet;
  DurationHistogram h;
  uint64_t truncated = 0;  // of them, intervals whose end was not recorded (Record::truncated): in h as seen
};

// One row per name (every thread together), then with by_thread one per
// (name, thread); sorted by name, then thread.
std::vector<DurationStats> duration_stats(const index::TraceIndex& ix, const Expr& intervals, bool by_thread,
                                          std::string& error, const EvalOptions& options = {});

struct CompareOptions {
  // Which percentile is compared. Not p99 by default: in a short run a
  // name's p99 is its few longest, which the OS's preemptions decide.
  double percentile = 90;
  double threshold = 0.25;      // a regression: B's is more than this much larger (0.25: +25 %)
  double min_delta_ns = 50'000; // ... and larger by at least this much (noise of short intervals)
  uint64_t min_count = 20;      // names with fewer intervals in either run are not judged
};

struct Comparison {
  std::string name;
  uint64_t count_a = 0, count_b = 0;
  double a_ns = 0, b_ns = 0;  // the chosen percentile
  double change = 0;          // b / a - 1
  bool judged = false;        // enough intervals in both
  bool regressed = false;
};

// Per name (the rows without a thread), names in both runs; regressions first.
std::vector<Comparison> compare(const std::vector<DurationStats>& a, const std::vector<DurationStats>& b,
                                const CompareOptions& options);

}  // namespace tinescope::analysis
