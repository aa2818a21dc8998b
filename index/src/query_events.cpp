// An event's every field, on demand: the chunk that holds it is read and
// decoded whole (one chunk: ~64 KB, a fraction of a millisecond), with the
// schema the trace's metadata gives. The index keeps no fields.
#include <algorithm>

#include "query_walk.hpp"
#include "tinescope/trace_decode.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {

namespace {

EventData event_data(const trace::Event& e, const format::Schema& schema, uint64_t position, const ChunkRecord& r) {
  EventData d;
  d.feedlet = r.feedlet, d.position = position, d.chunk_offset = r.offset, d.chunk_sequence = r.sequence;
  d.payload_offset = e.offset, d.type = e.type, d.ts = e.ts, d.unknown = e.unknown;
  const size_t n = e.unknown ? 1 : e.field_count;
  d.values.assign(e.u, e.u + n);
  d.bytes.resize(n);
  const format::EventTypeDef* def = schema.find(e.type);
  for (size_t i = 0; i < n; ++i)
    if (e.unknown || (def && def->fields[i].type == format::FieldType::Bytes)) d.bytes[i] = std::string(e.bytes[i]);
  return d;
}

// What went wrong with chunk record `chunk`, naming its place in the trace.
std::string chunk_error(const State& s, uint32_t chunk, const std::string& trace, const std::string& what) {
  return "chunk at offset " + std::to_string(s.chunks[chunk].offset) + " of " + trace + ": " + what;
}

// Chunk c of f, read and its payload decompressed whole: the raw payload, or
// null with why.
const uint8_t* whole_payload(const State& s, const FeedletState& f, size_t c, ChunkBuffers& buf,
                             format::ChunkHeader& h, const std::string& trace, std::string& why) {
  const FeedletChunk& fc = f.chunks[c];
  auto fail = [&](const std::string& what) {
    why = chunk_error(s, fc.chunk, trace, what);
    return nullptr;
  };
  if (!chunk_readable(s, f, c)) return fail("its record in the index is damaged");
  ChunkBlocks blocks;
  std::string reason;
  const uint8_t* chunk = s.read_chunk_head(fc.chunk, buf.chunk, &blocks.whole, reason);
  if (!chunk) return fail(reason);
  std::memcpy(&h, chunk, sizeof h);
  if (!blocks.read(s, fc.chunk, buf.chunk.data(), 0, h.raw_size, reason)) return fail(reason);
  const uint8_t* raw = s.payload(chunk, buf.payload, reason);
  return raw ? raw : fail(reason);
}

}  // namespace

bool TraceIndex::each_payload(uint32_t feedlet, uint64_t t0, uint64_t t1, const PayloadFn& fn, std::string& why) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  if (!f || t0 > t1) return true;
  PayloadBuffer lease;
  ChunkBuffers& buf = lease.get();
  const auto [first, end] = chunks_over(*s_, *f, t0, t1);
  for (size_t c = first; c < end; ++c) {
    format::ChunkHeader h;
    const uint8_t* raw = whole_payload(*s_, *f, c, buf, h, trace_path_, why);
    if (!raw) return false;
    std::string reason;
    if (!fn(raw, h, catalog_.schema, reason)) {
      why = chunk_error(*s_, f->chunks[c].chunk, trace_path_, reason);
      return false;
    }
  }
  return true;
}

bool TraceIndex::decode_events(uint32_t feedlet, uint64_t t0, uint64_t t1,
                               const std::function<void(const trace::Event&)>& fn, std::string& why) const {
  return each_payload(
      feedlet, t0, t1,
      [&](const uint8_t* raw, const format::ChunkHeader& h, const format::Schema& schema, std::string& reason) {
        uint64_t skipped = 0;
        // A chunk wholly inside the window goes straight to fn (the
        // window's edges are tested only in its two end chunks).
        if (h.first_ts >= t0 && h.last_ts <= t1) return trace::decode_each(raw, h.raw_size, h, schema, fn, reason, skipped);
        return trace::decode_each(
            raw, h.raw_size, h, schema,
            [&](const trace::Event& e) {
              if (e.ts >= t0 && e.ts <= t1) fn(e);
            },
            reason, skipped);
      },
      why);
}

bool TraceIndex::read_events(uint32_t feedlet, uint64_t k, uint64_t count, std::vector<EventData>& out,
                             std::string& why) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  if (!f || f->chunks.empty()) return true;
  const uint64_t end = std::min(f->events, k + std::min<uint64_t>(count, f->events));
  PayloadBuffer lease;
  ChunkBuffers& buf = lease.get();
  for (size_t c = k < end ? chunk_of_position(*f, k) : f->chunks.size(); k < end && c < f->chunks.size(); ++c) {
    const FeedletChunk& fc = f->chunks[c];
    const ChunkRecord& r = s_->chunks[fc.chunk];
    format::ChunkHeader h;
    const uint8_t* raw = whole_payload(*s_, *f, c, buf, h, trace_path_, why);
    if (!raw) return false;
    std::string reason;
    uint64_t skipped = 0;
    const uint64_t first = fc.first_event;
    const bool ok = trace::decode_events(
        raw, h.raw_size, h, catalog_.schema,
        [&](const trace::Event& e) {
          const uint64_t position = first + e.index;
          if (position >= k && position < end) out.push_back(event_data(e, catalog_.schema, position, r));
        },
        reason, skipped, true);
    if (!ok) {
      why = chunk_error(*s_, fc.chunk, trace_path_, reason);
      return false;
    }
    k = std::max(k, first + h.event_count);
  }
  return true;
}

bool TraceIndex::events_at(uint32_t feedlet, uint64_t t0, uint64_t t1, std::vector<EventData>& out,
                           std::string& why, size_t limit) const {
  // Events at one tick may run on into the next chunks: read a chunk's worth
  // at a time until one is later.
  uint64_t k = feedlet_position_at(feedlet, t0);
  std::vector<EventData> got;
  while (out.size() < limit) {
    got.clear();
    const bool ok = read_events(feedlet, k, std::min<uint64_t>(256, limit - out.size()), got, why);
    for (EventData& e : got) {
      if (e.ts > t1) return true;
      out.push_back(std::move(e));
    }
    if (!ok) return false;
    if (got.empty()) return true;
    k = out.back().position + 1;
  }
  return true;
}

}  // namespace tinescope::index
