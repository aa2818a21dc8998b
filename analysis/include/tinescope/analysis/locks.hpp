// Locks: what threads recorded with ts_lock (contend: about to wait;
// acquire: got it; release), read back per lock (its name and id): how
// often it was taken and contended, how long threads waited for it
// (contend to acquire, on the waiting thread) and held it (acquire to
// release, on the holding thread). Read from every thread in the trace's
// merged order (docs/ANALYSIS.md, "Locks").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinescope/analysis/duration_stats.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::analysis {

struct LockStats {
  std::string name;
  uint64_t id = 0;
  uint64_t acquires = 0;   // by a thread that did not hold it
  uint64_t contended = 0;  // of them, after a contend (the thread waited)
  DurationHistogram wait, hold;  // ns
  uint64_t threads = 0;          // that held it
  uint64_t longest_wait_at = 0;  // ticks: the acquire that ended the longest wait
  uint32_t longest_wait_feedlet = 0;
  uint64_t longest_hold_at = 0;  // ticks: the acquire of the longest hold
  uint32_t longest_hold_feedlet = 0;
  uint64_t unmatched = 0;  // a release by a thread that did not hold it, an acquire while another held it
  uint64_t held_at_end = 0;
};

// Per lock, sorted by name then id.
std::vector<LockStats> lock_stats(const index::TraceIndex& ix);

}  // namespace tinescope::analysis
