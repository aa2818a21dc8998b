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

namespace tinescope::app {

using analysis::DerivedStream;
using analysis::Record;

uint32_t PlayableHistogram::bin(double ns) const {
  double f;
  if (log_bins) f = ns <= lo_ns ? 0 : std::log(ns / lo_ns) / std::log(hi_ns / lo_ns);
  else if (durations) f = ns / hi_ns;
  else f = (ns - lo_ns) / (hi_ns - lo_ns);
  return uint32_t(std::clamp(f * bins, 0.0, double(bins - 1)));
}

double PlayableHistogram::bin_low(uint32_t b) const {
  const double f = double(b) / bins;
  return log_bins ? lo_ns * std::pow(hi_ns / lo_ns, f) : durations ? hi_ns * f : lo_ns + (hi_ns - lo_ns) * f;
}

std::string PlayableHistogram::label(double x) const {
  if (durations) return render::format_duration(int64_t(x));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

PlayableHistogram PlayableHistogram::build(const DerivedStream& s, const trace::ClockMap& clock, bool log_bins) {
  PlayableHistogram h;
  h.log_bins = h.log_asked = log_bins;
  h.durations = s.intervals();
  const auto records = s.records();
  const double ns_per_tick = 1 / clock.ticks_per_ns();
  double lo = INFINITY, hi = h.durations ? 0 : -INFINITY;
  for (const Record& r : records) {
    const double d = h.quantity(r, ns_per_tick);
    lo = std::min(lo, d), hi = std::max(hi, d);
  }
  if (h.durations) {
    h.lo_ns = std::max(1.0, lo == INFINITY ? 1.0 : lo);
    h.hi_ns = std::max(h.lo_ns * 1.01, hi * 1.0001 + 1);
  } else {
    // Values: log bins only where every one is above 0.
    if (records.empty()) lo = 0, hi = 1;
    h.log_bins = log_bins && lo > 0;
    h.lo_ns = lo;
    h.hi_ns = std::max(hi + std::fabs(hi) * 1e-4, lo + 1e-9 * std::max(1.0, std::fabs(lo)));
  }
  h.every = std::max<uint64_t>(4096, records.size() / 256 + 1);
  std::vector<uint64_t> counts(h.bins, 0);
  h.checkpoints.push_back(counts);
  for (size_t i = 0; i < records.size(); ++i) {
    ++counts[h.bin(h.quantity(records[i], ns_per_tick))];
    if ((i + 1) % h.every == 0) h.checkpoints.push_back(counts);
  }
  return h;
}

std::vector<uint64_t> PlayableHistogram::up_to(const DerivedStream& s, const trace::ClockMap& clock, uint64_t key_ticks,
                                               uint64_t& shown) const {
  const auto records = s.records();
  const size_t n = size_t(std::partition_point(records.begin(), records.end(),
                                               [&](const Record& r) { return r.end <= key_ticks; }) -
                          records.begin());
  const size_t k = std::min(checkpoints.size() - 1, size_t(n / every));
  std::vector<uint64_t> counts = checkpoints[k];
  const double ns_per_tick = 1 / clock.ticks_per_ns();
  for (size_t i = k * every; i < n; ++i) ++counts[bin(quantity(records[i], ns_per_tick))];
  shown = n;
  return counts;
}

void AnalysisPanel::start_histogram() {
  if (!stream_ || !catalog_ || hist_job_.valid()) return;
  hist_.reset();
  hist_job_ = std::async(std::launch::async, [s = stream_.get(), cat = catalog_, log = hist_log_] {
    return PlayableHistogram::build(*s, cat->clock, log);
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
  const uint64_t top = std::max<uint64_t>(1, *std::max_element(hist_counts_.begin(), hist_counts_.end()));
  const float bw = w / float(hist_->bins);
  const uint32_t rgba = render::name_colour(stream_text_);
  for (uint32_t b = 0; b < hist_->bins; ++b) {
    if (!hist_counts_[b]) continue;
    // Heights on a square-root scale: one needle still shows beside thousands.
    const float bh = std::max(2.f, (h - 4) * float(std::sqrt(double(hist_counts_[b]) / double(top))));
    dl->AddRectFilled({at.x + bw * float(b) + 1, at.y + h - bh}, {at.x + bw * float(b + 1) - 1, at.y + h}, colour(rgba));
  }
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
