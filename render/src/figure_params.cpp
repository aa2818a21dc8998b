#include "tinescope/render/figure_params.hpp"

#include <algorithm>

namespace tinescope::render {

LayoutOptions layout_options(const FigureParams& f) {
  LayoutOptions o;
  o.lanes = f.lanes;
  o.collapsed = f.collapsed;
  return o;
}

TimelineRequest timeline_request(const Scene& scene, const FigureParams& f, const TimelineGeometry& g) {
  TimelineRequest r;
  r.t0 = f.t0;
  r.t1 = std::max(f.t1, f.t0 + 1);
  r.width = std::max(1.f, g.plot.w);
  r.theta = f.theta;
  r.layout = layout_lanes(scene, layout_options(f));
  return r;
}

ScopeRequest scope_request(const Scene& scene, const FigureParams& f, const ScopeGeometry& g) {
  ScopeRequest r;
  r.start = f.t0;
  r.period_ns = f.period_ns > 0 ? f.period_ns : std::max(1.0, double(f.t1 - f.t0) / 100);
  r.fold = std::clamp(f.fold, 1u, 65536u);
  r.strips = std::max(1u, g.strips());
  r.columns = uint32_t(std::max(1.f, g.plot.w));
  r.lanes = f.lanes;
  if (r.lanes.empty())  // the first lane with intervals or job segments
    for (uint32_t i = 0; i < scene.lanes().size() && r.lanes.empty(); ++i)
      if (scene.lanes()[i].has_intervals || !scene.lanes()[i].cpus.empty()) r.lanes.push_back(i);
  return r;
}

TimelineRequest overview_request(const Scene& scene, float width) {
  TimelineRequest r;
  r.t0 = scene.first_ns();
  r.t1 = std::max(scene.last_ns(), r.t0 + 1);
  r.width = std::max(1.f, width);
  LayoutOptions o;
  o.row_px = 2, o.counter_px = 0, o.group_px = 0, o.lane_gap_px = 1;
  Layout full = layout_lanes(scene, o);
  // Only interval, instant and CPU rows: a compact picture of activity.
  for (const Row& row : full.rows)
    if (row.kind == Row::Interval || row.kind == Row::Instant || row.kind == Row::Cpu) r.layout.rows.push_back(row);
  r.layout.height = full.height;
  for (Layout::LaneRows lr : full.lanes) {
    uint32_t first = UINT32_MAX, end = 0;
    for (uint32_t k = 0; k < r.layout.rows.size(); ++k)
      if (r.layout.rows[k].lane == lr.lane) first = std::min(first, k), end = k + 1;
    if (first == UINT32_MAX) continue;
    lr.first = first, lr.end = end;
    r.layout.lanes.push_back(lr);
  }
  r.max_arrows = 0;
  r.max_boxes = 0;
  return r;
}

}  // namespace tinescope::render
