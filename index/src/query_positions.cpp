// Positions: a feedlet's chunks, its k-th event and the position of its
// first event at a time, and the k-th event of the whole trace in global
// merged order (from the nearest checkpoint).
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
