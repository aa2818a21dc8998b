#include "tinescope/app/viewer.hpp"

#include <epoxy/gl.h>  // before GLFW, which then includes no GL header of its own
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "tinescope/render/overlay.hpp"

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
  std::shared_ptr<render::Scene> scene;  // the picture's (a live scene moves on)
  int64_t shown_until = INT64_MIN;       // newest data time in the picture

  render::TimelineGeometry tg() const { return render::TimelineGeometry::of(rect); }
  render::ScopeGeometry sg() const { return render::ScopeGeometry::of(rect, params.strip_px); }
  Rect plot() const { return params.type == FigureParams::Timeline ? tg().plot : sg().plot; }
};

struct Viewer::Job {
  size_t figure = 0;
  uint64_t generation = 0;
  std::shared_ptr<render::Scene> scene;  // built from (set by the worker)
  uint64_t scene_serial = 0;
  FigureParams params;
  Rect rect;
  std::shared_ptr<render::TimelinePicture> timeline;
  std::shared_ptr<render::ScopePicture> scope;
  bool at_rest = false;  // drawn again with render::kAtRestDecodePerColumn, the view unchanged
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

void Viewer::worker_loop() {
  std::shared_ptr<render::Scene> scene;
  uint64_t serial = 0;
  {
    std::lock_guard lock(mu_);
    scene = scene_;
    serial = scene_serial_;
  }
  // Timelines drawn coarser than their columns while the view moved (one
  // a figure): drawn again with the budget of a view at rest once no request
  // waits. While the user zooms, a lane's picture costs at most the
  // interactive budget (index::kDecodeEventsPerColumn); when they stop, the
  // zooms just past it get their intervals back instead of the stored
  // leaves' smears.
  std::vector<std::shared_ptr<Job>> at_rest;
  auto forget = [&](size_t figure) {
    std::erase_if(at_rest, [&](const std::shared_ptr<Job>& j) { return j->figure == figure; });
  };
  for (;;) {
    std::shared_ptr<Job> job;
    std::vector<std::shared_ptr<index::LiveSource>> live;
    {
      std::unique_lock lock(mu_);
      auto ready = [&] { return stop_ || !jobs_.empty(); };
      live = live_;
      if (!at_rest.empty() && jobs_.empty()) {
        // (no wait: draw it now)
      } else if (live.empty()) {
        cv_.wait(lock, ready);
      } else {
        cv_.wait_for(lock, std::chrono::milliseconds(5), ready);  // and look at the sources
      }
      if (stop_) return;
      if (!jobs_.empty()) {
        job = jobs_.front();
        jobs_.pop_front();
        jobs_waiting_ = !jobs_.empty();
        // A newer request for the same figure makes this one moot (and its
        // picture at rest).
        forget(job->figure);
        for (auto& j : jobs_)
          if (j->figure == job->figure) {
            job = nullptr;
            break;
          }
      } else if (!at_rest.empty()) {
        job = std::make_shared<Job>(*at_rest.front());
        job->at_rest = true, job->timeline = nullptr;
      }
    }
    if (!live.empty()) {
      const render::Scene* before = scene.get();
      refresh_live(live, scene);
      if (scene.get() != before) {
        std::lock_guard lock(mu_);
        serial = pending_serial_;
      }
    }
    if (!job) continue;
    job->scene = scene;
    job->scene_serial = serial;
    if (job->params.type == FigureParams::Timeline) {
      const render::TimelineGeometry g = render::TimelineGeometry::of(job->rect);
      render::TimelineRequest request = render::timeline_request(*scene, job->params, g);
      if (job->at_rest) request.decode_per_column = render::kAtRestDecodePerColumn, request.stop = &jobs_waiting_;
      job->timeline = std::make_shared<render::TimelinePicture>(render::build_timeline(*scene, request));
      // Stopped for a request: tried again after it, unless it is for this figure.
      if (job->timeline->stopped) continue;
      forget(job->figure);
      if (!job->at_rest && job->timeline->over_budget && live.empty()) at_rest.push_back(job);
    } else {
      const render::ScopeGeometry g = render::ScopeGeometry::of(job->rect, job->params.strip_px);
      job->scope = std::make_shared<render::ScopePicture>(
          render::build_scope(*scene, render::scope_request(*scene, job->params, g)));
    }
    std::lock_guard lock(mu_);
    done_.push_back(job);
  }
}

void Viewer::refresh_live(const std::vector<std::shared_ptr<index::LiveSource>>& live,
                          std::shared_ptr<render::Scene>& scene) {
  // A scene is never changed under a picture being built or drawn: the
  // worker refreshes a copy, and the UI takes it on its next frame.
  static constexpr auto kEvery = std::chrono::milliseconds(8), kOverviewEvery = std::chrono::milliseconds(250);
  const auto now = std::chrono::steady_clock::now();
  if (now - live_refreshed_ < kEvery) return;
  uint64_t generation = 0;
  for (auto& l : live) generation += l->generation();
  if (generation == live_generation_) return;
  live_generation_ = generation;
  live_refreshed_ = now;
  auto next = std::make_shared<render::Scene>(*scene);
  for (auto& l : live)
    for (auto& ix : l->indexes()) {
      bool known = false;
      for (const render::Source& src : next->sources()) known |= src.index == ix;
      if (!known) next->add_index(ix);
    }
  next->refresh();
  scene = next;
  std::shared_ptr<render::TimelinePicture> overview;
  if (now - overview_built_ >= kOverviewEvery) {
    overview_built_ = now;
    overview = std::make_shared<render::TimelinePicture>(
        render::build_timeline(*next, render::overview_request(*next, overview_width_)));
  }
  std::lock_guard lock(mu_);
  pending_scene_ = next;
  ++pending_serial_;
  if (overview) pending_overview_ = overview;
}

void Viewer::request_pictures() {
  {
    std::lock_guard lock(mu_);
    if (pending_scene_ && pending_serial_ > scene_serial_) {
      scene_ = pending_scene_;
      scene_serial_ = pending_serial_;
    }
    pending_scene_ = nullptr;
    if (pending_overview_) overview_ = std::move(pending_overview_);
    for (auto& job : done_) {
      Figure& f = *figures_[job->figure];
      // The picture at rest replaces the one it was drawn again for, and only that one.
      if (job->at_rest ? job->generation != f.shown || !awaits_rest(f) : job->generation <= f.shown) continue;
      f.shown = job->generation;
      f.scene = job->scene;
      f.shown_until = std::min(job->scene->last_ns(), job->params.t1);
      if (job->timeline) f.timeline = job->timeline;
      if (job->scope) f.scope = job->scope;
      if (job->scene_serial > scene_serial_) scene_ = job->scene, scene_serial_ = job->scene_serial;
    }
    done_.clear();
  }
  std::string live_key;
  if (!live_.empty()) {
    // New data in the window, or new gaps or lanes anywhere: new pictures.
    size_t gaps = 0;
    for (const render::Source& src : scene_->sources()) gaps += src.gaps.size();
    live_key = " live " + std::to_string(std::min(t1_, scene_->last_ns())) + " " + std::to_string(gaps) + " " +
               std::to_string(scene_->lanes().size());
  }
  for (size_t i = 0; i < figures_.size(); ++i) {
    Figure& f = *figures_[i];
    f.params.t0 = t0_, f.params.t1 = t1_, f.params.theta = theta_us_ / 1e3;
    const std::string key = state_key(f.params, f.rect) + live_key;
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
      jobs_waiting_ = true;
    }
    cv_.notify_one();
  }
}

bool Viewer::settle(int max_frames) {
  for (int n = 0; n < max_frames; ++n) {
    if (!frame()) return false;
    bool current = true;
    for (auto& f : figures_) current &= f->shown == f->generation && f->generation > 0 && !awaits_rest(*f);
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
  const int64_t max_span = std::max<int64_t>(total * 4, live_.empty() ? 0 : int64_t(600e9));
  if (span > max_span) t0 = scene_->first_ns() - total, t1 = t0 + max_span;
  if (t0 > scene_->last_ns()) t1 -= t0 - scene_->last_ns(), t0 = scene_->last_ns();
  if (t1 < scene_->first_ns()) t0 += scene_->first_ns() - t1, t1 = scene_->first_ns();
  t0_ = t0, t1_ = t1;
}

void Viewer::add_live(std::shared_ptr<index::LiveSource> source) {
  {
    std::lock_guard lock(mu_);
    live_.push_back(std::move(source));
  }
  messages_seen_.push_back(0);
  if (scene_->lanes().empty() || t1_ - t0_ <= 1) t0_ = 0, t1_ = int64_t(2e9);  // two seconds of "now" to start with
  play_ = Play::Live;
  cv_.notify_all();
}

void Viewer::play(bool reverse) {
  reverse_ = reverse;
  if (play_ == Play::Live && !reverse) return;
  play_ = Play::Playing;
  play_carry_ns_ = 0;
}

void Viewer::go_live() {
  if (!live_.empty()) play_ = Play::Live;
}

void Viewer::step(int direction) {
  const int64_t span = t1_ - t0_;
  if (direction < 0 && play_ == Play::Live) play_ = Play::Playing, reverse_ = false;  // watch it again, delayed
  if (direction > 0 && play_ == Play::Live) return;
  t0_ += direction * span, t1_ += direction * span;
  if (!live_.empty() && live_now_ != INT64_MIN && t1_ > live_now_) play_ = Play::Live;
}

void Viewer::jump_bookmark(int direction) {
  std::vector<int64_t> b = marks_.bookmarks;
  std::sort(b.begin(), b.end());
  const int64_t mid = t0_ + (t1_ - t0_) / 2, half = (t1_ - t0_) / 2;
  int64_t to = render::Marks::kNone;
  if (direction > 0) {
    auto it = std::upper_bound(b.begin(), b.end(), mid + 1);
    if (it != b.end()) to = *it;
  } else {
    auto it = std::lower_bound(b.begin(), b.end(), mid - 1);
    if (it != b.begin()) to = *std::prev(it);
  }
  if (to == render::Marks::kNone) return;
  play_ = Play::Paused;
  t0_ = to - half, t1_ = t0_ + 2 * half;
  marks_.cursor = to;
}

int64_t Viewer::shown_until() const {
  int64_t until = INT64_MAX;
  for (auto& f : figures_) until = std::min(until, f->shown_until);
  return figures_.empty() ? INT64_MIN : until;
}

void Viewer::advance_play() {
  const auto now = std::chrono::steady_clock::now();
  const double dt =
      last_frame_ == std::chrono::steady_clock::time_point{} ? 0 : std::chrono::duration<double>(now - last_frame_).count();
  last_frame_ = now;
  for (size_t i = 0; i < live_.size(); ++i) {
    for (index::LiveMessage& m : live_[i]->messages(messages_seen_[i])) {
      std::fprintf(stderr, "tinescope view: %s\n", m.text.c_str());
      messages_.push_back(std::move(m));
      ++messages_seen_[i];
    }
  }
  if (!live_.empty() && !scene_->lanes().empty()) {
    // "Now" runs on from the newest data at the wall clock's pace (at most a
    // second ahead of it), so the live view glides instead of jumping.
    if (scene_->last_ns() != data_end_) data_end_ = scene_->last_ns(), data_end_at_ = now;
    const int64_t ahead = std::min<int64_t>(
        int64_t(1e9), std::chrono::duration_cast<std::chrono::nanoseconds>(now - data_end_at_).count());
    live_now_ = std::max(live_now_, data_end_ + ahead);
  }
  switch (play_) {
    case Play::Paused: break;
    case Play::Live:
      if (live_now_ != INT64_MIN) {
        const int64_t span = t1_ - t0_;
        t1_ = live_now_ + 1, t0_ = t1_ - span;
      }
      break;
    case Play::Playing: {
      play_carry_ns_ += (reverse_ ? -1 : 1) * speed_ * std::min(dt, 0.25) * 1e9;
      const int64_t shift = int64_t(play_carry_ns_);
      play_carry_ns_ -= double(shift);
      t0_ += shift, t1_ += shift;
      if (!reverse_ && !live_.empty() && live_now_ != INT64_MIN && t1_ > live_now_) play_ = Play::Live;
      else if (!reverse_ && live_.empty() && t1_ > scene_->last_ns()) play_ = Play::Paused;
      else if (reverse_ && t0_ < scene_->first_ns()) play_ = Play::Paused;
      break;
    }
  }
}

void Viewer::record_control(const char* id) {
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  controls_.push_back({id, {a.x, a.y, b.x - a.x, b.y - a.y}});
}

void Viewer::play_controls() {
  // A button on the row, recorded under `id` for tests and tools.
  auto button = [&](const char* label, const char* id) {
    const bool pressed = ImGui::Button(label);
    record_control(id);
    ImGui::SameLine();
    return pressed;
  };
  if (button("<< Reverse (R)", "reverse")) play(true);
  if (button("|| Pause", "pause")) pause();
  if (button("> Play", "play")) play(false);
  ImGui::BeginDisabled(live_.empty());
  if (button("Live (End)", "live")) go_live();
  ImGui::EndDisabled();
  float speed = float(speed_);
  ImGui::SetNextItemWidth(140);
  if (ImGui::SliderFloat("speed", &speed, float(kMinSpeed), float(kMaxSpeed), "%.3gx", ImGuiSliderFlags_Logarithmic))
    set_speed(speed);
  record_control("speed");
  ImGui::SameLine();
  if (button("<| Step (,)", "step_back")) step(-1);
  if (button("Step |> (.)", "step_forward")) step(+1);
  if (button("< Bookmark (P)", "bookmark_prev")) jump_bookmark(-1);
  if (button("Bookmark > (N)", "bookmark_next")) jump_bookmark(+1);
  char state[64];
  switch (play_) {
    case Play::Paused: std::snprintf(state, sizeof state, "PAUSED"); break;
    case Play::Live: std::snprintf(state, sizeof state, "LIVE"); break;
    case Play::Playing: std::snprintf(state, sizeof state, "%s %.3gx", reverse_ ? "REVERSE" : "PLAY", speed_); break;
  }
  ImGui::TextColored(play_ == Play::Live ? ImVec4(1, 0.35f, 0.3f, 1) : ImVec4(0.8f, 0.8f, 0.8f, 1), "%s", state);
}

void Viewer::live_panel() {
  if (live_.empty()) return;
  const ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos({4, io.DisplaySize.y - 4}, ImGuiCond_Always, {0, 1});
  ImGui::SetNextWindowBgAlpha(0.8f);
  ImGui::Begin("live sources", nullptr,
               ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_AlwaysAutoResize |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing);
  for (auto& l : live_) {
    const index::LiveSource::Status st = l->status();
    ImGui::Text("%s  %s  %.1f MB  %s", l->address().c_str(), st.receiving ? "receiving" : "not connected",
                double(st.bytes) / 1e6, st.saving_to.c_str());
  }
  const size_t first = messages_.size() > 4 ? messages_.size() - 4 : 0;
  for (size_t i = first; i < messages_.size(); ++i)
    ImGui::TextColored(messages_[i].error ? ImVec4(1, 0.6f, 0.3f, 1) : ImVec4(0.7f, 0.7f, 0.7f, 1), "%s",
                       messages_[i].text.c_str());
  ImGui::End();
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
  return v;
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

bool Viewer::awaits_rest(const Figure& f) const {
  // Drawn coarser than its columns at the interactive budget, not live: the
  // worker draws it again at rest (worker_loop).
  return f.params.type == FigureParams::Timeline && f.timeline && f.timeline->over_budget &&
         f.timeline->request.decode_per_column < render::kAtRestDecodePerColumn && live_.empty();
}

const render::TimelinePicture* Viewer::figure_timeline(size_t i) const {
  return figures_[i]->params.type == FigureParams::Timeline ? figures_[i]->timeline.get() : nullptr;
}

void Viewer::controls() {
  controls_.clear();
  const ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos({0, 0});
  ImGui::SetNextWindowSize({io.DisplaySize.x, 0});
  ImGui::Begin("controls", nullptr,
               ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_AlwaysAutoResize |
                   ImGuiWindowFlags_NoBringToFrontOnFocus);
  if (ImGui::Button("Fit (F)")) fit();
  record_control("fit");
  ImGui::SameLine();
  if (ImGui::Button("Zoom to selection (Z)") && marks_.has_selection()) set_window(marks_.sel0, marks_.sel1);
  record_control("zoom_selection");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(180);
  float theta = float(theta_us_);
  if (ImGui::SliderFloat("log time", &theta, 0.f, 1000.f, theta == 0 ? "linear" : "theta %.3g/us",
                         ImGuiSliderFlags_Logarithmic))
    theta_us_ = theta;
  record_control("theta");
  ImGui::SameLine();
  if (ImGui::Button("Linear (L)")) theta_us_ = 0;
  record_control("linear");
  ImGui::SameLine();
  if (ImGui::Button("+ Timeline")) add_figure(FigureParams::Timeline);
  record_control("add_timeline");
  ImGui::SameLine();
  if (ImGui::Button("+ Scope")) add_figure(FigureParams::Scope);
  record_control("add_scope");
  ImGui::SameLine();
  if (ImGui::Button(analysis_open_ ? "Analysis <<" : "Analysis >>")) analysis_open_ = !analysis_open_;
  record_control("analysis");
  ImGui::SameLine();
  ImGui::TextDisabled("window %s", render::format_duration(t1_ - t0_).c_str());
  if (marks_.cursor != render::Marks::kNone) {
    ImGui::SameLine();
    ImGui::TextDisabled("cursor %s", render::format_time(marks_.cursor - scene_->first_ns(), 1).c_str());
  }

  play_controls();

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
    record_control("period");
    ImGui::SameLine();
    // Fine control: a drag that moves by parts per million of the period.
    ImGui::SetNextItemWidth(160);
    double fine = p.period_ns;
    if (ImGui::DragScalar("##fine", ImGuiDataType_Double, &fine, float(p.period_ns * 2e-6), nullptr, nullptr,
                          "%.4f ns") &&
        fine > 0)
      p.period_ns = fine;
    record_control("period_fine");
    ImGui::SameLine();
    if (ImGui::ArrowButton("##less", ImGuiDir_Left)) p.period_ns -= 0.1;
    record_control("period_less");
    ImGui::SameLine();
    if (ImGui::ArrowButton("##more", ImGuiDir_Right)) p.period_ns += 0.1;
    record_control("period_more");
    ImGui::SameLine();
    int fold = int(p.fold);
    ImGui::SetNextItemWidth(160);
    if (ImGui::SliderInt("fold", &fold, 1, 4096, "%d", ImGuiSliderFlags_Logarithmic)) p.fold = uint32_t(std::max(1, fold));
    record_control("fold");
    ImGui::SameLine();
    int strip = int(p.strip_px);
    ImGui::SetNextItemWidth(100);
    if (ImGui::SliderInt("strip px", &strip, 1, 64)) p.strip_px = uint32_t(std::max(1, strip));
    record_control("strip");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(140);
    const std::vector<render::Lane>& lanes = scene_->lanes();
    const uint32_t current = p.lanes.empty() ? 0 : p.lanes[0];
    if (ImGui::BeginCombo("lane", current < lanes.size() ? lanes[current].name.c_str() : "?")) {
      for (uint32_t i = 0; i < lanes.size(); ++i)
        if (ImGui::Selectable(lanes[i].name.c_str(), i == current)) p.lanes = {i};
      ImGui::EndCombo();
    }
    record_control("lane");
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
  // The analysis panel takes the right side; its stream figure the bottom.
  const float width = io.DisplaySize.x - (analysis_open_ ? AnalysisPanel::kWidth : 0);
  float bottom = io.DisplaySize.y;
  stream_figure_rect_ = {};
  if (analysis_.has_figure()) {
    bottom -= AnalysisPanel::kFigureHeight;
    stream_figure_rect_ = {0, bottom, width, AnalysisPanel::kFigureHeight};
  }
  overview_rect_ = {render::TimelineGeometry::kNamesPx, top + 2, width - render::TimelineGeometry::kNamesPx, kOverviewPx};
  top += kOverviewPx + 6;
  const float each = (bottom - top) / float(std::max<size_t>(1, figures_.size()));
  for (size_t i = 0; i < figures_.size(); ++i) {
    Figure& f = *figures_[i];
    f.rect = {0, top + each * float(i), width, each - 4};
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
    if (ImGui::IsKeyPressed(GLFW_KEY_SPACE)) play_ == Play::Paused ? play(false) : pause();
    if (ImGui::IsKeyPressed(GLFW_KEY_R)) play(true);
    if (ImGui::IsKeyPressed(GLFW_KEY_END)) go_live();
    if (ImGui::IsKeyPressed(GLFW_KEY_COMMA)) step(-1);
    if (ImGui::IsKeyPressed(GLFW_KEY_PERIOD)) step(+1);
    if (ImGui::IsKeyPressed(GLFW_KEY_LEFT_BRACKET)) set_speed(speed_ / 2);
    if (ImGui::IsKeyPressed(GLFW_KEY_RIGHT_BRACKET)) set_speed(speed_ * 2);
    if (ImGui::IsKeyPressed(GLFW_KEY_N)) jump_bookmark(+1);
    if (ImGui::IsKeyPressed(GLFW_KEY_P)) jump_bookmark(-1);
    if (ImGui::IsKeyPressed(GLFW_KEY_T)) analysis_open_ = !analysis_open_;
    // Moving through time by hand leaves live (zooming does not).
    if ((ImGui::IsKeyPressed(GLFW_KEY_A) || ImGui::IsKeyPressed(GLFW_KEY_D)) && play_ == Play::Live) pause();
  }
  if (io.WantCaptureMouse && drag_ == Drag::None) return;

  // The overview: click or drag to centre the window there.
  if (drag_ == Drag::None && ImGui::IsMouseClicked(0) && overview_rect_.contains(m.x, m.y)) drag_ = Drag::Overview;
  if (drag_ == Drag::Overview) {
    if (play_ == Play::Live) pause();
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
        const std::string& group = (f.scene ? *f.scene : *scene_).lanes()[row.lane].group;
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
    if (play_ == Play::Live) pause();
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
    if (h.box) {
      const render::Scene& scene = f.scene ? *f.scene : *scene_;
      const render::Lane& lane = scene.lanes()[f.timeline->request.layout.rows[h.row].lane];
      has_selected_ = true, selected_ = *h.box;
      selected_thread_ = lane.name, selected_process_ = lane.group;
      selected_name_ = scene.string(h.box->source, h.box->name);
    }
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
  const render::Scene& scene = f.scene ? *f.scene : *scene_;
  const render::Lane& lane = scene.lanes()[row.lane];
  if (const render::Box* b = h.box) {
    ImGui::BeginTooltip();
    ImGui::Text("%s", std::string(scene.string(b->source, b->name)).c_str());
    ImGui::Text("start    %s", render::format_time(b->start - scene.first_ns(), 1).c_str());
    if (b->end != INT64_MAX) ImGui::Text("duration %s", render::format_duration(b->end - b->start).c_str());
    else ImGui::Text("duration (still open)");
    if (row.kind == render::Row::Cpu) ImGui::Text("cpu      %s   (%s)", lane.cpu_names[row.index].c_str(), lane.name.c_str());
    else ImGui::Text("thread   %s   depth %u", lane.name.c_str(), b->depth);
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
    ImGui::Text("%u x %s ...", p.count[cell], std::string(scene.string(lane.source, p.top_name[cell])).c_str());
    ImGui::Text("at %s", render::format_time(f.axis.time(m.x - g.plot.x) - scene.first_ns(), 1).c_str());
    ImGui::TextDisabled("zoom in for each one");
  } else {
    ImGui::Text("%s", lane.name.c_str());
  }
  ImGui::EndTooltip();
}

void Viewer::details() {
  if (!has_selected_) return;
  const ImGuiIO& io = ImGui::GetIO();
  const float right = io.DisplaySize.x - (analysis_open_ ? AnalysisPanel::kWidth : 0);
  const float bottom = io.DisplaySize.y - (stream_figure_rect_.w > 0 ? stream_figure_rect_.h : 0);
  ImGui::SetNextWindowPos({right - 330, bottom - 150}, ImGuiCond_Always);
  ImGui::SetNextWindowSize({320, 140});
  ImGui::Begin("selected", &has_selected_, ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoSavedSettings);
  const render::Box& b = selected_;
  ImGui::Text("%s", selected_name_.c_str());
  ImGui::Text("thread  %s (%s)", selected_thread_.c_str(), selected_process_.c_str());
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
    if (f->generation != f->shown)
      dl->AddText({f->rect.x + f->rect.w - 90, f->rect.y + 3}, IM_COL32(255, 200, 80, 255), "drawing...");
  }
  dl->AddText({4, overview_rect_.y + 8}, IM_COL32(150, 150, 150, 255), "whole trace");
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
