// The kernel's sched events as libtraceevent hands them over (a live
// tracefs capture, a trace-cmd trace.dat), read into KernelSched: each
// event type's fields looked up once, by name.
#pragma once

#include <event-parse.h>

#include <cstring>
#include <map>
#include <string>

#include "tinescope/import/kernel_sched.hpp"

namespace tinescope::import {

class KernelEventReader {
 public:
  // False for an event that is none of the sched events read.
  bool read(tep_event* ev, tep_record* r, int cpu, KernelSched& k) {
    const Fields& f = fields_of(ev);
    if (!f.known) return false;
    k = KernelSched{};
    k.kind = f.kind, k.cpu = uint32_t(cpu), k.ts = r->ts;
    k.pid = int32_t(number(f.pid, r));
    k.comm = text(f.comm, r);
    if (f.kind == KernelSched::Switch) {
      k.next_pid = int32_t(number(f.next_pid, r));
      k.next_comm = text(f.next_comm, r);
      k.prev_state = int64_t(number(f.state, r));
      if (f.next_prio) k.next_prio = int32_t(number(f.next_prio, r));
    }
    k.orig_cpu = uint32_t(number(f.orig_cpu, r)), k.dest_cpu = uint32_t(number(f.dest_cpu, r));
    return true;
  }

 private:
  struct Fields {
    KernelSched::Kind kind = KernelSched::Switch;
    bool known = false;
    tep_format_field *pid = nullptr, *next_pid = nullptr, *state = nullptr, *comm = nullptr, *next_comm = nullptr,
                     *orig_cpu = nullptr, *dest_cpu = nullptr, *next_prio = nullptr;
  };

  static uint64_t number(tep_format_field* f, const tep_record* r) {
    unsigned long long v = 0;
    if (f) tep_read_number_field(f, r->data, &v);
    return v;
  }
  static std::string text(tep_format_field* f, const tep_record* r) {
    if (!f || f->offset < 0 || f->offset + f->size > r->size) return {};
    const char* p = static_cast<const char*>(r->data) + f->offset;
    return std::string(p, strnlen(p, size_t(f->size)));
  }

  const Fields& fields_of(tep_event* ev) {
    auto [it, fresh] = fields_.try_emplace(ev->id);
    Fields& f = it->second;
    if (!fresh) return f;
    const std::string name = ev->name ? ev->name : "";
    f.known = true;
    if (name == "sched_switch") {
      f.kind = KernelSched::Switch;
      f.pid = tep_find_field(ev, "prev_pid"), f.next_pid = tep_find_field(ev, "next_pid");
      f.state = tep_find_field(ev, "prev_state"), f.next_prio = tep_find_field(ev, "next_prio");
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

  std::map<int, Fields> fields_;  // by event id
};

}  // namespace tinescope::import
