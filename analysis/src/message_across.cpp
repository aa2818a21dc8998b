#include "tinescope/analysis/message_across.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "tinescope/analysis/message_report.hpp"

namespace tinescope::analysis {

namespace {

uint64_t half_key(uint32_t trace, const index::Flow& f) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (uint64_t v : {uint64_t(trace), f.id, f.channel, uint64_t(f.flags & index::kFlowSent)})
    h = (h ^ v) * 0xff51afd7ed558ccdull, h ^= h >> 33;
  return h;
}

}  // namespace

const CrossMessage* CrossMessages::find(uint32_t trace, const index::Flow& half) const {
  auto it = by_half.find(half_key(trace, half));
  if (it == by_half.end()) return nullptr;
  const CrossMessage& m = messages[it->second];
  const bool sent = half.flags & index::kFlowSent;
  const index::Flow& mine = sent ? m.send : m.recv;
  // (A hash collision would name another message: the half must be this one.)
  if ((sent ? m.send_trace : m.recv_trace) != trace || mine.id != half.id || mine.channel != half.channel ||
      mine.first_half() != half.first_half() || mine.src != half.src || mine.dst != half.dst)
    return nullptr;
  return &m;
}

CrossMessages match_across(const std::vector<const index::TraceIndex*>& traces, const std::vector<uint32_t>& clock_of) {
  auto clock = [&](uint32_t t) { return t < clock_of.size() ? clock_of[t] : 0; };
  struct Half {
    uint32_t trace;
    index::Flow flow;
  };
  struct Ends {
    std::vector<Half> sends, recvs;
  };
  std::map<std::pair<uint64_t, uint64_t>, Ends> by_id;  // (id, channel)
  for (uint32_t t = 0; t < traces.size(); ++t)
    for_each_flow(*traces[t], traces[t]->first_ts(), traces[t]->last_ts(), [&](const index::Flow& f) {
      if (f.matched()) return;
      Ends& e = by_id[{f.id, f.channel}];
      ((f.flags & index::kFlowSent) ? e.sends : e.recvs).push_back({t, f});
    });
  CrossMessages out;
  for (auto& [key, e] : by_id) {
    if (e.sends.empty() || e.recvs.empty()) continue;
    if (e.sends.size() != 1 || e.recvs.size() != 1) {
      // Within one trace, a reused id is that trace's own (its report counts
      // it); across traces, which send a receive belongs to cannot be told.
      bool one_trace = true;
      for (const std::vector<Half>* side : {&e.sends, &e.recvs})
        for (const Half& h : *side) one_trace &= h.trace == e.sends[0].trace;
      if (!one_trace) out.ambiguous += e.sends.size() + e.recvs.size();
      continue;
    }
    const Half &s = e.sends[0], &r = e.recvs[0];
    if (s.trace == r.trace) continue;  // one trace's: it knows they did not match (a lost chunk, a reused id)
    if (clock(s.trace) != clock(r.trace)) continue;
    out.messages.push_back({s.trace, r.trace, s.flow, r.flow});
  }
  auto send_ns = [&](const CrossMessage& m) { return traces[m.send_trace]->to_ns(m.send.send_ts); };
  std::sort(out.messages.begin(), out.messages.end(),
            [&](const CrossMessage& a, const CrossMessage& b) { return send_ns(a) < send_ns(b); });
  for (uint32_t i = 0; i < out.messages.size(); ++i) {
    const CrossMessage& m = out.messages[i];
    out.by_half[half_key(m.send_trace, m.send)] = i;
    out.by_half[half_key(m.recv_trace, m.recv)] = i;
    out.early += traces[m.recv_trace]->to_ns(m.recv.recv_ts) < send_ns(m);
  }
  return out;
}

AcrossHalves across_halves(const CrossMessages& m, uint32_t trace, uint64_t t0, uint64_t t1) {
  AcrossHalves h;
  for (const CrossMessage& x : m.messages) {
    h.sent_to_others += x.send_trace == trace && x.send.send_ts >= t0 && x.send.send_ts <= t1;
    h.received_from_others += x.recv_trace == trace && x.recv.recv_ts >= t0 && x.recv.recv_ts <= t1;
  }
  return h;
}

}  // namespace tinescope::analysis
