// Everything that decides what a figure shows: the viewer's state for one
// figure and the options of `tinescope render` are this same struct, so a
// headless render reproduces what the viewer shows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tinescope/analysis/period.hpp"
#include "tinescope/render/figure.hpp"
#include "tinescope/render/lane_order.hpp"
#include "tinescope/render/picture.hpp"
#include "tinescope/render/sequence.hpp"

namespace tinescope::render {

struct FigureParams {
  enum Type { Timeline, Scope, Sequence } type = Timeline;
  int64_t t0 = 0, t1 = 0;   // timeline: the window; scope: t0 is the first strip's start (ns)
  double theta = 0;         // log-time warp (per ns), 0 linear
  double period_ns = 0;     // scope strip duration; 0: default_period_ns()
  uint32_t fold = 1;
  FoldMode fold_mode = FoldMode::Mean;
  uint32_t strip_px = 8;
  // Scope: the periods found for its lanes, where it was asked to find them
  // (find_scope_periods), the chosen one first.
  std::vector<analysis::PeriodCandidate> period_candidates;
  // Scope: a time kept on screen (the cursor, a bookmark gone to): where it
  // lies past the strips that start at t0, they scroll by whole strips so
  // that its strip is in the middle. Marks::kNone: none.
  int64_t follow = Marks::kNone;
  // Timeline: lanes shown (all if empty); scope: lanes folded; sequence:
  // the lanes of its lifelines (message_lanes() picks those with messages).
  std::vector<uint32_t> lanes;
  LaneOrder lane_order = LaneOrder::FirstAppearance;  // timeline, sequence: how `lanes` was ordered (order_lanes)
  Spacing spacing = Spacing::Time;                    // sequence: real time or event order
  Lifelines lifelines = Lifelines::Threads;           // sequence: a lifeline a lane, or a queue
  std::shared_ptr<const QueueMap> queue_map;          // sequence, Lifelines::Queues: the scene's queues
  ArrowLengths arrow_lengths;                          // of that order, where it is shortest arrows
  std::vector<std::string> collapsed;    // process groups folded away (sequence: into one lifeline)
  float scroll_y = 0;
  float names_px = TimelineGeometry::kNamesPx;  // timeline: the lane names' column
  // Timeline: intervals and instants of these categories are not drawn;
  // hidden_names ([source][string id]) is what they hide
  // (analysis::hidden_names of each source's analysis::Categories).
  std::vector<std::string> hidden_categories;
  std::shared_ptr<const std::vector<std::vector<uint8_t>>> hidden_names;
  // Timeline, sequence: arrows coloured by protocol rules (TimelineRequest::rule_verdicts).
  std::string rules_file;
  std::shared_ptr<const std::vector<analysis::RuleReport>> rule_verdicts;
  // Timeline, sequence: only these messages' arrows (TimelineRequest::message_filter).
  std::shared_ptr<const analysis::MessageFilter> message_filter;
};

LayoutOptions layout_options(const FigureParams& f);
TimelineRequest timeline_request(const Scene& scene, const FigureParams& f, const TimelineGeometry& g);
SequenceRequest sequence_request(const Scene& scene, const FigureParams& f, const SequenceGeometry& g);
// The scope's first strip's start: f.t0, unless f.follow lies outside its
// `strips` strips; then whole strips on, with f.follow's in the middle.
int64_t scope_start(const FigureParams& f, double period_ns, uint32_t strips);
ScopeRequest scope_request(const Scene& scene, const FigureParams& f, const ScopeGeometry& g);
// The periods of the lanes a scope folds (f.lanes, else the first with
// intervals or jobs; those of the first one's trace), from f.t0 on
// (analysis/period.hpp): the sharpest first.
std::vector<analysis::PeriodCandidate> find_scope_periods(const Scene& scene, const FigureParams& f);
// A scope's period until one is chosen: the best of find_scope_periods(),
// (t1 - t0) / 100 where the lanes show none.
double default_period_ns(const Scene& scene, const FigureParams& f);
// The window to show a message [send, recv] in (a search hit, a bookmark):
// `span` wide, centred on it, narrowed (halved) until the window holds at
// most max_arrows messages, so that its arrow is drawn; never narrower than
// the message and a fifth. Returns [t0, t1].
std::pair<int64_t, int64_t> message_window(const Scene& scene, int64_t send, int64_t recv, int64_t span,
                                           uint32_t max_arrows = TimelineRequest{}.max_arrows);
// Going from the view [t0, t1] to the next bookmark after the cursor (the
// bookmark gone to last; with none, the view's middle) (direction > 0) or
// the one before: false if there is none; else `to`, and the window [w0,
// w1] that shows it: centred on it at the view's zoom, or, for a bookmark
// on a message, message_window()'s (centred on the message, not on it).
bool bookmark_window(const Scene& scene, const Marks& marks, int64_t t0, int64_t t1, int direction, int64_t& to,
                     int64_t& w0, int64_t& w1);
// A picture of all lanes over the whole scene, for the overview strip.
TimelineRequest overview_request(const Scene& scene, float width);

}  // namespace tinescope::render
