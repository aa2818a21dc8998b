// A figure on screen: where its parts go, and what every figure shares (the
// cursor, the selection, the bookmarks). Used by the GL renderer, the text
// overlay, the viewer's input handling and the headless renderer alike, so a
// figure is laid out the same wherever it is drawn.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tinescope::render {

struct Rect {
  float x = 0, y = 0, w = 0, h = 0;
  bool contains(float px, float py) const { return px >= x && px < x + w && py >= y && py < y + h; }
};

// Where a function the user points at runs in one lane (activity_spans).
struct ActiveSpan {
  uint32_t lane = 0;
  int64_t t0 = 0, t1 = 0;  // ns
};

struct Marks {
  static constexpr int64_t kNone = INT64_MIN;
  int64_t cursor = kNone;
  int64_t sel0 = kNone, sel1 = kNone;  // a range selection (sel0 <= sel1)
  std::vector<int64_t> bookmarks;
  // Bookmarks on messages (a search's hits, a stream of messages): send ->
  // receive, so that going to one picks a zoom at which its arrow is drawn.
  std::map<int64_t, int64_t> bookmark_messages;
  void clear_bookmarks() { bookmarks.clear(), bookmark_messages.clear(); }
  // A selected message's chain (analysis::message_chain): (source, message
  // id) of its hops, drawn bright over the other arrows, which dim.
  std::set<std::pair<uint32_t, uint64_t>> chain;
  bool has_selection() const { return sel0 != kNone && sel1 > sel0; }
  // Activity markers: the function the user points at (an interval name,
  // in every trace; empty: none), and where it runs in the window shown
  // (render/activity.hpp), marked over every lane that shows it.
  std::string active;
  std::vector<ActiveSpan> active_spans;
};

// Timeline: lane names on the left (names_px wide: the viewer lets it be
// widened, so that long names can be read), the time ruler on top, lanes below.
struct TimelineGeometry {
  static constexpr float kNamesPx = 150, kRulerPx = 22, kMinNamesPx = 60, kMinPlotPx = 100;
  Rect figure, names, ruler, plot;
  static TimelineGeometry of(Rect f, float names_px = kNamesPx) {
    // Between its narrowest and what leaves the plot its narrowest (a figure
    // narrower than both: the names' narrowest).
    const float widest = f.w - kMinPlotPx > kMinNamesPx ? f.w - kMinPlotPx : kMinNamesPx;
    const float w = names_px < kMinNamesPx ? kMinNamesPx : names_px > widest ? widest : names_px;
    TimelineGeometry g;
    g.figure = f;
    g.names = {f.x, f.y + kRulerPx, w, f.h - kRulerPx};
    g.ruler = {f.x + w, f.y, f.w - w, kRulerPx};
    g.plot = {f.x + w, f.y + kRulerPx, f.w - w, f.h - kRulerPx};
    return g;
  }
};

// Oscilloscope: a line of text on top, then strips of strip_px each.
struct ScopeGeometry {
  static constexpr float kInfoPx = 22, kLabelsPx = 150;
  Rect figure, info, labels, plot;
  uint32_t strip_px = 8;
  uint32_t strips() const { return strip_px ? uint32_t(plot.h) / strip_px : 0; }
  static ScopeGeometry of(Rect f, uint32_t strip_px) {
    ScopeGeometry g;
    g.figure = f;
    g.strip_px = strip_px < 1 ? 1 : strip_px;
    g.info = {f.x, f.y, f.w, kInfoPx};
    g.labels = {f.x, f.y + kInfoPx, kLabelsPx, f.h - kInfoPx};
    g.plot = {f.x + kLabelsPx, f.y + kInfoPx, f.w - kLabelsPx, f.h - kInfoPx};
    return g;
  }
};

// Colours the figures share (RGBA8).
constexpr uint32_t kBackground = 0xff1e1a18u, kCursorColour = 0xff40e0ffu, kSelectionColour = 0x40ffb060u,
                   kBookmarkColour = 0xff30a0ffu, kGapColour = 0xc08080a0u, kArrowColour = 0xe0f0f0f0u,
                   kOrphanColour = 0xff909090u, kBundleColour = 0x58e0e0e0u, kSyncColour = 0xa060c0e0u,
                   kCutColour = 0xc0000000u,  // dark stripes over an item whose end was not recorded
                   kArrivalColour = 0xffe0e0e0u, kDeadlineColour = 0xff30e0ffu, kMissedColour = 0xff2828f0u,
                   kMigrationColour = 0xfff0f0f0u, kPreemptedColour = 0xff1890ffu, kBlockedColour = 0xffffa040u;

}  // namespace tinescope::render
