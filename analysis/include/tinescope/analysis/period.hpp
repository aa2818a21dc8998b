// Finding the periods of periodic work, for the oscilloscope: the strip
// duration at which a lane's intervals fold into a crisp column, found from
// the index instead of by dragging a slider until the picture snaps.
//
// Per stream (the intervals of one name, a CPU's or a task's job segments):
// a first guess, the median time from one start to the next over a stretch
// of a few thousand starts; then a refinement that makes the fold sharpest —
// a robust least-squares line through (cycle number, start) over that
// stretch, growing from 16 to all of its cycles, then over a few stretches
// further on, each at most eight times as far as the last, so the cycle
// count stays exact while the line's span grows to the whole range. Its
// slope is the period, and the fold is sharpest there because the line
// minimises the phase spread of the starts. Each candidate is scored by how
// tightly its starts line up in phase (the mean resultant length of their
// phases, 1 for a perfect column, about 0 for no period at all).
// Costs a few thousand items a stream, whatever the trace's size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinescope/index/trace_index.hpp"

namespace tinescope::analysis {

struct PeriodCandidate {
  double period_ns = 0;
  double sharpness = 0;  // 0..1: the starts' phase coherence at this period
  uint64_t starts = 0;   // starts the refinement used
  std::string source;    // what repeats: an interval name, "cpu2 jobs", "task T1"
};

struct PeriodOptions {
  int64_t from_ns = INT64_MIN, to_ns = INT64_MAX;  // the range looked at (ns on the trace's clock)
  size_t stretch = 2000;      // starts in the first stretch
  size_t max_candidates = 6;
  double min_sharpness = 0.25;  // below this, a stream is not periodic
};

// Refines a first guess over stretches of sorted starts (ns): the first
// stretch is contiguous; the later ones, each contiguous, lie further on, in
// order. Returns the candidate with its sharpness (period 0 if none).
PeriodCandidate refine_period(const std::vector<std::vector<int64_t>>& stretches, double guess_ns);

// The periods of one stream of starts (sorted): its median gap, refined.
PeriodCandidate period_of_starts(const std::vector<int64_t>& starts);

// Candidates for a lane (a feedlet's interval streams by name, its CPUs'
// and tasks' job segments), the sharpest first, those within 0.5 % of a
// sharper one left out.
std::vector<PeriodCandidate> find_periods(const index::TraceIndex& ix, const std::vector<uint32_t>& feedlets,
                                          const PeriodOptions& options = {});

// "45.3515 us": a period with enough digits to reproduce a fold (7 significant).
std::string format_period(double ns);

}  // namespace tinescope::analysis
