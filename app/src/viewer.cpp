// The viewer's window and frame: opening and closing it, the shared view
// window, the figures and what tests and tools ask of them. Its other parts:
// viewer_pictures.cpp (pictures built off the UI thread), viewer_play.cpp
// (TiVo play and live sources), viewer_layout.cpp (controls and where the
// figures go), viewer_input.cpp (mouse and keys, tooltips, details).
#include "tinescope/app/viewer.hpp"

#include <epoxy/gl.h>  // before GLFW, which then includes no GL header of its own
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "tinescope/render/activity.hpp"
#include "tinescope/render/overlay.hpp"
#include "viewer_state.hpp"

namespace tinescope::app {

using render::FigureParams;
using render::Rect;

namespace {
constexpr int64_t kMinSpanNs = 4;  // the narrowest window
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
  // (Before ImGui's: its callback calls the one it finds, so both see every key.)
  glfwSetWindowUserPointer(v->window_, v.get());
  glfwSetKeyCallback(v->window_, &Viewer::on_key);
  ImGui_ImplGlfw_InitForOpenGL(v->window_, true);
  ImGui_ImplOpenGL3_Init("#version 450 core");

  v->marks_ = marks;
  v->pinned_active_ = marks.active;
  v->t0_ = first.t0;
  v->t1_ = first.t1 > first.t0 ? first.t1 : first.t0 + 1;
  v->theta_us_ = first.theta * 1e3;
  if (first.type != FigureParams::Timeline) {  // a scope or sequence diagram comes with a timeline above it
    FigureParams timeline;
    timeline.type = FigureParams::Timeline;
    v->figures_.push_back(std::make_unique<Figure>());
    v->figures_.back()->params = timeline;
  }
  v->figures_.push_back(std::make_unique<Figure>());
  v->figures_.back()->params = first;
  if (first.message_filter)
    std::snprintf(v->message_filter_text_, sizeof v->message_filter_text_, "%s", first.message_filter->text.c_str());
  if (first.type == FigureParams::Scope && first.period_ns <= 0)
    v->figures_.back()->params.period_ns = render::default_period_ns(*v->scene_, v->figures_.back()->params);
  v->period_candidates_ = first.period_candidates;  // (--period auto: offered beside "Find period")
  v->overview_width_ = float(options.width);
  // Built once, so at the budget of a picture at rest (a live overview is
  // rebuilt as data arrives, at the interactive one).
  render::TimelineRequest overview = render::overview_request(*v->scene_, float(options.width));
  overview.decode_per_column = render::kAtRestDecodePerColumn;
  v->overview_ = std::make_shared<render::TimelinePicture>(render::build_timeline(*v->scene_, overview));
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

void Viewer::set_window(int64_t t0, int64_t t1) {
  if (t1 - t0 < kMinSpanNs) {
    const int64_t mid = t0 + (t1 - t0) / 2;
    t0 = mid - kMinSpanNs / 2, t1 = t0 + kMinSpanNs;
  }
  // Never so far out that the trace is lost: at most a span beyond either end.
  const int64_t span = t1 - t0, total = std::max<int64_t>(1, scene_->last_ns() - scene_->first_ns());
  const int64_t max_span = std::max<int64_t>(total * 4, live_.empty() ? 0 : int64_t(600e9));
  if (span > max_span) t0 = scene_->first_ns() - total, t1 = t0 + max_span;
  if (t0 > scene_->last_ns()) t1 -= t0 - scene_->last_ns(), t0 = scene_->last_ns();
  if (t1 < scene_->first_ns()) t0 += scene_->first_ns() - t1, t1 = scene_->first_ns();
  t0_ = t0, t1_ = t1;
}

SharedView Viewer::shared_view() {
  SharedView v;
  v.scene = scene_.get();
  v.marks = &marks_;
  v.t0 = t0_, v.t1 = t1_;
  v.playing = play_ != Play::Paused;
  v.set_window = [this](int64_t a, int64_t b) {
    if (play_ != Play::Paused) pause();  // a jump is a move by hand
    set_window(a, b);
  };
  v.record_control = [this](const char* id) { record_control(id); };
  // Categories are hidden, and lanes chosen, in every timeline at once (the first tells).
  for (auto& f : figures_)
    if (f->params.type == FigureParams::Timeline) {
      v.hidden_categories = f->params.hidden_categories;
      v.lanes = f->params.lanes;
      break;
    }
  v.shared_scene = scene_;
  v.scene_serial = scene_serial_;
  v.set_lanes = [this](const std::vector<uint32_t>& lanes) {
    for (auto& f : figures_)
      if (f->params.type == FigureParams::Timeline) f->params.lanes = lanes;
  };
  v.point_at = [this](const std::string& name) { pointed_ = name; };
  v.record_rect = [this](const std::string& id, render::Rect r) { controls_.push_back({id, r}); };
  v.hide_categories = [this](const std::vector<std::string>& categories,
                             std::shared_ptr<const std::vector<std::vector<uint8_t>>> names) {
    for (auto& f : figures_) {
      f->params.hidden_categories = categories;
      f->params.hidden_names = categories.empty() ? nullptr : names;
    }
  };
  return v;
}

void Viewer::update_activity() {
  // What is pointed at this frame, else the selected interval's name.
  const bool interval = has_selected_ && !selected_message_ && !selected_lock_ && selected_job_.empty();
  const std::string want = !pointed_.empty() ? pointed_ : interval ? selected_name_ : pinned_active_;
  pointed_.clear();
  if (want != marks_.active) {
    marks_.active = want, marks_.active_spans.clear();
    activity_asked_ = {};  // (pointed at again later: found again)
  }
  if (activity_job_.valid() && activity_job_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    auto [name, spans] = activity_job_.get();
    if (name == marks_.active) marks_.active_spans = std::move(spans);
  }
  if (want.empty() || activity_job_.valid()) return;
  // Found again when the window, the scene or the plot's width changes
  // (the spans are in ns: till then the last ones are drawn re-projected).
  uint32_t columns = 1000;
  for (auto& f : figures_)
    if (f->params.type == FigureParams::Timeline) {
      columns = uint32_t(std::max(1.f, f->tg().plot.w));
      break;
    }
  auto key = std::make_tuple(want, t0_, t1_, scene_serial_, columns);
  if (key == activity_asked_) return;
  activity_asked_ = key;
  activity_job_ = std::async(std::launch::async, [scene = scene_, want, t0 = t0_, t1 = t1_, columns] {
    return std::make_pair(want, render::activity_spans(*scene, {}, want, t0, t1, columns));
  });
}

void Viewer::fit() { set_window(scene_->first_ns(), scene_->last_ns() + 1); }

void Viewer::zoom(double factor, double at_x) {
  // at_x: pixels from the left of the plot; the time under it stays put.
  const Figure* tl = nullptr;
  for (auto& f : figures_)
    if (f->params.type == FigureParams::Timeline) tl = f.get();
  const render::TimeAxis axis = tl ? tl->axis : render::TimeAxis(t0_, t1_, 1000);
  zoom_about(factor, axis.time(at_x));
}

void Viewer::zoom_about(double factor, int64_t at) {
  const double left = double(at - t0_) * factor, right = double(t1_ - at) * factor;
  set_window(at - int64_t(std::llround(left)), at + std::max<int64_t>(1, int64_t(std::llround(right))));
}

void Viewer::add_figure(FigureParams::Type type) {
  auto f = std::make_unique<Figure>();
  f->params.type = type;
  for (auto& g : figures_)  // a second scope starts like the first
    if (type == FigureParams::Scope && g->params.type == FigureParams::Scope) f->params = g->params;
  if (!figures_.empty()) {  // a new timeline hides what the others hide
    f->params.hidden_categories = figures_[0]->params.hidden_categories;
    f->params.hidden_names = figures_[0]->params.hidden_names;
    f->params.rules_file = figures_[0]->params.rules_file;  // and colours arrows by the same rules
    f->params.rule_verdicts = figures_[0]->params.rule_verdicts;
    f->params.message_filter = figures_[0]->params.message_filter;
    if (type != FigureParams::Scope && figures_[0]->params.lane_order != render::LaneOrder::FirstAppearance)
      f->params.lanes = figures_[0]->params.lanes, f->params.lane_order = figures_[0]->params.lane_order,
      f->params.arrow_lengths = figures_[0]->params.arrow_lengths;  // its lanes in the same order
  }
  // A sequence diagram's lifelines: those lanes that send or receive.
  if (type == FigureParams::Sequence) f->params.lanes = render::message_lanes(*scene_, f->params.lanes);
  if (type == FigureParams::Scope && f->params.period_ns <= 0) {
    f->params.t0 = t0_, f->params.t1 = t1_;
    f->params.period_ns = render::default_period_ns(*scene_, f->params);
  }
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

bool Viewer::awaits_rest(const Figure& f) const {
  // Drawn coarser than its columns at the interactive budget, not live: the
  // worker draws it again at rest (worker_loop).
  if (f.params.type == FigureParams::Sequence)  // past the arrow budget: bundles at rest
    return f.sequence && f.sequence->bundles_wait && !f.sequence->request.bundles && live_.empty();
  return f.params.type == FigureParams::Timeline && f.timeline && f.timeline->over_budget &&
         f.timeline->request.decode_per_column < render::kAtRestDecodePerColumn && live_.empty();
}

const render::TimelinePicture* Viewer::figure_timeline(size_t i) const {
  return figures_[i]->params.type == FigureParams::Timeline ? figures_[i]->timeline.get() : nullptr;
}

const render::ScopePicture* Viewer::figure_scope(size_t i) const {
  return figures_[i]->params.type == FigureParams::Scope ? figures_[i]->scope.get() : nullptr;
}

const render::SequencePicture* Viewer::figure_sequence(size_t i) const {
  return figures_[i]->params.type == FigureParams::Sequence ? figures_[i]->sequence.get() : nullptr;
}

bool Viewer::frame() {
  if (glfwWindowShouldClose(window_)) return false;
  glfwPollEvents();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  if (frames_++ == 0 && t1_ - t0_ <= 1) fit();
  advance_play();
  controls();
  handle_input();
  request_pictures();

  ImDrawList* dl = ImGui::GetBackgroundDrawList();
  for (auto& f : figures_) {
    const render::Scene& scene = f->scene ? *f->scene : *scene_;
    if (f->params.type == FigureParams::Timeline && f->timeline)
      render::timeline_overlay(dl, scene, *f->timeline, f->tg(), f->axis, f->params.scroll_y, marks_,
                               f->params.collapsed);
    if (f->params.type == FigureParams::Scope && f->scope) render::scope_overlay(dl, scene, *f->scope, f->sg(), marks_);
    if (f->params.type == FigureParams::Sequence && f->sequence)
      render::sequence_overlay(dl, scene, *f->sequence, f->qg(), marks_);
    if (f->generation != f->shown)
      dl->AddText({f->rect.x + f->rect.w - 90, f->rect.y + 3}, IM_COL32(255, 200, 80, 255), "drawing...");
  }
  dl->AddText({4, overview_rect_.y + 8}, IM_COL32(150, 150, 150, 255), "whole trace");
  if (overview_ && !overview_->message_density.empty()) {
    // The messages sent, along the strip's foot: a column's height on a log
    // scale of the busiest one's (a lone message is still a mark).
    const std::vector<uint64_t>& d = overview_->message_density;
    const double top = std::log1p(double(*std::max_element(d.begin(), d.end())));
    const float foot = overview_rect_.y + overview_rect_.h, w = overview_rect_.w / float(d.size());
    for (size_t c = 0; c < d.size() && top > 0; ++c)
      if (d[c]) {
        const float h = std::max(1.f, 9.f * float(std::log1p(double(d[c])) / top));
        const float x = overview_rect_.x + float(c) * w;
        dl->AddRectFilled({x, foot - h}, {x + std::max(1.f, w), foot}, IM_COL32(120, 230, 230, 200));
      }
    dl->AddText({4, overview_rect_.y + 20}, IM_COL32(120, 200, 200, 255), "messages");
  }
  if (analysis_.has_figure() && stream_figure_rect_.w > 0) {
    // On the first timeline's axis, so it lines up with the lanes above.
    const render::TimelineGeometry g = render::TimelineGeometry::of(stream_figure_rect_);
    render::TimeAxis axis(t0_, t1_, g.plot.w);
    for (auto& f : figures_)
      if (f->params.type == FigureParams::Timeline && f->axis.width() == g.plot.w) {
        axis = f->axis;
        break;
      }
    analysis_.draw_figure(dl, shared_view(), stream_figure_rect_, axis);
  }
  SharedView view = shared_view();
  analysis_.poll(view);
  if (analysis_open_) {
    const ImVec2 size = ImGui::GetIO().DisplaySize;
    const float top = overview_rect_.y - 2;
    analysis_.draw(view, {size.x - AnalysisPanel::kWidth, top, AnalysisPanel::kWidth, size.y - top});
  }
  details();
  live_panel();
  update_activity();
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
  auto next = std::chrono::steady_clock::now();
  while (frame()) {
    if (play_ != Play::Paused || !live_.empty()) {
      // Moving pictures: at most max_fps frames a second.
      next += std::chrono::microseconds(1000000 / std::max(1, options_.max_fps));
      const auto now = std::chrono::steady_clock::now();
      if (next > now) std::this_thread::sleep_until(next);
      else next = now;
      continue;
    }
    // Idle: nothing pending and no input — sleep until something happens.
    bool pending = false;
    for (auto& f : figures_) pending |= f->shown != f->generation || awaits_rest(*f);
    if (!pending && drag_ == Drag::None) glfwWaitEventsTimeout(0.25);
    next = std::chrono::steady_clock::now();
  }
}

}  // namespace tinescope::app
