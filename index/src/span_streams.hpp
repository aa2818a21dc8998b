// Span streams (StreamKind::Span): per feedlet, its long complete intervals,
// so that spanning() finds the complete intervals running across a time t.
//
// A complete event is written at its end, so the walk up to t cannot know
// one that ends after t, and no stack holds it (begin/end pairs are on the
// stack that open_at() keeps). The window's streams are keyed by end, so such
// an interval is in no bucket of a window that ends before it does.
//
// A complete interval is *long* when it began before the segment that its end
// is in (a segment: the kResumeEvery events from a chunk's start or from one
// of its resume points), *short* otherwise. A short one that runs across t
// lies in the one segment that starts at or before t and ends after it, which
// a query walks (2 048 events at most). The long ones go to the span stream,
// whose nodes' min_start and max_end let a search descend only into the
// buckets that hold one running across t. docs/INDEX.md, "Spanning intervals".
#pragma once

#include <cstdint>
#include <vector>

#include "pyramid.hpp"

namespace tinescope::index {

struct FeedletState;

// A span stream's leaf holds about this many items where it is dense: a leaf
// of one item names it whole (name, depth, start and end, as a depth stream's
// bucket names its longest item), so spanning() walks no events for it.
// Long completes are few (about the nesting of completes a segment), so the
// stream's nodes, ~1.3 an item, cost little of the index.
constexpr uint64_t kSpanLeafItems = 1;

// The floor of the segment that a walk of one chunk (from its start) is in:
// the tick that the segment's events are all at or after. It is the chunk's
// first tick, then the tick of each resume point passed (walk_chunk's
// on_resume, called with the tick of the event before the point). The
// indexer keeps one to choose the span stream's items, and
// walk_long_completes one to read them back by walking: the same rule.
struct SegmentFloor {
  uint64_t ts;
  explicit SegmentFloor(uint64_t chunk_first_ts) : ts(chunk_first_ts) {}
  void resume_at(uint64_t point_ts) { ts = point_ts; }
  // A long complete: one that began before its end's segment.
  bool is_long(const Item& it) const { return it.complete && it.start < ts; }
};

// The item of a long complete in the span stream (its key: 0).
inline Item span_item(Item it) {
  it.kind = StreamKind::Span;
  return it;
}

// The complete interval that a span stream's node of one item names whole
// (the fold keeps its name, depth, start and end: fold_depth_item).
inline Item span_leaf_item(const Node& n) {
  Item it;
  it.kind = StreamKind::Interval, it.complete = true;
  it.name = uint32_t(n.iv.longest_name), it.depth = n.max_depth;
  it.start = n.iv.min_start, it.end = n.iv.max_end;
  return it;
}

// Adds a chunk's long completes (in key order, as span_item()s) to f's span
// stream, making it if f has none (its leaf from their density in the chunk,
// which spans ticks [first_ts, last_ts]). `nodes`: memory kept by the caller.
void add_spans(FeedletState& f, const std::vector<Item>& spans, uint64_t first_ts, uint64_t last_ts,
               PageWriter& pages, std::vector<Node>& nodes);

}  // namespace tinescope::index
