#include "tinescope/import/tracefs_capture.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include <event-parse.h>

#include "kernel_events.hpp"
#include "tracefs_glue.h"

namespace tinescope::import {

struct SchedCapture::Impl {
  ts_tracefs* tracefs = nullptr;
  std::string clock;
  bool whole_machine = false;
  KernelEventReader reader;
  std::vector<KernelSched>* out = nullptr;
  std::vector<LostEvents>* lost = nullptr;

  ~Impl() { ts_tracefs_close(tracefs); }

  static int on_record(tep_event* ev, tep_record* r, int cpu, void* self) {
    Impl& m = *static_cast<Impl*>(self);
    if (r->missed_events) m.lost->push_back(LostEvents{uint32_t(cpu), r->ts, uint64_t(r->missed_events > 0 ? r->missed_events : 1)});
    KernelSched k;
    if (m.reader.read(ev, r, cpu, k)) m.out->push_back(std::move(k));
    return 0;
  }
};

SchedCapture::SchedCapture() : impl_(std::make_unique<Impl>()) {
  impl_->out = &events;
  impl_->lost = &lost;
}
SchedCapture::~SchedCapture() = default;

std::string SchedCapture::clock() const { return impl_->clock; }

bool SchedCapture::open(const SchedCaptureOptions& o, std::string& why) {
  Impl& m = *impl_;
  m.clock = o.tsc_clock ? "x86-tsc" : "mono";
  m.whole_machine = o.whole_machine;
  char text[512] = "";
  const std::string name = "tinescope-" + std::to_string(::getpid());
  m.tracefs = ts_tracefs_open(name.c_str(), m.clock.c_str(), o.buffer_kb, text, sizeof text);
  if (!m.tracefs) return why = text, false;
  return true;
}

bool SchedCapture::follow(int pid, std::string& why) {
  Impl& m = *impl_;
  if (m.whole_machine) return true;
  if (ts_tracefs_follow(m.tracefs, pid) < 0)
    return why = "cannot follow pid " + std::to_string(pid) + " in tracefs: " + std::strerror(errno), false;
  return true;
}

bool SchedCapture::on(std::string& why) {
  if (ts_tracefs_on(impl_->tracefs) < 0) return why = std::string("cannot turn tracing on: ") + std::strerror(errno), false;
  return true;
}

void SchedCapture::read() {
  Impl& m = *impl_;
  if (m.tracefs) ts_tracefs_read(m.tracefs, &Impl::on_record, &m);
}

void SchedCapture::off() {
  Impl& m = *impl_;
  if (!m.tracefs) return;
  ts_tracefs_off(m.tracefs);
  read();
  // Each CPU's events came in its order, the CPUs in turns: one order.
  std::stable_sort(events.begin(), events.end(), [](const KernelSched& a, const KernelSched& b) { return a.ts < b.ts; });
}

}  // namespace tinescope::import
