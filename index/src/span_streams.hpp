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

// The segment floor: the tick that a segment's events are all at or after
// (the chunk's first tick for its first segment, else the tick of the event
// before the segment: where its resume point stands).
inline bool long_complete(const Item& it, uint64_t segment_floor) {
  return it.complete && it.start < segment_floor;
}

// The item of a long complete in the span stream (its key: 0).
inline Item span_item(Item it) {
  it.kind = StreamKind::Span;
  return it;
}

// Adds a chunk's long completes (in key order, as span_item()s) to f's span
// stream, making it if f has none (its leaf from their density in the chunk,
// which spans ticks [first_ts, last_ts]). `nodes`: memory kept by the caller.
void add_spans(FeedletState& f, const std::vector<Item>& spans, uint64_t first_ts, uint64_t last_ts,
               PageWriter& pages, std::vector<Node>& nodes);

}  // namespace tinescope::index
