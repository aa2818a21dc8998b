// The checks `tinescope check` runs on a trace's scheduling and lock events
// (after Grasp's verification plugins; docs/ANALYSIS.md, "Scheduling
// checks"): every job's deadline (jobs.hpp), each task's response-time
// bound from a rules file (`response task=T1 within=2ms`), and the use of
// every lock (ts_lock): acquired while another thread held it, released by
// a thread that did not hold it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinescope/analysis/jobs.hpp"
#include "tinescope/analysis/protocol_rules.hpp"

namespace tinescope::analysis {

struct SchedViolation {
  enum Kind : uint8_t { DeadlineMiss, ResponseOver, LockTaken, ReleaseNotHeld };
  static constexpr int kKinds = 4;
  Kind kind = DeadlineMiss;
  uint64_t ts = 0;   // where it is marked: a miss at its deadline, a response at the job's arrival, a lock event at its time
  uint64_t end = 0;  // to here: a miss to the completion (or the trace's end), a response to the completion
  uint32_t task = 0;     // jobs: its task (string id)
  uint64_t job = 0;      // jobs: its id
  uint32_t cpu = kNoCpu; // jobs: the CPU it last ran on
  uint32_t feedlet = 0;  // locks: the thread; jobs: the feedlet that recorded its completion (0: none)
  uint32_t lock = 0;     // locks: its name (string id)
  uint64_t lock_id = 0;
  size_t rule = SIZE_MAX;  // response: its rule in Rules::rules
  int64_t by_ns = 0;       // late by, over the bound by
  std::string why;         // "completed 1.2ms after its deadline"
};
const char* kind_name(SchedViolation::Kind k);  // "deadline missed", ...
// What it is about: "T1 job 7 on cpu2" (a CPU's ts_cpu_name where it has
// one), or a lock's "queue.mutex 3".
std::string subject(const SchedViolation& v, const trace::Catalog& catalog);

struct SchedReport {
  uint64_t jobs = 0, with_deadline = 0;
  uint64_t lock_events = 0, locks = 0;
  uint64_t per_kind[SchedViolation::kKinds] = {};
  uint64_t total = 0;
  std::vector<RuleCount> per_rule;          // as Rules::rules; only response rules are counted here
  std::vector<SchedViolation> violations;   // the first `limit` by ts
  JobCounts counts;
};

// `rules` may be null (no response bounds).
SchedReport check_schedule(const index::TraceIndex& ix, const Rules* rules, size_t limit = SIZE_MAX);

// The lock checks alone (LockTaken, ReleaseNotHeld): the first `limit` by
// time, and in *total how many in all. What a picture marks in red.
std::vector<SchedViolation> lock_misuse(const index::TraceIndex& ix, size_t limit, uint64_t* total = nullptr);

}  // namespace tinescope::analysis
