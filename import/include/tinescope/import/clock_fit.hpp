// Clocks of several hosts (or processors) put onto one, from the sync
// messages between them: the Grasp importer's processors and the traces of
// several machines (analysis/clock_align.hpp) both fit their clocks here.
#pragma once

#include <cstdint>
#include <vector>

namespace tinescope::import {

// Clock v onto clock u: t_u = offset + rate × t_v.
struct ClockLine {
  double offset = 0, rate = 1;
  double operator()(double t_v) const { return offset + rate * t_v; }
  ClockLine then(const ClockLine& inner) const {  // this ∘ inner
    return {offset + rate * inner.offset, rate * inner.rate};
  }
  ClockLine inverse() const { return {-offset / rate, 1 / rate}; }
};

// One sync message between u and v: its time on v's clock and on u's.
struct SyncPoint {
  double v, u;
};

struct PairFit {
  ClockLine line;
  bool drift = false;    // the rate was fitted (each way had two messages at different times), else 1
  bool one_way = false;  // messages went one way only: the offset is a bound, not a fit
};

// `there`: messages u → v (sent at u, received at v); `back`: v → u.
// Both ways: the line runs between the two clouds, as NTP's equal delays
// each way put it, its slope the mean of the two clouds' slopes; with many
// messages, of the fastest message of each of 16 stretches of time each
// way (a busy host delays some by milliseconds, and not alike). One way
// only: the drift cannot be fitted; rate 1 and the offset at which the
// fastest message takes no time (the nearest the clocks can be without a
// message arriving before it left). False with no messages at all.
bool fit_clock_pair(const std::vector<SyncPoint>& there, const std::vector<SyncPoint>& back, PairFit& out);

// Clocks 0..n-1, joined by fitted pairs (t_u = line(t_v)): each clock onto
// its cluster's lowest-numbered clock, along a breadth-first tree of the
// pairs. A clock in no pair is its own reference.
struct PairEdge {
  uint32_t u, v;
  ClockLine line;
};
struct ChainedClock {
  ClockLine line;  // onto the reference's clock
  uint32_t reference = 0;
};
std::vector<ChainedClock> chain_clocks(uint32_t n, const std::vector<PairEdge>& pairs);

}  // namespace tinescope::import
