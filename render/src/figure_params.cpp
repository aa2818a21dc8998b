#include "tinescope/render/figure_params.hpp"

#include <algorithm>
#include <cmath>

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
  r.hidden_names = f.hidden_names;
  r.rule_verdicts = f.rule_verdicts;
  r.message_filter = f.message_filter;
  return r;
}

SequenceRequest sequence_request(const Scene& scene, const FigureParams& f, const SequenceGeometry& g) {
  SequenceRequest r;
  r.t0 = f.t0;
  r.t1 = std::max(f.t1, f.t0 + 1);
  r.width = std::max(1.f, g.plot.w), r.height = std::max(1.f, g.plot.h);
  r.lanes = f.lanes;  // (none: no lifelines; message_lanes() picks them)
  std::erase_if(r.lanes, [&](uint32_t l) { return l >= scene.lanes().size(); });
  r.spacing = f.spacing;
  r.lifelines = f.lifelines, r.queues = f.queue_map;
  r.collapsed = f.collapsed;
  r.rule_verdicts = f.rule_verdicts;
  r.message_filter = f.message_filter;
  return r;
}

namespace {

// The lanes a scope folds: those asked for, else the first with intervals or job segments.
std::vector<uint32_t> scope_lanes(const Scene& scene, const FigureParams& f) {
  std::vector<uint32_t> lanes = f.lanes;
  for (uint32_t i = 0; i < scene.lanes().size() && lanes.empty(); ++i)
    if (scene.lanes()[i].has_intervals || !scene.lanes()[i].cpus.empty()) lanes.push_back(i);
  return lanes;
}

}  // namespace

std::pair<int64_t, int64_t> message_window(const Scene& scene, int64_t send, int64_t recv, int64_t span,
                                           uint32_t max_arrows) {
  const int64_t len = std::max<int64_t>(recv - send, 0), mid = send + len / 2;
  const int64_t narrowest = std::max<int64_t>(len + len / 5, 100);
  span = std::max(span, narrowest);
  auto crowded = [&](int64_t t0, int64_t t1) {
    size_t n = 0;
    for (const Source& src : scene.sources()) {
      const ClockWindow cw(src.catalog->clock, t0, t1);
      n += src.index->flows(cw.k0, cw.k1, max_arrows, true).size();
    }
    return n > max_arrows;
  };
  while (span / 2 >= narrowest && crowded(mid - span / 2, mid - span / 2 + span)) span /= 2;
  return {mid - span / 2, mid - span / 2 + span};
}

bool bookmark_window(const Scene& scene, const Marks& marks, int64_t t0, int64_t t1, int direction, int64_t& to,
                     int64_t& w0, int64_t& w1) {
  std::vector<int64_t> b = marks.bookmarks;
  std::sort(b.begin(), b.end());
  const int64_t half = (t1 - t0) / 2;
  const bool cursor = marks.cursor != Marks::kNone && marks.cursor >= t0 && marks.cursor <= t1;
  const int64_t from = cursor ? marks.cursor : t0 + half;
  if (direction > 0) {
    auto it = std::upper_bound(b.begin(), b.end(), cursor ? from : from + 1);
    if (it == b.end()) return false;
    to = *it;
  } else {
    auto it = std::lower_bound(b.begin(), b.end(), cursor ? from : from - 1);
    if (it == b.begin()) return false;
    to = *std::prev(it);
  }
  if (auto m = marks.bookmark_messages.find(to); m != marks.bookmark_messages.end()) {
    std::tie(w0, w1) = message_window(scene, m->first, m->second, t1 - t0);
  } else {
    w0 = to - half, w1 = w0 + 2 * half;
  }
  return true;
}

std::vector<analysis::PeriodCandidate> find_scope_periods(const Scene& scene, const FigureParams& f) {
  const std::vector<uint32_t> lanes = scope_lanes(scene, f);
  if (lanes.empty() || lanes[0] >= scene.lanes().size()) return {};
  // The lanes of the first one's trace (a period is a fact of one clock).
  const uint32_t source = scene.lanes()[lanes[0]].source;
  std::vector<uint32_t> feedlets;
  for (uint32_t id : lanes)
    if (id < scene.lanes().size() && scene.lanes()[id].source == source) feedlets.push_back(scene.lanes()[id].feedlet);
  analysis::PeriodOptions o;
  if (f.t1 > f.t0) o.from_ns = f.t0;
  return analysis::find_periods(*scene.sources()[source].index, feedlets, o);
}

double default_period_ns(const Scene& scene, const FigureParams& f) {
  const std::vector<analysis::PeriodCandidate> found = find_scope_periods(scene, f);
  return found.empty() ? std::max(1.0, double(f.t1 - f.t0) / 100) : found.front().period_ns;
}

int64_t scope_start(const FigureParams& f, double period_ns, uint32_t strips) {
  const double strip = period_ns * double(std::clamp(f.fold, 1u, 65536u));
  if (f.follow == Marks::kNone || !(strip > 0)) return f.t0;
  const double k = std::floor(double(f.follow - f.t0) / strip);  // the strip it is in
  const double shown = double(std::max(1u, strips));
  if (k >= 0 && k < shown) return f.t0;
  // Whole strips, so the phase stays what it was.
  const double start = double(f.t0) + (k - std::floor(shown / 2)) * strip;
  return int64_t(std::clamp(start, -9.2e18, 9.2e18));
}

ScopeRequest scope_request(const Scene& scene, const FigureParams& f, const ScopeGeometry& g) {
  ScopeRequest r;
  r.period_ns = f.period_ns > 0 ? f.period_ns : default_period_ns(scene, f);
  r.fold = std::clamp(f.fold, 1u, 65536u);
  r.mode = f.fold_mode;
  r.strips = std::max(1u, g.strips());
  r.start = scope_start(f, r.period_ns, r.strips);
  r.columns = uint32_t(std::max(1.f, g.plot.w));
  r.lanes = scope_lanes(scene, f);
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
  // Only interval, instant, CPU, task and lock rows: a compact picture of activity.
  for (const Row& row : full.rows)
    if (row.kind == Row::Interval || row.kind == Row::Instant || row.kind == Row::Cpu || row.kind == Row::Task ||
        row.kind == Row::Lock)
      r.layout.rows.push_back(row);
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
  r.max_bundled = 0;  // (no bundles either: the strip shows the messages' density)
  r.max_boxes = 0;
  r.message_density = true;
  return r;
}

}  // namespace tinescope::render
