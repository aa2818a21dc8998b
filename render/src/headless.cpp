#include "tinescope/render/headless.hpp"

#include <epoxy/egl.h>
#include <epoxy/gl.h>
#include <imgui.h>
#include <backends/imgui_impl_opengl3.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "stb_image.h"
#include "stb_image_write.h"
#include "tinescope/render/activity.hpp"
#include "tinescope/render/overlay.hpp"

namespace tinescope::render {

namespace {

// Mesa's surfaceless platform first (no X, no GPU needed), then the EGL
// device platform (NVIDIA), then whatever the default display is.
EGLDisplay open_display(std::string& tried) {
  auto get_platform_display =
      reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(eglGetProcAddress("eglGetPlatformDisplayEXT"));
  if (get_platform_display) {
    EGLDisplay d = get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
    if (d != EGL_NO_DISPLAY && eglInitialize(d, nullptr, nullptr)) return d;
    tried += " surfaceless";
    auto query_devices = reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(eglGetProcAddress("eglQueryDevicesEXT"));
    EGLDeviceEXT devices[8];
    EGLint n = 0;
    if (query_devices && query_devices(8, devices, &n))
      for (EGLint i = 0; i < n; ++i) {
        d = get_platform_display(EGL_PLATFORM_DEVICE_EXT, devices[i], nullptr);
        if (d != EGL_NO_DISPLAY && eglInitialize(d, nullptr, nullptr)) return d;
      }
    tried += " device";
  }
  EGLDisplay d = eglGetDisplay(EGL_DEFAULT_DISPLAY);
  if (d != EGL_NO_DISPLAY && eglInitialize(d, nullptr, nullptr)) return d;
  tried += " default";
  return EGL_NO_DISPLAY;
}

}  // namespace

std::unique_ptr<HeadlessContext> HeadlessContext::create(int width, int height, std::string& error) {
  std::unique_ptr<HeadlessContext> c(new HeadlessContext);
  c->width_ = width, c->height_ = height;
  std::string tried;
  EGLDisplay d = open_display(tried);
  if (d == EGL_NO_DISPLAY) {
    error = "no EGL display (tried:" + tried + ")";
    return nullptr;
  }
  c->display_ = d;
  if (!eglBindAPI(EGL_OPENGL_API)) {
    error = "EGL cannot bind the OpenGL API";
    return nullptr;
  }
  const EGLint config_attribs[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_RED_SIZE, 8, EGL_GREEN_SIZE, 8,
                                   EGL_BLUE_SIZE, 8, EGL_NONE};
  EGLConfig config = nullptr;
  EGLint configs = 0;
  eglChooseConfig(d, config_attribs, &config, 1, &configs);
  const EGLint context_attribs[] = {EGL_CONTEXT_MAJOR_VERSION, 4, EGL_CONTEXT_MINOR_VERSION, 5,
                                    EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE};
  EGLContext ctx = eglCreateContext(d, configs ? config : EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, context_attribs);
  if (ctx == EGL_NO_CONTEXT) {
    char code[16];
    std::snprintf(code, sizeof code, "0x%04x", unsigned(eglGetError()));
    error = std::string("EGL cannot create an OpenGL 4.5 core context (error ") + code + ")";
    return nullptr;
  }
  c->context_ = ctx;
  if (!eglMakeCurrent(d, EGL_NO_SURFACE, EGL_NO_SURFACE, ctx)) {
    error = "EGL cannot make the context current without a surface";
    return nullptr;
  }
  glGenFramebuffers(1, &c->fbo_);
  glGenRenderbuffers(1, &c->colour_);
  glBindRenderbuffer(GL_RENDERBUFFER, c->colour_);
  glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width, height);
  glBindFramebuffer(GL_FRAMEBUFFER, c->fbo_);
  glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, c->colour_);
  if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) {
    error = "offscreen framebuffer incomplete";
    return nullptr;
  }
  return c;
}

HeadlessContext::~HeadlessContext() {
  if (!display_) return;
  if (context_) {
    if (fbo_) glDeleteFramebuffers(1, &fbo_);
    if (colour_) glDeleteRenderbuffers(1, &colour_);
    eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    eglDestroyContext(display_, context_);
  }
  eglTerminate(display_);
}

std::string HeadlessContext::renderer() const {
  const GLubyte* r = glGetString(GL_RENDERER);
  return r ? reinterpret_cast<const char*>(r) : "?";
}

void HeadlessContext::bind() const { glBindFramebuffer(GL_FRAMEBUFFER, fbo_); }

std::vector<uint8_t> HeadlessContext::read_rgba() const {
  std::vector<uint8_t> px(size_t(width_) * height_ * 4), out(px.size());
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  const size_t row = size_t(width_) * 4;
  for (int y = 0; y < height_; ++y) std::memcpy(&out[size_t(y) * row], &px[size_t(height_ - 1 - y) * row], row);
  for (size_t i = 3; i < out.size(); i += 4) out[i] = 255;  // figures are opaque; blending leaves alpha partial
  return out;
}

std::unique_ptr<HeadlessRenderer> HeadlessRenderer::create(int width, int height, std::string& error) {
  std::unique_ptr<HeadlessRenderer> r(new HeadlessRenderer);
  r->context_ = HeadlessContext::create(width, height, error);
  if (!r->context_ || !r->gl_.init(error)) return nullptr;
  IMGUI_CHECKVERSION();
  ImGuiContext* previous = ImGui::GetCurrentContext();
  ImGuiContext* ctx = ImGui::CreateContext();
  r->imgui_ = ctx;
  ImGui::GetIO().IniFilename = nullptr;
  ImGui_ImplOpenGL3_Init("#version 450 core");
  if (previous) ImGui::SetCurrentContext(previous);
  return r;
}

HeadlessRenderer::~HeadlessRenderer() {
  for (auto& slot : slots_) gl_.release(*slot);
  if (imgui_) {
    ImGuiContext* previous = ImGui::GetCurrentContext();
    ImGui::SetCurrentContext(static_cast<ImGuiContext*>(imgui_));
    ImGui_ImplOpenGL3_Shutdown();
    ImGui::DestroyContext(static_cast<ImGuiContext*>(imgui_));
    if (previous != imgui_) ImGui::SetCurrentContext(previous);
  }
}

HeadlessRenderer::Timing HeadlessRenderer::draw(const Scene& scene, const FigureParams& f, const Marks& marks) {
  const Rect area{0, 0, float(context_->width()), float(context_->height())};
  return draw_figures(scene, {{&f, area}}, marks);
}

HeadlessRenderer::Timing HeadlessRenderer::draw_figures(const Scene& scene,
                                                        const std::vector<std::pair<const FigureParams*, Rect>>& figures,
                                                        const Marks& marks, const std::function<void(ImDrawList*)>& more) {
  using clock = std::chrono::steady_clock;
  Timing t;
  ImGui::SetCurrentContext(static_cast<ImGuiContext*>(imgui_));
  ImGuiIO& io = ImGui::GetIO();
  io.DisplaySize = {float(context_->width()), float(context_->height())};
  io.DeltaTime = 1.f / 60;
  while (slots_.size() < figures.size()) slots_.push_back(std::make_unique<TextureSlot>());

  // Every picture first (what the viewer's worker does), then one frame.
  struct Built {
    TimelinePicture timeline;
    ScopePicture scope;
    SequencePicture sequence;
    TimelineGeometry tg;
    ScopeGeometry sg;
    SequenceGeometry qg;
  };
  std::vector<Built> built(figures.size());
  auto start = clock::now();
  for (size_t i = 0; i < figures.size(); ++i) {
    const FigureParams& f = *figures[i].first;
    const Rect area = figures[i].second;
    Built& b = built[i];
    b.tg = TimelineGeometry::of(area, f.names_px);
    b.sg = ScopeGeometry::of(area, f.strip_px);
    b.qg = SequenceGeometry::of(area);
    if (f.type == FigureParams::Timeline) {
      TimelineRequest request = timeline_request(scene, f, b.tg);
      request.decode_per_column = decode_per_column;
      b.timeline = build_timeline(scene, request);
      for (const Arrow& a : b.timeline.arrows) t.arrows += a.orphan != 3;  // (not the clock sync messages)
      t.bundles += b.timeline.bundles.size();
    } else if (f.type == FigureParams::Sequence) {
      b.sequence = build_sequence(scene, sequence_request(scene, f, b.qg));
      t.arrows += b.sequence.arrows.size(), t.bundles += b.sequence.bundles.size(), t.lifelines += b.sequence.lifelines.size();
      if (b.sequence.order_events)
        t.note = std::to_string(b.sequence.order_events) + " sends and receives: too many for event order, drawn in real time";
    } else {
      b.scope = build_scope(scene, scope_request(scene, f, b.sg));
    }
  }
  auto pictures = clock::now();
  t.build_ms = std::chrono::duration<double, std::milli>(pictures - start).count();

  ImGui_ImplOpenGL3_NewFrame();
  ImGui::NewFrame();
  ImDrawList* dl = ImGui::GetBackgroundDrawList();
  for (size_t i = 0; i < figures.size(); ++i) {
    const FigureParams& f = *figures[i].first;
    Built& b = built[i];
    if (f.type == FigureParams::Timeline && !marks.active.empty() && marks.active_spans.empty()) {
      Marks active = marks;  // (--active: where the function runs, as the viewer finds it)
      active.active_spans = activity_spans(scene, f.lanes, marks.active, f.t0, f.t1, uint32_t(b.tg.plot.w), decode_per_column);
      timeline_overlay(dl, scene, b.timeline, b.tg, b.timeline.axis, f.scroll_y, active, f.collapsed);
    } else if (f.type == FigureParams::Timeline) {
      timeline_overlay(dl, scene, b.timeline, b.tg, b.timeline.axis, f.scroll_y, marks, f.collapsed);
    } else if (f.type == FigureParams::Sequence) {
      sequence_overlay(dl, scene, b.sequence, b.qg, marks);
    } else {
      scope_overlay(dl, scene, b.scope, b.sg, marks);
    }
  }
  if (more) more(dl);
  ImGui::Render();
  context_->bind();
  gl_.begin_frame(context_->width(), context_->height());
  for (size_t i = 0; i < figures.size(); ++i) {
    const FigureParams& f = *figures[i].first;
    Built& b = built[i];
    if (f.type == FigureParams::Timeline)
      gl_.draw_timeline(b.timeline, *slots_[i], b.tg, b.timeline.axis, f.scroll_y, marks);
    else if (f.type == FigureParams::Scope)
      gl_.draw_scope(b.scope, *slots_[i], b.sg, marks);  // (a sequence diagram is all draw list)
  }
  ImDrawData* dd = ImGui::GetDrawData();
  ImGui_ImplOpenGL3_RenderDrawData(dd);
  glFinish();
  t.draw_ms = std::chrono::duration<double, std::milli>(clock::now() - pictures).count();
  t.primitives = gl_.primitives() + uint64_t(dd->TotalIdxCount / 3);
  return t;
}

bool write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgba, std::string& error) {
  if (!stbi_write_png(path.c_str(), width, height, 4, rgba.data(), width * 4)) {
    error = path + ": cannot write the PNG";
    return false;
  }
  return true;
}

bool read_png(const std::string& path, int& width, int& height, std::vector<uint8_t>& rgba, std::string& error) {
  int n = 0;
  unsigned char* data = stbi_load(path.c_str(), &width, &height, &n, 4);
  if (!data) {
    error = path + ": " + (stbi_failure_reason() ? stbi_failure_reason() : "cannot read the PNG");
    return false;
  }
  rgba.assign(data, data + size_t(width) * height * 4);
  stbi_image_free(data);
  return true;
}

}  // namespace tinescope::render
