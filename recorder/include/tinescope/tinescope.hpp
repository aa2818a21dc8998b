// tinescope recorder: the C++ API. A thin layer over the C API in tinescope.h;
// the same promises hold (no lock, no allocation, no system call, no blocking).
//
//   TS_SCOPE("decode");                 // an interval from here to the end of the scope
//   ts::counter("queue.depth", n);
//   uint64_t id = ts::message_id(); ts::send(id, channel, bytes);
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "tinescope/tinescope.h"

namespace ts {

// Starts recording into `path` (and/or serves a live feed); stops at scope
// exit. It never writes over an existing file (set ts_config::overwrite to
// replace one): where it cannot record, it says why on stderr and ok() is
// false, so a program that goes on without a trace does so knowingly.
class Session {
 public:
  explicit Session(const char* path, const char* live_address = nullptr) {
    ts_config c{};
    c.file_path = path;
    c.live_address = live_address;
    start(c);
  }
  explicit Session(const ts_config& config) { start(config); }
  ~Session() {
    if (ok_) ts_stop();
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  bool ok() const { return ok_; }
  const char* error() const { return ts_last_error(); }

 private:
  void start(const ts_config& c) {
    const bool running = ts_is_running() != 0;  // (TINESCOPE_OUT's recording, or another session)
    ok_ = ts_start(&c) == 0;
    if (ok_) return;
    if (running)
      std::fprintf(stderr, "tinescope: a recording already runs (TINESCOPE_OUT, or another session): "
                           "this session's events go to it\n");
    else
      std::fprintf(stderr, "%s: not recording\n", ts_last_error());
  }
  bool ok_;
};

// An interval for the life of the object. `name` must outlive the process
// (a literal, or ts_intern()).
class Scope {
 public:
  explicit Scope(const char* name, uint64_t category = 1) : name_(name), category_(category) {
    ts_begin_c(category, name);
  }
  ~Scope() { ts_end_c(category_, name_); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* name_;
  uint64_t category_;
};

inline void begin(const char* name) { ts_begin(name); }
inline void end(const char* name) { ts_end(name); }
inline void instant(const char* name) { ts_instant(name); }
inline void complete(const char* name, uint64_t duration_ticks) { ts_complete(name, duration_ticks); }
inline void counter(const char* name, int64_t v) { ts_counter_i64(name, v); }
inline void counter(const char* name, int v) { ts_counter_i64(name, v); }
inline void counter(const char* name, double v) { ts_counter_f64(name, v); }
inline uint64_t now() { return ts_now(); }

inline uint64_t message_id() { return ts_message_id(); }
inline void send(uint64_t id, uint64_t channel, uint64_t size, const void* payload = nullptr,
                 uint32_t payload_len = 0) {
  ts_message_send(id, channel, size, payload, payload_len);
}
inline void recv(uint64_t id, uint64_t channel, uint64_t size, const void* payload = nullptr,
                 uint32_t payload_len = 0) {
  ts_message_recv(id, channel, size, payload, payload_len);
}

inline void thread_name(const char* name) { ts_thread_name(name); }
inline void process_name(const char* name) { ts_process_name(name); }
inline void cpu_name(uint32_t cpu, const char* name) { ts_cpu_name(cpu, name); }
inline void metadata(const char* key, const char* value) { ts_metadata(key, value); }
inline void channel_name(uint64_t channel, const char* name) { ts_channel_name(channel, name); }
inline void category_name(uint64_t category, const char* name) { ts_category_name(category, name); }
inline const char* intern(const char* s) { return ts_intern(s); }

inline void sched(ts_sched_kind kind, const char* task, uint64_t job, uint32_t cpu) {
  ts_sched(kind, task, job, cpu);
}
inline void job_deadline(const char* task, uint64_t job, uint64_t deadline) { ts_job_deadline(task, job, deadline); }
inline void task_priority(const char* task, int32_t level) { ts_task_priority(task, level); }
inline void lock(ts_lock_kind kind, const char* name, uint64_t id) { ts_lock(kind, name, id); }

// User-defined types: ts::event(type, 42, 3.5, "name") with one argument per field.
namespace detail {
inline uint64_t slot(double v) { return ts_f64_slot(v); }
inline uint64_t slot(float v) { return ts_f64_slot(v); }
inline uint64_t slot(const char* s) { return ts_str_slot(s); }
template <class T>
inline uint64_t slot(T v) {
  static_assert(std::is_integral_v<T> || std::is_enum_v<T>, "fields are integers, doubles or names");
  return uint64_t(v);
}
}  // namespace detail
template <class... Args>
inline void event(uint32_t type, Args... args) {
  const uint64_t slots[sizeof...(Args) + 1] = {detail::slot(args)...};
  ts_user_event(type, slots);
}

}  // namespace ts

#define TS_CONCAT_(a, b) a##b
#define TS_CONCAT(a, b) TS_CONCAT_(a, b)
// An interval named `name` from here to the end of the enclosing scope.
#define TS_SCOPE(name) ::ts::Scope TS_CONCAT(ts_scope_, __LINE__)(name)
#define TS_SCOPE_C(category, name) ::ts::Scope TS_CONCAT(ts_scope_, __LINE__)(name, category)
// An interval named after the enclosing function.
#define TS_FUNCTION() ::ts::Scope TS_CONCAT(ts_scope_, __LINE__)(__func__)
