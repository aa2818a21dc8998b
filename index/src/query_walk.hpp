// The walk of a feedlet's chunks that every query below the stored levels
// shares (index/src, private): which chunks hold a time, where a walk
// starts in a chunk (its start, a resume point), decoding a chunk's events
// and items, and payload buffers. Used by query_lanes.cpp, query_running.cpp
// and query_positions.cpp.
#pragma once

#include <algorithm>
#include <span>

#include "resume_points.hpp"
#include "span_streams.hpp"
#include "state.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {

// Index of the last chunk of `f` that starts at or before t, plus one (0:
// none does; the search starts at chunk `from`). The feedlet's last event at
// or before t is in that chunk. (Not the first chunk that ends at or after
// t: events at one tick may run on into the next chunks, and they are all
// before t's end.)
inline size_t chunks_starting_by(const State& s, const FeedletState& f, uint64_t t, size_t from = 0) {
  return partition_index(f.chunks, from, f.chunks.size(),
                         [&](const FeedletChunk& c) { return s.chunks[c.chunk].first_ts <= t; });
}

// Index of the chunk of `f` that holds its k-th event (k below its event count).
inline size_t chunk_of_position(const FeedletState& f, uint64_t k) {
  return partition_index(f.chunks, 0, f.chunks.size(), [&](const FeedletChunk& c) { return c.first_event <= k; }) - 1;
}

// Index of the first chunk of `f` whose last event is at or after t.
inline size_t first_chunk_at(const State& s, const FeedletState& f, uint64_t t) {
  return partition_index(f.chunks, 0, f.chunks.size(),
                         [&](const FeedletChunk& c) { return s.chunks[c.chunk].last_ts < t; });
}

// Chunk k of f reads as itself: a damaged block of the tables reads as
// zeros, and a walk must never take some other chunk in its place.
inline bool chunk_readable(const State& s, const FeedletState& f, size_t k) {
  const uint32_t c = f.chunks[k].chunk;
  return f.chunks.readable(k) && s.chunks.readable(c) && s.chunks[c].feedlet == f.id;
}

// Whether chunk k of f follows a break (follows_break()); an unreadable
// chunk before it is one too.
// A damaged index table (the record of chunk k - 1 unreadable; the trace
// was whole when the indexer walked it) leaves chunk k's own record: the
// drops it says came before it.
inline bool chunk_after_break(const State& s, const FeedletState& f, size_t k) {
  if (k == 0) return false;  // nothing is open before a feedlet's first chunk
  const ChunkRecord& c = s.chunks[f.chunks[k].chunk];
  if (!chunk_readable(s, f, k - 1)) return c.dropped_before != 0;
  return follows_break(s.chunks[f.chunks[k - 1].chunk].sequence, c.sequence, c.dropped_before);
}

// The walk's state at chunk k's start, from its open entries in the pool.
// A damaged entry is left out (its intervals' ends are then counted, not
// drawn); a running job is kept only with its job id entry (the next one)
// readable, and an id entry whose job is damaged is passed over.
inline WalkState state_at(const FeedletState& f, size_t k) {
  WalkState w;
  const FeedletChunk& c = f.chunks[k];
  const uint64_t end = std::min<uint64_t>(c.open_first + c.open_count, f.pool.size());
  for (uint64_t i = c.open_first; i < end; ++i) {
    if (!f.pool.readable(i) || f.pool[i].depth == kJobIdEntry) continue;
    const OpenInterval& o = f.pool[i];
    if (o.depth & kRunningJobBit) {
      const bool id = i + 1 < end && f.pool.readable(i + 1) && f.pool[i + 1].depth == kJobIdEntry;
      if (id) add_to_state(w, o), add_to_state(w, f.pool[++i]);
      continue;
    }
    add_to_state(w, o);
  }
  return w;
}

// Where a walk of a chunk starts and the state there: the chunk's start,
// with its open-interval snapshot, or a resume point inside it (from()).
struct WalkStart {
  WalkState state;
  WalkFrom point;
  bool inside = false;
  const WalkFrom* from() const { return inside ? &point : nullptr; }
};

// Where to walk chunk k of f from, for a walk that needs nothing before time
// t (items keyed before it) nor before the chunk's event max_event: the last
// resume point before both, else the chunk's start.
inline WalkStart start_in(const State& s, const FeedletState& f, size_t k, uint64_t t, uint64_t max_event,
                   ChunkBuffers& buf) {
  WalkStart start;
  start.state = state_at(f, k);
  const std::span<const uint8_t> points = s.resume_points(f.chunks[k], buf);
  start.inside = !points.empty() && find_resume(points.data(), points.data() + points.size(),
                                                s.chunks[f.chunks[k].chunk].first_ts, t, max_event, start.state,
                                                start.point);
  return start;
}

// The blocks of a chunk read so far, for a walk that reads it piecemeal
// (State::read_chunk_head): reads those that decoding payload bytes
// [from, to) takes, as far as they are not read yet. A chunk read whole
// needs none. (What was read stays one range: walks ask for ranges that
// join, forwards or backwards.)
struct ChunkBlocks {
  bool whole = false;      // the chunk was read whole (its payload is not in segments)
  size_t lo = 0, hi = 0;   // the part of its blocks read (offsets in the chunk)
  bool read(const State& s, uint32_t c, uint8_t* chunk, size_t from, size_t to, std::string& why) {
    if (whole) return true;
    size_t b, e;
    if (!trace::chunk_range_bytes(chunk, from, to, &b, &e)) {
      why = "payload does not decompress";
      return false;
    }
    if (hi == 0 || e < lo || b > hi) {
      lo = b, hi = e;
      return s.read_chunk_bytes(c, chunk, b, e, why);
    }
    if (b < lo && !s.read_chunk_bytes(c, chunk, b, lo, why)) return false;
    if (e > hi && !s.read_chunk_bytes(c, chunk, hi, e, why)) return false;
    lo = std::min(lo, b), hi = std::max(hi, e);
    return true;
  }
};

// Walks chunk k of a feedlet, as the indexer did, up to `until` (from a
// resume point inside it if `from`). on_resume (walk_chunk's) is for a walk
// from the chunk's start only: it counts events from where the walk starts.
template <class OnEvent, class OnItem, class OnResume = NoResume>
bool walk_feedlet_chunk(const State& s, const Layouts& layouts, const FeedletState& f, size_t k, WalkState& w,
                        ChunkBuffers& buf, OnEvent&& on_event, OnItem&& on_item, uint64_t until = UINT64_MAX,
                        const WalkFrom* from = nullptr, const ChunksAhead& ahead = {}, OnResume&& on_resume = {}) {
  std::string why;
  if (!chunk_readable(s, f, k)) return false;
  const uint32_t c = f.chunks[k].chunk;
  const ChunkRecord& r = s.chunks[c];
  ChunkBlocks blocks;
  const uint8_t* chunk = s.read_chunk_head(c, buf.chunk, &blocks.whole, why, ahead);
  if (!chunk) return false;
  format::ChunkHeader h;
  std::memcpy(&h, chunk, sizeof h);
  auto no_messages = [](const MessageEvent&) {};
  // A walk that stops inside the chunk needs only the payload up to `until`:
  // decode that much, as lz4 of the whole chunk was a third of a fine zoom's
  // query. The resume points say where it ends to within 2 048 events; past
  // the last point, it is guessed from the chunk's time span, with room to
  // spare.
  size_t size = h.raw_size;
  const std::span<const uint8_t> points = s.resume_points(f.chunks[k], buf);
  if (until >= r.first_ts && until < r.last_ts &&
      !(!points.empty() && payload_until(points.data(), points.data() + points.size(), r.first_ts, until, size)))
    size = size_t(double(until - r.first_ts + 1) / double(r.last_ts - r.first_ts + 1) * h.raw_size) +
           h.raw_size / 8 + 1024;
  const size_t from_offset = from ? from->offset : 0;
  if (!blocks.read(s, c, buf.chunk.data(), from_offset, size, why)) return false;
  const uint8_t* raw = s.payload(chunk, buf.payload, why, &size, from_offset);
  if (!raw) return false;
  // One instantiation of the walk for both tries (three made the compiler
  // stop inlining its varint reads): events and items counted on the first,
  // passed over on a second.
  uint64_t events = 0, items = 0, skip_events = 0, skip_items = 0;
  auto event = [&](uint64_t ts, uint16_t type) { skip_events ? void(--skip_events) : (++events, on_event(ts, type)); };
  auto item = [&](const Item& it) __attribute__((always_inline)) { skip_items ? void(--skip_items) : (++items, on_item(it)); };
  bool stopped = false;
  const WalkState before = size < h.raw_size ? w : WalkState{};
  const bool after_break = chunk_after_break(s, f, k);
  const bool ok =
      walk_chunk(raw, size, h, layouts, w, event, item, no_messages, why, until, &stopped, from, on_resume, after_break);
  if (size == h.raw_size || (ok && stopped)) return ok;
  // The guess fell short: the whole chunk, passing over what was given.
  w = before;
  skip_events = events, skip_items = items;
  if (!blocks.read(s, c, buf.chunk.data(), 0, h.raw_size, why) || !(raw = s.payload(chunk, buf.payload, why))) return false;
  // (Its points are passed again, in order, before the first item not yet given.)
  return walk_chunk(raw, h.raw_size, h, layouts, w, event, item, no_messages, why, until, &stopped, from, on_resume,
                    after_break);
}

// Lends this thread's buffers (the chunk's bytes and its payload), kept from
// walk to walk: a fresh payload buffer for every query (allocated and
// zero-filled to ~100 KB) was a tenth of a fine zoom's query. A walk started
// inside another's callback gets its own.
class PayloadBuffer {
 public:
  PayloadBuffer() : lent_(!kept().busy) {
    kept().busy |= lent_;
    get().points_of = nullptr;  // a growing index may have moved its chunk tables since
  }
  ~PayloadBuffer() { kept().busy &= !lent_; }
  PayloadBuffer(const PayloadBuffer&) = delete;
  PayloadBuffer& operator=(const PayloadBuffer&) = delete;
  ChunkBuffers& get() { return lent_ ? kept().buffers : own_; }

 private:
  struct Kept {
    ChunkBuffers buffers;
    bool busy = false;
  };
  static Kept& kept() {
    thread_local Kept k;
    return k;
  }
  bool lent_;
  ChunkBuffers own_;
};

// The chunks of f that a walk over [t0, t1] decodes: [first, end).
inline std::pair<size_t, size_t> chunks_over(const State& s, const FeedletState& f, uint64_t t0, uint64_t t1) {
  const size_t k = first_chunk_at(s, f, t0);
  return {k, chunks_starting_by(s, f, t1, k)};
}

// Calls fn for each item with its key in [t0, t1] that chunk k of feedlet f
// completes, going on from state w (the walk stops at t1).
template <class Fn>
inline void walk_chunk_in(const State& s, const FeedletState& f, size_t k, WalkState& w, ChunkBuffers& buf,
                          uint64_t t0, uint64_t t1, Fn&& fn, const WalkFrom* from, const ChunksAhead& ahead) {
  walk_feedlet_chunk(s, *s.layouts, f, k, w, buf, [](uint64_t, uint16_t) {}, [&](const Item& it) __attribute__((always_inline)) {
    if (it.key() >= t0 && it.key() <= t1) fn(it);
  }, t1, from, ahead);
}

// Calls fn for each item of feedlet f with its key in [t0, t1] that a chunk
// in [k, end) completes, in the feedlet's order, decoding each chunk once
// (from the intervals open when chunk k starts). The caller holds the lock.
template <class Fn>
void walk_chunks(const State& s, const FeedletState& f, size_t k, size_t end, uint64_t t0, uint64_t t1, Fn&& fn) {
  PayloadBuffer lease;
  ChunkBuffers& buf = lease.get();
  if (k >= end) return;
  WalkStart start = start_in(s, f, k, t0, UINT64_MAX, buf);  // the first chunk from inside it
  WalkState& w = start.state;
  for (const WalkFrom* from = start.from(); k < end; ++k, from = nullptr) {
    walk_chunk_in(s, f, k, w, buf, t0, t1, fn, from, {&f, k, end});
    if (s.chunks[f.chunks[k].chunk].last_ts > t1) break;  // the walk stopped inside this chunk
  }
}

// Every item of feedlet f with its key in [t0, t1].
template <class Fn>
void walk_items_in(const State& s, const FeedletState& f, uint64_t t0, uint64_t t1, Fn&& fn) {
  auto [k, end] = chunks_over(s, f, t0, t1);
  walk_chunks(s, f, k, end, t0, t1, fn);
}

// Calls fn for each long complete (span_streams.hpp) of feedlet f with its
// key in [t0, t1]: the span stream's items, as the indexer chose them. Walks
// whole chunks from their start, passing the resume points where the
// indexer recorded them (a tool's and a test's path: spanning() reads the
// stream instead).
template <class Fn>
void walk_long_completes(const State& s, const FeedletState& f, uint64_t t0, uint64_t t1, Fn&& fn) {
  PayloadBuffer lease;
  ChunkBuffers& buf = lease.get();
  auto [k, end] = chunks_over(s, f, t0, t1);
  for (; k < end; ++k) {
    WalkState w = state_at(f, k);
    SegmentFloor segment(s.chunks[f.chunks[k].chunk].first_ts);
    walk_feedlet_chunk(
        s, *s.layouts, f, k, w, buf, [](uint64_t, uint16_t) {},
        [&](const Item& it) {
          if (it.key() >= t0 && it.key() <= t1 && segment.is_long(it)) fn(it);
        },
        t1, nullptr, {}, [&](size_t, uint64_t ts, uint64_t, const WalkState&) { segment.resume_at(ts); });
  }
}

}  // namespace tinescope::index
