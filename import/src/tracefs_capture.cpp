#include "tinescope/import/tracefs_capture.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include <event-parse.h>

#include "tracefs_glue.h"

namespace tinescope::import {

namespace {

// The fields of one event type this capture reads, found once.
struct Fields {
  KernelSched::Kind kind = KernelSched::Switch;
  bool known = false;
  tep_format_field *pid = nullptr, *next_pid = nullptr, *state = nullptr, *comm = nullptr, *next_comm = nullptr,
                   *orig_cpu = nullptr, *dest_cpu = nullptr;
};

uint64_t number(tep_format_field* f, const tep_record* r) {
  unsigned long long v = 0;
  if (f) tep_read_number_field(f, r->data, &v);
  return v;
}
std::string text(tep_format_field* f, const tep_record* r) {
  if (!f || f->offset < 0 || f->offset + f->size > r->size) return {};
  const char* p = static_cast<const char*>(r->data) + f->offset;
  return std::string(p, strnlen(p, size_t(f->size)));
}

}  // namespace

struct SchedCapture::Impl {
  ts_tracefs* tracefs = nullptr;
  std::string clock;
  bool whole_machine = false;
  std::map<int, Fields> fields;  // by event id
  std::vector<KernelSched>* out = nullptr;
  std::vector<LostEvents>* lost = nullptr;

  ~Impl() { ts_tracefs_close(tracefs); }

  Fields& fields_of(tep_event* ev) {
    auto [it, fresh] = fields.try_emplace(ev->id);
    Fields& f = it->second;
    if (!fresh) return f;
    const std::string name = ev->name;
    f.known = true;
    if (name == "sched_switch") {
      f.kind = KernelSched::Switch;
      f.pid = tep_find_field(ev, "prev_pid"), f.next_pid = tep_find_field(ev, "next_pid");
      f.state = tep_find_field(ev, "prev_state");
      f.comm = tep_find_field(ev, "prev_comm"), f.next_comm = tep_find_field(ev, "next_comm");
    } else if (name == "sched_wakeup" || name == "sched_wakeup_new") {
      f.kind = name == "sched_wakeup" ? KernelSched::Wakeup : KernelSched::WakeupNew;
      f.pid = tep_find_field(ev, "pid"), f.comm = tep_find_field(ev, "comm");
      f.dest_cpu = tep_find_field(ev, "target_cpu");
    } else if (name == "sched_migrate_task") {
      f.kind = KernelSched::Migrate;
      f.pid = tep_find_field(ev, "pid"), f.comm = tep_find_field(ev, "comm");
      f.orig_cpu = tep_find_field(ev, "orig_cpu"), f.dest_cpu = tep_find_field(ev, "dest_cpu");
    } else if (name == "sched_process_exit") {
      f.kind = KernelSched::Exit;
      f.pid = tep_find_field(ev, "pid"), f.comm = tep_find_field(ev, "comm");
    } else {
      f.known = false;
    }
    return f;
  }

  static int on_record(tep_event* ev, tep_record* r, int cpu, void* self) {
    Impl& m = *static_cast<Impl*>(self);
    if (r->missed_events) m.lost->push_back(LostEvents{uint32_t(cpu), r->ts, uint64_t(r->missed_events > 0 ? r->missed_events : 1)});
    Fields& f = m.fields_of(ev);
    if (!f.known) return 0;
    KernelSched k;
    k.kind = f.kind, k.cpu = uint32_t(cpu), k.ts = r->ts;
    k.pid = int32_t(number(f.pid, r));
    k.comm = text(f.comm, r);
    if (f.kind == KernelSched::Switch) {
      k.next_pid = int32_t(number(f.next_pid, r));
      k.next_comm = text(f.next_comm, r);
      k.prev_state = int64_t(number(f.state, r));
    }
    k.orig_cpu = uint32_t(number(f.orig_cpu, r)), k.dest_cpu = uint32_t(number(f.dest_cpu, r));
    m.out->push_back(std::move(k));
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
