// The analysis panel's Histogram tab: the durations of the stream's
// intervals in bins, played up to the cursor (TuningFork's playable
// histogram), linear or logarithmic bins.
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "tinescope/app/analysis_panel.hpp"
#include "imgui_colour.hpp"
#include "tinescope/render/figure_lists.hpp"

namespace tinescope::app {

using analysis::DerivedStream;
using analysis::Record;

void AnalysisPanel::start_histogram() {
  if (!stream_ || !catalog_ || hist_job_.valid()) return;
  hist_.reset();
  hist_job_ = std::async(std::launch::async, [s = stream_.get(), cat = catalog_, log = hist_log_] {
    return render::PlayableHistogram::build(*s, cat->clock, log);
  });
}

void AnalysisPanel::histogram_tab(SharedView& v) {
  if (!stream_) {
    ImGui::TextWrapped("Evaluate a stream (Streams tab), click a row of the statistics, or measure: the "
                       "durations of its intervals, or its samples' values, show here.");
    return;
  }
  ImGui::TextWrapped("%s", stream_text_.c_str());
  if (ImGui::Checkbox("log bins", &hist_log_) && !hist_job_.valid()) start_histogram();
  v.record_control("hist_log");
  ImGui::SameLine();
  ImGui::Checkbox("up to the play head", &hist_play_);
  v.record_control("hist_play");
  if (!hist_ || !catalog_) {
    ImGui::TextDisabled("binning ...");
    return;
  }
  // The play head: the cursor, or while playing the window's right edge.
  play_head_ = !hist_play_ ? render::Marks::kNone
               : (v.playing || v.marks->cursor == render::Marks::kNone) ? v.t1
                                                                        : v.marks->cursor;
  const uint64_t key = play_head_ == render::Marks::kNone ? UINT64_MAX : catalog_->clock.to_ticks(play_head_);
  hist_counts_ = hist_->up_to(*stream_, catalog_->clock, key, hist_shown_);
  if (play_head_ != render::Marks::kNone)
    ImGui::Text("%llu of %llu, up to %s", (unsigned long long)hist_shown_, (unsigned long long)stream_->size(),
                render::format_time(play_head_ - v.scene->first_ns(), 1).c_str());
  else
    ImGui::Text("all %llu", (unsigned long long)stream_->size());

  const ImVec2 at = ImGui::GetCursorScreenPos();
  const float w = ImGui::GetContentRegionAvail().x, h = 220;
  ImGui::InvisibleButton("hist", {w, h});
  v.record_control("hist_plot");
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(at, {at.x + w, at.y + h}, colour(render::kBackground));
  const float bw = w / float(hist_->bins);
  const uint32_t rgba = render::name_colour(stream_text_);
  render::histogram_list(dl, {at.x, at.y, w, h}, hist_counts_, rgba);
  const ImVec2 m = ImGui::GetIO().MousePos;
  if (ImGui::IsItemHovered()) {
    const uint32_t b = uint32_t(std::clamp((m.x - at.x) / bw, 0.f, float(hist_->bins - 1)));
    ImGui::BeginTooltip();
    ImGui::Text("%s .. %s: %llu", hist_->label(hist_->bin_low(b)).c_str(), hist_->label(hist_->bin_low(b + 1)).c_str(),
                (unsigned long long)hist_counts_[b]);
    ImGui::TextDisabled("click: bookmark these");
    ImGui::EndTooltip();
    if (ImGui::IsItemClicked()) {
      // The intervals of that bin (up to the play head) become the bookmarks.
      auto& marks = v.marks->bookmarks;
      v.marks->clear_bookmarks();
      const double ns_per_tick = 1 / catalog_->clock.ticks_per_ns();
      const auto rec = stream_->records();
      for (size_t i = 0; i < hist_shown_ && marks.size() < kMaxBookmarks; ++i)
        if (hist_->bin(hist_->quantity(rec[i], ns_per_tick)) == b)
          marks.push_back(catalog_->clock.to_ns(hist_->durations ? rec[i].start : rec[i].end));
      status_ = std::to_string(marks.size()) + " bookmarks from the histogram";
    }
  }
  ImGui::SetCursorScreenPos({at.x, at.y + h + 2});
  ImGui::TextDisabled("%s", hist_->label(hist_->bin_low(0)).c_str());
  ImGui::SameLine(w - 60);
  ImGui::TextDisabled("%s", hist_->label(hist_->hi_ns).c_str());
  ImGui::TextWrapped("%s", status_.c_str());
}

}  // namespace tinescope::app
