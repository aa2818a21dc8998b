// The viewer's pictures, built off the UI thread: a worker takes the latest
// request of each figure, builds its picture from the scene (a live scene
// grown from the live sources), and hands it back; the UI shows the last
// one re-projected until then.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "tinescope/app/viewer.hpp"
#include "viewer_state.hpp"

namespace tinescope::app {

using render::FigureParams;
using render::Rect;

namespace {

// A picture is for a state: the window, the warp, the scope's settings, the
// lanes and the figure's size.
std::string state_key(const FigureParams& p, Rect r) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%d %lld %lld %.9g %.12g %u %u %.0f %.0f %zu %zu %d", int(p.type), (long long)p.t0,
                (long long)p.t1, p.theta, p.period_ns, p.fold, p.strip_px, r.w, r.h, p.lanes.size(),
                p.collapsed.size(), int(p.spacing) | int(p.lifelines) << 4);
  std::string key = buf;
  if (p.type == FigureParams::Scope)  // (where it starts, following the cursor; how it folds)
    key += " start " + std::to_string(render::scope_start(p, p.period_ns, render::ScopeGeometry::of(r, p.strip_px).strips())) +
           " " + render::fold_mode_name(p.fold_mode);
  for (uint32_t l : p.lanes) key.append(1, ' ').append(std::to_string(l));
  for (const std::string& c : p.collapsed) key.append(1, ' ').append(c);
  // (Each change of the hidden categories makes new hidden names.)
  if (p.hidden_names) key.append(" hidden ").append(std::to_string(reinterpret_cast<uintptr_t>(p.hidden_names.get())));
  if (p.message_filter) key.append(" messages ").append(p.message_filter->text);
  if (p.rule_verdicts) key.append(" rules ").append(std::to_string(reinterpret_cast<uintptr_t>(p.rule_verdicts.get())));
  return key;
}

}  // namespace

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
        job->at_rest = true, job->timeline = nullptr, job->sequence = nullptr;
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
      const render::TimelineGeometry g = render::TimelineGeometry::of(job->rect, job->params.names_px);
      render::TimelineRequest request = render::timeline_request(*scene, job->params, g);
      if (job->at_rest) request.decode_per_column = render::kAtRestDecodePerColumn, request.stop = &jobs_waiting_;
      job->timeline = std::make_shared<render::TimelinePicture>(render::build_timeline(*scene, request));
      // Stopped for a request: tried again after it, unless it is for this figure.
      if (job->timeline->stopped) continue;
      forget(job->figure);
      if (!job->at_rest && job->timeline->over_budget && live.empty()) at_rest.push_back(job);
    } else if (job->params.type == FigureParams::Sequence) {
      // Past the arrow budget, bundles once the view rests, as the timeline's.
      const render::SequenceGeometry g = render::SequenceGeometry::of(job->rect);
      render::SequenceRequest request = render::sequence_request(*scene, job->params, g);
      request.bundles = job->at_rest, request.stop = job->at_rest ? &jobs_waiting_ : nullptr;
      job->sequence = std::make_shared<render::SequencePicture>(render::build_sequence(*scene, request));
      if (job->sequence->stopped) continue;
      forget(job->figure);
      if (!job->at_rest && job->sequence->bundles_wait && live.empty()) at_rest.push_back(job);
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
      if (job->sequence) f.sequence = job->sequence;
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
    f.params.follow = marks_.cursor;
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

}  // namespace tinescope::app
