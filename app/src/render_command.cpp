// `tinescope render TRACE... -o out.png|svg|pdf`: figures drawn headless,
// exactly as the viewer draws them at the same size: the timeline, scope
// and sequence diagram through EGL, the charts (time series, stream,
// histogram, pie) with cairo; several, comma separated, stacked top to
// bottom in one picture (render/chart.hpp's Sheet).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <memory>
#include <unistd.h>

#include "commands.hpp"
#include "figure_options.hpp"
#include "tinescope/analysis/stream_expr.hpp"
#include "tinescope/analysis/time_share.hpp"
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
  std::string pie_by = "name";
  std::string bookmark;  // a stream whose records become the bookmarks
};

bool is_chart(const std::string& figure) {
  return figure == "stream" || figure == "series" || figure == "histogram" || figure == "pie";
}

// The streams of a stream, series or histogram chart, each evaluated over
// the window of the first trace. A series with no --stream draws the
// counters of its lanes. Returns 0, or the exit status after saying why.
int evaluate_streams(const RenderArgs& a, const std::string& figure, const render::Scene& scene,
                     const render::FigureParams& f, std::vector<std::unique_ptr<analysis::DerivedStream>>& evaluated,
                     render::StreamChart& chart, std::string& quantity) {
  std::vector<std::string> texts = a.streams;
  if (texts.empty() && figure == "series") {
    for (uint32_t id = 0; id < scene.lanes().size() && texts.size() < 8; ++id) {
      const render::Lane& lane = scene.lanes()[id];
      if (lane.source != 0 || (!f.lanes.empty() && std::find(f.lanes.begin(), f.lanes.end(), id) == f.lanes.end()))
        continue;
      for (const std::string& name : lane.counter_names)
        if (texts.size() < 8 && std::find(texts.begin(), texts.end(), "samples(name=\"" + name + "\")") == texts.end())
          texts.push_back("samples(name=\"" + name + "\")");
    }
    if (texts.empty()) {
      std::fprintf(stderr, "tinescope render: --figure series: the lanes have no counters; name a sample stream with --stream\n");
      return 2;
    }
  }
  if (texts.empty()) {
    std::fprintf(stderr, "tinescope render: --figure %s draws streams: give one with --stream, e.g. "
                         "--stream 'field(name=\"transaction\", \"latency_ms\")'\n", figure.c_str());
    return 2;
  }
  const bool histogram = figure == "histogram";
  if (histogram && texts.size() != 1) {
    std::fprintf(stderr, "tinescope render: --figure histogram bins one stream, not %zu\n", texts.size());
    return 2;
  }
  const size_t traces = scene.sources().size();
  for (const std::string& text : texts) {
    analysis::Expr e;
    std::string error;
    if (!analysis::parse_stream(text, e, error)) {
      std::fprintf(stderr, "tinescope render: stream '%s': %s\n", text.c_str(), error.c_str());
      return 2;
    }
    if (e.op == analysis::Op::Field) quantity = e.filter.field;
    // On every trace (several: each on the first's clock), drawn from those
    // where it has records in the window (the first, where none has).
    const size_t before = chart.streams.size();
    for (size_t t = 0; t < traces; ++t) {
      const render::Source& src = scene.sources()[t];
      // Records are keyed by their end: the stream chart also needs the
      // intervals that end after the window and start in it or before.
      const uint64_t k0 = src.catalog->clock.to_ticks(f.t0), k1 = src.catalog->clock.to_ticks(f.t1);
      const bool spans = !histogram && analysis::yields_intervals(e);
      analysis::EvalOptions o;
      o.t0 = k0, o.t1 = spans ? UINT64_MAX : k1;
      auto s = analysis::DerivedStream::evaluate(*src.index, e, error, o);
      if (!s) {
        std::fprintf(stderr, "tinescope render: stream '%s' on %s: %s\n", text.c_str(), src.path.c_str(), error.c_str());
        return 2;
      }
      uint64_t count = s->size();
      if (spans) {
        count = 0;
        for (const analysis::Record& r : s->records()) count += r.start <= k1;
      }
      if (count == 0 && (t > 0 || traces > 1)) continue;
      std::string label = analysis::format_stream(e);
      if (traces > 1) label += "  @ " + src.path.substr(src.path.rfind('/') + 1);
      chart.streams.push_back({label, s.get(), count, &src.catalog->clock});
      evaluated.push_back(std::move(s));
      if (histogram) break;  // (one stream binned: the first trace that has it)
    }
    if (chart.streams.size() == before) {  // nowhere: said in the legend
      const render::Source& src = scene.sources().front();
      auto s = analysis::DerivedStream::evaluate(*src.index, e, error, {});
      if (!s) return std::fprintf(stderr, "tinescope render: stream '%s': %s\n", text.c_str(), error.c_str()), 2;
      chart.streams.push_back({analysis::format_stream(e), s.get(), 0, &src.catalog->clock});
      evaluated.push_back(std::move(s));
    }
  }
  return 0;
}

// --bookmark: the stream's records (their starts) become every figure's
// bookmarks, as the viewer's "Bookmark all" makes them. 0, or the exit status.
int bookmark_stream(const std::string& text, const render::Scene& scene, std::vector<render::Marks>& marks) {
  analysis::Expr e;
  std::string error;
  if (!analysis::parse_stream(text, e, error))
    return std::fprintf(stderr, "tinescope render: --bookmark '%s': %s\n", text.c_str(), error.c_str()), 2;
  const render::Source& src = scene.sources().front();
  auto s = analysis::DerivedStream::evaluate(*src.index, e, error, {});
  if (!s) return std::fprintf(stderr, "tinescope render: --bookmark '%s': %s\n", text.c_str(), error.c_str()), 2;
  constexpr size_t kMost = 100000;  // (the viewer's limit)
  std::vector<int64_t> starts;
  std::map<int64_t, int64_t> messages;  // a message's bookmark: its send, and its receive
  for (const analysis::Record& r : s->records()) {
    if (starts.size() == kMost) break;
    starts.push_back(src.catalog->clock.to_ns(r.start));
    if (e.op == analysis::Op::Messages) messages[starts.back()] = src.catalog->clock.to_ns(r.end);
  }
  std::sort(starts.begin(), starts.end());
  for (render::Marks& m : marks) m.bookmarks = starts, m.bookmark_messages = messages;
  std::printf("  %zu bookmarks from %s%s\n", starts.size(), analysis::format_stream(e).c_str(),
              s->size() > kMost ? " (the first 100000)" : "");
  return 0;
}

// A chart's data, made before the picture's file is: a chart that cannot be
// made leaves no file (and never a user's file half written over).
struct Chart {
  std::string figure;
  std::vector<std::unique_ptr<analysis::DerivedStream>> evaluated;
  render::StreamChart streams;
  std::unique_ptr<render::PlayableHistogram> histogram;
  render::HistogramChart binned;
  render::PieChart pie;
  uint64_t records = 0;
};

// Returns 0, or the exit status after saying why.
int prepare_chart(const RenderArgs& a, const std::string& figure, const render::Scene& scene,
                  const render::FigureParams& f, const render::Marks& marks, Chart& c) {
  c.figure = figure;
  const render::Source& src = scene.sources().front();
  if (figure == "pie") {
    analysis::ShareBy by = analysis::ShareBy::Name;
    analysis::parse_share_by(a.pie_by, by);
    // Up to the cursor (the play head) where it is in the window.
    const int64_t end = marks.cursor != render::Marks::kNone && marks.cursor > f.t0 && marks.cursor < f.t1 ? marks.cursor : f.t1;
    c.pie = render::build_pie(scene, 0, f.lanes, f.t0, end, by);
    for (const render::PieSlice& s : c.pie.slices) c.records += s.items;
    return 0;
  }
  std::string quantity;  // a field stream's field, named on the histogram's axis
  if (int status = evaluate_streams(a, figure, scene, f, c.evaluated, c.streams, quantity)) return status;
  if (figure == "histogram") {
    const analysis::DerivedStream& s = *c.evaluated.front();
    const trace::ClockMap& clock = *c.streams.streams.front().clock;
    c.histogram = std::make_unique<render::PlayableHistogram>(render::PlayableHistogram::build(s, clock, !a.linear_bins));
    // Played up to the cursor, where one is given (the viewer's play head).
    const uint64_t key = marks.cursor == render::Marks::kNone ? UINT64_MAX : clock.to_ticks(marks.cursor);
    std::string title = c.streams.streams.front().label;
    if (!a.figure.from.empty() || !a.figure.to.empty())  // (the records whose key, an interval's end, is in the window)
      title += "   from " + render::format_time(f.t0 - scene.first_ns()) + " to " + render::format_time(f.t1 - scene.first_ns());
    c.binned = {title, c.histogram.get(), c.histogram->up_to(s, clock, key, c.records), quantity};
    return 0;
  }
  c.streams.title = src.path;
  for (size_t t = 1; t < scene.sources().size(); ++t) c.streams.title += " + " + scene.sources()[t].path;
  c.streams.clock = &src.catalog->clock;
  c.streams.t0 = f.t0, c.streams.t1 = f.t1, c.streams.origin = scene.first_ns(), c.streams.unit = scene.time_unit();
  c.streams.cursor = marks.cursor, c.streams.bookmarks = marks.bookmarks;
  for (const render::ChartStream& s : c.streams.streams) c.records += s.count;
  return 0;
}

// One chart in its slot of the sheet.
bool draw_chart(const Chart& c, render::Sheet& sheet, int y, int h, std::string& error) {
  if (c.figure == "pie") {
    if (!sheet.pie_chart(y, h, c.pie, error)) return false;
    std::printf("  pie by %s: %zu slices", c.pie.by.c_str(), c.pie.slices.size());
    for (size_t i = 0; i < c.pie.slices.size() && i < 5; ++i)
      std::printf("%s %s %s", i ? "," : "", c.pie.slices[i].label.c_str(), c.pie.slices[i].time.c_str());
    std::printf("%s\n", c.pie.slices.size() > 5 ? ", ..." : "");
    return true;
  }
  if (!(c.figure == "histogram" ? sheet.histogram_chart(y, h, c.binned, error) : sheet.stream_chart(y, h, c.streams, error)))
    return false;
  std::printf("  %s of %zu stream%s, %llu records\n", c.figure.c_str(), c.streams.streams.size(),
              c.streams.streams.size() == 1 ? "" : "s", (unsigned long long)c.records);
  return true;
}

// What a drawn GL figure says beside its picture.
void describe(const render::FigureParams& f, const render::HeadlessRenderer::Timing& t) {
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
}

int run_render(const RenderArgs& a) {
  int w = 0, h = 0;
  if (std::sscanf(a.size.c_str(), "%dx%d", &w, &h) != 2 || w < 64 || h < 64 || w > 16384 || h > 16384) {
    std::fprintf(stderr, "tinescope render: --size wants WxH (64..16384), not '%s'\n", a.size.c_str());
    return 2;
  }
  const std::vector<std::string> figures = analysis::split_categories(a.figure.figure);
  if (figures.empty()) return std::fprintf(stderr, "tinescope render: --figure names no figure\n"), 2;
  render::ChartFormat format;
  if (!render::chart_format(a.out, format)) {
    std::fprintf(stderr, "tinescope render: %s: a picture is written as .png, .svg or .pdf; name the output so\n",
                 a.out.c_str());
    return 2;
  }
  const bool charts = std::any_of(figures.begin(), figures.end(), is_chart);
  if (!a.streams.empty() && std::none_of(figures.begin(), figures.end(), [](const std::string& f) {
        return f == "stream" || f == "series" || f == "histogram";
      })) {
    std::fprintf(stderr, "tinescope render: --stream draws with --figure stream, series or histogram\n");
    return 2;
  }
  if (a.traces.size() > 1 && std::any_of(figures.begin(), figures.end(), [](const std::string& f) {
        return f == "histogram" || f == "pie";
      }))
    std::printf("(the histogram and the pie are of the first trace that has their stream, or of the first trace)\n");
  if (analysis::ShareBy by; !analysis::parse_share_by(a.pie_by, by))
    return std::fprintf(stderr, "tinescope render: --pie-by: name, thread or task, not '%s'\n", a.pie_by.c_str()), 2;
  // The trace once, then each figure's settings against it (a chart's as a timeline's: window, lanes, cursor).
  render::Scene scene;
  std::vector<render::FigureParams> params(figures.size());
  std::vector<render::Marks> marks(figures.size());
  for (size_t i = 0; i < figures.size(); ++i) {
    FigureOptions o = a.figure;
    o.figure = is_chart(figures[i]) ? "timeline" : figures[i];
    std::string error;
    if (i == 0) {
      if (int status = open_figure("render", a.traces, o, scene, params[0], marks[0])) return status;
    } else if (!figure_params(o, scene, params[i], marks[i], error)) {
      std::fprintf(stderr, "tinescope render: %s\n", error.c_str());
      return 2;
    }
  }
  if (!a.bookmark.empty())
    if (int status = bookmark_stream(a.bookmark, scene, marks)) return status;
  // A single GL figure as PNG: its framebuffer, byte for byte.
  const bool one_picture = figures.size() == 1 && !charts && format == render::ChartFormat::Png;
  const int slot = h / int(figures.size());
  if (slot < 64) return std::fprintf(stderr, "tinescope render: %d figures need a taller picture than %d\n", int(figures.size()), h), 2;
  std::vector<Chart> prepared(figures.size());
  for (size_t i = 0; i < figures.size(); ++i)
    if (is_chart(figures[i]))
      if (int status = prepare_chart(a, figures[i], scene, params[i], marks[i], prepared[i])) return status;
  std::string error;
  std::unique_ptr<render::Sheet> sheet;
  if (!one_picture) {
    if (charts && (w < 200 || slot < 120)) {
      std::fprintf(stderr, "tinescope render: %s: too small for a chart (200x120 points a figure at least)\n", a.out.c_str());
      return 1;
    }
    sheet = std::make_unique<render::Sheet>(a.out, w, h, error);
    if (!sheet->ok()) return std::fprintf(stderr, "tinescope render: %s\n", error.c_str()), 1;
  }
  std::printf("%s: %dx%d %s\n", a.out.c_str(), w, h, a.figure.figure.c_str());
  std::unique_ptr<render::HeadlessRenderer> r;
  uint64_t records = 0;
  for (size_t i = 0; i < figures.size(); ++i) {
    const int y = int(i) * slot, fh = i + 1 == figures.size() ? h - y : slot;
    if (is_chart(figures[i])) {
      if (!draw_chart(prepared[i], *sheet, y, fh, error)) {
        std::fprintf(stderr, "tinescope render: %s: %s\n", a.out.c_str(), error.c_str());
        sheet.reset();
        ::unlink(a.out.c_str());  // (a half-drawn page is no picture; ours, made above)
        return 1;
      }
      records += prepared[i].records;
      continue;
    }
    if (!r || r->context().width() != w || r->context().height() != fh) {
      r = render::HeadlessRenderer::create(w, fh, error);
      if (!r) return std::fprintf(stderr, "tinescope render: %s\n", error.c_str()), 1;
    }
    const auto t = r->draw(scene, params[i], marks[i]);
    std::printf("  %s (build %.1f ms, draw %.1f ms, %llu primitives, %s)\n", figures[i].c_str(), t.build_ms, t.draw_ms,
                (unsigned long long)t.primitives, r->context().renderer().c_str());
    describe(params[i], t);
    if (one_picture) {
      if (!render::write_png(a.out, w, h, r->context().read_rgba(), error))
        return std::fprintf(stderr, "tinescope render: %s\n", error.c_str()), 1;
    } else {
      sheet->pixels(y, w, fh, r->context().read_rgba());
    }
  }
  if (sheet && !sheet->finish(error)) return std::fprintf(stderr, "tinescope render: %s\n", error.c_str()), 1;
  if (charts) std::printf("  %llu records\n", (unsigned long long)records);
  return 0;
}

}  // namespace

void add_render_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<RenderArgs>();
  CLI::App* cmd = app.add_subcommand("render", "draw figures to a PNG, SVG or PDF, with no window (EGL, cairo)");
  cmd->add_option("traces", args->traces, "trace files (indexed if needed)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", args->out, "the picture to write: .png, .svg or .pdf")->required();
  cmd->add_option("--size", args->size, "WxH in pixels (points in SVG and PDF)");
  add_figure_options(*cmd, args->figure, {"series", "stream", "histogram", "pie"}, true);
  cmd->add_option("--stream", args->streams,
                  "series, stream and histogram: a stream to draw (docs/ANALYSIS.md); repeatable for the series and "
                  "stream charts (a series with none draws its lanes' counters)");
  cmd->add_flag("--linear-bins", args->linear_bins, "histogram: linear bins (default: logarithmic where values allow)");
  cmd->add_option("--bookmark", args->bookmark,
                  "bookmark the records of this stream in every figure, e.g. 'longer(\"gc.quantum\", 600us)'");
  cmd->add_option("--pie-by", args->pie_by, "pie: name (each name's own time; the default), thread or task")
      ->check(CLI::IsMember({"name", "thread", "task"}));
  cmd->callback([args, exit_code] { *exit_code = run_render(*args); });
}

}  // namespace tinescope::app
