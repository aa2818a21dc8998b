// The sequence diagram (Threadmill's main view, MPROV's space-time
// diagram): a vertical lifeline per lane, time downward, each message an
// arrow from its sender's lifeline at its send to its receiver's at its
// receive. Or a lifeline per queue (a channel: Threadmill's lanes are
// queues), a message leaving its sender's queue and arriving on its own;
// a process's lifelines fold into one (Threadmill's swimlanes). Spaced by real time, or by event order: each send and each
// receive one step, so that a burst of messages a microsecond apart reads
// as clearly as a slow exchange (Threadmill's equal spacing, MPROV's event
// numbers). It shares the window, cursor, selection and bookmarks with the
// other figures. The picture is built on the CPU from the flow table (at
// most max_arrows arrows, else bundles) and drawn with a Dear ImGui draw
// list, so the viewer and a headless render draw it alike.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tinescope/render/figure.hpp"
#include "tinescope/render/picture.hpp"

struct ImDrawList;

namespace tinescope::render {

enum class Spacing : uint8_t { Time, Order };
bool parse_spacing(const std::string& text, Spacing& out);  // "time", "order"
const char* spacing_name(Spacing s);

enum class Lifelines : uint8_t { Threads, Queues };
bool parse_lifelines(const std::string& text, Lifelines& out);  // "threads", "queues"
const char* lifelines_name(Lifelines l);

// The queues of a scene: each channel a message was received on, owned by
// the lane that received most of them (its lifeline goes where that lane
// would, under its process), and each lane's home queue (the channel it
// received most on), from which its sends leave. A lane that received
// nothing sends from a lifeline of its own. Ties: the lower number.
struct QueueMap {
  struct Queue {
    uint32_t source = 0;
    uint64_t channel = 0;
    uint32_t owner = 0;  // scene lane
  };
  std::vector<Queue> queues;  // by (owner, channel)
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> home;  // (source, feedlet) -> channel
};
// Reads every source's flow table once.
QueueMap queue_map(const Scene& scene);

// Lifeline names on top (two rows, alternating where they are crowded),
// times on the left, the lifelines and arrows below.
struct SequenceGeometry {
  static constexpr float kHeaderPx = 40, kTimesPx = 112;
  Rect figure, header, times, plot;
  static SequenceGeometry of(Rect f) {
    SequenceGeometry g;
    g.figure = f;
    g.header = {f.x + kTimesPx, f.y, f.w - kTimesPx, kHeaderPx};
    g.times = {f.x, f.y + kHeaderPx, kTimesPx, f.h - kHeaderPx};
    g.plot = {f.x + kTimesPx, f.y + kHeaderPx, f.w - kTimesPx, f.h - kHeaderPx};
    return g;
  }
};

struct SequenceRequest {
  int64_t t0 = 0, t1 = 1;        // the window, nanoseconds
  float width = 1, height = 1;   // the plot, pixels
  std::vector<uint32_t> lanes;   // the lifelines', left to right (scene lane numbers)
  Lifelines lifelines = Lifelines::Threads;
  std::shared_ptr<const QueueMap> queues;  // Lifelines::Queues: the scene's (queue_map)
  std::vector<std::string> collapsed;      // processes drawn as one lifeline
  Spacing spacing = Spacing::Time;
  uint32_t max_arrows = 800;     // more messages than this in the window: bundles (real time)
  uint32_t max_bundled = 500000; // more than this: not even bundles (counted, and said)
  float min_step_px = 4;         // event order needs this much a step; past it, real time (and said)
  // Past max_arrows, bundles are made (reading every message of the window);
  // false: not, and the picture says they come once the view rests.
  bool bundles = true;
  // Once set, bundling stops and the picture comes back `stopped` (a newer request makes it moot).
  const std::atomic<bool>* stop = nullptr;
  std::shared_ptr<const std::vector<analysis::RuleReport>> rule_verdicts;  // as TimelineRequest's
  std::shared_ptr<const analysis::MessageFilter> message_filter;
};

struct SequencePicture {
  uint64_t serial = 0;
  SequenceRequest request;
  Spacing spacing = Spacing::Time;  // as drawn: event order past its steps is drawn in real time
  struct Lifeline {
    float x = 0;         // pixels from the plot's left
    std::string label;   // the lane's (or a queue's channel, or a process folded)
    std::string group;   // its process
    int lane = -1;       // a lane's: its scene lane number
    bool queue = false;  // a queue's: owned by `lane`
    uint32_t lanes = 1;  // a process folded into it: how many of its lanes are shown
  };
  std::vector<Lifeline> lifelines;
  // Arrows as the timeline's (x: lifelines, y: pixels from the plot's top);
  // a half outside the window sits on the plot's edge.
  std::vector<Arrow> arrows;
  std::vector<Bundle> bundles;      // past max_arrows (x: lifelines, y: mean send and receive)
  uint64_t bundled = 0, bundles_left_out = 0, arrows_left_out = 0;
  bool over_cap = false;            // more than max_bundled: neither
  bool bundles_wait = false;        // past max_arrows, request.bundles false: bundles to come
  bool stopped = false;             // request.stop was set: incomplete, not to be shown
  // Event order: the time of each step, in order; step i is at y = (i + 1) * step_px.
  std::vector<int64_t> steps;
  float step_px = 0;
  uint64_t order_events = 0;        // event order asked for, but this many steps did not fit
  double build_ms = 0;

  // Where time t is drawn (pixels from the plot's top): in event order, on
  // its step, or between the steps around it.
  float y(int64_t t) const;
  // The time drawn at y (event order: the nearest step's).
  int64_t time(float y) const;
};

SequencePicture build_sequence(const Scene& scene, const SequenceRequest& request);

// Lifelines, arrows, times, names and the shared marks, into a draw list.
void sequence_overlay(ImDrawList* dl, const Scene& scene, const SequencePicture& p, const SequenceGeometry& g,
                      const Marks& marks);

// The message arrow drawn within `px` pixels of (x, y) (plot coordinates), or null.
const Arrow* sequence_arrow_at(const SequencePicture& p, float x, float y, float px = 3);

}  // namespace tinescope::render
