// The viewer's input: mouse gestures and keys on timelines and scopes
// (zoom, pan, select, cursor, bookmarks), what is under the mouse, the
// tooltip and the details panel of the selected interval.
#include <epoxy/gl.h>  // before GLFW, which then includes no GL header of its own
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

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
    else if (f.params.type == FigureParams::Sequence)
      handle_sequence_input(f, i);
    else
      handle_scope_input(f);
    if (drag_ == Drag::None) f.params.type == FigureParams::Sequence ? sequence_tooltip(f) : tooltip(f);
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
    select(f, hit(f, m.x, m.y));
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

// The sequence diagram: time runs down. The wheel zooms about the time
// under the mouse, a drag moves through time, a right (or shift) drag
// selects, a click puts the cursor there and selects the message under it.
void Viewer::handle_sequence_input(Figure& f, size_t index) {
  ImGuiIO& io = ImGui::GetIO();
  const ImVec2 m = io.MousePos;
  const render::SequenceGeometry g = f.qg();
  if (f.sequence && drag_ == Drag::None && g.header.contains(m.x, m.y) && ImGui::IsMouseClicked(0)) {
    // A lifeline's name folds its process into one lifeline, or unfolds it.
    const int i = lifeline_at(f, m.x);
    if (i < 0) return;
    const std::string group = f.sequence->lifelines[size_t(i)].group;
    auto it = std::find(f.params.collapsed.begin(), f.params.collapsed.end(), group);
    if (it == f.params.collapsed.end()) f.params.collapsed.push_back(group);
    else f.params.collapsed.erase(it);
    return;
  }
  if (!f.sequence || (!g.plot.contains(m.x, m.y) && drag_ == Drag::None)) return;
  const render::SequencePicture& p = *f.sequence;
  auto time_at = [&](float y) { return p.time(std::clamp(y - g.plot.y, 0.f, g.plot.h)); };
  if (drag_ == Drag::None) {
    if (io.MouseWheel != 0) zoom_about(std::pow(0.8, io.MouseWheel), time_at(m.y));
    if (ImGui::IsMouseClicked(0) || ImGui::IsMouseClicked(1)) {
      drag_ = ImGui::IsMouseClicked(1) || io.KeyShift ? Drag::Select : Drag::SequencePan;
      drag_figure_ = index;
      drag_x_ = m.x, drag_y_ = m.y;
      drag_t0_ = t0_, drag_t1_ = t1_;
      drag_anchor_ = time_at(m.y);
      drag_moved_ = false;
    }
    return;
  }
  drag_moved_ |= std::fabs(m.x - drag_x_) > 2 || std::fabs(m.y - drag_y_) > 2;
  if (drag_ == Drag::SequencePan && drag_moved_) {
    if (play_ == Play::Live) pause();
    // By the window's time per pixel (in event order too: a steady drag).
    const double ns_per_px = double(drag_t1_ - drag_t0_) / std::max(1.f, g.plot.h);
    const int64_t dt = int64_t(std::llround((m.y - drag_y_) * ns_per_px));
    set_window(drag_t0_ - dt, drag_t1_ - dt);
  }
  if (drag_ == Drag::Select && drag_moved_) {
    const int64_t t = time_at(m.y);
    marks_.sel0 = std::min(t, drag_anchor_), marks_.sel1 = std::max(t, drag_anchor_);
  }
  if (ImGui::IsMouseDown(0) || ImGui::IsMouseDown(1)) return;
  if (!drag_moved_) {
    marks_.cursor = drag_anchor_;
    Hit h;
    h.arrow = render::sequence_arrow_at(p, m.x - g.plot.x, m.y - g.plot.y);
    select(f, h);
  }
  drag_ = Drag::None;
}

int Viewer::lifeline_at(const Figure& f, float x) const {
  const render::SequenceGeometry g = f.qg();
  const auto& lines = f.sequence->lifelines;
  const float spacing = g.plot.w / float(std::max<size_t>(1, lines.size()));
  for (size_t i = 0; i < lines.size(); ++i)
    if (std::fabs(x - g.plot.x - lines[i].x) <= spacing / 2) return int(i);
  return -1;
}

void Viewer::sequence_tooltip(const Figure& f) {
  const ImVec2 m = ImGui::GetIO().MousePos;
  if (!f.sequence) return;
  const render::SequenceGeometry g = f.qg();
  const render::SequencePicture& p = *f.sequence;
  const render::Scene& scene = f.scene ? *f.scene : *scene_;
  if (g.header.contains(m.x, m.y)) {  // a lifeline's name whole, with its process
    const int i = lifeline_at(f, m.x);
    if (i < 0) return;
    const render::SequencePicture::Lifeline& l = p.lifelines[size_t(i)];
    ImGui::BeginTooltip();
    if (l.lane < 0) {
      ImGui::Text("%s: %u lanes in one lifeline", l.label.c_str(), l.lanes);
      ImGui::TextDisabled("click to unfold them");
    } else {
      const render::Lane& lane = scene.lanes()[uint32_t(l.lane)];
      if (l.queue) ImGui::Text("queue %s, received by %s", l.label.c_str(), lane.name.c_str());
      else ImGui::Text("%s", lane.name.c_str());
      ImGui::TextDisabled("%s%stid %llu", lane.group.c_str(), lane.group.empty() ? "" : ", ", (unsigned long long)lane.tid);
      ImGui::TextDisabled("click to fold its process into one lifeline");
    }
    ImGui::EndTooltip();
    return;
  }
  if (!g.plot.contains(m.x, m.y)) return;
  const render::Arrow* a = render::sequence_arrow_at(p, m.x - g.plot.x, m.y - g.plot.y);
  if (!a) return;
  const render::Source& src = scene.sources()[a->source];
  const render::TimeUnit unit = scene.time_unit();
  ImGui::BeginTooltip();
  ImGui::Text("message %llu on %s, %u bytes", (unsigned long long)a->flow.id,
              src.catalog->channel_label(a->flow.channel).c_str(), a->flow.size);
  if (a->orphan != 2) ImGui::Text("sent     %s", render::format_time(a->send - scene.first_ns(), 1, unit).c_str());
  if (a->orphan != 1) ImGui::Text("received %s", render::format_time(a->recv - scene.first_ns(), 1, unit).c_str());
  if (a->orphan == 0) ImGui::Text("latency  %s", render::format_duration(a->recv - a->send, unit).c_str());
  ImGui::TextDisabled(a->orphan == 1 ? "never received" : a->orphan == 2 ? "never sent" : "click for its fields and chain");
  ImGui::EndTooltip();
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
  // A message's arrow within 3 pixels of the mouse (a thin line: one aimed
  // at is meant), else the interval there.
  float best = 3 * 3;
  for (const render::Arrow& a : p.arrows) {
    if (a.orphan == 3) continue;  // a clock sync message: no message of the flow table to select
    const float px = h.column * scale, py = ry;  // pixels
    const float x0 = a.x0 * scale, x1 = a.x1 * scale, dx = x1 - x0, dy = a.y1 - a.y0;
    const float len2 = dx * dx + dy * dy;
    const float t = len2 > 0 ? std::clamp(((px - x0) * dx + (py - a.y0) * dy) / len2, 0.f, 1.f) : 0.f;
    const float ex = x0 + t * dx - px, ey = a.y0 + t * dy - py;
    if (ex * ex + ey * ey <= best) best = ex * ex + ey * ey, h.arrow = &a;
  }
  if (h.row >= 0 && !h.arrow)
    for (const render::Box& b : p.boxes)
      if (b.row == uint32_t(h.row) && h.column >= b.x0 && h.column <= b.x1) {
        h.box = &b;
        break;
      }
  return h;
}

bool Viewer::box_events(const render::Scene& scene, const render::Lane& lane, const render::Row& row,
                        const render::Box& b, std::vector<analysis::EventView>& out, std::string& why) {
  // From the trace: the box's times went to nanoseconds, so its events are
  // looked for within a few ticks of them.
  const render::Source& src = scene.sources()[b.source];
  const trace::ClockMap& clock = src.catalog->clock;
  index::Item it;
  it.kind = row.kind == render::Row::Cpu ? index::StreamKind::Sched : index::StreamKind::Interval;
  it.name = b.name, it.depth = b.depth, it.truncated = b.truncated || b.end == INT64_MAX;
  it.start = clock.to_ticks(b.start);
  it.end = b.end == INT64_MAX ? it.start : clock.to_ticks(b.end);
  const uint64_t slack = uint64_t(std::ceil(clock.ticks_per_ns())) + 2;
  if (row.kind == render::Row::Lock) {
    // A lock's hold: its acquire and release, in the thread that held it.
    it.kind = index::StreamKind::Hold;
    return analysis::item_events(*src.index, b.depth, it, out, why, slack);
  }
  if (row.kind == render::Row::Task) {
    // A task's segment: its events are in the lane that ran it on its CPU.
    it.kind = index::StreamKind::Sched;
    for (const render::Lane& l : scene.lanes())
      if (l.source == lane.source && !l.cpus.empty() && analysis::item_events(*src.index, l.feedlet, it, out, why, slack) &&
          !out.empty())
        return true;
    return why.empty();
  }
  return analysis::item_events(*src.index, lane.feedlet, it, out, why, slack);
}

const analysis::JobMark* Viewer::job_of(const render::Scene& scene, const render::Box& b) {
  const render::Source& src = scene.sources()[b.source];
  // Its middle: the box's ends went to ns and back, a tick either way.
  const int64_t mid = b.end == INT64_MAX ? b.start : b.start + (b.end - b.start) / 2;
  return src.jobs ? src.jobs->job_at(b.name, src.catalog->clock.to_ticks(mid)) : nullptr;
}

std::vector<std::string> Viewer::job_lines(const render::Scene& scene, uint32_t source, const analysis::JobMark& j) {
  const render::Source& src = scene.sources()[source];
  const trace::ClockMap& clock = src.catalog->clock;
  const render::TimeUnit unit = scene.time_unit();
  auto t = [&](uint64_t ticks) { return render::format_time(clock.to_ns(ticks) - scene.first_ns(), 1, unit); };
  auto d = [&](uint64_t a, uint64_t z) { return render::format_duration(clock.to_ns(z) - clock.to_ns(a), unit); };
  auto ticks = [&](uint64_t n) { return render::format_duration(clock.to_ns(j.start + n) - clock.to_ns(j.start), unit); };
  auto cpu = [&](uint32_t c) { return c == analysis::kNoCpu ? std::string("?") : std::to_string(c); };
  std::vector<std::string> out;
  out.push_back("job      " + std::to_string(j.id) + " of " + std::string(src.catalog->string(j.task)));
  out.push_back(std::string(j.arrived ? "arrived  " : "ran from ") + t(j.start) + (j.arrived ? "" : "   (no arrival recorded)"));
  if (j.first_start != analysis::kNoTime)
    out.push_back("started  " + t(j.first_start) + " on cpu " + cpu(j.first_cpu) + "   (waited " + d(j.start, j.first_start) + ")");
  if (j.completed) out.push_back("done     " + t(j.end) + " on cpu " + cpu(j.last_cpu));
  else out.push_back("not completed in the trace (last seen " + t(j.end) + ")");
  if (j.completed && j.arrived) out.push_back("response " + d(j.start, j.end));
  out.push_back("ran      " + ticks(j.executed) + "   ready, not running " + ticks(j.waiting) + "   blocked " + ticks(j.blocked));
  out.push_back("preempted " + std::to_string(j.preemptions) + "x   blocked " + std::to_string(j.blocks) + "x   migrated " +
                std::to_string(j.migrations) + "x");
  if (j.deadline != analysis::kNoTime) {
    out.push_back("deadline " + t(j.deadline) + (j.missed ? "   MISSED by " + d(j.deadline, j.end) : "   met"));
  }
  if (j.cut) out.push_back("(a segment's end was not recorded: cut where the next began)");
  return out;
}

void Viewer::job_tooltip(const render::Scene& scene, const render::Box& b) {
  const analysis::JobMark* j = job_of(scene, b);
  if (!j) return;
  for (const std::string& l : job_lines(scene, b.source, *j)) {
    if (l.find("MISSED") != std::string::npos) ImGui::TextColored(ImVec4(1, 0.3f, 0.3f, 1), "%s", l.c_str());
    else ImGui::TextUnformatted(l.c_str());
  }
}

void Viewer::select(const Figure& f, const Hit& h) {
  const render::Scene& scene = f.scene ? *f.scene : *scene_;
  selected_events_.clear(), selected_error_.clear(), selected_running_.clear(), selected_job_.clear();
  selected_lock_ = false;
  has_selected_ = selected_message_ = false;
  selected_chain_ = {}, marks_.chain.clear();
  if (h.box) {
    const render::Lane& lane = scene.lanes()[f.timeline->request.layout.rows[h.row].lane];
    const render::Row& row = f.timeline->request.layout.rows[h.row];
    has_selected_ = true, selected_ = *h.box;
    selected_thread_ = lane.name, selected_process_ = lane.group;
    selected_name_ = scene.string(h.box->source, h.box->name);
    selected_lock_ = row.kind == render::Row::Lock;  // (else false, from the top)
    if (selected_lock_) {  // a hold: the thread that held the lock
      selected_name_ += "  (held)";
      selected_thread_ = scene.sources()[h.box->source].catalog->thread_name(h.box->depth);
    }
    if (!box_events(scene, lane, row, *h.box, selected_events_, selected_error_) && selected_error_.empty())
      selected_error_ = "its events could not be read";
    if (row.kind == render::Row::Task || row.kind == render::Row::Cpu)
      if (const analysis::JobMark* j = job_of(scene, *h.box)) {
        selected_job_ = job_lines(scene, h.box->source, *j);
        const trace::ClockMap& clock = scene.sources()[h.box->source].catalog->clock;
        selected_job_span_[0] = clock.to_ns(j->start), selected_job_span_[1] = clock.to_ns(j->end);
      }
  } else if (h.arrow) {
    const render::Source& src = scene.sources()[h.arrow->source];
    has_selected_ = selected_message_ = true;
    selected_source_ = h.arrow->source, selected_flow_ = h.arrow->flow;
    selected_process_.clear();
    auto labels = src.catalog->thread_labels();
    const index::Flow& fl = selected_flow_;
    selected_name_ = "message " + std::to_string(fl.id);
    selected_thread_ = (fl.flags & index::kFlowSent ? labels[fl.src] : "(never sent)") + " -> " +
                       (fl.flags & index::kFlowReceived ? labels[fl.dst] : "(never received)");
    analysis::message_events(*src.index, fl, selected_events_, selected_error_);
    if (fl.flags & index::kFlowReceived) {
      const auto open = src.index->open_at(fl.dst, fl.recv_ts);
      if (!open.empty()) selected_running_ = std::string(src.catalog->string(open.back().name));
    }
    // Its causes and effects, hop by hop: highlighted in every timeline.
    selected_chain_ = analysis::message_chain(*src.index, fl, kMaxChainHops);
    for (const analysis::ChainHop& hop : selected_chain_.hops) marks_.chain.insert({h.arrow->source, hop.flow.id});
  } else if (h.row >= 0 && (f.timeline->request.layout.rows[h.row].kind == render::Row::Instant ||
                             f.timeline->request.layout.rows[h.row].kind == render::Row::Counter)) {
    // An instant or a counter's sample: the one nearest the click, within 3 pixels.
    const render::Row& row = f.timeline->request.layout.rows[h.row];
    const render::Lane& lane = scene.lanes()[row.lane];
    const render::Source& src = scene.sources()[lane.source];
    const trace::ClockMap& clock = src.catalog->clock;
    const render::TimeAxis& axis = f.timeline->axis;  // (the picture's: h.column is its column)
    const uint64_t t0 = clock.to_ticks(axis.time(h.column - 3)), t1 = clock.to_ticks(axis.time(h.column + 3)) + 1;
    const uint64_t mid = clock.to_ticks(axis.time(h.column));
    index::Item best;
    uint64_t best_off = UINT64_MAX;
    auto consider = [&](const index::Item& it) {
      const uint64_t off = it.start > mid ? it.start - mid : mid - it.start;
      if (off < best_off) best = it, best_off = off;
    };
    if (row.kind == render::Row::Counter) {
      for (const index::Item& it : src.index->items(lane.counters[row.index], t0, t1)) consider(it);
    } else {
      src.index->lane_items(lane.feedlet, t0, t1, [&](const index::Item& it) {
        if (it.kind == index::StreamKind::Instant) consider(it);
      });
    }
    if (best_off != UINT64_MAX) {
      has_selected_ = true;
      selected_ = render::Box{uint32_t(h.row), lane.source, best.name, 0, 0, clock.to_ns(best.start), clock.to_ns(best.end), 0,
                              false};
      selected_thread_ = lane.name, selected_process_ = lane.group;
      selected_name_ = std::string(src.catalog->string(best.name)) +
                       (row.kind == render::Row::Counter ? "  (a sample)" : "  (an instant)");
      if (!analysis::item_events(*src.index, lane.feedlet, best, selected_events_, selected_error_) &&
          selected_error_.empty())
        selected_error_ = "its events could not be read";
    }
  }
}

void Viewer::tooltip(Figure& f) {
  const ImVec2 m = ImGui::GetIO().MousePos;
  if (f.params.type != FigureParams::Timeline || !f.timeline) return;
  const render::TimelineGeometry g = f.tg();
  const render::TimelinePicture& p = *f.timeline;
  if (g.names.contains(m.x, m.y)) {
    // A lane's name whole (the column cuts a long one), with its process and
    // thread: over the names (from where they are written), not the margin
    // left of them, where a pointer can rest without covering the plot.
    if (m.x < g.names.x + 12) return;
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
    if (row.kind == render::Row::Interval) pointed_ = scene.string(b->source, b->name);  // activity markers
    ImGui::BeginTooltip();
    ImGui::Text("%s", std::string(scene.string(b->source, b->name)).c_str());
    const render::TimeUnit unit = scene.time_unit();
    ImGui::Text("start    %s", render::format_time(b->start - scene.first_ns(), 1, unit).c_str());
    if (b->end != INT64_MAX) ImGui::Text("duration %s", render::format_duration(b->end - b->start, unit).c_str());
    else ImGui::Text("duration (still open)");
    if (b->truncated) ImGui::TextDisabled("its end was not recorded: cut where events were lost, or never ended");
    if (row.kind == render::Row::Lock) {
      const render::Source& src = scene.sources()[b->source];
      ImGui::Text("held by  %s", std::string(src.catalog->thread_name(b->depth)).c_str());
      // The lock's violations under the mouse: an inversion it lies in, a
      // misuse within 3 pixels.
      const trace::ClockMap& clock = src.catalog->clock;
      int shown = 0;
      src.each_misuse(clock.to_ticks(p.axis.time(col - 3)), clock.to_ticks(p.axis.time(col + 3)) + 1,
                      [&](const analysis::SchedViolation& v) {
                        if (v.lock != b->name) return true;
                        ImGui::TextColored(ImVec4(1.0f, 0.35f, 0.3f, 1.0f), "%s: %s", analysis::kind_name(v.kind), v.why.c_str());
                        return ++shown < 3;
                      });
    } else if (row.kind == render::Row::Cpu) ImGui::Text("cpu      %s   (%s)", lane.cpu_names[row.index].c_str(), lane.name.c_str());
    else if (row.kind == render::Row::Task) job_tooltip(scene, *b);
    else ImGui::Text("thread   %s   depth %u", lane.label().c_str(), b->depth);
    // Its first few arguments (read once while the mouse stays on it).
    const auto key = std::make_tuple(b->source, b->name, b->start, b->end, row.lane);
    if (key != hover_key_) {
      hover_key_ = key;
      hover_events_.clear();
      std::string why;
      box_events(scene, lane, row, *b, hover_events_, why);
    }
    int shown = 0;
    for (const analysis::EventView& v : hover_events_)
      for (const analysis::FieldView& a : v.args)
        if (shown++ < 4) ImGui::Text("%-8s %s", a.name.c_str(), a.text.substr(0, 60).c_str());
    if (shown > 4) ImGui::TextDisabled("... %d more: click for every field", shown - 4);
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
    if (row.kind == render::Row::Interval) pointed_ = scene.string(lane.source, p.top_name[cell]);
    ImGui::Text("%u x %s ...", p.count[cell], std::string(scene.string(lane.source, p.top_name[cell])).c_str());
    ImGui::Text("at %s", render::format_time(f.axis.time(m.x - g.plot.x) - scene.first_ns(), 1, scene.time_unit()).c_str());
    ImGui::TextDisabled("zoom in for each one");
  } else {
    ImGui::Text("%s", lane.name.c_str());
  }
  ImGui::EndTooltip();
}

// One event's fields in the details panel: its place in the trace, then
// every field and argument by its schema name and type; bytes as hex and
// text side by side, scrolling where they are long.
void Viewer::event_fields(const analysis::EventView& v) {
  const index::EventData& d = v.data;
  auto line = [&](const std::string& text) {
    details_lines_.push_back(text);
    ImGui::TextUnformatted(text.c_str());
  };
  const std::string head = v.type_name + "   event " + std::to_string(d.feedlet) + ":" + std::to_string(d.position);
  if (!ImGui::TreeNodeEx(head.c_str(), ImGuiTreeNodeFlags_DefaultOpen)) return;
  details_lines_.push_back(head);
  ImGui::TextDisabled("chunk %llu at byte %llu, +%u in its payload", (unsigned long long)d.chunk_sequence,
                      (unsigned long long)d.chunk_offset, d.payload_offset);
  for (const auto* list : {&v.fields, &v.args}) {
    for (const analysis::FieldView& f : *list) {
      const bool binary = (f.type == 'b' || f.type == '?') && (!analysis::is_text(f.bytes) || f.name == "payload");
      line(f.name + " (" + std::string(1, f.type) + ")  " + (binary ? std::to_string(f.bytes.size()) + " bytes" : f.text));
      if (binary && !f.bytes.empty()) {
        const std::string dump = analysis::hex_ascii(f.bytes);
        details_lines_.push_back(dump);
        const float rows = float(std::min<size_t>(8, (f.bytes.size() + 15) / 16));
        ImGui::BeginChild(("##bytes" + head + f.name).c_str(), {0, rows * ImGui::GetTextLineHeight() + 8}, true,
                          ImGuiWindowFlags_HorizontalScrollbar);
        ImGui::TextUnformatted(dump.c_str());
        ImGui::EndChild();
      }
    }
    if (list == &v.fields && !v.args.empty()) ImGui::TextDisabled("arguments");
  }
  ImGui::TreePop();
}

void Viewer::details() {
  details_lines_.clear();
  if (!has_selected_) return;
  const ImGuiIO& io = ImGui::GetIO();
  const float right = io.DisplaySize.x - (analysis_open_ ? AnalysisPanel::kWidth : 0);
  const float bottom = io.DisplaySize.y - (stream_figure_rect_.w > 0 ? stream_figure_rect_.h : 0);
  ImGui::SetNextWindowPos({right - 450, bottom - 330}, ImGuiCond_Appearing);
  ImGui::SetNextWindowSize({440, 320}, ImGuiCond_Appearing);
  ImGui::Begin("selected", &has_selected_, ImGuiWindowFlags_NoSavedSettings);
  auto line = [&](const std::string& text) {
    details_lines_.push_back(text);
    ImGui::TextUnformatted(text.c_str());
  };
  const render::TimeUnit unit = scene_->time_unit();
  auto at = [&](int64_t ns) { return render::format_time(ns - scene_->first_ns(), 1, unit); };
  line(selected_name_);
  if (selected_message_) {
    const index::Flow& fl = selected_flow_;
    const render::Source& src = scene_->sources()[selected_source_];
    auto ns = [&](uint64_t ticks) { return src.catalog->clock.to_ns(ticks); };
    line("from -> to  " + selected_thread_);
    line("channel  " + src.catalog->channel_label(fl.channel) + "   size " + std::to_string(fl.size) + " bytes");
    if (fl.flags & index::kFlowSent) line("sent     " + at(ns(fl.send_ts)));
    if (fl.flags & index::kFlowReceived) line("received " + at(ns(fl.recv_ts)));
    if (fl.matched()) line("latency  " + render::format_duration(ns(fl.recv_ts) - ns(fl.send_ts), unit));
    if (!selected_running_.empty()) line("running on the receiver: " + selected_running_);
    if (selected_chain_.hops.size() > 1) {
      // The hop table: each queue's wait and the interval that handled it.
      const analysis::MessageChain& c = selected_chain_;
      line("chain    " + std::to_string(c.hops.size()) + " hops" + (c.cut ? " (more: cut)" : "") + ", end to end " +
           render::format_duration(ns(c.last) - ns(c.first), unit));
      auto labels = src.catalog->thread_labels();
      for (const analysis::ChainHop& hop : c.hops) {
        const index::Flow& x = hop.flow;
        std::string row = (hop.level > 0 ? "+" : "") + std::to_string(hop.level) + "  " +
                          (x.flags & index::kFlowSent ? labels[x.src] : "?") + " -> " +
                          (x.flags & index::kFlowReceived ? labels[x.dst] : "(never received)") + "  on " +
                          src.catalog->channel_label(x.channel);
        if (x.matched()) row += "  wait " + render::format_duration(ns(x.recv_ts) - ns(x.send_ts), unit);
        if (hop.has_handler)
          row += "  handled " + render::format_duration(ns(hop.handler.end) - ns(hop.handler.start), unit);
        line(row);
      }
    }
    auto go = [&](int64_t t) {
      const int64_t half = std::max<int64_t>(1000, (t1_ - t0_) / 2);
      set_window(t - half, t + half);
      marks_.cursor = t;
    };
    if (fl.flags & index::kFlowSent) {
      if (ImGui::Button("Go to send")) go(ns(fl.send_ts));
      record_control("go_send");
    }
    if (fl.flags & index::kFlowReceived) {
      if (fl.flags & index::kFlowSent) ImGui::SameLine();
      if (ImGui::Button("Go to receive")) go(ns(fl.recv_ts));
      record_control("go_receive");
    }
  } else {
    const render::Box& b = selected_;
    line("thread  " + selected_thread_ + " (" + selected_process_ + ")");
    line((b.end == b.start ? "at      " : "start   ") + at(b.start));
    if (b.end != INT64_MAX && b.end != b.start) {
      line("end     " + at(b.end) + (b.truncated ? "   (cut: not recorded)" : ""));
      line("length  " + render::format_duration(b.end - b.start, unit) +
           (selected_lock_ ? std::string() : "   depth " + std::to_string(b.depth)));
      if (ImGui::Button("Zoom to it")) {
        const int64_t pad = std::max<int64_t>(2, (b.end - b.start) / 10);
        set_window(b.start - pad, b.end + pad);
      }
      ImGui::SameLine();
      if (ImGui::Button("Select it")) marks_.sel0 = b.start, marks_.sel1 = b.end;
    }
    if (!selected_job_.empty()) {
      // The job this segment is of: arrival to completion, every segment.
      ImGui::Separator();
      for (const std::string& l : selected_job_) line(l);
      if (ImGui::Button("Select the job")) marks_.sel0 = selected_job_span_[0], marks_.sel1 = selected_job_span_[1];
      record_control("select_job");
    }
  }
  ImGui::Separator();
  if (!selected_error_.empty()) line("its events could not be read: " + selected_error_);
  for (const analysis::EventView& v : selected_events_) event_fields(v);
  if (marks_.cursor != render::Marks::kNone) {
    std::vector<std::string> held;
    in_flight_lines(held);
    if (ImGui::TreeNodeEx("in flight at the cursor", ImGuiTreeNodeFlags_DefaultOpen)) {
      for (const std::string& l : held) line(l);
      ImGui::TextDisabled("(sent, and received after the cursor; a message never received is not listed)");
      ImGui::TreePop();
    }
    record_control("in_flight");
  }
  ImGui::End();
}

void Viewer::in_flight_lines(std::vector<std::string>& out) {
  // (Read again when the cursor moves, or a live trace grows.)
  const int64_t cursor = marks_.cursor;
  uint64_t events = 0;
  for (const render::Source& src : scene_->sources()) events += src.index->events();
  if (cursor != in_flight_cursor_ || events != in_flight_events_) {
    in_flight_cursor_ = cursor, in_flight_events_ = events;
    in_flight_.clear();
    const render::TimeUnit unit = scene_->time_unit();
    for (const render::Source& src : scene_->sources()) {
      const trace::ClockMap& clock = src.catalog->clock;
      const uint64_t t = clock.to_ticks(cursor);
      // Sent at or before the cursor, received after it: by channel, oldest first.
      // (flows() with a limit gives some of them past it: then more are
      // in flight than are counted here.)
      std::map<uint64_t, std::vector<index::Flow>> by_channel;
      const std::vector<index::Flow> flows = src.index->flows(t, t, kMaxInFlight, true);
      const bool more = flows.size() > kMaxInFlight;
      for (const index::Flow& f : flows)
        if ((f.flags & index::kFlowSent) && (f.flags & index::kFlowReceived) && f.send_ts <= t && f.recv_ts > t)
          by_channel[f.channel].push_back(f);
      const std::string trace = scene_->sources().size() > 1 ? src.path + ": " : "";
      if (by_channel.empty()) in_flight_.push_back(trace + "no message in flight");
      for (auto& [channel, flows] : by_channel) {
        std::sort(flows.begin(), flows.end(), [](const index::Flow& a, const index::Flow& b) { return a.send_ts < b.send_ts; });
        std::string ids;
        for (size_t k = 0; k < flows.size() && k < 8; ++k) ids += (k ? ", " : "") + std::to_string(flows[k].id);
        if (flows.size() > 8) ids += ", ...";
        in_flight_.push_back(trace + "channel " + src.catalog->channel_label(channel) + ": " + std::to_string(flows.size()) +
                             (flows.size() == 1 ? " message (" : " messages (") + ids + "), the oldest sent " +
                             render::format_duration(cursor - clock.to_ns(flows[0].send_ts), unit) + " before");
      }
      if (more)
        in_flight_.push_back(trace + "(more than " + std::to_string(kMaxInFlight) +
                             " messages around the cursor: some of those in flight are not counted)");
    }
  }
  out = in_flight_;
}

}  // namespace tinescope::app
