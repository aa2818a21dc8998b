// The sequence diagram: which messages (window_messages.hpp, as the
// timeline's arrows), where each end goes (real time, or a step an event),
// and its drawing into an ImGui draw list.
#include "tinescope/render/sequence.hpp"

#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "tinescope/analysis/message_report.hpp"

#include "tinescope/render/overlay.hpp"
#include "window_messages.hpp"

namespace tinescope::render {

bool parse_spacing(const std::string& text, Spacing& out) {
  if (text == "time") return out = Spacing::Time, true;
  if (text == "order") return out = Spacing::Order, true;
  return false;
}

const char* spacing_name(Spacing s) { return s == Spacing::Order ? "order" : "time"; }

float SequencePicture::y(int64_t t) const {
  const SequenceRequest& q = request;
  if (spacing == Spacing::Order && !steps.empty()) {
    if (t < q.t0) return 0;
    if (t > q.t1) return q.height;
    const size_t k = size_t(std::lower_bound(steps.begin(), steps.end(), t) - steps.begin());
    return (float(k) + (k < steps.size() && steps[k] == t ? 1.f : 0.5f)) * step_px;
  }
  return float(double(t - q.t0) / double(std::max<int64_t>(1, q.t1 - q.t0)) * q.height);
}

int64_t SequencePicture::time(float at) const {
  const SequenceRequest& q = request;
  if (spacing == Spacing::Order && !steps.empty()) {
    const long k = std::lround(at / step_px - 1);
    return steps[size_t(std::clamp<long>(k, 0, long(steps.size()) - 1))];
  }
  return q.t0 + int64_t(std::llround(double(at) / std::max(1.f, q.height) * double(q.t1 - q.t0)));
}

namespace {

// A message before it is placed: its lifelines (or -1), its ends' times
// (on the scene's clock) and what it is.
struct Message {
  int from = -1, to = -1;
  int64_t send = 0, recv = 0;
  uint8_t orphan = 0;  // as Arrow::orphan
  uint32_t source = 0;
  index::Flow flow;
  uint32_t colour = 0;
  int queue = -1;  // a message never received: the lifeline its channel's messages reach
};

// A message's end in event order.
struct End {
  int64_t t;
  int lifeline;
  uint8_t recv;
  uint32_t message;
};

// Ends in time order. At one time, a message's send comes before its
// receive, and a receive before the sends on its lifeline (a handler takes
// a message, then sends what it causes); else receives first, then left to
// right. Where those ask the impossible (two lifelines sending to each
// other in one ns), a receive still never comes before its own send.
void order_ends(std::vector<End>& ends) {
  auto base = [](const End& a, const End& b) {
    return std::tie(a.t, b.recv, a.lifeline, a.message) < std::tie(b.t, a.recv, b.lifeline, b.message);
  };
  std::sort(ends.begin(), ends.end(), base);
  std::vector<End> group, out;
  for (size_t k = 0; k < ends.size();) {
    size_t stop = k;
    while (stop < ends.size() && ends[stop].t == ends[k].t) ++stop;
    if (stop - k > 64) {
      // (Many ends in one tick, as an import's microseconds give: only a
      // receive after its own send, each at worst just after it.)
      std::map<uint32_t, size_t> send_at;
      for (size_t j = k; j < stop; ++j)
        if (!ends[j].recv) send_at[ends[j].message] = j;
      std::vector<std::pair<double, End>> ranked;
      for (size_t j = k; j < stop; ++j) {
        auto it = ends[j].recv ? send_at.find(ends[j].message) : send_at.end();
        ranked.push_back({it != send_at.end() && it->second > j ? double(it->second) + 0.5 : double(j), ends[j]});
      }
      std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (size_t j = k; j < stop; ++j) ends[j] = ranked[j - k].second;
    } else if (stop - k > 1) {
      // The first (in base order) whose conditions hold; failing that, the
      // first whose own send is placed (a send, or such a receive: one always is).
      group.assign(ends.begin() + long(k), ends.begin() + long(stop));
      out.clear();
      std::vector<bool> placed(group.size(), false);
      auto send_placed = [&](const End& r) {  // (its send is in the group and not placed yet: false)
        for (size_t j = 0; j < group.size(); ++j)
          if (!placed[j] && !group[j].recv && group[j].message == r.message) return false;
        return true;
      };
      auto receives_first = [&](const End& sd) {  // no receive on its lifeline waits
        for (size_t j = 0; j < group.size(); ++j)
          if (!placed[j] && group[j].recv && group[j].lifeline == sd.lifeline) return false;
        return true;
      };
      for (size_t n = 0; n < group.size(); ++n) {
        size_t pick = group.size(), fallback = group.size();
        for (size_t j = 0; j < group.size() && pick == group.size(); ++j) {
          if (placed[j]) continue;
          const bool own = !group[j].recv || send_placed(group[j]);
          if (own && fallback == group.size()) fallback = j;
          if (own && (group[j].recv || receives_first(group[j]))) pick = j;
        }
        if (pick == group.size()) pick = fallback;
        placed[pick] = true;
        out.push_back(group[pick]);
      }
      std::copy(out.begin(), out.end(), ends.begin() + long(k));
    }
    k = stop;
  }
}

}  // namespace

bool parse_lifelines(const std::string& text, Lifelines& out) {
  if (text == "threads") return out = Lifelines::Threads, true;
  if (text == "queues") return out = Lifelines::Queues, true;
  return false;
}

const char* lifelines_name(Lifelines l) { return l == Lifelines::Queues ? "queues" : "threads"; }

QueueMap queue_map(const Scene& scene) {
  QueueMap out;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> lane_of;  // (source, feedlet) -> scene lane
  for (uint32_t i = 0; i < scene.lanes().size(); ++i) lane_of[{scene.lanes()[i].source, scene.lanes()[i].feedlet}] = i;
  for (uint32_t s = 0; s < scene.sources().size(); ++s) {
    const index::TraceIndex& ix = *scene.sources()[s].index;
    std::map<std::pair<uint64_t, uint32_t>, uint64_t> received;  // (channel, feedlet) -> messages
    analysis::for_each_flow(ix, ix.first_ts(), ix.last_ts(), [&](const index::Flow& f) {
      if (f.flags & index::kFlowReceived) ++received[{f.channel, f.dst}];
    });
    std::map<uint64_t, std::pair<uint64_t, uint32_t>> owner;  // channel -> (most received, feedlet)
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> home;   // feedlet -> (most received, channel)
    for (const auto& [key, n] : received) {  // (in order: ties keep the lower)
      const auto [channel, feedlet] = key;
      if (n > owner[channel].first) owner[channel] = {n, feedlet};
      if (n > home[feedlet].first) home[feedlet] = {n, channel};
    }
    for (const auto& [channel, o] : owner)
      if (auto l = lane_of.find({s, o.second}); l != lane_of.end()) out.queues.push_back({s, channel, l->second});
    for (const auto& [feedlet, h] : home) out.home[{s, feedlet}] = h.second;
  }
  std::stable_sort(out.queues.begin(), out.queues.end(),
                   [](const QueueMap::Queue& a, const QueueMap::Queue& b) { return a.owner < b.owner; });
  return out;
}

namespace {

// The lifelines of a request, and where each end of a message goes.
class LifelineMap {
 public:
  LifelineMap(const Scene& scene, const SequenceRequest& req) {
    const bool by_queue = req.lifelines == Lifelines::Queues && req.queues;
    std::map<uint32_t, std::vector<const QueueMap::Queue*>> owned;  // scene lane -> its queues
    if (by_queue)
      for (const QueueMap::Queue& q : req.queues->queues) owned[q.owner].push_back(&q);
    std::map<std::string, int> folded;  // process -> its lifeline
    for (uint32_t lane : req.lanes) {
      const Lane& l = scene.lanes()[lane];
      shown_.insert({l.source, l.feedlet});
      if (std::find(req.collapsed.begin(), req.collapsed.end(), l.group) != req.collapsed.end()) {
        auto [it, fresh] = folded.try_emplace(l.group, int(lines.size()));
        if (fresh) lines.push_back({0, l.group.empty() ? "(process)" : l.group, l.group, -1, false, 0});
        ++lines[size_t(it->second)].lanes;
        thread_[{l.source, l.feedlet}] = it->second;
        if (by_queue)
          for (const QueueMap::Queue* q : owned[lane]) queue_[{q->source, q->channel}] = it->second;
        continue;
      }
      if (by_queue && owned.count(lane)) {
        // (Its own sends leave its home queue; where that is not shown,
        // its first queue: a message between lanes shown is always drawn.)
        thread_[{l.source, l.feedlet}] = int(lines.size());
        for (const QueueMap::Queue* q : owned[lane]) {
          queue_[{q->source, q->channel}] = int(lines.size());
          lines.push_back({0, scene.sources()[q->source].catalog->channel_label(q->channel), l.group, int(lane), true, 1});
        }
      } else {
        thread_[{l.source, l.feedlet}] = int(lines.size());
        lines.push_back({0, l.label(), l.group, int(lane), false, 1});
      }
    }
    if (by_queue) home_ = &req.queues->home;
    const float spacing = req.width / float(std::max<size_t>(1, lines.size()));
    for (size_t i = 0; i < lines.size(); ++i) lines[i].x = (float(i) + 0.5f) * spacing;
  }
  bool shown(uint32_t s, uint32_t feedlet) const { return shown_.count({s, feedlet}) > 0; }
  bool any_shown(uint32_t s) const {
    auto it = shown_.lower_bound({s, 0});
    return it != shown_.end() && it->first == s;
  }
  // The lifeline a message leaves (its sender's, or its sender's home queue's), or -1.
  int from(uint32_t s, const index::Flow& f) const {
    if (!shown(s, f.src)) return -1;
    if (home_)
      if (auto h = home_->find({s, f.src}); h != home_->end())
        if (auto q = queue_.find({s, h->second}); q != queue_.end()) return q->second;
    auto t = thread_.find({s, f.src});
    return t == thread_.end() ? -1 : t->second;
  }
  // The lifeline it arrives on (its receiver's, or its channel's queue's;
  // where that queue is not shown, none: as a lane not shown), or -1.
  int to(uint32_t s, const index::Flow& f) const {
    if (!shown(s, f.dst)) return -1;
    if (home_) {
      auto q = queue_.find({s, f.channel});
      return q == queue_.end() ? -1 : q->second;
    }
    auto t = thread_.find({s, f.dst});
    return t == thread_.end() ? -1 : t->second;
  }
  // Where a message on `channel` never received was headed: the lifeline of
  // the lane that receives most of the channel's messages here, or -1.
  int queue(uint32_t s, uint64_t channel, const ArrowStyle& style) const {
    if (home_)
      if (auto q = queue_.find({s, channel}); q != queue_.end()) return q->second;
    const std::optional<uint32_t> r = style.queue(channel);
    if (!r) return -1;
    auto t = thread_.find({s, *r});
    return t == thread_.end() ? -1 : t->second;
  }
  std::vector<SequencePicture::Lifeline> lines;

 private:
  std::set<std::pair<uint32_t, uint32_t>> shown_;            // (source, feedlet) of the lanes asked for
  std::map<std::pair<uint32_t, uint32_t>, int> thread_;     // (source, feedlet) -> lifeline
  std::map<std::pair<uint32_t, uint64_t>, int> queue_;      // (source, channel) -> lifeline
  const std::map<std::pair<uint32_t, uint32_t>, uint64_t>* home_ = nullptr;
};

}  // namespace

SequencePicture build_sequence(const Scene& scene, const SequenceRequest& req) {
  const auto started = std::chrono::steady_clock::now();
  SequencePicture P;
  P.serial = next_picture_serial();
  P.request = req;
  const LifelineMap lines(scene, req);
  P.lifelines = lines.lines;
  const float spacing = req.width / float(std::max<size_t>(1, P.lifelines.size()));

  // 1. The messages of the lifelines in the window, as the timeline finds
  // them. (A trace none of whose lanes is shown has none: it is not looked at.)
  struct Look {
    uint32_t source;
    ClockWindow cw;
    std::unique_ptr<MessageLook> look;  // the filter against this trace (its matcher caches answers): one a picture
    WindowMessages window;
  };
  std::vector<Look> looks;
  bool over = false;
  for (uint32_t s = 0; s < scene.sources().size(); ++s) {
    if (!lines.any_shown(s)) continue;
    const index::TraceIndex& ix = *scene.sources()[s].index;
    const ClockWindow cw(scene.sources()[s].catalog->clock, req.t0, req.t1);
    auto look = std::make_unique<MessageLook>(ix, req.message_filter.get());
    const ShownLane shown = [&](uint32_t feedlet) { return lines.shown(s, feedlet); };
    WindowMessages window = window_messages(scene, s, cw, shown, *look, req.max_arrows);
    looks.push_back({s, cw, std::move(look), std::move(window)});
    over |= looks.back().window.over_budget;
  }
  std::vector<Message> messages;
  std::unordered_set<const analysis::CrossMessage*> drawn_across;
  for (Look& l : looks) {
    if (over) {  // (one figure, one kind of picture: bundles for every trace)
      P.arrows_left_out += l.window.over_budget ? l.window.at_least : l.window.flows.size();
      continue;
    }
    const uint32_t s = l.source;
    const ClockWindow& cw = l.cw;
    ArrowStyle style(scene, s, l.window.flows, req.rule_verdicts.get(), *l.look);
    for (const index::Flow& f : l.window.flows) {
      Message m;
      m.source = s, m.flow = f, m.colour = style.colour(f);
      const bool sent = f.flags & index::kFlowSent, received = f.flags & index::kFlowReceived;
      int64_t t_send = 0, t_recv = 0;
      bool again = false;
      if (sent && received) {
        m.from = lines.from(s, f), m.to = lines.to(s, f);
        m.send = cw.ns(f.send_ts), m.recv = cw.ns(f.recv_ts);
      } else if (const analysis::CrossMessage* x = message_across(scene, s, f, drawn_across, t_send, t_recv, again)) {
        if (again) continue;
        m.from = lines.from(x->send_trace, x->send), m.to = lines.to(x->recv_trace, x->recv);
        m.send = t_send, m.recv = t_recv, m.source = x->send_trace, m.flow = x->send;
      } else if (sent) {
        m.from = lines.from(s, f), m.send = cw.ns(f.send_ts), m.orphan = 1;
        m.queue = lines.queue(s, f.channel, style);
      } else {
        m.to = lines.to(s, f), m.recv = cw.ns(f.recv_ts), m.orphan = 2;
      }
      if ((m.orphan != 2 && m.from < 0) || (m.orphan != 1 && m.to < 0)) continue;
      messages.push_back(m);
    }
  }

  // 2. Event order: each end in the window a step, in time order, if the
  // steps get min_step_px each.
  std::vector<float> y_send(messages.size()), y_recv(messages.size());
  auto y_time = [&](int64_t t) { return std::clamp(P.y(t), 0.f, req.height); };
  if (req.spacing == Spacing::Order && !over) {
    std::vector<End> ends;
    for (uint32_t i = 0; i < messages.size(); ++i) {
      const Message& m = messages[i];
      if (m.orphan != 2 && m.send >= req.t0 && m.send <= req.t1) ends.push_back({m.send, m.from, 0, i});
      if (m.orphan != 1 && m.recv >= req.t0 && m.recv <= req.t1) ends.push_back({m.recv, m.to, 1, i});
    }
    const float step = req.height / float(ends.size() + 1);
    if (step >= req.min_step_px) order_ends(ends);  // (else drawn in real time: no order needed)
    if (!ends.empty() && step < req.min_step_px) {
      P.order_events = ends.size();
    } else if (!ends.empty()) {  // (none: real time, which labels the window's times)
      P.spacing = Spacing::Order, P.step_px = step;
      for (const Message& m : messages) {  // ends outside the window: on the edge
        y_send[&m - messages.data()] = m.send < req.t0 ? 0 : req.height;
        y_recv[&m - messages.data()] = m.recv < req.t0 ? 0 : req.height;
      }
      for (size_t k = 0; k < ends.size(); ++k) {
        P.steps.push_back(ends[k].t);
        (ends[k].recv ? y_recv : y_send)[ends[k].message] = float(k + 1) * step;
      }
    }
  }
  if (P.spacing == Spacing::Time)
    for (size_t i = 0; i < messages.size(); ++i) y_send[i] = y_time(messages[i].send), y_recv[i] = y_time(messages[i].recv);

  // 3. Arrows; orphans as stubs (a send never received toward its queue).
  for (size_t i = 0; i < messages.size(); ++i) {
    const Message& m = messages[i];
    Arrow a{0, 0, 0, 0, m.orphan, m.orphan == 2 ? 0 : m.send, m.orphan == 1 ? 0 : m.recv, m.source, m.flow, m.colour};
    if (m.orphan == 0) {  // (from a lifeline to itself: x0 == x1, drawn as a loop)
      a.x0 = P.lifelines[size_t(m.from)].x, a.y0 = y_send[i], a.x1 = P.lifelines[size_t(m.to)].x, a.y1 = y_recv[i];
    } else if (m.orphan == 1) {
      const float x = P.lifelines[size_t(m.from)].x;
      const float toward = m.queue >= 0 && m.queue != m.from ? (m.queue > m.from ? 1.f : -1.f) : 1.f;
      a.x0 = x, a.y0 = y_send[i], a.x1 = x + toward * std::min(24.f, spacing * 0.8f), a.y1 = y_send[i] + 8;
    } else {
      const float x = P.lifelines[size_t(m.to)].x;
      a.x0 = x - std::min(16.f, spacing * 0.6f), a.y0 = y_recv[i] - 8, a.x1 = x, a.y1 = y_recv[i];
    }
    P.arrows.push_back(a);
  }

  // 4. Past the budget: bundles between lifelines, in real time (in a
  // viewer, once the view rests: they read every message of the window).
  if (over && !req.bundles) P.bundles_wait = true;
  for (Look& l : looks) {
    if (!over || !req.bundles) break;
    if (req.stop && req.stop->load(std::memory_order_relaxed)) {  // a newer request: this picture is moot
      P.stopped = true;
      break;
    }
    const uint32_t s = l.source;
    const ClockWindow& cw = l.cw;
    const index::TraceIndex& ix = *scene.sources()[s].index;
    const MessageEnds ends = [&](const index::Flow& f) { return std::pair<int, int>(lines.from(s, f), lines.to(s, f)); };
    const Bundled b = bundle_messages(
        ix, cw, ends, *l.look, req.max_bundled, req.max_arrows, [&](uint64_t t) { return double(y_time(cw.ns(t))); },
        req.height);
    P.over_cap |= b.over_cap;
    for (const LaneBundle& x : b.bundles)
      P.bundles.push_back({P.lifelines[size_t(x.from)].x, float(x.at0), P.lifelines[size_t(x.to)].x, float(x.at1), x.count, s});
    P.bundled += b.messages, P.bundles_left_out += b.left_out;
  }
  if (over && req.bundles && !P.stopped && scene.across) {  // and those between the traces
    const Bundled b = bundle_across(
        scene, req.t0, req.t1,
        [&](const analysis::CrossMessage& m) {
          return std::pair<int, int>(lines.from(m.send_trace, m.send), lines.to(m.recv_trace, m.recv));
        },
        req.max_arrows, [&](int64_t ns) { return double(y_time(ns)); }, req.height);
    for (const LaneBundle& x : b.bundles)
      P.bundles.push_back({P.lifelines[size_t(x.from)].x, float(x.at0), P.lifelines[size_t(x.to)].x, float(x.at1), x.count, 0});
    P.bundled += b.messages, P.bundles_left_out += b.left_out;
  }
  P.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return P;
}

const Arrow* sequence_arrow_at(const SequencePicture& p, float x, float y, float px) {
  const Arrow* hit = nullptr;
  float best = px * px;
  const float out = std::min(14.f, p.request.width / float(std::max<size_t>(1, p.lifelines.size())) * 0.4f);
  for (const Arrow& a : p.arrows) {
    const float shift = a.orphan == 0 && a.x0 == a.x1 ? out : 0;  // a loop: its far side
    const float x0 = a.x0 + shift, x1 = a.x1 + shift;
    const float dx = x1 - x0, dy = a.y1 - a.y0, len2 = dx * dx + dy * dy;
    const float t = len2 > 0 ? std::clamp(((x - x0) * dx + (y - a.y0) * dy) / len2, 0.f, 1.f) : 0.f;
    const float ex = x0 + t * dx - x, ey = a.y0 + t * dy - y;
    if (ex * ex + ey * ey <= best) best = ex * ex + ey * ey, hit = &a;
  }
  return hit;
}

void sequence_overlay(ImDrawList* dl, const Scene& scene, const SequencePicture& p, const SequenceGeometry& g,
                      const Marks& marks) {
  constexpr ImU32 kText = IM_COL32(220, 220, 220, 255), kDim = IM_COL32(150, 150, 150, 255),
                  kLifeline = IM_COL32(95, 95, 110, 255);
  const Rect plot = g.plot;
  const int64_t origin = scene.first_ns();
  const TimeUnit unit = scene.time_unit();
  const SequenceRequest& q = p.request;
  const std::vector<SequencePicture::Lifeline>& lines = p.lifelines;
  const float spacing = plot.w / float(std::max<size_t>(1, lines.size()));

  // Lifelines and their names: on one row where they fit, else on two,
  // alternately; over one, each process's name at its first lifeline. A
  // process folded into one lifeline is named with its lanes' count, a
  // queue with its channel's name.
  const bool two_rows = spacing < 70;
  bool groups = false;
  for (const SequencePicture::Lifeline& l : lines) groups |= l.group != lines[0].group;
  dl->PushClipRect({g.header.x, g.header.y}, {g.header.x + g.header.w, g.header.y + g.header.h}, true);
  for (size_t i = 0; i < lines.size(); ++i) {
    const SequencePicture::Lifeline& l = lines[i];
    const float x = plot.x + l.x;
    const bool folded = l.lane < 0;
    const std::string label = folded ? "[+] " + l.label + " (" + std::to_string(l.lanes) + ")" : l.label;
    const float room = two_rows ? spacing * 2 - 4 : spacing - 4;
    const float w = std::min(room, ImGui::CalcTextSize(label.c_str()).x);
    const float y = g.header.y + (two_rows && i % 2 ? 2 : 20);
    dl->PushClipRect({x - room / 2, y}, {x + room / 2, y + 18}, true);
    dl->AddText({x - w / 2, y}, folded ? IM_COL32(230, 200, 120, 255) : l.queue ? IM_COL32(150, 220, 230, 255) : kText,
                label.c_str());
    dl->PopClipRect();
    dl->AddLine({x, y + 15}, {x, g.header.y + g.header.h}, kLifeline);
    if (groups && !two_rows && !folded && (i == 0 || lines[i - 1].group != l.group))
      dl->AddText({x - spacing / 2 + 4, g.header.y + 2}, kDim, ("[-] " + (l.group.empty() ? "(process)" : l.group)).c_str());
  }
  dl->PopClipRect();
  dl->AddText({g.figure.x + 4, g.figure.y + 4}, kDim, p.spacing == Spacing::Order ? "event order" : "real time");
  if (q.lifelines == Lifelines::Queues) dl->AddText({g.figure.x + 4, g.figure.y + 20}, kDim, "queues");
  dl->PushClipRect({plot.x, plot.y}, {plot.x + plot.w, plot.y + plot.h}, true);
  for (const SequencePicture::Lifeline& l : lines)
    dl->AddLine({plot.x + l.x, plot.y}, {plot.x + l.x, plot.y + plot.h}, l.lane < 0 ? IM_COL32(150, 130, 90, 255) : kLifeline,
                l.lane < 0 ? 3.f : 1.f);
  dl->PopClipRect();

  // Times down the left: round ones in real time, a step's in event order.
  dl->PushClipRect({g.times.x, g.times.y - 8}, {g.times.x + g.times.w, g.times.y + g.times.h}, true);
  if (p.spacing == Spacing::Order) {
    const size_t every = size_t(std::max(1.f, std::ceil(18 / std::max(0.1f, p.step_px))));
    for (size_t k = 0; k < p.steps.size(); k += every) {
      const float y = plot.y + float(k + 1) * p.step_px;
      dl->AddLine({g.times.x + g.times.w - 4, y}, {g.times.x + g.times.w, y}, kDim);
      const std::string s = format_time(p.steps[k] - origin, 1, unit);
      dl->AddText({g.times.x + g.times.w - 7 - ImGui::CalcTextSize(s.c_str()).x, y - 7}, kDim, s.c_str());
    }
  } else {
    const TimeAxis axis(q.t0, q.t1, q.height);
    const std::vector<Tick> tk = ticks(axis, 40, origin);
    const int64_t step = tk.size() >= 2 ? std::max<int64_t>(1, tk[1].t - tk[0].t) : 1;
    for (const Tick& t : tk) {
      const float y = plot.y + float(t.x);
      dl->AddLine({g.times.x + g.times.w - 4, y}, {g.times.x + g.times.w, y}, kDim);
      dl->AddText({g.times.x + 4, y - 7}, kDim, format_time(t.t - origin, step, unit).c_str());
    }
  }
  dl->PopClipRect();

  dl->PushClipRect({plot.x, plot.y}, {plot.x + plot.w, plot.y + plot.h}, true);
  if (marks.has_selection())
    dl->AddRectFilled({plot.x, plot.y + p.y(marks.sel0)}, {plot.x + plot.w, plot.y + p.y(marks.sel1)},
                      kSelectionColour);
  for (int64_t b : marks.bookmarks)
    if (b >= q.t0 && b <= q.t1) dl->AddLine({plot.x, plot.y + p.y(b)}, {plot.x + plot.w, plot.y + p.y(b)}, kBookmarkColour);
  // Bundles, as wide as the timeline's (1 + log2(count) / 2, at most 4 px).
  // (From a lifeline to itself, a folded process's own traffic: a loop.)
  const float out = std::min(14.f, spacing * 0.4f);
  for (const Bundle& b : p.bundles) {
    const float w = float(std::min(4, 1 + int(std::log2(float(b.count))) / 2));
    const ImVec2 from{plot.x + b.x0, plot.y + b.y0}, to{plot.x + b.x1, plot.y + b.y1};
    if (b.x0 == b.x1) {
      const ImVec2 pts[4] = {from, {from.x + out, from.y}, {to.x + out, to.y}, to};
      dl->AddPolyline(pts, 4, kBundleColour, 0, w);
    } else {
      dl->AddLine(from, to, kBundleColour, w);
    }
  }
  // Arrows in their channel's colour (orphans grey, a ring at the open
  // end); a selected chain's hops bright and thick, the rest dimmed. Where
  // they are few, each says its channel.
  const bool heads = p.arrows.size() <= 400, chain = !marks.chain.empty();
  const bool labels = p.arrows.size() <= 40;
  for (const Arrow& a : p.arrows) {
    const ImVec2 from{plot.x + a.x0, plot.y + a.y0}, to{plot.x + a.x1, plot.y + a.y1};
    const bool hop = chain && marks.chain.count({a.source, a.flow.id});
    ImU32 c = a.orphan ? kOrphanColour : a.colour ? a.colour : kArrowColour;
    if (chain && !hop) c = (c & 0x00ffffffu) | 0x38000000u;
    if (a.orphan == 0 && a.x0 == a.x1) {  // to its own lifeline: a loop out to the right
      const ImVec2 pts[4] = {from, {from.x + out, from.y}, {to.x + out, to.y}, to};
      dl->AddPolyline(pts, 4, c, 0, hop ? 2.5f : 1.f);
      if (heads) dl->AddTriangleFilled(to, {to.x + 6, to.y - 3}, {to.x + 6, to.y + 3}, c);
      continue;
    }
    dl->AddLine(from, to, c, hop ? 2.5f : 1.f);
    if (a.orphan == 1) dl->AddCircle(to, 3, c);
    if (a.orphan == 2) dl->AddCircle(from, 3, c);
    if (heads && a.orphan != 1) {
      const float dx = to.x - from.x, dy = to.y - from.y, len = std::max(1.f, std::sqrt(dx * dx + dy * dy));
      const float ux = dx / len * 7, uy = dy / len * 7;
      dl->AddTriangleFilled(to, {to.x - ux - uy * 0.45f, to.y - uy + ux * 0.45f},
                            {to.x - ux + uy * 0.45f, to.y - uy - ux * 0.45f}, c);
    }
    if (labels && a.orphan == 0) {
      const std::string name = scene.sources()[a.source].catalog->channel_label(a.flow.channel);
      dl->AddText({(from.x + to.x) / 2 + 3, (from.y + to.y) / 2 - 14}, (c & 0x00ffffffu) | 0xc0000000u, name.c_str());
    }
  }
  if (marks.cursor != Marks::kNone && marks.cursor >= q.t0 && marks.cursor <= q.t1) {
    const float y = std::floor(plot.y + p.y(marks.cursor)) + 0.5f;
    dl->AddLine({plot.x, y}, {plot.x + plot.w, y}, kCursorColour);
  }
  dl->PopClipRect();
  if (marks.cursor != Marks::kNone && marks.cursor >= q.t0 && marks.cursor <= q.t1) {
    const float y = plot.y + p.y(marks.cursor);
    const std::string s = format_time(marks.cursor - origin, 1, unit);
    dl->AddRectFilled({g.times.x, y - 8}, {g.times.x + g.times.w, y + 8}, IM_COL32(255, 224, 64, 220));
    dl->AddText({g.times.x + 3, y - 7}, IM_COL32(20, 20, 20, 255), s.c_str());
  }

  // What is not drawn as arrows, and why, at the plot's top right.
  std::string note = message_note(p.arrows_left_out, p.bundled, p.bundles.size(), p.bundles_left_out, p.bundles_wait,
                                  p.over_cap, q.max_arrows,
                                  q.max_bundled);
  if (p.order_events)
    note = std::to_string(p.order_events) + " sends and receives: too many for a step each here, so real time; zoom in";
  if (!note.empty()) {
    const float w = ImGui::CalcTextSize(note.c_str()).x, x = plot.x + plot.w - w - 6;
    dl->AddRectFilled({x - 4, plot.y}, {plot.x + plot.w, plot.y + 18}, IM_COL32(28, 28, 34, 255));
    dl->AddText({x, plot.y + 2}, kDim, note.c_str());
  }
  if (lines.empty())
    dl->AddText({plot.x + 8, plot.y + 8}, kDim, "no lane shown here sends or receives a message");
  scene_warnings(dl, scene, plot);
}

}  // namespace tinescope::render
