// Activity markers (the multithreaded-trace paper, §4): where one function
// is active in every thread over a window, at the resolution of a picture's
// columns, so the viewer can mark each place while the user points at the
// function (in a timeline, the statistics table, search or the thread list).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tinescope/render/figure.hpp"
#include "tinescope/render/scene.hpp"

namespace tinescope::render {

// The spans of [t0, t1] where an interval named `name` runs in each of
// `lanes` (every lane if empty), in lane order then time, adjacent ones
// merged. From each lane's stream of that name at about `columns` buckets
// over the window (TraceIndex::query with that decode budget, the viewer's
// while the view moves by default: the pyramid, or the events where the
// window holds few enough of the lane's events a column): a bucket marks from
// the earliest start to the latest end of the items that end in it, clipped
// to the bucket, and its longest item whole; the intervals running on past
// t1 come from running_across. So a span is never farther from where the
// function ran than a bucket (at most a column; where the lane holds
// more events than the budget, its finest stored level's), and every
// interval ending in the window, or running across its end, is under one.
std::vector<ActiveSpan> activity_spans(const Scene& scene, const std::vector<uint32_t>& lanes, std::string_view name,
                                       int64_t t0, int64_t t1, uint32_t columns,
                                       uint32_t decode_per_column = index::kDecodeEventsPerColumn);

}  // namespace tinescope::render
