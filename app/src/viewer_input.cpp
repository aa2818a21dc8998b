// The viewer's input: mouse gestures and keys on timelines and scopes
// (zoom, pan, select, cursor, bookmarks), what is under the mouse, the
// tooltip and the details panel of the selected interval.
#include <epoxy/gl.h>  // before GLFW, which then includes no GL header of its own
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tinescope/app/viewer.hpp"
#include "tinescope/render/overlay.hpp"
#include "viewer_state.hpp"

namespace tinescope::app {

using render::FigureParams;

void Viewer::on_key(GLFWwindow* window, int key, int, int action, int) {
  auto* v = static_cast<Viewer*>(glfwGetWindowUserPointer(window));
  if (v && (action == GLFW_PRESS || action == GLFW_REPEAT)) v->keys_.push_back(key);
}

void Viewer::apply_key(int key, double at) {
  const double span = double(t1_ - t0_);
  switch (key) {
    case GLFW_KEY_W: zoom(0.8, at); break;
    case GLFW_KEY_S: zoom(1.25, at); break;
    case GLFW_KEY_A:
    case GLFW_KEY_D: {
      const int64_t dt = int64_t(span * 0.1) * (key == GLFW_KEY_A ? -1 : 1);
      set_window(t0_ + dt, t1_ + dt);
      if (play_ == Play::Live) pause();  // moving through time by hand leaves live (zooming does not)
      break;
    }
    case GLFW_KEY_F: fit(); break;
    case GLFW_KEY_Z:
      if (marks_.has_selection()) set_window(marks_.sel0, marks_.sel1);
      break;
    case GLFW_KEY_L: theta_us_ = 0; break;
    case GLFW_KEY_ESCAPE: marks_.sel0 = marks_.sel1 = render::Marks::kNone, has_selected_ = false; break;
    case GLFW_KEY_B:
      if (marks_.cursor != render::Marks::kNone) {  // a time, not a message there
        marks_.bookmarks.push_back(marks_.cursor);
        marks_.bookmark_messages.erase(marks_.cursor);
      }
      break;
    case GLFW_KEY_SPACE: play_ == Play::Paused ? play(false) : pause(); break;
    case GLFW_KEY_R: play(true); break;
    case GLFW_KEY_END: go_live(); break;
    case GLFW_KEY_COMMA: step(-1); break;
    case GLFW_KEY_PERIOD: step(+1); break;
    case GLFW_KEY_LEFT_BRACKET: set_speed(speed_ / 2); break;
    case GLFW_KEY_RIGHT_BRACKET: set_speed(speed_ * 2); break;
    case GLFW_KEY_N: jump_bookmark(+1); break;
    case GLFW_KEY_P: jump_bookmark(-1); break;
    case GLFW_KEY_T: analysis_open_ = !analysis_open_; break;
    default: break;
  }
}

void Viewer::handle_input() {
  ImGuiIO& io = ImGui::GetIO();
  const ImVec2 m = io.MousePos;
  // Every key pressed since the last frame, in order (typed into a text
  // field: ImGui's, not the view's).
  std::vector<int> keys;
  keys.swap(keys_);
  if (!io.WantCaptureKeyboard) {
    Figure* hovered = nullptr;
    for (auto& f : figures_)
      if (f->params.type == FigureParams::Timeline && f->plot().contains(m.x, m.y)) hovered = f.get();
    const double at = hovered ? m.x - hovered->plot().x : (figures_.empty() ? 0 : figures_[0]->axis.width() / 2);
    for (int key : keys) apply_key(key, at);
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
  // The border of the names' column: dragged, it widens or narrows it.
  const bool on_border = std::fabs(m.x - g.plot.x) <= 3 && m.y >= g.figure.y && m.y < g.figure.y + g.figure.h;
  if (on_border || (drag_ == Drag::Names && drag_figure_ == index)) ImGui::SetMouseCursor(ImGuiMouseCursor_ResizeEW);
  if (drag_ == Drag::None && on_border && ImGui::IsMouseClicked(0)) {
    drag_ = Drag::Names, drag_figure_ = index;
    return;
  }
  if (drag_ == Drag::Names) {
    if (drag_figure_ == index) f.params.names_px = m.x - g.figure.x;
    if (!ImGui::IsMouseDown(0)) drag_ = Drag::None;
    return;
  }
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
  const render::TimelinePicture& p = *f.timeline;
  if (g.names.contains(m.x, m.y)) {
    // A lane's name whole (the column cuts a long one), with its process and thread.
    const render::Scene& scene = f.scene ? *f.scene : *scene_;
    const render::Layout::LaneRows* lr = p.request.layout.lane_at_y(m.y - g.plot.y + f.params.scroll_y);
    if (!lr) return;
    const render::Lane& lane = scene.lanes()[lr->lane];
    ImGui::BeginTooltip();
    ImGui::Text("%s", lane.name.c_str());
    ImGui::TextDisabled("%s%stid %llu", lane.group.c_str(), lane.group.empty() ? "" : ", ", (unsigned long long)lane.tid);
    ImGui::TextDisabled("drag the column's border to widen it");
    ImGui::EndTooltip();
    return;
  }
  if (!g.plot.contains(m.x, m.y)) return;
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
    const render::TimeUnit unit = scene.time_unit();
    ImGui::Text("start    %s", render::format_time(b->start - scene.first_ns(), 1, unit).c_str());
    if (b->end != INT64_MAX) ImGui::Text("duration %s", render::format_duration(b->end - b->start, unit).c_str());
    else ImGui::Text("duration (still open)");
    if (b->truncated) ImGui::TextDisabled("its end was not recorded: cut where events were lost, or never ended");
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
    ImGui::Text("at %s", render::format_time(f.axis.time(m.x - g.plot.x) - scene.first_ns(), 1, scene.time_unit()).c_str());
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
  const render::TimeUnit unit = scene_->time_unit();
  ImGui::Text("start   %s", render::format_time(b.start - scene_->first_ns(), 1, unit).c_str());
  if (b.end != INT64_MAX) {
    ImGui::Text("end     %s%s", render::format_time(b.end - scene_->first_ns(), 1, unit).c_str(),
                b.truncated ? "   (cut: not recorded)" : "");
    ImGui::Text("length  %s   depth %u", render::format_duration(b.end - b.start, unit).c_str(), b.depth);
    if (ImGui::Button("Zoom to it")) {
      const int64_t pad = std::max<int64_t>(2, (b.end - b.start) / 10);
      set_window(b.start - pad, b.end + pad);
    }
    ImGui::SameLine();
    if (ImGui::Button("Select it")) marks_.sel0 = b.start, marks_.sel1 = b.end;
  }
  ImGui::End();
}

}  // namespace tinescope::app
