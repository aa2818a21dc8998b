// The analysis panel's Pie tab: where the window's time went, by name (own
// time), thread or task, over the window or up to the play head; computed
// off the UI thread whenever what it is for changes (render::build_pie).
#include <imgui.h>

#include <chrono>
#include <cstdio>

#include "tinescope/app/analysis_panel.hpp"
#include "tinescope/render/figure_lists.hpp"

namespace tinescope::app {

void AnalysisPanel::pie_tab(SharedView& v) {
  const char* const by_names[] = {"by name (own time)", "by thread", "by task (job segments)"};
  ImGui::SetNextItemWidth(200);
  ImGui::Combo("##pie_by", &pie_by_, by_names, 3);
  v.record_control("pie_by");
  ImGui::SameLine();
  ImGui::Checkbox("up to the play head", &pie_play_);
  v.record_control("pie_play");
  if (!v.scene || v.scene->sources().empty()) return;
  // The play head: the cursor in the window, or while playing the window's right edge.
  int64_t end = v.t1;
  if (pie_play_ && !v.playing && v.marks->cursor != render::Marks::kNone && v.marks->cursor > v.t0 && v.marks->cursor < v.t1)
    end = v.marks->cursor;
  const uint32_t source = std::min<uint32_t>(source_, uint32_t(v.scene->sources().size() - 1));
  char head[128];
  std::snprintf(head, sizeof head, "%d %lld %lld %u %llu", pie_by_, (long long)v.t0, (long long)end, source,
                (unsigned long long)v.scene_serial);
  std::string key = head;
  for (uint32_t l : v.lanes) key.append(1, ' ').append(std::to_string(l));
  if (key != pie_key_ && !pie_job_.valid()) {
    pie_key_ = key;
    pie_job_ = std::async(std::launch::async, [scene = v.shared_scene, lanes = v.lanes, t0 = v.t0, end, source,
                                               by = analysis::ShareBy(pie_by_)] {
      return render::build_pie(*scene, source, lanes, t0, end, by);
    });
  }
  ImGui::TextWrapped("%s", pie_.subtitle.empty() ? "measuring ..." : pie_.subtitle.c_str());
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const float w = ImGui::GetContentRegionAvail().x, h = 240;
  ImGui::InvisibleButton("pie", {w, h});
  v.record_control("pie_plot");
  render::pie_list(ImGui::GetWindowDrawList(), {at.x, at.y, w, h}, pie_.slices);
}

}  // namespace tinescope::app
