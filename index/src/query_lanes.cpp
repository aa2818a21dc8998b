// Window queries: a stream's or a whole lane's summary of a window at a
// number of columns, from the pyramids' stored levels, or below the finest
// stored level from the chunks (shared out in pieces between threads); and
// the items of a window.
#include <algorithm>
#include <bit>
#include <optional>
#include <queue>
#include <span>
#include <tuple>

#include "depth_streams.hpp"
#include "parallel_tasks.hpp"
#include "query_walk.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {

namespace {

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
               until, nullptr, p.point ? &p.from : nullptr, NoResume{}, chunk_after_break(s_, f_, p.k));
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
// pictures ask for more (docs/INDEX.md, "Queries"; the history in docs/PERFORMANCE.md, index.query_decoded_us). The events are
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
                            std::vector<std::pair<int, Buckets>>& out, uint32_t decode_per_column,
                            const std::vector<uint8_t>* hidden) const {
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
    b.has_before = false;
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
  bool depths = false, names_hidden = false;
  auto is_hidden = [&](const StreamInfo& info) {
    return hidden && (info.kind == StreamKind::Interval || info.kind == StreamKind::Instant) &&
           info.key < hidden->size() && (*hidden)[info.key];
  };
  for (auto it = first; it != s_->stream_ids.end() && it->first == feedlet; ++it) {
    const StreamInfo& info = s_->stream(int(it - s_->stream_ids.begin()))->info;
    if (info.kind == StreamKind::Interval) name_leaf = std::max(name_leaf, info.leaf_shift);
    if (info.kind == StreamKind::Depth) depth_leaf = std::max(depth_leaf, info.leaf_shift), depths = true;
    names_hidden |= info.kind == StreamKind::Interval && is_hidden(info);
  }
  const bool names_coarse = shift < name_leaf;  // some name's leaf is wider than a column
  const bool by_depth = depths && !names_hidden && (!affordable || (!names_coarse && depth_leaf <= shift));
  for (auto it = first; it != s_->stream_ids.end() && it->first == feedlet; ++it) {
    const int id = int(it - s_->stream_ids.begin());
    const Stream& st = *s_->stream(id);
    const StreamKind kind = st.info.kind;
    if (kind == (by_depth ? StreamKind::Interval : StreamKind::Depth)) continue;
    if (kind == StreamKind::Span) continue;  // (its intervals are in the names' and depths' streams too)
    if (kind == StreamKind::Task) continue;  // (its segments are in the CPUs' streams too)
    if (kind == StreamKind::Hold) continue;  // (a lock's row draws it)
    if (is_hidden(st.info)) continue;
    Buckets& b = next(id);
    // By name, a stream's intervals are decoded wherever the window is
    // affordable, even at zooms its stored leaves answer: a stored node of
    // several items knows only their deepest depth, and one name at two
    // depths (a recursion) was drawn whole in the deeper row.
    const bool stored_leaves_do = shift >= st.info.leaf_shift && kind != StreamKind::Interval;
    if (stored_leaves_do || !affordable || kind == StreamKind::Depth) {
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
      if (it.key() < from) [[unlikely]] {
        // (Only the first piece starts before the window: a counter's last
        // sample there is the value it holds into it. One thread writes it.)
        if (it.kind != StreamKind::Counter || i != 0) return;
        const size_t slot = size_t(f->find(stream_key(it)));
        if (slot < sink.size() && sink[slot]) {
          Buckets& b = out[size_t(raw[slot])].second;
          b.has_before = true, b.before = it;
        }
        return;
      }
      if (it.key() > to) return;
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
      const StreamKind kind = f->streams[slot].info.kind;
      reserve_prefaulted(answer, answer.size() + size_t(std::min<uint64_t>(n, buckets)));
      if (kind == StreamKind::Interval) fold_intervals_by_depth(answer, shift, run, n);
      else fold_items(answer, kind, shift, run, n);
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
      const StreamKind kind = f->streams[slot].info.kind;
      size_t j = 0;
      // (Intervals: a node a depth of the bucket cut by the boundary.)
      if (kind != StreamKind::Interval) {
        if (!a.empty() && a.back().bucket == b[0].bucket) merge(kind, a.back(), b[j++]);
      } else {
        for (; j < b.size() && !a.empty() && a.back().bucket == b[j].bucket; ++j) {
          size_t k = a.size();
          while (k > 0 && a[k - 1].bucket == b[j].bucket && a[k - 1].max_depth != b[j].max_depth) --k;
          if (k > 0 && a[k - 1].bucket == b[j].bucket) merge(kind, a[k - 1], b[j]);
          else a.push_back(b[j]);
        }
      }
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

}  // namespace tinescope::index
