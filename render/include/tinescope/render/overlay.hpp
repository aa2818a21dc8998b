// The text and labels of the figures (lane names, the time ruler, interval
// names, cursor and selection read-outs), written into a Dear ImGui draw list
// so the viewer and the headless renderer draw them the same way. Times are
// shown relative to the start of the scene.
#pragma once

#include <string>

#include "tinescope/render/figure.hpp"
#include "tinescope/render/picture.hpp"

struct ImDrawList;

namespace tinescope::render {

void timeline_overlay(ImDrawList* dl, const Scene& scene, const TimelinePicture& p, const TimelineGeometry& g,
                      const TimeAxis& view, float scroll_y, const Marks& marks,
                      const std::vector<std::string>& collapsed = {});
// What a figure says where messages are not drawn as arrows (empty where
// every one is): bundled, past the bundles' cap, or bundles still to come.
std::string message_note(uint64_t arrows_left_out, uint64_t bundled, size_t bundles, uint64_t bundles_left_out,
                         bool bundles_wait, bool over_cap, uint32_t max_arrows, uint32_t max_bundled);
// Scene::warnings, at the foot of a figure's plot.
void scene_warnings(ImDrawList* dl, const Scene& scene, Rect plot);
void scope_overlay(ImDrawList* dl, const Scene& scene, const ScopePicture& p, const ScopeGeometry& g,
                   const Marks& marks);

}  // namespace tinescope::render
