// The timeline picture: per lane, query the pyramids at the window's
// resolution (query_lane), then paint each bucket's span into per-column
// accumulators, so the work follows the pixels and the buckets, never the
// events. Intervals and job segments running on past the right edge come
// from running_across() (the stack of begin/end pairs, the complete
// intervals across the edge, the jobs running there), since streams are
// keyed by their end.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "tinescope/analysis/message_filter.hpp"
#include "tinescope/render/figure.hpp"
#include "tinescope/render/picture.hpp"
#include "window_messages.hpp"

namespace tinescope::render {


using index::Node;
using index::StreamKind;

const Layout::LaneRows* Layout::lane_at_y(float y) const {
  for (const LaneRows& l : lanes)
    if (y >= l.y0 && y < l.y1) return &l;
  return nullptr;
}

const Layout::LaneRows* Layout::find_lane(uint32_t lane) const {
  for (const LaneRows& l : lanes)
    if (l.lane == lane) return &l;
  return nullptr;
}

Layout layout_lanes(const Scene& scene, const LayoutOptions& o) {
  Layout out;
  std::vector<uint32_t> order = o.lanes;
  if (order.empty())
    for (uint32_t i = 0; i < scene.lanes().size(); ++i) order.push_back(i);
  float y = 0;
  const std::string* group = nullptr;
  bool collapsed = false;
  for (uint32_t lane : order) {
    if (lane >= scene.lanes().size()) continue;
    const Lane& l = scene.lanes()[lane];
    if (!group || *group != l.group) {
      group = &l.group;
      collapsed = std::find(o.collapsed.begin(), o.collapsed.end(), l.group) != o.collapsed.end();
      if (!l.group.empty() || collapsed) {
        out.rows.push_back({Row::Group, lane, 0, y, o.group_px});
        y += o.group_px;
      }
    }
    if (collapsed) continue;
    Layout::LaneRows lr{lane, uint32_t(out.rows.size()), 0, y, 0};
    const uint32_t depths = l.has_intervals || (!l.has_instants && l.cpus.empty()) ? l.depth_rows : 0;
    for (uint32_t d = 0; d < depths; ++d, y += o.row_px) out.rows.push_back({Row::Interval, lane, d, y, o.row_px});
    if (l.has_instants) out.rows.push_back({Row::Instant, lane, 0, y, o.row_px * 0.6f}), y += o.row_px * 0.6f;
    for (uint32_t k = 0; k < l.cpus.size(); ++k, y += o.row_px) out.rows.push_back({Row::Cpu, lane, k, y, o.row_px});
    for (uint32_t k = 0; k < l.tasks.size(); ++k, y += o.row_px) out.rows.push_back({Row::Task, lane, k, y, o.row_px});
    for (uint32_t k = 0; k < l.locks.size(); ++k, y += o.row_px) out.rows.push_back({Row::Lock, lane, k, y, o.row_px});
    for (uint32_t k = 0; k < l.counters.size(); ++k, y += o.counter_px)
      out.rows.push_back({Row::Counter, lane, k, y, o.counter_px});
    lr.end = uint32_t(out.rows.size());
    lr.y1 = y;
    y += o.lane_gap_px;
    out.lanes.push_back(lr);
  }
  out.height = y;
  return out;
}

uint64_t next_picture_serial() {
  static std::atomic<uint64_t> serial{0};
  return ++serial;
}

namespace {

struct Cell {
  float r = 0, g = 0, b = 0, cov = 0;
  float top_cov = 0;
  uint32_t top = 0, count = 0;
};

// A counter holds its value between samples: what it held at the window's
// left edge. (Past the last sample in the window it holds to the right edge
// or the trace's end, whichever comes first: no need to find the next one.)
struct CounterEdges {
  bool has_before = false;
  index::Item before;
};

struct LaneQuery {
  const Layout::LaneRows* rows;
  const Lane* lane;
  ClockWindow clock;
  std::vector<std::pair<int, index::Buckets>> buckets;
  index::RunningAcross edge;  // what runs across the right edge
  std::vector<std::pair<uint32_t, index::HeldLock>> held;  // the locks lane: (feedlet, lock) held across it
  std::vector<CounterEdges> counters;  // as lane->counters
};

struct Painter {
  uint32_t columns;
  std::vector<Cell> cells;  // rows × columns
  Cell* row(uint32_t r) { return &cells[size_t(r) * columns]; }

  // Paints [x0, x1) (columns) with `density` of coverage in colour c.
  void span(uint32_t r, double x0, double x1, double density, uint32_t c, uint32_t name, uint32_t count) {
    x0 = std::max(0.0, x0);
    x1 = std::min(double(columns), x1);
    if (x1 < x0) return;
    const float R = float(c & 255) / 255.f, G = float(c >> 8 & 255) / 255.f, B = float(c >> 16 & 255) / 255.f;
    Cell* cr = row(r);
    const uint32_t c0 = uint32_t(std::min(double(columns - 1), std::floor(x0)));
    const uint32_t c1 = uint32_t(std::min(double(columns - 1), std::max(double(c0), std::ceil(x1) - 1)));
    for (uint32_t k = c0; k <= c1; ++k) {
      const double cover = (std::min(double(k + 1), x1) - std::max(double(k), x0)) * density;
      const float f = float(std::max(cover, 0.0));
      Cell& cell = cr[k];
      cell.r += R * f, cell.g += G * f, cell.b += B * f, cell.cov += f;
      cell.count += count;
      if (f >= cell.top_cov) cell.top_cov = f, cell.top = name;
    }
  }
};

uint32_t pack(const Cell& c) {
  if (c.count == 0 && c.cov <= 0) return 0;
  const float w = c.cov > 0 ? c.cov : 1;
  // Something is there even when it covers a sliver of the column: show it.
  const float a = std::clamp(c.cov, c.count ? 0.35f : 0.f, 1.f);
  auto u8 = [](float f) { return uint32_t(std::lround(std::clamp(f, 0.f, 1.f) * 255)); };
  return u8(c.r / w) | u8(c.g / w) << 8 | u8(c.b / w) << 16 | u8(a) << 24;
}

}  // namespace

TimelinePicture build_timeline(const Scene& scene, const TimelineRequest& req) {
  const auto started = std::chrono::steady_clock::now();
  TimelinePicture P;
  P.serial = next_picture_serial();
  P.request = req;
  P.columns = uint32_t(std::max(1.0, std::ceil(req.width)));
  P.rows = uint32_t(req.layout.rows.size());
  P.axis = TimeAxis(req.t0, req.t1, req.width);
  const uint32_t resolution = P.columns * (req.theta > 0 ? 4 : 1);

  // 1. Ask every lane's pyramids for the window, into the memory of this
  // thread's last picture's answers (pictures are built again and again).
  thread_local std::vector<std::vector<std::pair<int, index::Buckets>>> answers;
  if (answers.size() < req.layout.lanes.size()) answers.resize(req.layout.lanes.size());
  std::vector<LaneQuery> queries;
  std::vector<std::vector<index::StreamInfo>> streams(scene.sources().size());
  for (size_t s = 0; s < scene.sources().size(); ++s) streams[s] = scene.sources()[s].index->streams();
  for (const Layout::LaneRows& lr : req.layout.lanes) {
    if (req.stop && req.stop->load(std::memory_order_relaxed)) {
      P.stopped = true;
      return P;
    }
    const Lane& lane = scene.lanes()[lr.lane];
    const index::TraceIndex& ix = *scene.sources()[lane.source].index;
    LaneQuery q{&lr, &lane, ClockWindow(scene.sources()[lane.source].catalog->clock, req.t0, req.t1),
                std::move(answers[queries.size()]), {}};
    const std::vector<uint8_t>* hidden = req.hidden_names && lane.source < req.hidden_names->size() &&
                                                 !(*req.hidden_names)[lane.source].empty()
                                             ? &(*req.hidden_names)[lane.source]
                                             : nullptr;
    if (lane.is_tasks()) {
      // Jobs by task: each task's streams, of every feedlet; what runs at
      // the right edge, from every lane that runs jobs.
      q.buckets.clear();
      for (const std::vector<int>& ids : lane.task_streams)
        for (int id : ids) q.buckets.emplace_back(id, ix.query(id, q.clock.k0, q.clock.k1, resolution, req.decode_per_column));
      for (const Lane& other : scene.lanes())
        if (other.source == lane.source && !other.cpus.empty())
          for (const index::RunningJob& r : ix.running_at(other.feedlet, q.clock.k1)) q.edge.jobs.push_back(r);
      queries.push_back(std::move(q));
      continue;
    }
    if (lane.is_locks()) {
      // Locks: each lock's streams, of every feedlet; what is held across
      // the right edge, from every thread's lane.
      q.buckets.clear();
      for (const std::vector<int>& ids : lane.lock_streams)
        for (int id : ids) q.buckets.emplace_back(id, ix.query(id, q.clock.k0, q.clock.k1, resolution, req.decode_per_column));
      for (const Lane& other : scene.lanes())
        if (other.source == lane.source && !other.is_tasks() && !other.is_locks())
          for (const index::HeldLock& h : ix.held_at(other.feedlet, q.clock.k1)) q.held.emplace_back(other.feedlet, h);
      queries.push_back(std::move(q));
      continue;
    }
    ix.query_lane(lane.feedlet, q.clock.k0, q.clock.k1, resolution, q.buckets, req.decode_per_column, hidden);
    // A growing trace may have gained streams since the scene was read: they wait for the next one.
    const size_t known = std::min(streams[lane.source].size(), scene.sources()[lane.source].stream_colour.size());
    std::erase_if(q.buckets, [&](const auto& b) { return size_t(b.first) >= known; });
    q.edge = ix.running_across(lane.feedlet, q.clock.k1);
    if (hidden) {
      auto hides = [&](uint32_t name) { return name < hidden->size() && (*hidden)[name]; };
      std::erase_if(q.edge.open, [&](const index::OpenInterval& o) { return hides(o.name); });
      std::erase_if(q.edge.spans, [&](const index::Item& it) { return hides(it.name); });
    }
    q.counters.resize(lane.counters.size());
    const uint64_t first_column_end =  // (warped, columns differ: none)
        req.theta > 0 ? 0 : q.clock.ticks(req.t0 + int64_t(double(req.t1 - req.t0) / std::max(1.0, req.width)));
    for (size_t k = 0; k < lane.counters.size(); ++k) {
      // The value held at the left edge, unless a sample of the window's
      // answer comes within its first column (a dense counter's every
      // picture: that search descends the pyramid and decodes a leaf).
      // A decoded answer may hold it already: the walk passed it (fine
      // zooms, where the search was most of a picture's cost).
      bool sampled_at_edge = false, walked = false;
      CounterEdges& e = q.counters[k];
      for (const auto& [id, b] : q.buckets) {
        if (id != lane.counters[k]) continue;
        for (const Node& n : b.nodes)
          if (n.count) {
            sampled_at_edge = n.s.first_ts <= first_column_end;
            break;
          }
        if (b.has_before && !sampled_at_edge) walked = e.has_before = true, e.before = b.before;
      }
      if (!sampled_at_edge && !walked) e.has_before = ix.sample_before(lane.counters[k], q.clock.k0, e.before);
    }
    queries.push_back(std::move(q));
  }

  // 2. The log-time warp takes its knots from what is in the window.
  if (req.theta > 0) {
    std::vector<int64_t> knots;
    for (const LaneQuery& q : queries) {
      for (const auto& [id, b] : q.buckets) {
        const StreamKind kind = streams[q.lane->source][size_t(id)].kind;
        if (kind != StreamKind::Interval && kind != StreamKind::Instant && kind != StreamKind::Sched) continue;
        for (const Node& n : b.nodes) {
          knots.push_back(q.clock.ns(n.iv.min_start));
          knots.push_back(q.clock.ns(n.iv.max_end));
        }
      }
      for (const index::OpenInterval& o : q.edge.open) knots.push_back(q.clock.ns(o.start));
      for (const index::Item& it : q.edge.spans) knots.push_back(q.clock.ns(it.start));
      for (const index::RunningJob& r : q.edge.jobs) knots.push_back(q.clock.ns(r.start));
    }
    P.axis.warp(std::move(knots), req.theta);
  }
  const TimeAxis& axis = P.axis;

  // 3. Paint.
  Painter paint{P.columns, std::vector<Cell>(size_t(P.rows) * P.columns)};
  std::vector<double> lo(P.rows, std::numeric_limits<double>::quiet_NaN()), hi = lo;
  std::vector<std::vector<double>> cmin(P.rows), cmax(P.rows);
  // A hatch over [x0, x1], at least 2 px wide around its middle (a loss is
  // never too small to see).
  auto add_cut = [&](uint32_t row, double x0, double x1) {
    const double mid = (x0 + x1) / 2;
    x0 = std::min(x0, mid - 1), x1 = std::max(x1, mid + 1);
    if (x1 >= -2 && x0 <= req.width + 2) P.cuts.push_back({row, float(std::max(x0, -2.0)), float(std::min(x1, req.width + 2))});
  };
  auto add_box = [&](uint32_t row, uint32_t source, uint32_t name, double x0, double x1, int64_t s, int64_t e,
                     uint32_t depth, bool cut) {
    if (cut) add_cut(row, x0, x1);
    if (x1 - x0 < 3) return;
    if (P.boxes.size() >= req.max_boxes) {
      ++P.boxes_left_out;
      return;
    }
    P.boxes.push_back({row, source, name, float(std::max(x0, -1.0)), float(std::min(x1, req.width + 1)), s, e, depth, cut});
  };
  // Depth streams name a bucket's longest item: its colour, by (source, name), hashed once a picture.
  std::unordered_map<uint64_t, uint32_t> name_colours;
  auto colour_of = [&](uint32_t source, uint32_t name) {
    auto [it, fresh] = name_colours.try_emplace(uint64_t(source) << 32 | name, 0);
    if (fresh) it->second = name_colour(scene.sources()[source].catalog->string(name));
    return it->second;
  };
  for (const LaneQuery& q : queries) {
    const Layout::LaneRows& lr = *q.rows;
    const Lane& lane = *q.lane;
    const Source& src = scene.sources()[lane.source];
    uint32_t instant_row = UINT32_MAX, depth_rows = 0;
    for (uint32_t r = lr.first; r < lr.end; ++r) {
      if (req.layout.rows[r].kind == Row::Instant) instant_row = r;
      if (req.layout.rows[r].kind == Row::Interval) ++depth_rows;
    }
    auto depth_row = [&](uint32_t depth) { return lr.first + std::min(depth, depth_rows - 1); };
    // The row of the lane's k-th CPU or task (UINT32_MAX: none).
    auto row_of = [&](Row::Kind kind, uint32_t k) {
      for (uint32_t r = lr.first; r < lr.end; ++r)
        if (req.layout.rows[r].kind == kind && req.layout.rows[r].index == k) return r;
      return UINT32_MAX;
    };
    auto cpu_row = [&](uint32_t k) { return row_of(Row::Cpu, k); };
    // A task's row, by its name (a name may have several string ids).
    std::unordered_map<uint32_t, uint32_t> task_rows;  // string id -> row, as found
    auto task_row = [&](uint32_t task) {
      auto [it, fresh] = task_rows.try_emplace(task, UINT32_MAX);
      if (!fresh) return it->second;
      const std::string_view name = src.catalog->string(task);
      for (uint32_t k = 0; k < lane.task_names.size(); ++k)
        if (lane.task_names[k] == name) it->second = row_of(Row::Task, k);
      return it->second;
    };
    // A lock's row, by its name.
    auto lock_row = [&](uint32_t lock) {
      const std::string_view name = src.catalog->string(lock);
      for (uint32_t k = 0; k < lane.lock_names.size(); ++k)
        if (lane.lock_names[k] == name) return row_of(Row::Lock, k);
      return UINT32_MAX;
    };
    // A holder's colour: its thread's name's.
    auto thread_colour = [&](uint32_t feedlet) { return name_colour(src.catalog->thread_name(feedlet)); };
    // A task's segments are coloured by their CPU: a migration shows.
    auto cpu_colour = [&](uint32_t cpu) {
      static const uint32_t kCpuColours[] = {0xffe0a040u, 0xff40c0e0u, 0xff60d060u, 0xffe060c0u,
                                             0xff4080f0u, 0xffc0c040u, 0xff9070e0u, 0xff50b0a0u};
      return kCpuColours[cpu % std::size(kCpuColours)];
    };
    // A bucket of intervals (a name's, a depth's, a CPU's; buckets of
    // 2^shift ticks) in its row. Its box is its one item, or its longest:
    // hatched if that was cut.
    auto paint_intervals = [&](uint32_t row, const Node& n, uint32_t shift, uint32_t name, uint32_t colour) {
      const bool cut = n.iv.truncated & index::kLongestTruncated;
      const int64_t s = q.clock.ns(n.iv.min_start), e = q.clock.ns(n.iv.max_end);
      const double x0 = axis.x(s), x1 = axis.x(e);
      const double len = double(e - s);
      const double density = n.count == 1 || len <= 0 ? 1.0 : std::min(1.0, double(n.iv.busy) / len);
      paint.span(row, x0, std::max(x1, x0), density, colour, name, n.count);
      if (n.count == 1) {
        add_box(row, lane.source, name, x0, x1, s, e, n.max_depth, cut);
        return;
      }
      // A bucket wider than a column (a leaf answering a finer zoom) is a
      // smear of its density, which would hide the one slow item in it:
      // its longest item is known exactly, so it is drawn whole where it
      // covers a column or more, as it would be at full resolution.
      const int64_t ls = q.clock.ns(n.iv.longest_end - n.iv.max_dur), le = q.clock.ns(n.iv.longest_end);
      const double lx0 = axis.x(ls), lx1 = axis.x(le);
      const bool whole = lx1 - lx0 >= 1;
      if (index::truncated_items(n) > (cut && whole ? 1u : 0u)) {
        // Cut items too short to be drawn: hatched where they end (the
        // bucket's keys, within its items).
        const uint64_t k0 = std::max(n.bucket << shift, n.iv.min_start);
        const uint64_t k1 = std::min(((n.bucket + 1) << shift) - 1, n.iv.max_end);
        const double a = axis.x(q.clock.ns(k0)), z = axis.x(q.clock.ns(k1));
        add_cut(row, a, z);
      }
      if (!whole) return;
      paint.span(row, lx0, lx1, 1.0, colour, name, 0);
      add_box(row, lane.source, name, lx0, lx1, ls, le, n.max_depth, cut);
    };
    for (const auto& [id, b] : q.buckets) {
      const index::StreamInfo& st = streams[lane.source][size_t(id)];
      P.nodes += b.nodes.size();
      P.from_events |= b.from_events;
      P.over_budget |= b.over_budget;
      // A depth stream's bucket (a coarse zoom: every name at one depth) is
      // drawn as its longest item's name.
      const bool by_depth = st.kind == StreamKind::Depth;
      if ((st.kind == StreamKind::Interval || by_depth) && depth_rows) {
        // The last depth stream holds every depth from its own on: a bucket
        // of several of them (it knows only the deepest) is drawn in each
        // row from its depth to the deepest, not in the deepest alone.
        const bool from_here_down = by_depth && st.key + 1 == index::kDepthStreams;
        for (const Node& n : b.nodes) {
          const uint32_t name = by_depth ? uint32_t(n.iv.longest_name) : st.key;
          const uint32_t colour = by_depth ? colour_of(lane.source, name) : src.stream_colour[size_t(id)];
          if (from_here_down && n.count > 1) {
            const double x0 = axis.x(q.clock.ns(n.iv.min_start)), x1 = axis.x(q.clock.ns(n.iv.max_end));
            const double len = double(n.iv.max_end - n.iv.min_start);
            const double density = len <= 0 ? 1.0 : std::min(1.0, double(n.iv.busy) / len);
            for (uint32_t d = st.key; d < n.max_depth && depth_row(d) < depth_row(n.max_depth); ++d)
              paint.span(depth_row(d), x0, std::max(x1, x0), density, colour, name, n.count);
          }
          paint_intervals(depth_row(n.max_depth), n, b.shift, name, colour);
        }
      } else if (st.kind == StreamKind::Sched) {
        // A CPU's bucket is drawn as the task of its longest segment.
        const auto k = std::find(lane.cpus.begin(), lane.cpus.end(), id) - lane.cpus.begin();
        const uint32_t row = cpu_row(uint32_t(k));
        if (row == UINT32_MAX) continue;
        for (const Node& n : b.nodes) {
          const uint32_t task = uint32_t(n.iv.longest_name);
          paint_intervals(row, n, b.shift, task, colour_of(lane.source, task));
        }
      } else if (st.kind == StreamKind::Hold) {
        // A lock's bucket (one thread's holds), in the lock's row, in the
        // thread's colour; its boxes name the thread (depth: its feedlet).
        const uint32_t row = lock_row(st.key);
        if (row == UINT32_MAX) continue;
        const uint32_t colour = thread_colour(st.feedlet);
        for (const Node& n : b.nodes) {
          const size_t boxes = P.boxes.size();
          paint_intervals(row, n, b.shift, st.key, colour);
          for (size_t k = boxes; k < P.boxes.size(); ++k) P.boxes[k].depth = st.feedlet;
        }
      } else if (st.kind == StreamKind::Task) {
        // A task's bucket, in its row, coloured by the CPU of its longest segment.
        const uint32_t row = task_row(st.key);
        if (row == UINT32_MAX) continue;
        for (const Node& n : b.nodes) paint_intervals(row, n, b.shift, st.key, cpu_colour(uint32_t(n.iv.longest_name)));
      } else if (st.kind == StreamKind::Instant && instant_row != UINT32_MAX) {
        const uint32_t colour = src.stream_colour[size_t(id)];
        for (const Node& n : b.nodes) {
          const double x0 = axis.x(q.clock.ns(n.iv.min_start)), x1 = axis.x(q.clock.ns(n.iv.max_end));
          paint.span(instant_row, std::floor(x0), std::max(std::floor(x0) + 1, x1), 1.0, colour, st.key, n.count);
        }
      }
    }
    // Counters, a row each: each bucket's min..max, and between samples the
    // value held, from the window's left edge (the last sample before it)
    // to the next sample, or the right edge, or the end of the trace.
    const index::TraceIndex& ix = *src.index;
    for (uint32_t k = 0; k < lane.counters.size(); ++k) {
      uint32_t row = UINT32_MAX;
      for (uint32_t r = lr.first; r < lr.end; ++r)
        if (req.layout.rows[r].kind == Row::Counter && req.layout.rows[r].index == k) row = r;
      if (row == UINT32_MAX) continue;
      std::vector<double>& mn = cmin[row];
      std::vector<double>& mx = cmax[row];
      mn.assign(P.columns, std::numeric_limits<double>::quiet_NaN());
      mx = mn;
      auto put = [&](double x0, double x1, double a, double z) {
        const int64_t c0 = std::max<int64_t>(0, int64_t(std::floor(std::max(x0, -1.0))));
        const int64_t c1 = std::min<int64_t>(P.columns - 1, int64_t(std::floor(std::min(x1, double(P.columns)))));
        if (c0 > c1) return;  // (off the picture: no column, and no say in the row's range)
        for (int64_t c = c0; c <= c1; ++c) {
          mn[size_t(c)] = std::isnan(mn[size_t(c)]) ? a : std::min(mn[size_t(c)], a);
          mx[size_t(c)] = std::isnan(mx[size_t(c)]) ? z : std::max(mx[size_t(c)], z);
        }
        lo[row] = std::isnan(lo[row]) ? a : std::min(lo[row], a);
        hi[row] = std::isnan(hi[row]) ? z : std::max(hi[row], z);
      };
      const CounterEdges& e = q.counters[k];
      bool held = e.has_before;
      double held_value = e.before.value, held_x = 0;
      for (const auto& [id, b] : q.buckets) {
        if (id != lane.counters[k]) continue;
        for (const Node& n : b.nodes) {
          const double xf = axis.x(q.clock.ns(n.s.first_ts)), xl = axis.x(q.clock.ns(n.s.last_ts));
          if (held) put(held_x, xf, held_value, held_value);
          put(xf, xl, n.s.min, n.s.max);
          held = true, held_value = n.s.last, held_x = xl;
        }
      }
      if (held) {
        const uint64_t until = ix.last_ts();
        const double x1 = until > q.clock.k1 ? double(P.columns) : axis.x(q.clock.ns(until));
        put(held_x, x1, held_value, held_value);
      }
    }
    // Still open at the right edge: from its start (or the left edge) on.
    for (const index::OpenInterval& o : q.edge.open) {
      if (!depth_rows) break;
      const int64_t s = q.clock.ns(o.start);
      const double x0 = axis.x(s);
      const std::string_view name = src.catalog->string(o.name);
      const uint32_t row = depth_row(o.depth);
      paint.span(row, x0, req.width, 1.0, name_colour(name), o.name, 1);
      add_box(row, lane.source, o.name, x0, req.width + 1, s, INT64_MAX, o.depth, false);
    }
    // The jobs' marks in their tasks' rows: arrival, deadline, a miss in
    // red, each preemption and block.
    if (lane.is_tasks()) {
      const auto& jobs = src.jobs;
      if (!jobs) P.job_marks_left_out = 1;
      if (jobs)
        jobs->each(q.clock.k0, q.clock.k1, [&](const analysis::JobMark& j) {
          const uint32_t row = task_row(j.task);
          if (row == UINT32_MAX) return;
          if (P.job_marks.size() >= req.max_boxes) return void(++P.job_marks_left_out);
          auto x = [&](uint64_t t) { return float(axis.x(q.clock.ns(t))); };
          P.job_marks.push_back({row, x(j.start), x(j.start), JobMarkRect::Arrival});
          if (j.deadline != analysis::kNoTime) P.job_marks.push_back({row, x(j.deadline), x(j.deadline), JobMarkRect::Deadline});
          if (j.missed) P.job_marks.push_back({row, x(j.deadline), std::max(x(j.end), x(j.deadline) + 2), JobMarkRect::Missed});
        });
      if (jobs)
        jobs->each_interruption(q.clock.k0, q.clock.k1, [&](const analysis::Interruption& i) {
          const uint32_t row = task_row(i.task);
          if (row == UINT32_MAX) return;
          if (P.job_marks.size() >= req.max_boxes) return void(++P.job_marks_left_out);
          const float x = float(axis.x(q.clock.ns(i.at)));
          P.job_marks.push_back({row, x, x, i.blocked ? JobMarkRect::Blocked : JobMarkRect::Preempted});
        });
    }
    // A lock's misuse, a red bar across its row at the event: an acquire
    // while another thread held it, a release by a thread that did not; a
    // priority inversion, a red bar along its foot from where it began to
    // where it last held.
    if (lane.is_locks())
      src.each_misuse(q.clock.k0, q.clock.k1, [&](const analysis::SchedViolation& v) {
        const uint32_t row = lock_row(v.lock);
        if (row == UINT32_MAX) return true;
        if (P.job_marks.size() >= req.max_boxes) return ++P.job_marks_left_out, false;
        const float x = float(axis.x(q.clock.ns(v.ts)));
        if (v.kind == analysis::SchedViolation::PriorityInversion)
          P.job_marks.push_back({row, x, float(axis.x(q.clock.ns(v.end))), JobMarkRect::Inversion});
        else
          P.job_marks.push_back({row, x, x, JobMarkRect::Misuse});
        return true;
      });
    // Locks held across the right edge, from their acquire on.
    for (const auto& [feedlet, h] : q.held) {
      const uint32_t row = lock_row(h.lock);
      if (row == UINT32_MAX) continue;  // (a lock that a growing trace gained since the scene's scan)
      const int64_t s = q.clock.ns(h.start);
      const double x0 = axis.x(s);
      paint.span(row, x0, req.width, 1.0, thread_colour(feedlet), h.lock, 1);
      add_box(row, lane.source, h.lock, x0, req.width + 1, s, INT64_MAX, feedlet, false);
    }
    // Job segments still running at the right edge, in their CPU's row (or their task's).
    for (const index::RunningJob& r : q.edge.jobs) {
      const auto k = std::find(lane.cpu_numbers.begin(), lane.cpu_numbers.end(), r.cpu) - lane.cpu_numbers.begin();
      const uint32_t row = lane.is_tasks() ? task_row(r.task) : cpu_row(uint32_t(k));
      if (row == UINT32_MAX) continue;  // (a CPU that a growing trace gained since the scene's scan)
      const int64_t s = q.clock.ns(r.start);
      const double x0 = axis.x(s);
      paint.span(row, x0, req.width, 1.0, lane.is_tasks() ? cpu_colour(r.cpu) : colour_of(lane.source, r.task), r.task, 1);
      add_box(row, lane.source, r.task, x0, req.width + 1, s, INT64_MAX, 0, false);
    }
    // Complete intervals across the right edge, from their start on; those
    // that end in the last bucket of their stream's answer (by name or by
    // depth) were drawn with it. (A lane has few of them, and few streams.)
    auto drawn_with_its_stream = [&](const index::Item& it) {
      for (const auto& [id, b] : q.buckets) {
        const index::StreamInfo& st = streams[lane.source][size_t(id)];
        const bool mine = (st.kind == StreamKind::Interval && st.key == it.name) ||
                          (st.kind == StreamKind::Depth && st.key == std::min(it.depth, index::kDepthStreams - 1));
        if (mine) return b.shift < 64 && it.end >> b.shift <= q.clock.k1 >> b.shift;
      }
      return false;
    };
    for (const index::Item& it : q.edge.spans) {
      if (!depth_rows) break;
      if (drawn_with_its_stream(it)) continue;
      const int64_t s = q.clock.ns(it.start);
      const double x0 = axis.x(s);
      const uint32_t row = depth_row(it.depth);
      paint.span(row, x0, req.width, 1.0, colour_of(lane.source, it.name), it.name, 1);
      add_box(row, lane.source, it.name, x0, req.width + 1, s, q.clock.ns(it.end), it.depth, false);
    }
  }

  // 4. Pack the rows for the GPU.
  P.rgba.assign(size_t(P.rows) * P.columns, 0);
  P.envelope.assign(size_t(P.rows) * P.columns * 2, std::numeric_limits<float>::quiet_NaN());
  P.top_name.assign(size_t(P.rows) * P.columns, 0);
  P.count.assign(size_t(P.rows) * P.columns, 0);
  P.counter_range.assign(P.rows, {0.0, 0.0});
  for (uint32_t r = 0; r < P.rows; ++r) {
    const size_t base = size_t(r) * P.columns;
    if (req.layout.rows[r].kind == Row::Counter) {
      if (cmin[r].empty()) continue;
      double a = lo[r], z = hi[r];
      if (!(z > a)) a -= 1, z += 1;  // a flat line sits in the middle
      P.counter_range[r] = {a, z};
      for (uint32_t c = 0; c < P.columns; ++c) {
        if (std::isnan(cmin[r][c])) continue;
        P.envelope[(base + c) * 2] = float((cmin[r][c] - a) / (z - a));
        P.envelope[(base + c) * 2 + 1] = float((cmax[r][c] - a) / (z - a));
      }
      continue;
    }
    const Cell* cr = paint.row(r);
    for (uint32_t c = 0; c < P.columns; ++c) {
      P.rgba[base + c] = pack(cr[c]);
      P.top_name[base + c] = cr[c].top;
      P.count[base + c] = cr[c].count;
    }
  }

  // 5. Messages and lost data.
  std::map<std::pair<uint32_t, uint32_t>, const Layout::LaneRows*> lane_of;
  std::unordered_set<const analysis::CrossMessage*> drawn_across;  // messages between traces drawn
  bool bundle_between = false;  // some trace was bundled: those between traces are too
  for (const Layout::LaneRows& lr : req.layout.lanes) {
    const Lane& l = scene.lanes()[lr.lane];
    lane_of[{l.source, l.feedlet}] = &lr;
  }
  auto mid_y = [&](const Layout::LaneRows* lr) { return lr->y0 + req.layout.rows[lr->first].h * 0.5f; };
  if (req.message_density) P.message_density.assign(P.columns, 0);
  for (uint32_t s = 0; s < scene.sources().size(); ++s) {
    const index::TraceIndex& ix = *scene.sources()[s].index;
    const ClockWindow cw(scene.sources()[s].catalog->clock, req.t0, req.t1);
    if (req.message_density) {
      // Every lane's sends (a stream a lane and channel), counted in buckets
      // no wider than a column, each into the column of its start.
      const double ticks_per_column = double(cw.k1 - cw.k0) / std::max(1.0, req.width);
      const uint32_t shift = ticks_per_column >= 2 ? uint32_t(std::floor(std::log2(ticks_per_column))) : 0;
      const auto streams = ix.streams();  // (a copy a call)
      for (size_t id = 0; id < streams.size(); ++id) {
        if (streams[id].kind != index::StreamKind::Send) continue;
        const index::Buckets b = ix.query_shift(int(id), cw.k0, cw.k1, shift);
        for (const index::Node& n : b.nodes) {
          if (!n.count) continue;
          const int64_t c = int64_t(std::floor(axis.x(cw.ns(n.bucket << b.shift))));
          P.message_density[size_t(std::clamp<int64_t>(c, 0, P.columns - 1))] += n.count;
        }
      }
    }
    // The messages of the lanes shown (window_messages.hpp); past the arrow
    // budget, bundles. (Bundles read every message of the window: pictures
    // at rest only, as a headless render's; one drawn while the view moves,
    // or follows a live source, stays as cheap as the arrows' look.)
    MessageLook look(ix, req.message_filter.get());
    auto shown = [&](uint32_t feedlet) -> const Layout::LaneRows* {
      auto it = lane_of.find({s, feedlet});
      return it == lane_of.end() ? nullptr : it->second;
    };
    const ShownLane is_shown = [&](uint32_t feedlet) { return shown(feedlet) != nullptr; };
    WindowMessages window = window_messages(scene, s, cw, is_shown, look, req.max_arrows);
    if (window.over_budget) {
      P.arrows_left_out += window.at_least;
      if (req.stop && req.stop->load(std::memory_order_relaxed)) {  // a newer request: this picture is moot
        P.stopped = true;
        return P;
      }
      if (req.decode_per_column >= kAtRestDecodePerColumn) {
        const MessageEnds ends = [&](const index::Flow& f) {
          return shown(f.src) && shown(f.dst) ? std::pair<int, int>(int(f.src), int(f.dst)) : std::pair<int, int>(-1, -1);
        };
        const Bundled b = bundle_messages(
            ix, cw, ends, look, req.max_bundled, req.max_arrows,
            [&](uint64_t ticks) { return axis.x(cw.ns(ticks)); }, req.width);
        for (const LaneBundle& x : b.bundles)
          P.bundles.push_back({float(x.at0), mid_y(shown(uint32_t(x.from))), float(x.at1), mid_y(shown(uint32_t(x.to))), x.count, s});
        P.bundled += b.messages, P.bundles_left_out += b.left_out, P.over_cap |= b.over_cap;
        bundle_between = true;
      } else {
        P.bundles_wait = true;
      }
    }
    ArrowStyle style(scene, s, window.flows, req.rule_verdicts.get(), look);
    for (const index::Flow& f : window.flows) {
      const Layout::LaneRows *a = shown(f.src), *b = shown(f.dst);
      const bool sent = f.flags & index::kFlowSent, received = f.flags & index::kFlowReceived;
      const int64_t send = sent ? cw.ns(f.send_ts) : 0, recv = received ? cw.ns(f.recv_ts) : 0;
      const uint32_t colour = style.colour(f);
      int64_t t_send = 0, t_recv = 0;
      bool again = false;
      if (sent && received) {
        if (!a || !b) continue;
        P.arrows.push_back({float(axis.x(send)), mid_y(a), float(axis.x(recv)), mid_y(b), 0, send, recv, s, f, colour});
      } else if (const analysis::CrossMessage* m = message_across(scene, s, f, drawn_across, t_send, t_recv, again)) {
        auto from = lane_of.find({m->send_trace, m->send.src}), to = lane_of.find({m->recv_trace, m->recv.dst});
        if (again || from == lane_of.end() || to == lane_of.end()) continue;
        P.arrows.push_back({float(axis.x(t_send)), mid_y(from->second), float(axis.x(t_recv)), mid_y(to->second), 0,
                            t_send, t_recv, m->send_trace, m->send, colour});
      } else if (sent) {
        if (!a) continue;
        // A stub toward the queue it was sent to (the lane its channel's
        // other messages reach), 24 px; down and right where none is known.
        const float x = float(axis.x(send)), y = mid_y(a);
        float dy = 10, dx = 10;
        const std::optional<uint32_t> queue = style.queue(f.channel);
        if (const Layout::LaneRows* q = queue ? shown(*queue) : nullptr; q && q != a) {
          const float to = mid_y(q) - y, len = std::sqrt(to * to + 400);
          dx = 20 * 24 / len, dy = to * 24 / len;
        }
        P.arrows.push_back({x, y, x + dx, y + dy, 1, send, 0, s, f, colour});
      } else {
        if (!b) continue;
        const float x = float(axis.x(recv)), y = mid_y(b);
        P.arrows.push_back({x - 10, y - 10, x, y, 2, 0, recv, s, f, colour});
      }
    }
    for (const Gap& g : scene.sources()[s].gaps) {
      if (g.t1 < req.t0 || g.t0 > req.t1) continue;
      double x0 = axis.x(g.t0), x1 = axis.x(g.t1);
      if (x1 - x0 < 2) x0 -= 1, x1 += 1;  // a loss is never too small to see
      for (const Layout::LaneRows& lr : req.layout.lanes) {
        const Lane& l = scene.lanes()[lr.lane];
        if (l.source == s && (g.feedlet == Gap::kAllFeedlets || g.feedlet == l.feedlet))
          P.gaps.push_back({float(std::max(x0, -2.0)), float(std::min(x1, req.width + 2)), lr.y0, lr.y1, g.events});
      }
    }
  }
  // Past the budget, the messages between the traces too (each trace's
  // bundles leave them out: their halves are orphans there).
  if (bundle_between && scene.across) {
    auto slot = [&](uint32_t s, uint32_t feedlet) {
      auto it = lane_of.find({s, feedlet});
      return it == lane_of.end() ? -1 : int(it->second - req.layout.lanes.data());
    };
    const Bundled b = bundle_across(
        scene, req.t0, req.t1,
        [&](const analysis::CrossMessage& m) {
          return std::pair<int, int>(slot(m.send_trace, m.send.src), slot(m.recv_trace, m.recv.dst));
        },
        req.max_arrows, [&](int64_t ns) { return axis.x(ns); }, req.width, &drawn_across);
    const auto& lanes = req.layout.lanes;
    for (const LaneBundle& x : b.bundles)
      P.bundles.push_back({float(x.at0), mid_y(&lanes[size_t(x.from)]), float(x.at1), mid_y(&lanes[size_t(x.to)]), x.count, 0});
    P.bundled += b.messages, P.bundles_left_out += b.left_out;
  }
  // The clock sync messages between the traces in flight over the window
  // (either way: one that arrives early once aligned too), lane to lane: at
  // most a quarter of the arrow budget (they are a few a second); past that
  // none, and said. By send: the look starts a longest flight before.
  if (scene.sync && req.max_arrows > 0) {
    const size_t most = std::max<size_t>(1, req.max_arrows / 4), before = P.arrows.size();
    const std::vector<analysis::SyncArrow>& all = scene.sync->arrows;
    auto it = std::lower_bound(all.begin(), all.end(), req.t0 - scene.sync->longest_flight,
                               [](const analysis::SyncArrow& m, int64_t t) { return m.send_ns < t; });
    for (; it != all.end() && it->send_ns <= req.t1 + scene.sync->longest_flight; ++it) {
      const analysis::SyncArrow& m = *it;
      if (std::max(m.send_ns, m.recv_ns) < req.t0 || std::min(m.send_ns, m.recv_ns) > req.t1) continue;
      auto from = lane_of.find({m.send_trace, m.send_feedlet}), to = lane_of.find({m.recv_trace, m.recv_feedlet});
      if (from == lane_of.end() || to == lane_of.end()) continue;
      if (P.arrows.size() - before >= most) {  // (more than can be told apart: none)
        P.sync_left_out = most + 1;
        P.arrows.resize(before);
        break;
      }
      index::Flow none;
      P.arrows.push_back({float(axis.x(m.send_ns)), mid_y(from->second), float(axis.x(m.recv_ns)), mid_y(to->second), 3,
                          m.send_ns, m.recv_ns, m.send_trace, none, kSyncColour});
    }
  }
  // Jobs that migrated: dashed, from the end of a job's segment in its
  // CPU's row to the start of its next in the other CPU's (the first row
  // of each CPU in the picture; a trace's CPUs may be rows of several lanes).
  for (uint32_t source = 0; source < scene.sources().size(); ++source) {
    const auto& jobs = scene.sources()[source].jobs;
    if (!jobs || jobs->migrations.empty()) continue;
    std::map<uint32_t, float> cpu_y;  // cpu -> its row's middle
    for (const Row& row : req.layout.rows) {
      const Lane& l = scene.lanes()[row.lane];
      if (row.kind == Row::Cpu && l.source == source) cpu_y.try_emplace(l.cpu_numbers[row.index], row.y + row.h / 2);
    }
    if (cpu_y.size() < 2) continue;
    const ClockWindow clock(scene.sources()[source].catalog->clock, req.t0, req.t1);
    jobs->each_migration(clock.k0, clock.k1, [&](const analysis::Migration& m) {
      auto from = cpu_y.find(m.from_cpu), to = cpu_y.find(m.to_cpu);
      if (from == cpu_y.end() || to == cpu_y.end()) return;
      if (P.migrations.size() >= req.max_arrows) return void(++P.migrations_left_out);
      P.migrations.push_back({float(axis.x(clock.ns(m.left))), from->second, float(axis.x(clock.ns(m.arrived))), to->second});
    });
  }
  for (size_t i = 0; i < queries.size(); ++i) answers[i] = std::move(queries[i].buckets);
  P.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return P;
}

}  // namespace tinescope::render
