// What the figures show: one or more indexed traces, their lanes (one per
// thread, grouped by process) and the gaps where data was lost. Times here are
// nanoseconds of the recording host's monotonic clock, so lanes of several
// traces line up; each trace converts to its own ticks when it is queried.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tinescope/analysis/clock_align.hpp"
#include "tinescope/analysis/jobs.hpp"
#include "tinescope/analysis/message_across.hpp"
#include "tinescope/analysis/sched_check.hpp"
#include "tinescope/index/trace_index.hpp"
#include "tinescope/render/time_axis.hpp"

namespace tinescope::render {

// A time range where a lane (or, with feedlet = kAllFeedlets, every lane of
// the trace) lost data: dropped events, lost chunks, damaged bytes.
struct Gap {
  static constexpr uint32_t kAllFeedlets = UINT32_MAX;
  uint32_t feedlet = kAllFeedlets;
  int64_t t0 = 0, t1 = 0;
  uint64_t events = 0;  // dropped events, when known
};

struct Source {
  std::shared_ptr<index::TraceIndex> index;
  // Names and clock as of the last refresh: a growing trace's index changes
  // its own catalog while it is updated, so pictures use this copy.
  std::shared_ptr<const trace::Catalog> catalog;
  std::string path;
  std::vector<Gap> gaps;
  std::vector<uint32_t> stream_colour;  // by stream id: RGBA8 of the stream's name
  // What the last scan found, kept until the index grows.
  struct Scan;
  std::shared_ptr<const Scan> scan;
  // Its jobs, for the per-task lane's marks (arrivals, deadlines, misses);
  // null where it has none, or too many to keep (analysis::job_marks).
  std::shared_ptr<const analysis::JobMarks> jobs;
  uint64_t jobs_events = 0;  // the scheduling events they were read from
  int64_t jobs_read_ms = 0;  // when (steady clock)
  // Its locks' misuse (acquired while another thread held one, released by
  // a thread that did not hold it) and priority inversions, by time, the
  // first kMaxMisuse; marked red in the lock's row. Read with the jobs, as
  // its lock events grow.
  static constexpr size_t kMaxMisuse = 100'000;
  std::shared_ptr<const std::vector<analysis::SchedViolation>> misuse;
  uint64_t misuse_total = 0;
  uint64_t misuse_longest = 0;  // the longest end - ts (ticks): how far before a window to look
  // Calls f for each of `misuse` that meets [t0, t1] (ticks: a misuse at its
  // event, an inversion over its stretch), by time, until f returns false.
  template <class F>
  void each_misuse(uint64_t t0, uint64_t t1, F&& f) const {
    if (!misuse) return;
    const auto& m = *misuse;
    const uint64_t from = t0 > misuse_longest ? t0 - misuse_longest : 0;
    auto it = std::lower_bound(m.begin(), m.end(), from, [](const analysis::SchedViolation& v, uint64_t t) { return v.ts < t; });
    for (; it != m.end() && it->ts <= t1; ++it)
      if (std::max(it->end, it->ts) >= t0 && !f(*it)) return;
  }
  uint64_t lock_events = 0;  // the acquires and releases it was read from
  int64_t misuse_read_ms = 0;
};

struct Lane {
  uint32_t source = 0;
  uint32_t feedlet = 0;
  std::string name;   // the thread
  std::string group;  // the process
  uint64_t tid = 0;
  bool shares_name = false;  // another lane of its group has its name: the label says its tid
  // The trace's own order (an import's process_sort_index and
  // thread_sort_index): lanes and groups that have one come first, lower first.
  std::optional<int64_t> sort_index, group_sort_index;
  uint32_t depths = 1;            // deepest nesting + 1
  uint32_t depth_rows = 1;        // interval rows: a row a depth, up to kMaxDepthRows (the last holds
                                  // those deeper, and its label says so)
  bool has_intervals = false, has_instants = false;
  std::vector<int> counters;       // counter stream ids
  std::vector<std::string> counter_names;
  // Job segments its scheduling events ran (ts_sched), a row a CPU: the
  // CPUs' Sched stream ids (-1: none yet, a segment still running at the
  // end), numbers and names (ts_cpu_name, else "cpu N"), by number.
  std::vector<int> cpus;
  std::vector<uint32_t> cpu_numbers;
  std::vector<std::string> cpu_names;
  // The per-task lane of a trace whose scheduling events ran jobs (Grasp's
  // collapsed view; feedlet kTasksFeedlet, no thread of its own): a row a
  // task, each its job segments on any CPU from the Task streams of every
  // feedlet (coloured by CPU), by name.
  std::vector<uint32_t> tasks;               // string ids (of each name, one: task_row() goes by name)
  std::vector<std::string> task_names;
  std::vector<std::vector<int>> task_streams;  // per task: its Task stream ids
  bool is_tasks() const { return !tasks.empty() || feedlet == kTasksFeedlet; }
  static constexpr uint32_t kTasksFeedlet = UINT32_MAX - 1;
  // The locks lane of a trace whose threads recorded ts_lock (feedlet
  // kLocksFeedlet, no thread of its own): a row a lock, who held it when,
  // from the Hold streams of every feedlet, each in its thread's colour
  // (a box's depth: the feedlet that held it), by name.
  std::vector<uint32_t> locks;               // string ids (of each name, one)
  std::vector<std::string> lock_names;
  std::vector<std::vector<int>> lock_streams;  // per lock: its Hold stream ids
  bool is_locks() const { return !locks.empty() || feedlet == kLocksFeedlet; }
  static constexpr uint32_t kLocksFeedlet = UINT32_MAX - 2;

  // Its name under its group's header: without the group's name where it
  // starts with it ("Browser async ..." -> "async ...", as imports name
  // lanes), and with its thread id where it shares its name ("IOThread (tid 12)").
  std::string label() const {
    std::string_view shown = name;
    if (!group.empty() && shown.size() > group.size() + 1 && shown.starts_with(group) && shown[group.size()] == ' ')
      shown.remove_prefix(group.size() + 1);
    return shares_name ? std::string(shown) + " (tid " + std::to_string(tid) + ")" : std::string(shown);
  }
};

struct Source::Scan {
  uint64_t bytes = 0;            // the index's trace_bytes() when scanned
  uint64_t catalog_version = 0;
  std::vector<Lane> lanes;
  int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;
};

// The colour of a name: stable across traces and runs (a hash of the text).
uint32_t name_colour(std::string_view name);  // RGBA8, alpha 255
// Whether `pattern` names the lane: a /regular expression/ (ECMAScript)
// found in its thread's name, label or process's name; a glob (* ? [...])
// matching one of them whole; else one of them exactly or as a prefix that
// '.' or '#' follows. A pattern that is no regular expression matches
// nothing and, with `error`, says why. (--lanes and the viewer's thread list.)
bool lane_matches(const Lane& lane, const std::string& pattern, std::string* error = nullptr);

// Maps one trace's ticks to nanoseconds over a window, affinely (exact
// integers when the clock is nanoseconds already): per-node conversions
// must be cheap, and within a window the clock is one straight segment.
struct ClockWindow {
  ClockWindow(const trace::ClockMap& clock, int64_t ns0, int64_t ns1);
  int64_t ns(uint64_t ticks) const;
  uint64_t ticks(int64_t ns) const;
  uint64_t k0 = 0, k1 = 0;
  int64_t ns0 = 0;
  double ns_per_tick = 1;
  bool exact = true;
};

class Scene {
 public:
  // A row a depth: a lane of a deep stack scrolls (the layout is as tall as
  // its rows). Past this, the last row holds the deeper calls, labelled.
  static constexpr uint32_t kMaxDepthRows = 256;
  // Opens (indexing if needed) a trace and adds its lanes.
  bool add_trace(const std::string& path, std::string& error, const index::BuildOptions& options = {});
  // The same for an index already open (a live, growing trace).
  void add_index(std::shared_ptr<index::TraceIndex> index);
  // Re-reads lanes, depths and gaps of the traces whose index has grown
  // since (a live, growing trace). A scene is not changed while pictures are
  // built from it: a live viewer refreshes a copy and swaps it in.
  void refresh();

  const std::vector<Source>& sources() const { return sources_; }
  const std::vector<Lane>& lanes() const { return lanes_; }
  int64_t first_ns() const { return first_ns_; }
  int64_t last_ns() const { return last_ns_; }
  // The unit its traces ask times to be printed in (each the same
  // displayTimeUnit), else Fit.
  TimeUnit time_unit() const { return time_unit_; }
  std::string_view string(uint32_t source, uint32_t id) const {
    return sources_[source].catalog->string(id);
  }
  // The lanes of --lanes: a comma-separated list of lane numbers (a
  // feedlet's, as `info` prints it), thread or process names (exactly, or as
  // a prefix followed by '.'/'#'), globs (fnmatch) and /regular
  // expressions/ (lane_matches), in that order; an item !X leaves out the
  // lanes X names (with only such items: every other lane). Empty, with an
  // error naming it, if an item matches no lane or every lane is left out.
  std::vector<uint32_t> select_lanes(const std::string& spec, std::string& error) const;
  // What every figure of the scene says above its lanes: what is wrong with
  // the scene as a whole (clocks of several traces that could not be aligned).
  std::vector<std::string> warnings;
  // Messages between its traces (each an orphan in its own trace), once
  // they are on one clock: drawn as arrows from one trace's lane to the other's.
  std::shared_ptr<const analysis::CrossMessages> across;
  // The clock sync messages between its traces on one clock, by send
  // (analysis::sync_arrows): drawn as thin amber arrows.
  std::shared_ptr<const analysis::SyncArrows> sync;

 private:
  void scan(Source& s, uint32_t source);
  void group_by_host();
  std::vector<Source> sources_;
  std::vector<Lane> lanes_;
  int64_t first_ns_ = 0, last_ns_ = 0;
  TimeUnit time_unit_ = TimeUnit::Fit;
};

}  // namespace tinescope::render
