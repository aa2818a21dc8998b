// Resume points inside a chunk: the walk's state every kResumeEvery events
// (chunk_walk.hpp), so a query that starts inside a chunk walks at most that
// many events before its window. A chunk's points are packed one after the
// other, each as varints relative to the one before, and written to the
// index file with the node pages (FeedletChunk::resume_at, resume_bytes,
// resume_check; docs/INDEX.md, "Resume points"):
//
//   varint  raw payload offset - previous point's (0 for the first)
//   varint  ts - previous point's ts (the chunk's first tick for the first)
//   varint  zigzag(prev_delta - previous point's prev_delta (0 for the first))
//   varint  open intervals; each: varint name, varint zigzag(ts - start)
//           (an interval's depth is its place on the stack)
//   varint  running jobs; each: varint cpu, varint task, varint zigzag(ts - start)
//
// Point j (from 1) stands before the chunk's event j * kResumeEvery.
#pragma once

#include <cstdint>
#include <vector>

#include "chunk_walk.hpp"

namespace tinescope::index {

// Packs one chunk's points as the walk reaches them.
class ResumeWriter {
 public:
  explicit ResumeWriter(uint64_t first_ts) : ts_(first_ts) {}
  void add(size_t offset, uint64_t ts, uint64_t prev_delta, const WalkState& st, std::vector<uint8_t>& out);

 private:
  uint64_t offset_ = 0, ts_ = 0, prev_delta_ = 0;
};

// The last point of a chunk (its packed points are [p, end)) that a walk
// may start from: its ts before `before_ts` and its event at most
// `max_event`. Fills `st` and `from` and returns true; false when no point
// qualifies or the bytes are malformed (a damaged index): the walk then
// starts at the chunk's start, as it would without points.
bool find_resume(const uint8_t* p, const uint8_t* end, uint64_t first_ts, uint64_t before_ts, uint64_t max_event,
                 WalkState& st, WalkFrom& from);

// Where each of a chunk's points stands (offset, tick, DeltaU64 base, event),
// without the state it holds; appended to `out`. False if malformed (a
// damaged index): what was read before the damage is kept.
bool list_points(const uint8_t* p, const uint8_t* end, uint64_t first_ts, std::vector<WalkFrom>& out);

// How much of the chunk's payload a walk that stops at `until` reads: up to
// the first point whose tick is after `until` (the event before that point
// is, so the walk stops before the point). False when no point is.
bool payload_until(const uint8_t* p, const uint8_t* end, uint64_t first_ts, uint64_t until, size_t& bytes);

}  // namespace tinescope::index
