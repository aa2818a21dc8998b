#include "tinescope/app/analysis_panel.hpp"

#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <regex>

#include "tinescope/analysis/needles.hpp"
#include "tinescope/analysis/stream_expr.hpp"

namespace tinescope::app {

using analysis::DerivedStream;
using analysis::DurationStats;
using analysis::Record;
using render::Rect;

namespace {

using Clock = std::chrono::steady_clock;

template <class T>
bool ready(const std::future<T>& f) {
  return f.valid() && f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

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

ImU32 colour(uint32_t rgba, float alpha = 1) {
  return IM_COL32(rgba & 255, rgba >> 8 & 255, rgba >> 16 & 255, int(std::clamp(alpha, 0.f, 1.f) * 255));
}

}  // namespace

namespace {

// `text` as a regular expression that matches exactly it.
std::string regex_escape(const std::string& text) {
  std::string re;
  for (char c : text) {
    if (std::strchr("\\^$.|?*+()[]{}/", c)) re += '\\';
    re += c;
  }
  return re;
}

}  // namespace

std::string exact_name_filter(const std::string& name) {
  if (name.find_first_of("*?/") == std::string::npos) return name;
  return "/^" + regex_escape(name) + "$/";
}

// ---------------------------------------------------------------- histogram

uint32_t PlayableHistogram::bin(double ns) const {
  double f;
  if (log_bins) f = ns <= lo_ns ? 0 : std::log(ns / lo_ns) / std::log(hi_ns / lo_ns);
  else f = ns / hi_ns;
  return uint32_t(std::clamp(f * bins, 0.0, double(bins - 1)));
}

double PlayableHistogram::bin_low(uint32_t b) const {
  const double f = double(b) / bins;
  return log_bins ? lo_ns * std::pow(hi_ns / lo_ns, f) : hi_ns * f;
}

PlayableHistogram PlayableHistogram::build(const DerivedStream& s, const trace::ClockMap& clock, bool log_bins) {
  PlayableHistogram h;
  h.log_bins = log_bins;
  const auto records = s.records();
  const double ns_per_tick = 1 / clock.ticks_per_ns();
  double lo = INFINITY, hi = 0;
  for (const Record& r : records) {
    const double d = double(r.duration()) * ns_per_tick;
    lo = std::min(lo, d), hi = std::max(hi, d);
  }
  h.lo_ns = std::max(1.0, lo == INFINITY ? 1.0 : lo);
  h.hi_ns = std::max(h.lo_ns * 1.01, hi * 1.0001 + 1);
  h.every = std::max<uint64_t>(4096, records.size() / 256 + 1);
  std::vector<uint64_t> counts(h.bins, 0);
  h.checkpoints.push_back(counts);
  for (size_t i = 0; i < records.size(); ++i) {
    ++counts[h.bin(double(records[i].duration()) * ns_per_tick)];
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
  for (size_t i = k * every; i < n; ++i) ++counts[bin(double(records[i].duration()) * ns_per_tick)];
  shown = n;
  return counts;
}

// ---------------------------------------------------------------- the panel

struct AnalysisPanel::FigureCache {
  int64_t t0 = 0, t1 = 0;
  float width = 0;
  index::Buckets buckets;
  double lo = 0, hi = 1;  // samples: the stream's range
};

AnalysisPanel::~AnalysisPanel() {
  if (job_.valid()) job_.wait();
  if (stats_job_.valid()) stats_job_.wait();
  if (search_job_.valid()) search_job_.wait();
  if (hist_job_.valid()) hist_job_.wait();
}

const render::Source* AnalysisPanel::source(const SharedView& v) const {
  const auto& sources = v.scene->sources();
  if (sources.empty()) return nullptr;
  return &sources[std::min<size_t>(source_, sources.size() - 1)];
}

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

void AnalysisPanel::search(const SharedView& v, const std::string& pattern) {
  const render::Source* src = source(v);
  if (!src || search_job_.valid()) return;
  std::snprintf(pattern_, sizeof pattern_, "%s", pattern.c_str());
  hits_title_ = "hits for /" + pattern + "/";
  search_job_ = std::async(std::launch::async, [ix = src->index, cat = src->catalog, pattern] {
    std::vector<SearchHit> hits;
    std::regex re;
    try {
      re = std::regex(pattern, std::regex::ECMAScript | std::regex::icase);
    } catch (const std::regex_error& x) {
      return std::make_pair(hits, "not a regular expression: " + pattern + " (" + x.what() + ")");
    }
    const trace::ClockMap& clock = cat->clock;
    // Threads: their first event.
    for (const auto& [id, f] : cat->feedlets) {
      index::EventRef ev;
      if (!std::regex_search(f.name, re) || !ix->feedlet_event(id, 0, ev)) continue;
      const int64_t at = clock.to_ns(ev.ts);
      hits.push_back({SearchHit::Thread, at, at, "thread " + f.name});
    }
    // Intervals and instants by name, in time order (by their end), the first kMaxHits.
    std::vector<int> streams;
    const auto infos = ix->streams();
    for (size_t id = 0; id < infos.size(); ++id) {
      const auto k = infos[id].kind;
      if ((k == index::StreamKind::Interval || k == index::StreamKind::Instant) &&
          std::regex_search(std::string(cat->string(infos[id].key)), re))
        streams.push_back(int(id));
    }
    size_t total_events = 0;
    if (!streams.empty()) {
      // The names found, as one stream: an alternation of exact names.
      std::string alternation;
      std::vector<std::string> names;
      for (int id : streams) names.emplace_back(cat->string(infos[size_t(id)].key));
      std::sort(names.begin(), names.end());
      names.erase(std::unique(names.begin(), names.end()), names.end());
      for (const std::string& n : names) alternation += (alternation.empty() ? "" : "|") + regex_escape(n);
      for (analysis::Op op : {analysis::Op::Intervals, analysis::Op::Instants}) {
        analysis::Expr e;
        e.op = op;
        e.filter.name = "/^(" + alternation + ")$/";
        std::string error;
        auto c = analysis::open_cursor(*ix, e, {}, error);
        if (!c) continue;
        Record r;
        while (c->next(r)) {
          if (++total_events > kMaxHits) continue;  // counted, not listed
          auto f = cat->feedlets.find(r.feedlet);
          hits.push_back({SearchHit::Event, clock.to_ns(r.start), clock.to_ns(r.end),
                          std::string(cat->string(r.name)) + "  (" + (f == cat->feedlets.end() ? "?" : f->second.name) + ")"});
        }
      }
    }
    // Message ids.
    size_t messages = 0;
    for (const index::Flow& f : ix->flows(ix->first_ts(), ix->last_ts())) {
      if (!std::regex_search(std::to_string(f.id), re) || ++messages > kMaxHits) continue;
      const uint64_t a = f.first_half();
      const uint64_t b = (f.flags & index::kFlowReceived) ? f.recv_ts : a;
      hits.push_back({SearchHit::Message, clock.to_ns(std::min(a, b)), clock.to_ns(std::max(a, b)),
                      "message " + std::to_string(f.id) + (f.matched() ? "" : "  (never received)")});
    }
    std::stable_sort(hits.begin(), hits.end(), [](const SearchHit& x, const SearchHit& y) {
      return x.kind != y.kind ? x.kind == SearchHit::Thread : x.t0 < y.t0;
    });
    std::string note;
    if (total_events > kMaxHits || messages > kMaxHits)
      note = "more hits than listed: " + std::to_string(total_events) + " events, " + std::to_string(messages) + " messages";
    return std::make_pair(hits, note);
  });
}

void AnalysisPanel::find_needles(const SharedView& v, const std::string& text, bool outliers) {
  const render::Source* src = source(v);
  if (!src || search_job_.valid()) return;
  analysis::Expr e;
  std::string error;
  if (!analysis::parse_stream(text, e, error)) {
    status_ = "stream: " + error;
    return;
  }
  if (outliers && (!analysis::is_base(e.op) || e.op == analysis::Op::Messages)) {
    status_ = "outliers are found per name of a base stream, e.g. intervals(thread=\"gc\")";
    return;
  }
  char title[160];
  if (outliers) std::snprintf(title, sizeof title, "over %.3gx their name's mean", double(outlier_factor_));
  else std::snprintf(title, sizeof title, "the %d longest", needles_k_);
  hits_title_ = std::string(title) + " of " + analysis::format_stream(e);
  search_job_ = std::async(std::launch::async, [ix = src->index, cat = src->catalog, e, outliers,
                                                k = size_t(std::max(1, needles_k_)), factor = double(outlier_factor_)] {
    std::vector<SearchHit> hits;
    std::string error;
    std::vector<Record> found;
    if (outliers) {
      for (const analysis::Outlier& o : analysis::outliers(*ix, e, factor, 10)) found.push_back(o.r);
      std::sort(found.begin(), found.end(), [](const Record& a, const Record& b) { return a.duration() > b.duration(); });
    } else {
      analysis::NeedleQuery q;
      q.k = k;
      found = analysis::longest(*ix, e, q, error);
    }
    for (const Record& r : found) {
      auto f = cat->feedlets.find(r.feedlet);
      const int64_t t0 = cat->clock.to_ns(r.start), t1 = cat->clock.to_ns(r.end);
      hits.push_back({SearchHit::Event, t0, t1,
                      render::format_duration(t1 - t0) + "  " + std::string(r.name ? cat->string(r.name) : "") + "  (" +
                          (f == cat->feedlets.end() ? "" : f->second.name) + ")"});
    }
    return std::make_pair(hits, error);
  });
  want_tab_ = 3;
}

void AnalysisPanel::bookmark_hits(SharedView& v) {
  std::vector<int64_t>& b = v.marks->bookmarks;
  b.clear();
  for (const SearchHit& h : hits_) b.push_back(h.t0);
  std::sort(b.begin(), b.end());
  status_ = std::to_string(b.size()) + " bookmarks from the hit list";
}

void AnalysisPanel::go_to_hit(SharedView& v, size_t i) {
  if (i >= hits_.size()) return;
  const SearchHit& h = hits_[i];
  current_hit_ = int(i);
  const int64_t span = v.t1 - v.t0, len = h.t1 - h.t0;
  if (len * 10 > span * 8) {  // does not fit: zoom to it
    const int64_t pad = std::max<int64_t>(2, len / 10);
    v.set_window(h.t0 - pad, h.t1 + pad);
  } else {
    const int64_t mid = h.t0 + len / 2;
    v.set_window(mid - span / 2, mid - span / 2 + span);
  }
  v.marks->cursor = h.t0;
  if (h.t1 > h.t0) v.marks->sel0 = h.t0, v.marks->sel1 = h.t1;
}

void AnalysisPanel::bookmark_stream(SharedView& v) {
  if (!stream_ || !catalog_) return;
  std::vector<int64_t>& b = v.marks->bookmarks;
  b.clear();
  for (const Record& r : stream_->records()) {
    if (b.size() == kMaxBookmarks) break;
    b.push_back(catalog_->clock.to_ns(r.start));
  }
  std::sort(b.begin(), b.end());
  status_ = std::to_string(b.size()) + " bookmarks" +
            (stream_->size() > kMaxBookmarks ? " (the first " + std::to_string(kMaxBookmarks) + ")" : "") +
            ": N / P or the Bookmark buttons step through them in every figure";
}

void AnalysisPanel::start_histogram() {
  if (!stream_ || !catalog_ || hist_job_.valid()) return;
  hist_.reset();
  hist_job_ = std::async(std::launch::async, [s = stream_.get(), cat = catalog_, log = hist_log_] {
    return PlayableHistogram::build(*s, cat->clock, log);
  });
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
      if (stream_->intervals()) start_histogram();
    }
    bookmark_when_done_ = false;
  }
  if (ready(hist_job_)) {
    hist_ = std::make_shared<PlayableHistogram>(hist_job_.get());
    if (hist_->log_bins != hist_log_) start_histogram();  // the box was ticked while it was binned
  }
  if (ready(stats_job_)) {
    auto [rows, error] = stats_job_.get();
    stats_ = std::move(rows);
    sort_stats();
    if (!error.empty()) status_ = "statistics: " + error;
  }
  if (ready(search_job_)) {
    auto [hits, note] = search_job_.get();
    hits_ = std::move(hits);
    current_hit_ = -1;
    status_ = std::to_string(hits_.size()) + " " + hits_title_ + (note.empty() ? "" : "; " + note);
  }
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
    const char* names[] = {"Streams", "Statistics", "Histogram", "Search"};
    for (int i = 0; i < 4; ++i) {
      const ImGuiTabItemFlags flags = want_tab_ == i ? ImGuiTabItemFlags_SetSelected : 0;
      const bool open = ImGui::BeginTabItem(names[i], nullptr, flags);
      v.record_control((std::string("tab_") + names[i]).c_str());
      if (!open) continue;
      tab_ = i;
      switch (i) {
        case 0: streams_tab(v); break;
        case 1: stats_tab(v); break;
        case 2: histogram_tab(v); break;
        case 3: search_tab(v); break;
      }
      ImGui::EndTabItem();
    }
    want_tab_ = -1;
    ImGui::EndTabBar();
  }
  ImGui::End();
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
  if (ImGui::Button("Clear bookmarks")) v.marks->bookmarks.clear();
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
    want_tab_ = 2;
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
    if (stream_->intervals() && ImGui::Button("Histogram of its durations")) want_tab_ = 2;
  }
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
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  // The thread column only when there are rows per thread.
  const bool threads = std::any_of(stats_.begin(), stats_.end(), [](const DurationStats& s) { return !s.thread.empty(); });
  const char* heads[] = {"name", "thread", "count", "total", "min", "mean", "max", "p50", "p90", "p99", "p99.9"};
  if (!ImGui::BeginTable("stats", threads ? 11 : 10, flags)) return;
  for (int c = 0; c < 11; ++c) {
    if (c == 1 && !threads) continue;
    ImGuiTableColumnFlags f = ImGuiTableColumnFlags_PreferSortDescending;
    if (c == 2) f |= ImGuiTableColumnFlags_DefaultSort;
    if (c == 0) f = ImGuiTableColumnFlags_WidthStretch;
    ImGui::TableSetupColumn(heads[c], f, c == 0 ? 0.f : c == 1 ? 56.f : 38.f, ImGuiID(c));
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
    if (ImGui::Selectable(s.name.empty() ? "(made)" : s.name.c_str(), false, ImGuiSelectableFlags_SpanAllColumns)) {
      want_tab_ = 2;
      evaluate(v, base_stream(analysis::Op::Intervals, exact_name_filter(s.name),
                              s.thread.empty() ? std::string() : exact_name_filter(s.thread)));
    }
    if (i < 64) v.record_control(("stats_row_" + std::to_string(i)).c_str());
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

void AnalysisPanel::histogram_tab(SharedView& v) {
  if (!stream_ || !stream_->intervals()) {
    ImGui::TextWrapped("Evaluate an interval stream (Streams tab), click a row of the statistics, or measure: "
                       "its durations show here.");
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
    ImGui::Text("%s .. %s: %llu", render::format_duration(int64_t(hist_->bin_low(b))).c_str(),
                render::format_duration(int64_t(hist_->bin_low(b + 1))).c_str(), (unsigned long long)hist_counts_[b]);
    ImGui::TextDisabled("click: bookmark these");
    ImGui::EndTooltip();
    if (ImGui::IsItemClicked()) {
      // The intervals of that bin (up to the play head) become the bookmarks.
      auto& marks = v.marks->bookmarks;
      marks.clear();
      const double ns_per_tick = 1 / catalog_->clock.ticks_per_ns();
      const auto rec = stream_->records();
      for (size_t i = 0; i < hist_shown_ && marks.size() < kMaxBookmarks; ++i)
        if (hist_->bin(double(rec[i].duration()) * ns_per_tick) == b) marks.push_back(catalog_->clock.to_ns(rec[i].start));
      status_ = std::to_string(marks.size()) + " bookmarks from the histogram";
    }
  }
  ImGui::SetCursorScreenPos({at.x, at.y + h + 2});
  ImGui::TextDisabled("%s", render::format_duration(int64_t(hist_->bin_low(0))).c_str());
  ImGui::SameLine(w - 60);
  ImGui::TextDisabled("%s", render::format_duration(int64_t(hist_->hi_ns)).c_str());
  ImGui::TextWrapped("%s", status_.c_str());
}

void AnalysisPanel::search_tab(SharedView& v) {
  ImGui::TextWrapped("A regular expression over event names, threads and message ids.");
  ImGui::SetNextItemWidth(-80);
  const bool entered = ImGui::InputText("##pattern", pattern_, sizeof pattern_, ImGuiInputTextFlags_EnterReturnsTrue);
  v.record_control("search_text");
  ImGui::SameLine();
  ImGui::BeginDisabled(search_job_.valid());
  if (ImGui::Button("Search") || entered) search(v, pattern_);
  ImGui::EndDisabled();
  v.record_control("search_go");
  ImGui::BeginDisabled(hits_.empty());
  if (ImGui::Button("< Previous hit")) go_to_hit(v, size_t(std::max(0, current_hit_ - 1)));
  v.record_control("hit_prev");
  ImGui::SameLine();
  if (ImGui::Button("Next hit >")) go_to_hit(v, size_t(std::min<int>(int(hits_.size()) - 1, current_hit_ + 1)));
  v.record_control("hit_next");
  ImGui::SameLine();
  if (ImGui::Button("Bookmark hits")) bookmark_hits(v);
  v.record_control("hit_bookmark");
  ImGui::EndDisabled();
  ImGui::TextWrapped("%s", status_.c_str());
  ImGui::BeginChild("hits");
  ImGuiListClipper clip;
  clip.Begin(int(hits_.size()));
  while (clip.Step())
    for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
      const SearchHit& h = hits_[size_t(i)];
      char label[320];
      std::snprintf(label, sizeof label, "%-14s %s##%d", render::format_time(h.t0 - v.scene->first_ns(), 1).c_str(),
                    h.text.c_str(), i);
      if (ImGui::Selectable(label, i == current_hit_)) go_to_hit(v, size_t(i));
      if (i < 64) v.record_control(("hit_" + std::to_string(i)).c_str());
    }
  ImGui::EndChild();
}

void AnalysisPanel::draw_figure(ImDrawList* dl, const SharedView& v, Rect rect, const render::TimeAxis& axis) {
  if (!stream_ || !catalog_) return;
  const render::TimelineGeometry g = render::TimelineGeometry::of(rect);
  const Rect plot = {g.plot.x, rect.y + 18, g.plot.w, rect.h - 20};
  dl->AddRectFilled({rect.x, rect.y}, {rect.x + rect.w, rect.y + rect.h}, colour(render::kBackground));
  dl->AddLine({rect.x, rect.y}, {rect.x + rect.w, rect.y}, IM_COL32(90, 90, 90, 255));
  dl->AddText({rect.x + 4, rect.y + 2}, IM_COL32(220, 220, 220, 255), stream_text_.c_str());
  const trace::ClockMap& clock = catalog_->clock;
  if (!figure_ || figure_->t0 != v.t0 || figure_->t1 != v.t1 || figure_->width != plot.w) {
    auto c = std::make_shared<FigureCache>();
    c->t0 = v.t0, c->t1 = v.t1, c->width = plot.w;
    const uint64_t k0 = clock.to_ticks(v.t0), k1 = clock.to_ticks(v.t1);
    c->buckets = stream_->query(k0, std::max(k0, k1), uint32_t(std::max(1.f, plot.w)));
    if (!stream_->intervals()) {
      // The whole stream's range, from the top of its pyramid: the scale stays put while zooming.
      const auto top = stream_->query_shift(0, UINT64_MAX, stream_->top_shift()).nodes;
      c->lo = INFINITY, c->hi = -INFINITY;
      for (const index::Node& n : top) c->lo = std::min(c->lo, n.s.min), c->hi = std::max(c->hi, n.s.max);
      if (!(c->hi > c->lo)) c->hi = c->lo + 1;
    }
    figure_ = c;
  }
  const FigureCache& c = *figure_;
  const uint32_t rgba = render::name_colour(stream_text_);
  const uint32_t shift = c.buckets.shift;
  char label[96];
  if (!stream_->intervals()) {
    std::snprintf(label, sizeof label, "%.6g .. %.6g", c.lo, c.hi);
    dl->AddText({rect.x + 4, rect.y + 20}, IM_COL32(160, 160, 160, 255), label);
  } else {
    std::snprintf(label, sizeof label, "%llu intervals", (unsigned long long)stream_->size());
    dl->AddText({rect.x + 4, rect.y + 20}, IM_COL32(160, 160, 160, 255), label);
  }
  dl->PushClipRect({plot.x, plot.y}, {plot.x + plot.w, plot.y + plot.h}, true);
  float last_x = -1, last_y = 0;
  for (const index::Node& n : c.buckets.nodes) {
    const uint64_t b0 = n.bucket << shift, b1 = ((n.bucket + 1) << shift) - 1;
    float x0 = plot.x + float(axis.x(clock.to_ns(b0))), x1 = plot.x + float(axis.x(clock.to_ns(b1)));
    if (x1 < x0 + 1) x1 = x0 + 1;
    if (stream_->intervals()) {
      // Intensity: the share of the bucket's time covered (nested time counted once is not known: capped).
      const double covered = std::min(1.0, double(n.iv.busy) / double(uint64_t(1) << shift));
      const float a = n.count ? std::max(0.35f, float(covered)) : 0;
      dl->AddRectFilled({x0, plot.y + 2}, {x1, plot.y + plot.h - 2}, colour(rgba, a));
    } else {
      auto y = [&](double val) { return plot.y + plot.h - 2 - float((val - c.lo) / (c.hi - c.lo)) * (plot.h - 4); };
      dl->AddRectFilled({x0, y(n.s.max)}, {x1, y(n.s.min) + 1}, colour(rgba));
      if (last_x >= 0) dl->AddLine({last_x, last_y}, {x0, y(n.s.first)}, colour(rgba, 0.6f));
      last_x = x1, last_y = y(n.s.last);
    }
  }
  dl->PopClipRect();
}

}  // namespace tinescope::app
