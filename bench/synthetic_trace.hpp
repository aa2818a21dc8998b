// A synthetic trace of N events, written fast, for benchmarks and tests:
// many threads, each running a periodic task (every `period_ns`) with nested
// phases, counter samples, instants and messages to other threads (1 in
// 1000 never received); every 997th task instance runs 20 times too long
// (the injected anomaly). Time is in nanoseconds (1 tick = 1 ns).
#pragma once

#include <cstdint>
#include <string>

namespace tinescope::bench {

struct SyntheticOptions {
  uint64_t events = 1'000'000;
  uint32_t threads = 8;
  uint64_t period_ns = 100'000;
  uint64_t seed = 1;
  unsigned compress_threads = 2;  // chunks are compressed in parallel
  // Each task instance as one complete event at its end (as a program that
  // times its task and records it whole), not a begin/end pair: its phases
  // are then outermost too.
  bool completes = false;
  // 1 or 2: this trace is one node of a pair (a merge's benchmark): its last
  // thread exchanges a clock sync message each way with the other node's
  // every 10 ms (sync ids alike in both), on one clock.
  uint32_t node = 0;
};

struct SyntheticResult {
  uint64_t events = 0, bytes = 0;
  uint64_t anomalies = 0;         // task instances made 20x longer
  uint64_t messages = 0, orphans = 0;
};

// Writes the trace to `path` (which must not exist). False with a message on failure.
bool write_synthetic_trace(const std::string& path, const SyntheticOptions& opt, SyntheticResult& result,
                           std::string& error);

// For benchmarks: writes a synthetic trace of `events` events on `threads`
// threads at `path` unless a file is there already, and says so on stdout.
// False after printing "TOOL: why" if it cannot.
bool ensure_bench_trace(const std::string& path, uint64_t events, uint32_t threads, const char* tool,
                        bool* generated = nullptr);

}  // namespace tinescope::bench
