// A colour of the renderer's palette (RGBA8, red in the low byte) as
// ImGui's, with an alpha: the analysis panel's figures use the timeline's colours.
#pragma once

#include <imgui.h>

#include <algorithm>
#include <cstdint>

namespace tinescope::app {

inline ImU32 colour(uint32_t rgba, float alpha = 1) {
  return IM_COL32(rgba & 255, rgba >> 8 & 255, rgba >> 16 & 255, int(std::clamp(alpha, 0.f, 1.f) * 255));
}

}  // namespace tinescope::app
