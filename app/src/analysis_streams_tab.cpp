// The analysis panel's Streams tab: a stream typed in the syntax of
// docs/ANALYSIS.md, evaluated off the UI thread, drawn as a figure under
// the timeline (from its pyramid), and its intervals made bookmarks.
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "tinescope/app/analysis_panel.hpp"
#include "imgui_colour.hpp"
#include "tinescope/render/figure_lists.hpp"
#include "tinescope/analysis/stream_expr.hpp"
#include "tinescope/render/stream_picture.hpp"

namespace tinescope::app {

using analysis::DerivedStream;
using analysis::Record;
using render::Rect;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

}  // namespace

struct AnalysisPanel::FigureCache {
  int64_t t0 = 0, t1 = 0;
  float width = 0;
  render::StreamPicture picture;
};

void AnalysisPanel::evaluate(const SharedView& v, const std::string& text, bool bookmark) {
  const render::Source* src = source(v);
  if (!src || job_.valid()) return;
  analysis::Expr e;
  std::string error;
  if (!analysis::parse_stream(text, e, error)) {
    status_ = "stream: " + error;
    return;
  }
  std::snprintf(text_, sizeof text_, "%s", text.c_str());
  bookmark_when_done_ = bookmark;
  status_ = "evaluating " + analysis::format_stream(e) + " ...";
  job_ = std::async(std::launch::async, [ix = src->index, e] {
    Evaluated out;
    out.text = analysis::format_stream(e);
    const auto t0 = Clock::now();
    out.stream = DerivedStream::evaluate(*ix, e, out.error);
    out.ms = ms_since(t0);
    return out;
  });
  index_ = src->index;
  catalog_ = src->catalog;
}

void AnalysisPanel::bookmark_stream(SharedView& v) {
  if (!stream_ || !catalog_) return;
  std::vector<int64_t>& b = v.marks->bookmarks;
  v.marks->clear_bookmarks();
  analysis::Expr e;  // messages(...): each record a message, (send, receive)
  std::string error;
  const bool messages = analysis::parse_stream(stream_text_, e, error) && e.op == analysis::Op::Messages;
  for (const Record& r : stream_->records()) {
    if (b.size() == kMaxBookmarks) break;
    b.push_back(catalog_->clock.to_ns(r.start));
    if (messages) v.marks->bookmark_messages[b.back()] = catalog_->clock.to_ns(r.end);
  }
  std::sort(b.begin(), b.end());
  status_ = std::to_string(b.size()) + " bookmarks" +
            (stream_->size() > kMaxBookmarks ? " (the first " + std::to_string(kMaxBookmarks) + ")" : "") +
            ": N / P or the Bookmark buttons step through them in every figure";
}

void AnalysisPanel::streams_tab(SharedView& v) {
  ImGui::TextWrapped("A stream, as on the command line (docs/ANALYSIS.md): e.g. longer(\"gc.quantum\", 1ms), "
                     "rate(samples(name=\"heap.*\")), span(\"a\", \"b\").");
  ImGui::SetNextItemWidth(-1);
  const bool entered = ImGui::InputText("##stream", text_, sizeof text_, ImGuiInputTextFlags_EnterReturnsTrue);
  v.record_control("stream_text");
  ImGui::BeginDisabled(job_.valid());
  if (ImGui::Button("Evaluate") || entered) evaluate(v, text_);
  v.record_control("stream_evaluate");
  ImGui::SameLine();
  ImGui::BeginDisabled(!stream_ || !stream_->intervals());
  if (ImGui::Button("Bookmark all")) bookmark_stream(v);
  v.record_control("stream_bookmark");
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Clear bookmarks")) v.marks->clear_bookmarks();
  ImGui::Separator();

  // "label [field]" on one line, the field recorded under `id` for tests.
  auto field = [&](const char* label, const char* id, char* buf, size_t size, float width) {
    ImGui::TextUnformatted(label);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(width);
    ImGui::InputText((std::string("##") + id).c_str(), buf, size);
    v.record_control(id);
  };

  // The common case in one action: a name's intervals longer than a threshold.
  ImGui::TextUnformatted("Bookmark intervals");
  field("named", "quick_name", quick_name_, sizeof quick_name_, 180);
  ImGui::SameLine();
  field("longer than", "quick_longer", quick_longer_, sizeof quick_longer_, 70);
  if (ImGui::Button("Bookmark them")) {
    int64_t ns = 0;
    if (!analysis::parse_duration_ns(quick_longer_, ns)) {
      status_ = std::string("not a duration: ") + quick_longer_;
    } else {
      analysis::Expr e;
      e.op = analysis::Op::Longer;
      e.ns = ns;
      e.args.resize(1);
      e.args[0].filter.name = quick_name_;
      evaluate(v, analysis::format_stream(e), true);
    }
  }
  v.record_control("quick_bookmark");
  ImGui::Separator();

  // Response time: from each start to the next end.
  field("Measure from", "measure_from", measure_from_, sizeof measure_from_, 140);
  ImGui::SameLine();
  field("to", "measure_to", measure_to_, sizeof measure_to_, 140);
  if (ImGui::Button("Measure (histogram)")) {
    evaluate(v, std::string("span(") + measure_from_ + ", " + measure_to_ + ")");
    show_tab("histogram");
  }
  v.record_control("measure");
  ImGui::EndDisabled();
  ImGui::Separator();

  // Needles of the stream above, into the hit list (Search tab).
  ImGui::BeginDisabled(search_job_.valid());
  ImGui::SetNextItemWidth(90);
  ImGui::InputInt("##k", &needles_k_, 10, 100);
  needles_k_ = std::clamp(needles_k_, 1, 100000);
  ImGui::SameLine();
  if (ImGui::Button("Longest of the stream")) find_needles(v, text_, false);
  v.record_control("needles_longest");
  ImGui::SetNextItemWidth(90);
  ImGui::InputFloat("##factor", &outlier_factor_, 1, 5, "%.3gx");
  outlier_factor_ = std::max(1.01f, outlier_factor_);
  ImGui::SameLine();
  if (ImGui::Button("Outliers per name")) find_needles(v, text_, true);
  v.record_control("needles_outliers");
  ImGui::EndDisabled();
  ImGui::Separator();
  ImGui::TextWrapped("%s", status_.c_str());
  if (stream_) {
    ImGui::TextDisabled("shown under the figures: %s", stream_text_.c_str());
    if (stream_->intervals() && ImGui::Button("Histogram of its durations")) show_tab("histogram");
    if (!stream_->intervals() && series_.size() < 8 && ImGui::Button("Keep as a series")) pin_series();
    v.record_control("pin_series");
  }
  if (!series_.empty()) {
    ImGui::TextDisabled("%zu series kept", series_.size());
    ImGui::SameLine();
    if (ImGui::SmallButton("Clear the series")) series_.clear();
    v.record_control("clear_series");
  }
}

void AnalysisPanel::pin_series() {
  if (!stream_ || stream_->intervals()) return;
  if (hist_job_.valid()) hist_job_.wait();  // (it reads the stream)
  hist_job_ = {};
  hist_.reset(), hist_counts_.clear();
  series_.push_back({stream_text_, std::move(stream_), catalog_, nullptr});
  figure_.reset();
  status_ = "kept as a series: " + series_.back().text + "; evaluate another to draw beside it";
}

void AnalysisPanel::draw_figure(ImDrawList* dl, const SharedView& v, Rect rect, const render::TimeAxis& axis) {
  if (!has_figure()) return;
  const render::TimelineGeometry g = render::TimelineGeometry::of(rect);
  const Rect plot = {g.plot.x, rect.y + 18, g.plot.w, rect.h - 20};
  dl->AddRectFilled({rect.x, rect.y}, {rect.x + rect.w, rect.y + rect.h}, colour(render::kBackground));
  dl->AddLine({rect.x, rect.y}, {rect.x + rect.w, rect.y}, IM_COL32(90, 90, 90, 255));
  // Each stream's picture of the window, rebuilt when the window or width changes.
  auto picture = [&](std::shared_ptr<FigureCache>& cache, const DerivedStream& s, const trace::Catalog& cat) -> const render::StreamPicture& {
    if (!cache || cache->t0 != v.t0 || cache->t1 != v.t1 || cache->width != plot.w) {
      auto c = std::make_shared<FigureCache>();
      c->t0 = v.t0, c->t1 = v.t1, c->width = plot.w;
      c->picture = render::build_stream_picture(s, cat.clock, axis, v.t0, v.t1, uint32_t(std::max(1.f, plot.w)));
      cache = c;
    }
    return cache->picture;
  };
  struct Drawn {
    const render::StreamPicture* picture;
    std::string text;
    uint32_t rgba;
  };
  std::vector<Drawn> drawn;
  for (size_t i = 0; i < series_.size(); ++i)
    drawn.push_back({&picture(series_[i].figure, *series_[i].stream, *series_[i].catalog), series_[i].text,
                     render::series_colour(i)});
  if (stream_ && catalog_)
    drawn.push_back({&picture(figure_, *stream_, *catalog_), stream_text_,
                     series_.empty() ? render::name_colour(stream_text_) : render::series_colour(series_.size())});
  // One value axis for the sample series: the range of them all.
  double lo = INFINITY, hi = -INFINITY;
  for (const Drawn& d : drawn)
    if (!d.picture->intervals) lo = std::min(lo, d.picture->lo), hi = std::max(hi, d.picture->hi);
  float x = rect.x + 4;
  for (const Drawn& d : drawn) {  // the legend, in each one's colour
    dl->AddText({x, rect.y + 2}, colour(d.rgba), d.text.c_str());
    x += ImGui::CalcTextSize(d.text.c_str()).x + 16;
  }
  if (std::isfinite(lo) && hi > lo) {
    for (double t : render::value_ticks(lo, hi, std::max(2, int(plot.h / 28)))) {
      const float y = plot.y + plot.h - 2 - float((t - lo) / (hi - lo)) * (plot.h - 4);
      dl->AddLine({plot.x, y}, {plot.x + plot.w, y}, IM_COL32(60, 62, 66, 255));
      char label[32];
      std::snprintf(label, sizeof label, "%.6g", t);
      dl->AddText({plot.x - 6 - ImGui::CalcTextSize(label).x, y - 7}, IM_COL32(160, 160, 160, 255), label);
    }
  } else if (stream_ && stream_->intervals()) {
    char label[64];
    std::snprintf(label, sizeof label, "%llu intervals", (unsigned long long)stream_->size());
    dl->AddText({rect.x + 4, rect.y + 20}, IM_COL32(160, 160, 160, 255), label);
  }
  for (const Drawn& d : drawn) render::stream_list(dl, plot, *d.picture, d.rgba, lo, hi);  // (the axis's range)
}

}  // namespace tinescope::app
