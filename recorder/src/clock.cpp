#include "clock.hpp"

#include <cpuid.h>

#include <cmath>

namespace tinescope::rec {

bool g_use_tsc = true;

namespace {
double g_skew_offset = 0, g_skew_rate = 1;
}

void set_clock_skew(double offset_ns, double rate) {
  g_skew_offset = offset_ns;
  g_skew_rate = rate > 0 ? rate : 1;
}

uint64_t real_ns() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

bool cpu_has_invariant_tsc() {
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return false;
  __get_cpuid(0x80000007u, &a, &b, &c, &d);
  return (d >> 8) & 1;  // "Invariant TSC": constant rate, runs in all C/P states
}

void read_pair(uint64_t& ticks, uint64_t& ns) {
  // The tightest of a few (ns, ticks, ns) brackets: a preemption between the
  // two clock reads would otherwise skew the pair.
  uint64_t best = ~0ull;
  for (int i = 0; i < 8; ++i) {
    uint64_t a = mono_ns(), t = read_ticks(), b = mono_ns();
    if (b - a < best) {
      best = b - a;
      ticks = t;
      ns = a + (b - a) / 2;
    }
  }
  if (g_skew_offset != 0 || g_skew_rate != 1) {
    const double skewed = g_skew_offset + g_skew_rate * double(ns);
    ns = skewed > 0 ? uint64_t(std::llround(skewed)) : 0;  // (a clock before its 0 reads 0)
  }
}

Calibration calibrate(uint64_t window_ns) {
  Calibration c{};
  c.ref_real_ns = real_ns();
  read_pair(c.ref_ticks, c.ref_mono_ns);
  if (!g_use_tsc) {
    c.ticks_per_ns = 1.0 / g_skew_rate;
    return c;
  }
  uint64_t t1, n1;
  do read_pair(t1, n1);
  while (n1 - c.ref_mono_ns < window_ns);
  c.ticks_per_ns = double(t1 - c.ref_ticks) / double(n1 - c.ref_mono_ns);
  return c;
}

}  // namespace tinescope::rec
