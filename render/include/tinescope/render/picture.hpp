// The pictures of the figures, computed on the CPU from the index (off the UI
// thread) and handed to the GL renderer. Their size follows the pixels: a
// timeline is a few bytes per (row, pixel column) plus at most a few thousand
// shapes, however many events lie in the window. docs/VIEWER.md explains them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tinescope/analysis/message_filter.hpp"
#include "tinescope/analysis/protocol_rules.hpp"
#include "tinescope/render/scene.hpp"
#include "tinescope/render/time_axis.hpp"

namespace tinescope::render {

// ---------------------------------------------------------------- layout

// One horizontal band of the timeline: an interval depth, the instants or a
// counter of a lane, or a process header.
struct Row {
  enum Kind : uint8_t { Interval, Instant, Counter, Group, Cpu, Task, Lock };
  Kind kind = Interval;
  uint32_t lane = 0;    // Group: first lane of the group
  uint32_t index = 0;   // Interval: depth; Counter: which counter of the lane; Cpu: which CPU of the lane;
                        // Task: which task of the lane; Lock: which lock of the lane
  float y = 0, h = 0;   // pixels from the top of the plot
};

struct LayoutOptions {
  float row_px = 14, counter_px = 28, group_px = 18, lane_gap_px = 4;
  std::vector<uint32_t> lanes;          // which lanes, in order; empty: all
  std::vector<std::string> collapsed;   // process groups shown as a header only
};

struct Layout {
  std::vector<Row> rows;
  float height = 0;
  // The rows of a lane: [first, end) into rows, and its vertical extent.
  struct LaneRows { uint32_t lane, first, end; float y0, y1; };
  std::vector<LaneRows> lanes;
  const LaneRows* lane_at_y(float y) const;
  const LaneRows* find_lane(uint32_t lane) const;
};
Layout layout_lanes(const Scene& scene, const LayoutOptions& options);

// ---------------------------------------------------------------- timeline

struct TimelineRequest {
  int64_t t0 = 0, t1 = 1;  // the window, nanoseconds
  double width = 1;        // pixel columns of the plot
  double theta = 0;        // log-time warp, per ns; 0 is linear
  Layout layout;
  uint32_t max_boxes = 20000, max_arrows = 800;  // more messages than this: bundles, not arrows
  // More messages than this in the window: no bundles either (counted, and said).
  uint32_t max_bundled = 500000;
  // A lane decodes its window while it holds at most this many events a
  // column; past it, its streams are drawn from their finest stored level.
  uint32_t decode_per_column = index::kDecodeEventsPerColumn;
  // [source][string id]: intervals and instants of these names are not
  // drawn (hidden categories: analysis::hidden_names); none if empty.
  std::shared_ptr<const std::vector<std::vector<uint8_t>>> hidden_names;
  // [source]: each message's verdict under protocol rules (`--rules`):
  // arrows of messages that violate one are red, of those that satisfy
  // them green; the rest keep their channel's colour. None if empty.
  std::shared_ptr<const std::vector<analysis::RuleReport>> rule_verdicts;
  // Counts the messages sent in each column (TimelinePicture::message_density),
  // from the lanes' send pyramids: the overview strip's message density.
  bool message_density = false;
  // Only the messages it passes are drawn (arrows, stubs and bundles); none if null.
  std::shared_ptr<const analysis::MessageFilter> message_filter;
  // Once this is set, building stops before the next lane's query and the
  // picture comes back `stopped` (a picture at rest that a newer request
  // makes moot: one lane at that budget is some tens of ms).
  const std::atomic<bool>* stop = nullptr;
};

// The budget of a picture that may take longer: a headless render, and a
// viewer's picture drawn again once the view has come to rest (a window of
// 1 280 columns: up to ~650 000 events a lane, some 50-100 ms on two cores).
// Decoded, the zooms just past the interactive budget show every interval
// where their stored leaves (192 items of each name) would smear it.
constexpr uint32_t kAtRestDecodePerColumn = 512;

// An interval wide enough to outline, label and point at.
struct Box {
  uint32_t row = 0;           // into layout.rows
  uint32_t source = 0, name = 0;
  float x0 = 0, x1 = 0;       // columns
  int64_t start = 0, end = 0; // ns
  uint32_t depth = 0;         // a lock's row: the feedlet that held it
  bool truncated = false;     // its end was not recorded (index::Item::truncated): drawn hatched
};

// Where an interval or job segment whose end was not recorded is drawn: cut
// at dropped events or a lost chunk, or never ended and closed with an outer
// frame (index::Item::truncated). Hatched over its box.
struct CutRect {
  uint32_t row = 0;
  float x0 = 0, x1 = 0;  // columns
};

// A job's marks in its task's row (the per-task lane): its arrival, its
// deadline, a missed deadline from the deadline to its completion, and
// where it was preempted or blocked; and in a lock's row, its misuse and
// each priority inversion while a thread waited for it.
struct JobMarkRect {
  enum Kind : uint8_t { Arrival, Deadline, Missed, Preempted, Blocked, Misuse, Inversion };
  uint32_t row = 0;
  float x0 = 0, x1 = 0;  // columns (a tick: x0 == x1)
  Kind kind = Arrival;
};

struct Arrow {
  float x0, y0, x1, y1;
  uint8_t orphan;  // 0 matched; 1 sent, never received; 2 received, never sent; 3 a clock sync message (Scene::sync)
  int64_t send = 0, recv = 0;
  uint32_t source = 0;  // its trace, and the message (what the details panel reads its events by)
  index::Flow flow{};
  uint32_t colour = 0;  // RGBA8 of its channel (name_colour of its name, or of "channel N"): stable across pictures
};

// Past max_arrows, the messages from one lane to another that were sent
// within one stretch of the window (as many stretches as keep the bundles to
// half the arrow budget, at most kBundleBins), as one line from their mean
// send on the sender's row to their mean receive on the receiver's, its
// width following their count: the traffic, never nothing.
struct Bundle {
  float x0, y0, x1, y1;  // columns, and rows' middles
  uint32_t count = 0;
  uint32_t source = 0;
};
constexpr int kBundleBins = 32;

struct GapRect {
  float x0, x1, y0, y1;
  uint64_t events;
};

struct TimelinePicture {
  uint64_t serial = 0;             // a new number for every picture built
  TimelineRequest request;
  TimeAxis axis;                   // the mapping used (warped when θ > 0)
  uint32_t columns = 0, rows = 0;  // rows == request.layout.rows.size()
  // Per (row, column), row-major: interval and instant rows hold RGBA8
  // (colour = names weighted by the time they cover in the column, alpha =
  // covered fraction); counter rows hold two floats, min and max in [0, 1]
  // (NaN: no value); the name that covers most and how many items.
  std::vector<uint32_t> rgba;
  std::vector<float> envelope;     // 2 per (row, column)
  std::vector<uint32_t> top_name;  // string id of the name covering most (of the row's lane's source)
  std::vector<uint32_t> count;     // items that end in (or cover) the column
  std::vector<std::pair<double, double>> counter_range;  // per row: value at 0 and at 1
  std::vector<Box> boxes;
  std::vector<Arrow> arrows;
  std::vector<Bundle> bundles;     // instead of arrows, past request.max_arrows
  uint64_t bundled = 0;            // messages bundled (those of the bundles left out too)
  uint64_t bundles_left_out = 0;   // past request.max_arrows / 4 of them: the busiest kept
  bool bundles_wait = false;       // past the arrow budget while the view moves: bundles come at rest
  bool over_cap = false;           // more than request.max_bundled messages in a trace's window: none of its bundled
  std::vector<uint64_t> message_density;  // request.message_density: messages sent, per column
  std::vector<GapRect> gaps;
  std::vector<CutRect> cuts;
  std::vector<JobMarkRect> job_marks;
  // Jobs that moved between CPUs (analysis::Migration): dashed, from the
  // segment's end in one CPU's row to the next one's start in the other's.
  struct MigrationLine {
    float x0, y0, x1, y1;  // columns, and rows' middles
  };
  std::vector<MigrationLine> migrations;
  uint64_t migrations_left_out = 0;  // past request.max_arrows
  uint64_t job_marks_left_out = 0;  // past the box budget; or, where the trace's jobs were too many to keep, 1
  uint64_t nodes = 0, arrows_left_out = 0, boxes_left_out = 0;  // arrows: at least this many
  uint64_t sync_left_out = 0;      // past a quarter of the arrow budget, at least this many clock sync messages: none drawn
  bool from_events = false;        // some lane was below its finest stored level
  bool over_budget = false;        // some lane was drawn coarser than its columns: over request.decode_per_column
  bool stopped = false;            // request.stop was set: incomplete, not to be shown
  double build_ms = 0;
};

uint64_t next_picture_serial();
TimelinePicture build_timeline(const Scene& scene, const TimelineRequest& request);

// ---------------------------------------------------------------- scope

// The oscilloscope: time in strips of `period_ns`, left to right, top to
// bottom; with fold F, each strip overlays F consecutive periods and a
// pixel's intensity is the fraction of them its interval covers.
// How a scope strip combines its folded periods at each column.
enum class FoldMode : uint8_t {
  Mean,  // the share of the periods busy there (weighted by the time covered)
  Max,   // busy in any period: a rare event shows at full strength
  Min,   // busy in every period of the strip
};
const char* fold_mode_name(FoldMode m);
bool parse_fold_mode(const std::string& text, FoldMode& m);

struct ScopeRequest {
  int64_t start = 0;         // ns: the left edge of the first strip
  double period_ns = 1e6;    // strip duration (fractions of a ns allowed)
  uint32_t fold = 1;
  FoldMode mode = FoldMode::Mean;
  uint32_t strips = 1;
  uint32_t columns = 1;
  std::vector<uint32_t> lanes;
  uint64_t max_items = 50'000'000;  // past this, the rest of the range is left empty (and said)
};

struct ScopePicture {
  uint64_t serial = 0;
  ScopeRequest request;
  std::vector<uint32_t> rgba;  // strips × columns, row-major; alpha = intensity
  uint64_t items = 0;
  bool truncated = false;
  double build_ms = 0;
  int64_t end() const {
    return request.start + int64_t(request.period_ns * double(request.fold) * double(request.strips));
  }
  // Where time t is: strip and column (false if outside).
  bool locate(int64_t t, uint32_t& strip, double& column) const;
};

ScopePicture build_scope(const Scene& scene, const ScopeRequest& request);

}  // namespace tinescope::render
