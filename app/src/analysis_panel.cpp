// The analysis panel: its tabs in one window beside the figures, and the
// jobs that compute them off the UI thread, collected each frame. The tabs:
// analysis_streams_tab.cpp (a stream typed, drawn under the timeline,
// bookmarked), analysis_stats_tab.cpp (the statistics table),
// analysis_histogram_tab.cpp (the playable duration histogram),
// analysis_search_tab.cpp (regex search and needles, with a hit list),
// analysis_categories_tab.cpp (categories shown and hidden),
// analysis_threads_tab.cpp (the lanes shown, their order, each thread's overview).
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <future>

#include "figure_options.hpp"
#include "tinescope/app/analysis_panel.hpp"

namespace tinescope::app {

using render::Rect;

namespace {

template <class T>
bool ready(const std::future<T>& f) {
  return f.valid() && f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

}  // namespace

AnalysisPanel::~AnalysisPanel() {
  if (job_.valid()) job_.wait();
  if (stats_job_.valid()) stats_job_.wait();
  if (search_job_.valid()) search_job_.wait();
  if (hist_job_.valid()) hist_job_.wait();
  categories_stop_ = true;
  if (categories_job_.valid()) categories_job_.wait();
  if (overviews_job_.valid()) overviews_job_.wait();
}

const render::Source* AnalysisPanel::source(const SharedView& v) const {
  const auto& sources = v.scene->sources();
  if (sources.empty()) return nullptr;
  return &sources[std::min<size_t>(source_, sources.size() - 1)];
}

void AnalysisPanel::poll(SharedView& v) {
  if (ready(job_)) {
    Evaluated r = job_.get();
    if (!r.stream) {
      status_ = r.text + ": " + r.error;
    } else {
      if (hist_job_.valid()) hist_job_.wait();  // it reads the stream being replaced
      hist_job_ = {};
      stream_ = std::move(r.stream);
      stream_text_ = r.text;
      figure_.reset();
      hist_.reset(), hist_counts_.clear();
      char buf[160];
      std::snprintf(buf, sizeof buf, "%llu %s in %.0f ms (%llu events read)", (unsigned long long)stream_->size(),
                    stream_->intervals() ? "intervals" : "samples", r.ms, (unsigned long long)stream_->events_read());
      status_ = buf;
      if (bookmark_when_done_ && stream_->intervals()) bookmark_stream(v);
      start_histogram();
    }
    bookmark_when_done_ = false;
  }
  if (ready(hist_job_)) {
    hist_ = std::make_shared<render::PlayableHistogram>(hist_job_.get());
    if (hist_->log_asked != hist_log_) start_histogram();  // the box was ticked while it was binned
  }
  if (ready(stats_job_)) {
    auto [rows, error] = stats_job_.get();
    stats_ = std::move(rows);
    sort_stats();
    if (!error.empty()) status_ = "statistics: " + error;
  }
  if (ready(categories_job_)) {
    categories_ = categories_job_.get();
    categories_status_.clear();
    // Read again (a growing trace): what is hidden hides its new names too.
    if (!v.hidden_categories.empty() && v.hide_categories)
      v.hide_categories(v.hidden_categories, hidden_names(categories_, v.hidden_categories));
    for (const auto& c : categories_)
      if (c && !c->error.empty()) categories_status_ = "a part of the trace could not be read: " + c->error;
  }
  if (ready(overviews_job_)) overviews_ = overviews_job_.get();  // (the Threads tab asks for them)
  if (ready(pie_job_)) pie_ = pie_job_.get();
  if (ready(search_job_)) {
    auto [hits, note] = search_job_.get();
    hits_ = std::move(hits);
    current_hit_ = -1;
    status_ = std::to_string(hits_.size()) + " " + hits_title_ + (note.empty() ? "" : "; " + note);
  }
}

namespace {
constexpr const char* kTabs[] = {"Streams", "Statistics", "Histogram", "Pie", "Search", "Categories", "Threads"};
}  // namespace

std::string AnalysisPanel::tab_name() const {
  std::string lower = tab_ >= 0 && tab_ < int(std::size(kTabs)) ? kTabs[tab_] : "";
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

bool AnalysisPanel::show_tab(const std::string& name) {
  for (int i = 0; i < int(std::size(kTabs)); ++i) {
    std::string lower = kTabs[i];
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (lower == name) return want_tab_ = i, true;
  }
  return false;
}

void AnalysisPanel::draw(SharedView& v, Rect area) {
  ImGui::SetNextWindowPos({area.x, area.y});
  ImGui::SetNextWindowSize({area.w, area.h});
  ImGui::Begin("analysis", nullptr,
               ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus);
  const auto& sources = v.scene->sources();
  if (sources.size() > 1) {
    ImGui::SetNextItemWidth(-1);
    if (ImGui::BeginCombo("##trace", source(v)->path.c_str())) {
      for (uint32_t i = 0; i < sources.size(); ++i)
        if (ImGui::Selectable(sources[i].path.c_str(), i == source_)) source_ = i;
      ImGui::EndCombo();
    }
  }
  if (ImGui::BeginTabBar("tabs")) {
    const char* const* names = kTabs;
    for (int i = 0; i < int(std::size(kTabs)); ++i) {
      const ImGuiTabItemFlags flags = want_tab_ == i ? ImGuiTabItemFlags_SetSelected : 0;
      const bool open = ImGui::BeginTabItem(names[i], nullptr, flags);
      v.record_control((std::string("tab_") + names[i]).c_str());
      if (!open) continue;
      tab_ = i;
      switch (i) {
        case 0: streams_tab(v); break;
        case 1: stats_tab(v); break;
        case 2: histogram_tab(v); break;
        case 3: pie_tab(v); break;
        case 4: search_tab(v); break;
        case 5: categories_tab(v); break;
        case 6: threads_tab(v); break;
      }
      ImGui::EndTabItem();
    }
    want_tab_ = -1;
    ImGui::EndTabBar();
  }
  ImGui::End();
}

}  // namespace tinescope::app
