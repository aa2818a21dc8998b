// Queries: window summaries from the pyramids (or from the chunks below the
// finest stored level), items, open intervals, and event positions in a
// feedlet and in the global merged order.
#include <algorithm>
#include <bit>
#include <optional>
#include <queue>
#include <span>
#include <tuple>

#include "depth_streams.hpp"
#include "parallel_tasks.hpp"
#include "resume_points.hpp"
#include "span_streams.hpp"
#include "state.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {

namespace {

// Index of the last chunk of `f` that starts at or before t, plus one (0:
// none does; the search starts at chunk `from`). The feedlet's last event at
// or before t is in that chunk. (Not the first chunk that ends at or after
// t: events at one tick may run on into the next chunks, and they are all
// before t's end.)
size_t chunks_starting_by(const State& s, const FeedletState& f, uint64_t t, size_t from = 0) {
  return partition_index(f.chunks, from, f.chunks.size(),
                         [&](const FeedletChunk& c) { return s.chunks[c.chunk].first_ts <= t; });
}

// Index of the first chunk of `f` whose last event is at or after t.
size_t first_chunk_at(const State& s, const FeedletState& f, uint64_t t) {
  return partition_index(f.chunks, 0, f.chunks.size(),
                         [&](const FeedletChunk& c) { return s.chunks[c.chunk].last_ts < t; });
}

// Chunk k of f reads as itself: a damaged block of the tables reads as
// zeros, and a walk must never take some other chunk in its place.
bool chunk_readable(const State& s, const FeedletState& f, size_t k) {
  const uint32_t c = f.chunks[k].chunk;
  return f.chunks.readable(k) && s.chunks.readable(c) && s.chunks[c].feedlet == f.id;
}

WalkState state_at(const FeedletState& f, size_t k) {
  WalkState w;
  const FeedletChunk& c = f.chunks[k];
  for (uint64_t i = c.open_first; i < c.open_first + c.open_count && i < f.pool.size(); ++i) {
    if (!f.pool.readable(i)) continue;  // damaged: its intervals' ends are then counted, not drawn
    add_to_state(w, f.pool[i]);
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
WalkStart start_in(const State& s, const FeedletState& f, size_t k, uint64_t t, uint64_t max_event,
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
  const bool ok = walk_chunk(raw, size, h, layouts, w, event, item, no_messages, why, until, &stopped, from, on_resume);
  if (size == h.raw_size || (ok && stopped)) return ok;
  // The guess fell short: the whole chunk, passing over what was given.
  w = before;
  skip_events = events, skip_items = items;
  if (!blocks.read(s, c, buf.chunk.data(), 0, h.raw_size, why) || !(raw = s.payload(chunk, buf.payload, why))) return false;
  // (Its points are passed again, in order, before the first item not yet given.)
  return walk_chunk(raw, h.raw_size, h, layouts, w, event, item, no_messages, why, until, &stopped, from, on_resume);
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
std::pair<size_t, size_t> chunks_over(const State& s, const FeedletState& f, uint64_t t0, uint64_t t1) {
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

uint32_t shift_for(uint64_t t0, uint64_t t1, uint32_t columns) {
  uint64_t width = (t1 - t0) / std::max(columns, 1u) + 1;
  return uint32_t(std::bit_width(width)) - 1;
}

// A lane query's walk is shared out by pieces: the stretches of a chunk
// between its resume points (kResumeEvery events), each of which a walk may
// start at with the state recorded there. Shared out by whole chunks (~16 000
// events), a walk over one to three chunks (windows of 2^26-2^28 ns on
// index_bench's lanes, the slowest decoded queries) kept one core idle.
struct Piece {
  uint32_t k = 0;          // chunk in the feedlet
  uint32_t point = 0;      // where it starts: 0, the chunk's start; j, its j-th resume point
  WalkFrom from;           // (point > 0) that point
  size_t end = SIZE_MAX;   // payload offset where it ends (the next point; SIZE_MAX: the chunk's end)
  size_t chunk_end = SIZE_MAX;  // how much of the chunk's payload the walk needs (its last piece's end)
};

// The pieces of chunks [k, end) of f that a walk over [t0, t1] takes, in
// order: in each chunk from its last point before t0 (as find_resume picks)
// up to the last point at or before t1 (events after a point come after its
// tick; the walk stops at the first event after t1).
// The pieces of chunk k of f that a walk over [t0, t1] takes: [first,
// last], piece j starting at point j (0: the chunk's start). `points` gets
// the chunk's points (points[j] is point j + 1; malformed bytes, from a
// crafted index, leave those read before them).
std::pair<size_t, size_t> pieces_in(const State& s, const FeedletState& f, size_t k, uint64_t t0, uint64_t t1,
                                    ChunkBuffers& buf, std::vector<WalkFrom>& points) {
  points.clear();
  const std::span<const uint8_t> bytes = s.resume_points(f.chunks[k], buf);
  if (!bytes.empty())
    list_points(bytes.data(), bytes.data() + bytes.size(), s.chunks[f.chunks[k].chunk].first_ts, points);
  size_t first = 0;
  while (first < points.size() && points[first].ts < t0) ++first;
  size_t last = first;
  while (last < points.size() && points[last].ts <= t1) ++last;
  return {first, last};
}

void list_pieces(const State& s, const FeedletState& f, size_t k, size_t end, uint64_t t0, uint64_t t1,
                 ChunkBuffers& buf, std::vector<Piece>& out) {
  thread_local std::vector<WalkFrom> points;  // memory kept
  out.clear();
  for (; k < end; ++k) {
    const auto [first, last] = pieces_in(s, f, k, t0, t1, buf, points);
    const size_t chunk_end = last < points.size() ? points[last].offset : SIZE_MAX;
    for (size_t j = first; j <= last; ++j) {
      Piece& p = out.emplace_back();
      p.k = uint32_t(k), p.point = uint32_t(j), p.chunk_end = chunk_end;
      if (j > 0) p.from = points[j - 1];
      if (j < points.size()) p.end = points[j].offset;  // (lz4 then stops there)
    }
  }
}

// One thread's walk of pieces: the chunk it read last and how much of its
// payload it decoded, so that the pieces of a chunk read and decode it once.
class PieceWalker {
 public:
  // `ahead`: the chunks of every piece the walk may take, asked for where
  // the first it reads is not in the page cache (State::read_chunk_head).
  PieceWalker(const State& s, const FeedletState& f, ChunkBuffers& buf, const ChunksAhead& ahead)
      : s_(s), f_(f), buf_(buf), ahead_(ahead) {}
  // The walk's state where piece p starts: the chunk's open intervals, or
  // what its resume point recorded. False if that cannot be read.
  bool start(const Piece& p, WalkState& w) {
    w = state_at(f_, p.k);
    if (p.point == 0) return true;
    const std::span<const uint8_t> points = s_.resume_points(f_.chunks[p.k], buf_);
    WalkFrom at;
    return !points.empty() &&
           find_resume(points.data(), points.data() + points.size(), s_.chunks[f_.chunks[p.k].chunk].first_ts,
                       UINT64_MAX, uint64_t(p.point) * kResumeEvery, w, at) &&
           at.offset == p.from.offset;
  }
  // Walks piece p on from state w (where it starts), calling on_item for
  // each item it completes, up to the first event after `until`.
  template <class OnItem>
  void walk(const Piece& p, WalkState& w, uint64_t until, OnItem&& on_item) {
    std::string why;
    if (!chunk_readable(s_, f_, p.k)) return;
    const uint32_t c = f_.chunks[p.k].chunk;
    if (c != chunk_) {
      chunk_ = c, lo_ = hi_ = 0, blocks_ = ChunkBlocks{};
      if ((bytes_ = s_.read_chunk_head(c, buf_.chunk, &blocks_.whole, why, ahead_))) std::memcpy(&h_, bytes_, sizeof h_);
    }
    if (!bytes_) return;
    // The payload this piece needs: its own segment, which decodes on its
    // own (and only its block is read); or, where the payload is one lz4
    // block (a version-1 trace), which decodes only from its start, all that
    // the chunk's last piece needs, at once for every piece of the chunk.
    const bool segments = h_.flags & format::kChunkLz4Segments;
    const size_t from = segments && p.point ? p.from.offset : 0;
    size_t to = std::min<size_t>(segments ? p.end : p.chunk_end, h_.raw_size);
    if (from < lo_ || to > hi_) {
      if (!blocks_.read(s_, c, buf_.chunk.data(), from, to, why)) return (void)(bytes_ = nullptr);
      if (!(raw_ = s_.payload(bytes_, buf_.payload, why, &to, from))) return (void)(bytes_ = nullptr);
      // (Pieces come in order, forwards or backwards: what is decoded stays
      // one range of the payload.)
      const bool joins = from <= hi_ && to >= lo_ && hi_ > 0;
      lo_ = joins ? std::min(lo_, from) : from, hi_ = joins ? std::max(hi_, to) : to;
    }
    auto no_event = [](uint64_t, uint16_t) {};
    auto no_messages = [](const MessageEvent&) {};
    walk_chunk(raw_, std::min<size_t>(p.end, hi_), h_, *s_.layouts, w, no_event, on_item, no_messages, why,
               until, nullptr, p.point ? &p.from : nullptr);
  }

 private:
  const State& s_;
  const FeedletState& f_;
  ChunkBuffers& buf_;
  const ChunksAhead ahead_;
  uint32_t chunk_ = UINT32_MAX;
  const uint8_t* bytes_ = nullptr;
  const uint8_t* raw_ = nullptr;
  size_t lo_ = 0, hi_ = 0;  // the part of chunk_'s payload decoded
  ChunkBlocks blocks_;      // and of its blocks, read
  format::ChunkHeader h_{};
};

// The shift a stream's stored levels answer a window at, asked for buckets
// of at most 2^shift ticks (one column). Only even levels are stored: an odd
// one is made by folding pairs of the level below, which reads four times
// the nodes of the stored level above and writes twice its answer, the
// slowest lane queries there are (20 streams of 1-2 buckets a column). So
// an odd level is answered by the stored level above: buckets one to two
// columns wide, at most one a column; every bucket still knows its longest
// item exactly, which the views draw whole.
uint32_t stored_shift(const Stream& st, uint32_t shift) {
  shift = std::max(shift, st.info.leaf_shift);
  const uint32_t level = shift - st.info.leaf_shift;
  return (level & 1) && level + 1 < st.levels.size() ? shift + 1 : shift;
}

// The whole buckets of 2^shift ticks over [t0, t1], as a key range.
std::pair<uint64_t, uint64_t> bucket_range(uint64_t t0, uint64_t t1, uint32_t shift) {
  uint64_t from = (t0 >> shift) << shift;
  uint64_t to = ((t1 >> shift) + 1) << shift;
  return {from, to == 0 || to <= from ? UINT64_MAX : to - 1};
}


// A lane query answers its stored streams on the helper threads too when
// they hold about this many buckets together (below that, handing parts to
// a helper costs more than it saves).
constexpr uint64_t kSplitStoredBuckets = 4096;
// A walk over at least this many pieces (Piece: up to kResumeEvery events)
// is shared with a helper, piece by piece. Windows of ~6 000 events (3-4
// pieces) already gain: 2*10^8 events, 2^25 ns windows, p50 136-143 ->
// 115-130 us against the same build that never shares (2^28: 782-832 ->
// 514-575 us).
constexpr size_t kSplitWalkPieces = 3;
// The most node buffers a thread keeps from the answers its lane queries
// left out (query_lane says why).
constexpr size_t kSpareAnswers = 64;

// Whether all of a chunk's events lie in [t0, t1] (a walk over it takes them all).
bool chunk_inside(const ChunkRecord& c, uint64_t t0, uint64_t t1) { return c.first_ts >= t0 && c.last_ts <= t1; }

// The events of chunk k of f that a walk over [t0, t1] takes: from its last
// resume point before t0 to its first point after t1 (list_pieces).
uint64_t events_walked(const State& s, const FeedletState& f, size_t k, uint64_t t0, uint64_t t1, ChunkBuffers& buf) {
  const ChunkRecord& c = s.chunks[f.chunks[k].chunk];
  if (chunk_inside(c, t0, t1)) return c.event_count;
  thread_local std::vector<WalkFrom> points;  // memory kept
  const auto [first, last] = pieces_in(s, f, k, t0, t1, buf, points);
  const uint64_t from = first ? points[first - 1].event : 0;
  const uint64_t to = last < points.size() ? std::min<uint64_t>(points[last].event, c.event_count) : c.event_count;
  return to > from ? to - from : 0;
}

// Below a stream's finest stored level a query decodes the lane's chunks in
// the window. That is cheap when the window holds about as many events as
// pixels, but a sparse stream (few items, so a coarse finest level) in a
// busy lane would make a wide window decode millions of events: past the
// budget (events a column), the stream answers from its finest level
// instead (fewer, coarser buckets; a bucket of one item is still exact, and
// each bucket's longest item is drawn whole). kDecodeEventsPerColumn, 16:
// at 64, as it was, the slowest decoded lane queries took ~0.8 ms on
// index_bench's lanes (82 000 events); a viewer at rest and headless
// pictures ask for more (docs/INDEX.md, "Decoding costs"). The events are
// counted to the resume point at both ends (events_walked), not by whole
// chunks (~16 000 events, about the whole budget at 1 280 columns). Those
// points are read only where the answer depends on them: the chunks wholly
// inside the window are counted first, from the chunk table, and where they
// are over the budget already (a coarse view), or where the chunks it cuts
// fit whole, no points are read (they are in the index file among the node
// pages, where the warmer of an index larger than its budget may not have
// read them).
bool decode_affordable(const State& s, uint32_t feedlet, uint64_t t0, uint64_t t1, uint32_t columns,
                       uint32_t per_column) {
  const FeedletState* f = s.feedlet(feedlet);
  if (!f) return true;
  const uint64_t budget = uint64_t(per_column) * std::max(columns, 1u);
  const size_t k0 = first_chunk_at(s, *f, t0);
  uint64_t whole = 0, cut = 0;  // events of the chunks inside the window; of those it cuts
  size_t k = k0;
  for (; k < f->chunks.size() && whole <= budget; ++k) {
    const ChunkRecord& c = s.chunks[f->chunks[k].chunk];
    if (c.first_ts > t1) break;
    (chunk_inside(c, t0, t1) ? whole : cut) += c.event_count;
  }
  if (whole > budget) return false;
  if (whole + cut <= budget) return true;
  PayloadBuffer lease;
  uint64_t events = whole;
  for (size_t j = k0; j < k && events <= budget; ++j)
    if (!chunk_inside(s.chunks[f->chunks[j].chunk], t0, t1)) events += events_walked(s, *f, j, t0, t1, lease.get());
  return events <= budget;
}

}  // namespace

Buckets TraceIndex::query(int stream, uint64_t t0, uint64_t t1, uint32_t columns, uint32_t decode_per_column) const {
  if (t1 < t0) std::swap(t0, t1);
  uint32_t shift = shift_for(t0, t1, columns);
  bool over_budget = false;
  {
    std::shared_lock lock(mu_);
    const Stream* st = s_->stream(stream);
    // (Depths: stored levels only, as in a lane; spans: stored only, spanning() walks the rest.)
    const bool depth = st && (st->info.kind == StreamKind::Depth || st->info.kind == StreamKind::Span);
    over_budget = st && !depth && shift < st->info.leaf_shift &&
                  !decode_affordable(*s_, st->info.feedlet, t0, t1, columns, decode_per_column);
    if (st && (shift >= st->info.leaf_shift || over_budget || depth)) shift = stored_shift(*st, shift);
  }
  Buckets out = query_shift(stream, t0, t1, shift);
  out.over_budget = over_budget;
  return out;
}

std::vector<std::pair<int, Buckets>> TraceIndex::query_lane(uint32_t feedlet, uint64_t t0, uint64_t t1,
                                                            uint32_t columns, uint32_t decode_per_column) const {
  std::vector<std::pair<int, Buckets>> out;
  query_lane(feedlet, t0, t1, columns, out, decode_per_column);
  return out;
}

void TraceIndex::query_lane(uint32_t feedlet, uint64_t t0, uint64_t t1, uint32_t columns,
                            std::vector<std::pair<int, Buckets>>& out, uint32_t decode_per_column) const {
  if (t1 < t0) std::swap(t0, t1);
  const uint32_t shift = shift_for(t0, t1, columns);
  // Streams below their finest level, by their index in the feedlet: where
  // their answer is in out (-1: not one of them). The walk looks up every
  // item here (a hash map was 40 % of such a query).
  std::vector<int32_t> raw;
  size_t n = 0;  // answers in out, in stream id order
  // The node memory of answers that a query left out (a lane answered by
  // depth answers ~6 streams where by name it answered ~23), for the next
  // answers to take: freed, it went back to the system, and the next query
  // by name faulted it in again, ~36 pages in each of the slowest queries
  // (a viewer's process, which opens the index and only queries it). At most
  // kSpareAnswers kept on a thread.
  thread_local std::vector<std::vector<Node>> spare;
  auto next = [&](int id) -> Buckets& {
    if (out.size() == n) {
      out.emplace_back();
      if (!spare.empty()) out.back().second.nodes = std::move(spare.back()), spare.pop_back();
    }
    out[n].first = id;
    Buckets& b = out[n++].second;
    b.nodes.clear();  // keeps its memory
    b.over_budget = false;
    return b;
  };
  struct Stored {
    size_t at;  // in out
    const Stream* st;
    uint32_t shift;
  };
  std::vector<Stored> stored;
  uint64_t stored_buckets = 0;  // about how many buckets they answer
  std::shared_lock lock(mu_);
  const bool affordable = decode_affordable(*s_, feedlet, t0, t1, columns, decode_per_column);
  auto first = std::lower_bound(s_->stream_ids.begin(), s_->stream_ids.end(), std::make_pair(feedlet, 0u));
  // The lane's intervals come either by name or by depth (depth_streams.hpp).
  // By depth where the window is over the decode budget (a picture drawn
  // while the view moves; at rest, a larger budget decodes it by name), and
  // where no name needs decoding and no depth's leaf is wider than a column.
  // A lane of 20 names on 3 depths then answers 3 streams where it answered 20.
  uint32_t name_leaf = 0, depth_leaf = 0;  // the coarsest leaves
  bool depths = false;
  for (auto it = first; it != s_->stream_ids.end() && it->first == feedlet; ++it) {
    const StreamInfo& info = s_->stream(int(it - s_->stream_ids.begin()))->info;
    if (info.kind == StreamKind::Interval) name_leaf = std::max(name_leaf, info.leaf_shift);
    if (info.kind == StreamKind::Depth) depth_leaf = std::max(depth_leaf, info.leaf_shift), depths = true;
  }
  const bool names_coarse = shift < name_leaf;  // some name's leaf is wider than a column
  const bool by_depth = depths && (!affordable || (!names_coarse && depth_leaf <= shift));
  for (auto it = first; it != s_->stream_ids.end() && it->first == feedlet; ++it) {
    const int id = int(it - s_->stream_ids.begin());
    const Stream& st = *s_->stream(id);
    const StreamKind kind = st.info.kind;
    if (kind == (by_depth ? StreamKind::Interval : StreamKind::Depth)) continue;
    if (kind == StreamKind::Span) continue;  // (its intervals are in the names' and depths' streams too)
    Buckets& b = next(id);
    if (shift >= st.info.leaf_shift || !affordable || kind == StreamKind::Depth) {
      const uint32_t at_shift = stored_shift(st, shift);
      stored.push_back({n - 1, &st, at_shift});
      stored_buckets += std::min(((t1 - t0) >> at_shift) + 1, st.info.items);
      continue;
    }
    if (raw.size() <= it->second) raw.resize(it->second + 1, -1);
    raw[it->second] = int32_t(n - 1);
    b.shift = shift, b.from_events = true;
  }
  for (size_t i = n; i < out.size() && spare.size() < kSpareAnswers; ++i)
    if (out[i].second.nodes.capacity()) spare.push_back(std::move(out[i].second.nodes));
  out.resize(n);
  // Where each decoded stream's items go, by its index in the feedlet.
  std::vector<std::vector<Node>*> sink(raw.size());
  for (size_t k = 0; k < raw.size(); ++k) sink[k] = raw[k] < 0 ? nullptr : &out[size_t(raw[k])].second.nodes;

  // The walk of the chunks for every stream that needs the events, piece
  // by piece (Piece). Its pieces are taken one at a time from both ends:
  // from the front by a walk that carries its state from piece to piece
  // and folds into the answer, from the back by one that starts each piece
  // from the state recorded where it starts and folds it into buckets of
  // its own, joined on after. Alone (no helper free, or one that comes
  // late) the front walk takes every piece, so a slow or busy core costs
  // nothing; a split fixed in advance waited for this VM's slower core
  // half the time.
  const FeedletState* f = raw.empty() ? nullptr : s_->feedlet(feedlet);
  const auto window = bucket_range(t0, t1, shift);
  const uint64_t from = window.first, to = window.second;  // (lambdas capture these: not a structured binding, for clang 14)
  thread_local std::vector<Piece> kept_pieces;  // memory kept
  std::vector<Piece>& pieces = kept_pieces;
  pieces.clear();
  if (f) {
    const auto [k0, k_end] = chunks_over(*s_, *f, from, to);
    PayloadBuffer lease;  // (given back before the walks take theirs)
    list_pieces(*s_, *f, k0, k_end, from, to, lease.get(), pieces);
  }
  const size_t n_pieces = pieces.size();
  const ChunksAhead ahead = n_pieces ? ChunksAhead{f, pieces.front().k, pieces.back().k + size_t(1)}
                                            : ChunksAhead{};
  const bool split = n_pieces >= kSplitWalkPieces && tasks_->helpers() > 0;
  std::atomic<uint64_t> ends{n_pieces};  // front << 32 | back: pieces not yet taken
  auto take = [&](bool front) -> size_t {
    for (uint64_t e = ends.load();;) {
      const uint64_t a = e >> 32, b = e & 0xffffffff;
      if (a >= b) return SIZE_MAX;
      const uint64_t next = front ? (a + 1) << 32 | b : a << 32 | (b - 1);
      if (ends.compare_exchange_weak(e, next)) return size_t(front ? a : b - 1);
    }
  };
  thread_local std::vector<std::vector<std::vector<Node>>> kept_side;  // [piece][stream]: memory kept
  std::vector<std::vector<std::vector<Node>>>& side = kept_side;
  if (split && side.size() < n_pieces) side.resize(n_pieces);
  // A piece's items are gathered per stream, then folded stream by stream
  // (as the indexer adds them): ~8 % less time for a lane decoded at 64
  // events a column (2*10^8 events, p50 710 -> 655 us).
  auto walk_piece_items = [&](size_t i, WalkState& w, PieceWalker& walker, auto&& into) {
    thread_local std::vector<ItemRun> runs;  // [stream index in the feedlet]: memory kept
    if (runs.size() < sink.size()) runs.resize(sink.size());
    for (size_t slot = 0; slot < sink.size(); ++slot) runs[slot].clear();
    walker.walk(pieces[i], w, to, [&](const Item& it) __attribute__((always_inline)) {
      if (it.key() < from || it.key() > to) return;
      const size_t slot = size_t(f->find(stream_key(it)));
      if (slot < sink.size() && sink[slot]) runs[slot].add(it);
    });
    for (size_t slot = 0; slot < sink.size(); ++slot) {
      const size_t n = runs[slot].size();
      if (n == 0) continue;
      // Room for the most nodes the run can make (a node an item, and one a
      // bucket it spans), new memory mapped in one call (prefault.hpp).
      const Item* run = runs[slot].data();
      std::vector<Node>& answer = into(slot);
      const uint64_t buckets = (run[n - 1].key() >> shift) - (run[0].key() >> shift) + 1;
      reserve_prefaulted(answer, answer.size() + size_t(std::min<uint64_t>(n, buckets)));
      fold_items(answer, f->streams[slot].info.kind, shift, run, n);
    }
    trim_runs(runs, kResumeEvery);
  };
  auto walk_front = [&] {
    PayloadBuffer lease;
    PieceWalker walker(*s_, *f, lease.get(), ahead);
    WalkState w;
    bool started = false;
    size_t alone = 0;  // without a helper: every piece in order
    for (size_t i; (i = split ? take(true) : alone < n_pieces ? alone++ : SIZE_MAX) != SIZE_MAX;) {
      if (!started && !(started = walker.start(pieces[i], w))) continue;  // (unreadable: a crafted index)
      walk_piece_items(i, w, walker, [&](size_t slot) -> std::vector<Node>& { return *sink[slot]; });
    }
  };
  auto walk_back = [&] {
    PayloadBuffer lease;
    PieceWalker walker(*s_, *f, lease.get(), ahead);
    WalkState w;
    for (size_t i; (i = take(false)) != SIZE_MAX;) {
      std::vector<std::vector<Node>>& mine = side[i];
      if (mine.size() < sink.size()) mine.resize(sink.size());
      for (auto& v : mine) v.clear();
      if (walker.start(pieces[i], w))
        walk_piece_items(i, w, walker, [&](size_t slot) -> std::vector<Node>& { return mine[slot]; });
    }
  };

  // The parts, largest first: the walk (from the front, and from the back),
  // then each stored stream (into its own answer).
  const size_t walks = n_pieces ? (split ? 2 : 1) : 0;  // (a feedlet may end before the window)
  auto part = [&](size_t i) {
    if (i < walks) {
      i == 0 ? walk_front() : walk_back();
      return;
    }
    const Stored& p = stored[i - walks];
    stored_answer(*p.st, t0, t1, p.shift, out[p.at].second);
    // (Below its finest level, it is stored only because the window is over
    // the budget; a depth, because its names would not all be decoded.)
    out[p.at].second.over_budget =
        p.st->info.kind == StreamKind::Depth ? !affordable && (names_coarse || shift < p.st->info.leaf_shift)
                                              : shift < p.st->info.leaf_shift;
  };
  // Pages not yet read (an index just opened, or larger than the warmer's
  // budget): every stored stream's asked for together, before any is read.
  if (!pages_all_in())
    for (const Stored& p : stored) s_->ask_for_pages(*p.st, t0, t1, p.shift);
  const size_t parts = walks + stored.size();
  if (split || stored_buckets >= kSplitStoredBuckets) {
    tasks_->run(parts, part);
  } else {
    for (size_t i = 0; i < parts; ++i) part(i);
  }
  if (!split) return;
  // The pieces walked from the back, in order after the front's; a bucket
  // cut by a piece boundary is folded whole.
  for (size_t i = size_t(ends.load() >> 32); i < n_pieces; ++i) {
    for (size_t slot = 0; slot < sink.size(); ++slot) {
      const std::vector<Node>& b = side[i][slot];
      if (!sink[slot] || b.empty()) continue;
      std::vector<Node>& a = *sink[slot];
      size_t j = 0;
      if (!a.empty() && a.back().bucket == b[0].bucket) merge(f->streams[slot].info.kind, a.back(), b[j++]);
      reserve_prefaulted(a, a.size() + (b.size() - j));  // (new memory mapped in one call, as the walks' own)
      a.insert(a.end(), b.begin() + ptrdiff_t(j), b.end());
    }
  }
}

void TraceIndex::stored_answer(const Stream& st, uint64_t t0, uint64_t t1, uint32_t shift, Buckets& out) const {
  out.nodes.clear();
  out.shift = 0, out.from_events = false, out.over_budget = false;
  if (st.levels.empty()) return;
  query_levels(st, t0, t1, shift,
               [&](uint32_t level, size_t page, Node* nodes) { return s_->read_page(st, level, page, nodes); },
               out);
}

Buckets TraceIndex::query_shift(int id, uint64_t t0, uint64_t t1, uint32_t shift) const {
  Buckets out;
  query_shift(id, t0, t1, shift, out);
  return out;
}

void TraceIndex::query_shift(int id, uint64_t t0, uint64_t t1, uint32_t shift, Buckets& out) const {
  out.nodes.clear();
  out.shift = 0, out.from_events = false, out.over_budget = false;
  if (t1 < t0) std::swap(t0, t1);
  std::vector<Item> raw;
  bool depth = false;
  {
    std::shared_lock lock(mu_);
    const Stream* st = s_->stream(id);
    if (!st) return;
    if (shift >= st->info.leaf_shift && !st->levels.empty()) {
      if (!pages_all_in()) s_->ask_for_pages(*st, t0, t1, shift);
      return stored_answer(*st, t0, t1, shift, out);
    }
    // (A depth's buckets, and the span stream's, name their longest item.)
    depth = st->info.kind == StreamKind::Depth || st->info.kind == StreamKind::Span;
  }
  // Below the finest stored level: from the events of the whole buckets.
  out.shift = shift;
  out.from_events = true;
  auto [from, to] = bucket_range(t0, t1, shift);
  raw = items(id, from, to);
  for (const Item& it : raw) depth ? fold_depth_item(out.nodes, it, shift) : fold_item(out.nodes, it, shift);
}

void TraceIndex::walk_items(uint32_t feedlet, uint64_t t0, uint64_t t1,
                            const std::function<void(const Item&)>& fn) const {
  std::shared_lock lock(mu_);
  if (const FeedletState* f = s_->feedlet(feedlet)) walk_items_in(*s_, *f, t0, t1, fn);
}

std::vector<Item> TraceIndex::items(int id, uint64_t t0, uint64_t t1) const {
  std::vector<Item> out;
  uint32_t feedlet;
  uint64_t key;
  {
    std::shared_lock lock(mu_);
    const Stream* st = s_->stream(id);
    if (!st) return out;
    feedlet = st->info.feedlet;
    key = stream_key(st->info.kind, st->info.key);
  }
  if (key >> 32 == uint64_t(StreamKind::Span)) {
    std::shared_lock lock(mu_);
    if (const FeedletState* f = s_->feedlet(feedlet))
      walk_long_completes(*s_, *f, t0, t1, [&](const Item& it) { out.push_back(span_item(it)); });
    return out;
  }
  const bool depth = key >> 32 == uint64_t(StreamKind::Depth);  // a depth's intervals, of every name
  walk_items(feedlet, t0, t1, [&](const Item& it) {
    if (depth ? it.kind == StreamKind::Interval && depth_stream_key(it.depth) == uint32_t(key) : stream_key(it) == key)
      out.push_back(it);
  });
  return out;
}

namespace {

WalkState final_state(const FeedletState& f) {
  WalkState w;
  for (const OpenInterval& o : f.final_open) add_to_state(w, o);
  return w;
}

// The parts of what runs across a time that a caller asks for.
enum AcrossPart : unsigned { kOpenPart = 1, kJobsPart = 2, kSpansPart = 4, kAllParts = 7 };

// The next resume point's tick after where a walk of chunk k starts: the
// end of the segment that holds t, so of the short complete intervals that
// run across it (span_streams.hpp). UINT64_MAX where the chunk has none (or
// they cannot be read): the walk then takes the chunk to its end, more than
// the segment, never less.
uint64_t segment_end(const State& s, const FeedletState& f, size_t k, const WalkStart& start, ChunkBuffers& buf) {
  thread_local std::vector<WalkFrom> points;  // memory kept
  points.clear();
  const std::span<const uint8_t> packed = s.resume_points(f.chunks[k], buf);
  if (packed.empty() ||
      !list_points(packed.data(), packed.data() + packed.size(), s.chunks[f.chunks[k].chunk].first_ts, points))
    return UINT64_MAX;
  const uint64_t from = start.inside ? start.point.event : 0;
  for (const WalkFrom& p : points)
    if (p.event > from) return p.ts;
  return UINT64_MAX;
}

// The long complete intervals across t: from the span stream's buckets that
// hold one. A leaf of one item names it; a leaf of more is walked over its
// time after t (neighbouring leaves in one walk).
template <class Take>
void long_spans(const State& s, const FeedletState& f, uint64_t t, Take&& take) {
  const int span = f.find(stream_key(StreamKind::Span, 0));
  if (span < 0) return;
  const Stream& st = f.streams[size_t(span)];
  std::vector<std::pair<uint64_t, uint64_t>> walks;  // key ranges
  stab_levels(st, t, [&](uint32_t level, size_t page, Node* nodes) { return s.read_page(st, level, page, nodes); },
              [&](const Node& n) {
                if (n.count == 1) return take(span_leaf_item(n));
                const uint32_t shift = st.info.leaf_shift;
                const uint64_t lo = std::max(n.bucket << shift, t + 1);
                const uint64_t hi =
                    shift + std::bit_width(n.bucket) >= 64 ? UINT64_MAX : ((n.bucket + 1) << shift) - 1;
                if (!walks.empty() && walks.back().second + 1 >= lo) walks.back().second = hi;
                else walks.emplace_back(lo, hi);
              });
  for (const auto& [lo, hi] : walks) walk_items_in(s, f, lo, hi, take);
}

// What runs across t in f (the parts asked, of those f records), with one
// walk of the chunk that holds t: from the resume point before t to t for
// the walk's state there (open intervals, running jobs), on to the end of
// t's segment where complete intervals are asked for. Where t falls between
// chunks, the state is the next chunk's snapshot and no walk is needed.
RunningAcross running_across_in(const State& s, const FeedletState& f, uint64_t t, unsigned parts) {
  RunningAcross out;
  // A feedlet that never begins an interval (a scheduler's, an import's
  // complete events) has no stack, and so on: no walk for what it lacks.
  if (f.type_counts[format::kIntervalBegin] + f.type_counts[format::kFuncEnter] == 0) parts &= ~unsigned(kOpenPart);
  if (f.type_counts[format::kJobStart] + f.type_counts[format::kJobResume] == 0) parts &= ~unsigned(kJobsPart);
  if (f.type_counts[format::kIntervalComplete] == 0) parts &= ~unsigned(kSpansPart);
  if (parts == 0) return out;
  auto take_state = [&](WalkState&& w) {
    if (parts & kOpenPart) out.open = std::move(w.stack);
    if (parts & kJobsPart) out.jobs = std::move(w.running);
  };
  auto take_span = [&](const Item& it) {
    if (it.complete && it.start <= t && t < it.end) out.spans.push_back(it);
  };
  const size_t after = chunks_starting_by(s, f, t);
  if (after == 0) {  // before the first chunk
    take_state(f.chunks.empty() ? final_state(f) : state_at(f, 0));
  } else if (s.chunks[f.chunks[after - 1].chunk].last_ts <= t) {  // after its events: the next one's snapshot
    take_state(after == f.chunks.size() ? final_state(f) : state_at(f, after));
  } else {
    const size_t k = after - 1;
    PayloadBuffer lease;
    ChunkBuffers& buf = lease.get();
    // From the last resume point at or before t (one stands after events
    // before it only), up to t, or on to the segment's end.
    WalkStart start = start_in(s, f, k, t + 1, UINT64_MAX, buf);
    const uint64_t until = parts & kSpansPart ? segment_end(s, f, k, start, buf) : t;
    // The state at t is the walk's before its first event after t (or at
    // its end where it has none): on_event sees each event before it applies.
    WalkState& w = start.state;
    std::optional<WalkState> at_t;
    walk_feedlet_chunk(
        s, *s.layouts, f, k, w, buf,
        [&](uint64_t ts, uint16_t) {
          if (ts > t && !at_t && (parts & (kOpenPart | kJobsPart))) at_t = w;
        },
        take_span, until, start.from());
    take_state(at_t ? std::move(*at_t) : std::move(w));
  }
  std::sort(out.jobs.begin(), out.jobs.end(), [](const RunningJob& a, const RunningJob& b) { return a.cpu < b.cpu; });
  if (parts & kSpansPart) {
    long_spans(s, f, t, take_span);
    auto order = [](const Item& a) { return std::tie(a.start, a.end, a.depth, a.name); };
    std::sort(out.spans.begin(), out.spans.end(), [&](const Item& a, const Item& b) { return order(a) < order(b); });
    out.spans.erase(std::unique(out.spans.begin(), out.spans.end(),
                                [&](const Item& a, const Item& b) { return order(a) == order(b); }),
                    out.spans.end());
  }
  return out;
}

}  // namespace

RunningAcross TraceIndex::running_across(uint32_t feedlet, uint64_t t) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  return f ? running_across_in(*s_, *f, t, kAllParts) : RunningAcross{};
}

std::vector<OpenInterval> TraceIndex::open_at(uint32_t feedlet, uint64_t t) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  return f ? running_across_in(*s_, *f, t, kOpenPart).open : std::vector<OpenInterval>{};
}

std::vector<RunningJob> TraceIndex::running_at(uint32_t feedlet, uint64_t t) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  return f ? running_across_in(*s_, *f, t, kJobsPart).jobs : std::vector<RunningJob>{};
}

std::vector<Item> TraceIndex::spanning(uint32_t feedlet, uint64_t t) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  return f ? running_across_in(*s_, *f, t, kSpansPart).spans : std::vector<Item>{};
}

std::vector<Flow> TraceIndex::flows(uint64_t t0, uint64_t t1, size_t limit) const {
  std::shared_lock lock(mu_);
  std::vector<Flow> out;
  if (limit < SIZE_MAX) ++limit;  // one more than asked tells the caller there are more
  auto in = [&](const Flow& f) {
    return ((f.flags & kFlowSent) && f.send_ts >= t0 && f.send_ts <= t1) ||
           ((f.flags & kFlowReceived) && f.recv_ts >= t0 && f.recv_ts <= t1);
  };
  if (!s_->flows) {
    // The index file's blocks, in order: only those whose times meet the window.
    auto [from, to] = s_->flow_index.range(t0, t1);
    std::vector<Flow> block;
    for (size_t i = from; i < to && out.size() < limit; ++i) {
      const FlowBlock& b = s_->flow_blocks[i];
      if (b.last < t0 || b.first > t1) continue;
      block.clear();
      s_->read_flows(b, block);  // a damaged block is counted and left out
      for (const Flow& f : block)
        if (in(f) && out.size() < limit) out.push_back(f);
    }
    return out;
  }
  // While indexing (a growing trace): a scan of the builder's table, which
  // keeps flows in arrival order; what is returned is sorted here.
  for (const Flow& f : std::span<const Flow>(s_->flows, s_->flow_count)) {
    if (in(f)) out.push_back(f);
    if (out.size() >= limit) break;
  }
  std::stable_sort(out.begin(), out.end(), [](const Flow& a, const Flow& b) { return a.first_half() < b.first_half(); });
  return out;
}

std::vector<FeedletChunk> TraceIndex::feedlet_chunks(uint32_t feedlet) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  return f ? std::vector<FeedletChunk>(f->chunks.begin(), f->chunks.end()) : std::vector<FeedletChunk>{};
}

namespace {

// The (ts, type) of the events of chunk k of a feedlet from its last resume
// point at or before event `wanted` (and before time `t`); *first is the
// first one's index in the chunk.
std::vector<std::pair<uint64_t, uint16_t>> chunk_events(const State& s, const Layouts& layouts,
                                                        const FeedletState& f, size_t k, ChunkBuffers& buf,
                                                        uint64_t* first = nullptr, uint64_t wanted = 0,
                                                        uint64_t t = UINT64_MAX) {
  std::vector<std::pair<uint64_t, uint16_t>> ev;
  WalkStart start = start_in(s, f, k, t, wanted, buf);
  if (first) *first = start.inside ? start.point.event : 0;
  walk_feedlet_chunk(s, layouts, f, k, start.state, buf, [&](uint64_t ts, uint16_t type) { ev.emplace_back(ts, type); },
                     [](const Item&) {}, UINT64_MAX, start.from());
  return ev;
}

size_t chunk_of_position(const FeedletState& f, uint64_t k) {
  return partition_index(f.chunks, 0, f.chunks.size(), [&](const FeedletChunk& c) { return c.first_event <= k; }) - 1;
}

}  // namespace

bool TraceIndex::feedlet_event(uint32_t feedlet, uint64_t k, EventRef& out) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  if (!f || k >= f->events || f->chunks.empty()) return false;
  size_t c = chunk_of_position(*f, k);
  const Layouts& layouts = *s_->layouts;
  PayloadBuffer lease;
  ChunkBuffers& buf = lease.get();
  uint64_t i = k - f->chunks[c].first_event, first = 0;
  auto ev = chunk_events(*s_, layouts, *f, c, buf, &first, i);
  i -= first;
  if (i >= ev.size()) return false;
  out = EventRef{feedlet, k, ev[i].first, ev[i].second};
  return true;
}

uint64_t TraceIndex::feedlet_position_at(uint32_t feedlet, uint64_t t) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  if (!f) return 0;
  size_t k = first_chunk_at(*s_, *f, t);
  if (k == f->chunks.size()) return f->events;
  const Layouts& layouts = *s_->layouts;
  PayloadBuffer lease;
  ChunkBuffers& buf = lease.get();
  uint64_t first = 0;
  auto ev = chunk_events(*s_, layouts, *f, k, buf, &first, UINT64_MAX, t);
  auto it = std::lower_bound(ev.begin(), ev.end(), t, [](const auto& e, uint64_t v) { return e.first < v; });
  return f->chunks[k].first_event + first + uint64_t(it - ev.begin());
}

bool TraceIndex::global_event(uint64_t k, EventRef& out) const {
  std::shared_lock lock(mu_);
  const State& s = *s_;
  const size_t nf = s.grid_feedlets.size();
  // The last checkpoint at or before k; none: start at the beginning.
  const size_t cp = partition_index(s.grid_before, 0, s.grid_before.size(), [&](uint64_t before) { return before <= k; });
  uint64_t done = 0;
  std::vector<uint64_t> start(nf, 0);
  bool from_checkpoint = cp > 0 && s.grid_before.readable(cp - 1);  // else (damaged) from the start
  for (size_t c = 0; from_checkpoint && c < nf; ++c) from_checkpoint = s.grid_positions.readable((cp - 1) * nf + c);
  if (from_checkpoint) {
    const size_t j = cp - 1;
    done = s.grid_before[j];
    for (size_t c = 0; c < nf; ++c) start[c] = s.grid_positions[j * nf + c];
  }
  struct Cursor {
    const FeedletState* f;
    size_t chunk;
    uint64_t pos;  // in the feedlet
    std::vector<std::pair<uint64_t, uint16_t>> ev;
    size_t i;
  };
  const Layouts& layouts = *s_->layouts;
  PayloadBuffer lease;
  ChunkBuffers& buf = lease.get();
  std::vector<Cursor> cur;
  for (size_t c = 0; c < nf; ++c) {
    const FeedletState& f = *s.feedlet(s.grid_feedlets[c]);
    if (start[c] >= f.events) continue;
    size_t ck = chunk_of_position(f, start[c]);
    uint64_t first = 0;
    const uint64_t at = start[c] - f.chunks[ck].first_event;
    auto ev = chunk_events(s, layouts, f, ck, buf, &first, at);
    cur.push_back(Cursor{&f, ck, start[c], std::move(ev), size_t(at - first)});
  }
  // Merge: smallest (ts, feedlet, position) first.
  auto later = [&](size_t a, size_t b) {
    const Cursor &x = cur[a], &y = cur[b];
    uint64_t tx = x.ev[x.i].first, ty = y.ev[y.i].first;
    if (tx != ty) return tx > ty;
    return x.f->id > y.f->id;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heap(later);
  for (size_t c = 0; c < cur.size(); ++c)
    if (cur[c].i < cur[c].ev.size()) heap.push(c);
  while (!heap.empty()) {
    size_t c = heap.top();
    Cursor& x = cur[c];
    if (done == k) {
      out = EventRef{x.f->id, x.pos, x.ev[x.i].first, x.ev[x.i].second};
      return true;
    }
    heap.pop();
    ++done, ++x.pos, ++x.i;
    if (x.i == x.ev.size()) {
      if (++x.chunk >= x.f->chunks.size()) continue;
      x.ev = chunk_events(s, layouts, *x.f, x.chunk, buf);
      x.i = 0;
      if (x.ev.empty()) continue;
    }
    heap.push(c);
  }
  return false;
}

}  // namespace tinescope::index
