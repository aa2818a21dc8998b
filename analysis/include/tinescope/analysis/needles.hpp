// Needle finding: the longest intervals of a stream over a whole trace,
// found through the pyramids' max-duration summaries instead of a scan.
// Best first: the buckets of the coarsest level go into a heap by their
// longest interval; the top bucket is opened (its children, or at the
// finest level its items) until k items come off the heap, each longer than
// anything still closed. A needle costs about one path down the pyramid and
// one chunk decode, whatever the size of the trace.
#pragma once

#include <cstdint>
#include <vector>

#include "tinescope/analysis/derived_stream.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::analysis {

struct NeedleQuery {
  size_t k = 100;
  uint64_t min_duration = 0;         // ticks; only intervals at least this long
  uint64_t t0 = 0, t1 = UINT64_MAX;  // only intervals ending in [t0, t1]
};

struct NeedleCost {
  uint64_t nodes_opened = 0;   // pyramid buckets expanded
  uint64_t leaves_decoded = 0; // finest buckets whose items were read
};

// The k longest intervals (longest first; ties by end time) of base streams
// of the index (interval-like: intervals, instants, job segments).
std::vector<Record> longest(const index::TraceIndex& ix, const std::vector<int>& streams, const NeedleQuery& q,
                            NeedleCost* cost = nullptr);
// The same for a stored stream of intervals.
std::vector<Record> longest(const DerivedStream& s, const NeedleQuery& q, NeedleCost* cost = nullptr);
// The same for any interval stream: through the index's pyramids when the
// stream is base intervals without per-event tests (longer() of them
// included), else evaluated and stored first.
std::vector<Record> longest(const index::TraceIndex& ix, const Expr& e, const NeedleQuery& q, std::string& error,
                            const EvalOptions& options = {}, NeedleCost* cost = nullptr);

// Intervals far from their name's typical duration: longer than `factor`
// times the mean of their name (the mean read from the pyramids, exact), at
// most `per_name` of them per name, longest first.
struct Outlier {
  Record r;
  double mean_ns = 0;   // the name's mean duration
  double ratio = 0;     // duration / mean
};
std::vector<Outlier> outliers(const index::TraceIndex& ix, const Expr& base, double factor, size_t per_name,
                              NeedleCost* cost = nullptr);

}  // namespace tinescope::analysis
