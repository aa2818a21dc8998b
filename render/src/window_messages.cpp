#include "window_messages.hpp"

#include <algorithm>
#include <cmath>

namespace tinescope::render {

namespace {
// How many messages a picture looks through for those of the lanes shown,
// per arrow it may draw (800 arrows: 51 200 messages, some 400 of the
// index's blocks).
constexpr size_t kArrowsLookedPerShown = 64;
}  // namespace

MessageLook::MessageLook(const index::TraceIndex& ix, const analysis::MessageFilter* filter) {
  if (filter && !filter->any()) only.emplace(ix, *filter), grey_rest = filter->grey_rest;
}

WindowMessages window_messages(const Scene& scene, uint32_t s, const ClockWindow& cw, const ShownLane& shown,
                               MessageLook& look, uint32_t max_arrows) {
  // Past `looked` of them in all, which are shown is not looked for. With
  // every lane of the trace shown (and nothing left out by a filter), no
  // flow is another lane's: the limit is the look. (Looking through 64
  // times as many cost a coarse view ~40 ms, where its picture took 6.)
  const index::TraceIndex& ix = *scene.sources()[s].index;
  bool every_lane = !look.only || look.grey_rest;
  for (const Lane& l : scene.lanes()) every_lane &= l.source != s || shown(l.feedlet);
  size_t looked = size_t(max_arrows) * (every_lane ? 1 : kArrowsLookedPerShown);
  WindowMessages w;
  bool more = false;
  for (;;) {
    w.flows = ix.flows(cw.k0, cw.k1, looked, true);
    more = w.flows.size() > looked;
    const size_t all = w.flows.size();
    std::erase_if(w.flows, [&](const index::Flow& f) {
      const bool sent = f.flags & index::kFlowSent, received = f.flags & index::kFlowReceived;
      const bool a = shown(f.src), b = shown(f.dst);
      return (sent && received ? !(a && b) : sent ? !a : !b) || look.leaves_out(f);
    });
    // A growing trace's new lanes, not in the scene yet: flows of lanes
    // not shown after all, so the look goes on as for lanes not shown.
    // (Once at the wider look: with no arrows to draw, it is no wider.)
    if (!more || w.flows.size() == all || looked >= size_t(max_arrows) * kArrowsLookedPerShown) break;
    looked = size_t(max_arrows) * kArrowsLookedPerShown;
  }
  // Arrows only where they can be told apart: a wall of lines says nothing.
  if (w.flows.size() > max_arrows || more) {
    w.at_least = std::max<size_t>(w.flows.size(), size_t(max_arrows) + 1);
    w.over_budget = true;
    w.flows.clear();
  }
  return w;
}

Bundled bundle_messages(const index::TraceIndex& ix, const ClockWindow& cw, const MessageEnds& ends, MessageLook& look,
                        uint32_t max_bundled, uint32_t max_arrows, const std::function<double(uint64_t)>& at,
                        double extent) {
  Bundled out;
  std::vector<index::Flow> flows = ix.flows(cw.k0, cw.k1, max_bundled, true);
  // (Over the cap, the flows read are some of them: none are bundled.)
  if (flows.size() > max_bundled) {
    out.over_cap = true;
    return out;
  }
  std::vector<BundlePoint> points;
  for (const index::Flow& f : flows) {
    if (!f.matched() || look.leaves_out(f)) continue;
    const std::pair<int, int> e = ends(f);
    if (e.first >= 0 && e.second >= 0) points.push_back({e.first, e.second, at(f.send_ts), at(f.recv_ts)});
  }
  return bundle_points(points, max_arrows, extent);
}

Bundled bundle_across(const Scene& scene, int64_t t0, int64_t t1, const AcrossEnds& ends, uint32_t max_arrows,
                      const std::function<double(int64_t)>& at, double extent,
                      const std::unordered_set<const analysis::CrossMessage*>* drawn) {
  std::vector<BundlePoint> points;
  if (!scene.across) return {};
  for (const analysis::CrossMessage& m : scene.across->messages) {
    if (drawn && drawn->count(&m)) continue;
    const int64_t send = scene.sources()[m.send_trace].catalog->clock.to_ns(m.send.send_ts);
    const int64_t recv = scene.sources()[m.recv_trace].catalog->clock.to_ns(m.recv.recv_ts);
    if (std::max(send, recv) < t0 || std::min(send, recv) > t1) continue;
    const std::pair<int, int> e = ends(m);
    if (e.first >= 0 && e.second >= 0) points.push_back({e.first, e.second, at(send), at(recv)});
  }
  return bundle_points(points, max_arrows, extent);
}

Bundled bundle_points(const std::vector<BundlePoint>& points, uint32_t max_arrows, double extent) {
  Bundled out;
  std::unordered_set<uint64_t> pairs;
  for (const BundlePoint& p : points) pairs.insert(uint64_t(uint32_t(p.from)) << 32 | uint32_t(p.to));
  const int bins = int(std::clamp<size_t>(max_arrows / 2 / std::max<size_t>(1, pairs.size()), 1, kBundleBins));
  struct Key {
    int from, to;
    int bin;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(uint64_t(uint32_t(k.from)) << 40 ^ uint64_t(uint32_t(k.to)) << 8 ^ uint64_t(k.bin));
    }
  };
  std::unordered_map<Key, size_t, KeyHash> where;  // -> index in out.bundles
  for (const BundlePoint& p : points) {
    const int bin = std::clamp(int(p.at0 / std::max(1.0, extent) * bins), 0, bins - 1);
    auto [it, fresh] = where.try_emplace(Key{p.from, p.to, bin}, out.bundles.size());
    if (fresh) out.bundles.push_back({p.from, p.to, 0, 0, 0});
    LaneBundle& b = out.bundles[it->second];
    b.at0 += p.at0, b.at1 += p.at1, ++b.count;
  }
  for (LaneBundle& b : out.bundles) b.at0 /= b.count, b.at1 /= b.count, out.messages += b.count;
  // The busiest, where more lane pairs talk than can be told apart (each
  // costs its length in pixels on every frame).
  const size_t most = std::max<size_t>(1, max_arrows / 4);
  if (out.bundles.size() > most) {
    std::stable_sort(out.bundles.begin(), out.bundles.end(),
                     [](const LaneBundle& x, const LaneBundle& y) { return x.count > y.count; });
    out.left_out = out.bundles.size() - most;
    out.bundles.resize(most);
  }
  return out;
}

ArrowStyle::ArrowStyle(const Scene& scene, uint32_t s, const std::vector<index::Flow>& flows,
                       const std::vector<analysis::RuleReport>* rule_verdicts, MessageLook& look)
    : look_(look) {
  if (rule_verdicts && s < rule_verdicts->size()) verdicts_ = &(*rule_verdicts)[s];
  std::unordered_map<uint64_t, std::unordered_map<uint32_t, uint32_t>> receivers;  // channel -> lane -> receives
  for (const index::Flow& f : flows) {
    if (f.flags & index::kFlowReceived) ++receivers[f.channel][f.dst];
    auto [it, fresh] = channel_colour_.try_emplace(f.channel, 0);
    if (fresh) {
      const std::string name = scene.sources()[s].catalog->channel_name(f.channel);
      it->second = name_colour(name.empty() ? "channel " + std::to_string(f.channel) : name);
    }
  }
  for (const auto& [channel, lanes] : receivers) {
    auto best = std::max_element(lanes.begin(), lanes.end(), [](const auto& x, const auto& y) {
      return x.second < y.second || (x.second == y.second && x.first > y.first);  // (ties: the first lane)
    });
    queue_[channel] = best->first;
  }
}

uint32_t ArrowStyle::colour(const index::Flow& f) {
  uint32_t c = channel_colour_[f.channel];
  if (verdicts_)
    if (const uint8_t v = verdicts_->verdict(f)) c = v == analysis::RuleReport::Violated ? kViolatedColour : kSatisfiedColour;
  if (look_.grey_rest && !look_.only->matches(f)) c = kContextColour;
  return c;
}

std::optional<uint32_t> ArrowStyle::queue(uint64_t channel) const {
  auto it = queue_.find(channel);
  if (it == queue_.end()) return std::nullopt;
  return it->second;
}

const analysis::CrossMessage* message_across(const Scene& scene, uint32_t s, const index::Flow& f,
                                             std::unordered_set<const analysis::CrossMessage*>& drawn,
                                             int64_t& send_ns, int64_t& recv_ns, bool& again) {
  const analysis::CrossMessage* m = scene.across ? scene.across->find(s, f) : nullptr;
  if (!m) return nullptr;
  again = !drawn.insert(m).second;
  send_ns = scene.sources()[m->send_trace].catalog->clock.to_ns(m->send.send_ts);
  recv_ns = scene.sources()[m->recv_trace].catalog->clock.to_ns(m->recv.recv_ts);
  return m;
}

}  // namespace tinescope::render
