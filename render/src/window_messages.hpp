// The messages a figure draws over a window (render-private), shared by the
// timeline and the sequence diagram: which of a trace's messages are looked
// at, each one's colour, where a message never received was headed, those
// between traces, and the bundles that stand in for them past the arrow
// budget. The figures place them; this says which and how they look.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tinescope/analysis/message_filter.hpp"
#include "tinescope/analysis/protocol_rules.hpp"
#include "tinescope/render/picture.hpp"

namespace tinescope::render {

// Arrows under protocol rules: red breaks one, green keeps them.
constexpr uint32_t kViolatedColour = 0xff2828e6, kSatisfiedColour = 0xff3cb43c;
// Messages a filter does not pass, under rest=grey: there for context, quiet.
constexpr uint32_t kContextColour = 0xff505050;

// Whether a lane (by feedlet) of the source being drawn is shown.
using ShownLane = std::function<bool(uint32_t feedlet)>;

// The message filter of a figure, for one trace.
struct MessageLook {
  MessageLook(const index::TraceIndex& ix, const analysis::MessageFilter* filter);
  std::optional<analysis::MessageMatcher> only;  // none: every message
  bool grey_rest = false;                        // what `only` does not pass is greyed, not left out
  // Left out of the figure (not even greyed).
  bool leaves_out(const index::Flow& f) { return only && !grey_rest && !only->matches(f); }
};

// The messages of source s with a half in cw's window or in flight across
// it, of the lanes shown, that the filter does not leave out: at most
// max_arrows of them. Past that, none, `over_budget` and at least how many
// there are (those of lanes not shown do not count against the budget: two
// lanes chosen of a busy trace still get theirs).
struct WindowMessages {
  std::vector<index::Flow> flows;
  bool over_budget = false;
  uint64_t at_least = 0;
};
WindowMessages window_messages(const Scene& scene, uint32_t s, const ClockWindow& cw, const ShownLane& shown,
                               MessageLook& look, uint32_t max_arrows);

// Past the arrow budget: every message of the window sent and received
// whose ends the figure places (`ends`: the figure's own numbers of the
// rows or lifelines they are drawn on, -1 where one is not shown), up to
// max_bundled (past that none, and over_cap), as one bundle per pair of
// ends and stretch of the window, at the mean of its messages' sends and
// receives (`at` places a tick along the figure's time axis, of length
// `extent`). As many stretches as keep the bundles to half the arrow
// budget, at most kBundleBins; the busiest max_arrows / 4 bundles are kept.
using MessageEnds = std::function<std::pair<int, int>(const index::Flow&)>;
struct LaneBundle {
  int from = 0, to = 0;     // as `ends` numbers them
  double at0 = 0, at1 = 0;  // mean send and receive along the axis
  uint32_t count = 0;
};
struct Bundled {
  std::vector<LaneBundle> bundles;
  uint64_t messages = 0;   // bundled, those of the bundles left out too
  uint64_t left_out = 0;   // bundles past the busiest kept
  bool over_cap = false;
};
Bundled bundle_messages(const index::TraceIndex& ix, const ClockWindow& cw, const MessageEnds& ends, MessageLook& look,
                        uint32_t max_bundled, uint32_t max_arrows, const std::function<double(uint64_t)>& at,
                        double extent);
// The same for the messages between the scene's traces (Scene::across) in
// flight over [t0, t1] (ns), each end placed by `ends` (-1: not shown) and
// `at` (a time on the scene's clock along the axis), but for those `drawn`
// as arrows already. Each trace's own bundles leave them out: each of
// their halves is an orphan there.
using AcrossEnds = std::function<std::pair<int, int>(const analysis::CrossMessage&)>;
Bundled bundle_across(const Scene& scene, int64_t t0, int64_t t1, const AcrossEnds& ends, uint32_t max_arrows,
                      const std::function<double(int64_t)>& at, double extent,
                      const std::unordered_set<const analysis::CrossMessage*>* drawn = nullptr);
// (Both: points placed, bundled.)
struct BundlePoint {
  int from = 0, to = 0;
  double at0 = 0, at1 = 0;
};
Bundled bundle_points(const std::vector<BundlePoint>& points, uint32_t max_arrows, double extent);

// Arrow colours of one trace's messages: its channel's (name_colour of its
// name, or of "channel N": stable across pictures), red or green under
// protocol rules, grey where a rest=grey filter does not pass it. Knows
// each channel's queue: the lane that receives most of its messages among
// `flows` (where a message never received was headed).
class ArrowStyle {
 public:
  ArrowStyle(const Scene& scene, uint32_t s, const std::vector<index::Flow>& flows,
             const std::vector<analysis::RuleReport>* rule_verdicts, MessageLook& look);
  uint32_t colour(const index::Flow& f);
  // The feedlet that receives most of the channel's messages (ties: the
  // lowest), or none.
  std::optional<uint32_t> queue(uint64_t channel) const;

 private:
  const analysis::RuleReport* verdicts_ = nullptr;
  MessageLook& look_;
  std::unordered_map<uint64_t, uint32_t> channel_colour_;
  std::unordered_map<uint64_t, uint32_t> queue_;
};

// The message between traces one of whose halves is f (an orphan of trace
// s), with its ends on the scene's clock; else null. `again` where it was
// drawn already over `drawn`: from whichever side's look finds it first
// (the other's may be past the arrow budget, or its half out of the window).
const analysis::CrossMessage* message_across(const Scene& scene, uint32_t s, const index::Flow& f,
                                             std::unordered_set<const analysis::CrossMessage*>& drawn,
                                             int64_t& send_ns, int64_t& recv_ns, bool& again);

}  // namespace tinescope::render
