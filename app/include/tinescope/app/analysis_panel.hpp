// The viewer's analysis panel: streams defined by their text (the syntax of
// docs/ANALYSIS.md, shared with the command line), bookmarks from any
// interval stream, the statistics table, a duration histogram that plays up
// to the play head, search with a hit list, response-time measurement, the
// categories shown and hidden, and the threads: which the timelines show, in
// what order, each with its overview.
// Everything that reads the trace runs off the UI thread; the panel acts on
// the viewer's shared view (window, cursor, selection, bookmarks) through
// SharedView, so every figure moves with it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "tinescope/analysis/categories.hpp"
#include "tinescope/analysis/derived_stream.hpp"
#include "tinescope/analysis/duration_stats.hpp"
#include "tinescope/render/figure.hpp"
#include "tinescope/render/chart.hpp"
#include "tinescope/render/histogram.hpp"
#include "tinescope/render/scene.hpp"
#include "tinescope/render/thread_overview.hpp"
#include "tinescope/render/time_axis.hpp"

struct ImDrawList;

namespace tinescope::app {

// What the panel reads of the viewer and may change (on the UI thread).
struct SharedView {
  const render::Scene* scene = nullptr;
  render::Marks* marks = nullptr;
  int64_t t0 = 0, t1 = 0;   // the window every figure shows
  bool playing = false;     // playing or live: the play head is the window's right edge
  std::function<void(int64_t t0, int64_t t1)> set_window;
  std::function<void(const char* id)> record_control;  // the last ImGui item, for tests and tools
  // The categories the timelines leave out, and how to change them (with
  // the names they hide: [source][string id], analysis::hidden_names).
  std::vector<std::string> hidden_categories;
  std::function<void(const std::vector<std::string>& categories,
                     std::shared_ptr<const std::vector<std::vector<uint8_t>>> names)>
      hide_categories;
  // The lanes every timeline shows, in order (empty: every lane, as they
  // came), and how to change them (the Threads tab).
  std::vector<uint32_t> lanes;
  std::function<void(const std::vector<uint32_t>& lanes)> set_lanes;
  // Points at a function (an interval's name) for this frame: where it runs
  // is marked in every timeline and thread overview (activity markers).
  std::function<void(const std::string& name)> point_at;
  // The rectangle of something drawn, not an ImGui item (tests and tools).
  std::function<void(const std::string& id, render::Rect r)> record_rect;
  std::shared_ptr<const render::Scene> shared_scene;  // the scene, for work off the UI thread
  uint64_t scene_serial = 0;                          // a new number for each new scene (a live one's)
};

struct SearchHit {
  enum Kind { Event, Thread, Message, Job } kind = Event;
  int64_t t0 = 0, t1 = 0;  // ns
  std::string text;        // what matched, and where
  std::string name;        // an interval's: its name (hovered, its activity is marked)
};

class AnalysisPanel {
 public:
  static constexpr float kWidth = 480;           // on the right of the figures
  static constexpr float kFigureHeight = 110;    // the stream figure, under the others
  static constexpr size_t kMaxBookmarks = 100000;
  static constexpr size_t kMaxHits = 2000;

  AnalysisPanel() = default;
  ~AnalysisPanel();  // waits for evaluations still running
  AnalysisPanel(const AnalysisPanel&) = delete;
  AnalysisPanel& operator=(const AnalysisPanel&) = delete;

  // Takes what finished evaluating (every frame, shown or not: bookmarks
  // asked for on the command line arrive with the panel closed too).
  void poll(SharedView& v);
  // The panel's window in `area` (screen coordinates).
  void draw(SharedView& v, render::Rect area);
  // The evaluated stream as a figure in `rect`, on the figures' time axis.
  bool has_figure() const { return stream_ != nullptr || !series_.empty(); }
  // The stream figure's time series: sample streams pinned with "Keep as a
  // series", drawn together on one value axis with the current stream.
  size_t series_count() const { return series_.size(); }
  void pin_series();
  void draw_figure(ImDrawList* dl, const SharedView& v, render::Rect rect, const render::TimeAxis& axis);

  // Starts evaluating a stream (as typed in the panel); with bookmark, its
  // intervals become the bookmarks when it arrives.
  void evaluate(const SharedView& v, const std::string& text, bool bookmark = false);
  void compute_stats(const SharedView& v);
  void search(const SharedView& v, const std::string& pattern);
  // Needles of the stream typed in: its k longest intervals over the whole
  // trace (through the pyramids), or with outliers, the intervals longer
  // than `factor` times their name's mean. They become the hit list.
  void find_needles(const SharedView& v, const std::string& text, bool outliers);
  // The messages never received and never sent (the index's flows), as hits.
  void find_orphans(const SharedView& v);
  // The scheduling checks' violations (missed deadlines, lock misuse, priority inversions, budget overruns; `check`'s), as hits.
  void find_violations(const SharedView& v);
  void go_to_hit(SharedView& v, size_t i);
  void bookmark_hits(SharedView& v);
  void bookmark_stream(SharedView& v);
  // Reads every trace for its categories (off the UI thread): the
  // Categories tab's list. Then set_category_hidden() hides or shows one in
  // every timeline.
  void find_categories(const SharedView& v);
  void set_category_hidden(SharedView& v, const std::string& category, bool hidden);

  // ---- for tests and tools
  bool busy() const {
    return job_.valid() || stats_job_.valid() || search_job_.valid() || hist_job_.valid() || categories_job_.valid() ||
           overviews_job_.valid() || pie_job_.valid();
  }
  // Each source's categories, once read (null before, or for a source with none).
  const std::vector<std::shared_ptr<const analysis::Categories>>& categories() const { return categories_; }
  const std::string& status() const { return status_; }
  const analysis::DerivedStream* stream() const { return stream_.get(); }
  const std::vector<analysis::DurationStats>& stats() const { return stats_; }  // in the table's order
  const std::vector<uint64_t>& histogram() const { return hist_counts_; }
  uint64_t histogram_shown() const { return hist_shown_; }
  const render::PieChart& pie() const { return pie_; }
  int64_t play_head() const { return play_head_; }
  const std::vector<SearchHit>& hits() const { return hits_; }
  int tab() const { return tab_; }
  std::string tab_name() const;  // the open tab's name, lower case ("search")
  // Opens a tab by its name, lower case ("threads"); false if there is none.
  bool show_tab(const std::string& name);
  // The Threads tab's overviews, a lane each (empty until built).
  const std::vector<render::ThreadOverview>& overviews() const { return overviews_; }

 private:
  struct Evaluated {
    std::unique_ptr<analysis::DerivedStream> stream;
    std::string text, error;
    double ms = 0;
  };
  const render::Source* source(const SharedView& v) const;
  void streams_tab(SharedView& v);
  void stats_tab(SharedView& v);
  void histogram_tab(SharedView& v);
  void search_tab(SharedView& v);
  void categories_tab(SharedView& v);
  void threads_tab(SharedView& v);
  void pie_tab(SharedView& v);
  void thread_row(SharedView& v, uint32_t lane, bool shown, const std::vector<uint32_t>& order);
  // The lanes every timeline shows, in order (none: refused, and said).
  void show_lanes(SharedView& v, std::vector<uint32_t> lanes);
  void sort_stats();
  void start_histogram();  // bins the stream's durations off the UI thread

  uint32_t source_ = 0;  // the trace streams are evaluated on
  std::shared_ptr<index::TraceIndex> index_;          // of the stream shown
  std::shared_ptr<const trace::Catalog> catalog_;
  int tab_ = 0, want_tab_ = -1;
  std::string status_;

  // Streams
  char text_[512] = "longer(intervals(name=\"interrupt\"), 250us)";
  char quick_name_[128] = "gc.quantum", quick_longer_[32] = "1ms";
  char measure_from_[160] = "\"gc.mark\"", measure_to_[160] = "\"gc.sweep\"";
  std::future<Evaluated> job_;
  bool bookmark_when_done_ = false;
  std::unique_ptr<analysis::DerivedStream> stream_;
  std::string stream_text_;
  struct FigureCache;
  struct Series {
    std::string text;
    std::unique_ptr<analysis::DerivedStream> stream;
    std::shared_ptr<const trace::Catalog> catalog;
    std::shared_ptr<FigureCache> figure;
  };
  std::vector<Series> series_;
  std::shared_ptr<FigureCache> figure_;

  // Statistics
  bool stats_by_thread_ = false, stats_selection_ = false;
  std::future<std::pair<std::vector<analysis::DurationStats>, std::string>> stats_job_;
  std::vector<analysis::DurationStats> stats_;
  int sort_column_ = 2;  // count
  bool sort_descending_ = true;

  // Histogram
  bool hist_log_ = true, hist_play_ = true;
  std::future<render::PlayableHistogram> hist_job_;
  std::shared_ptr<render::PlayableHistogram> hist_;
  std::vector<uint64_t> hist_counts_;
  uint64_t hist_shown_ = 0;
  int64_t play_head_ = render::Marks::kNone;

  // Pie: where the window's time went (render::build_pie), off the UI thread.
  int pie_by_ = 0;  // analysis::ShareBy
  bool pie_play_ = true;
  std::future<render::PieChart> pie_job_;
  render::PieChart pie_;
  std::string pie_key_;  // what pie_ (or the job) is for

  // Search
  char pattern_[256] = "";
  std::string hits_title_;  // what the list holds
  int needles_k_ = 100;
  float outlier_factor_ = 5;
  std::future<std::pair<std::vector<SearchHit>, std::string>> search_job_;
  std::vector<SearchHit> hits_;
  size_t hits_total_ = 0;
  int current_hit_ = -1;

  // Categories
  using CategoryList = std::vector<std::shared_ptr<const analysis::Categories>>;
  std::future<CategoryList> categories_job_;
  std::atomic<bool> categories_stop_{false};
  std::shared_ptr<std::atomic<uint64_t>> categories_read_;  // events read so far
  uint64_t categories_total_ = 0;                           // events to read
  CategoryList categories_;
  bool categories_asked_ = false;
  std::string categories_status_;

  // Threads: the list's filter, and each lane's overview (render/thread_overview.hpp).
  char thread_filter_[160] = "";
  std::string thread_filter_error_, threads_note_;
  using Overviews = std::vector<render::ThreadOverview>;  // [lane]
  std::future<Overviews> overviews_job_;
  Overviews overviews_;
  uint64_t overviews_of_ = UINT64_MAX;  // the serial of the scene they were built from
  std::chrono::steady_clock::time_point overviews_at_{};
};

// `name` as a stream filter that matches exactly it (quoted; a regular
// expression when the name holds glob or slash characters).
std::string exact_name_filter(const std::string& name);

}  // namespace tinescope::app
