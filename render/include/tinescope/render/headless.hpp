// Rendering with no window and no X server: an OpenGL 4.5 core context from
// EGL (Mesa's surfaceless platform, or the EGL device platform on NVIDIA)
// drawing into an offscreen framebuffer, and the figures drawn there exactly
// as the viewer draws them (GL pictures, then the ImGui text overlay).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tinescope/render/figure_params.hpp"
#include "tinescope/render/gl_renderer.hpp"

struct ImDrawList;

namespace tinescope::render {

class HeadlessContext {
 public:
  // Null with the reason when no EGL display or GL 4.5 context can be had.
  static std::unique_ptr<HeadlessContext> create(int width, int height, std::string& error);
  ~HeadlessContext();
  int width() const { return width_; }
  int height() const { return height_; }
  std::string renderer() const;  // GL_RENDERER
  void bind() const;             // draw into the offscreen framebuffer
  // The framebuffer, top row first, RGBA8.
  std::vector<uint8_t> read_rgba() const;

 private:
  HeadlessContext() = default;
  void* display_ = nullptr;
  void* context_ = nullptr;
  unsigned fbo_ = 0, colour_ = 0;
  int width_ = 0, height_ = 0;
};

// Draws figures into a headless context: owns the GL renderer and an ImGui
// context for the text.
class HeadlessRenderer {
 public:
  static std::unique_ptr<HeadlessRenderer> create(int width, int height, std::string& error);
  ~HeadlessRenderer();
  // Builds the figure's picture from the scene (synchronously) and draws it
  // over the whole framebuffer; returns the build and draw times.
  struct Timing {
    double build_ms = 0, draw_ms = 0;
    uint64_t primitives = 0;
    uint64_t arrows = 0, bundles = 0;  // messages drawn (timeline, sequence)
    uint64_t lifelines = 0;            // sequence
    std::string note;                  // what the figure says it left out (sequence)
  };
  Timing draw(const Scene& scene, const FigureParams& f, const Marks& marks);
  // Several figures in one frame, each in its rectangle (the viewer's
  // layout); `more` adds to the frame's draw list (other figures' geometry)
  // before it is drawn.
  Timing draw_figures(const Scene& scene, const std::vector<std::pair<const FigureParams*, Rect>>& figures,
                      const Marks& marks, const std::function<void(ImDrawList*)>& more = {});
  HeadlessContext& context() { return *context_; }
  // Timelines decode a lane's window while it holds at most this many events
  // a column (TimelineRequest::decode_per_column): by default what the viewer
  // draws once the view is at rest, so a picture is the one a person looks
  // at; a benchmark of zooming sets the interactive budget.
  uint32_t decode_per_column = kAtRestDecodePerColumn;

 private:
  HeadlessRenderer() = default;
  std::unique_ptr<HeadlessContext> context_;
  GlRenderer gl_;
  std::vector<std::unique_ptr<TextureSlot>> slots_;  // a figure's textures each
  void* imgui_ = nullptr;
};

bool write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgba, std::string& error);
bool read_png(const std::string& path, int& width, int& height, std::vector<uint8_t>& rgba, std::string& error);

}  // namespace tinescope::render
