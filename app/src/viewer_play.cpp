// The viewer's TiVo controls: play, pause, reverse, speed, step, bookmarks,
// and following live sources ("now" advanced by the wall clock between
// their captures).
#include <epoxy/gl.h>  // before GLFW, which then includes no GL header of its own
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "tinescope/app/viewer.hpp"
#include "viewer_state.hpp"

namespace tinescope::app {

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
  int64_t to, w0, w1;
  if (!render::bookmark_window(*scene_, marks_, t0_, t1_, direction, to, w0, w1)) return;
  play_ = Play::Paused;
  t0_ = w0, t1_ = w1;
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

}  // namespace tinescope::app
