// Frame times of the renderer, headless (EGL: llvmpipe here, the GPU where
// there is one), at 1280x800 with 32 lanes: a scripted zoom from the whole
// trace down to 1 us, then the oscilloscope folding 1024 periods while the
// period is dragged. Prints `figure: NAME VALUE UNIT` lines:
//   render.frame_ms.p50 / .p95  the UI thread's work for a frame (overlay,
//                               GL submission) plus glFinish; goal p95 <= 33 ms
//   render.build_ms.p50 / .p95  the picture for a new view (pyramid queries,
//                               rasterising), which runs off the UI thread
//   render.fold_build_ms.p95    rebuilding the folded scope for a dragged period
//   render.activity_ms.p95      activity markers of the busiest function at each view
//   render.prims_per_frame.max  primitives submitted in one frame
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <CLI/CLI.hpp>

#include "synthetic_trace.hpp"
#include "tinescope/analysis/stream_expr.hpp"
#include "tinescope/render/activity.hpp"
#include "tinescope/render/figure_lists.hpp"
#include "tinescope/render/lane_order.hpp"
#include "tinescope/render/headless.hpp"

using namespace tinescope;

namespace {

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"render_bench: frame times of the timeline and the folding scope"};
  std::string trace = "render_bench.tine";
  uint64_t events = 20'000'000;
  bool quick = false, keep = false, verbose = false;
  app.add_option("--trace", trace, "trace to use (made with the synthetic generator if missing)");
  app.add_option("-n,--events", events, "events in the synthetic trace");
  app.add_flag("--quick", quick, "a small trace: checks that every figure prints");
  app.add_flag("--keep", keep, "keep a generated trace and its index");
  app.add_flag("-v,--verbose", verbose, "print every step");
  std::string messages_trace;
  app.add_option("--messages-trace", messages_trace,
                 "the 100-queue workload's trace (recorded with tinescope-queues if missing)");
  CLI11_PARSE(app, argc, argv);
  if (quick) events = 1'000'000;

  std::string error;
  bool generated = false;
  if (!bench::ensure_bench_trace(trace, events, 32, "render_bench", &generated)) return 1;
  render::Scene scene;
  if (!scene.add_trace(trace, error)) {
    std::fprintf(stderr, "render_bench: %s\n", error.c_str());
    return 1;
  }
  const int W = 1280, H = 800;
  auto r = render::HeadlessRenderer::create(W, H, error);
  if (!r) {
    std::fprintf(stderr, "render_bench: %s\n", error.c_str());
    return 1;
  }
  const uint64_t total_events = scene.sources()[0].index->events();
  std::printf("trace: %s, %llu events, %zu lanes, %.1f s; renderer: %s\n", trace.c_str(),
              (unsigned long long)total_events, scene.lanes().size(), double(scene.last_ns() - scene.first_ns()) / 1e9,
              r->context().renderer().c_str());

  // The zoom: 60 steps, geometric, from everything to 1 us around a point
  // two fifths in; every view drawn twice (the second frame is what a still
  // view costs), like a person scrolling the wheel.
  // As the viewer draws while the wheel turns: the interactive decode budget.
  r->decode_per_column = index::kDecodeEventsPerColumn;
  render::FigureParams f;
  f.lanes = {};
  for (uint32_t i = 0; i < std::min<size_t>(32, scene.lanes().size()); ++i) f.lanes.push_back(i);
  const int64_t first = scene.first_ns(), span = std::max<int64_t>(1, scene.last_ns() - first);
  const int64_t centre = first + span * 2 / 5;
  // Activity markers (render/activity.hpp) of the busiest function at each
  // view: what pointing at it costs, off the UI thread.
  std::string busiest;
  {
    uint64_t most = 0;
    const index::TraceIndex& ix = *scene.sources()[0].index;
    for (const index::StreamInfo& st : ix.streams())
      if (st.kind == index::StreamKind::Interval && st.items > most)
        most = st.items, busiest = std::string(scene.string(0, st.key));
  }
  std::vector<double> frame, build, activity;
  uint64_t prims = 0;
  const int steps = quick ? 20 : 60;
  for (int k = 0; k < steps; ++k) {
    const double w = double(span) * std::pow(1e3 / double(span), double(k) / (steps - 1));
    f.t0 = centre - int64_t(w / 2), f.t1 = f.t0 + std::max<int64_t>(2, int64_t(w));
    const auto t = r->draw(scene, f, {});
    build.push_back(t.build_ms);
    frame.push_back(t.draw_ms);
    prims = std::max(prims, t.primitives);
    const auto a0 = std::chrono::steady_clock::now();
    const auto spans = render::activity_spans(scene, f.lanes, busiest, f.t0, f.t1, W - 150);
    activity.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a0).count());
    if (verbose) std::printf("  activity of %s: %zu spans in %.2f ms\n", busiest.c_str(), spans.size(), activity.back());
    if (verbose)
      std::printf("  window %-12s build %8.2f ms  frame %6.2f ms  %llu primitives\n",
                  render::format_duration(f.t1 - f.t0).c_str(), t.build_ms, t.draw_ms, (unsigned long long)t.primitives);
  }

  // Folding: 1024 periods a strip, the period dragged by 0.01 % a frame.
  render::FigureParams s;
  s.type = render::FigureParams::Scope;
  s.lanes = {0};
  s.t0 = first + span / 10;
  s.fold = 1024;
  s.strip_px = 8;
  s.period_ns = 100'000;  // the synthetic tasks' period
  std::vector<double> fold_build;
  for (int k = 0; k < (quick ? 5 : 20); ++k) {
    s.period_ns *= 1.0001;
    const auto t = r->draw(scene, s, {});
    fold_build.push_back(t.build_ms);
    frame.push_back(t.draw_ms);
    prims = std::max(prims, t.primitives);
  }

  // Messages (issue 52): the 100-queue workload, every lane, zoomed from
  // the whole trace (bundles) to 10 us (arrows), each view drawn twice and
  // the second frame counted, as above; pictures at rest (bundles are).
  std::vector<double> message_frame, message_build, sequence_frame, sequence_build;
  render::ArrowLengths lane_lengths;
  double lane_order_ms = 0;
  size_t lane_count = 0;
  {
    if (messages_trace.empty()) messages_trace = "render_bench.queues.tine";
    if (!std::filesystem::exists(messages_trace)) {
      const std::string queues =
          (std::filesystem::path(argv[0]).parent_path() / ".." / "recorder" / "tinescope-queues").string();
      const std::string cmd = queues + " -o " + messages_trace + " --duration " + (quick ? "0.3" : "1") + " > /dev/null";
      if (std::system(cmd.c_str()) != 0) {
        std::fprintf(stderr, "render_bench: %s failed\n", cmd.c_str());
        return 1;
      }
    }
    render::Scene q;
    if (!q.add_trace(messages_trace, error)) {
      std::fprintf(stderr, "render_bench: %s\n", error.c_str());
      return 1;
    }
    render::FigureParams m;
    r->decode_per_column = render::kAtRestDecodePerColumn;  // (bundles are drawn at rest)
    const int64_t q0 = q.first_ns(), qspan = std::max<int64_t>(1, q.last_ns() - q0), qc = q0 + qspan / 2;
    const int qsteps = quick ? 10 : 30;
    for (int k = 0; k < qsteps; ++k) {
      const double w = double(qspan) * std::pow(1e4 / double(qspan), double(k) / (qsteps - 1));
      m.t0 = qc - int64_t(w / 2), m.t1 = m.t0 + std::max<int64_t>(2, int64_t(w));
      const auto first_draw = r->draw(q, m, {});
      const auto t = r->draw(q, m, {});
      message_build.push_back(first_draw.build_ms);
      message_frame.push_back(t.draw_ms);
      if (verbose)
        std::printf("  messages: window %-12s build %8.2f ms  frame %6.2f ms\n",
                    render::format_duration(m.t1 - m.t0).c_str(), first_draw.build_ms, t.draw_ms);
    }
    // The sequence diagram of every lane that talks over the same zooms,
    // in event order (real time where its steps do not fit).
    render::FigureParams sq;
    sq.type = render::FigureParams::Sequence;
    sq.spacing = render::Spacing::Order;
    sq.lanes = render::message_lanes(q, {});
    for (int k = 0; k < qsteps; ++k) {
      const double w = double(qspan) * std::pow(1e4 / double(qspan), double(k) / (qsteps - 1));
      sq.t0 = qc - int64_t(w / 2), sq.t1 = sq.t0 + std::max<int64_t>(2, int64_t(w));
      const auto first_draw = r->draw(q, sq, {});
      const auto t = r->draw(q, sq, {});
      sequence_build.push_back(first_draw.build_ms);
      sequence_frame.push_back(t.draw_ms);
      if (verbose)
        std::printf("  sequence: window %-12s build %8.2f ms  frame %6.2f ms  %llu arrows %llu bundles\n",
                    render::format_duration(sq.t1 - sq.t0).c_str(), first_draw.build_ms, t.draw_ms,
                    (unsigned long long)t.arrows, (unsigned long long)t.bundles);
    }
    // The lane order of shortest arrows against the order the threads came in.
    const auto order_t0 = std::chrono::steady_clock::now();
    const std::vector<uint32_t> shortest = render::order_lanes(q, {}, render::LaneOrder::ShortestArrows, &lane_lengths);
    lane_order_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - order_t0).count();
    lane_count = shortest.size();
    if (messages_trace == "render_bench.queues.tine" && !keep) {
      std::filesystem::remove(messages_trace);
      std::filesystem::remove(messages_trace + ".idx");
    }
  }

  // Six figures in one 1280x800 frame (issue 56; TuningFork §2): the
  // timeline of 32 lanes and the scope folded 1024 (GL), a time series, the
  // histogram, the pie and a stream figure (draw lists), all playing at 1x:
  // each frame the window (1 s) ends 1/24 s later, the histogram and pie are
  // played up to it. The streams are evaluated once, as the viewer holds
  // them; the pictures and chart data of a frame are built (off the UI
  // thread in the viewer), then the frame is drawn.
  std::vector<double> six_frame, six_build;
  double find_period_ms = 0;
  std::vector<analysis::PeriodCandidate> periods;
  {
    r->decode_per_column = index::kDecodeEventsPerColumn;
    const index::TraceIndex& ix = *scene.sources()[0].index;
    const trace::ClockMap& clock = ix.catalog().clock;
    std::string counter;
    for (const index::StreamInfo& st : ix.streams())
      if (st.kind == index::StreamKind::Counter && counter.empty()) counter = std::string(scene.string(0, st.key));
    const int64_t window = std::min<int64_t>(span / 2, 1'000'000'000), step = 1'000'000'000 / 24;
    const int frames = quick ? 24 : 96;
    const int64_t play0 = first + window;
    analysis::EvalOptions o;
    o.t0 = clock.to_ticks(play0 - window), o.t1 = clock.to_ticks(play0 + frames * step + 1);
    auto evaluate = [&](const std::string& text) {
      analysis::Expr e;
      std::unique_ptr<analysis::DerivedStream> d;
      if (analysis::parse_stream(text, e, error)) d = analysis::DerivedStream::evaluate(ix, e, error, o);
      if (!d) std::fprintf(stderr, "render_bench: %s: %s\n", text.c_str(), error.c_str());
      return d;
    };
    auto intervals = evaluate("intervals(name=\"" + busiest + "\")");
    auto samples = counter.empty() ? nullptr : evaluate("samples(name=\"" + counter + "\")");
    if (!intervals) return 1;
    const render::PlayableHistogram hist = render::PlayableHistogram::build(*intervals, clock, true);
    render::FigureParams tl = f, sc;
    sc.type = render::FigureParams::Scope;
    sc.lanes = {0};
    sc.fold = 1024;
    sc.strip_px = 8;
    sc.t0 = play0 - window, sc.t1 = play0;
    const auto p0 = std::chrono::steady_clock::now();
    periods = render::find_scope_periods(scene, sc);
    find_period_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - p0).count();
    sc.period_ns = periods.empty() ? 100'000 : periods[0].period_ns;
    const render::Rect series_rect{640, 400, 640, 100}, hist_rect{640, 500, 640, 100}, pie_rect{640, 600, 640, 100},
        stream_rect{640, 700, 640, 100};
    for (int k = 0; k < frames; ++k) {
      const int64_t play = play0 + k * step;
      tl.t0 = play - window, tl.t1 = play;
      sc.t0 = tl.t0, sc.t1 = tl.t1;
      render::Marks marks;
      marks.cursor = play;
      const auto b0 = std::chrono::steady_clock::now();
      const render::TimeAxis axis(tl.t0, tl.t1, 640);
      render::StreamPicture series, stream;
      if (samples) series = render::build_stream_picture(*samples, clock, axis, tl.t0, tl.t1, 640);
      stream = render::build_stream_picture(*intervals, clock, axis, tl.t0, tl.t1, 640);
      uint64_t shown = 0;
      const std::vector<uint64_t> counts = hist.up_to(*intervals, clock, clock.to_ticks(play), shown);
      const render::PieChart pie = render::build_pie(scene, 0, tl.lanes, tl.t0, play, analysis::ShareBy::Name);
      const double charts_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - b0).count();
      const auto t = r->draw_figures(scene, {{&tl, {0, 0, 1280, 400}}, {&sc, {0, 400, 640, 400}}}, marks,
                                     [&](ImDrawList* dl) {
                                       render::stream_list(dl, series_rect, series, render::series_colour(0));
                                       render::histogram_list(dl, hist_rect, counts, render::series_colour(1));
                                       render::pie_list(dl, pie_rect, pie.slices);
                                       render::stream_list(dl, stream_rect, stream, render::series_colour(2));
                                     });
      six_frame.push_back(t.draw_ms);
      six_build.push_back(t.build_ms + charts_ms);
      if (verbose)
        std::printf("  six figures at %s: build %.2f ms (charts %.2f), frame %.2f ms, %zu slices, %llu in the histogram\n",
                    render::format_time(play - first).c_str(), t.build_ms + charts_ms, charts_ms, t.draw_ms,
                    pie.slices.size(), (unsigned long long)shown);
    }
  }

  const double p50 = pct(frame, 0.5), p95 = pct(frame, 0.95);
  std::printf("figure: render.frame_ms.p50 %.2f ms (UI thread + glFinish, %dx%d, %zu lanes)\n", p50, W, H, f.lanes.size());
  std::printf("figure: render.frame_ms.p95 %.2f ms (goal <= 33 ms on llvmpipe, <= 4 ms on a GPU: %.2fx of 33)\n", p95,
              p95 / 33);
  std::printf("figure: render.build_ms.p50 %.2f ms (new view: pyramid queries + raster, off the UI thread)\n",
              pct(build, 0.5));
  std::printf("figure: render.build_ms.p95 %.2f ms\n", pct(build, 0.95));
  std::printf("figure: render.activity_ms.p95 %.2f ms (activity markers of '%s' over %zu lanes at every view of the zoom; "
              "goal <= 33 ms, a frame, off the UI thread: %.2fx)\n",
              pct(activity, 0.95), busiest.c_str(), f.lanes.size(), pct(activity, 0.95) / 33);
  std::printf("figure: render.fold_build_ms.p95 %.2f ms (fold 1024, %u lanes, period dragged)\n", pct(fold_build, 0.95),
              1u);
  std::printf("figure: render.message_frame_ms.p95 %.2f ms (the 100-queue workload, every lane, whole trace to 10 us, "
              "arrows or bundles; goal <= 33 ms on llvmpipe: %.2fx)\n",
              pct(message_frame, 0.95), pct(message_frame, 0.95) / 33);
  std::printf("figure: render.message_build_ms.p95 %.2f ms (its pictures, off the UI thread)\n", pct(message_build, 0.95));
  std::printf("figure: render.sequence_frame_ms.p95 %.2f ms (the sequence diagram of the same workload and zooms, event "
              "order; goal <= 33 ms on llvmpipe: %.2fx)\n",
              pct(sequence_frame, 0.95), pct(sequence_frame, 0.95) / 33);
  std::printf("figure: render.sequence_build_ms.p95 %.2f ms (its pictures, off the UI thread)\n", pct(sequence_build, 0.95));
  const double lane_ratio = lane_lengths.first ? double(lane_lengths.chosen) / double(lane_lengths.first) : 1.0;
  std::printf("figure: render.lane_order_arrow_ratio %.3f ratio (the 100-queue workload's %zu lanes in the order of shortest "
              "arrows: total arrow length %llu lanes against %llu as the threads came; goal <= 0.5: %.2fx; ordered in "
              "%.0f ms)\n",
              lane_ratio, lane_count, (unsigned long long)lane_lengths.chosen, (unsigned long long)lane_lengths.first,
              lane_ratio / 0.5, lane_order_ms);
  const double six_p95 = pct(six_frame, 0.95);
  std::printf("figure: render.six_figures_frame_ms.p95 %.2f ms (timeline 32 lanes, scope fold 1024, series, histogram, pie, "
              "stream at 1280x800 playing at 1x; goal <= 41 ms on llvmpipe (24 fps), <= 7 ms on a GPU: %.2fx of 41)\n",
              six_p95, six_p95 / 41);
  std::printf("figure: render.six_figures_build_ms.p95 %.2f ms (their pictures and chart data for each frame, off the UI thread)\n",
              pct(six_build, 0.95));
  std::printf("figure: render.find_period_ms %.2f ms (lane 0's period candidates: %s; goal well under 1 s: %.4fx of 1000)\n",
              find_period_ms, periods.empty() ? "none" : analysis::format_period(periods[0].period_ns).c_str(),
              find_period_ms / 1000);
  std::printf("figure: render.prims_per_frame.max %llu primitives (vs %llu events in the trace: one per event would be %.0fx)\n",
              (unsigned long long)prims, (unsigned long long)total_events, double(total_events) / double(std::max<uint64_t>(1, prims)));
  if (generated && !keep) {
    std::filesystem::remove(trace);
    std::filesystem::remove(trace + ".idx");
  }
  return 0;
}
