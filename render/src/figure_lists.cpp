#include "tinescope/render/figure_lists.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tinescope::render {

namespace {

ImU32 im(uint32_t rgba, float alpha = 1) {
  return IM_COL32(rgba & 255, rgba >> 8 & 255, rgba >> 16 & 255, int(std::clamp(alpha, 0.f, 1.f) * 255));
}

}  // namespace

void stream_list(ImDrawList* dl, Rect plot, const StreamPicture& p, uint32_t rgba, double lo, double hi) {
  if (!(hi > lo)) lo = p.lo, hi = p.hi;
  dl->PushClipRect({plot.x, plot.y}, {plot.x + plot.w, plot.y + plot.h}, true);
  for (const StreamPicture::Bar& bar : p.bars) {
    const float x0 = plot.x + float(std::max(bar.x0, -1.0)), x1 = plot.x + float(std::min(bar.x1, double(plot.w) + 1));
    dl->AddRectFilled({x0, plot.y + 2}, {std::max(x1, x0 + 1), plot.y + plot.h - 2}, im(rgba, std::max(0.35f, bar.cover)));
  }
  auto y = [&](double val) { return plot.y + plot.h - 2 - float((val - lo) / (hi - lo)) * (plot.h - 4); };
  float last_x = -1, last_y = 0;
  for (const StreamPicture::Range& r : p.ranges) {
    const float x0 = plot.x + float(r.x0), x1 = std::max(plot.x + float(r.x1), x0 + 1);
    dl->AddRectFilled({x0, y(r.max)}, {x1, y(r.min) + 1}, im(rgba));
    if (last_x >= 0) dl->AddLine({last_x, last_y}, {x0, y(r.first)}, im(rgba, 0.6f));
    last_x = x1, last_y = y(r.last);
  }
  dl->PopClipRect();
}

void histogram_list(ImDrawList* dl, Rect plot, const std::vector<uint64_t>& counts, uint32_t rgba) {
  if (counts.empty()) return;
  const uint64_t top = std::max<uint64_t>(1, *std::max_element(counts.begin(), counts.end()));
  const float bw = plot.w / float(counts.size());
  for (size_t b = 0; b < counts.size(); ++b) {
    if (!counts[b]) continue;
    const float bh = std::max(2.f, (plot.h - 4) * float(std::sqrt(double(counts[b]) / double(top))));
    dl->AddRectFilled({plot.x + bw * float(b) + 1, plot.y + plot.h - bh}, {plot.x + bw * float(b + 1) - 1, plot.y + plot.h},
                      im(rgba));
  }
}

void pie_list(ImDrawList* dl, Rect r, const std::vector<PieSlice>& slices) {
  uint64_t total = 0;
  for (const PieSlice& s : slices) total += s.ticks;
  const float radius = std::max(8.f, std::min(r.h / 2 - 4, r.w * 0.2f));
  const ImVec2 c{r.x + 4 + radius, r.y + r.h / 2};
  if (total == 0) {
    dl->AddCircleFilled(c, radius, IM_COL32(60, 62, 66, 255), 48);
    dl->AddText({c.x - 40, c.y - 7}, IM_COL32(160, 160, 160, 255), "nothing ran");
    return;
  }
  float angle = -float(M_PI) / 2;  // from twelve o'clock, clockwise
  const float legend_x = c.x + radius + 16;
  for (size_t i = 0; i < slices.size(); ++i) {
    const bool other = i >= 11;  // past the eleventh: one grey slice
    uint64_t ticks = slices[i].ticks;
    if (other)
      for (size_t k = i + 1; k < slices.size(); ++k) ticks += slices[k].ticks;
    const float sweep = float(2 * M_PI * double(ticks) / double(total));
    const ImU32 col = other ? IM_COL32(150, 150, 150, 255) : im(series_colour(i));
    // A slice is convex up to half the circle; a larger one is drawn as two halves.
    const int parts = sweep > float(M_PI) ? 2 : 1;
    for (int k = 0; k < parts; ++k) {
      const float a0 = angle + sweep * float(k) / float(parts), a1 = angle + sweep * float(k + 1) / float(parts);
      dl->PathLineTo(c);
      dl->PathArcTo(c, radius, a0, a1, std::max(2, int((a1 - a0) / (2 * float(M_PI)) * 96)));
      dl->PathFillConvex(col);
    }
    angle += sweep;
    const float y = r.y + 4 + 16.f * float(i);
    if (y + 14 <= r.y + r.h) {
      char text[160];
      std::snprintf(text, sizeof text, "%5.1f %%  %-10s %s", 100.0 * double(ticks) / double(total),
                    other ? "" : slices[i].time.c_str(),
                    other ? (std::to_string(slices.size() - i) + " others").c_str() : slices[i].label.c_str());
      dl->AddRectFilled({legend_x, y + 2}, {legend_x + 10, y + 12}, col);
      dl->AddText({legend_x + 16, y}, IM_COL32(220, 220, 220, 255), text);
    }
    if (other) break;
  }
}

}  // namespace tinescope::render
