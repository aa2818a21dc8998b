// decode_events as a template: the loop that reads one chunk's raw payload
// into events, with `emit` inlined into it (trace_reader.hpp's
// decode_events is this with a std::function: a call an event, which a
// scan of every event of a trace feels).
#pragma once

#include <algorithm>
#include <bit>
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

namespace tinescope::trace {

// What decode_leading needs of each type, from a schema, in one flat table:
// a schema's definitions hold names and vectors, and finding one an event
// cost more than decoding the event.
struct FieldPlan {
  struct Type {
    bool known = false;
    bool walk = false;  // a DeltaU64 field: read even when not wanted (the running delta)
    bool three_varints = false;  // exactly three fields, each U64 or String
    uint8_t fields = 0;
    format::FieldType kind[format::kMaxFields] = {};
  };
  Type types[format::kMaxEventType + 1];
  size_t known_types = 0;  // how many: a schema that grew is planned again

  explicit FieldPlan(const format::Schema& s) {
    for (uint32_t c = 0; c <= format::kMaxEventType; ++c) {
      const format::EventTypeDef* d = s.find(uint16_t(c));
      if (!d) continue;
      Type& t = types[c];
      t.known = true, ++known_types;
      t.fields = uint8_t(std::min(d->fields.size(), format::kMaxFields));
      for (size_t k = 0; k < t.fields; ++k) {
        t.kind[k] = d->fields[k].type;
        t.walk |= t.kind[k] == format::FieldType::DeltaU64;
      }
      auto plain = [&t](size_t k) { return t.kind[k] == format::FieldType::U64 || t.kind[k] == format::FieldType::String; };
      t.three_varints = t.fields == 3 && plain(0) && plain(1) && plain(2);
    }
  }
};

// get_varint from one 8-byte load where eight bytes are left: a varint of up
// to eight bytes with no loop and no branch on its length (fields such as
// ids and absolute times take three to five bytes; get_varint's loop for
// them was a tenth of a scan).
[[gnu::always_inline]] inline bool get_varint_wide(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  if (p < end && *p < 0x80) {  // one byte: most fields
    v = *p++;
    return true;
  }
  if (end - p >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);  // (the format is little-endian, as are the machines it runs on)
    const uint64_t stops = ~w & 0x8080808080808080ull;  // bytes without a continuation bit
    if (stops) {
      const int bits = std::countr_zero(stops) + 1;  // through the varint's last byte
      uint64_t y = (bits == 64 ? w : w & ((uint64_t(1) << bits) - 1)) & 0x7f7f7f7f7f7f7f7full;
      // The 7-bit groups side by side: pairs, then fours, then all eight.
      y = (y & 0x007f007f007f007full) | ((y & 0x7f007f007f007f00ull) >> 1);
      y = (y & 0x00003fff00003fffull) | ((y & 0x3fff00003fff0000ull) >> 2);
      y = (y & 0x000000000fffffffull) | ((y & 0x0fffffff00000000ull) >> 4);
      v = y;
      p += bits / 8;
      return true;
    }
  }
  return format::get_varint(p, end, v);
}

// An event as decode_leading gives it: its type, time and first three fields.
// (Trivial, no member defaults: room for millions is made at once, and filled.)
struct LeadingEvent {
  uint64_t ts;
  uint32_t feedlet;
  uint16_t type;
  uint64_t u[3];  // its first three fields, as Event::u holds them (a Bytes field: its length)
};

// One field from p (not past end): where it ends, or null where it runs
// past. (p by value: a pointer whose address a call is given lives in
// memory, not a register, for the whole loop that calls it.)
[[gnu::always_inline]] inline const uint8_t* leading_field(format::FieldType kind, const uint8_t* p, const uint8_t* end,
                                                           uint64_t& v, uint64_t& prev_delta) {
  using format::FieldType;
  switch (kind) {
    case FieldType::U64:
    case FieldType::String: return get_varint_wide(p, end, v) ? p : nullptr;
    case FieldType::I64:
      if (!get_varint_wide(p, end, v)) return nullptr;
      v = uint64_t(format::unzigzag(v));
      return p;
    case FieldType::DeltaU64:
      if (!get_varint_wide(p, end, v)) return nullptr;
      prev_delta += uint64_t(format::unzigzag(v));
      v = prev_delta;
      return p;
    case FieldType::F64:
      if (end - p < 8) return nullptr;
      std::memcpy(&v, p, 8);
      return p + 8;
    case FieldType::Bytes:
      if (!get_varint_wide(p, end, v) || v > uint64_t(end - p)) return nullptr;
      return p + v;
  }
  return nullptr;
}

// decode_each for scans that want only a few types and each one's first
// three fields: the events of one chunk whose type `wanted` marks
// (wanted[type] != 0, type <= kMaxEventType), and only those in [t0, t1]
// when `windowed` (where it stops: a chunk's times never fall), written
// from `out` on; `kept` says how many. Never more than the header's event
// count: `out` has room for min(event_count, raw size / 2 + 1), as no event
// is shorter than two bytes. Events of types not wanted are stepped over
// (self-sized ones by their length); an event of a self-sized type the plan
// lacks is skipped. Fails as decode_each does.
template <bool windowed>
bool decode_leading(const uint8_t* raw, size_t n, const format::ChunkHeader& h, const FieldPlan& plan, const uint8_t* wanted,
                    uint64_t t0, uint64_t t1, LeadingEvent* out, size_t& kept, std::string& why) {
  using namespace format;
  const uint8_t* p = raw;
  const uint8_t* const end = raw + n;
  uint64_t ts = h.first_ts, prev_delta = 0, count = 0;
  LeadingEvent* to = out;
  kept = 0;
  auto fail = [&why, raw](const char* what, const uint8_t* at, uint64_t event) {
    why = std::string(what) + " at payload offset " + std::to_string(at - raw) + " (event " + std::to_string(event) + ")";
    return false;
  };
  while (p < end) {
    // (Never more than the header says: the caller made room for that many.)
    if (count == h.event_count)
      return fail(("chunk header says " + std::to_string(h.event_count) + " events, payload holds more").c_str(), p, count);
    uint64_t type, delta;
    if (!get_varint(p, end, type) || !get_varint(p, end, delta)) return fail("truncated event", p, count);
    const uint8_t* fields_end = end;
    const bool sized = self_sized(uint32_t(type));
    if (sized) {
      uint64_t len;
      if (!get_varint(p, end, len) || len > uint64_t(end - p)) return fail("truncated event", p, count);
      fields_end = p + len;
    }
    ts += delta;
    // (Deltas are unsigned: a chunk's times never fall, and nothing after
    // this is in the window.)
    if (windowed && ts > t1) break;
    ++count;
    if (type > kMaxEventType || !plan.types[type].known) {
      if (!sized) return fail(("event type " + std::to_string(type) + " not in the schema").c_str(), p, count - 1);
      p = fields_end;  // its definition is lost or newer than this reader
      continue;
    }
    const FieldPlan::Type& t = plan.types[type];
    const bool want = wanted[type] && (!windowed || ts >= t0);
    if (!want && sized && !t.walk) {
      p = fields_end;
      continue;
    }
    uint64_t u0 = 0, u1 = 0, u2 = 0, rest;
    if (t.three_varints) {  // (most scheduling and lock types: no switch an event)
      if (!get_varint_wide(p, fields_end, u0) || !get_varint_wide(p, fields_end, u1) ||
          !get_varint_wide(p, fields_end, u2))
        return fail("truncated field", p, count - 1);
    } else {
      const size_t nf = t.fields;
      // (The first three in variables of their own, not an array: an array
      // written a field at a time and read whole stalled every event.)
      const uint8_t* q = p;
      if (nf > 0 && q) q = leading_field(t.kind[0], q, fields_end, u0, prev_delta);
      if (nf > 1 && q) q = leading_field(t.kind[1], q, fields_end, u1, prev_delta);
      if (nf > 2 && q) q = leading_field(t.kind[2], q, fields_end, u2, prev_delta);
      for (size_t k = 3; k < nf && q; ++k) q = leading_field(t.kind[k], q, fields_end, rest, prev_delta);
      if (!q) return fail("truncated field", p, count - 1);
      p = q;
    }
    if (sized) p = fields_end;  // fields a newer writer added
    if (want) *to++ = LeadingEvent{ts, h.feedlet, uint16_t(type), {u0, u1, u2}};
  }
  kept = size_t(to - out);
  if (!windowed || p == end) {
    if (count != h.event_count)
      return fail(("chunk header says " + std::to_string(h.event_count) + " events, payload holds").c_str(), p, count);
  }
  return true;
}

}  // namespace tinescope::trace
