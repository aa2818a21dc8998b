// Draws figure pictures with OpenGL 4.5 core into whatever framebuffer is
// bound: a window's, or an offscreen one for headless rendering. It knows
// nothing of windows. Pictures become textures (one texel per row and pixel
// column) drawn as one instanced quad per row, plus a few lines and
// triangles (arrows, cursor, selection, hatched gaps), so the primitives per
// frame follow the rows on screen, never the events (llvmpipe pays about a
// microsecond per primitive).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinescope/render/figure.hpp"
#include "tinescope/render/picture.hpp"

namespace tinescope::render {

// GL textures of one figure's latest picture; uploaded only when it changes.
struct TextureSlot {
  unsigned colour = 0, envelope = 0;
  uint64_t uploaded = 0;  // serial of the picture last uploaded
  uint32_t width = 0, height = 0;
};

class GlRenderer {
 public:
  GlRenderer() = default;
  GlRenderer(const GlRenderer&) = delete;
  GlRenderer& operator=(const GlRenderer&) = delete;
  ~GlRenderer();

  // Needs a current GL 4.5 core context. False with the compiler's log.
  bool init(std::string& error);
  // Frees the GL objects; call while the context is still current (the
  // destructor does it too).
  void shutdown();
  void release(TextureSlot& slot);

  // Viewport over the whole framebuffer, cleared to the background.
  void begin_frame(int width, int height);
  // The picture, re-projected onto `view` when it was made for another window
  // (the UI shows the last picture until the one for the new window is done).
  void draw_timeline(const TimelinePicture& p, TextureSlot& slot, const TimelineGeometry& g, const TimeAxis& view,
                     float scroll_y, const Marks& marks);
  void draw_scope(const ScopePicture& p, TextureSlot& slot, const ScopeGeometry& g, const Marks& marks);
  // The overview: activity of all lanes over the whole trace and the visible window.
  void draw_overview(const TimelinePicture& p, TextureSlot& slot, Rect r, int64_t view_t0, int64_t view_t1);

  uint64_t primitives() const { return prims_; }  // since begin_frame
  void add_primitives(uint64_t n) { prims_ += n; }

 private:
  struct Vertex {
    float x, y;
    uint32_t colour;
    float pattern;
  };
  void upload(uint64_t serial, TextureSlot& slot, uint32_t w, uint32_t h, const uint32_t* rgba, const float* env);
  void bands(TextureSlot& slot, const std::vector<float>& instances, Rect clip, float offset, float scale);
  void rect(float x0, float y0, float x1, float y1, uint32_t colour, float pattern = 0);
  void line(float x0, float y0, float x1, float y1, uint32_t colour);
  void flush(Rect clip);
  void clip(Rect r);

  unsigned bands_program_ = 0, shapes_program_ = 0;
  struct {
    int bands_framebuffer = -1, plot_x = -1, offset = -1, scale = -1, shapes_framebuffer = -1;
  } uniforms_;
  unsigned bands_vao_ = 0, bands_vbo_ = 0, shapes_vao_ = 0, shapes_vbo_ = 0;
  int fb_w_ = 0, fb_h_ = 0;
  uint64_t prims_ = 0;
  std::vector<Vertex> triangles_, lines_;
  bool ready_ = false;
};

}  // namespace tinescope::render
