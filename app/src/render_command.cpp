// `tinescope render TRACE... -o out.png`: a figure drawn headless through
// EGL, exactly as the viewer draws it at the same size; the charts of
// streams (a time series, a histogram) drawn with cairo as PNG, SVG or PDF.
#include <algorithm>
#include <cctype>
#include <cstdio>

#include "commands.hpp"
#include "figure_options.hpp"
#include "tinescope/analysis/stream_expr.hpp"
#include "tinescope/render/chart.hpp"
#include "tinescope/render/headless.hpp"

namespace tinescope::app {

namespace {

struct RenderArgs {
  std::vector<std::string> traces;
  std::string size = "1280x800", out;
  FigureOptions figure;
  std::vector<std::string> streams;  // the charts' streams
  bool linear_bins = false;
};

// The stream and histogram charts: each stream evaluated over the window
// (from the first trace), then drawn with cairo.
int run_chart(const RenderArgs& a, int w, int h) {
  render::ChartFormat format;
  if (!render::chart_format(a.out, format)) {
    std::fprintf(stderr, "tinescope render: %s: a chart is written as .png, .svg or .pdf; name the output so\n",
                 a.out.c_str());
    return 2;
  }
  render::Scene scene;
  render::FigureParams f;
  render::Marks marks;
  if (int status = open_figure("render", a.traces, a.figure, scene, f, marks)) return status;
  if (a.streams.empty()) {
    std::fprintf(stderr, "tinescope render: --figure %s draws streams: give one with --stream, e.g. "
                         "--stream 'field(name=\"transaction\", \"latency_ms\")'\n", a.figure.figure.c_str());
    return 2;
  }
  if (a.traces.size() != 1) {
    std::fprintf(stderr, "tinescope render: --figure %s draws the streams of one trace, not %zu\n",
                 a.figure.figure.c_str(), a.traces.size());
    return 2;
  }
  const bool histogram = a.figure.figure == "histogram";
  if (histogram && a.streams.size() != 1) {
    std::fprintf(stderr, "tinescope render: --figure histogram bins one stream, not %zu\n", a.streams.size());
    return 2;
  }
  const render::Source& src = scene.sources().front();
  std::vector<std::unique_ptr<analysis::DerivedStream>> evaluated;
  render::StreamChart chart;
  std::string quantity;  // a field stream's field, named on the histogram's axis
  for (const std::string& text : a.streams) {
    analysis::Expr e;
    std::string error;
    if (!analysis::parse_stream(text, e, error)) {
      std::fprintf(stderr, "tinescope render: stream '%s': %s\n", text.c_str(), error.c_str());
      return 2;
    }
    // Records are keyed by their end: the stream chart also needs the
    // intervals that end after the window and start in it or before.
    const uint64_t k0 = src.catalog->clock.to_ticks(f.t0), k1 = src.catalog->clock.to_ticks(f.t1);
    const bool spans = !histogram && analysis::yields_intervals(e);
    analysis::EvalOptions o;
    o.t0 = k0, o.t1 = spans ? UINT64_MAX : k1;
    auto s = analysis::DerivedStream::evaluate(*src.index, e, error, o);
    if (!s) {
      std::fprintf(stderr, "tinescope render: stream '%s': %s\n", text.c_str(), error.c_str());
      return 2;
    }
    if (e.op == analysis::Op::Field) quantity = e.filter.field;
    uint64_t count = s->size();
    if (spans) {
      count = 0;
      for (const analysis::Record& r : s->records()) count += r.start <= k1;
    }
    chart.streams.push_back({analysis::format_stream(e), s.get(), count});
    evaluated.push_back(std::move(s));
  }
  std::string error;
  bool ok;
  uint64_t shown = 0;
  if (histogram) {
    const analysis::DerivedStream& s = *evaluated.front();
    const auto hist = render::PlayableHistogram::build(s, src.catalog->clock, !a.linear_bins);
    // Played up to the cursor, where one is given (the viewer's play head).
    const uint64_t key = marks.cursor == render::Marks::kNone ? UINT64_MAX : src.catalog->clock.to_ticks(marks.cursor);
    std::string title = chart.streams.front().label;
    if (!a.figure.from.empty() || !a.figure.to.empty())  // (the records whose key, an interval's end, is in the window)
      title += "   from " + render::format_time(f.t0 - scene.first_ns()) + " to " + render::format_time(f.t1 - scene.first_ns());
    render::HistogramChart hc{title, &hist, hist.up_to(s, src.catalog->clock, key, shown), quantity};
    ok = render::write_histogram_chart(a.out, w, h, hc, error);
  } else {
    chart.title = src.path;
    chart.clock = &src.catalog->clock;
    chart.t0 = f.t0, chart.t1 = f.t1, chart.origin = scene.first_ns(), chart.unit = scene.time_unit();
    for (const render::ChartStream& s : chart.streams) shown += s.count;
    ok = render::write_stream_chart(a.out, w, h, chart, error);
  }
  if (!ok) {
    std::fprintf(stderr, "tinescope render: %s\n", error.c_str());
    return 1;
  }
  std::printf("%s: %dx%d %s of %zu stream%s, %llu records\n", a.out.c_str(), w, h, a.figure.figure.c_str(),
              a.streams.size(), a.streams.size() == 1 ? "" : "s", (unsigned long long)shown);
  return 0;
}

int run_render(const RenderArgs& a) {
  int w = 0, h = 0;
  if (std::sscanf(a.size.c_str(), "%dx%d", &w, &h) != 2 || w < 64 || h < 64 || w > 16384 || h > 16384) {
    std::fprintf(stderr, "tinescope render: --size wants WxH (64..16384), not '%s'\n", a.size.c_str());
    return 2;
  }
  if (a.figure.figure == "stream" || a.figure.figure == "histogram") return run_chart(a, w, h);
  if (!a.streams.empty()) {
    std::fprintf(stderr, "tinescope render: --stream draws with --figure stream or histogram\n");
    return 2;
  }
  // The timeline, scope and sequence diagram are PNG only, so far: a name that asks for
  // another format is refused, not answered with a PNG under that name.
  const size_t dot = a.out.rfind('.');
  std::string ext = dot == std::string::npos || a.out.find('/', dot) != std::string::npos ? "" : a.out.substr(dot + 1);
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (ext != "png") {
    std::fprintf(stderr, "tinescope render: %s: the %s is drawn as PNG only; name the output .png\n", a.out.c_str(),
                 a.figure.figure.c_str());
    return 2;
  }
  render::Scene scene;
  render::FigureParams f;
  render::Marks marks;
  if (int status = open_figure("render", a.traces, a.figure, scene, f, marks)) return status;
  std::string error;
  auto r = render::HeadlessRenderer::create(w, h, error);
  if (!r) {
    std::fprintf(stderr, "tinescope render: %s\n", error.c_str());
    return 1;
  }
  const auto t = r->draw(scene, f, marks);
  if (!render::write_png(a.out, w, h, r->context().read_rgba(), error)) {
    std::fprintf(stderr, "tinescope render: %s\n", error.c_str());
    return 1;
  }
  std::printf("%s: %dx%d %s (build %.1f ms, draw %.1f ms, %llu primitives, %s)\n", a.out.c_str(), w, h,
              a.figure.figure.c_str(), t.build_ms, t.draw_ms, (unsigned long long)t.primitives,
              r->context().renderer().c_str());
  if (f.type == render::FigureParams::Scope) {
    std::printf("  period %s, fold %u %s%s\n", analysis::format_period(f.period_ns).c_str(), f.fold,
                render::fold_mode_name(f.fold_mode), f.period_candidates.empty() ? "" : " (found)");
    for (const analysis::PeriodCandidate& c : f.period_candidates)
      std::printf("  period candidate %-14s sharpness %.3f  %s (%llu starts)\n", analysis::format_period(c.period_ns).c_str(),
                  c.sharpness, c.source.c_str(), (unsigned long long)c.starts);
  }
  if (f.type == render::FigureParams::Sequence)
    std::printf("  %llu lifeline%s (%s), %s spacing: %llu arrows%s%s%s\n", (unsigned long long)t.lifelines,
                t.lifelines == 1 ? "" : "s", render::lifelines_name(f.lifelines), render::spacing_name(f.spacing),
                (unsigned long long)t.arrows, t.bundles ? (", " + std::to_string(t.bundles) + " bundles").c_str() : "",
                t.note.empty() ? "" : "; ", t.note.c_str());
  if (f.lane_order == render::LaneOrder::ShortestArrows) {
    const render::ArrowLengths& len = f.arrow_lengths;
    std::printf("  lanes in the order of shortest arrows: total arrow length %llu lanes (first appearance: %llu, %.2fx)\n",
                (unsigned long long)len.chosen, (unsigned long long)len.first,
                len.first ? double(len.chosen) / double(len.first) : 1.0);
  }
  if (f.rule_verdicts) {
    uint64_t violations = 0, messages = 0;
    for (const analysis::RuleReport& r : *f.rule_verdicts) violations += r.violations_total, messages += r.messages;
    std::printf("  arrows by the rules of %s: %llu violations in %llu messages (red), those that keep them green\n",
                f.rules_file.c_str(), (unsigned long long)violations, (unsigned long long)messages);
  }
  if (!f.hidden_categories.empty()) {
    uint64_t names = 0;
    for (const auto& per_source : *f.hidden_names) names += uint64_t(std::count(per_source.begin(), per_source.end(), 1));
    std::string list;
    for (const std::string& c : f.hidden_categories) list += (list.empty() ? "" : ", ") + c;
    std::printf("  not drawn: the intervals and instants of %s (%llu names; a name also in a shown category stays)\n",
                list.c_str(), (unsigned long long)names);
  }
  return 0;
}

}  // namespace

void add_render_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<RenderArgs>();
  CLI::App* cmd = app.add_subcommand("render", "draw a figure to a PNG, with no window (EGL)");
  cmd->add_option("traces", args->traces, "trace files (indexed if needed)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", args->out, "the picture to write: .png; the charts also .svg or .pdf")->required();
  cmd->add_option("--size", args->size, "WxH in pixels (points in SVG and PDF)");
  add_figure_options(*cmd, args->figure, {"stream", "histogram"});
  cmd->add_option("--stream", args->streams,
                  "stream and histogram: a stream to draw (docs/ANALYSIS.md); repeatable for the stream chart");
  cmd->add_flag("--linear-bins", args->linear_bins, "histogram: linear bins (default: logarithmic where values allow)");
  cmd->callback([args, exit_code] { *exit_code = run_render(*args); });
}

}  // namespace tinescope::app
