#include "tinescope/analysis/message_chain.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "tinescope/analysis/event_details.hpp"

namespace tinescope::analysis {

namespace {

using index::Flow;
using index::Item;
using index::StreamKind;

// The innermost interval running on a lane at t (begun at or before t, not
// ended by it): a begin/end pair still open at t (its end found among the
// lane's items after t, in windows that double; remembered, since hops on
// one lane share their handlers), or a complete interval across t.
class Handlers {
 public:
  explicit Handlers(const index::TraceIndex& ix) : ix_(ix) {}
  bool at(uint32_t feedlet, uint64_t t, Item& out) {
    const index::RunningAcross r = ix_.running_across(feedlet, t);
    bool have = false;
    for (const Item& s : r.spans)
      if (!have || s.depth > out.depth) out = s, have = true;
    if (r.open.empty() || (have && out.depth >= r.open.back().depth)) return have;
    const index::OpenInterval& o = r.open.back();  // (outermost first)
    auto [known, fresh] = ends_.try_emplace({feedlet, o.start, o.depth}, Item{});
    if (fresh) known->second = find_end(feedlet, t, o);
    out = known->second;
    return true;
  }

 private:
  Item find_end(uint32_t feedlet, uint64_t t, const index::OpenInterval& o) const {
    const uint64_t last = ix_.last_ts();
    Item out;
    for (uint64_t lo = t, width = uint64_t(1) << 16;; width *= 2) {
      const uint64_t hi = last - lo < width ? last : lo + width;
      bool found = false;
      ix_.lane_items(feedlet, lo, hi, [&](const Item& it) {
        if (!found && it.kind == StreamKind::Interval && it.start == o.start && it.depth == o.depth && it.name == o.name)
          out = it, found = true;
      });
      if (found) return out;
      if (hi >= last) break;
      lo = hi + 1;
    }
    // Never ended in the trace: running to its end.
    out.kind = StreamKind::Interval, out.truncated = true;
    out.name = o.name, out.depth = o.depth, out.start = o.start, out.end = last;
    return out;
  }
  const index::TraceIndex& ix_;
  std::map<std::tuple<uint32_t, uint64_t, uint32_t>, Item> ends_;  // (lane, start, depth) -> the interval
};

struct FlowKey {
  uint64_t id, first;
  bool operator<(const FlowKey& b) const { return id < b.id || (id == b.id && first < b.first); }
};

}  // namespace

MessageChain message_chain(const index::TraceIndex& ix, const Flow& m, size_t max_hops) {
  MessageChain out;
  Handlers handlers(ix);
  std::set<FlowKey> seen{{m.id, m.first_half()}};
  std::deque<size_t> forward, backward;  // hops still to follow, by index
  out.hops.push_back(ChainHop{m, 0});
  forward.push_back(0), backward.push_back(0);
  auto add = [&](const Flow& f, int level, uint64_t parent) -> bool {
    if (seen.count({f.id, f.first_half()})) return false;
    if (out.hops.size() >= max_hops) {
      out.cut = true;
      return false;
    }
    seen.insert({f.id, f.first_half()});
    out.hops.push_back(ChainHop{f, level, false, {}, parent});
    return true;
  };
  // Effects: what the receiver sent from the interval it handled a hop in,
  // from its arrival until that interval ends (an interval is not running at
  // its end: the rule running_across and the causes follow).
  while (!forward.empty() && !out.cut) {
    const size_t k = forward.front();
    forward.pop_front();
    if (!(out.hops[k].flow.flags & index::kFlowReceived)) continue;
    const Flow f = out.hops[k].flow;
    Item handler;
    if (!handlers.at(f.dst, f.recv_ts, handler)) continue;
    out.hops[k].has_handler = true, out.hops[k].handler = handler;
    for (const Flow& next : ix.flows(f.recv_ts, handler.end))
      if ((next.flags & index::kFlowSent) && next.src == f.dst && next.send_ts >= f.recv_ts &&
          (next.send_ts < handler.end || handler.truncated) && add(next, out.hops[k].level + 1, f.id))
        forward.push_back(out.hops.size() - 1);
  }
  // Causes: what the sender received, at or before the send, whose handler
  // (as above) was still running at the send: the same relation read
  // backwards. Such a handler runs at the send, so the receives are looked
  // for from the earliest start of the intervals running there.
  while (!backward.empty() && !out.cut) {
    const size_t k = backward.front();
    backward.pop_front();
    if (!(out.hops[k].flow.flags & index::kFlowSent)) continue;
    const Flow f = out.hops[k].flow;
    const index::RunningAcross running = ix.running_across(f.src, f.send_ts);
    uint64_t lo = UINT64_MAX;
    for (const index::OpenInterval& o : running.open) lo = std::min(lo, o.start);
    for (const Item& sp : running.spans) lo = std::min(lo, sp.start);
    if (lo == UINT64_MAX) continue;
    for (const Flow& prev : ix.flows(lo, f.send_ts)) {
      if (!(prev.flags & index::kFlowReceived) || prev.dst != f.src || prev.recv_ts < lo || prev.recv_ts > f.send_ts)
        continue;
      Item h;
      if (!handlers.at(f.src, prev.recv_ts, h) || h.start > f.send_ts || (f.send_ts >= h.end && !h.truncated)) continue;
      if (!add(prev, out.hops[k].level - 1, f.id)) continue;
      out.hops.back().has_handler = true, out.hops.back().handler = h;
      backward.push_back(out.hops.size() - 1);
    }
  }
  std::stable_sort(out.hops.begin(), out.hops.end(),
                   [](const ChainHop& a, const ChainHop& b) { return a.flow.first_half() < b.flow.first_half(); });
  out.first = UINT64_MAX;
  for (const ChainHop& h : out.hops) out.first = std::min(out.first, h.flow.first_half());
  out.last = out.first;
  for (const ChainHop& h : out.hops) {
    if (h.flow.flags & index::kFlowReceived) out.last = std::max(out.last, h.flow.recv_ts);
    if (h.has_handler) out.last = std::max(out.last, h.handler.end);
  }
  return out;
}

bool message_chain(const index::TraceIndex& ix, uint64_t id, MessageChain& out, std::string& why, size_t max_hops) {
  Flow m;
  if (!find_message(ix, id, m)) {
    why = "no message has id " + std::to_string(id);
    return false;
  }
  out = message_chain(ix, m, max_hops);
  return true;
}

}  // namespace tinescope::analysis
