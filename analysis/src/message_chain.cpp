#include "tinescope/analysis/message_chain.hpp"

#include <algorithm>
#include <deque>
#include <set>

#include "tinescope/analysis/event_details.hpp"

namespace tinescope::analysis {

namespace {

using index::Flow;
using index::Item;
using index::StreamKind;

// The outermost interval running on `feedlet` at t: a begin/end pair still
// open at t (its end found among the lane's items after t, in windows that
// double), or a complete interval across t. False if none.
bool outermost_at(const index::TraceIndex& ix, uint32_t feedlet, uint64_t t, Item& out) {
  const index::RunningAcross r = ix.running_across(feedlet, t);
  bool have = false;
  for (const Item& s : r.spans)
    if (!have || s.depth < out.depth) out = s, have = true;
  if (r.open.empty() || (have && out.depth <= r.open[0].depth)) return have;
  const index::OpenInterval& o = r.open[0];  // (outermost first)
  const uint64_t last = ix.last_ts();
  for (uint64_t lo = t, width = uint64_t(1) << 16;; width *= 2) {
    const uint64_t hi = last - lo < width ? last : lo + width;
    bool found = false;
    ix.lane_items(feedlet, lo, hi, [&](const Item& it) {
      if (!found && it.kind == StreamKind::Interval && it.start == o.start && it.depth == o.depth && it.name == o.name)
        out = it, found = true;
    });
    if (found) return true;
    if (hi >= last) break;
    lo = hi + 1;
  }
  // Never ended in the trace: running to its end.
  out = Item{};
  out.kind = StreamKind::Interval, out.truncated = true;
  out.name = o.name, out.depth = o.depth, out.start = o.start, out.end = last;
  return true;
}

struct FlowKey {
  uint64_t id, first;
  bool operator<(const FlowKey& b) const { return id < b.id || (id == b.id && first < b.first); }
};

}  // namespace

bool message_chain(const index::TraceIndex& ix, uint64_t id, MessageChain& out, std::string& why, size_t max_hops) {
  out = MessageChain{};
  Flow m;
  if (!find_message(ix, id, m)) {
    why = "no message has id " + std::to_string(id);
    return false;
  }
  std::set<FlowKey> seen{{m.id, m.first_half()}};
  std::deque<size_t> forward, backward;  // hops still to follow, by index
  out.hops.push_back(ChainHop{m, 0});
  forward.push_back(0), backward.push_back(0);
  auto add = [&](const Flow& f, int level, uint64_t parent) -> bool {
    if (!seen.insert({f.id, f.first_half()}).second) return false;
    if (out.hops.size() >= max_hops) {
      out.cut = true;
      return false;
    }
    out.hops.push_back(ChainHop{f, level, false, {}, parent});
    return true;
  };
  // Effects: what the receiver sent from the interval it handled a hop in,
  // at or after its arrival.
  while (!forward.empty()) {
    const size_t k = forward.front();
    forward.pop_front();
    if (!(out.hops[k].flow.flags & index::kFlowReceived)) continue;
    const Flow f = out.hops[k].flow;
    Item handler;
    if (!outermost_at(ix, f.dst, f.recv_ts, handler)) continue;
    out.hops[k].has_handler = true, out.hops[k].handler = handler;
    for (const Flow& next : ix.flows(f.recv_ts, handler.end))
      if ((next.flags & index::kFlowSent) && next.src == f.dst && next.send_ts >= f.recv_ts &&
          next.send_ts <= handler.end && add(next, out.hops[k].level + 1, f.id))
        forward.push_back(out.hops.size() - 1);
  }
  // Causes: what the sender received in the interval it sent a hop from, at
  // or before the send (each arrived in that interval: its handler).
  while (!backward.empty()) {
    const size_t k = backward.front();
    backward.pop_front();
    if (!(out.hops[k].flow.flags & index::kFlowSent)) continue;
    const Flow f = out.hops[k].flow;
    Item from;
    if (!outermost_at(ix, f.src, f.send_ts, from)) continue;
    for (const Flow& prev : ix.flows(from.start, f.send_ts))
      if ((prev.flags & index::kFlowReceived) && prev.dst == f.src && prev.recv_ts >= from.start &&
          prev.recv_ts <= f.send_ts && add(prev, out.hops[k].level - 1, f.id)) {
        out.hops.back().has_handler = true, out.hops.back().handler = from;
        backward.push_back(out.hops.size() - 1);
      }
  }
  std::stable_sort(out.hops.begin(), out.hops.end(),
                   [](const ChainHop& a, const ChainHop& b) { return a.flow.first_half() < b.flow.first_half(); });
  out.first = UINT64_MAX;
  for (const ChainHop& h : out.hops) {
    out.first = std::min(out.first, h.flow.first_half());
    if (h.flow.flags & index::kFlowReceived) out.last = std::max(out.last, h.flow.recv_ts);
    if (h.has_handler) out.last = std::max(out.last, h.handler.end);
  }
  return true;
}

}  // namespace tinescope::analysis
