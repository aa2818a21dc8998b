// decode_events as a template: the loop that reads one chunk's raw payload
// into events, with `emit` inlined into it (trace_reader.hpp's
// decode_events is this with a std::function: a call an event, which a
// scan of every event of a trace feels).
#pragma once

#include <algorithm>
#include <cstring>
#include <string>

#include "tinescope/format.hpp"
#include "tinescope/trace_reader.hpp"

namespace tinescope::trace {

template <class Emit>
bool decode_each(const uint8_t* raw, size_t n, const format::ChunkHeader& h, const format::Schema& schema, Emit&& emit,
                 std::string& why, uint64_t& skipped, bool emit_unknown = false) {
  using namespace format;
  const uint8_t* p = raw;
  const uint8_t* const end = raw + n;
  Event e;
  e.feedlet = h.feedlet;
  uint64_t ts = h.first_ts, prev_delta = 0, count = 0;
  // (Given p and count, not capturing them: captured by reference, they would
  // live in memory, not registers, for the whole loop.)
  auto fail = [&why, raw](const std::string& what, const uint8_t* at, uint64_t event) {
    why = what + " at payload offset " + std::to_string(at - raw) + " (event " + std::to_string(event) + ")";
    return false;
  };
  while (p < end) {
    uint64_t type, delta;
    const uint8_t* const at = p;
    if (!get_varint(p, end, type) || !get_varint(p, end, delta)) return fail("truncated event", p, count);
    const EventTypeDef* def = type <= kMaxEventType ? schema.find(uint16_t(type)) : nullptr;
    const uint8_t* fields_end = end;
    if (self_sized(uint32_t(type))) {
      uint64_t len;
      if (!get_varint(p, end, len) || len > uint64_t(end - p)) return fail("truncated event", p, count);
      fields_end = p + len;
      if (!def) {  // its definition is lost or newer than this reader: skip it
        ts += delta;
        if (emit_unknown) {
          Event u;
          u.type = uint16_t(std::min<uint64_t>(type, UINT16_MAX)), u.feedlet = h.feedlet, u.ts = ts, u.unknown = true;
          u.index = uint32_t(count), u.offset = uint32_t(at - raw);
          u.bytes[0] = std::string_view(reinterpret_cast<const char*>(p), size_t(fields_end - p));
          u.u[0] = uint64_t(fields_end - p);
          emit(u);
        }
        p = fields_end;
        ++count;
        ++skipped;
        continue;
      }
    }
    if (!def) return fail("event type " + std::to_string(type) + " not in the schema", p, count);
    ts += delta;
    e.type = uint16_t(type);
    e.ts = ts;
    e.index = uint32_t(count), e.offset = uint32_t(at - raw);
    e.field_count = uint8_t(def->fields.size());
    for (size_t k = 0; k < def->fields.size(); ++k) {
      uint64_t v;
      switch (def->fields[k].type) {
        case FieldType::U64:
        case FieldType::String:
          if (!get_varint(p, fields_end, v)) return fail("truncated field", p, count);
          e.u[k] = v;
          break;
        case FieldType::I64:
          if (!get_varint(p, fields_end, v)) return fail("truncated field", p, count);
          e.u[k] = uint64_t(unzigzag(v));
          break;
        case FieldType::DeltaU64:
          if (!get_varint(p, fields_end, v)) return fail("truncated field", p, count);
          prev_delta += uint64_t(unzigzag(v));
          e.u[k] = prev_delta;
          break;
        case FieldType::F64:
          if (fields_end - p < 8) return fail("truncated field", p, count);
          std::memcpy(&e.u[k], p, 8);
          p += 8;
          break;
        case FieldType::Bytes:
          if (!get_varint(p, fields_end, v) || v > uint64_t(fields_end - p)) return fail("truncated bytes field", p, count);
          e.bytes[k] = std::string_view(reinterpret_cast<const char*>(p), size_t(v));
          e.u[k] = v;
          p += v;
          break;
      }
    }
    if (self_sized(uint32_t(type))) p = fields_end;  // fields a newer writer added
    ++count;
    emit(e);
  }
  if (count != h.event_count)
    return fail("chunk header says " + std::to_string(h.event_count) + " events, payload holds", p, count);
  return true;
}

}  // namespace tinescope::trace
