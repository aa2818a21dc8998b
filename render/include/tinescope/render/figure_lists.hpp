// The chart figures as ImGui draw lists, for the viewer (its analysis
// panel) and the six-figure benchmark: the same geometry as the cairo
// charts of chart.hpp, drawn on the viewer's dark background.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "tinescope/render/chart.hpp"
#include "tinescope/render/figure.hpp"
#include "tinescope/render/stream_picture.hpp"

struct ImDrawList;

namespace tinescope::render {

// A stream figure in `plot`: intervals as bars shaded by the share of their
// column covered, samples as each column's min..max joined column to column.
// Samples are scaled to [lo, hi] where given (several series on one axis), else to p's own range.
void stream_list(ImDrawList* dl, Rect plot, const StreamPicture& p, uint32_t rgba, double lo = NAN, double hi = NAN);
// Histogram bars, counts on a square-root scale (one needle still shows).
void histogram_list(ImDrawList* dl, Rect plot, const std::vector<uint64_t>& counts, uint32_t rgba);
// A pie in the left of `r`, its legend (share, time, label) on the right.
void pie_list(ImDrawList* dl, Rect r, const std::vector<PieSlice>& slices);

}  // namespace tinescope::render
