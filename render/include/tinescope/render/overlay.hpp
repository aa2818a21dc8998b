// The text and labels of the figures (lane names, the time ruler, interval
// names, cursor and selection read-outs), written into a Dear ImGui draw list
// so the viewer and the headless renderer draw them the same way. Times are
// shown relative to the start of the scene.
#pragma once

#include "tinescope/render/figure.hpp"
#include "tinescope/render/picture.hpp"

struct ImDrawList;

namespace tinescope::render {

void timeline_overlay(ImDrawList* dl, const Scene& scene, const TimelinePicture& p, const TimelineGeometry& g,
                      const TimeAxis& view, float scroll_y, const Marks& marks,
                      const std::vector<std::string>& collapsed = {});
void scope_overlay(ImDrawList* dl, const Scene& scene, const ScopePicture& p, const ScopeGeometry& g,
                   const Marks& marks);

}  // namespace tinescope::render
