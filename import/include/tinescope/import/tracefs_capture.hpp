// Recording the kernel's scheduling while a program runs: Linux tracefs
// (through Debian's libtracefs and libtraceevent) in an instance of its
// own, so the machine's other tracing is left alone. Its clock is the
// recorder's (x86-tsc for the TSC, mono for CLOCK_MONOTONIC), so the
// kernel's events land on the program's time axis (kernel_sched.hpp writes
// them into its trace).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tinescope/import/kernel_sched.hpp"

namespace tinescope::import {

struct SchedCaptureOptions {
  bool whole_machine = false;  // every task; else the followed pid and what it forks
  bool tsc_clock = true;       // x86-tsc (the recorder's TSC); false: mono (CLOCK_MONOTONIC)
  uint32_t buffer_kb = 8192;   // per CPU
};

class SchedCapture {
 public:
  SchedCapture();
  ~SchedCapture();  // tracing off, its instance removed
  SchedCapture(const SchedCapture&) = delete;
  SchedCapture& operator=(const SchedCapture&) = delete;

  // Finds tracefs (mounting it where it is not mounted and this user may),
  // makes the instance, enables sched_switch, sched_wakeup(_new),
  // sched_migrate_task and sched_process_exit on the clock, tracing off.
  // False with exactly why (no permission, no tracefs, an event missing).
  bool open(const SchedCaptureOptions& options, std::string& why);
  // Only this task and those it forks from now on (not with whole_machine).
  bool follow(int pid, std::string& why);
  bool on(std::string& why);
  // Takes what the kernel's buffers hold now: call it now and then while
  // tracing, so they do not fill.
  void read();
  // Tracing off, the rest read; the events sorted by time.
  void off();

  std::vector<KernelSched> events;
  std::vector<LostEvents> lost;
  std::string clock() const;  // the trace clock in use

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tinescope::import
