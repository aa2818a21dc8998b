#include "tinescope/render/overlay.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>

namespace tinescope::render {

namespace {

constexpr ImU32 kText = IM_COL32(220, 220, 220, 255), kDim = IM_COL32(150, 150, 150, 255),
                kDark = IM_COL32(20, 20, 20, 255), kActive = IM_COL32(255, 255, 255, 255);

void text_clipped(ImDrawList* dl, Rect clip, ImVec2 at, ImU32 colour, const std::string& s) {
  dl->PushClipRect({clip.x, clip.y}, {clip.x + clip.w, clip.y + clip.h}, true);
  dl->AddText(at, colour, s.c_str());
  dl->PopClipRect();
}

// `text` in `width` px: whole, or its start and end around "..", so that
// what tells lanes apart (a thread id at the end) stays in sight.
std::string fit_middle(const std::string& text, float width) {
  if (ImGui::CalcTextSize(text.c_str()).x <= width || text.size() < 6) return text;
  for (size_t keep = text.size() - 1; keep >= 4; --keep) {
    const size_t tail = std::min<size_t>(keep / 2 + 4, keep - 2), head = keep - tail;
    const std::string cut = text.substr(0, head) + ".." + text.substr(text.size() - tail);
    if (ImGui::CalcTextSize(cut.c_str()).x <= width) return cut;
  }
  return text;
}

// Activity markers: where the function pointed at runs, a white frame
// around the lane's call rows with a bar along their top (at least 2 px
// wide, so a short call shows), and its boxes outlined; what the rows show
// stays as it is. (White: the one colour no name is drawn in.)
void activity_overlay(ImDrawList* dl, const Scene& scene, const TimelinePicture& p, Rect plot, const TimeAxis& view,
                      float scroll_y, const Marks& marks) {
  const std::vector<Row>& rows = p.request.layout.rows;
  dl->PushClipRect({plot.x, plot.y}, {plot.x + plot.w, plot.y + plot.h}, true);
  // Spans of a lane closer than a pixel are one mark (a busy stretch of short calls).
  float run0 = 0, run1 = -1, y0 = 0, y1 = 0;
  auto flush = [&] {
    if (run1 < run0) return;
    dl->AddRect({run0 - 1, y0 - 1}, {run1 + 1, y1 + 1}, kActive);
    dl->AddRectFilled({run0 - 1, y0 - 4}, {run1 + 1, y0}, kActive);
    run1 = run0 - 1;
  };
  uint32_t run_lane = UINT32_MAX;
  for (const ActiveSpan& s : marks.active_spans) {
    const Layout::LaneRows* lr = p.request.layout.find_lane(s.lane);
    if (!lr) continue;
    float x0 = plot.x + float(view.x(s.t0)), x1 = plot.x + float(view.x(s.t1));
    if (x1 < plot.x || x0 > plot.x + plot.w) continue;
    if (x1 - x0 < 2) x0 = (x0 + x1) / 2 - 1, x1 = x0 + 2;
    if (s.lane == run_lane && x0 <= run1 + 1) {
      run1 = std::max(run1, x1);
      continue;
    }
    flush();
    float a = INFINITY, z = -INFINITY;
    for (uint32_t r = lr->first; r < lr->end; ++r)
      if (rows[r].kind == Row::Interval) a = std::min(a, rows[r].y), z = std::max(z, rows[r].y + rows[r].h);
    if (a > z) continue;
    run_lane = s.lane, run0 = x0, run1 = x1, y0 = a + plot.y - scroll_y, y1 = z + plot.y - scroll_y;
  }
  flush();
  float offset, scale;
  reprojection(p.axis, view, offset, scale);
  for (const Box& b : p.boxes) {
    if (rows[b.row].kind != Row::Interval || scene.string(b.source, b.name) != marks.active) continue;
    const float x0 = plot.x + offset + std::max(0.f, b.x0) * scale, x1 = plot.x + offset + std::min(b.x1, float(p.columns)) * scale;
    const float y = plot.y + rows[b.row].y - scroll_y;
    dl->AddRect({x0, y}, {std::max(x1, x0 + 2), y + rows[b.row].h - 1}, kActive, 0, 0, 2);
  }
  dl->PopClipRect();
}

}  // namespace

void timeline_overlay(ImDrawList* dl, const Scene& scene, const TimelinePicture& p, const TimelineGeometry& g,
                      const TimeAxis& view, float scroll_y, const Marks& marks,
                      const std::vector<std::string>& collapsed) {
  const Rect plot = g.plot;
  const int64_t origin = scene.first_ns();
  // Ruler: round times, relative to the start of the scene.
  const std::vector<Tick> tk = ticks(view, 120, origin);
  const int64_t step = tk.size() >= 2 ? std::max<int64_t>(1, tk[1].t - tk[0].t) : 1;
  dl->PushClipRect({g.ruler.x, g.ruler.y}, {g.ruler.x + g.ruler.w, g.ruler.y + g.ruler.h}, true);
  for (const Tick& t : tk) {
    const float x = plot.x + float(t.x);
    dl->AddLine({x, g.ruler.y + g.ruler.h - 6}, {x, g.ruler.y + g.ruler.h}, kDim);
    dl->AddText({x + 3, g.ruler.y + 2}, kDim, format_time(t.t - origin, view.linear() ? step : 1, scene.time_unit()).c_str());
  }
  dl->PopClipRect();

  // Names of lanes, groups, counters and CPUs.
  const std::vector<Row>& rows = p.request.layout.rows;
  dl->PushClipRect({g.names.x, g.names.y}, {g.names.x + g.names.w, g.names.y + g.names.h}, true);
  for (const Layout::LaneRows& lr : p.request.layout.lanes) {
    const Lane& lane = scene.lanes()[lr.lane];
    const std::string shown = fit_middle(lane.label(), g.names.w - 18);  // under its group's header
    dl->AddText({g.names.x + 14, plot.y + lr.y0 - scroll_y}, kText, shown.data(), shown.data() + shown.size());
    for (uint32_t r = lr.first; r < lr.end; ++r) {
      const ImVec2 at{g.names.x + 20, plot.y + rows[r].y - scroll_y + 2};
      if (rows[r].kind == Row::Counter && p.counter_range[r].second > p.counter_range[r].first) {
        const auto [lo, hi] = p.counter_range[r];
        char range[64];
        std::snprintf(range, sizeof range, " %.6g..%.6g", lo, hi);
        dl->AddText(at, kDim, (lane.counter_names[rows[r].index] + range).c_str());
      } else if (rows[r].kind == Row::Interval && rows[r].index + 1 == lane.depth_rows && lane.depths > lane.depth_rows) {
        // The last row holds the calls deeper than the rows go: it says so.
        const std::string deeper = "depths " + std::to_string(rows[r].index) + ".." + std::to_string(lane.depths - 1);
        dl->AddText({g.names.x + g.names.w - ImGui::CalcTextSize(deeper.c_str()).x - 4, at.y}, kDim, deeper.c_str());
      } else if (rows[r].kind == Row::Cpu || rows[r].kind == Row::Task || rows[r].kind == Row::Lock) {
        // At the right (the lane's name may be on this row): which CPU, task or lock.
        const std::vector<std::string>& names = rows[r].kind == Row::Cpu    ? lane.cpu_names
                                                : rows[r].kind == Row::Task ? lane.task_names
                                                                            : lane.lock_names;
        const char* name = names[rows[r].index].c_str();
        dl->AddText({g.names.x + g.names.w - ImGui::CalcTextSize(name).x - 4, at.y}, kDim, name);
      }
    }
  }
  for (const Row& row : rows)
    if (row.kind == Row::Group) {
      const std::string& name = scene.lanes()[row.lane].group;
      const bool closed = std::find(collapsed.begin(), collapsed.end(), name) != collapsed.end();
      const float y = plot.y + row.y - scroll_y;
      dl->AddRectFilled({g.names.x, y}, {g.figure.x + g.figure.w, y + row.h - 1}, IM_COL32(45, 45, 55, 255));
      dl->AddText({g.names.x + 2, y + 1}, kText, ((closed ? "+ " : "- ") + (name.empty() ? "(process)" : name)).c_str());
    }
  dl->PopClipRect();

  // Names inside intervals that are wide enough to hold some of the name.
  float offset, scale;
  reprojection(p.axis, view, offset, scale);
  int labels = 0;
  for (const Box& b : p.boxes) {
    const float x0 = plot.x + offset + std::max(0.f, b.x0) * scale, x1 = plot.x + offset + std::min(b.x1, float(p.columns)) * scale;
    const Row& row = rows[b.row];
    if (x1 - x0 < 30 || row.h < 12 || ++labels > 400) continue;
    const float y = plot.y + row.y - scroll_y;
    if (y + row.h < plot.y || y > plot.y + plot.h) continue;
    const Rect clip{std::max(x0, plot.x), std::max(y, plot.y), std::min(x1, plot.x + plot.w) - std::max(x0, plot.x) - 2,
                    row.h};
    // (A lock's hold says who held it: the feedlet in its depth.)
    const std::string_view label =
        row.kind == Row::Lock ? scene.sources()[b.source].catalog->thread_name(b.depth) : scene.string(b.source, b.name);
    text_clipped(dl, clip, {std::max(x0, plot.x) + 2, y - 1}, kDark, std::string(label));
  }

  if (!marks.active.empty()) activity_overlay(dl, scene, p, plot, view, scroll_y, marks);

  // Cursor and selection read-outs on the ruler.
  if (marks.has_selection()) {
    const float a = plot.x + float(view.x(marks.sel0)), z = plot.x + float(view.x(marks.sel1));
    const std::string d = "dt " + format_duration(marks.sel1 - marks.sel0, scene.time_unit());
    const float w = ImGui::CalcTextSize(d.c_str()).x;
    const float x = std::clamp((a + z - w) / 2, plot.x, plot.x + plot.w - w);
    dl->AddRectFilled({x - 3, g.ruler.y + 2}, {x + w + 3, g.ruler.y + g.ruler.h - 2}, IM_COL32(96, 176, 255, 230));
    dl->AddText({x, g.ruler.y + 3}, kDark, d.c_str());
  }
  if (marks.cursor != Marks::kNone) {
    const float x = plot.x + float(view.x(marks.cursor));
    if (x >= plot.x && x <= plot.x + plot.w) {
      const std::string s = format_time(marks.cursor - origin, 1, scene.time_unit());
      dl->AddRectFilled({x + 2, plot.y + plot.h - 16}, {x + 6 + ImGui::CalcTextSize(s.c_str()).x, plot.y + plot.h},
                        IM_COL32(255, 224, 64, 220));
      dl->AddText({x + 4, plot.y + plot.h - 16}, kDark, s.c_str());
    }
  }
  // In the ruler, at its right end, on its own ground: over the lanes it
  // hid what it was drawn on.
  std::string note = message_note(p.arrows_left_out, p.bundled, p.bundles.size(), p.bundles_left_out, p.bundles_wait,
                                  p.over_cap, p.request.max_arrows, p.request.max_bundled);
  if (p.sync_left_out)
    note += (note.empty() ? "" : "; ") + ("more than " + std::to_string(p.sync_left_out - 1)) +
            " clock sync messages: zoom in to see them";
  if (!note.empty()) {
    const float w = ImGui::CalcTextSize(note.c_str()).x, x = g.ruler.x + g.ruler.w - w - 6;
    dl->AddRectFilled({x - 4, g.ruler.y}, {g.ruler.x + g.ruler.w, g.ruler.y + g.ruler.h}, IM_COL32(28, 28, 34, 255));
    dl->AddText({x, g.ruler.y + 3}, kDim, note.c_str());
  }
  scene_warnings(dl, scene, plot);
}

std::string message_note(uint64_t arrows_left_out, uint64_t bundled, size_t bundles, uint64_t bundles_left_out,
                         bool bundles_wait, bool over_cap, uint32_t max_arrows, uint32_t max_bundled) {
  if (!arrows_left_out) return {};
  char note[160];
  if (bundles_left_out)
    std::snprintf(note, sizeof note, "%llu messages, the busiest %zu of %llu bundles drawn: zoom in to see arrows",
                  (unsigned long long)bundled, bundles, (unsigned long long)(bundles + bundles_left_out));
  else if (bundles || bundled)
    std::snprintf(note, sizeof note, "%llu messages as %zu bundles between lanes: zoom in to see their arrows",
                  (unsigned long long)bundled, bundles);
  else if (bundles_wait)
    std::snprintf(note, sizeof note, "more than %u messages here: bundles once the view rests", max_arrows);
  else if (over_cap)
    std::snprintf(note, sizeof note, "more than %u messages here: zoom in to see them", max_bundled);
  else  // (none between two lanes shown: orphans, or messages of lanes not shown)
    std::snprintf(note, sizeof note, "more than %u messages here, none between the lanes shown: zoom in to see them",
                  max_arrows);
  return note;
}

void scene_warnings(ImDrawList* dl, const Scene& scene, Rect plot) {
  // At the plot's foot, where they hide the least and cannot be missed.
  float y = plot.y + plot.h - 18 * float(scene.warnings.size()) - 20;
  for (const std::string& w : scene.warnings) {
    const std::string s = "warning: " + w;
    const float tw = ImGui::CalcTextSize(s.c_str()).x;
    dl->AddRectFilled({plot.x + 4, y}, {plot.x + 12 + tw, y + 17}, IM_COL32(60, 40, 0, 235));
    text_clipped(dl, plot, {plot.x + 8, y + 1}, IM_COL32(255, 190, 60, 255), s);
    y += 18;
  }
}

void scope_overlay(ImDrawList* dl, const Scene& scene, const ScopePicture& p, const ScopeGeometry& g,
                   const Marks& marks) {
  const ScopeRequest& q = p.request;
  char info[256];
  std::snprintf(info, sizeof info, "period %.4f us   fold %u%s%s   %u strips of %u px   from %s   %s%s", q.period_ns / 1e3,
                q.fold, q.mode == FoldMode::Mean ? "" : " ", q.mode == FoldMode::Mean ? "" : fold_mode_name(q.mode), q.strips, g.strip_px, format_time(q.start - scene.first_ns(), 1000).c_str(),
                q.lanes.size() == 1 && q.lanes[0] < scene.lanes().size() ? scene.lanes()[q.lanes[0]].name.c_str() : "",
                p.truncated ? "   (too many events: partial)" : "");
  dl->AddText({g.info.x + 4, g.info.y + 3}, kText, info);
  // Strip start times, every ~20 px.
  const uint32_t every = std::max(1u, 20 / g.strip_px);
  dl->PushClipRect({g.labels.x, g.labels.y}, {g.labels.x + g.labels.w, g.labels.y + g.labels.h}, true);
  for (uint32_t s = 0; s < q.strips && s < g.strips(); s += every) {
    const int64_t at = q.start + int64_t(double(s) * double(q.fold) * q.period_ns);
    if (at > scene.last_ns()) break;  // past the end of the trace: nothing to label
    const int64_t t = at - scene.first_ns();
    dl->AddText({g.labels.x + 4, g.plot.y + float(s) * float(g.strip_px)}, kDim, format_time(t, 1000).c_str());
  }
  dl->PopClipRect();
  if (marks.cursor != Marks::kNone) {
    uint32_t strip;
    double col;
    if (p.locate(marks.cursor, strip, col)) {
      char s[64];
      std::snprintf(s, sizeof s, "phase %s", format_duration(int64_t(col / q.columns * q.period_ns)).c_str());
      dl->AddText({g.info.x + g.info.w - 160, g.info.y + 3}, IM_COL32(255, 224, 64, 255), s);
    }
  }
}

}  // namespace tinescope::render
