// What the benchmarks share: a stopwatch and the peak of this process's
// anonymous memory (what it allocated, not the page cache it maps).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>

namespace tinescope::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

inline uint64_t anon_rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(8));
  return 0;
}

// Samples RssAnon every 5 ms from construction to finish_mb() and keeps the peak.
struct PeakAnon {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> peak{0};
  std::thread t;
  PeakAnon() {
    t = std::thread([this] {
      while (!stop) {
        peak = std::max<uint64_t>(peak, anon_rss_kb());
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  double finish_mb() {
    stop = true;
    t.join();
    return double(std::max<uint64_t>(peak, anon_rss_kb())) / 1024;
  }
};

}  // namespace tinescope::bench
