// The checks `tinescope check` runs on a trace's scheduling and lock events
// (after Grasp's verification plugins; docs/ANALYSIS.md, "Scheduling
// checks"): every job's deadline (jobs.hpp), each task's response-time
// bound from a rules file (`response task=T1 within=2ms`), the use of
// every lock (ts_lock): acquired while another thread held it, released by
// a thread that did not hold it; priority inversions (a task waiting for a
// lock while its holder, less urgent, is kept from running by a task
// between the two); and servers' budgets (a counter named "budget" that
// falls below zero: served past it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tinescope/analysis/jobs.hpp"
#include "tinescope/analysis/protocol_rules.hpp"

namespace tinescope::analysis {

struct SchedViolation {
  enum Kind : uint8_t { DeadlineMiss, ResponseOver, LockTaken, ReleaseNotHeld, PriorityInversion, BudgetOverrun };
  static constexpr int kKinds = 6;
  Kind kind = DeadlineMiss;
  // Where it is marked: a miss at its deadline, a response at the job's
  // arrival, a lock event at its time, an inversion where it began, an
  // overrun where the budget crossed zero.
  uint64_t ts = 0;
  // To here: a miss to the completion (or the trace's end), a response to
  // the completion, an inversion to where it last held, an overrun to the
  // budget's next sample at or above zero (or its last).
  uint64_t end = 0;
  uint32_t task = 0;     // jobs: its task (string id); an inversion: the waiting task (0: a thread no scheduling event names)
  uint64_t job = 0;      // jobs: its id
  uint32_t cpu = kNoCpu; // jobs: the CPU it last ran on
  // Locks and inversions: the (waiting) thread; an overrun: the server's
  // lane; jobs: the feedlet that recorded its completion (0: none).
  uint32_t feedlet = 0;
  uint32_t lock = 0;     // locks and inversions: its name (string id)
  uint64_t lock_id = 0;
  uint32_t holder = 0, middle = 0;  // an inversion: the lock's holder's task and the task that ran (string ids)
  size_t rule = SIZE_MAX;  // response: its rule in Rules::rules
  int64_t by_ns = 0;       // late by, over the bound by, inverted for (in all, over the wait)
  std::string why;         // "completed 1.2ms after its deadline"
};
const char* kind_name(SchedViolation::Kind k);  // "deadline missed", ...
// What it is about: "T1 job 7 on cpu2" (a CPU's ts_cpu_name where it has
// one), a lock's "queue.mutex 3", "H waiting for queue.mutex 3" (the
// waiting thread), or a server's lane.
std::string subject(const SchedViolation& v, const trace::Catalog& catalog);

struct SchedReport {
  uint64_t jobs = 0, with_deadline = 0;
  uint64_t lock_events = 0, locks = 0;
  uint64_t prioritised_tasks = 0;  // tasks with a priority (ts_task_priority, priority rules): 0, no inversion was looked for
  uint64_t lock_waits = 0;         // contend-to-acquire waits looked at for inversions
  uint64_t budget_samples = 0;     // samples of counters named "budget" read
  uint64_t per_kind[SchedViolation::kKinds] = {};
  uint64_t total = 0;
  std::vector<RuleCount> per_rule;          // as Rules::rules; response rules (jobs) and priority rules (tasks given their level) only
  std::vector<SchedViolation> violations;   // the first `limit` by ts
  JobCounts counts;
};

// `rules` may be null (no response bounds, no priorities but the trace's).
SchedReport check_schedule(const index::TraceIndex& ix, const Rules* rules, size_t limit = SIZE_MAX);

// The lock checks alone (LockTaken, ReleaseNotHeld, PriorityInversion
// from the trace's own priorities): the first `limit` by time, and in
// *total how many in all. What a picture marks in red.
std::vector<SchedViolation> lock_misuse(const index::TraceIndex& ix, size_t limit, uint64_t* total = nullptr);

// Priority inversions (sched_check.cpp calls it; exposed for its test).
// A task's level: its last ts_task_priority before the time, else the
// first of `rules`' priority rules that matches its name. A thread is the
// task of its name (ts_thread_name; or, unnamed, the kernel's "COMM-TID");
// where that task has a job whose id
// is the thread's id (the kernel's scheduling, recorded or imported) that
// job is the thread, else any of the task's jobs.
struct PriorityScan {
  uint64_t tasks = 0, waits = 0;          // tasks with a level, contend-to-acquire waits
  std::vector<uint64_t> tasks_per_rule;   // as Rules::rules: tasks a priority rule gave their level
};
PriorityScan check_priorities(const index::TraceIndex& ix, const Rules* rules,
                              const std::function<void(SchedViolation)>& violate);

}  // namespace tinescope::analysis
