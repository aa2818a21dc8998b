// The analysis panel's Categories tab: the categories the trace's intervals
// and instants were recorded in (one read of the trace, off the UI thread),
// each with a box that shows or hides it in every timeline.
#include <imgui.h>

#include <algorithm>
#include <future>

#include "figure_options.hpp"
#include "tinescope/app/analysis_panel.hpp"

namespace tinescope::app {

void AnalysisPanel::find_categories(const SharedView& v) {
  if (categories_job_.valid()) return;
  categories_asked_ = true;
  categories_stop_ = false;
  categories_read_ = std::make_shared<std::atomic<uint64_t>>(0);
  categories_total_ = 0;
  // Every trace, those with no category too (all of theirs in
  // kNoCategory), as `--hide-categories` reads them.
  std::vector<std::shared_ptr<index::TraceIndex>> indices;
  for (const render::Source& src : v.scene->sources()) {
    indices.push_back(src.index);
    categories_total_ += src.index->events();
  }
  categories_job_ = std::async(std::launch::async, [indices, stop = &categories_stop_, read = categories_read_] {
    CategoryList out;
    for (const auto& ix : indices)
      out.push_back(std::make_shared<const analysis::Categories>(analysis::scan_categories(*ix, stop, read.get())));
    return out;
  });
}

void AnalysisPanel::set_category_hidden(SharedView& v, const std::string& category, bool hidden) {
  std::vector<std::string> list = v.hidden_categories;
  std::erase(list, category);
  if (hidden) list.push_back(category);
  v.hidden_categories = list;
  if (v.hide_categories) v.hide_categories(list, hidden_names(categories_, list));
}

void AnalysisPanel::categories_tab(SharedView& v) {
  bool any = false;
  for (const render::Source& src : v.scene->sources()) any |= analysis::records_categories(*src.catalog);
  if (!any) {
    ImGui::TextWrapped(
        "No event of this trace was recorded with a category (a Chrome event's \"cat\"; the recorder's ts_begin_c "
        "and ts_instant_c).");
    return;
  }
  if (!categories_asked_) find_categories(v);
  if (categories_job_.valid()) {
    const uint64_t read = categories_read_ ? categories_read_->load() : 0;
    ImGui::Text("Reading the trace for its categories: %llu of %llu events", (unsigned long long)read,
                (unsigned long long)categories_total_);
    ImGui::ProgressBar(categories_total_ ? float(double(read) / double(categories_total_)) : 0.f);
    return;
  }
  // Every source's categories in one list: hiding one hides it in each.
  struct Row {
    std::string name;
    uint64_t events = 0, names = 0;
  };
  std::vector<Row> rows;
  uint32_t mixed = 0;
  for (const auto& c : categories_) {
    if (!c) continue;
    mixed += c->mixed_names;
    for (const analysis::CategoryCount& k : c->categories) {
      auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.name == k.name; });
      if (it == rows.end()) it = rows.insert(rows.end(), Row{k.name});
      it->events += k.events, it->names += k.names;
    }
  }
  ImGui::TextWrapped("Intervals and instants by the category recorded with them. A hidden category's events are not "
                     "drawn in the timelines (the scope and the whole-trace strip still draw them; statistics, search "
                     "and streams still read them).");
  if (mixed)
    ImGui::TextWrapped("%u name%s recorded in more than one category: each is drawn while any of its "
                       "categories is shown.", mixed, mixed == 1 ? " was" : "s were");
  if (ImGui::Button("Show all")) {
    v.hidden_categories.clear();
    if (v.hide_categories) v.hide_categories({}, nullptr);
  }
  v.record_control("categories_show_all");
  ImGui::SameLine();
  if (ImGui::Button("Hide all")) {
    for (const Row& r : rows) set_category_hidden(v, r.name, true);
  }
  v.record_control("categories_hide_all");
  ImGui::SameLine();
  // (A growing trace: its new events and names are read again.)
  if (ImGui::Button("Read again")) {
    find_categories(v);
    return;
  }
  v.record_control("categories_read_again");
  if (!categories_status_.empty()) ImGui::TextWrapped("%s", categories_status_.c_str());
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY;
  if (!ImGui::BeginTable("categories", 3, flags)) return;
  ImGui::TableSetupColumn("category", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("events", ImGuiTableColumnFlags_WidthFixed, 80);
  ImGui::TableSetupColumn("names", ImGuiTableColumnFlags_WidthFixed, 56);
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableHeadersRow();
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    ImGui::TableNextRow();
    ImGui::TableSetColumnIndex(0);
    bool shown = std::find(v.hidden_categories.begin(), v.hidden_categories.end(), r.name) == v.hidden_categories.end();
    ImGui::PushID(int(i));
    if (ImGui::Checkbox(r.name.c_str(), &shown)) set_category_hidden(v, r.name, !shown);
    ImGui::PopID();
    if (i < 64) v.record_control(("category_" + r.name).c_str());
    ImGui::TableSetColumnIndex(1);
    ImGui::Text("%llu", (unsigned long long)r.events);
    ImGui::TableSetColumnIndex(2);
    ImGui::Text("%llu", (unsigned long long)r.names);
  }
  ImGui::EndTable();
}

}  // namespace tinescope::app
