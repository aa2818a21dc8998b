// The renderer as a person sees it, headless through EGL: fixed views of a
// fixed trace against reference PNGs; 1 ns intervals 100 hours into a trace
// exactly where they belong; the time axis and its log warp; folding that
// turns an exact period into a solid column and a wrong one into a smear.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <random>

#include "synthetic_trace.hpp"
#include "tinescope/analysis/stream_expr.hpp"
#include "tinescope/render/headless.hpp"
#include "tinescope/render/stream_picture.hpp"
#include "tinescope/render/thread_overview.hpp"
#include "tinescope/import/trace_import.hpp"
#include "tinescope/trace_writer.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

using namespace format;
using render::FigureParams;

std::string temp_dir() { return scratch_dir(); }

std::string save(const TraceBytes& trace, const std::string& name) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << trace.out;
  return path;
}

// A trace of one feedlet from (begin ts, end ts, name) triples.
std::string write_intervals(const std::string& name, const std::vector<std::tuple<uint64_t, uint64_t, uint32_t>>& iv,
                            const std::vector<std::string>& names) {
  TraceBytes trace = named_trace(names);
  ChunkBuilder cb;
  cb.feedlet = 1;
  for (auto [b, e, n] : iv) {
    uint8_t* p = cb.begin(kIntervalBegin, b);
    p = ChunkBuilder::put_u64(p, n);
    cb.end(p);
    p = cb.begin(kIntervalEnd, e);
    p = ChunkBuilder::put_u64(p, n);
    cb.end(p);
    if (cb.full()) trace.flush(cb);
  }
  trace.flush(cb);
  return save(trace, name);
}

std::unique_ptr<render::HeadlessRenderer> headless(int w, int h) {
  std::string error;
  auto r = render::HeadlessRenderer::create(w, h, error);
  EXPECT_TRUE(r) << error;
  return r;
}

uint32_t pixel(const std::vector<uint8_t>& px, int w, int x, int y) {
  const uint8_t* p = &px[(size_t(y) * w + x) * 4];
  return p[0] | p[1] << 8 | p[2] << 16;
}
bool is_background(uint32_t c) { return c == (render::kBackground & 0xffffff); }
// The scope of a scene's first lane from its start, `strips` strips of 8 px
// (from y 22) in a plot 1024 px wide (from x 150): its pixels (none if no renderer).
constexpr int kScopeWidth = 1174;
std::vector<uint8_t> draw_scope(const render::Scene& scene, double period_ns, uint32_t fold, int strips) {
  auto scope = headless(kScopeWidth, 22 + strips * 8);
  if (!scope) return {};
  FigureParams s;
  s.type = FigureParams::Scope;
  s.t0 = 0, s.t1 = 1;
  s.period_ns = period_ns;
  s.fold = fold;
  s.strip_px = 8;
  scope->draw(scene, s, {});
  return scope->context().read_rgba();
}

// A timeline of [t0, t1] ns drawn headless at w x h, as a person sees it:
// its pixels (none if no renderer), and where its plot and rows are.
struct DrawnTimeline {
  std::vector<uint8_t> px;
  render::TimelineGeometry g;
  render::Layout layout;
};
DrawnTimeline draw_timeline(const render::Scene& scene, int w, int h, int64_t t0, int64_t t1) {
  DrawnTimeline d;
  auto r = headless(w, h);
  if (!r) return d;
  FigureParams f;
  f.t0 = t0, f.t1 = t1;
  r->draw(scene, f, {});
  d.px = r->context().read_rgba();
  d.g = render::TimelineGeometry::of({0, 0, float(w), float(h)});
  d.layout = render::layout_lanes(scene, render::layout_options(f));
  return d;
}

int ink(uint32_t c) {  // how far a pixel is from the background
  const uint32_t b = render::kBackground;
  int d = 0;
  for (int k = 0; k < 24; k += 8) d = std::max(d, std::abs(int(c >> k & 255) - int(b >> k & 255)));
  return d;
}

TEST(TimeAxis, LinearIsExactAndWarpKeepsOrderAndEnds) {
  const int64_t t0 = 360'000'000'000'000;  // 100 h in
  render::TimeAxis a(t0, t0 + 1000, 1000);
  EXPECT_DOUBLE_EQ(a.x(t0 + 1), 1.0);
  EXPECT_EQ(a.time(500.5), t0 + 500);
  // Warp: a burst of 10 events 1 ns apart, then a gap of 900 ns.
  std::vector<int64_t> knots;
  for (int i = 0; i < 10; ++i) knots.push_back(t0 + 50 + i);
  knots.push_back(t0 + 950);
  render::TimeAxis w(t0, t0 + 1000, 1000);
  w.warp(knots, 0.1);
  EXPECT_FALSE(w.linear());
  EXPECT_DOUBLE_EQ(w.x(t0), 0);
  EXPECT_DOUBLE_EQ(w.x(t0 + 1000), 1000);
  double last = -1;
  for (int64_t t = t0; t <= t0 + 1000; t += 7) EXPECT_GT(w.x(t), last), last = w.x(t);
  // The burst opens up, the long gap shrinks.
  EXPECT_GT(w.x(t0 + 59) - w.x(t0 + 50), 10 * (a.x(t0 + 59) - a.x(t0 + 50)) / 2);
  EXPECT_LT(w.x(t0 + 950) - w.x(t0 + 59), a.x(t0 + 950) - a.x(t0 + 59));
  for (double x : {3.0, 100.0, 420.0, 999.0}) EXPECT_NEAR(w.x(w.time(x)), x, w.x(w.time(x) + 1) - w.x(w.time(x)) + 1e-9);
  // Each gap takes ln(1 + θΔt)/θ: a 1 ns gap and a 900 ns gap in that ratio.
  const double one = w.x(t0 + 51) - w.x(t0 + 50), big = w.x(t0 + 950) - w.x(t0 + 59);
  EXPECT_NEAR(big / one, std::log1p(0.1 * 891) / std::log1p(0.1 * 1), 1e-6);
}

// Trust, fault 14: times print in the unit that fits their size, with the
// digits the resolution asks ("1.5 us", never "0.000 001 5 s").
TEST(TimeAxis, TimesPrintInTheUnitThatFitsThem) {
  EXPECT_EQ(render::format_time(1500, 100), "1.5 us");
  EXPECT_EQ(render::format_time(1500), "1.500 us");
  EXPECT_EQ(render::format_time(-1500), "-1.500 us");
  EXPECT_EQ(render::format_time(12), "12 ns");
  EXPECT_EQ(render::format_time(0, 1000), "0 us");
  EXPECT_EQ(render::format_time(0, 1000000000), "0 s");
  EXPECT_EQ(render::format_time(2'500'000, 1000), "2.500 ms");
  EXPECT_EQ(render::format_time(3'000'001'500), "3.000 001 500 s");
  EXPECT_EQ(render::format_time(3'000'001'500, 1'000'000), "3.000 s");
  EXPECT_EQ(render::format_time(INT64_MIN).substr(0, 12), "-9223372036.");
}

TEST(Render, OneNanosecondIntervalsHundredHoursInAreExactlyWhereTheyBelong) {
  const uint64_t T = 100ull * 3600 * 1'000'000'000;  // 100 hours of nanoseconds
  std::vector<std::tuple<uint64_t, uint64_t, uint32_t>> iv = {{1000, 2000, 1}};
  for (uint64_t k = 0; k < 10; ++k) iv.push_back({T + 7 * k, T + 7 * k + 1, 2});
  const std::string trace = write_intervals("precision.tine", iv, {"start", "tick"});
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(trace, error)) << error;
  const int W = 1280, H = 200;
  const auto [px, g, layout] = draw_timeline(scene, W, H, int64_t(T) - 5, int64_t(T) + 75);  // 80 ns across the plot
  ASSERT_FALSE(px.empty());
  const float y = g.plot.y + layout.rows[layout.lanes[0].first].y + 3;
  const double px_per_ns = g.plot.w / 80.0;  // 14.125
  for (uint64_t k = 0; k < 10; ++k) {
    const double a = g.plot.x + double(T + 7 * k - (T - 5)) * px_per_ns, b = a + px_per_ns;
    for (int x = int(std::ceil(a)) + 1; x < int(b) - 1; ++x)
      EXPECT_EQ(pixel(px, W, x, int(y)), render::name_colour("tick") & 0xffffff) << "interval " << k << " x " << x;
    // Between two ticks (6 ns of nothing) the lane is empty.
    for (int x = int(b) + 2; x < int(a + 7 * px_per_ns) - 2; ++x)
      EXPECT_TRUE(is_background(pixel(px, W, x, int(y)))) << "gap after " << k << " x " << x;
  }
}

// A lane has a row for each depth of nesting it has, up to the cap: read
// from its depth streams, whatever its names (one name nested 3 deep, 20 names
// 16 deep, one name 30 deep: the last depth stream holds every deeper one).
TEST(Render, ALaneHasARowForEachDepthItNests) {
  std::vector<std::string> names;
  for (int i = 0; i < 20; ++i) names.push_back("f" + std::to_string(i));
  // 50 times, `depth` intervals each inside the one before, the names in turn.
  auto write_nested = [&](uint32_t depth, uint32_t n) {
    TraceBytes trace = named_trace(names);
    ChunkBuilder cb;
    cb.feedlet = 1;
    for (uint64_t k = 0; k < 50; ++k) {
      for (uint32_t d = 0; d < depth; ++d) put_named(cb, kIntervalBegin, k * 1000 + d, 1 + (d + k) % n);
      for (uint32_t d = depth; d-- > 0;) put_named(cb, kIntervalEnd, k * 1000 + 900 - d, 1 + (d + k) % n);
      if (cb.full()) trace.flush(cb);
    }
    trace.flush(cb);
    return save(trace, "rows" + std::to_string(depth) + ".tine");
  };
  // (Trust, fault 6: 24 rows were drawn, and deeper calls overprinted each
  // other in the last; a row a depth now, up to 256, the last labelled.)
  constexpr uint32_t cap = render::Scene::kMaxDepthRows;
  for (auto [depth, n, rows] : {std::tuple{3u, 1u, 3u}, {16u, 20u, 16u}, {30u, 1u, 30u}, {100u, 3u, 100u},
                                {cap + 44, 1u, cap}}) {
    render::Scene scene;
    std::string error;
    ASSERT_TRUE(scene.add_trace(write_nested(depth, n), error)) << error;
    ASSERT_EQ(scene.lanes().size(), 1u);
    EXPECT_EQ(scene.lanes()[0].depth_rows, rows) << "nested " << depth << " deep, " << n << " names";
    EXPECT_EQ(scene.lanes()[0].depths, depth) << "nested " << depth << " deep, " << n << " names";
  }
}

// Intervals never ended (an object alive at the end, a thread's main loop)
// are in no stream: streams are keyed by ends. Their lane still has a row for
// each of their depths, and they are drawn from their start to the edge: on
// a lane that has only them and instants (lane 1), and on one whose ended
// intervals are shallower than its open ones (lane 2).
TEST(Render, IntervalsNeverEndedHaveTheirRowsAndAreDrawn) {
  TraceBytes trace = named_trace({"alive", "inside", "tick", "done"});
  ChunkBuilder cb[2];
  cb[0].feedlet = 1, cb[1].feedlet = 2;
  put_named(cb[0], kIntervalBegin, 1'000, 1);
  put_named(cb[1], kIntervalBegin, 500, 4), put_named(cb[1], kIntervalEnd, 900, 4);
  put_named(cb[1], kIntervalBegin, 2'000, 1), put_named(cb[1], kIntervalBegin, 3'000, 2);
  for (uint64_t t = 5'000; t <= 100'000; t += 100) put_named(cb[0], kInstant, t, 3);
  put_named(cb[1], kInstant, 100'000, 3);
  for (ChunkBuilder& c : cb) trace.flush(c);
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(save(trace, "never-ended.tine"), error)) << error;
  ASSERT_EQ(scene.lanes().size(), 2u);
  for (uint32_t lane : {0u, 1u}) {
    EXPECT_TRUE(scene.lanes()[lane].has_intervals) << lane;
    EXPECT_EQ(scene.lanes()[lane].depth_rows, lane + 1) << lane;
  }

  const int W = 1280, H = 200;
  const auto [px, g, layout] = draw_timeline(scene, W, H, 0, 100'000);
  ASSERT_FALSE(px.empty());
  const double px_per_ns = g.plot.w / 100'000.0;
  for (const auto& [lane, depth, name, start] :
       {std::tuple{0u, 0u, "alive", 1'000.0}, {1u, 0u, "alive", 2'000.0}, {1u, 1u, "inside", 3'000.0}}) {
    const render::Layout::LaneRows& lr = layout.lanes[lane];
    ASSERT_EQ(scene.lanes()[lr.lane].feedlet, lane + 1);
    uint32_t row = lr.first;
    while (row < lr.end && !(layout.rows[row].kind == render::Row::Interval && layout.rows[row].index == depth)) ++row;
    ASSERT_LT(row, lr.end) << name << " in lane " << lane;
    const int y = int(g.plot.y + layout.rows[row].y + 3);
    const int x0 = int(std::ceil(g.plot.x + start * px_per_ns)) + 1, x1 = int(g.plot.x + g.plot.w) - 2;
    for (int x = x0 + 60; x < x1; ++x)  // (past its name, written at its start)
      ASSERT_EQ(pixel(px, W, x, y), render::name_colour(name) & 0xffffff) << name << " in lane " << lane << " x " << x;
  }
}

// `json` (Chrome's format) imported as NAME.tine, and added to `scene`.
void import_into(render::Scene& scene, const std::string& name, const std::string& json) {
  const std::string in = temp_dir() + "/" + name + ".json", trace = temp_dir() + "/" + name + ".tine";
  std::ofstream(in) << json;
  ::unlink(trace.c_str());
  ::unlink((trace + ".idx").c_str());
  import::ImportResult result;
  std::string error;
  ASSERT_TRUE(import::import_trace(in, trace, result, error)) << error;
  ASSERT_TRUE(scene.add_trace(trace, error)) << error;
}

// Trust, fault 14's other half: a Chrome trace's displayTimeUnit is how its
// times print, in the viewer's ruler, read-outs, tooltips and details
// (Scene::time_unit()): every time in ns ("ns") or ms ("ms"), grouped in
// threes; traces that name none, or differ, print in the unit that fits.
TEST(TimeAxis, TimesPrintInTheUnitTheTraceNames) {
  using render::TimeUnit;
  EXPECT_EQ(render::format_time(1500, 1, TimeUnit::Ns), "1 500 ns");
  EXPECT_EQ(render::format_time(-2'500'000'123, 1, TimeUnit::Ns), "-2 500 000 123 ns");
  EXPECT_EQ(render::format_duration(999, TimeUnit::Ns), "999 ns");
  EXPECT_EQ(render::format_time(1500, 1, TimeUnit::Ms), "0.001 500 ms");
  EXPECT_EQ(render::format_time(1500, 1000, TimeUnit::Ms), "0.001 ms");
  EXPECT_EQ(render::format_duration(12'345'678'000, TimeUnit::Ms), "12 345.678 000 ms");
  auto unit_of = [](const std::vector<std::string>& units) {
    render::Scene scene;
    for (size_t i = 0; i < units.size(); ++i) {
      const std::string unit = units[i].empty() ? "" : R"("displayTimeUnit":")" + units[i] + R"(",)";
      import_into(scene, "unit" + std::to_string(i) + units[i],
                  "{" + unit + R"("traceEvents":[{"ph":"X","name":"w","pid":1,"tid":1,"ts":1,"dur":2}]})");
    }
    return scene.time_unit();
  };
  EXPECT_EQ(unit_of({"ns"}), TimeUnit::Ns);
  EXPECT_EQ(unit_of({"ms"}), TimeUnit::Ms);
  EXPECT_EQ(unit_of({""}), TimeUnit::Fit);
  EXPECT_EQ(unit_of({"ns", "ns"}), TimeUnit::Ns);
  EXPECT_EQ(unit_of({"ns", ""}), TimeUnit::Fit);
  EXPECT_EQ(unit_of({"ns", "ms"}), TimeUnit::Fit);
}

// Items whose end was not recorded are hatched, never drawn as if they had
// ended there (trust, fault 5): frames and a job segment open at dropped
// events, cut at the next chunk; a frame never ended, closed with the outer
// one; and, at a zoom where they are too short to draw, where they end. The
// items that ended as recorded are not hatched.
TEST(Render, ItemsWhoseEndWasNotRecordedAreHatched) {
  TraceBytes trace = named_trace({"outer", "mid", "inner", "work", "job", "a", "b"});
  ChunkBuilder cb;
  cb.feedlet = 1;
  put_named(cb, kIntervalBegin, 1'000, 1);
  put_job(cb, kJobStart, 1'500, 5, 1, 0);
  put_named(cb, kIntervalBegin, 2'000, 2);
  put_named(cb, kIntervalBegin, 3'000, 3), put_named(cb, kIntervalEnd, 4'000, 3);
  put_named(cb, kIntervalBegin, 5'000, 3);
  trace.flush(cb);
  cb.pending_drops = 7;  // outer, mid, inner and the job are cut at 10 us
  put_named(cb, kIntervalBegin, 10'000, 4), put_named(cb, kIntervalEnd, 11'000, 4);
  put_named(cb, kIntervalEnd, 12'000, 1);  // after the gap: unmatched
  put_named(cb, kIntervalBegin, 20'000, 1), put_named(cb, kIntervalBegin, 21'000, 2);
  put_named(cb, kIntervalEnd, 30'000, 1);  // mid never ended: cut with outer
  // 40..80 us: 2 000 short frames b, each never ended, cut with its a.
  for (uint64_t t = 40'000; t < 80'000; t += 20)
    put_named(cb, kIntervalBegin, t, 6), put_named(cb, kIntervalBegin, t + 2, 7), put_named(cb, kIntervalEnd, t + 5, 6);
  trace.flush(cb);
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(save(trace, "cut.tine"), error)) << error;
  ASSERT_EQ(scene.lanes().size(), 2u);  // the thread's, and its jobs by task
  EXPECT_TRUE(scene.lanes()[0].is_tasks());

  const uint32_t W = 800;
  auto picture = [&](int64_t t0, int64_t t1, uint32_t budget) {
    FigureParams f;
    f.t0 = t0, f.t1 = t1;
    render::TimelineRequest req = render::timeline_request(scene, f, render::TimelineGeometry::of({0, 0, float(W) + 150, 300}));
    req.decode_per_column = budget;
    return render::build_timeline(scene, req);
  };
  auto row_of = [](const render::TimelinePicture& p, render::Row::Kind kind, uint32_t depth) {
    for (uint32_t r = 0; r < p.rows; ++r) {
      const render::Row& row = p.request.layout.rows[r];
      if (row.kind == kind && (kind != render::Row::Interval || row.index == depth)) return r;
    }
    return UINT32_MAX;
  };
  {
    const render::TimelinePicture p = picture(0, 35'000, render::kAtRestDecodePerColumn);
    const double per_ns = p.columns / 35'000.0;
    struct Want { render::Row::Kind kind; uint32_t depth; int64_t start, end; bool cut; };
    const Want want[] = {{render::Row::Interval, 0, 1'000, 10'000, true}, {render::Row::Interval, 1, 2'000, 10'000, true},
                         {render::Row::Interval, 2, 5'000, 10'000, true}, {render::Row::Cpu, 0, 1'500, 10'000, true},
                         {render::Row::Task, 0, 1'500, 10'000, true},  // the same job segment, in its task's row
                         {render::Row::Interval, 1, 21'000, 30'000, true}, {render::Row::Interval, 2, 3'000, 4'000, false},
                         {render::Row::Interval, 0, 10'000, 11'000, false}, {render::Row::Interval, 0, 20'000, 30'000, false}};
    size_t cuts = 0;
    for (const Want& w : want) {
      const uint32_t row = row_of(p, w.kind, w.depth);
      ASSERT_NE(row, UINT32_MAX) << "depth " << w.depth;
      const render::Box* box = nullptr;
      for (const render::Box& b : p.boxes)
        if (b.row == row && b.start == w.start && b.end == w.end) box = &b;
      ASSERT_TRUE(box) << "a box at " << w.start << ".." << w.end << " in row " << row;
      EXPECT_EQ(box->truncated, w.cut) << "the box at " << w.start << ".." << w.end;
      bool hatched = false;
      for (const render::CutRect& c : p.cuts)
        hatched |= c.row == row && std::abs(c.x0 - w.start * per_ns) < 1 && std::abs(c.x1 - w.end * per_ns) < 1;
      EXPECT_EQ(hatched, w.cut) << "hatching over " << w.start << ".." << w.end;
      cuts += w.cut;
    }
    EXPECT_EQ(p.cuts.size(), cuts) << "nothing else is hatched";
  }
  // The short cut frames: at rest (decoded) and while moving (from the
  // pyramid), every column of their stretch has a hatch where they end, in
  // b's row only.
  for (uint32_t budget : {render::kAtRestDecodePerColumn, 1u}) {
    const render::TimelinePicture p = picture(40'000, 80'000, budget);
    const uint32_t row_b = row_of(p, render::Row::Interval, 1);
    std::vector<bool> hatched(p.columns);
    for (const render::CutRect& c : p.cuts) {
      EXPECT_EQ(c.row, row_b) << "budget " << budget;
      for (int64_t x = std::max<int64_t>(0, int64_t(std::floor(c.x0))); x < std::min<double>(p.columns, c.x1); ++x)
        hatched[size_t(x)] = true;
    }
    for (uint32_t c = 1; c + 1 < p.columns; ++c) EXPECT_TRUE(hatched[c]) << "column " << c << ", budget " << budget;
  }
}

// A counter holds its last value (trust, fault 2): a window that falls
// between two samples draws the value held across its whole row, and one
// with a sample in it, the old value up to it and the new one after; past
// the last sample, the value holds to the end of the trace. (Before, the
// row was drawn only between the first and last sample inside the window.)
TEST(Render, ACounterHoldsItsValueBetweenSamples) {
  render::Scene scene;
  import_into(scene, "held_counter", R"([{"ph":"X","name":"work","pid":1,"tid":1,"ts":0,"dur":4000},
    {"ph":"C","name":"load","pid":1,"tid":1,"ts":1000,"args":{"v":10}},
    {"ph":"C","name":"load","pid":1,"tid":1,"ts":2000,"args":{"v":20}},
    {"ph":"C","name":"load","pid":1,"tid":1,"ts":3000,"args":{"v":30}}])");
  const uint32_t W = 400;
  // The value at column c of the counter row, from the picture's envelope
  // (NaN: nothing drawn; the column of a step holds both values: its max).
  auto values = [&](int64_t t0, int64_t t1) {
    FigureParams f;
    f.t0 = t0, f.t1 = t1;
    const render::TimelineRequest req =
        render::timeline_request(scene, f, render::TimelineGeometry::of({0, 0, float(W) + 150, 300}));
    const render::TimelinePicture p = render::build_timeline(scene, req);
    std::vector<double> v(p.columns, std::numeric_limits<double>::quiet_NaN());
    for (uint32_t r = 0; r < p.rows; ++r) {
      if (req.layout.rows[r].kind != render::Row::Counter) continue;
      const auto [lo, hi] = p.counter_range[r];
      for (uint32_t c = 0; c < p.columns; ++c) {
        const float a = p.envelope[(size_t(r) * p.columns + c) * 2], z = p.envelope[(size_t(r) * p.columns + c) * 2 + 1];
        if (!std::isnan(a)) v[c] = lo + z * (hi - lo);
        EXPECT_EQ(std::isnan(a), std::isnan(z));
      }
    }
    return v;
  };
  const std::vector<double> between = values(1'400'000, 1'600'000);
  ASSERT_FALSE(between.empty());
  for (size_t c = 0; c < between.size(); ++c) EXPECT_NEAR(between[c], 10, 1e-6) << "column " << c;
  const std::vector<double> across = values(1'500'000, 2'500'000);  // the sample at 2 ms is at the middle
  for (size_t c = 0; c < across.size(); ++c) {
    if (c + 1 < across.size() / 2) {
      EXPECT_NEAR(across[c], 10, 1e-6) << "column " << c;
    } else if (c > across.size() / 2) {
      EXPECT_NEAR(across[c], 20, 1e-6) << "column " << c;
    }
  }
  const std::vector<double> after = values(3'200'000, 3'900'000);  // past the last sample, in the trace
  for (size_t c = 0; c < after.size(); ++c) EXPECT_NEAR(after[c], 30, 1e-6) << "column " << c;
  const std::vector<double> before = values(100'000, 900'000);  // before the first: nothing happened yet
  for (size_t c = 0; c < before.size(); ++c) EXPECT_TRUE(std::isnan(before[c])) << "column " << c;
}

// Trust, fault 7: the arrow limit counts the messages of the lanes shown
// (two lanes chosen of a busy trace got no arrows, for the messages of lanes
// not shown), and a message in flight across the whole window is drawn.
TEST(Render, ArrowsAreThoseOfTheLanesShownAndThoseInFlightAcrossTheWindow) {
  std::string json = R"([{"ph":"X","name":"w","pid":1,"tid":1,"ts":0,"dur":10000},
    {"ph":"X","name":"w","pid":1,"tid":2,"ts":0,"dur":10000},
    {"ph":"X","name":"w","pid":1,"tid":3,"ts":0,"dur":10000},
    {"ph":"X","name":"w","pid":1,"tid":4,"ts":0,"dur":10000},
    {"ph":"s","name":"long","cat":"c","id":"long","pid":1,"tid":1,"ts":100,"bp":"e"},
    {"ph":"f","name":"long","cat":"c","id":"long","pid":1,"tid":2,"ts":9000,"bp":"e"})";
  for (int i = 0; i < 10; ++i)  // lanes 1 and 2: ten messages
    json += R"(,{"ph":"s","name":"m","cat":"a","id":)" + std::to_string(i) + R"(,"pid":1,"tid":1,"ts":)" +
            std::to_string(2000 + i * 10) + R"(,"bp":"e"},{"ph":"f","name":"m","cat":"a","id":)" + std::to_string(i) +
            R"(,"pid":1,"tid":2,"ts":)" + std::to_string(2005 + i * 10) + R"(,"bp":"e"})";
  for (int i = 0; i < 1000; ++i)  // lanes 3 and 4: a thousand
    json += R"(,{"ph":"s","name":"m","cat":"b","id":)" + std::to_string(i) + R"(,"pid":1,"tid":3,"ts":)" +
            std::to_string(2000 + i) + R"(,"bp":"e"},{"ph":"f","name":"m","cat":"b","id":)" + std::to_string(i) +
            R"(,"pid":1,"tid":4,"ts":)" + std::to_string(2000 + i) + R"(,"bp":"e"})";
  render::Scene scene;
  import_into(scene, "arrows", json + "]");
  if (::testing::Test::HasFatalFailure()) return;
  auto picture = [&](int64_t t0, int64_t t1, const std::string& lanes) {
    FigureParams f;
    f.t0 = t0, f.t1 = t1;
    std::string error;
    if (!lanes.empty()) f.lanes = scene.select_lanes(lanes, error);
    EXPECT_TRUE(error.empty()) << error;
    const render::TimelineRequest req =
        render::timeline_request(scene, f, render::TimelineGeometry::of({0, 0, 550, 300}));
    return render::build_timeline(scene, req);
  };
  const int64_t t0 = scene.first_ns();
  // The whole window, lanes 1 and 2: their ten and the long one, though all
  // four lanes hold more than the limit.
  render::TimelinePicture p = picture(t0 + 1'500'000, t0 + 3'500'000, "tid 1,tid 2");
  EXPECT_EQ(p.arrows.size(), 11u);
  EXPECT_EQ(p.arrows_left_out, 0u);
  // All lanes: more than the limit, none drawn, said.
  p = picture(t0 + 1'500'000, t0 + 3'500'000, "");
  EXPECT_TRUE(p.arrows.empty());
  EXPECT_GT(p.arrows_left_out, 800u);
  // Between the long one's send and receive, nothing else in the window: it
  // is drawn from before the left edge to past the right one.
  p = picture(t0 + 5'000'000, t0 + 6'000'000, "tid 1,tid 2");
  ASSERT_EQ(p.arrows.size(), 1u);
  EXPECT_LT(p.arrows[0].x0, 0);
  EXPECT_GT(p.arrows[0].x1, 400);
  // Going to a message (a search hit) at a zoom where its arrow is drawn:
  // the window 2 ms wide around lanes 3 and 4's 500th holds too many.
  const int64_t send = t0 + 2'500'000;
  const auto [w0, w1] = render::message_window(scene, send, send, 2'000'000);
  EXPECT_LT(w0, send);
  EXPECT_GT(w1, send);
  EXPECT_LT(w1 - w0, 2'000'000);
  p = picture(w0, w1, "");
  EXPECT_EQ(p.arrows_left_out, 0u);
  EXPECT_TRUE(std::any_of(p.arrows.begin(), p.arrows.end(), [&](const render::Arrow& a) { return a.send == send; }));
  // The same going to a bookmark on that message (N), and on the long one
  // (sent at 0.1 ms, received at 9 ms): N and P step from the bookmark gone
  // to last (the cursor), not from the middle of a window centred on its
  // message, and a bookmark at a time keeps the zoom.
  const int64_t long_send = t0 + 100'000, long_recv = t0 + 9'000'000, at = t0 + 2'700'000;
  render::Marks marks;
  marks.bookmarks = {at, send, long_send};
  marks.bookmark_messages = {{send, send}, {long_send, long_recv}};
  int64_t to, b0, b1;
  auto go = [&](int direction) {
    const bool went = render::bookmark_window(scene, marks, b0, b1, direction, to, b0, b1);
    if (went) marks.cursor = to;  // (as the viewer does)
    return went;
  };
  b0 = t0, b1 = t0 + 2'000'000;
  ASSERT_TRUE(go(+1));
  EXPECT_EQ(to, send);
  EXPECT_EQ(std::make_pair(b0, b1), std::make_pair(w0, w1));
  p = picture(b0, b1, "");
  EXPECT_TRUE(std::any_of(p.arrows.begin(), p.arrows.end(), [&](const render::Arrow& a) { return a.send == send; }));
  ASSERT_TRUE(go(-1));
  EXPECT_EQ(to, long_send);
  EXPECT_EQ(std::make_pair(b0, b1), render::message_window(scene, long_send, long_recv, w1 - w0));
  p = picture(b0, b1, "tid 1,tid 2");
  EXPECT_TRUE(std::any_of(p.arrows.begin(), p.arrows.end(), [&](const render::Arrow& a) { return a.send == long_send; }));
  EXPECT_FALSE(go(-1)) << "none before the first";
  ASSERT_TRUE(go(+1));
  EXPECT_EQ(to, send) << "the next after the long message's send, not after its window's middle";
  const int64_t zoom = b1 - b0;
  ASSERT_TRUE(go(+1));
  EXPECT_EQ(to, at);
  EXPECT_EQ(b1 - b0, zoom) << "a bookmark at a time keeps the zoom";
  EXPECT_FALSE(go(+1)) << "none after the last";
}

// The analysis panel's figure of an interval stream draws each interval
// where it lies, [start, end) (trust, fault 3: buckets keyed by the end drew
// a 1 px line at each end), and one that runs on past the window too.
TEST(Render, AnIntervalStreamsFigureDrawsEachIntervalFromItsStartToItsEnd) {
  render::Scene scene;
  import_into(scene, "stream_figure", R"([{"ph":"X","name":"work","pid":1,"tid":1,"ts":1000,"dur":2000},
    {"ph":"X","name":"work","pid":1,"tid":1,"ts":3500,"dur":100},
    {"ph":"X","name":"idle","pid":1,"tid":1,"ts":0,"dur":4000}])");
  const index::TraceIndex& ix = *scene.sources()[0].index;
  analysis::Expr e;
  std::string error;
  ASSERT_TRUE(analysis::parse_stream(R"(intervals(name="work"))", e, error)) << error;
  auto s = analysis::DerivedStream::evaluate(ix, e, error);
  ASSERT_TRUE(s) << error;
  const trace::ClockMap& clock = scene.sources()[0].catalog->clock;
  const uint32_t W = 400;
  // Columns covered by a bar, over [t0, t1] ns.
  auto covered = [&](int64_t t0, int64_t t1) {
    const render::TimeAxis axis(t0, t1, W);
    const render::StreamPicture p = render::build_stream_picture(*s, clock, axis, t0, t1, W);
    EXPECT_TRUE(p.intervals);
    std::vector<bool> on(W, false);
    for (const auto& b : p.bars)
      for (uint32_t c = 0; c < W; ++c)
        if (c + 0.5 >= b.x0 && c + 0.5 < b.x1) on[c] = true;
    return on;
  };
  const std::vector<bool> all = covered(0, 4'000'000);  // 10 us a column
  for (uint32_t c = 0; c < W; ++c) {
    const bool inside = (c >= 100 && c < 300) || (c >= 350 && c < 360);
    EXPECT_EQ(all[c], inside) << "column " << c;
  }
  const std::vector<bool> left = covered(0, 2'000'000);  // the first runs on past the right edge
  for (uint32_t c = 0; c < W; ++c) EXPECT_EQ(left[c], c >= 200) << "column " << c;
  // Each interval once: one past the right edge, in the window's last
  // bucket, is not drawn again by the look past the edge (a review finding).
  for (int64_t t1 : {2'000'000, 2'999'000, 3'000'000}) {
    const render::TimeAxis axis(0, t1, W);
    const render::StreamPicture p = render::build_stream_picture(*s, clock, axis, 0, t1, W);
    size_t over = 0;  // bars over the first interval's middle
    for (const auto& b : p.bars) over += b.x0 <= axis.x(2'000'000) && axis.x(2'000'000) < b.x1;
    EXPECT_EQ(over, 1u) << "window to " << t1;
  }
}

// Trust, fault 20: a scope with no period used (t1 - t0) / 100, a nearly
// black picture. Until the period is found by folding, it is the lane's
// typical period: the median start-to-start of its busiest stream, which an
// interruption now and then (a longer gap) does not move.
TEST(Render, AScopeWithNoPeriodFoldsAtTheLanesTypicalPeriod) {
  std::string json = "[";
  uint64_t skipped = 0;
  for (int i = 0; i < 6000; ++i) {
    if (i % 100 == 99) {  // an interruption: one period missing
      ++skipped;
      continue;
    }
    const uint64_t ns = uint64_t(std::llround(i * 45351.5));
    char ev[160];
    std::snprintf(ev, sizeof ev, R"(%s{"ph":"X","name":"audio","pid":1,"tid":1,"ts":%llu.%03llu,"dur":10})",
                  i ? "," : "", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
    json += ev;
  }
  json += R"(,{"ph":"X","name":"other","pid":1,"tid":2,"ts":0,"dur":300000}])";
  render::Scene scene;
  import_into(scene, "typical_period", json);
  if (::testing::Test::HasFatalFailure()) return;
  FigureParams f;
  f.type = FigureParams::Scope;
  f.t0 = scene.first_ns(), f.t1 = scene.last_ns() + 1;
  EXPECT_NEAR(render::default_period_ns(scene, f), 45351.5, 1.0) << skipped << " periods skipped";
  std::string error;
  f.lanes = scene.select_lanes("tid 2", error);
  ASSERT_EQ(f.lanes.size(), 1u) << error;
  EXPECT_NEAR(render::default_period_ns(scene, f), double(f.t1 - f.t0) / 100, 1.0) << "one interval: no period";
}

// An imported trace names its process's lanes after the process; under the
// process's header the names column shows the rest.
TEST(Render, LanesNamedAfterTheirProcessShowTheRestUnderItsHeader) {
  render::Scene scene;
  import_into(scene, "labels", R"([{"ph":"M","pid":1,"tid":1,"name":"process_name","args":{"name":"Browser"}},
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"BrowserMain"}},
{"ph":"X","pid":1,"tid":1,"ts":1,"dur":5,"name":"task"},
{"ph":"C","pid":1,"tid":1,"ts":2,"name":"queue","args":{"n":3}},
{"ph":"X","pid":2,"tid":1,"ts":1,"dur":5,"name":"task"}])");
  if (::testing::Test::HasFatalFailure()) return;
  std::map<std::string, std::string> label;  // name -> label
  for (const render::Lane& l : scene.lanes()) label[l.name] = std::string(l.label());
  EXPECT_EQ(label, (std::map<std::string, std::string>{
                       {"BrowserMain", "BrowserMain"}, {"Browser counters", "counters"}, {"tid 1", "tid 1"}}));
}

// A picture that draws no arrows (the thread list's overviews, max_arrows 0)
// of some of the lanes of a trace with messages is built: the look for the
// shown lanes' messages once widened looked again and again at nothing
// (a review finding: the Threads tab hung on a Chrome trace with flows).
TEST(Render, APictureOfSomeLanesWithNoArrowsOfATraceWithMessagesIsBuilt) {
  render::Scene scene;
  import_into(scene, "no_arrows", R"([{"ph":"X","pid":1,"tid":1,"ts":0,"dur":10,"name":"send"},
{"ph":"s","pid":1,"tid":1,"ts":2,"name":"m","id":"1"},{"ph":"X","pid":1,"tid":2,"ts":20,"dur":10,"name":"recv"},
{"ph":"f","bp":"e","pid":1,"tid":2,"ts":22,"name":"m","id":"1"},{"ph":"X","pid":1,"tid":3,"ts":0,"dur":40,"name":"other"}])");
  if (::testing::Test::HasFatalFailure()) return;
  ASSERT_EQ(scene.lanes().size(), 3u);
  render::TimelineRequest r;
  r.t0 = scene.first_ns(), r.t1 = scene.last_ns() + 1, r.width = 100, r.max_arrows = 0, r.max_bundled = 0;
  render::LayoutOptions o;
  o.lanes = {0};
  r.layout = render::layout_lanes(scene, o);
  const render::TimelinePicture p = render::build_timeline(scene, r);
  EXPECT_TRUE(p.arrows.empty());
  const render::ThreadOverview ov = render::thread_overview(scene, 1, 50);
  ASSERT_EQ(ov.functions.size(), 1u);
  EXPECT_EQ(ov.functions[0].calls, 1u);
}

// Lanes chosen by a spec that names none say so (a review finding: "," gave
// no lanes and no error), and a thread named by digits alone is chosen by
// its name where no lane has that number.
TEST(Render, LanesChosenByNothingSaySoAndDigitNamesAreNames) {
  render::Scene scene;
  import_into(scene, "digit_names", R"([{"ph":"M","pid":1,"tid":7,"name":"thread_name","args":{"name":"42"}},
{"ph":"X","pid":1,"tid":7,"ts":1,"dur":5,"name":"w"},{"ph":"X","pid":1,"tid":8,"ts":1,"dur":5,"name":"w"}])");
  if (::testing::Test::HasFatalFailure()) return;
  std::string error;
  EXPECT_TRUE(scene.select_lanes(",", error).empty());
  EXPECT_FALSE(error.empty());
  error.clear();
  const std::vector<uint32_t> named = scene.select_lanes("42", error);
  ASSERT_EQ(named.size(), 1u) << error;
  EXPECT_EQ(scene.lanes()[named[0]].name, "42");
}

// Trust, fault 21: the names' column can be widened (the viewer drags its
// border) so that a long name can be read; it keeps a plot to draw in.
TEST(Render, TheNamesColumnWidensAndKeepsAPlot) {
  using G = render::TimelineGeometry;
  const render::Rect f{10, 0, 1000, 500};
  EXPECT_EQ(G::of(f).names.w, G::kNamesPx);
  const G wide = G::of(f, 400);
  EXPECT_EQ(wide.names.w, 400);
  EXPECT_EQ(wide.plot.x, 410);
  EXPECT_EQ(wide.plot.w, 600);
  EXPECT_EQ(wide.ruler.x, 410);
  EXPECT_EQ(G::of(f, 5).names.w, G::kMinNamesPx);
  EXPECT_EQ(G::of(f, 5000).plot.w, G::kMinPlotPx);
  EXPECT_EQ(G::of({0, 0, 120, 100}, 500).names.w, G::kMinNamesPx);
  // A picture laid out for the wider column draws in its plot's columns.
  render::FigureParams p;
  p.names_px = 400;
  EXPECT_EQ(render::TimelineGeometry::of(f, p.names_px).plot.w, 600);
}

// Trust, fault 9: threads of one process that share a name get labels told
// apart by their tids; the same name in two processes is told apart by the
// processes' headers.
TEST(Render, LanesThatShareANameAreToldApartByTheirTids) {
  render::Scene scene;
  import_into(scene, "twins", R"([{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"IOThread"}},
{"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"IOThread"}},
{"ph":"M","pid":4,"tid":5,"name":"thread_name","args":{"name":"IOThread"}},
{"ph":"X","pid":1,"tid":2,"ts":1,"dur":5,"name":"read"},
{"ph":"X","pid":1,"tid":3,"ts":1,"dur":5,"name":"read"},
{"ph":"X","pid":4,"tid":5,"ts":1,"dur":5,"name":"read"}])");
  if (::testing::Test::HasFatalFailure()) return;
  std::multiset<std::string> labels;
  for (const render::Lane& l : scene.lanes()) labels.insert(l.group + ": " + l.label());
  EXPECT_EQ(labels, (std::multiset<std::string>{"pid 1: IOThread (tid 2)", "pid 1: IOThread (tid 3)",
                                                 "pid 4: IOThread"}));
}

// Lanes in the order the trace gives (Chrome's process_sort_index and
// thread_sort_index, as Catapult orders them): processes it orders first,
// lower first, then the rest by name; in a process, the threads it orders
// first, then the rest as they came.
TEST(Render, LanesFollowTheTracesSortIndices) {
  render::Scene scene;
  import_into(scene, "sorted", R"([
{"ph":"X","pid":1,"tid":1,"ts":1,"dur":5,"name":"paint"},
{"ph":"X","pid":4,"tid":40,"ts":1,"dur":5,"name":"a"},
{"ph":"X","pid":2,"tid":10,"ts":1,"dur":5,"name":"read"},
{"ph":"X","pid":2,"tid":11,"ts":1,"dur":5,"name":"loop"},
{"ph":"X","pid":2,"tid":12,"ts":1,"dur":5,"name":"work"},
{"ph":"X","pid":3,"tid":30,"ts":1,"dur":5,"name":"draw"},
{"ph":"M","pid":1,"tid":1,"name":"process_name","args":{"name":"Renderer"}},
{"ph":"M","pid":4,"tid":40,"name":"process_name","args":{"name":"Alpha"}},
{"ph":"M","pid":2,"tid":10,"name":"process_name","args":{"name":"Browser"}},
{"ph":"M","pid":3,"tid":30,"name":"process_name","args":{"name":"GPU"}},
{"ph":"M","pid":2,"tid":10,"name":"process_sort_index","args":{"sort_index":-6}},
{"ph":"M","pid":3,"tid":30,"name":"process_sort_index","args":{"sort_index":5}},
{"ph":"M","pid":2,"tid":11,"name":"thread_sort_index","args":{"sort_index":-1}},
{"ph":"M","pid":2,"tid":10,"name":"thread_name","args":{"name":"IO"}},
{"ph":"M","pid":2,"tid":11,"name":"thread_name","args":{"name":"CrBrowserMain"}},
{"ph":"M","pid":2,"tid":12,"name":"thread_name","args":{"name":"Worker"}}])");
  if (::testing::Test::HasFatalFailure()) return;
  std::vector<std::string> order;
  for (const render::Lane& l : scene.lanes()) order.push_back(l.group + "/" + l.name);
  EXPECT_EQ(order, (std::vector<std::string>{"Browser/CrBrowserMain", "Browser/IO", "Browser/Worker", "GPU/tid 30",
                                             "Alpha/tid 40", "Renderer/tid 1"}));
}

TEST(Render, FoldingAnExactPeriodGivesAColumnAndAWrongOneASmear) {
  // A task every 45351.474 ns (22.05 kHz) lasting 4 us, for 1024 * 20 periods.
  const double period = 1e9 / 22050;
  std::vector<std::tuple<uint64_t, uint64_t, uint32_t>> iv;
  const uint64_t base = 1'000'000;
  for (uint64_t n = 0; n < 1024 * 20; ++n) {
    const uint64_t s = base + uint64_t(std::llround(double(n) * period));
    iv.push_back({s + 10'000, s + 14'000, 1});
  }
  const std::string trace = write_intervals("periodic.tine", iv, {"audio.sample"});
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(trace, error)) << error;
  const int W = 1174, H = 22 + 20 * 8;  // plot 1024 wide, 20 strips of 8 px
  auto r = headless(W, H);
  ASSERT_TRUE(r);
  FigureParams f;
  f.type = FigureParams::Scope;
  f.t0 = int64_t(base), f.t1 = f.t0 + 1;
  f.period_ns = period;
  f.fold = 1024;
  f.strip_px = 8;
  auto column_profile = [&](double p) {
    f.period_ns = p;
    r->draw(scene, f, {});
    const std::vector<uint8_t> px = r->context().read_rgba();
    std::vector<int> best(20, 0), wide(20, 0);
    for (int s = 0; s < 20; ++s) {
      const int y = 22 + s * 8 + 3;
      for (int x = 150; x < W; ++x) best[size_t(s)] = std::max(best[size_t(s)], ink(pixel(px, W, x, y)));
      for (int x = 150; x < W; ++x) wide[size_t(s)] += ink(pixel(px, W, x, y)) * 2 > best[size_t(s)];
    }
    return std::make_pair(best, wide);
  };
  const int full = ink(render::name_colour("audio.sample") & 0xffffff);
  auto [best, wide] = column_profile(period);
  for (int s = 0; s < 20; ++s) {
    EXPECT_GE(best[size_t(s)], full * 9 / 10) << "strip " << s;                 // dense colour...
    EXPECT_LE(wide[size_t(s)], int(1024 * 4000 / period) + 3) << "strip " << s;  // ...in one 4 us column
  }
  auto [smear_best, smear_wide] = column_profile(period * 1.001);  // 45 ns off: 46 us of drift per strip
  for (int s = 0; s < 20; ++s) {
    EXPECT_LE(smear_best[size_t(s)], full / 3) << "strip " << s;
    EXPECT_GE(smear_wide[size_t(s)], 700) << "strip " << s;
  }
}

TEST(Render, TheOneSlowIntervalStandsOutWhereItsStreamIsSummarised) {
  // One feedlet: a counter sampled every 4 us (so the lane is too busy to
  // decode at this zoom) and a 100 us task every 1 ms, one of which takes
  // 5 ms. Over a 1 s window (781 us a column) the task stream answers from
  // its leaf level, buckets of ~190 tasks: a faint smear, in which the slow
  // task must still be drawn whole.
  TraceBytes trace = named_trace({"work", "load"});
  ChunkBuilder cb;
  cb.feedlet = 1;
  auto put = [&](uint16_t type, uint64_t ts, uint64_t name, const int64_t* value) {
    uint8_t* p = cb.begin(type, ts);
    p = ChunkBuilder::put_u64(p, name);
    if (value) p = ChunkBuilder::put_i64(p, *value);
    cb.end(p);
    if (cb.full()) trace.flush(cb);
  };
  const uint64_t T = 1'000'000'000, slow = 500'000'000;
  uint64_t sample = 0;
  for (uint64_t task = 0; task < T; task += 1'000'000) {
    const uint64_t end = task + (task == slow ? 5'000'000 : 100'000);
    for (; sample < end; sample += 4'000) {
      if (sample == task) put(kIntervalBegin, task, 1, nullptr);
      const int64_t v = int64_t(sample / 4'000 % 97);
      put(kCounterInt, sample + 1, 2, &v);
    }
    put(kIntervalEnd, end, 1, nullptr);
  }
  trace.flush(cb);

  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(save(trace, "slow-one.tine"), error)) << error;
  const int W = 1430, H = 200;
  auto r = headless(W, H);
  ASSERT_TRUE(r);
  FigureParams f;
  f.t0 = 0, f.t1 = int64_t(T);
  r->draw(scene, f, {});
  const render::TimelineGeometry g = render::TimelineGeometry::of({0, 0, float(W), float(H)});
  const index::TraceIndex& ix = *scene.sources()[0].index;
  const int stream = ix.find_stream(index::StreamKind::Interval, 1, "work");
  ASSERT_GE(stream, 0);
  const index::Buckets answer = ix.query(stream, 0, T, uint32_t(g.plot.w));
  ASSERT_FALSE(answer.from_events);  // summarised, not decoded...
  ASSERT_GT(double(uint64_t(1) << answer.shift), 20 * double(T) / g.plot.w);  // ...in buckets of many columns
  const std::vector<uint8_t> px = r->context().read_rgba();
  const render::Layout layout = render::layout_lanes(scene, render::layout_options(f));
  const int y = int(g.plot.y + layout.rows[layout.lanes[0].first].y + 3);
  const double px_per_ns = g.plot.w / double(T);
  const uint32_t work = render::name_colour("work") & 0xffffff;
  const double a = g.plot.x + double(slow) * px_per_ns, b = a + 5e6 * px_per_ns;
  for (int x = int(std::ceil(a)) + 1; x < int(b) - 1; ++x) EXPECT_EQ(pixel(px, W, x, y), work) << "slow task, x " << x;
  // Around it the same stream is a fainter smear: the 5 ms stands out.
  for (int x : {int(a) - 40, int(b) + 40}) {
    EXPECT_NE(pixel(px, W, x, y), work) << "x " << x;
    EXPECT_GT(ink(pixel(px, W, x, y)), 0) << "x " << x;
  }
}

// A complete interval is written at its end, and streams are keyed by it: one
// that runs on past the window's right edge is in none of the window's
// buckets and on no stack of begin/end pairs. The timeline and the fold draw
// it from its start on all the same (TraceIndex::spanning). Its feedlet
// writes an instant every 100 ns, so that it spans many segments (a long
// complete, from the span stream); a second lane has a short one.
TEST(Render, CompleteIntervalsThatRunPastTheRightEdgeAreDrawn) {
  TraceBytes trace = named_trace({"long", "tick", "short"});
  ChunkBuilder cb[2];
  cb[0].feedlet = 1, cb[1].feedlet = 2;
  auto put_complete = [&](ChunkBuilder& c, uint64_t start, uint64_t end, uint64_t name) {
    uint8_t* p = c.begin(kIntervalComplete, end);
    p = ChunkBuilder::put_u64(p, name);
    p = ChunkBuilder::put_u64(p, end - start);
    c.end(p);
  };
  for (uint64_t t = 0; t <= 2'000'000; t += 100) {
    put_named(cb[0], kInstant, t, 2);
    if (t == 1'000'000) put_complete(cb[0], 1'000, t, 1);
    if (t % 1'000 == 0) put_named(cb[1], kInstant, t, 2);
    if (t == 400'000) put_complete(cb[1], 300'000, t, 3);
    for (ChunkBuilder& c : cb)
      if (c.full()) trace.flush(c);
  }
  for (ChunkBuilder& c : cb) trace.flush(c);
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(save(trace, "complete-past-edge.tine"), error)) << error;
  ASSERT_EQ(scene.lanes().size(), 2u);
  const index::TraceIndex& ix = *scene.sources()[0].index;
  ASSERT_GE(ix.find_stream(index::StreamKind::Span, 1, uint32_t(0)), 0) << "the long one is in the span stream";
  EXPECT_LT(ix.find_stream(index::StreamKind::Span, 2, uint32_t(0)), 0) << "the short one is not";

  const int W = 1280, H = 200;
  const auto [px, g, layout] = draw_timeline(scene, W, H, 0, 350'000);  // both run on past the right edge
  ASSERT_FALSE(px.empty());
  const double px_per_ns = g.plot.w / 350'000.0;
  for (const auto& [lane, name, start] : {std::tuple{0u, "long", 1'000.0}, {1u, "short", 300'000.0}}) {
    const render::Layout::LaneRows& lr = layout.lanes[lane];
    ASSERT_EQ(scene.lanes()[lr.lane].feedlet, lane + 1);
    uint32_t row = lr.first;
    while (row < lr.end && layout.rows[row].kind != render::Row::Interval) ++row;
    ASSERT_LT(row, lr.end) << name;
    const int y = int(g.plot.y + layout.rows[row].y + 3);
    const int x0 = int(std::ceil(g.plot.x + start * px_per_ns)) + 1, x1 = int(g.plot.x + g.plot.w) - 2;
    ASSERT_GT(x1 - x0, 100);
    for (int x = x0 + 40; x < x1; ++x)  // (past its name, written at its start)
      ASSERT_EQ(pixel(px, W, x, y), render::name_colour(name) & 0xffffff) << name << " x " << x;
    EXPECT_TRUE(is_background(pixel(px, W, x0 - 3, y))) << name << " before its start";
  }

  // Folded, 20 strips of one 10 us period each: the long one covers every
  // strip from its start on.
  const std::vector<uint8_t> spx = draw_scope(scene, 10'000, 1, 20);
  ASSERT_FALSE(spx.empty());
  const int full = ink(render::name_colour("long") & 0xffffff);
  for (int strip = 1; strip < 20; ++strip) {
    int inked = 0;
    for (int x = 150; x < kScopeWidth; ++x) inked += ink(pixel(spx, kScopeWidth, x, 22 + strip * 8 + 3)) >= full * 9 / 10;
    EXPECT_GT(inked, 900) << "strip " << strip;
  }
}

// Reference pictures: a synthetic trace drawn at fixed views. Set
// TINESCOPE_UPDATE_REFERENCES=1 to write them anew (then look at them).
// Job segments (ts_sched) are drawn in a row per CPU, coloured by task, and
// a segment still running at the window's right edge (in no bucket yet: its
// stream is keyed by the end) is drawn from its start to the edge.
TEST(Render, ScheduledJobsAreDrawnInARowPerCpu) {
  TraceBytes trace = named_trace({"audio", "video", "big.core"});
  ChunkBuilder meta;  // CPU 1 has a name (ts_cpu_name); CPU 0 none
  meta.sequence = 1;  // (named_trace's metadata chunk was the first)
  uint8_t* named = meta.begin(kCpuName, 0);
  named = ChunkBuilder::put_u64(named, 1);
  named = ChunkBuilder::put_u64(named, 3);
  meta.end(named);
  trace.flush(meta);
  ChunkBuilder cb;
  cb.feedlet = 1;
  // (A job is its task and id: each segment here is a job of its own.)
  auto job = [&](uint16_t type, uint64_t ts, uint64_t task, uint64_t cpu, uint64_t id) {
    put_job(cb, type, ts, task, id, cpu);
    if (cb.full()) trace.flush(cb);
  };
  // CPU 0: audio and video in turn, 90 us each, every 100 us; CPU 1: video
  // until 500 us, then audio from 600 us to 1.5 ms (past the window); CPU 2:
  // video from 700 us on, still running when the trace ends (no segment of
  // CPU 2 ever ends: it has a row all the same).
  job(kJobStart, 0, 2, 1, 1);
  for (uint64_t i = 0; i < 15; ++i) {
    if (i == 5) job(kJobPreempt, 500'000, 2, 1, 1);
    if (i == 6) job(kJobStart, 600'000, 1, 1, 2);
    if (i == 7) job(kJobStart, 700'000, 2, 2, 3);
    job(kJobStart, i * 100'000, 1 + i % 2, 0, 100 + i);
    job(kJobComplete, i * 100'000 + 90'000, 1 + i % 2, 0, 100 + i);
  }
  job(kJobComplete, 1'500'000, 1, 1, 2);
  trace.flush(cb);
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(save(trace, "cpus.tine"), error)) << error;
  ASSERT_EQ(scene.lanes().size(), 2u);  // the scheduler's thread, and its jobs by task (first: group "tasks")
  const render::Lane& lane = scene.lanes()[1];
  const render::Lane& tasks = scene.lanes()[0];
  ASSERT_TRUE(tasks.is_tasks());
  EXPECT_EQ(tasks.task_names, (std::vector<std::string>{"audio", "video"}));
  ASSERT_EQ(lane.cpu_numbers, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(lane.cpu_names, (std::vector<std::string>{"cpu 0", "big.core", "cpu 2"}));
  EXPECT_EQ(lane.cpus[2], -1) << "CPU 2 has no stream";
  const index::TraceIndex& ix = *scene.sources()[0].index;
  auto running = ix.running_at(1, 995'000);  // CPU 0 idle, CPU 1 running audio, CPU 2 video
  ASSERT_EQ(running.size(), 2u);
  EXPECT_EQ(running[0].cpu, 1u);
  EXPECT_EQ(running[0].task, 1u);
  EXPECT_EQ(running[0].start, 600'000u);
  EXPECT_EQ(running[1].cpu, 2u);
  EXPECT_EQ(running[1].task, 2u);
  running = ix.running_at(1, 550'000);  // CPU 0's sixth segment (video); CPU 1 idle
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].cpu, 0u);
  EXPECT_EQ(running[0].task, 2u);

  const int W = 1280, H = 160;
  const auto [px, g, layout] = draw_timeline(scene, W, H, 0, 1'000'000);
  ASSERT_FALSE(px.empty());
  ASSERT_EQ(layout.lanes.size(), 2u);
  const render::Layout::LaneRows& lr = layout.lanes[1];
  ASSERT_EQ(lr.end - lr.first, 3u) << "a row for each CPU, and no interval row";
  const uint32_t audio = render::name_colour("audio") & 0xffffff, video = render::name_colour("video") & 0xffffff;
  const double px_per_ns = g.plot.w / 1e6;
  auto x_of = [&](double ns) { return int(g.plot.x + ns * px_per_ns); };
  auto y_of = [&](uint32_t cpu) {
    EXPECT_EQ(layout.rows[lr.first + cpu].kind, render::Row::Cpu);
    EXPECT_EQ(layout.rows[lr.first + cpu].index, cpu);
    return int(g.plot.y + layout.rows[lr.first + cpu].y + 3);
  };
  // Each segment in its task's colour (past its name, written at its
  // start), and the idle time between them empty.
  auto expect_run = [&](uint32_t cpu, double from, double to, uint32_t colour, const char* what) {
    for (int x = x_of(from) + 45; x < std::min(x_of(to) - 2, int(g.plot.x + g.plot.w) - 2); ++x)
      ASSERT_EQ(pixel(px, W, x, y_of(cpu)), colour) << what << " x " << x;
  };
  for (int i = 0; i < 10; ++i) {
    expect_run(0, i * 1e5, i * 1e5 + 9e4, i % 2 ? video : audio, "cpu 0");
    EXPECT_TRUE(is_background(pixel(px, W, x_of(i * 1e5 + 9.5e4), y_of(0)))) << "cpu 0 idle after " << i;
  }
  expect_run(1, 0, 5e5, video, "cpu 1, video");
  EXPECT_TRUE(is_background(pixel(px, W, x_of(5.5e5), y_of(1)))) << "cpu 1 idle";
  expect_run(1, 6e5, 1e6 + 1, audio, "cpu 1, audio running at the edge");
  EXPECT_TRUE(is_background(pixel(px, W, x_of(6.5e5), y_of(2)))) << "cpu 2 idle";
  expect_run(2, 7e5, 1e6 + 1, video, "cpu 2, video running from 700 us to the end");

  // Jobs by task: a row a task, each segment in the colour of the CPU it
  // ran on (CPU 0: the first of the CPU colours), wherever it ran.
  const render::Layout::LaneRows& tr = layout.lanes[0];
  ASSERT_EQ(tr.end - tr.first, 2u) << "a row a task";
  auto task_y = [&](uint32_t k) {
    EXPECT_EQ(layout.rows[tr.first + k].kind, render::Row::Task);
    return int(g.plot.y + layout.rows[tr.first + k].y + 3);
  };
  std::map<uint32_t, int> audio_colours;
  for (int i = 0; i < 6; ++i) {  // audio on CPU 0 in even 100 us steps (and from 600 us on CPU 1 too)
    const uint32_t c = pixel(px, W, x_of(i * 1e5 + 4.5e4), task_y(0));
    if (i % 2 == 0) {
      audio_colours[c]++;
    } else {
      EXPECT_TRUE(is_background(c)) << "audio does not run at " << i;
    }
  }
  EXPECT_EQ(audio_colours.size(), 1u) << "audio ran on CPU 0 alone in even steps";
  const uint32_t cpu1 = pixel(px, W, x_of(6.95e5), task_y(0));  // (CPU 0's audio ended at 690 us)
  EXPECT_FALSE(is_background(cpu1)) << "audio on CPU 1 from 600 us";
  EXPECT_NE(cpu1, audio_colours.begin()->first) << "another CPU, another colour";
  EXPECT_FALSE(is_background(pixel(px, W, x_of(7.5e5), task_y(1)))) << "video on CPU 2 from 700 us";
}

// Locks (ts_lock): a lane "holders", a row a lock, each hold (first
// acquire to as many releases) in its holder's colour and naming it (the
// box's depth: its feedlet), one held at the right edge drawn from its
// acquire on; and a thread's wait for a lock, an interval of the lock's
// name in its own lane, nested where it waited.
TEST(Render, EachLocksRowShowsWhoHeldItAndEachWaitIsOnTheWaitingThread) {
  TraceBytes trace = named_trace({"m", "A", "B", "work"}, {2, 3});  // feedlet 1: thread A, 2: thread B
  ChunkBuilder a, b;
  a.feedlet = 1, b.feedlet = 2;
  auto lock = [](ChunkBuilder& cb, uint16_t type, uint64_t us) {
    uint8_t* p = cb.begin(type, us * 1000);
    p = ChunkBuilder::put_u64(p, 1), p = ChunkBuilder::put_u64(p, 7);  // lock "m", id 7
    cb.end(p);
  };
  put_named(a, kIntervalBegin, 0, 4);
  lock(a, kLockAcquire, 100);
  lock(a, kLockAcquire, 150);  // again (recursive): held until the second release
  lock(a, kLockRelease, 200);
  lock(a, kLockRelease, 300);
  put_named(a, kIntervalEnd, 400'000, 4);
  lock(a, kLockAcquire, 900);  // never released
  put_named(b, kIntervalBegin, 120'000, 4);
  lock(b, kLockContend, 150);
  lock(b, kLockAcquire, 300);
  lock(b, kLockRelease, 500);
  put_named(b, kIntervalEnd, 600'000, 4);
  lock(b, kLockRelease, 700);  // misuse: not held
  lock(b, kLockAcquire, 960);  // misuse: A holds it
  put_named(b, kInstant, 1'000'000, 4);
  trace.flush(a), trace.flush(b);
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(save(trace, "locks.tine"), error)) << error;
  const render::Lane* holders = nullptr;
  for (const render::Lane& l : scene.lanes())
    if (l.is_locks()) holders = &l;
  ASSERT_NE(holders, nullptr);
  EXPECT_EQ(holders->name, "holders");
  EXPECT_EQ(holders->lock_names, (std::vector<std::string>{"m"}));
  const index::TraceIndex& ix = *scene.sources()[0].index;
  const auto held = ix.held_at(1, 950'000);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].start, 900'000u);
  EXPECT_EQ(held[0].id, 7u);
  EXPECT_TRUE(ix.held_at(2, 950'000).empty());

  FigureParams f;
  f.t0 = 0, f.t1 = 1'000'000;
  const render::TimelinePicture p =
      render::build_timeline(scene, render::timeline_request(scene, f, render::TimelineGeometry::of({0, 0, 1430, 400})));
  std::vector<std::tuple<int64_t, int64_t, uint32_t>> holds, waits;
  for (const render::Box& box : p.boxes) {
    const render::Row& row = p.request.layout.rows[box.row];
    if (row.kind == render::Row::Lock) holds.emplace_back(box.start, box.end, box.depth);
    if (row.kind == render::Row::Interval && scene.string(0, box.name) == "m")
      waits.emplace_back(box.start, box.end, scene.lanes()[row.lane].feedlet);
  }
  std::sort(holds.begin(), holds.end());
  EXPECT_EQ(holds, (std::vector<std::tuple<int64_t, int64_t, uint32_t>>{
                       {100'000, 300'000, 1}, {300'000, 500'000, 2}, {900'000, INT64_MAX, 1}, {960'000, INT64_MAX, 2}}));
  // Its misuse, marked at each event.
  std::vector<float> misuse;
  for (const render::JobMarkRect& m : p.job_marks)
    if (m.kind == render::JobMarkRect::Misuse) misuse.push_back(m.x0);
  ASSERT_EQ(misuse.size(), 2u);
  EXPECT_NEAR(misuse[0], 0.7 * p.columns, 1);
  EXPECT_NEAR(misuse[1], 0.96 * p.columns, 1);
  EXPECT_EQ(waits, (std::vector<std::tuple<int64_t, int64_t, uint32_t>>{{150'000, 300'000, 2}}));
  for (const render::Box& box : p.boxes) {
    if (scene.string(0, box.name) == "m" && p.request.layout.rows[box.row].kind == render::Row::Interval) {
      EXPECT_EQ(box.depth, 1u) << "B waited inside its frame";
    }
  }

  // Drawn: each hold in its thread's colour, nothing between them.
  const int W = 1280, H = 200;
  const auto [px, g, layout] = draw_timeline(scene, W, H, 0, 1'000'000);
  ASSERT_FALSE(px.empty());
  int lock_y = -1;
  for (const render::Row& row : layout.rows)
    if (row.kind == render::Row::Lock) lock_y = int(g.plot.y + row.y + 3);
  ASSERT_GE(lock_y, 0);
  auto x_of = [&](double ns) { return int(g.plot.x + ns * g.plot.w / 1e6); };
  const uint32_t colour_a = render::name_colour("A") & 0xffffff, colour_b = render::name_colour("B") & 0xffffff;
  EXPECT_EQ(pixel(px, W, x_of(250'000), lock_y), colour_a);
  EXPECT_EQ(pixel(px, W, x_of(450'000), lock_y), colour_b);
  EXPECT_TRUE(is_background(pixel(px, W, x_of(650'000), lock_y)));
  EXPECT_EQ(pixel(px, W, x_of(940'000), lock_y), colour_a) << "held at the right edge";
  EXPECT_EQ(pixel(px, W, x_of(700'000), lock_y), render::kMissedColour & 0xffffff) << "a release of a lock not held, in red";
  EXPECT_EQ(pixel(px, W, x_of(960'000), lock_y), render::kMissedColour & 0xffffff) << "an acquire of a lock held, in red";
}

// A priority inversion (H waits for the lock L holds while M keeps L from
// running), a red bar along the foot of the lock's row from where it began
// to where it ended: M's start to M's completion, not the whole wait.
TEST(Render, APriorityInversionIsMarkedAlongItsLocksRow) {
  TraceBytes trace = named_trace({"m", "H", "M", "L", "sched"}, {2, 3, 4, 5});  // feedlets 1 H, 2 M, 3 L, 4 sched
  ChunkBuilder h, l, sched;
  h.feedlet = 1, l.feedlet = 3, sched.feedlet = 4;
  auto lock = [](ChunkBuilder& cb, uint16_t type, uint64_t us) {
    uint8_t* p = cb.begin(type, us * 1000);
    p = ChunkBuilder::put_u64(p, 1), p = ChunkBuilder::put_u64(p, 7);
    cb.end(p);
  };
  for (auto [task, level] : {std::pair{2, 30}, {3, 20}, {4, 10}}) {
    uint8_t* p = sched.begin(kTaskPriority, 10'000);
    p = ChunkBuilder::put_u64(p, uint64_t(task));
    sched.end(ChunkBuilder::put_i64(p, level));
  }
  auto job = [&](uint64_t us, uint16_t type, uint64_t task) { put_job(sched, type, us * 1000, task, 1, 0); };
  job(50, kJobStart, 4);
  lock(l, kLockAcquire, 100);
  job(200, kJobPreempt, 4), job(200, kJobStart, 2);
  lock(h, kLockContend, 210);
  job(210, kJobBlock, 2), job(210, kJobResume, 4);
  job(300, kJobPreempt, 4), job(300, kJobStart, 3);
  job(800, kJobComplete, 3), job(800, kJobResume, 4);
  lock(l, kLockRelease, 850), lock(h, kLockAcquire, 850);
  job(850, kJobPreempt, 4), job(850, kJobResume, 2);
  lock(h, kLockRelease, 900);
  job(1000, kJobComplete, 2);
  trace.flush(h), trace.flush(l), trace.flush(sched);
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(save(trace, "inversion.tine"), error)) << error;
  FigureParams f;
  f.t0 = 0, f.t1 = 1'000'000;
  const render::TimelinePicture p =
      render::build_timeline(scene, render::timeline_request(scene, f, render::TimelineGeometry::of({0, 0, 1430, 400})));
  std::vector<std::pair<float, float>> inversions;
  for (const render::JobMarkRect& m : p.job_marks)
    if (m.kind == render::JobMarkRect::Inversion) inversions.emplace_back(m.x0, m.x1);
  ASSERT_EQ(inversions.size(), 1u);
  EXPECT_NEAR(inversions[0].first, 0.3 * p.columns, 1);
  EXPECT_NEAR(inversions[0].second, 0.8 * p.columns, 1);

  const int W = 1280, H = 260;
  const auto [px, g, layout] = draw_timeline(scene, W, H, 0, 1'000'000);
  ASSERT_FALSE(px.empty());
  int foot = -1;
  for (const render::Row& row : layout.rows)
    if (row.kind == render::Row::Lock) foot = int(g.plot.y + row.y + row.h - 2);
  ASSERT_GE(foot, 0);
  auto x_of = [&](double ns) { return int(g.plot.x + ns * g.plot.w / 1e6); };
  const uint32_t red = render::kMissedColour & 0xffffff;
  EXPECT_EQ(pixel(px, W, x_of(310'000), foot), red);
  EXPECT_EQ(pixel(px, W, x_of(790'000), foot), red);
  EXPECT_NE(pixel(px, W, x_of(250'000), foot), red) << "L ran: no inversion yet";
  EXPECT_NE(pixel(px, W, x_of(825'000), foot), red) << "L ran again";
}

// Folded, a lane's job segments are its periodic work: a task that runs at
// the same phase of every period is a column in its colour.
TEST(Render, FoldingJobSegmentsShowsEachTaskAtItsPhase) {
  TraceBytes trace = named_trace({"audio", "video"});
  ChunkBuilder cb;
  cb.feedlet = 1;
  // (A job is its task and id: each job's id is its start time.)
  auto job = [&](uint16_t type, uint64_t ts, uint64_t task, uint64_t id, uint64_t cpu = 0) {
    put_job(cb, type, ts, task, id, cpu);
    if (cb.full()) trace.flush(cb);
  };
  // Every 100 us: audio for 30 us, then video from 50 to 80 us; the last
  // video is still running at the end of what is folded (running_at).
  for (uint64_t i = 0; i < 50; ++i) {
    job(kJobStart, i * 100'000, 1, i * 100'000);
    job(kJobComplete, i * 100'000 + 30'000, 1, i * 100'000);
    job(kJobStart, i * 100'000 + 50'000, 2, i * 100'000 + 50'000);
    if (i < 49) job(kJobComplete, i * 100'000 + 80'000, 2, i * 100'000 + 50'000);
  }
  job(kJobStart, 5'000'000, 1, 5'000'000, 1);  // (the trace goes on past the last period, on another CPU)
  trace.flush(cb);
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(save(trace, "fold-jobs.tine"), error)) << error;
  const std::vector<uint8_t> px = draw_scope(scene, 100'000, 10, 5);
  ASSERT_FALSE(px.empty());
  const uint32_t audio = render::name_colour("audio") & 0xffffff, video = render::name_colour("video") & 0xffffff;
  for (int strip = 0; strip < 5; ++strip) {
    const int y = 22 + strip * 8 + 3;
    auto at = [&](double phase) { return pixel(px, kScopeWidth, 150 + int(phase * 1024), y); };
    for (double phase : {0.02, 0.15, 0.28}) EXPECT_EQ(at(phase), audio) << "strip " << strip << " phase " << phase;
    for (double phase : {0.52, 0.65, 0.78}) EXPECT_EQ(at(phase), video) << "strip " << strip << " phase " << phase;
    EXPECT_TRUE(is_background(at(0.4))) << "strip " << strip;
    // The last video, still running at the end, covers the rest of its period.
    EXPECT_EQ(is_background(at(0.9)), strip < 4) << "strip " << strip;
  }
}

TEST(Render, FixedViewsMatchTheReferencePictures) {
  const std::string trace = temp_dir() + "/synthetic.tine";
  bench::SyntheticOptions o;
  o.events = 200'000, o.threads = 6, o.period_ns = 100'000, o.seed = 7;
  bench::SyntheticResult res;
  std::string error;
  std::filesystem::remove(trace);
  ASSERT_TRUE(bench::write_synthetic_trace(trace, o, res, error)) << error;
  render::Scene scene;
  ASSERT_TRUE(scene.add_trace(trace, error)) << error;
  auto r = headless(1000, 500);
  ASSERT_TRUE(r);
  struct View {
    const char* name;
    FigureParams f;
  };
  std::vector<View> views;
  FigureParams all;
  all.t0 = scene.first_ns(), all.t1 = scene.last_ns() + 1;
  views.push_back({"timeline-all", all});
  FigureParams zoom = all;
  zoom.t0 = scene.first_ns() + 2'000'000, zoom.t1 = zoom.t0 + 400'000;
  views.push_back({"timeline-400us", zoom});
  FigureParams warp = zoom;
  warp.theta = 0.001;
  views.push_back({"timeline-400us-log", warp});
  FigureParams scope = all;
  scope.type = FigureParams::Scope, scope.period_ns = 100'000, scope.fold = 16, scope.strip_px = 6;
  views.push_back({"scope-fold16", scope});
  const std::string dir = std::string(TINESCOPE_SOURCE_DIR) + "/tests/data/render/";
  const bool update = std::getenv("TINESCOPE_UPDATE_REFERENCES") != nullptr;
  for (const View& v : views) {
    render::Marks marks;
    marks.cursor = v.f.t0 + (v.f.t1 - v.f.t0) / 3;
    r->draw(scene, v.f, marks);
    const std::vector<uint8_t> got = r->context().read_rgba();
    const std::string ref = dir + v.name + ".png", out = temp_dir() + "/" + v.name + ".png";
    ASSERT_TRUE(render::write_png(out, 1000, 500, got, error)) << error;
    if (update) {
      ASSERT_TRUE(render::write_png(ref, 1000, 500, got, error)) << error;
    }
    int w, h;
    std::vector<uint8_t> want;
    ASSERT_TRUE(render::read_png(ref, w, h, want, error)) << error << " (TINESCOPE_UPDATE_REFERENCES=1 makes it)";
    ASSERT_EQ(w, 1000);
    ASSERT_EQ(h, 500);
    uint64_t sum = 0, off = 0;
    for (size_t i = 0; i < got.size(); i += 4) {
      int d = 0;
      for (int k = 0; k < 3; ++k) d = std::max(d, std::abs(int(got[i + k]) - int(want[i + k])));
      sum += uint64_t(d);
      off += d > 40;
    }
    const double pixels = double(got.size() / 4);
    EXPECT_LE(double(sum) / pixels, 1.5) << v.name << ": mean difference; this render is " << out;
    EXPECT_LE(double(off) / pixels, 0.005) << v.name << ": pixels that differ; this render is " << out;
  }
}

}  // namespace
}  // namespace tinescope::test

namespace tinescope::test {
namespace {

// Fold max and min against a brute force over every (strip, period,
// column): a column is lit in max mode where an outermost interval overlaps
// it in any folded period, in min mode where one does in every period.
// Random intervals, some touching (the union must not count a period
// twice), some nested (depth 1 does not count), some spanning many periods.
TEST(Render, FoldMaxAndMinEqualABruteForceOverEveryPeriod) {
  std::mt19937_64 rng(56);
  for (int trial = 0; trial < 12; ++trial) {
    const double period = 1000.37 + trial * 77.3;
    const uint32_t fold = 1 + trial % 5, strips = 6, columns = 37;
    std::vector<std::tuple<uint64_t, uint64_t, uint32_t>> iv;
    std::vector<std::pair<uint64_t, uint64_t>> outer;
    uint64_t t = 5'000;
    const uint64_t stop = 5'000 + uint64_t(period * fold * strips) + 3'000;
    while (t < stop) {
      const uint64_t len = rng() % 6 == 0 ? 1 + rng() % uint64_t(period * 3) : 1 + rng() % 400;
      iv.push_back({t, t + len, 0});
      outer.push_back({t, t + len});
      if (len > 20 && rng() % 3 == 0) iv.push_back({t + 5, t + len - 5, 1});  // nested: depth 1
      t += len + (rng() % 4 == 0 ? 0 : rng() % uint64_t(period * (trial % 3 == 0 ? 0.3 : 2)));  // (0: touching)
    }
    std::sort(iv.begin(), iv.end(), [](auto& a, auto& b) { return std::get<0>(a) < std::get<0>(b); });
    // (write_intervals writes begin, end in turn: nest the children by hand.)
    TraceBytes trace = named_trace({"outer", "inner"});
    ChunkBuilder cb;
    cb.feedlet = 1;
    for (size_t i = 0; i < iv.size(); ++i) {
      auto [b, e, n] = iv[i];
      if (n == 1) continue;
      auto put = [&](uint16_t type, uint64_t ts, uint64_t name) {
        uint8_t* p = cb.begin(type, ts);
        p = ChunkBuilder::put_u64(p, name);
        cb.end(p);
        if (cb.full()) trace.flush(cb);
      };
      put(kIntervalBegin, b, 0);
      if (i + 1 < iv.size() && std::get<2>(iv[i + 1]) == 1) {
        put(kIntervalBegin, std::get<0>(iv[i + 1]), 1);
        put(kIntervalEnd, std::get<1>(iv[i + 1]), 1);
      }
      put(kIntervalEnd, e, 0);
    }
    trace.flush(cb);
    render::Scene scene;
    std::string error;
    ASSERT_TRUE(scene.add_trace(save(trace, "fold-modes.tine"), error)) << error;
    for (render::FoldMode mode : {render::FoldMode::Max, render::FoldMode::Min}) {
      render::ScopeRequest req;
      req.start = 5'000 + int64_t(trial * 31);
      req.period_ns = period, req.fold = fold, req.strips = strips, req.columns = columns, req.mode = mode;
      req.lanes = {0};
      const render::ScopePicture P = render::build_scope(scene, req);
      uint64_t wrong = 0;
      for (uint32_t s = 0; s < strips; ++s)
        for (uint32_t c = 0; c < columns; ++c) {
          uint32_t busy = 0;
          for (uint32_t p = 0; p < fold; ++p) {
            const double c0 = double(req.start) + (double(s * fold + p) + double(c) / columns) * period;
            const double c1 = c0 + period / columns;
            busy += std::any_of(outer.begin(), outer.end(), [&](auto& o) { return double(o.second) > c0 && double(o.first) < c1; });
          }
          const bool want = mode == render::FoldMode::Max ? busy > 0 : busy == fold;
          const bool lit = (P.rgba[size_t(s) * columns + c] >> 24) == 255;
          if (want != lit && ++wrong <= 3)
            ADD_FAILURE() << "trial " << trial << " " << render::fold_mode_name(mode) << " strip " << s << " column " << c
                          << ": " << busy << " of " << fold << " periods busy, lit " << lit;
        }
      EXPECT_EQ(wrong, 0u) << "trial " << trial;
    }
  }
}

// The seed's audio task and its interruption, folded at 1024: in mean mode
// the 300 us interruption every 50 ms covers under 1 % of the periods and
// hides; in max mode every strip that holds one is lit across, in its colour.
TEST(Render, FoldMaxMarksARareInterruptionInEveryStrip) {
  const double period = 1e9 / 22050;
  std::vector<std::tuple<uint64_t, uint64_t, uint32_t>> iv;
  std::vector<uint64_t> interrupts;
  const uint64_t base = 1'000'000;
  uint64_t next_interrupt = base + 20'000'000;
  for (uint64_t n = 0; n < 1024 * 12; ++n) {
    const uint64_t s = base + uint64_t(std::llround(double(n) * period));
    if (s >= next_interrupt) {  // 300 us from a sample's phase, the samples it covers skipped
      iv.push_back({s, s + 300'000, 2});  // (string 1 is the first name)
      interrupts.push_back(s);
      next_interrupt += 50'000'000;
      n += 6;
      continue;
    }
    iv.push_back({s, s + 4'000, 1});
  }
  const std::string trace = write_intervals("interrupted.tine", iv, {"audio.sample", "interrupt"});
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(trace, error)) << error;
  FigureParams f;
  f.type = FigureParams::Scope;
  f.t0 = int64_t(base), f.t1 = scene.last_ns();
  const std::vector<analysis::PeriodCandidate> found = render::find_scope_periods(scene, f);
  ASSERT_FALSE(found.empty());
  EXPECT_NEAR(found[0].period_ns, period, period * 1e-4) << found[0].source;
  render::ScopeRequest req;
  req.start = int64_t(base), req.period_ns = found[0].period_ns, req.fold = 1024, req.strips = 12, req.columns = 512;
  req.lanes = {0};
  const double strip_ns = period * 1024;
  const uint32_t irq = render::name_colour("interrupt") & 0xffffff;
  const uint32_t sample_columns = uint32_t(4'000 / period * req.columns) + 2;  // the samples' 4 us at phase 0, and the next
  for (render::FoldMode mode : {render::FoldMode::Mean, render::FoldMode::Max, render::FoldMode::Min}) {
    req.mode = mode;
    const render::ScopePicture P = render::build_scope(scene, req);
    for (uint32_t s = 0; s < req.strips; ++s) {
      const bool has = std::any_of(interrupts.begin(), interrupts.end(), [&](uint64_t t) {
        return double(t - base) >= s * strip_ns && double(t - base) < (s + 1) * strip_ns;
      });
      uint32_t lit = 0, irq_coloured = 0, column = 0;
      for (uint32_t c = 0; c < req.columns; ++c) {
        const uint32_t px = P.rgba[size_t(s) * req.columns + c];
        // (and the last: a start rounded to the ns may fall a fraction before its period)
        const bool on_column = c < sample_columns || c + 1 == req.columns;
        if (on_column) column += px >> 24 == 255;
        if (on_column || (px >> 24) < 255) continue;
        ++lit;
        bool near = true;  // (the colour is a weighted mean, rounded)
        for (int k = 0; k < 24; k += 8) near &= std::abs(int(px >> k & 255) - int(irq >> k & 255)) <= 2;
        irq_coloured += near;
      }
      const uint32_t off = req.columns - sample_columns - 1;
      if (mode == render::FoldMode::Max) {
        EXPECT_EQ(lit, has ? off : 0u) << "max: strip " << s << (has ? " holds an interruption" : " holds none");
        EXPECT_EQ(irq_coloured, lit) << "max: strip " << s << " is the interruption's colour ";
      } else {
        EXPECT_EQ(lit, 0u) << render::fold_mode_name(mode) << ": strip " << s;
      }
      if (mode == render::FoldMode::Min) {
        EXPECT_GT(column, 0u) << "min: the samples' column, busy in every period";
      }
    }
    if (mode == render::FoldMode::Max) {
      EXPECT_GE(std::count_if(interrupts.begin(), interrupts.end(), [&](uint64_t t) { return double(t - base) < 12 * strip_ns; }), 10);
    }
  }
}

// Stepping to a bookmark moves the cursor: the scope scrolls by whole strips
// so that the cursor's strip is on screen, its phase kept.
TEST(Render, TheScopeFollowsTheCursorByWholeStrips) {
  FigureParams f;
  f.type = FigureParams::Scope;
  f.t0 = 1'000'000, f.t1 = 2'000'000;
  f.fold = 4;
  const double period = 1000.5;
  EXPECT_EQ(render::scope_start(f, period, 10), f.t0) << "no cursor";
  f.follow = f.t0 + 20'000;  // strip 4 of 10 (4 002 ns a strip): on screen
  EXPECT_EQ(render::scope_start(f, period, 10), f.t0);
  f.follow = f.t0 + 1'000'000;  // strip 249
  const int64_t start = render::scope_start(f, period, 10);
  const double strips_on = double(start - f.t0) / (period * 4);
  EXPECT_NEAR(strips_on, std::round(strips_on), 1.0 / 4002) << "whole strips";
  EXPECT_LE(start, f.follow);
  EXPECT_GT(double(start) + 10 * period * 4, double(f.follow));
  EXPECT_NEAR(double(f.follow - start) / (period * 4), 5.5, 1.0) << "in the middle";
  f.follow = f.t0 - 50'000;  // before: back
  const int64_t back = render::scope_start(f, period, 10);
  EXPECT_LE(back, f.follow);
  EXPECT_GT(double(back) + 10 * period * 4, double(f.follow));
}

}  // namespace
}  // namespace tinescope::test
