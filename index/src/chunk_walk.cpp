#include "chunk_walk.hpp"

namespace tinescope::index {

Layouts::Layouts(const format::Schema& schema) {
  for (size_t code = 0; code <= format::kMaxEventType; ++code) {
    const format::EventTypeDef* d = schema.find(uint16_t(code));
    if (!d) continue;
    type[code].known = true;
    type[code].count = uint8_t(std::min(d->fields.size(), format::kMaxFields));
    for (size_t k = 0; k < type[code].count; ++k) type[code].field[k] = d->fields[k].type;
    const format::FieldType f0 = type[code].field[0];
    type[code].one_varint = type[code].count == 1 && (f0 == format::FieldType::U64 || f0 == format::FieldType::String);
  }
}

const char* kind_name(StreamKind k) {
  switch (k) {
    case StreamKind::Interval: return "interval";
    case StreamKind::Instant: return "instant";
    case StreamKind::Counter: return "counter";
    case StreamKind::Send: return "send";
    case StreamKind::Sched: return "sched";
    case StreamKind::Depth: return "depth";
    case StreamKind::Span: return "span";
    case StreamKind::Task: return "task";
    case StreamKind::Hold: return "hold";
  }
  return "?";
}

}  // namespace tinescope::index
