#include "viewer.hpp"

#include <epoxy/gl.h>  // before GLFW, which then includes no GL header of its own
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "tinescope/overlay.hpp"

namespace tinescope::app {

using render::FigureParams;
using render::Rect;

struct Viewer::Figure {
  FigureParams params;
  Rect rect;
  std::shared_ptr<render::TimelinePicture> timeline;
  std::shared_ptr<render::ScopePicture> scope;
  render::TextureSlot slot;
  uint64_t generation = 0;      // of the latest request
  uint64_t shown = 0;           // of the picture shown
  std::string requested;        // what the latest request was for
  render::TimeAxis axis;        // timeline: the mapping on screen this frame
  float layout_height = 0;

  render::TimelineGeometry tg() const { return render::TimelineGeometry::of(rect); }
  render::ScopeGeometry sg() const { return render::ScopeGeometry::of(rect, params.strip_px); }
  Rect plot() const { return params.type == FigureParams::Timeline ? tg().plot : sg().plot; }
};

struct Viewer::Job {
  size_t figure = 0;
  uint64_t generation = 0;
  FigureParams params;
  Rect rect;
  std::shared_ptr<render::TimelinePicture> timeline;
  std::shared_ptr<render::ScopePicture> scope;
};

namespace {

constexpr float kOverviewPx = 34;
constexpr int64_t kMinSpanNs = 4;

// A picture is for a state: the window, the warp, the scope's settings, the
// lanes and the figure's size.
std::string state_key(const FigureParams& p, Rect r) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%d %lld %lld %.9g %.12g %u %u %.0f %.0f %zu %zu", int(p.type), (long long)p.t0,
                (long long)p.t1, p.theta, p.period_ns, p.fold, p.strip_px, r.w, r.h, p.lanes.size(),
                p.collapsed.size());
  std::string key = buf;
  for (uint32_t l : p.lanes) key.append(1, ' ').append(std::to_string(l));
  for (const std::string& c : p.collapsed) key.append(1, ' ').append(c);
  return key;
}

}  // namespace

std::unique_ptr<Viewer> Viewer::create(std::shared_ptr<render::Scene> scene, const FigureParams& first,
                                       const render::Marks& marks, const ViewerOptions& options, std::string& error) {
  if (!glfwInit()) {
    const char* msg = nullptr;
    glfwGetError(&msg);
    error = std::string("cannot open a window: ") + (msg ? msg : "GLFW cannot start (no display?)");
    return nullptr;
  }
  std::unique_ptr<Viewer> v(new Viewer);
  v->scene_ = std::move(scene);
  v->options_ = options;
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 4);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 5);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  v->window_ = glfwCreateWindow(options.width, options.height, options.title.c_str(), nullptr, nullptr);
  if (!v->window_) {
    const char* msg = nullptr;
    glfwGetError(&msg);
    error = std::string("cannot open an OpenGL 4.5 window: ") + (msg ? msg : "?");
    return nullptr;
  }
  glfwMakeContextCurrent(v->window_);
  glfwSwapInterval(options.vsync ? 1 : 0);
  if (!v->gl_.init(error)) return nullptr;
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(v->window_, true);
  ImGui_ImplOpenGL3_Init("#version 450 core");

  v->marks_ = marks;
  v->t0_ = first.t0;
  v->t1_ = first.t1 > first.t0 ? first.t1 : first.t0 + 1;
  v->theta_us_ = first.theta * 1e3;
  if (first.type == FigureParams::Scope) {  // a scope comes with a timeline above it
    FigureParams timeline;
    timeline.type = FigureParams::Timeline;
    v->figures_.push_back(std::make_unique<Figure>());
    v->figures_.back()->params = timeline;
  }
  v->figures_.push_back(std::make_unique<Figure>());
  v->figures_.back()->params = first;
  if (first.type == FigureParams::Scope && first.period_ns <= 0)
    v->figures_.back()->params.period_ns = std::max(1.0, double(v->t1_ - v->t0_) / 100);
  v->overview_ = std::make_shared<render::TimelinePicture>(
      render::build_timeline(*v->scene_, render::overview_request(*v->scene_, float(options.width))));
  v->worker_ = std::thread([p = v.get()] { p->worker_loop(); });
  return v;
}

Viewer::~Viewer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (!window_) {
    glfwTerminate();
    return;
  }
  for (auto& f : figures_) gl_.release(f->slot);
  gl_.release(overview_slot_);
  gl_.shutdown();
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window_);
  glfwTerminate();
}

void Viewer::worker_loop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = jobs_.front();
      jobs_.pop_front();
      // A newer request for the same figure makes this one moot.
      bool superseded = false;
      for (auto& j : jobs_) superseded |= j->figure == job->figure;
      if (superseded) continue;
    }
    if (job->params.type == FigureParams::Timeline) {
      const render::TimelineGeometry g = render::TimelineGeometry::of(job->rect);
      job->timeline = std::make_shared<render::TimelinePicture>(
          render::build_timeline(*scene_, render::timeline_request(*scene_, job->params, g)));
    } else {
      const render::ScopeGeometry g = render::ScopeGeometry::of(job->rect, job->params.strip_px);
      job->scope = std::make_shared<render::ScopePicture>(
          render::build_scope(*scene_, render::scope_request(*scene_, job->params, g)));
    }
    std::lock_guard lock(mu_);
    done_.push_back(job);
  }
}

void Viewer::request_pictures() {
  {
    std::lock_guard lock(mu_);
    for (auto& job : done_) {
      Figure& f = *figures_[job->figure];
      if (job->generation <= f.shown) continue;
      f.shown = job->generation;
      if (job->timeline) f.timeline = job->timeline;
      if (job->scope) f.scope = job->scope;
    }
    done_.clear();
  }
  for (size_t i = 0; i < figures_.size(); ++i) {
    Figure& f = *figures_[i];
    f.params.t0 = t0_, f.params.t1 = t1_, f.params.theta = theta_us_ / 1e3;
    const std::string key = state_key(f.params, f.rect);
    if (key == f.requested || f.rect.w < 8 || f.rect.h < 8) continue;
    f.requested = key;
    auto job = std::make_shared<Job>();
    job->figure = i;
    job->generation = ++f.generation;
    job->params = f.params;
    job->rect = f.rect;
    {
      std::lock_guard lock(mu_);
      jobs_.push_back(job);
    }
    cv_.notify_one();
  }
}

bool Viewer::settle(int max_frames) {
  for (int n = 0; n < max_frames; ++n) {
    if (!frame()) return false;
    bool current = true;
    for (auto& f : figures_) current &= f->shown == f->generation && f->generation > 0;
    if (current) {
      frame();  // draw the picture that just arrived
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

void Viewer::set_window(int64_t t0, int64_t t1) {
  if (t1 - t0 < kMinSpanNs) {
    const int64_t mid = t0 + (t1 - t0) / 2;
    t0 = mid - kMinSpanNs / 2, t1 = t0 + kMinSpanNs;
  }
  // Never so far out that the trace is lost: at most a span beyond either end.
  const int64_t span = t1 - t0, total = std::max<int64_t>(1, scene_->last_ns() - scene_->first_ns());
  const int64_t max_span = total * 4;
  if (span > max_span) t0 = scene_->first_ns() - total, t1 = t0 + max_span;
  if (t0 > scene_->last_ns()) t1 -= t0 - scene_->last_ns(), t0 = scene_->last_ns();
  if (t1 < scene_->first_ns()) t0 += scene_->first_ns() - t1, t1 = scene_->first_ns();
  t0_ = t0, t1_ = t1;
}

void Viewer::fit() { set_window(scene_->first_ns(), scene_->last_ns() + 1); }

void Viewer::zoom(double factor, double at_x) {
  // at_x: pixels from the left of the plot; the time under it stays put.
  const Figure* tl = nullptr;
  for (auto& f : figures_)
    if (f->params.type == FigureParams::Timeline) tl = f.get();
  const render::TimeAxis axis = tl ? tl->axis : render::TimeAxis(t0_, t1_, 1000);
  const int64_t at = axis.time(at_x);
  const double left = double(at - t0_) * factor, right = double(t1_ - at) * factor;
  set_window(at - int64_t(std::llround(left)), at + std::max<int64_t>(1, int64_t(std::llround(right))));
}

void Viewer::add_figure(FigureParams::Type type) {
  auto f = std::make_unique<Figure>();
  f->params.type = type;
  for (auto& g : figures_)
    if (g->params.type == FigureParams::Scope) f->params = g->params;  // a second scope starts like the first
  f->params.type = type;
  if (type == FigureParams::Scope && f->params.period_ns <= 0) f->params.period_ns = double(t1_ - t0_) / 100;
  figures_.push_back(std::move(f));
}

render::Rect Viewer::control(const std::string& id) const {
  for (auto& [name, r] : controls_)
    if (name == id) return r;
  return {};
}

const FigureParams& Viewer::figure_params(size_t i) const { return figures_[i]->params; }
render::Rect Viewer::figure_rect(size_t i) const { return figures_[i]->rect; }
render::Rect Viewer::plot_rect(size_t i) const { return figures_[i]->plot(); }
const render::TimeAxis& Viewer::figure_axis(size_t i) const { return figures_[i]->axis; }

void Viewer::controls() {
  controls_.clear();
  auto record = [&](const char* id) {
    const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
    controls_.push_back({id, {a.x, a.y, b.x - a.x, b.y - a.y}});
  };
  const ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos({0, 0});
  ImGui::SetNextWindowSize({io.DisplaySize.x, 0});
  ImGui::Begin("controls", nullptr,
               ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_AlwaysAutoResize |
                   ImGuiWindowFlags_NoBringToFrontOnFocus);
  if (ImGui::Button("Fit (F)")) fit();
  record("fit");
  ImGui::SameLine();
  if (ImGui::Button("Zoom to selection (Z)") && marks_.has_selection()) set_window(marks_.sel0, marks_.sel1);
  record("zoom_selection");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(180);
  float theta = float(theta_us_);
  if (ImGui::SliderFloat("log time", &theta, 0.f, 1000.f, theta == 0 ? "linear" : "theta %.3g/us",
                         ImGuiSliderFlags_Logarithmic))
    theta_us_ = theta;
  record("theta");
  ImGui::SameLine();
  if (ImGui::Button("Linear (L)")) theta_us_ = 0;
  record("linear");
  ImGui::SameLine();
  if (ImGui::Button("+ Timeline")) add_figure(FigureParams::Timeline);
  record("add_timeline");
  ImGui::SameLine();
  if (ImGui::Button("+ Scope")) add_figure(FigureParams::Scope);
  record("add_scope");
  ImGui::SameLine();
  ImGui::TextDisabled("window %s", render::format_duration(t1_ - t0_).c_str());
  if (marks_.cursor != render::Marks::kNone) {
    ImGui::SameLine();
    ImGui::TextDisabled("cursor %s", render::format_time(marks_.cursor - scene_->first_ns(), 1).c_str());
  }

  // The scope's controls act on every scope figure.
  Figure* scope = nullptr;
  for (auto& f : figures_)
    if (f->params.type == FigureParams::Scope && !scope) scope = f.get();
  if (scope) {
    FigureParams& p = scope->params;
    double period_us = p.period_ns / 1e3;
    ImGui::SetNextItemWidth(150);
    if (ImGui::InputDouble("period us", &period_us, 0, 0, "%.6f", ImGuiInputTextFlags_EnterReturnsTrue) &&
        period_us > 0)
      p.period_ns = period_us * 1e3;
    record("period");
    ImGui::SameLine();
    // Fine control: a drag that moves by parts per million of the period.
    ImGui::SetNextItemWidth(160);
    double fine = p.period_ns;
    if (ImGui::DragScalar("##fine", ImGuiDataType_Double, &fine, float(p.period_ns * 2e-6), nullptr, nullptr,
                          "%.4f ns") &&
        fine > 0)
      p.period_ns = fine;
    record("period_fine");
    ImGui::SameLine();
    if (ImGui::ArrowButton("##less", ImGuiDir_Left)) p.period_ns -= 0.1;
    record("period_less");
    ImGui::SameLine();
    if (ImGui::ArrowButton("##more", ImGuiDir_Right)) p.period_ns += 0.1;
    record("period_more");
    ImGui::SameLine();
    int fold = int(p.fold);
    ImGui::SetNextItemWidth(160);
    if (ImGui::SliderInt("fold", &fold, 1, 4096, "%d", ImGuiSliderFlags_Logarithmic)) p.fold = uint32_t(std::max(1, fold));
    record("fold");
    ImGui::SameLine();
    int strip = int(p.strip_px);
    ImGui::SetNextItemWidth(100);
    if (ImGui::SliderInt("strip px", &strip, 1, 64)) p.strip_px = uint32_t(std::max(1, strip));
    record("strip");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(140);
    const std::vector<render::Lane>& lanes = scene_->lanes();
    const uint32_t current = p.lanes.empty() ? 0 : p.lanes[0];
    if (ImGui::BeginCombo("lane", current < lanes.size() ? lanes[current].name.c_str() : "?")) {
      for (uint32_t i = 0; i < lanes.size(); ++i)
        if (ImGui::Selectable(lanes[i].name.c_str(), i == current)) p.lanes = {i};
      ImGui::EndCombo();
    }
    record("lane");
    for (auto& f : figures_)
      if (f->params.type == FigureParams::Scope && f.get() != scope)
        f->params.period_ns = p.period_ns, f->params.fold = p.fold, f->params.strip_px = p.strip_px;
  }
  const float bottom = ImGui::GetWindowPos().y + ImGui::GetWindowSize().y;
  ImGui::End();
  layout_figures(bottom);
}

void Viewer::layout_figures(float top) {
  const ImGuiIO& io = ImGui::GetIO();
  overview_rect_ = {render::TimelineGeometry::kNamesPx, top + 2, io.DisplaySize.x - render::TimelineGeometry::kNamesPx,
                    kOverviewPx};
  top += kOverviewPx + 6;
  const float each = (io.DisplaySize.y - top) / float(std::max<size_t>(1, figures_.size()));
  for (size_t i = 0; i < figures_.size(); ++i) {
    Figure& f = *figures_[i];
    f.rect = {0, top + each * float(i), io.DisplaySize.x, each - 4};
    if (f.params.type == FigureParams::Timeline) {
      const Rect plot = f.tg().plot;
      // On screen: the picture's own mapping when it is for this window, else linear.
      if (f.timeline && f.timeline->axis.t0() == t0_ && f.timeline->axis.t1() == t1_ &&
          f.timeline->axis.width() == plot.w && (theta_us_ > 0) == !f.timeline->axis.linear())
        f.axis = f.timeline->axis;
      else
        f.axis = render::TimeAxis(t0_, t1_, plot.w);
      f.layout_height = f.timeline ? f.timeline->request.layout.height : 0;
      f.params.scroll_y = std::clamp(f.params.scroll_y, 0.f, std::max(0.f, f.layout_height - plot.h));
    }
  }
}

void Viewer::handle_input() {
  ImGuiIO& io = ImGui::GetIO();
  const ImVec2 m = io.MousePos;
  if (!io.WantCaptureKeyboard) {
    const double mid = double(t1_ - t0_);
    Figure* hovered = nullptr;
    for (auto& f : figures_)
      if (f->params.type == FigureParams::Timeline && f->plot().contains(m.x, m.y)) hovered = f.get();
    const double at = hovered ? m.x - hovered->plot().x : (figures_.empty() ? 0 : figures_[0]->axis.width() / 2);
    if (ImGui::IsKeyPressed(GLFW_KEY_W)) zoom(0.8, at);
    if (ImGui::IsKeyPressed(GLFW_KEY_S)) zoom(1.25, at);
    if (ImGui::IsKeyPressed(GLFW_KEY_A)) set_window(t0_ - int64_t(mid * 0.1), t1_ - int64_t(mid * 0.1));
    if (ImGui::IsKeyPressed(GLFW_KEY_D)) set_window(t0_ + int64_t(mid * 0.1), t1_ + int64_t(mid * 0.1));
    if (ImGui::IsKeyPressed(GLFW_KEY_F)) fit();
    if (ImGui::IsKeyPressed(GLFW_KEY_Z) && marks_.has_selection()) set_window(marks_.sel0, marks_.sel1);
    if (ImGui::IsKeyPressed(GLFW_KEY_L)) theta_us_ = 0;
    if (ImGui::IsKeyPressed(GLFW_KEY_ESCAPE)) marks_.sel0 = marks_.sel1 = render::Marks::kNone, has_selected_ = false;
    if (ImGui::IsKeyPressed(GLFW_KEY_B) && marks_.cursor != render::Marks::kNone)
      marks_.bookmarks.push_back(marks_.cursor);
  }
  if (io.WantCaptureMouse && drag_ == Drag::None) return;

  // The overview: click or drag to centre the window there.
  if (drag_ == Drag::None && ImGui::IsMouseClicked(0) && overview_rect_.contains(m.x, m.y)) drag_ = Drag::Overview;
  if (drag_ == Drag::Overview) {
    const double f = std::clamp((m.x - overview_rect_.x) / overview_rect_.w, 0.f, 1.f);
    const int64_t at = scene_->first_ns() + int64_t(f * double(scene_->last_ns() - scene_->first_ns()));
    const int64_t half = (t1_ - t0_) / 2;
    set_window(at - half, at - half + (t1_ - t0_));
    if (!ImGui::IsMouseDown(0)) drag_ = Drag::None;
    return;
  }
  for (size_t i = 0; i < figures_.size(); ++i) {
    Figure& f = *figures_[i];
    if (drag_ != Drag::None && drag_figure_ != i) continue;
    if (drag_ == Drag::None && !f.rect.contains(m.x, m.y)) continue;
    if (f.params.type == FigureParams::Timeline)
      handle_timeline_input(f, i);
    else
      handle_scope_input(f);
    if (drag_ == Drag::None) tooltip(f);
    break;
  }
}

void Viewer::handle_timeline_input(Figure& f, size_t index) {
  ImGuiIO& io = ImGui::GetIO();
  const ImVec2 m = io.MousePos;
  const render::TimelineGeometry g = f.tg();
  const bool in_plot = g.plot.contains(m.x, m.y), in_names = g.names.contains(m.x, m.y);
  if (io.MouseWheel != 0) {
    if (in_plot) zoom(std::pow(0.8, io.MouseWheel), m.x - g.plot.x);
    if (in_names) f.params.scroll_y -= io.MouseWheel * 40;
  }
  if (drag_ == Drag::None) {
    const bool select = ImGui::IsMouseClicked(1) || (ImGui::IsMouseClicked(0) && io.KeyShift);
    if (in_plot && (ImGui::IsMouseClicked(0) || ImGui::IsMouseClicked(1))) {
      drag_ = select ? Drag::Select : Drag::Pan;
      drag_figure_ = index;
      drag_x_ = m.x, drag_y_ = m.y;
      drag_t0_ = t0_, drag_t1_ = t1_;
      drag_anchor_ = f.axis.time(m.x - g.plot.x);
      drag_moved_ = false;
    } else if (in_names && ImGui::IsMouseClicked(0) && f.timeline) {
      // A process header folds its lanes away, or back.
      for (const render::Row& row : f.timeline->request.layout.rows) {
        const float y = g.plot.y + row.y - f.params.scroll_y;
        if (row.kind != render::Row::Group || m.y < y || m.y >= y + row.h) continue;
        const std::string& group = scene_->lanes()[row.lane].group;
        auto it = std::find(f.params.collapsed.begin(), f.params.collapsed.end(), group);
        if (it == f.params.collapsed.end()) f.params.collapsed.push_back(group);
        else f.params.collapsed.erase(it);
      }
    }
    return;
  }
  const bool down = ImGui::IsMouseDown(0) || ImGui::IsMouseDown(1);
  drag_moved_ |= std::fabs(m.x - drag_x_) > 2 || std::fabs(m.y - drag_y_) > 2;
  if (drag_ == Drag::Pan && drag_moved_) {
    const double ns_per_px = double(drag_t1_ - drag_t0_) / std::max(1.f, g.plot.w);
    const int64_t dt = int64_t(std::llround((m.x - drag_x_) * ns_per_px));
    set_window(drag_t0_ - dt, drag_t1_ - dt);
    f.params.scroll_y -= m.y - float(drag_y_);
    drag_y_ = m.y;
  }
  if (drag_ == Drag::Select && drag_moved_) {
    const int64_t t = f.axis.time(std::clamp(m.x - g.plot.x, 0.f, g.plot.w));
    marks_.sel0 = std::min(t, drag_anchor_), marks_.sel1 = std::max(t, drag_anchor_);
  }
  if (down) return;
  if (!drag_moved_) {
    // A click: the cursor goes there, and the interval under it is selected.
    marks_.cursor = drag_anchor_;
    has_selected_ = false;
    const Hit h = hit(f, m.x, m.y);
    if (h.box) has_selected_ = true, selected_ = *h.box, selected_lane_ = f.timeline->request.layout.rows[h.row].lane;
  }
  drag_ = Drag::None;
}

void Viewer::handle_scope_input(Figure& f) {
  ImGuiIO& io = ImGui::GetIO();
  const ImVec2 m = io.MousePos;
  const render::ScopeGeometry g = f.sg();
  if (!f.scope || (!g.plot.contains(m.x, m.y) && drag_ == Drag::None)) return;
  const render::ScopePicture& p = *f.scope;
  auto time_at = [&](float x, float y) {
    const double strip = std::floor(std::clamp(y - g.plot.y, 0.f, g.plot.h - 1) / float(g.strip_px));
    const double phase = std::clamp(double(x - g.plot.x) / g.plot.w, 0.0, 1.0);
    return p.request.start + int64_t((strip * p.request.fold + phase) * p.request.period_ns);
  };
  if (drag_ == Drag::None) {
    if (ImGui::IsMouseClicked(0) || ImGui::IsMouseClicked(1)) {
      drag_ = ImGui::IsMouseClicked(1) || io.KeyShift ? Drag::Select : Drag::ScopePan;
      for (size_t i = 0; i < figures_.size(); ++i)
        if (figures_[i].get() == &f) drag_figure_ = i;
      drag_x_ = m.x, drag_y_ = m.y;
      drag_t0_ = t0_, drag_t1_ = t1_;
      drag_anchor_ = time_at(m.x, m.y);
      drag_moved_ = false;
    }
    return;
  }
  drag_moved_ |= std::fabs(m.x - drag_x_) > 2 || std::fabs(m.y - drag_y_) > 2;
  if (drag_ == Drag::ScopePan && drag_moved_) {
    // Dragging slides the phase: the strips' start moves by the dragged part of a period.
    const int64_t dt = int64_t(std::llround(double(m.x - drag_x_) / g.plot.w * p.request.period_ns));
    set_window(drag_t0_ - dt, drag_t1_ - dt);
  }
  if (drag_ == Drag::Select && drag_moved_) {
    const int64_t t = time_at(m.x, m.y);
    marks_.sel0 = std::min(t, drag_anchor_), marks_.sel1 = std::max(t, drag_anchor_);
  }
  if (ImGui::IsMouseDown(0) || ImGui::IsMouseDown(1)) return;
  if (!drag_moved_) marks_.cursor = drag_anchor_;
  drag_ = Drag::None;
}

Viewer::Hit Viewer::hit(const Figure& f, float x, float y) const {
  Hit h;
  if (f.params.type != FigureParams::Timeline || !f.timeline) return h;
  const render::TimelineGeometry g = f.tg();
  const render::TimelinePicture& p = *f.timeline;
  float offset, scale;
  render::reprojection(p.axis, f.axis, offset, scale);
  h.column = (x - g.plot.x - offset) / scale;
  const float ry = y - g.plot.y + f.params.scroll_y;
  for (uint32_t r = 0; r < p.rows && h.row < 0; ++r) {
    const render::Row& row = p.request.layout.rows[r];
    if (ry >= row.y && ry < row.y + row.h && row.kind != render::Row::Group) h.row = int(r);
  }
  if (h.row >= 0)
    for (const render::Box& b : p.boxes)
      if (b.row == uint32_t(h.row) && h.column >= b.x0 && h.column <= b.x1) {
        h.box = &b;
        break;
      }
  return h;
}

void Viewer::tooltip(Figure& f) {
  const ImVec2 m = ImGui::GetIO().MousePos;
  if (f.params.type != FigureParams::Timeline || !f.timeline) return;
  const render::TimelineGeometry g = f.tg();
  if (!g.plot.contains(m.x, m.y)) return;
  const render::TimelinePicture& p = *f.timeline;
  const Hit h = hit(f, m.x, m.y);
  if (h.row < 0) return;
  const uint32_t r = uint32_t(h.row);
  const float col = h.column;
  const render::Row& row = p.request.layout.rows[r];
  const render::Lane& lane = scene_->lanes()[row.lane];
  if (const render::Box* b = h.box) {
    ImGui::BeginTooltip();
    ImGui::Text("%s", std::string(scene_->string(b->source, b->name)).c_str());
    ImGui::Text("start    %s", render::format_time(b->start - scene_->first_ns(), 1).c_str());
    if (b->end != INT64_MAX) ImGui::Text("duration %s", render::format_duration(b->end - b->start).c_str());
    else ImGui::Text("duration (still open)");
    ImGui::Text("thread   %s   depth %u", lane.name.c_str(), b->depth);
    ImGui::EndTooltip();
    return;
  }
  if (col < 0 || col >= float(p.columns)) return;
  const size_t cell = size_t(r) * p.columns + size_t(col);
  ImGui::BeginTooltip();
  if (row.kind == render::Row::Counter) {
    const auto [lo, hi] = p.counter_range[r];
    const float a = p.envelope[cell * 2], z = p.envelope[cell * 2 + 1];
    ImGui::Text("%s", lane.counter_names[row.index].c_str());
    if (!std::isnan(a)) ImGui::Text("%.6g .. %.6g", lo + a * (hi - lo), lo + z * (hi - lo));
  } else if (p.count[cell]) {
    ImGui::Text("%u x %s ...", p.count[cell], std::string(scene_->string(lane.source, p.top_name[cell])).c_str());
    ImGui::Text("at %s", render::format_time(f.axis.time(m.x - g.plot.x) - scene_->first_ns(), 1).c_str());
    ImGui::TextDisabled("zoom in for each one");
  } else {
    ImGui::Text("%s", lane.name.c_str());
  }
  ImGui::EndTooltip();
}

void Viewer::details() {
  if (!has_selected_) return;
  const ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos({io.DisplaySize.x - 330, io.DisplaySize.y - 150}, ImGuiCond_Always);
  ImGui::SetNextWindowSize({320, 140});
  ImGui::Begin("selected", &has_selected_, ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoSavedSettings);
  const render::Box& b = selected_;
  const render::Lane& lane = scene_->lanes()[selected_lane_];
  ImGui::Text("%s", std::string(scene_->string(b.source, b.name)).c_str());
  ImGui::Text("thread  %s (%s)", lane.name.c_str(), lane.group.c_str());
  ImGui::Text("start   %s", render::format_time(b.start - scene_->first_ns(), 1).c_str());
  if (b.end != INT64_MAX) {
    ImGui::Text("end     %s", render::format_time(b.end - scene_->first_ns(), 1).c_str());
    ImGui::Text("length  %s   depth %u", render::format_duration(b.end - b.start).c_str(), b.depth);
    if (ImGui::Button("Zoom to it")) {
      const int64_t pad = std::max<int64_t>(2, (b.end - b.start) / 10);
      set_window(b.start - pad, b.end + pad);
    }
    ImGui::SameLine();
    if (ImGui::Button("Select it")) marks_.sel0 = b.start, marks_.sel1 = b.end;
  }
  ImGui::End();
}

bool Viewer::frame() {
  if (glfwWindowShouldClose(window_)) return false;
  glfwPollEvents();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  if (frames_++ == 0 && t1_ - t0_ <= 1) fit();
  controls();
  handle_input();
  request_pictures();

  ImDrawList* dl = ImGui::GetBackgroundDrawList();
  for (auto& f : figures_) {
    if (f->params.type == FigureParams::Timeline && f->timeline)
      render::timeline_overlay(dl, *scene_, *f->timeline, f->tg(), f->axis, f->params.scroll_y, marks_,
                               f->params.collapsed);
    if (f->params.type == FigureParams::Scope && f->scope) render::scope_overlay(dl, *scene_, *f->scope, f->sg(), marks_);
    if (f->generation != f->shown)
      dl->AddText({f->rect.x + f->rect.w - 90, f->rect.y + 3}, IM_COL32(255, 200, 80, 255), "drawing...");
  }
  dl->AddText({4, overview_rect_.y + 8}, IM_COL32(150, 150, 150, 255), "whole trace");
  details();
  ImGui::Render();

  glfwGetFramebufferSize(window_, &fb_w_, &fb_h_);
  gl_.begin_frame(fb_w_, fb_h_);
  if (overview_) gl_.draw_overview(*overview_, overview_slot_, overview_rect_, t0_, t1_);
  for (auto& f : figures_) {
    if (f->params.type == FigureParams::Timeline && f->timeline)
      gl_.draw_timeline(*f->timeline, f->slot, f->tg(), f->axis, f->params.scroll_y, marks_);
    if (f->params.type == FigureParams::Scope && f->scope) gl_.draw_scope(*f->scope, f->slot, f->sg(), marks_);
  }
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  if (options_.capture) {
    std::vector<uint8_t> px(size_t(fb_w_) * fb_h_ * 4);
    glReadBuffer(GL_BACK);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, fb_w_, fb_h_, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
    pixels_.resize(px.size());
    const size_t row = size_t(fb_w_) * 4;
    for (int y = 0; y < fb_h_; ++y) std::memcpy(&pixels_[size_t(y) * row], &px[size_t(fb_h_ - 1 - y) * row], row);
  }
  glfwSwapBuffers(window_);
  return true;
}

void Viewer::run() {
  while (frame()) {
    // Idle: nothing pending and no input — sleep until something happens.
    bool pending = false;
    for (auto& f : figures_) pending |= f->shown != f->generation;
    if (!pending && drag_ == Drag::None) glfwWaitEventsTimeout(0.25);
  }
}

}  // namespace tinescope::app
