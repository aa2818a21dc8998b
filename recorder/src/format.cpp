#include "tinescope/format.hpp"

#include <xxhash.h>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the trace format is little endian");

namespace tinescope::format {

void Schema::add(EventTypeDef def) {
  uint16_t code = def.code;
  types[code] = std::move(def);
  known[code] = true;
}

static EventTypeDef make(uint16_t code, const char* name, std::initializer_list<FieldDef> fields) {
  return EventTypeDef{code, name, std::vector<FieldDef>(fields)};
}

const Schema& builtin_schema() {
  static const Schema schema = [] {
    using F = FieldType;
    const FieldDef name{F::String, "name"};
    const FieldDef task{F::String, "task"}, job{F::U64, "job"}, cpu{F::U64, "cpu"};
    const FieldDef lock{F::String, "lock"}, lock_id{F::U64, "id"};
    const FieldDef msg_id{F::DeltaU64, "id"}, channel{F::U64, "channel"}, size{F::U64, "size"},
        payload{F::Bytes, "payload"};
    const FieldDef sync_id{F::U64, "sync_id"}, peer{F::U64, "peer"};
    Schema s;
    s.add(make(kIntervalBegin, "interval_begin", {name}));
    s.add(make(kIntervalEnd, "interval_end", {name}));
    s.add(make(kIntervalComplete, "interval_complete", {name, {F::U64, "duration"}}));
    s.add(make(kInstant, "instant", {name}));
    s.add(make(kCounterInt, "counter_int", {name, {F::I64, "value"}}));
    s.add(make(kCounterFloat, "counter_float", {name, {F::F64, "value"}}));
    s.add(make(kMessageSend, "message_send", {msg_id, channel, size, payload}));
    s.add(make(kMessageRecv, "message_recv", {msg_id, channel, size, payload}));
    s.add(make(kThreadName, "thread_name", {name}));
    s.add(make(kProcessName, "process_name", {name}));
    s.add(make(kCpuName, "cpu_name", {cpu, name}));
    s.add(make(kMetadata, "metadata", {{F::String, "key"}, {F::String, "value"}}));
    s.add(make(kTaskArrive, "task_arrive", {task, cpu}));
    s.add(make(kJobArrive, "job_arrive", {task, job, cpu}));
    s.add(make(kJobStart, "job_start", {task, job, cpu}));
    s.add(make(kJobPreempt, "job_preempt", {task, job, cpu}));
    s.add(make(kJobResume, "job_resume", {task, job, cpu}));
    s.add(make(kJobBlock, "job_block", {task, job, cpu}));
    s.add(make(kJobComplete, "job_complete", {task, job, cpu}));
    s.add(make(kJobDeadline, "job_deadline", {task, job, {F::U64, "deadline"}}));
    s.add(make(kTaskPriority, "task_priority", {task, {F::I64, "level"}}));
    s.add(make(kLockAcquire, "lock_acquire", {lock, lock_id}));
    s.add(make(kLockContend, "lock_contend", {lock, lock_id}));
    s.add(make(kLockRelease, "lock_release", {lock, lock_id}));
    s.add(make(kClockSyncSend, "clock_sync_send", {sync_id, peer}));
    s.add(make(kClockSyncRecv, "clock_sync_recv", {sync_id, peer}));
    s.add(make(kFuncEnter, "func_enter", {{F::String, "fn"}}));
    s.add(make(kFuncExit, "func_exit", {{F::String, "fn"}}));
    s.add(make(kFeedletEnd, "feedlet_end", {}));
    s.add(make(kFuncUnwind, "func_unwind", {{F::String, "fn"}}));
    s.add(make(kStringDef, "string_def", {{F::U64, "id"}, {F::Bytes, "text"}}));
    s.add(make(kTypeDef, "type_def", {{F::U64, "code"}, {F::Bytes, "schema"}}));
    s.add(make(kCalibration, "calibration", {{F::U64, "mono_ns"}}));
    s.add(make(kFeedletInfo, "feedlet_info", {{F::U64, "feedlet"}, {F::U64, "tid"}, name}));
    s.add(make(kFunctionDef, "function_def", {{F::String, "fn"}, {F::U64, "address"}}));
    s.add(make(kFunctionSource, "function_source", {{F::String, "fn"}, {F::String, "file"}, {F::U64, "line"}}));
    return s;
  }();
  return schema;
}

static void append_string(std::string& out, std::string_view s) {
  append_varint(out, s.size());
  out.append(s);
}

void encode_schema_entry(const EventTypeDef& def, std::string& out) {
  append_varint(out, def.code);
  append_string(out, def.name);
  append_varint(out, def.fields.size());
  for (const FieldDef& f : def.fields) {
    out.push_back(char(f.type));
    append_string(out, f.name);
  }
}

void encode_schema(const Schema& schema, std::string& out) {
  size_t count = 0;
  for (bool k : schema.known) count += k;
  append_varint(out, count);
  for (size_t code = 0; code < schema.types.size(); ++code)
    if (schema.known[code]) encode_schema_entry(schema.types[code], out);
}

static bool get_string(const uint8_t*& p, const uint8_t* end, std::string& s) {
  uint64_t n;
  if (!get_varint(p, end, n) || n > uint64_t(end - p)) return false;
  s.assign(reinterpret_cast<const char*>(p), size_t(n));
  p += n;
  return true;
}

static bool valid_field_type(char c) {
  switch (FieldType(c)) {
    case FieldType::U64: case FieldType::I64: case FieldType::F64:
    case FieldType::String: case FieldType::Bytes: case FieldType::DeltaU64:
      return true;
  }
  return false;
}

bool decode_schema_entry(const uint8_t*& p, const uint8_t* end, EventTypeDef& def) {
  uint64_t code, nfields;
  if (!get_varint(p, end, code) || code == kPadding || code > kMaxEventType) return false;
  def.code = uint16_t(code);
  if (!get_string(p, end, def.name)) return false;
  if (!get_varint(p, end, nfields) || nfields > kMaxFields) return false;
  def.fields.resize(size_t(nfields));
  for (FieldDef& f : def.fields) {
    if (p >= end || !valid_field_type(char(*p))) return false;
    f.type = FieldType(*p++);
    if (!get_string(p, end, f.name)) return false;
  }
  return true;
}

bool decode_schema(const uint8_t* p, size_t n, Schema& out) {
  const uint8_t* end = p + n;
  uint64_t count;
  if (!get_varint(p, end, count) || count > kMaxEventType) return false;
  for (uint64_t i = 0; i < count; ++i) {
    EventTypeDef def;
    if (!decode_schema_entry(p, end, def)) return false;
    out.add(std::move(def));
  }
  return p == end;
}

uint64_t checksum(const void* data, size_t n) { return XXH3_64bits(data, n); }

}  // namespace tinescope::format
