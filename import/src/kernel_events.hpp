// The kernel's sched events as libtraceevent hands them over (a live
// tracefs capture, a trace-cmd trace.dat), read into KernelSched: each
// event type's fields looked up once, by name.
#pragma once

#include <event-parse.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

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

  // Any other event, kept whole: its name and every field of its own (not
  // the common ones), encoded as an argument event of a type made for its
  // kind (".NAME": numbers signed or not as the kernel declares them, text
  // and arrays as bytes). False when the user type codes ran out.
  bool other(tep_event* ev, tep_record* r, int cpu, KernelSched& k) {
    const ArgType* t = arg_type_of(ev);
    if (!t) return false;
    k = KernelSched{};
    k.kind = KernelSched::Other, k.cpu = uint32_t(cpu), k.ts = r->ts;
    k.comm = ev->name ? ev->name : "?";
    k.arg_type = t->code;
    uint8_t buf[format::kMaxVarint];
    auto varint = [&](uint64_t v) { k.args.append(reinterpret_cast<const char*>(buf), size_t(format::put_varint(buf, v) - buf)); };
    for (tep_format_field* f : t->fields) {
      if (f->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_STRING)) {
        int len = 0;
        const char* p = static_cast<const char*>(tep_get_field_raw(nullptr, ev, f->name, r, &len, 0));
        size_t n = p && len > 0 ? size_t(len) : 0;
        // (A __data_loc's offset and length come from the record: kept
        // inside it. libtraceevent calls u8 arrays strings too: only char
        // text ends at its first NUL.)
        const char* data = static_cast<const char*>(r->data);
        if (!p || p < data || p > data + r->size || n > size_t(data + r->size - p)) p = nullptr, n = 0;
        if ((f->flags & TEP_FIELD_IS_STRING) && f->type && std::strstr(f->type, "char")) n = p ? strnlen(p, n) : 0;
        varint(n);
        k.args.append(p ? p : "", n);
      } else if (f->flags & TEP_FIELD_IS_SIGNED) {
        const uint64_t v = number(f, r);
        const int bits = f->size > 0 && f->size < 8 ? f->size * 8 : 64;
        const int64_t s = bits == 64 ? int64_t(v) : int64_t(v << (64 - bits)) >> (64 - bits);  // sign-extended
        varint(format::zigzag(s));
      } else {
        varint(number(f, r));
      }
    }
    return true;
  }
  // The argument types made so far (docs/FORMAT.md "Arguments").
  const std::vector<format::EventTypeDef>& arg_types() const { return arg_defs_; }

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

  struct ArgType {
    uint16_t code = 0;
    std::vector<tep_format_field*> fields;
  };
  const ArgType* arg_type_of(tep_event* ev) {
    auto [it, fresh] = arg_types_.try_emplace(ev->id);
    if (!fresh) return it->second.code ? &it->second : nullptr;
    const size_t code = format::kFirstUserType + arg_defs_.size();
    if (code > format::kMaxEventType) return nullptr;
    format::EventTypeDef d;
    d.code = uint16_t(code);
    d.name = std::string(".") + (ev->name ? ev->name : "?");
    for (tep_format_field* f = ev->format.fields; f; f = f->next) {
      if (d.fields.size() == format::kMaxFields) break;  // (a schema's limit; the rest are left out)
      const bool bytes = f->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_STRING);
      d.fields.push_back({bytes                               ? format::FieldType::Bytes
                          : (f->flags & TEP_FIELD_IS_SIGNED) ? format::FieldType::I64
                                                              : format::FieldType::U64,
                          f->name ? f->name : "?"});
      it->second.fields.push_back(f);
    }
    it->second.code = d.code;
    arg_defs_.push_back(std::move(d));
    return &it->second;
  }
  std::map<int, ArgType> arg_types_;  // event id ->
  std::vector<format::EventTypeDef> arg_defs_;

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
