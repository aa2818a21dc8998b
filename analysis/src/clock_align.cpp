#include "tinescope/analysis/clock_align.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "tinescope/analysis/stream_expr.hpp"
#include "tinescope/format.hpp"

namespace tinescope::analysis {

bool read_sync_events(const index::TraceIndex& ix, std::vector<SyncEvent>& out, std::string& why) {
  const std::vector<uint64_t> per_type = ix.events_per_type();
  auto count = [&](uint16_t t) { return t < per_type.size() ? per_type[t] : 0; };
  const uint64_t total = count(format::kClockSyncSend) + count(format::kClockSyncRecv);
  const size_t before = out.size();
  bool ok = true;
  // Any thread may hold them: the feedlets are read until all are found.
  for (const index::FeedletSummary& f : ix.feedlets()) {
    if (out.size() - before >= total) break;
    ok &= ix.decode_events(f.id, f.first_ts, f.last_ts, [&](const trace::Event& e) {
      if (e.type != format::kClockSyncSend && e.type != format::kClockSyncRecv) return;
      out.push_back({e.u[0], uint32_t(e.u[1]), ix.to_ns(e.ts), e.type == format::kClockSyncSend, f.id, e.ts});
    }, why);
  }
  return ok;
}

bool parse_clock_choice(std::string_view text, ClockChoice& out, std::string& error) {
  out = ClockChoice{};
  if (text == "auto") return true;
  if (text == "none") return out.kind = ClockChoice::None, true;
  if (!parse_duration_ns(text, out.shift_ns)) {
    error = "a clock is auto, none or an offset such as +5ms, not '" + std::string(text) + "'";
    return false;
  }
  out.kind = ClockChoice::Shift;
  return true;
}

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// "runs 1000.0 ppm fast and is 5.000 s ahead": how a clock differs from the reference's, near `at` (its own ns).
std::string difference(const import::ClockLine& l, int64_t at) {
  const double ppm = (1 / l.rate - 1) * 1e6;
  const double ahead = double(at) - l(double(at));
  std::string s = std::fabs(ppm) < 0.05 ? "runs at the same rate" : "runs " + fixed(std::fabs(ppm), 1) + " ppm " + (ppm > 0 ? "fast" : "slow");
  return s + " and is " + readable_duration(int64_t(std::llround(std::fabs(ahead)))) + (ahead >= 0 ? " ahead" : " behind");
}

}  // namespace

ClockAlignment align_clocks(const std::vector<std::vector<SyncEvent>>& sync, const std::vector<ClockChoice>& choices,
                            const std::vector<std::string>& names, const std::vector<int64_t>& first_ns) {
  ClockAlignment out;
  const uint32_t n = uint32_t(sync.size());
  out.clocks.resize(n);
  auto choice = [&](uint32_t t) { return t < choices.size() ? choices[t] : ClockChoice{}; };
  // The ends of each sync id, across every trace. Nodes may each count
  // their own ids from 1, so one id may be sent by A to B and by B to A:
  // a send pairs with the one receive of its id in another trace. An id a
  // trace sends (or receives) twice, or a send with receives in several
  // other traces, is left out (`reused`).
  struct End {
    uint32_t trace = 0;
    int64_t ns = 0;
    uint32_t feedlet = 0;
    uint64_t ts = 0;
  };
  struct Ends {
    std::vector<End> sends, recvs;
  };
  std::map<uint64_t, Ends> by_id;
  for (uint32_t t = 0; t < n; ++t)
    for (const SyncEvent& e : sync[t])
      (e.sent ? by_id[e.sync_id].sends : by_id[e.sync_id].recvs).push_back({t, e.ns, e.feedlet, e.ts});
  struct Matched {
    End send, recv;
  };
  std::vector<Matched> matched;
  for (auto& [id, e] : by_id) {
    auto twice = [](const std::vector<End>& ends) {
      for (size_t i = 0; i < ends.size(); ++i)
        for (size_t j = i + 1; j < ends.size(); ++j)
          if (ends[i].trace == ends[j].trace) return true;
      return false;
    };
    if (twice(e.sends) || twice(e.recvs)) {
      out.reused += e.sends.size() + e.recvs.size();
      continue;
    }
    std::vector<bool> taken(e.recvs.size(), false);
    for (const End& s : e.sends) {
      size_t found = SIZE_MAX, candidates = 0, own = 0;
      for (size_t r = 0; r < e.recvs.size(); ++r) {
        if (e.recvs[r].trace == s.trace) ++own;  // between threads of one trace: one clock already
        else ++candidates, found = r;
      }
      if (candidates > 1) {
        out.reused += 1 + candidates;
        for (size_t r = 0; r < e.recvs.size(); ++r) taken[r] = taken[r] || e.recvs[r].trace != s.trace;
      } else if (candidates == 1 && !taken[found]) {
        taken[found] = true;
        matched.push_back({s, e.recvs[found]});
      } else if (own == 0) {
        ++out.unmatched;
      }
    }
    for (size_t r = 0; r < e.recvs.size(); ++r) {
      bool own = false;
      for (const End& s : e.sends) own |= s.trace == e.recvs[r].trace;
      out.unmatched += !taken[r] && !own;
    }
  }
  for (const Matched& m : matched)
    out.messages.push_back({m.send.trace, m.send.feedlet, m.send.ts, m.recv.trace, m.recv.feedlet, m.recv.ts});
  // Per pair of traces {u < v}: messages u -> v and v -> u.
  struct Pair {
    std::vector<import::SyncPoint> there, back;
  };
  std::map<std::pair<uint32_t, uint32_t>, Pair> pairs;
  for (const Matched& m : matched) {
    const uint32_t s = m.send.trace, r = m.recv.trace;
    if (s < r) pairs[{s, r}].there.push_back({double(m.recv.ns), double(m.send.ns)});
    else pairs[{r, s}].back.push_back({double(m.send.ns), double(m.recv.ns)});
  }
  // Fitted pairs between traces the user leaves to the fit; a given offset
  // is a pair with the first trace; a trace left alone joins no pair.
  std::vector<import::PairEdge> edges;
  std::map<std::pair<uint32_t, uint32_t>, import::PairFit> fits;
  for (auto& [uv, p] : pairs) {
    if (choice(uv.first).kind != ClockChoice::Auto || choice(uv.second).kind != ClockChoice::Auto) continue;
    import::PairFit fit;
    if (!import::fit_clock_pair(p.there, p.back, fit)) continue;
    fits[uv] = fit;
    edges.push_back({uv.first, uv.second, fit.line});
  }
  for (uint32_t t = 1; t < n; ++t)
    if (choice(t).kind == ClockChoice::Shift) edges.push_back({0, t, import::ClockLine{double(choice(t).shift_ns), 1}});
  const std::vector<import::ChainedClock> chained = import::chain_clocks(n, edges);
  for (uint32_t t = 0; t < n; ++t) {
    TraceClock& c = out.clocks[t];
    c.line = chained[t].line;
    c.reference = chained[t].reference;
    if (t == 0) continue;
    const int64_t at = t < first_ns.size() ? first_ns[t] : 0;
    if (choice(t).kind == ClockChoice::Shift) {
      c.how = TraceClock::Given;
      out.report.push_back(names[t] + ": moved " + format_duration_ns(choice(t).shift_ns) + " onto " + names[0] +
                           "'s clock (--clock)");
      continue;
    }
    if (choice(t).kind == ClockChoice::None || c.reference != 0) {
      c.how = TraceClock::Own;
      c.reference = t, c.line = {};
      if (choice(t).kind == ClockChoice::None) out.report.push_back(names[t] + ": on its own clock (--clock none)");
      else
        out.warn(names[t] + " has no clock sync messages joining it to " + names[0] +
             ": left on its own clock (--clock " + names[t] + "=+OFFSET places it)");
      continue;
    }
    // The pair it was fitted from: its edge towards the first trace in the tree.
    c.how = TraceClock::Fitted;
    for (auto& [uv, fit] : fits) {
      if (uv.first != t && uv.second != t) continue;
      const uint32_t other = uv.first == t ? uv.second : uv.first;
      if (chained[other].reference != 0) continue;
      c.peer = other;
      c.there = pairs[uv].there.size(), c.back = pairs[uv].back.size();
      if (fit.one_way) c.how = TraceClock::OffsetOnly;
      break;
    }
    out.report.push_back(names[t] + " aligned to " + names[0] + ": t = " + fixed(c.line.offset, 0) + " ns + " +
                         fixed(c.line.rate, 9) + " x its own (it " + difference(c.line, at) + ", from " +
                         std::to_string(c.there) + " sync messages to " + names[c.peer] + " and " +
                         std::to_string(c.back) + " back)");
    if (c.how == TraceClock::OffsetOnly)
      out.warn(names[t] + " and " + names[c.peer] +
           ": sync messages go one way only, so the drift cannot be fitted: offset only, the fastest message taken as "
           "instant");
  }
  if (out.unmatched)
    out.report.push_back(std::to_string(out.unmatched) + " sync messages have their other end in none of these traces");
  if (out.reused) out.warn(std::to_string(out.reused) + " sync events reuse a sync id so that their other ends cannot be told: left out of the fit");
  // Causality, once aligned: no sync message arrives before it left.
  for (const Matched& m : matched) {
    const TraceClock &s = out.clocks[m.send.trace], &r = out.clocks[m.recv.trace];
    if (s.reference != r.reference) continue;
    out.early += r.line(double(m.recv.ns)) < s.line(double(m.send.ns));
  }
  if (out.early)
    out.warn(std::to_string(out.early) +
         " sync messages arrive before they were sent once the clocks are aligned: a clock's drift is not constant, "
         "or a sync message's ends are reversed; events near them may be out of order");
  return out;
}

bool align_traces(const std::vector<index::TraceIndex*>& traces, const std::vector<ClockChoice>& choices,
                  ClockAlignment& out, std::string& why) {
  std::vector<std::vector<SyncEvent>> sync(traces.size());
  std::vector<std::string> names;
  std::vector<int64_t> first;
  for (size_t t = 0; t < traces.size(); ++t) {
    traces[t]->align_clock(0, 1);  // fitted from each host's own clock
    if (!read_sync_events(*traces[t], sync[t], why)) {
      why = traces[t]->trace_path() + ": " + why;
      return false;
    }
    std::string name = traces[t]->trace_path();
    if (size_t slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
    names.push_back(name);
    first.push_back(traces[t]->to_ns(traces[t]->first_ts()));
  }
  if (!choices.empty() && choices[0].kind != ClockChoice::Auto) {
    why = names[0] + " is the first trace: the others are put on its clock, and it stays on its own";
    return false;
  }
  out = align_clocks(sync, choices, names, first);
  for (size_t t = 1; t < traces.size(); ++t) traces[t]->align_clock(out.clocks[t].line.offset, out.clocks[t].line.rate);
  return true;
}

SyncArrows sync_arrows(const std::vector<const index::TraceIndex*>& traces, const ClockAlignment& a) {
  SyncArrows all;
  std::vector<SyncArrow>& out = all.arrows;
  for (const SyncMessage& m : a.messages) {
    if (m.send_trace >= traces.size() || m.recv_trace >= traces.size()) continue;
    if (a.clocks.size() > std::max(m.send_trace, m.recv_trace) &&
        a.clocks[m.send_trace].reference != a.clocks[m.recv_trace].reference)
      continue;
    out.push_back({m.send_trace, m.send_feedlet, m.recv_trace, m.recv_feedlet, traces[m.send_trace]->to_ns(m.send_ts),
                   traces[m.recv_trace]->to_ns(m.recv_ts)});
  }
  std::sort(out.begin(), out.end(), [](const SyncArrow& x, const SyncArrow& y) { return x.send_ns < y.send_ns; });
  for (const SyncArrow& m : out) all.longest_flight = std::max(all.longest_flight, std::abs(m.recv_ns - m.send_ns));
  return all;
}

}  // namespace tinescope::analysis
