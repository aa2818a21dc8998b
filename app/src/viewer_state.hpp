// What the viewer's parts share (app/src, private): a figure on screen and a
// picture request to the worker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tinescope/app/viewer.hpp"

namespace tinescope::app {

struct Viewer::Figure {
  render::FigureParams params;
  render::Rect rect;
  std::shared_ptr<render::TimelinePicture> timeline;
  std::shared_ptr<render::ScopePicture> scope;
  std::shared_ptr<render::SequencePicture> sequence;
  render::TextureSlot slot;
  uint64_t generation = 0;      // of the latest request
  uint64_t shown = 0;           // of the picture shown
  std::string requested;        // what the latest request was for
  render::TimeAxis axis;        // timeline: the mapping on screen this frame
  float layout_height = 0;
  std::shared_ptr<render::Scene> scene;  // the picture's (a live scene moves on)
  int64_t shown_until = INT64_MIN;       // newest data time in the picture

  render::TimelineGeometry tg() const { return render::TimelineGeometry::of(rect, params.names_px); }
  render::ScopeGeometry sg() const { return render::ScopeGeometry::of(rect, params.strip_px); }
  render::SequenceGeometry qg() const { return render::SequenceGeometry::of(rect); }
  render::Rect plot() const {
    switch (params.type) {
      case render::FigureParams::Timeline: return tg().plot;
      case render::FigureParams::Scope: return sg().plot;
      case render::FigureParams::Sequence: return qg().plot;
    }
    return rect;
  }
};

struct Viewer::Job {
  size_t figure = 0;
  uint64_t generation = 0;
  std::shared_ptr<render::Scene> scene;  // built from (set by the worker)
  uint64_t scene_serial = 0;
  render::FigureParams params;
  render::Rect rect;
  std::shared_ptr<render::TimelinePicture> timeline;
  std::shared_ptr<render::ScopePicture> scope;
  std::shared_ptr<render::SequencePicture> sequence;
  bool at_rest = false;  // drawn again with render::kAtRestDecodePerColumn, the view unchanged
};

}  // namespace tinescope::app
