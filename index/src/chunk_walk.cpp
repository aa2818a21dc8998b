#include "chunk_walk.hpp"

#include <lz4.h>

namespace tinescope::index {

Layouts::Layouts(const format::Schema& schema) {
  for (size_t code = 0; code <= format::kMaxEventType; ++code) {
    const format::EventTypeDef* d = schema.find(uint16_t(code));
    if (!d) continue;
    type[code].known = true;
    type[code].count = uint8_t(std::min(d->fields.size(), format::kMaxFields));
    for (size_t k = 0; k < type[code].count; ++k) type[code].field[k] = d->fields[k].type;
  }
}

const uint8_t* chunk_payload(const uint8_t* chunk, std::vector<uint8_t>& buf, std::string& why) {
  format::ChunkHeader h;
  std::memcpy(&h, chunk, sizeof h);
  const uint8_t* payload = chunk + h.header_size;
  if (!(h.flags & format::kChunkLz4)) return payload;
  if (buf.size() < h.raw_size) buf.resize(h.raw_size);
  int got = LZ4_decompress_safe(reinterpret_cast<const char*>(payload), reinterpret_cast<char*>(buf.data()),
                                int(h.stored_size), int(h.raw_size));
  if (got != int(h.raw_size)) {
    why = "payload does not decompress";
    return nullptr;
  }
  return buf.data();
}

const char* kind_name(StreamKind k) {
  switch (k) {
    case StreamKind::Interval: return "interval";
    case StreamKind::Instant: return "instant";
    case StreamKind::Counter: return "counter";
    case StreamKind::Send: return "send";
    case StreamKind::Sched: return "sched";
  }
  return "?";
}

}  // namespace tinescope::index
