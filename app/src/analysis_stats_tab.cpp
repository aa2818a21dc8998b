// The analysis panel's Statistics tab: count, total and duration
// percentiles per name (and thread), sortable, a row a click from its
// stream or its bookmarks.
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "tinescope/app/analysis_panel.hpp"
#include "tinescope/analysis/stream_expr.hpp"

namespace tinescope::app {

using analysis::DurationStats;

namespace {

std::string base_stream(analysis::Op op, const std::string& name_pattern, const std::string& thread_pattern = {}) {
  analysis::Expr e;
  e.op = op;
  e.filter.name = name_pattern;
  e.filter.thread = thread_pattern;
  return analysis::format_stream(e);
}

// Three digits and a unit: the statistics table's columns stay narrow.
std::string short_duration(double ns) {
  static const struct { double scale; const char* unit; } units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}};
  for (const auto& u : units)
    if (ns >= u.scale || u.scale == 1) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3g%s", ns / u.scale, u.unit);
      return buf;
    }
  return {};
}

}  // namespace

void AnalysisPanel::compute_stats(const SharedView& v) {
  const render::Source* src = source(v);
  if (!src || stats_job_.valid()) return;
  analysis::EvalOptions o;
  if (stats_selection_ && v.marks->has_selection()) {
    o.t0 = src->catalog->clock.to_ticks(v.marks->sel0);
    o.t1 = src->catalog->clock.to_ticks(v.marks->sel1);
  }
  stats_job_ = std::async(std::launch::async, [ix = src->index, by_thread = stats_by_thread_, o] {
    std::string error;
    auto rows = analysis::duration_stats(*ix, analysis::Expr{}, by_thread, error, o);
    return std::make_pair(std::move(rows), error);
  });
}

void AnalysisPanel::sort_stats() {
  auto key = [&](const DurationStats& s) -> double {
    switch (sort_column_) {
      case 2: return double(s.h.count());
      case 3: return double(s.h.total());
      case 4: return double(s.h.min());
      case 5: return s.h.mean();
      case 6: return double(s.h.max());
      case 7: return s.h.percentile(50);
      case 8: return s.h.percentile(90);
      case 9: return s.h.percentile(99);
      case 10: return s.h.percentile(99.9);
    }
    return 0;
  };
  std::stable_sort(stats_.begin(), stats_.end(), [&](const DurationStats& a, const DurationStats& b) {
    if (sort_column_ <= 1) {
      const int c = sort_column_ == 0 ? a.name.compare(b.name) : a.thread.compare(b.thread);
      return sort_descending_ ? c > 0 : c < 0;
    }
    return sort_descending_ ? key(a) > key(b) : key(a) < key(b);
  });
}

void AnalysisPanel::stats_tab(SharedView& v) {
  ImGui::BeginDisabled(stats_job_.valid());
  if (ImGui::Button(stats_.empty() ? "Compute" : "Recompute")) compute_stats(v);
  v.record_control("stats_compute");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::Checkbox("per thread", &stats_by_thread_);
  ImGui::SameLine();
  ImGui::Checkbox("selection only", &stats_selection_);
  if (stats_job_.valid()) ImGui::TextDisabled("computing ...");
  ImGui::TextDisabled("click a row: its histogram; headers sort");
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX |
                                ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit |
                                ImGuiTableFlags_Resizable;
  // The thread column only when there are rows per thread.
  const bool threads = std::any_of(stats_.begin(), stats_.end(), [](const DurationStats& s) { return !s.thread.empty(); });
  const char* heads[] = {"name", "thread", "count", "total", "min", "mean", "max", "p50", "p90", "p99", "p99.9"};
  // The name column as wide as its longest name (a stretched column got what
  // the fixed ones left: one character in a narrow panel), up to most of
  // the panel; wider tables scroll, columns resize, a cut name shows whole
  // on hover.
  auto label_of = [](const DurationStats& s) {
    return (s.name.empty() ? std::string("(made)") : s.name) +
           (s.truncated ? "  (" + std::to_string(s.truncated) + " cut)" : std::string());
  };
  float name_width = ImGui::CalcTextSize("name").x;
  for (const DurationStats& s : stats_) name_width = std::max(name_width, ImGui::CalcTextSize(label_of(s).c_str()).x);
  name_width = std::min(name_width + ImGui::GetStyle().CellPadding.x * 2,
                        std::max(160.f, ImGui::GetContentRegionAvail().x * 0.6f));
  // (A column's given width is its first: the table is made anew, its own
  // id, when the names need another width.)
  const std::string table_id = "stats##" + std::to_string(int(name_width));
  if (!ImGui::BeginTable(table_id.c_str(), threads ? 11 : 10, flags)) return;
  for (int c = 0; c < 11; ++c) {
    if (c == 1 && !threads) continue;
    ImGuiTableColumnFlags f = ImGuiTableColumnFlags_PreferSortDescending;
    if (c == 2) f |= ImGuiTableColumnFlags_DefaultSort;
    if (c == 0) f = ImGuiTableColumnFlags_WidthFixed;
    ImGui::TableSetupColumn(heads[c], f, c == 0 ? name_width : c == 1 ? 56.f : 38.f, ImGuiID(c));
  }
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
  for (int c = 0, shown = 0; c < 11; ++c) {
    if (c == 1 && !threads) continue;
    ImGui::TableSetColumnIndex(shown++);
    ImGui::TableHeader(heads[c]);
    v.record_control((std::string("stats_head_") + heads[c]).c_str());
  }
  if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsDirty) {
    if (specs->SpecsCount > 0) {
      sort_column_ = int(specs->Specs[0].ColumnUserID);
      sort_descending_ = specs->Specs[0].SortDirection == ImGuiSortDirection_Descending;
      sort_stats();
    }
    specs->SpecsDirty = false;
  }
  for (size_t i = 0; i < stats_.size(); ++i) {
    const DurationStats& s = stats_[i];
    ImGui::TableNextRow();
    int col = 0;
    ImGui::TableSetColumnIndex(col++);
    ImGui::PushID(int(i));
    const std::string label = label_of(s);
    const float room = ImGui::GetContentRegionAvail().x;  // the name column's
    if (ImGui::Selectable(label.c_str(), false, ImGuiSelectableFlags_SpanAllColumns)) {
      show_tab("histogram");
      evaluate(v, base_stream(analysis::Op::Intervals, exact_name_filter(s.name),
                              s.thread.empty() ? std::string() : exact_name_filter(s.thread)));
    }
    if (i < 64) v.record_control(("stats_row_" + std::to_string(i)).c_str());
    if (ImGui::IsItemHovered() && v.point_at) v.point_at(s.name);  // its activity marked in every timeline
    if (ImGui::IsItemHovered() && ImGui::CalcTextSize(label.c_str()).x > room) ImGui::SetTooltip("%s", label.c_str());
    ImGui::PopID();
    if (threads) {
      ImGui::TableSetColumnIndex(col++);
      ImGui::TextUnformatted(s.thread.empty() ? "all" : s.thread.c_str());
    }
    ImGui::TableSetColumnIndex(col++);
    ImGui::Text("%llu", (unsigned long long)s.h.count());
    const double values[] = {double(s.h.total()), double(s.h.min()), s.h.mean(), double(s.h.max()),
                             s.h.percentile(50), s.h.percentile(90), s.h.percentile(99), s.h.percentile(99.9)};
    for (double value : values) {
      ImGui::TableSetColumnIndex(col++);
      ImGui::TextUnformatted(short_duration(value).c_str());
    }
  }
  ImGui::EndTable();
}

}  // namespace tinescope::app
