#include "tinescope/render/gl_renderer.hpp"

#include <epoxy/gl.h>

#include <algorithm>
#include <cmath>

#include "shaders.hpp"

namespace tinescope::render {

namespace {

unsigned compile(const char* vs, const char* fs, std::string& error) {
  auto stage = [&](GLenum type, const char* src) -> GLuint {
    GLuint s = glCreateShader(type);
    glShaderSource(s, 1, &src, nullptr);
    glCompileShader(s);
    GLint ok = 0;
    glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
    if (!ok) {
      char log[2048];
      glGetShaderInfoLog(s, sizeof log, nullptr, log);
      error = std::string("shader does not compile: ") + log;
      glDeleteShader(s);
      return 0;
    }
    return s;
  };
  GLuint v = stage(GL_VERTEX_SHADER, vs), f = v ? stage(GL_FRAGMENT_SHADER, fs) : 0;
  if (!v || !f) return 0;
  GLuint p = glCreateProgram();
  glAttachShader(p, v);
  glAttachShader(p, f);
  glLinkProgram(p);
  glDeleteShader(v);
  glDeleteShader(f);
  GLint ok = 0;
  glGetProgramiv(p, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[2048];
    glGetProgramInfoLog(p, sizeof log, nullptr, log);
    error = std::string("shaders do not link: ") + log;
    glDeleteProgram(p);
    return 0;
  }
  return p;
}

}  // namespace

GlRenderer::~GlRenderer() { shutdown(); }

void GlRenderer::shutdown() {
  if (!ready_) return;
  ready_ = false;
  glDeleteProgram(bands_program_);
  glDeleteProgram(shapes_program_);
  glDeleteVertexArrays(1, &bands_vao_);
  glDeleteVertexArrays(1, &shapes_vao_);
  glDeleteBuffers(1, &bands_vbo_);
  glDeleteBuffers(1, &shapes_vbo_);
}

bool GlRenderer::init(std::string& error) {
  if (epoxy_gl_version() < 45) {
    error = "OpenGL 4.5 is needed, the context has " + std::to_string(epoxy_gl_version() / 10) + "." +
            std::to_string(epoxy_gl_version() % 10);
    return false;
  }
  bands_program_ = compile(shaders::kBandsVert, shaders::kBandsFrag, error);
  if (!bands_program_) return false;
  shapes_program_ = compile(shaders::kShapesVert, shaders::kShapesFrag, error);
  if (!shapes_program_) return false;
  // Uniforms that never change are set once; the others' locations are kept.
  glUseProgram(bands_program_);
  glUniform1i(glGetUniformLocation(bands_program_, "u_colour"), 0);
  glUniform1i(glGetUniformLocation(bands_program_, "u_envelope"), 1);
  glUniform3f(glGetUniformLocation(bands_program_, "u_background"), float(kBackground & 255) / 255.f,
              float(kBackground >> 8 & 255) / 255.f, float(kBackground >> 16 & 255) / 255.f);
  uniforms_ = {glGetUniformLocation(bands_program_, "u_framebuffer"), glGetUniformLocation(bands_program_, "u_plot_x"),
               glGetUniformLocation(bands_program_, "u_offset"), glGetUniformLocation(bands_program_, "u_scale"),
               glGetUniformLocation(shapes_program_, "u_framebuffer")};
  glUseProgram(0);

  glGenVertexArrays(1, &bands_vao_);
  glGenBuffers(1, &bands_vbo_);
  glBindVertexArray(bands_vao_);
  glBindBuffer(GL_ARRAY_BUFFER, bands_vbo_);
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 4, GL_FLOAT, GL_FALSE, 8 * sizeof(float), nullptr);
  glVertexAttribDivisor(0, 1);
  glEnableVertexAttribArray(1);
  glVertexAttribPointer(1, 4, GL_FLOAT, GL_FALSE, 8 * sizeof(float), (void*)(4 * sizeof(float)));
  glVertexAttribDivisor(1, 1);

  glGenVertexArrays(1, &shapes_vao_);
  glGenBuffers(1, &shapes_vbo_);
  glBindVertexArray(shapes_vao_);
  glBindBuffer(GL_ARRAY_BUFFER, shapes_vbo_);
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, sizeof(Vertex), nullptr);
  glEnableVertexAttribArray(1);
  glVertexAttribPointer(1, 4, GL_UNSIGNED_BYTE, GL_TRUE, sizeof(Vertex), (void*)offsetof(Vertex, colour));
  glEnableVertexAttribArray(2);
  glVertexAttribPointer(2, 1, GL_FLOAT, GL_FALSE, sizeof(Vertex), (void*)offsetof(Vertex, pattern));
  glBindVertexArray(0);
  ready_ = true;
  return true;
}

void GlRenderer::release(TextureSlot& slot) {
  if (slot.colour) glDeleteTextures(1, &slot.colour);
  if (slot.envelope) glDeleteTextures(1, &slot.envelope);
  slot = {};
}

void GlRenderer::begin_frame(int width, int height) {
  fb_w_ = width, fb_h_ = height;
  prims_ = 0;
  glViewport(0, 0, width, height);
  glDisable(GL_SCISSOR_TEST);
  glDisable(GL_DEPTH_TEST);
  glDisable(GL_CULL_FACE);
  const float r = float(kBackground & 255) / 255.f, g = float(kBackground >> 8 & 255) / 255.f,
              b = float(kBackground >> 16 & 255) / 255.f;
  glClearColor(r, g, b, 1);
  glClear(GL_COLOR_BUFFER_BIT);
}

void GlRenderer::upload(uint64_t key, TextureSlot& slot, uint32_t w, uint32_t h, const uint32_t* rgba,
                        const float* env) {
  if (slot.uploaded == key && slot.width == w && slot.height == h) return;
  auto make = [](unsigned& tex) {
    if (!tex) glGenTextures(1, &tex);
    glBindTexture(GL_TEXTURE_2D, tex);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  };
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  make(slot.colour);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, GLsizei(w), GLsizei(std::max(h, 1u)), 0, GL_RGBA, GL_UNSIGNED_BYTE,
               h ? rgba : nullptr);
  make(slot.envelope);
  if (env && h)
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RG32F, GLsizei(w), GLsizei(h), 0, GL_RG, GL_FLOAT, env);
  else
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RG32F, 1, 1, 0, GL_RG, GL_FLOAT, nullptr);
  slot.uploaded = key, slot.width = w, slot.height = h;
}

void GlRenderer::clip(Rect r) {
  glEnable(GL_SCISSOR_TEST);
  const int x0 = int(std::floor(r.x)), y0 = int(std::floor(r.y));
  glScissor(x0, fb_h_ - (y0 + int(std::ceil(r.h))), int(std::ceil(r.w)), int(std::ceil(r.h)));
}

void GlRenderer::bands(TextureSlot& slot, const std::vector<float>& instances, Rect c, float offset, float scale) {
  if (instances.empty()) return;
  clip(c);
  glUseProgram(bands_program_);
  glUniform2f(uniforms_.bands_framebuffer, float(fb_w_), float(fb_h_));
  glUniform1f(uniforms_.plot_x, c.x);
  glUniform1f(uniforms_.offset, offset);
  glUniform1f(uniforms_.scale, scale);
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, slot.colour);
  glActiveTexture(GL_TEXTURE1);
  glBindTexture(GL_TEXTURE_2D, slot.envelope);
  glActiveTexture(GL_TEXTURE0);
  glBindVertexArray(bands_vao_);
  glBindBuffer(GL_ARRAY_BUFFER, bands_vbo_);
  glBufferData(GL_ARRAY_BUFFER, GLsizeiptr(instances.size() * sizeof(float)), instances.data(), GL_STREAM_DRAW);
  const GLsizei n = GLsizei(instances.size() / 8);
  glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 4, n);
  prims_ += uint64_t(n) * 2;
  glBindVertexArray(0);
}

void GlRenderer::rect(float x0, float y0, float x1, float y1, uint32_t c, float pattern) {
  const Vertex v[6] = {{x0, y0, c, pattern}, {x1, y0, c, pattern}, {x0, y1, c, pattern},
                       {x1, y0, c, pattern}, {x1, y1, c, pattern}, {x0, y1, c, pattern}};
  triangles_.insert(triangles_.end(), v, v + 6);
}

void GlRenderer::line(float x0, float y0, float x1, float y1, uint32_t c) {
  lines_.push_back({x0, y0, c, 0});
  lines_.push_back({x1, y1, c, 0});
}

void GlRenderer::flush(Rect c) {
  if (triangles_.empty() && lines_.empty()) return;
  clip(c);
  glEnable(GL_BLEND);
  glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
  glUseProgram(shapes_program_);
  glUniform2f(uniforms_.shapes_framebuffer, float(fb_w_), float(fb_h_));
  glBindVertexArray(shapes_vao_);
  glBindBuffer(GL_ARRAY_BUFFER, shapes_vbo_);
  for (auto* list : {&triangles_, &lines_}) {
    if (list->empty()) continue;
    glBufferData(GL_ARRAY_BUFFER, GLsizeiptr(list->size() * sizeof(Vertex)), list->data(), GL_STREAM_DRAW);
    const bool tri = list == &triangles_;
    glDrawArrays(tri ? GL_TRIANGLES : GL_LINES, 0, GLsizei(list->size()));
    prims_ += list->size() / (tri ? 3 : 2);
    list->clear();
  }
  glBindVertexArray(0);
  glDisable(GL_BLEND);
}

void GlRenderer::draw_timeline(const TimelinePicture& p, TextureSlot& slot, const TimelineGeometry& g,
                               const TimeAxis& view, float scroll_y, const Marks& marks) {
  upload(p.serial, slot, p.columns, p.rows, p.rgba.data(), p.envelope.data());
  const Rect plot = g.plot;
  std::vector<float> inst;
  inst.reserve(p.rows * 8);
  const std::vector<Row>& rows = p.request.layout.rows;
  for (uint32_t r = 0; r < p.rows; ++r) {
    const Row& row = rows[r];
    if (row.kind == Row::Group) continue;
    const float y = plot.y + row.y - scroll_y;
    if (y + row.h < plot.y || y > plot.y + plot.h) continue;
    const float h = row.h >= 6 ? row.h - 1 : row.h;  // a hairline between rows
    const float kind = row.kind == Row::Counter ? 1.f : 0.f;
    inst.insert(inst.end(), {plot.x, y, plot.w, h, float(r), kind, 0.f, 0.f});
  }
  float offset, scale;
  reprojection(p.axis, view, offset, scale);
  bands(slot, inst, plot, offset, scale);

  auto px = [&](float column) { return plot.x + offset + column * scale; };
  for (const GapRect& gap : p.gaps)
    rect(px(gap.x0), plot.y + gap.y0 - scroll_y, px(gap.x1), plot.y + gap.y1 - scroll_y, kGapColour, 1);
  for (const CutRect& c : p.cuts) {
    const Row& row = rows[c.row];
    rect(px(c.x0), plot.y + row.y - scroll_y, px(c.x1), plot.y + row.y + row.h - 1 - scroll_y, kCutColour, 2);
  }
  // Jobs' marks: an arrival is a light tick in the row's upper half, a
  // deadline a yellow one in its lower half, a missed deadline a red bar
  // from it to the completion along the row's foot, a preemption an orange
  // caret at the row's top (a block a blue one); a lock's misuse a red bar
  // across its row, a priority inversion one along its foot.
  for (const JobMarkRect& m : p.job_marks) {
    const Row& row = rows[m.row];
    const float top = plot.y + row.y - scroll_y, bottom = top + row.h - 1;
    if (bottom < plot.y || top > plot.y + plot.h) continue;
    switch (m.kind) {
      case JobMarkRect::Arrival: rect(px(m.x0), top, px(m.x0) + 1, top + row.h * 0.5f, kArrivalColour); break;
      case JobMarkRect::Deadline: rect(px(m.x0), top + row.h * 0.4f, px(m.x0) + 2, bottom, kDeadlineColour); break;
      case JobMarkRect::Missed:
      case JobMarkRect::Inversion: rect(px(m.x0), bottom - row.h * 0.35f, std::max(px(m.x1), px(m.x0) + 2), bottom, kMissedColour); break;
      case JobMarkRect::Misuse: rect(px(m.x0) - 1, top, px(m.x0) + 2, bottom, kMissedColour); break;
      case JobMarkRect::Preempted:
      case JobMarkRect::Blocked: {
        // A caret pointing down onto the segment's end, above the row's middle.
        const uint32_t c = m.kind == JobMarkRect::Preempted ? kPreemptedColour : kBlockedColour;
        const float x = std::floor(px(m.x0));
        for (int k = 0; k < 4; ++k) rect(x - float(3 - k), top + float(k), x + float(4 - k), top + float(k) + 1, c);
        break;
      }
    }
  }
  // Migrations: a dashed line, 4 px on and 3 off.
  for (const TimelinePicture::MigrationLine& m : p.migrations) {
    const float x0 = px(m.x0), y0 = plot.y + m.y0 - scroll_y, x1 = px(m.x1), y1 = plot.y + m.y1 - scroll_y;
    const float dx = x1 - x0, dy = y1 - y0, len = std::sqrt(dx * dx + dy * dy);
    if (len < 1) continue;
    for (float at = 0; at < len; at += 7) {
      const float a = at / len, b = std::min(len, at + 4) / len;
      line(x0 + dx * a, y0 + dy * a, x0 + dx * b, y0 + dy * b, kMigrationColour);
    }
  }
  // Bundles (past the arrow budget): 1 + log2(count) / 2 pixels wide (at
  // most 4), a line for each pixel, side by side.
  for (const Bundle& b : p.bundles) {
    const float x0 = px(b.x0), y0 = plot.y + b.y0 - scroll_y, x1 = px(b.x1), y1 = plot.y + b.y1 - scroll_y;
    const float dx = x1 - x0, dy = y1 - y0, len = std::max(1.f, std::sqrt(dx * dx + dy * dy));
    const float nx = -dy / len, ny = dx / len;
    const int width = std::min(4, 1 + int(std::log2(float(b.count))) / 2);
    for (int i = 0; i < width; ++i) {
      const float o = float(i) - float(width - 1) / 2;
      line(x0 + nx * o, y0 + ny * o, x1 + nx * o, y1 + ny * o, kBundleColour);
    }
  }
  // Arrows in their channel's colour (orphans grey: a stub from the send
  // toward its queue, or into the receive); with a chain selected, its hops
  // bright and doubled, the rest dimmed.
  const bool heads = p.arrows.size() <= 400;
  const bool chain = !marks.chain.empty();
  for (const Arrow& a : p.arrows) {
    const float x0 = px(a.x0), y0 = plot.y + a.y0 - scroll_y, x1 = px(a.x1), y1 = plot.y + a.y1 - scroll_y;
    const bool hop = chain && marks.chain.count({a.source, a.flow.id});
    uint32_t c = a.orphan == 1 || a.orphan == 2 ? kOrphanColour : a.colour ? a.colour : kArrowColour;
    if (chain && !hop) c = (c & 0x00ffffffu) | 0x38000000u;
    line(x0, y0, x1, y1, c);
    if (hop) line(x0, y0 + 1, x1, y1 + 1, c);
    if (heads && a.orphan != 1) {
      const float dx = x1 - x0, dy = y1 - y0, len = std::max(1.f, std::sqrt(dx * dx + dy * dy));
      const float ux = dx / len * 6, uy = dy / len * 6;
      line(x1, y1, x1 - ux - uy * 0.5f, y1 - uy + ux * 0.5f, c);
      line(x1, y1, x1 - ux + uy * 0.5f, y1 - uy - ux * 0.5f, c);
    }
  }
  if (marks.has_selection())
    rect(plot.x + float(view.x(marks.sel0)), plot.y, plot.x + float(view.x(marks.sel1)), plot.y + plot.h,
         kSelectionColour);
  for (int64_t b : marks.bookmarks) {
    if (b < view.t0() || b > view.t1()) continue;  // thousands may come from a stream
    const float x = plot.x + float(view.x(b));
    line(x, g.ruler.y, x, plot.y + plot.h, kBookmarkColour);
  }
  if (marks.cursor != Marks::kNone) {
    const float x = plot.x + float(std::floor(view.x(marks.cursor))) + 0.5f;
    line(x, g.ruler.y, x, plot.y + plot.h, kCursorColour);
  }
  flush({plot.x, g.ruler.y, plot.w, plot.h + g.ruler.h});
}

void GlRenderer::draw_scope(const ScopePicture& p, TextureSlot& slot, const ScopeGeometry& g, const Marks& marks) {
  const ScopeRequest& q = p.request;
  upload(p.serial, slot, q.columns, q.strips, p.rgba.data(), nullptr);
  const Rect plot = g.plot;
  const float sp = float(g.strip_px), h = sp >= 6 ? sp - 1 : sp;
  std::vector<float> inst;
  for (uint32_t s = 0; s < std::min(q.strips, g.strips()); ++s)
    inst.insert(inst.end(), {plot.x, plot.y + float(s) * sp, plot.w, h, float(s), 0.f, 0.f, 0.f});
  const float scale = plot.w / float(q.columns);
  bands(slot, inst, plot, 0, scale);

  auto at = [&](int64_t t, float& x, float& y) {
    uint32_t strip;
    double col;
    if (!p.locate(t, strip, col)) return false;
    x = plot.x + float(col) * scale, y = plot.y + float(strip) * sp;
    return true;
  };
  if (marks.has_selection()) {
    // The selection, strip by strip.
    float x0, y0, x1, y1;
    const int64_t a = std::max(marks.sel0, q.start), b = std::min(marks.sel1, p.end() - 1);
    if (a < b && at(a, x0, y0) && at(b, x1, y1)) {
      for (float y = y0; y <= y1; y += sp)
        rect(y == y0 ? x0 : plot.x, y, y == y1 ? x1 : plot.x + plot.w, y + sp, kSelectionColour);
    }
  }
  float x, y;
  for (int64_t b : marks.bookmarks)
    if (at(b, x, y)) rect(x - 1, y - 2, x + 1, y + sp + 2, kBookmarkColour);
  if (marks.cursor != Marks::kNone && at(marks.cursor, x, y)) {
    x = std::floor(x);
    rect(x, y - 3, x + 2, y + sp + 3, kCursorColour);
  }
  flush(plot);
}

void GlRenderer::draw_overview(const TimelinePicture& p, TextureSlot& slot, Rect r, int64_t view_t0,
                               int64_t view_t1) {
  upload(p.serial, slot, p.columns, p.rows, p.rgba.data(), p.envelope.data());
  const float sy = p.request.layout.height > 0 ? r.h / p.request.layout.height : 1;
  std::vector<float> inst;
  for (uint32_t k = 0; k < p.rows; ++k) {
    const Row& row = p.request.layout.rows[k];
    if (row.kind == Row::Group) continue;
    inst.insert(inst.end(), {r.x, r.y + row.y * sy, r.w, std::max(1.f, row.h * sy), float(k),
                             row.kind == Row::Counter ? 1.f : 0.f, 0.f, 0.f});
  }
  bands(slot, inst, r, 0, r.w / float(p.columns));
  const float x0 = r.x + float(p.axis.x(view_t0)) * r.w / float(p.columns);
  const float x1 = std::max(x0 + 2, r.x + float(p.axis.x(view_t1)) * r.w / float(p.columns));
  rect(x0, r.y, x1, r.y + r.h, 0x30ffffffu);
  line(x0, r.y, x0, r.y + r.h, kCursorColour);
  line(x1, r.y, x1, r.y + r.h, kCursorColour);
  flush(r);
}

}  // namespace tinescope::render
