// Jobs: what a scheduler recorded with ts_sched and ts_job_deadline, read
// back per job (docs/ANALYSIS.md, "Jobs"). A job (its task and id) arrives,
// starts on a CPU, is preempted, blocks, resumes (maybe on another CPU:
// a migration) and completes; its scheduling events may come from any
// thread (each CPU's scheduler, a dispatcher), so they are read from every
// feedlet in the trace's merged order. Memory follows the jobs in flight,
// not the trace.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tinescope/analysis/duration_stats.hpp"
#include "tinescope/index/trace_index.hpp"
#include "tinescope/trace_reader.hpp"

namespace tinescope::analysis {

constexpr uint64_t kNoTime = UINT64_MAX;
constexpr uint32_t kNoCpu = UINT32_MAX;

// One job, times in ticks of the trace's clock.
struct Job {
  uint32_t task = 0;  // its task's name (string id)
  uint64_t id = 0;
  uint64_t arrival = kNoTime;     // kNoTime: its arrival was not recorded
  uint64_t deadline = kNoTime;    // absolute; kNoTime: none given
  uint64_t first_start = kNoTime; // kNoTime: it never ran
  uint64_t completion = kNoTime;  // kNoTime: not completed in the trace
  uint64_t last_event = 0;        // its last scheduling event (the trace's end for a job still running there)
  uint64_t executed = 0;          // time it ran
  uint64_t blocked = 0;           // time from each block to the resume after it
  uint32_t preemptions = 0, blocks = 0;
  uint32_t migrations = 0;  // resumed (or started) on a CPU other than the one it last ran on
  uint32_t first_cpu = kNoCpu, last_cpu = kNoCpu;
  uint32_t completed_by = 0;  // the feedlet that recorded its completion
  bool cut = false;           // a segment of it ended without its own end event (lost; see JobCounts)

  bool completed() const { return completion != kNoTime; }
  bool has_response() const { return completed() && arrival != kNoTime; }
  uint64_t response() const { return completion - arrival; }  // has_response()
  // Ready but not running: the response less the time run and blocked.
  uint64_t waiting() const {
    const uint64_t busy = executed + blocked;
    return has_response() && response() > busy ? response() - busy : 0;
  }
  // Completed after its deadline, or not completed by it while the trace
  // (seen up to `trace_end`) went past it.
  bool missed(uint64_t trace_end) const {
    if (deadline == kNoTime) return false;
    return completed() ? completion > deadline : trace_end > deadline;
  }
};

// What the scheduling events did not fit, counted (never made up).
struct JobCounts {
  uint64_t events = 0;  // scheduling events read
  uint64_t jobs = 0, completed = 0;
  uint64_t no_arrival = 0;     // jobs that ran or completed with no arrival recorded before
  uint64_t arrived_again = 0;  // an arrival of a job (task, id) that had arrived and not completed: the first is left incomplete
  uint64_t start_while_running = 0;  // a start or resume of a job already running: its segment ended there
  uint64_t cpu_taken = 0;            // a job started on a CPU where another ran: that one's segment ended there
  uint64_t end_not_running = 0;      // a preempt or block of a job that was not running (or not known)
  uint64_t after_completion = 0;     // an event of one of the last 4096 jobs completed, after its completion
  std::vector<std::string> unreadable;  // chunks that could not be read (their events are missing)
};

// A job moved: its segment on one CPU ended, its next began on another.
struct Migration {
  uint32_t task = 0;
  uint64_t job = 0;
  uint64_t left = 0, arrived = 0;  // ticks: the end of the segment before, the start of the next
  uint32_t from_cpu = 0, to_cpu = 0;
};

// A running job left its CPU before completing: preempted, or blocked.
struct Interruption {
  uint32_t task = 0;
  uint64_t job = 0;
  uint64_t at = 0;  // ticks
  uint32_t cpu = 0;
  bool blocked = false;
};

// Reads the jobs of a trace, in the order they complete, then those not
// completed by the trace's end (in the order they appeared).
class JobScan {
 public:
  // If set, each migration (each preemption or block of a running job) is
  // appended to it as the scan reads it (in time order).
  std::vector<Migration>* migrations = nullptr;
  std::vector<Interruption>* interruptions = nullptr;

  // Jobs whose events lie at or before `t1` (the trace's end by default).
  explicit JobScan(const index::TraceIndex& ix, uint64_t t1 = UINT64_MAX);
  ~JobScan();
  JobScan(const JobScan&) = delete;
  JobScan& operator=(const JobScan&) = delete;

  bool next(Job& out);
  // The next job, valid until the next call; null past the last.
  const Job* next();
  const JobCounts& counts() const;
  // Where the scan ends: t1, or the trace's last event before it.
  uint64_t end() const;
  // Whether the trace holds any scheduling event of a job.
  static bool any(const index::TraceIndex& ix);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Per task, over a whole trace.
struct TaskStats {
  std::string task;
  uint64_t jobs = 0, completed = 0, with_deadline = 0, missed = 0;
  DurationHistogram response, executed, waiting;  // ns; response and waiting of completed jobs that arrived
  uint64_t preemptions = 0, migrations = 0, blocks = 0;
  int64_t worst_lateness_ns = 0;  // of the missed ones (completion − deadline; for one never completed: the trace's end)
  Job latest, longest;            // the job most late (if any missed), the one with the longest response
};

// Per task, sorted by name; `counts` gets the scan's.
std::vector<TaskStats> task_stats(const index::TraceIndex& ix, JobCounts* counts = nullptr);

// Every job of a trace, compact and by arrival: what a picture marks (each
// job's arrival and deadline, a missed deadline from it to the completion,
// its preemptions) and the details panel lists.
struct JobMark {
  uint32_t task = 0;
  uint64_t id = 0;
  uint64_t start = 0;             // its arrival (or first start, where none was recorded)
  uint64_t deadline = kNoTime;
  uint64_t end = 0;               // its completion, or its last event (the trace's end if it still runs)
  bool missed = false, completed = false, arrived = false, cut = false;
  uint64_t first_start = kNoTime;  // as Job
  uint64_t executed = 0, blocked = 0, waiting = 0;
  uint32_t preemptions = 0, blocks = 0, migrations = 0;
  uint32_t first_cpu = kNoCpu, last_cpu = kNoCpu;
};
struct JobMarks {
  std::vector<JobMark> jobs;  // by start
  std::vector<Migration> migrations;  // by arrival
  std::vector<Interruption> interruptions;  // by time
  uint64_t longest = 0;       // the longest end - start: how far before a window to look
  uint64_t scanned_events = 0;
  // Calls f for each job whose [start, max(end, deadline)] meets [t0, t1] (ticks).
  template <class F>
  void each(uint64_t t0, uint64_t t1, F&& f) const {
    auto first = std::lower_bound(jobs.begin(), jobs.end(), t0 > longest ? t0 - longest : 0,
                                  [](const JobMark& j, uint64_t t) { return j.start < t; });
    for (auto it = first; it != jobs.end() && it->start <= t1; ++it)
      if (std::max(it->end, it->deadline == kNoTime ? 0 : it->deadline) >= t0) f(*it);
  }
  // Calls f for each migration that arrived in [t0, t1], or left before
  // and arrived after it (ticks).
  template <class F>
  void each_migration(uint64_t t0, uint64_t t1, F&& f) const {
    auto first = std::lower_bound(migrations.begin(), migrations.end(), t0,
                                  [](const Migration& m, uint64_t t) { return m.arrived < t; });
    const uint64_t until = t1 > UINT64_MAX - longest_move ? UINT64_MAX : t1 + longest_move;
    for (auto it = first; it != migrations.end() && it->arrived <= until; ++it)
      if (it->left <= t1) f(*it);
  }
  uint64_t longest_move = 0;  // the longest arrived - left of the migrations
  // Calls f for each preemption or block in [t0, t1] (ticks).
  template <class F>
  void each_interruption(uint64_t t0, uint64_t t1, F&& f) const {
    auto first = std::lower_bound(interruptions.begin(), interruptions.end(), t0,
                                  [](const Interruption& i, uint64_t t) { return i.at < t; });
    for (auto it = first; it != interruptions.end() && it->at <= t1; ++it) f(*it);
  }
  // The job (task, id) whose [start, end] holds `at`, or null.
  const JobMark* job_at(uint32_t task, uint64_t at) const;
};
// Null where the trace has no jobs, or more than max_jobs of them (a
// picture then marks none, and says so).
std::shared_ptr<const JobMarks> job_marks(const index::TraceIndex& ix, size_t max_jobs = 2'000'000);

// ticks → ns between two times of the trace's clock.
inline int64_t ns_between(const index::TraceIndex& ix, uint64_t a, uint64_t b) { return ix.to_ns(b) - ix.to_ns(a); }
// A duration of `ticks` from time `at`, in ns (0 if the clock says less).
uint64_t span_ns(const index::TraceIndex& ix, uint64_t at, uint64_t ticks);

}  // namespace tinescope::analysis
