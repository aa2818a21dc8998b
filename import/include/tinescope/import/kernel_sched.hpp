// The kernel's scheduling of a program's threads (sched_switch, wakeups,
// migrations, exits), written into the program's own trace beside its
// events, on its clock (TuningFork's vertical profile; docs/IMPORT.md,
// "Kernel scheduling"):
//
//   a feedlet per CPU ("cpu N", process "kernel"): each thread's time on
//     it as a job segment (ts_sched's start, then preempt when it left
//     runnable, block when it slept), task = its name (the program's name
//     for the thread, else COMM-TID), job = its tid, so
//     the CPUs' rows and the job analysis read it as they read a
//     scheduler's own events; a migration is a message from the CPU it
//     left to the one it was moved to (channel "migration");
//   each thread's kernel priority, where a switch gives it, as the task's
//   ts_task_priority level: 139 − prio (higher is more urgent: nice 0 is
//   19, SCHED_FIFO priority p is 40 + p), written before it runs at a new
//   one, so `check` finds priority inversions on the program's locks;
//   a feedlet per thread ("NAME states", in the program's process):
//     its states as nested intervals: "Running", "Runnable (preempted)",
//     "Runnable (woken)" (from its wakeup to its running: the wakeup
//     latency), "Sleeping", "Uninterruptible (D)", "Stopped", and
//     "activation" around each wakeup-to-sleep (its response).
//
// Events the kernel's buffers lost are counted in the CPU's chunks as
// dropped (drawn where they were lost).
#pragma once

#include <climits>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tinescope/import/trace_import.hpp"
#include "tinescope/trace_writer.hpp"

namespace tinescope::import {

struct KernelSched {
  enum Kind : uint8_t { Switch, Wakeup, WakeupNew, Migrate, Exit, Other };
  Kind kind = Switch;
  uint32_t cpu = 0;      // where it was recorded
  uint64_t ts = 0;       // ticks of the trace's clock
  int32_t pid = 0;       // Switch: the previous task; the others: the task
  int32_t next_pid = 0;  // Switch
  int64_t prev_state = 0;  // Switch: the kernel's report of the previous task's state (0: runnable)
  int32_t next_prio = kNoPrio;  // Switch: the next task's kernel priority (0..139, lower is more urgent)
  static constexpr int32_t kNoPrio = INT32_MIN;
  uint32_t orig_cpu = 0, dest_cpu = 0;  // Migrate; Wakeup: dest_cpu is its target CPU
  std::string comm, next_comm;          // Switch: both tasks' names; the others: the task's; Other: the event's name
  // Other: an event of another kind, kept whole: its fields encoded as an
  // argument event of type arg_type (docs/FORMAT.md, "Arguments").
  uint16_t arg_type = 0;
  std::string args;
};

// The kernel's sched_switch prev_state, as tracefs reports it (the task
// state's report bit, TASK_REPORT_MAX for a preemption).
const char* state_name(int64_t prev_state);  // "Runnable (preempted)", "Sleeping", ...
// ftrace text's prev_state ("R", "R+", "S", "D", "T", "X|Z", ...) the same way.
const char* state_name(std::string_view prev_state);

// Each thread's states from its switches and wakeups, as nested intervals:
// "activation" (wakeup to sleep) around "Running", "Runnable (preempted)",
// "Runnable (woken)", "Sleeping", ... Given to a sink as begins and ends,
// in time order per thread (names are the static strings above).
class ThreadStates {
 public:
  struct Sink {
    virtual ~Sink() = default;
    virtual void begin(int32_t tid, uint64_t ts, const char* name) = 0;
    virtual void end(int32_t tid, uint64_t ts, const char* name) = 0;
  };
  explicit ThreadStates(Sink& sink) : sink_(sink) {}
  void switched_out(int32_t tid, uint64_t ts, const char* state);  // state_name()
  void switched_in(int32_t tid, uint64_t ts);
  void woken(int32_t tid, uint64_t ts);
  void exited(int32_t tid, uint64_t ts);

 private:
  struct Thread {
    const char* state = nullptr;  // the state interval open
    bool active = false;          // inside an activation
  };
  void set(int32_t tid, Thread& t, uint64_t ts, const char* state);
  void activate(int32_t tid, Thread& t, uint64_t ts, bool on, const char* state);
  Sink& sink_;
  std::map<int32_t, Thread> threads_;
};

struct AppendResult {
  uint64_t events = 0;         // kernel events taken
  uint64_t cpus = 0, threads = 0;
  uint64_t switches = 0, wakeups = 0, migrations = 0, others = 0;
  uint64_t lost = 0;           // events the kernel's buffers lost
};

// Appends `events` (sorted by time) to the trace at `path`, which a
// recorder finished writing (its names, feedlets and metadata chunks
// continue where its own end); `lost`: per CPU, events lost before a time.
// The threads of `root_pid` (it, and every task forked while it was
// followed: the pids of the sched_wakeup_new events) get a lane of their
// states; with root_pid 0 every thread seen does. A lane is named by its
// thread's last name (a program's threads are named "tinescope" until
// exec). False with why where the trace cannot be read or written.
struct LostEvents {
  uint32_t cpu = 0;
  uint64_t ts = 0;      // the first event after the loss
  uint64_t count = 0;
};
// Events of kind Other become an instant of their name on their CPU's lane
// followed by an argument event of their fields, whose types are
// `arg_types` (codes the trace does not use: a fresh trace's).
bool append_kernel_sched(const std::string& path, const std::vector<KernelSched>& events,
                         const std::vector<LostEvents>& lost, int32_t root_pid, AppendResult& result,
                         std::string& why, const std::vector<format::EventTypeDef>& arg_types = {});

// A new trace holding its header alone, for append_kernel_sched: false
// with why where `path` exists (never written over) or cannot be written.
bool create_trace_file(const std::string& path, const format::HeaderInfo& info, std::string& why);

// `tinescope import trace.dat`: a trace-cmd trace (libtracecmd), its sched
// events as above (every thread gets a lane of its states), on its clock
// in ns; every other event an instant of its name on its CPU's lane with
// its fields as arguments (up to 192 kinds; past them, counted by name in
// r.unsupported).
bool import_trace_dat(const std::string& in, const std::string& out, ImportResult& r, std::string& error);

}  // namespace tinescope::import
