// The analysis panel's Threads tab: every lane of the scene, grouped by
// process, each with a box that shows or hides it in every timeline and
// buttons that move it up or down; a filter (a glob or /regex/, as --lanes
// takes) that shows, hides or keeps only the lanes it names; and beside each
// thread its overview (render/thread_overview.hpp): its functions × the whole
// trace, with the span the timelines show marked on every one.
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <numeric>

#include "imgui_colour.hpp"
#include "tinescope/app/analysis_panel.hpp"
#include "tinescope/render/time_axis.hpp"

namespace tinescope::app {

namespace {

constexpr uint32_t kOverviewColumns = 160;
constexpr float kFunctionPx = 4;  // an overview's row per function

// Every lane shown as `shown` lists them (empty: all, as they came).
std::vector<uint32_t> shown_lanes(const render::Scene& scene, const std::vector<uint32_t>& shown) {
  if (!shown.empty()) return shown;
  std::vector<uint32_t> all(scene.lanes().size());
  std::iota(all.begin(), all.end(), 0u);
  return all;
}

// On the last item's line at x (window coordinates), or just after it where it reaches past x.
void same_line_at(float x) {
  const float after = ImGui::GetItemRectMax().x - ImGui::GetWindowPos().x + ImGui::GetScrollX() + 8;
  ImGui::SameLine(std::max(x, after));
}

}  // namespace

void AnalysisPanel::threads_tab(SharedView& v) {
  const render::Scene& scene = *v.scene;
  // The overviews: built off the UI thread once per scene (a live one's at
  // most every 2 s).
  const auto now = std::chrono::steady_clock::now();
  if (!overviews_job_.valid() && v.shared_scene && overviews_of_ != v.scene_serial &&
      (overviews_of_ == UINT64_MAX || now - overviews_at_ > std::chrono::seconds(2))) {
    overviews_of_ = v.scene_serial, overviews_at_ = now;
    overviews_job_ = std::async(std::launch::async, [scene = v.shared_scene] {
      Overviews out;
      for (uint32_t lane = 0; lane < scene->lanes().size(); ++lane)
        out.push_back(render::thread_overview(*scene, lane, kOverviewColumns));
      return out;
    });
  }

  const std::vector<uint32_t> order = shown_lanes(scene, v.lanes);
  ImGui::TextWrapped("Which lanes the timelines show, in what order. Beside each thread: its functions over the "
                     "whole trace (a row each, most active first), the span the timelines show framed; point at "
                     "one to mark where it runs everywhere, click to go there.");
  ImGui::SetNextItemWidth(200);
  const bool entered = ImGui::InputTextWithHint("##thread_filter", "glob or /regex/", thread_filter_,
                                                sizeof thread_filter_, ImGuiInputTextFlags_EnterReturnsTrue);
  v.record_control("thread_filter");
  const std::string filter = thread_filter_;
  thread_filter_error_.clear();
  std::vector<uint32_t> matching;
  for (uint32_t i = 0; i < scene.lanes().size(); ++i)
    if (filter.empty() || render::lane_matches(scene.lanes()[i], filter, &thread_filter_error_)) matching.push_back(i);
  auto apply = [&](std::vector<uint32_t> lanes) { show_lanes(v, std::move(lanes)); };
  ImGui::SameLine();
  if (ImGui::Button("Only") || (entered && !filter.empty())) apply(matching);
  v.record_control("threads_only");
  ImGui::SameLine();
  if (ImGui::Button("Show")) {
    std::vector<uint32_t> lanes = order;
    for (uint32_t i : matching)
      if (std::find(lanes.begin(), lanes.end(), i) == lanes.end()) lanes.push_back(i);
    apply(lanes);
  }
  v.record_control("threads_show");
  ImGui::SameLine();
  if (ImGui::Button("Hide")) {
    std::vector<uint32_t> lanes = order;
    std::erase_if(lanes, [&](uint32_t i) { return std::find(matching.begin(), matching.end(), i) != matching.end(); });
    apply(lanes);
  }
  v.record_control("threads_hide");
  ImGui::SameLine();
  if (ImGui::Button("All")) apply(shown_lanes(scene, {}));
  v.record_control("threads_all");
  if (!thread_filter_error_.empty()) ImGui::TextColored(ImVec4(1.f, 0.45f, 0.35f, 1.f), "%s", thread_filter_error_.c_str());
  ImGui::TextDisabled("%zu of %zu lanes shown%s", order.size(), scene.lanes().size(),
                      filter.empty() ? "" : (", " + std::to_string(matching.size()) + " match").c_str());
  if (!threads_note_.empty()) {
    ImGui::SameLine();
    ImGui::TextColored(ImVec4(1.f, 0.75f, 0.35f, 1.f), "%s", threads_note_.c_str());
  }

  // The list: processes in the order their first lane is shown, each lane
  // under its own; shown lanes in their order, then the hidden ones.
  std::vector<uint32_t> listed = order;
  for (uint32_t i = 0; i < scene.lanes().size(); ++i)
    if (std::find(order.begin(), order.end(), i) == order.end()) listed.push_back(i);
  std::vector<std::string> groups;
  for (uint32_t i : listed)
    if (std::find(groups.begin(), groups.end(), scene.lanes()[i].group) == groups.end())
      groups.push_back(scene.lanes()[i].group);
  ImGui::BeginChild("threads", {0, 0}, false);
  for (const std::string& group : groups) {
    const bool open = ImGui::TreeNodeEx(("group_" + group).c_str(), ImGuiTreeNodeFlags_DefaultOpen, "%s",
                                        group.empty() ? "(process)" : group.c_str());
    if (!open) continue;
    for (uint32_t lane : listed)
      if (scene.lanes()[lane].group == group)
        thread_row(v, lane, std::find(order.begin(), order.end(), lane) != order.end(), order);
    ImGui::TreePop();
  }
  ImGui::EndChild();
}

void AnalysisPanel::show_lanes(SharedView& v, std::vector<uint32_t> lanes) {
  if (lanes.empty()) {
    threads_note_ = "a timeline shows at least one lane";
    return;
  }
  threads_note_.clear();
  // Every lane as they came is no list: lanes a live trace adds show too.
  if (lanes == shown_lanes(*v.scene, {})) lanes.clear();
  if (v.set_lanes) v.set_lanes(lanes);
  v.lanes = std::move(lanes);
}

void AnalysisPanel::thread_row(SharedView& v, uint32_t lane, bool shown, const std::vector<uint32_t>& order) {
  const render::Scene& scene = *v.scene;
  const render::Lane& l = scene.lanes()[lane];
  const std::string id = std::to_string(lane);
  ImGui::PushID(int(lane));
  bool on = shown;
  if (ImGui::Checkbox(l.label().c_str(), &on)) {
    std::vector<uint32_t> lanes = order;
    if (on) lanes.push_back(lane);
    else std::erase(lanes, lane);
    show_lanes(v, std::move(lanes));
  }
  if (lane < 256) v.record_control(("thread_shown_" + id).c_str());
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("%s\n%s%stid %llu", l.name.c_str(), l.group.c_str(), l.group.empty() ? "" : ", ",
                      (unsigned long long)l.tid);

  // Up and down: past the shown lane before or after it of the same process
  // (the timelines keep a process's lanes under its header).
  auto move = [&](int direction) {
    std::vector<uint32_t> lanes = order;
    auto at = std::find(lanes.begin(), lanes.end(), lane);
    if (at == lanes.end()) return;
    for (auto other = at;;) {
      if (direction < 0 ? other == lanes.begin() : other + 1 == lanes.end()) return;
      other += direction;
      if (scene.lanes()[*other].group != l.group) continue;
      std::iter_swap(at, other);
      break;
    }
    show_lanes(v, std::move(lanes));
  };
  if (shown) {
    same_line_at(ImGui::GetWindowContentRegionMax().x - 150);
    if (ImGui::ArrowButton("up", ImGuiDir_Up)) move(-1);
    if (lane < 256) v.record_control(("thread_up_" + id).c_str());
    ImGui::SameLine(0, 2);
    if (ImGui::ArrowButton("down", ImGuiDir_Down)) move(+1);
    if (lane < 256) v.record_control(("thread_down_" + id).c_str());
  }

  const render::ThreadOverview* o =
      lane < overviews_.size() && overviews_[lane].source == l.source && overviews_[lane].feedlet == l.feedlet
          ? &overviews_[lane]
          : nullptr;
  if (o && o->calls) {
    same_line_at(ImGui::GetWindowContentRegionMax().x - 90);
    ImGui::TextDisabled("%llu calls", (unsigned long long)o->calls);
  }
  if (!o || o->functions.empty()) {
    if (!o || !(l.is_tasks() || l.is_locks())) ImGui::TextDisabled(o ? "no calls" : "...");
    ImGui::PopID();
    return;
  }
  // The grid: a row a function, a column a slice of the whole trace.
  const float w = std::max(40.f, ImGui::GetContentRegionAvail().x - 4);
  const float h = kFunctionPx * float(o->functions.size()) + (o->functions_left_out ? 2 : 0);
  const ImVec2 at = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("overview", {w, std::max(h, 6.f)});
  if (lane < 256) v.record_control(("thread_overview_" + id).c_str());
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(at, {at.x + w, at.y + h}, IM_COL32(30, 30, 36, 255));
  const float cw = w / float(o->columns);
  const std::string& active = v.marks->active;
  for (size_t k = 0; k < o->functions.size(); ++k) {
    const render::ThreadOverview::Function& fn = o->functions[k];
    const std::string_view name = scene.string(l.source, fn.name);
    const float y = at.y + kFunctionPx * float(k);
    const bool marked = !active.empty() && name == active;
    const ImU32 fill = marked ? IM_COL32(255, 221, 0, 255) : colour(render::name_colour(name));
    // Runs of active columns as one rectangle each.
    for (uint32_t c = 0; c < o->columns;) {
      if (!fn.active[c]) {
        ++c;
        continue;
      }
      uint32_t e = c;
      while (e < o->columns && fn.active[e]) ++e;
      dl->AddRectFilled({at.x + float(c) * cw, y}, {at.x + std::max(float(e) * cw, float(c) * cw + 1), y + kFunctionPx - (marked ? 0 : 1)},
                        fill);
      c = e;
    }
  }
  // The span the timelines show, on the overview's axis (at least 2 px).
  const double span = double(o->t1 - o->t0);
  float x0 = at.x + float(double(v.t0 - o->t0) / span * w), x1 = at.x + float(double(v.t1 - o->t0) / span * w);
  x0 = std::clamp(x0, at.x, at.x + w), x1 = std::clamp(x1, at.x, at.x + w);
  if (x1 - x0 < 2) x0 = std::min(x0, at.x + w - 2), x1 = x0 + 2;
  dl->AddRect({x0, at.y - 1}, {x1, at.y + std::max(h, 6.f) + 1}, IM_COL32(255, 255, 255, 230));
  if (lane < 256 && v.record_rect) v.record_rect("thread_window_" + id, {x0, at.y - 1, x1 - x0, std::max(h, 6.f) + 2});

  if (ImGui::IsItemHovered()) {
    const ImVec2 m = ImGui::GetIO().MousePos;
    const size_t k = size_t(std::clamp((m.y - at.y) / kFunctionPx, 0.f, float(o->functions.size() - 1)));
    const uint32_t c = uint32_t(std::clamp((m.x - at.x) / cw, 0.f, float(o->columns - 1)));
    const render::ThreadOverview::Function& fn = o->functions[k];
    const std::string name(scene.string(l.source, fn.name));
    if (v.point_at) v.point_at(name);
    const int64_t t = o->t0 + int64_t(double(c) * span / o->columns);
    ImGui::SetTooltip("%s\n%llu calls%s\nat %s", name.c_str(), (unsigned long long)fn.calls,
                      fn.active[c] ? "" : " (not here)",
                      render::format_time(t - scene.first_ns(), 1, scene.time_unit()).c_str());
    if (ImGui::IsItemClicked()) {
      // Go there at the timelines' zoom.
      const int64_t half = (v.t1 - v.t0) / 2;
      if (v.set_window) v.set_window(t - half, t + half);
    }
  }
  if (o->functions_left_out) {
    char more[32];
    std::snprintf(more, sizeof more, "+%u more", o->functions_left_out);
    dl->AddText({at.x + w - ImGui::CalcTextSize(more).x, at.y + h - 12}, IM_COL32(150, 150, 150, 255), more);
  }
  ImGui::PopID();
}

}  // namespace tinescope::app
