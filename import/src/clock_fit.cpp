#include "tinescope/import/clock_fit.hpp"

#include <algorithm>
#include <deque>

namespace tinescope::import {

namespace {

// u = a + b v by least squares; false (slope 1 through the mean then) with
// fewer than two distinct v. Centred first: times near 10^14 ns keep their
// nanoseconds.
bool fit_line(const std::vector<SyncPoint>& p, double& a, double& b) {
  double mv = 0, mu = 0;
  for (const SyncPoint& s : p) mv += s.v, mu += s.u;
  mv /= double(p.size()), mu /= double(p.size());
  double svv = 0, svu = 0;
  for (const SyncPoint& s : p) svv += (s.v - mv) * (s.v - mv), svu += (s.v - mv) * (s.u - mu);
  if (p.size() >= 2 && svv > 0) {
    b = svu / svv, a = mu - b * mv;
    return true;
  }
  b = 1, a = mu - mv;
  return false;
}

// A fast message of each of kStretches stretches of time (by v): a busy
// host holds some messages back by milliseconds, which a fit of all of them
// follows; the fastest of each stretch took about the least time the path
// takes, and that is alike both ways. Not quite the fastest: the one an
// eighth of the way up, so that one message whose ends are wrong (received
// before it was sent) does not lead the fit. Delays are read against `guess`:
// a message u -> v (there) took guess(v) - u, one v -> u took u - guess(v).
constexpr size_t kStretches = 16;
std::vector<SyncPoint> fastest(std::vector<SyncPoint> p, const ClockLine& guess, bool there) {
  if (p.size() < 2 * kStretches) return p;
  std::sort(p.begin(), p.end(), [](const SyncPoint& a, const SyncPoint& b) { return a.v < b.v; });
  std::vector<SyncPoint> out;
  for (size_t k = 0; k < kStretches; ++k) {
    const size_t from = p.size() * k / kStretches, to = p.size() * (k + 1) / kStretches;
    auto delay = [&](const SyncPoint& s) { return there ? guess(s.v) - s.u : s.u - guess(s.v); };
    std::sort(p.begin() + long(from), p.begin() + long(to),
              [&](const SyncPoint& a, const SyncPoint& b) { return delay(a) < delay(b); });
    out.push_back(p[from + (to - from) / 8]);
  }
  return out;
}

// Both ways: the line between the two clouds (see the header).
PairFit fit_between(const std::vector<SyncPoint>& there, const std::vector<SyncPoint>& back) {
  PairFit out;
  double a1, b1, a2, b2;
  const bool slope1 = fit_line(there, a1, b1), slope2 = fit_line(back, a2, b2);
  double b = slope1 && slope2 ? (b1 + b2) / 2 : 1;
  if (!(b > 1e-3 && b < 1e3)) b = 1;  // no clock runs a thousand times another's: the messages say nothing
  out.drift = slope1 && slope2 && b == (b1 + b2) / 2;
  // The offset midway between the clouds' mean residuals, taken about the
  // first message's time so that b's error is not multiplied by 10^14.
  const double v0 = there.front().v;
  double c1 = 0, c2 = 0;
  for (const SyncPoint& s : there) c1 += s.u - b * (s.v - v0);
  for (const SyncPoint& s : back) c2 += s.u - b * (s.v - v0);
  const double at_v0 = (c1 / double(there.size()) + c2 / double(back.size())) / 2;
  out.line = {at_v0 - b * v0, b};
  return out;
}

}  // namespace

bool fit_clock_pair(const std::vector<SyncPoint>& there, const std::vector<SyncPoint>& back, PairFit& out) {
  out = PairFit{};
  if (there.empty() && back.empty()) return false;
  if (there.empty() || back.empty()) {
    // u → v: sent at u, received at v, so offset + v >= u for each; v → u: offset + v <= u.
    out.one_way = true;
    double bound = there.empty() ? back.front().u - back.front().v : there.front().u - there.front().v;
    for (const SyncPoint& s : there) bound = std::max(bound, s.u - s.v);
    for (const SyncPoint& s : back) bound = std::min(bound, s.u - s.v);
    out.line = {bound, 1};
    return true;
  }
  // A first fit of every message, then one of the fastest of each stretch.
  const PairFit first = fit_between(there, back);
  out = fit_between(fastest(there, first.line, true), fastest(back, first.line, false));
  return true;
}

std::vector<ChainedClock> chain_clocks(uint32_t n, const std::vector<PairEdge>& pairs) {
  struct Edge {
    uint32_t to;
    ClockLine line;  // this clock from `to`'s
  };
  std::vector<std::vector<Edge>> edges(n);
  for (const PairEdge& p : pairs) {
    if (p.u >= n || p.v >= n || p.u == p.v) continue;
    edges[p.u].push_back({p.v, p.line});
    edges[p.v].push_back({p.u, p.line.inverse()});
  }
  std::vector<ChainedClock> out(n);
  std::vector<bool> placed(n, false);
  for (uint32_t root = 0; root < n; ++root) {
    if (placed[root]) continue;
    placed[root] = true;
    out[root] = {ClockLine{}, root};
    std::deque<uint32_t> todo{root};
    while (!todo.empty()) {
      const uint32_t at = todo.front();
      todo.pop_front();
      for (const Edge& e : edges[at]) {
        if (placed[e.to]) continue;
        placed[e.to] = true;
        out[e.to] = {out[at].line.then(e.line), root};  // t_root = f_at(t_at), t_at = line(t_to)
        todo.push_back(e.to);
      }
    }
  }
  return out;
}

}  // namespace tinescope::import
