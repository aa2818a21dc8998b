// The recorder's clock: the invariant TSC where the CPU has one, else
// CLOCK_MONOTONIC in nanoseconds. Which one is fixed at ts_start().
#pragma once

#include <cstdint>
#include <ctime>
#include <x86intrin.h>

namespace tinescope::rec {

extern bool g_use_tsc;

inline uint64_t mono_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);  // vDSO: no system call
  return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

inline uint64_t read_ticks() {
  if (__builtin_expect(g_use_tsc, 1)) return __rdtsc();
  return mono_ns();
}

uint64_t real_ns();
bool cpu_has_invariant_tsc();

// Measures ticks per nanosecond over about `window_ns` (spins).
struct Calibration {
  double ticks_per_ns;
  uint64_t ref_ticks, ref_mono_ns, ref_real_ns;
};
Calibration calibrate(uint64_t window_ns);

// One (ticks, monotonic ns) pair read as close together as this machine allows.
void read_pair(uint64_t& ticks, uint64_t& ns);

// A host clock that is not this one (TINESCOPE_CLOCK_SKEW): the
// nanoseconds read_pair() gives, and so the trace's calibration, become
// offset_ns + rate × CLOCK_MONOTONIC, as another machine's clock would be.
// For trying the alignment of several traces on one machine. Set before
// calibrate().
void set_clock_skew(double offset_ns, double rate);

}  // namespace tinescope::rec
