// The viewer's layout: the control rows above the figures, the overview,
// and the figures' rectangles, the analysis panel beside them.
#include <epoxy/gl.h>  // before GLFW, which then includes no GL header of its own
#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "tinescope/app/viewer.hpp"
#include "viewer_state.hpp"

namespace tinescope::app {

using render::FigureParams;
using render::Rect;
using render::Lifelines;
using render::Spacing;

namespace {
constexpr float kOverviewPx = 34;  // the overview's height
}  // namespace

void Viewer::record_control(const char* id) {
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  controls_.push_back({id, {a.x, a.y, b.x - a.x, b.y - a.y}});
}

void Viewer::controls() {
  controls_.clear();
  const ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos({0, 0});
  ImGui::SetNextWindowSize({io.DisplaySize.x, 0});
  ImGui::Begin("controls", nullptr,
               ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_AlwaysAutoResize |
                   ImGuiWindowFlags_NoBringToFrontOnFocus);
  if (ImGui::Button("Fit (F)")) fit();
  record_control("fit");
  ImGui::SameLine();
  if (ImGui::Button("Zoom to selection (Z)") && marks_.has_selection()) set_window(marks_.sel0, marks_.sel1);
  record_control("zoom_selection");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(180);
  float theta = float(theta_us_);
  if (ImGui::SliderFloat("log time", &theta, 0.f, 1000.f, theta == 0 ? "linear" : "theta %.3g/us",
                         ImGuiSliderFlags_Logarithmic))
    theta_us_ = theta;
  record_control("theta");
  ImGui::SameLine();
  if (ImGui::Button("Linear (L)")) theta_us_ = 0;
  record_control("linear");
  ImGui::SameLine();
  if (ImGui::Button("+ Timeline")) add_figure(FigureParams::Timeline);
  record_control("add_timeline");
  ImGui::SameLine();
  if (ImGui::Button("+ Scope")) add_figure(FigureParams::Scope);
  record_control("add_scope");
  ImGui::SameLine();
  if (ImGui::Button("+ Sequence")) add_figure(FigureParams::Sequence);
  record_control("add_sequence");
  ImGui::SameLine();
  if (ImGui::Button(analysis_open_ ? "Analysis <<" : "Analysis >>")) analysis_open_ = !analysis_open_;
  record_control("analysis");
  ImGui::SameLine();
  ImGui::TextDisabled("window %s", render::format_duration(t1_ - t0_, scene_->time_unit()).c_str());
  if (!figures_.empty() && !figures_[0]->params.hidden_categories.empty()) {
    // What the timelines leave out is said where they are looked at.
    std::string hidden;
    for (const std::string& c : figures_[0]->params.hidden_categories) hidden += (hidden.empty() ? "" : ", ") + c;
    ImGui::SameLine();
    if (hidden.size() > 60) hidden = hidden.substr(0, 57) + "...";
    ImGui::TextColored(ImVec4(1.f, 0.75f, 0.3f, 1.f), "hidden in the timelines: %s", hidden.c_str());
    record_control("hidden_categories");
  }
  if (marks_.cursor != render::Marks::kNone) {
    ImGui::SameLine();
    ImGui::TextDisabled("cursor %s", render::format_time(marks_.cursor - scene_->first_ns(), 1, scene_->time_unit()).c_str());
  }

  play_controls();
  timeline_controls();

  // The scope's controls act on every scope figure.
  Figure* scope = nullptr;
  for (auto& f : figures_)
    if (f->params.type == FigureParams::Scope && !scope) scope = f.get();
  if (scope) {
    FigureParams& p = scope->params;
    double period_us = p.period_ns / 1e3;
    ImGui::SetNextItemWidth(150);
    if (ImGui::InputDouble("period us", &period_us, 0, 0, "%.6f", ImGuiInputTextFlags_EnterReturnsTrue) &&
        period_us > 0)
      p.period_ns = period_us * 1e3;
    record_control("period");
    ImGui::SameLine();
    // Fine control: a drag that moves by parts per million of the period.
    ImGui::SetNextItemWidth(160);
    double fine = p.period_ns;
    if (ImGui::DragScalar("##fine", ImGuiDataType_Double, &fine, float(p.period_ns * 2e-6), nullptr, nullptr,
                          "%.4f ns") &&
        fine > 0)
      p.period_ns = fine;
    record_control("period_fine");
    ImGui::SameLine();
    if (ImGui::ArrowButton("##less", ImGuiDir_Left)) p.period_ns -= 0.1;
    record_control("period_less");
    ImGui::SameLine();
    if (ImGui::ArrowButton("##more", ImGuiDir_Right)) p.period_ns += 0.1;
    record_control("period_more");
    ImGui::SameLine();
    // The periods of the folded lanes, found from the index (analysis/period.hpp):
    // the best is taken at once, the others offered beside it.
    if (ImGui::Button("Find period")) {
      period_candidates_ = render::find_scope_periods(*scene_, p);
      if (!period_candidates_.empty()) p.period_ns = period_candidates_[0].period_ns;
      period_found_ = period_candidates_.empty() ? "no period found in these lanes" : "";
    }
    record_control("find_period");
    for (size_t i = 0; i < period_candidates_.size(); ++i) {
      const analysis::PeriodCandidate& c = period_candidates_[i];
      ImGui::SameLine();
      const std::string label = analysis::format_period(c.period_ns) + "##candidate" + std::to_string(i);
      const bool current = std::fabs(p.period_ns - c.period_ns) <= 1e-9 * c.period_ns;
      if (current) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
      if (ImGui::SmallButton(label.c_str())) p.period_ns = c.period_ns;
      if (current) ImGui::PopStyleColor();
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("%s repeats every %s (sharpness %.3f over %llu starts)", c.source.c_str(),
                          analysis::format_period(c.period_ns).c_str(), c.sharpness, (unsigned long long)c.starts);
      record_control(("period_candidate_" + std::to_string(i)).c_str());
    }
    if (!period_found_.empty()) {
      ImGui::SameLine();
      ImGui::TextDisabled("%s", period_found_.c_str());
    }
    ImGui::SameLine();
    int fold = int(p.fold);
    ImGui::SetNextItemWidth(160);
    if (ImGui::SliderInt("fold", &fold, 1, 4096, "%d", ImGuiSliderFlags_Logarithmic)) p.fold = uint32_t(std::max(1, fold));
    record_control("fold");
    ImGui::SameLine();
    // Mean: how often busy; max: ever busy (a rare event shows); min: always busy.
    ImGui::SetNextItemWidth(70);
    if (ImGui::BeginCombo("##fold_mode", render::fold_mode_name(p.fold_mode))) {
      for (render::FoldMode m : {render::FoldMode::Mean, render::FoldMode::Max, render::FoldMode::Min})
        if (ImGui::Selectable(render::fold_mode_name(m), m == p.fold_mode)) p.fold_mode = m;
      ImGui::EndCombo();
    }
    record_control("fold_mode");
    ImGui::SameLine();
    int strip = int(p.strip_px);
    ImGui::SetNextItemWidth(100);
    if (ImGui::SliderInt("strip px", &strip, 1, 64)) p.strip_px = uint32_t(std::max(1, strip));
    record_control("strip");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(140);
    const std::vector<render::Lane>& lanes = scene_->lanes();
    const uint32_t current = p.lanes.empty() ? 0 : p.lanes[0];
    if (ImGui::BeginCombo("lane", current < lanes.size() ? lanes[current].name.c_str() : "?")) {
      for (uint32_t i = 0; i < lanes.size(); ++i)
        if (ImGui::Selectable(lanes[i].name.c_str(), i == current)) p.lanes = {i};
      ImGui::EndCombo();
    }
    record_control("lane");
    for (auto& f : figures_)
      if (f->params.type == FigureParams::Scope && f.get() != scope)
        f->params.period_ns = p.period_ns, f->params.fold = p.fold, f->params.strip_px = p.strip_px,
        f->params.fold_mode = p.fold_mode;
  }
  const float bottom = ImGui::GetWindowPos().y + ImGui::GetWindowSize().y;
  ImGui::End();
  layout_figures(bottom);
}

// For every timeline and sequence diagram: the lanes' order (render/lane_order.hpp; "shortest
// arrows" reads the flow table once and says how much shorter they got),
// and which messages' arrows are drawn (analysis/message_filter.hpp).
void Viewer::timeline_controls() {
  Figure* first = nullptr;
  bool sequence = false;
  for (auto& f : figures_) {
    if (f->params.type != FigureParams::Scope && !first) first = f.get();
    sequence |= f->params.type == FigureParams::Sequence;
  }
  if (!first) return;
  const std::pair<render::LaneOrder, const char*> orders[] = {{render::LaneOrder::FirstAppearance, "as they came"},
                                                               {render::LaneOrder::ByName, "by name"},
                                                               {render::LaneOrder::ByProcess, "by process"},
                                                               {render::LaneOrder::ShortestArrows, "shortest arrows"}};
  const char* current = orders[0].second;
  for (const auto& [order, label] : orders)
    if (first->params.lane_order == order) current = label;
  ImGui::SetNextItemWidth(150);  // (a row of its own: the others fill 1280 px)
  if (ImGui::BeginCombo("lanes", current)) {
    for (const auto& [order, label] : orders) {
      if (ImGui::Selectable(label, first->params.lane_order == order)) set_lane_order(order);
      record_control((std::string("lane_order_") + render::lane_order_name(order)).c_str());
    }
    ImGui::EndCombo();
  }
  record_control("lane_order");
  const render::ArrowLengths& a = first->params.arrow_lengths;
  if (first->params.lane_order == render::LaneOrder::ShortestArrows && a.first) {
    ImGui::SameLine();
    ImGui::TextDisabled("arrows %.2fx as long", double(a.chosen) / double(a.first));
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(260);
  if (ImGui::InputTextWithHint("messages", "channel=q.1* from=... size>=N latency>2ms", message_filter_text_,
                               sizeof message_filter_text_, ImGuiInputTextFlags_EnterReturnsTrue))
    set_message_filter(message_filter_text_);
  record_control("message_filter");
  if (!message_filter_error_.empty()) {
    ImGui::SameLine();
    ImGui::TextColored(ImVec4(1.f, 0.45f, 0.35f, 1.f), "%s", message_filter_error_.c_str());
  }
  if (sequence) {  // the sequence diagrams' spacing
    Spacing now = Spacing::Time;
    for (auto& f : figures_)
      if (f->params.type == FigureParams::Sequence) now = f->params.spacing;
    ImGui::SameLine();
    ImGui::SetNextItemWidth(130);
    if (ImGui::BeginCombo("spacing", now == Spacing::Order ? "event order" : "real time")) {
      if (ImGui::Selectable("real time", now == Spacing::Time)) set_spacing(Spacing::Time);
      record_control("spacing_time");
      if (ImGui::Selectable("event order", now == Spacing::Order)) set_spacing(Spacing::Order);
      record_control("spacing_order");
      ImGui::EndCombo();
    }
    record_control("spacing");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(110);
    Lifelines lifelines = Lifelines::Threads;
    for (auto& f : figures_)
      if (f->params.type == FigureParams::Sequence) lifelines = f->params.lifelines;
    if (ImGui::BeginCombo("lifelines", render::lifelines_name(lifelines))) {
      if (ImGui::Selectable("threads", lifelines == Lifelines::Threads)) set_lifelines(Lifelines::Threads);
      record_control("lifelines_threads");
      if (ImGui::Selectable("queues", lifelines == Lifelines::Queues)) set_lifelines(Lifelines::Queues);
      record_control("lifelines_queues");
      ImGui::EndCombo();
    }
    record_control("lifelines");
  }
}

void Viewer::set_lifelines(render::Lifelines lifelines) {
  std::shared_ptr<const render::QueueMap> queues;
  for (auto& f : figures_) {
    if (f->params.type != FigureParams::Sequence) continue;
    if (lifelines == Lifelines::Queues && !f->params.queue_map) {
      // (One read of the flow table, as shortest arrows; kept for the figure.)
      if (!queues) queues = std::make_shared<render::QueueMap>(render::queue_map(*scene_));
      f->params.queue_map = queues;
    }
    f->params.lifelines = lifelines;
  }
}

void Viewer::set_spacing(Spacing spacing) {
  for (auto& f : figures_)
    if (f->params.type == FigureParams::Sequence) f->params.spacing = spacing;
}

bool Viewer::set_message_filter(const std::string& text) {
  auto filter = std::make_shared<analysis::MessageFilter>();
  if (!analysis::parse_message_filter(text, *filter, message_filter_error_)) return false;
  message_filter_error_.clear();
  std::snprintf(message_filter_text_, sizeof message_filter_text_, "%s", text.c_str());
  for (auto& f : figures_)
    if (f->params.type != FigureParams::Scope) f->params.message_filter = filter->any() ? nullptr : filter;
  return true;
}

void Viewer::set_lane_order(render::LaneOrder order) {
  // Timelines of the same lanes share one ordering (shortest arrows reads
  // the flow table).
  std::vector<std::pair<std::vector<uint32_t>, const FigureParams*>> done;  // (lanes asked, the result)
  for (auto& f : figures_) {
    if (f->params.type == FigureParams::Scope) continue;
    if (f->params.type == FigureParams::Sequence) {  // its lifelines, in that order
      if (!f->params.lanes.empty()) f->params.lanes = render::order_lanes(*scene_, f->params.lanes, order);
      f->params.lane_order = order;
      continue;
    }
    auto same = std::find_if(done.begin(), done.end(), [&](const auto& d) { return d.first == f->params.lanes; });
    if (same != done.end()) {
      f->params.lanes = same->second->lanes, f->params.arrow_lengths = same->second->arrow_lengths;
    } else {
      std::vector<uint32_t> asked = f->params.lanes;
      f->params.lanes = render::order_lanes(*scene_, f->params.lanes, order, &f->params.arrow_lengths);
      done.emplace_back(std::move(asked), &f->params);
    }
    f->params.lane_order = order;
    // Every lane as it came is no list: lanes that join later (live) show too.
    if (order == render::LaneOrder::FirstAppearance && f->params.lanes.size() == scene_->lanes().size())
      f->params.lanes.clear();
  }
}

void Viewer::layout_figures(float top) {
  const ImGuiIO& io = ImGui::GetIO();
  // The analysis panel takes the right side; its stream figure the bottom.
  const float width = io.DisplaySize.x - (analysis_open_ ? AnalysisPanel::kWidth : 0);
  float bottom = io.DisplaySize.y;
  stream_figure_rect_ = {};
  if (analysis_.has_figure()) {
    bottom -= AnalysisPanel::kFigureHeight;
    stream_figure_rect_ = {0, bottom, width, AnalysisPanel::kFigureHeight};
  }
  overview_rect_ = {render::TimelineGeometry::kNamesPx, top + 2, width - render::TimelineGeometry::kNamesPx, kOverviewPx};
  top += kOverviewPx + 6;
  const float each = (bottom - top) / float(std::max<size_t>(1, figures_.size()));
  for (size_t i = 0; i < figures_.size(); ++i) {
    Figure& f = *figures_[i];
    f.rect = {0, top + each * float(i), width, each - 4};
    if (f.params.type == FigureParams::Timeline) {
      const Rect plot = f.tg().plot;
      // On screen: the picture's own mapping when it is for this window, else linear.
      if (f.timeline && f.timeline->axis.t0() == t0_ && f.timeline->axis.t1() == t1_ &&
          f.timeline->axis.width() == plot.w && (theta_us_ > 0) == !f.timeline->axis.linear())
        f.axis = f.timeline->axis;
      else
        f.axis = render::TimeAxis(t0_, t1_, plot.w);
      f.layout_height = f.timeline ? f.timeline->request.layout.height : 0;
      f.params.scroll_y = std::clamp(f.params.scroll_y, 0.f, std::max(0.f, f.layout_height - plot.h));
    }
  }
}

}  // namespace tinescope::app
