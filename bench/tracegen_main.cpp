// tinescope-gen: writes a synthetic trace (see synthetic_trace.hpp).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "synthetic_trace.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tinescope-gen: write a synthetic trace of N events for benchmarks"};
  std::string out;
  tinescope::bench::SyntheticOptions opt;
  double events = 1e6;
  app.add_option("-o,--output", out, "trace file to write (must not exist)")->required();
  app.add_option("-n,--events", events, "about how many events (1e9 and more is fine)");
  app.add_option("--threads", opt.threads, "feedlets (threads) in the trace");
  app.add_option("--period-ns", opt.period_ns, "period of each thread's task");
  app.add_option("--seed", opt.seed, "random seed");
  app.add_flag("--completes", opt.completes, "each task instance as one complete event at its end");
  CLI11_PARSE(app, argc, argv);
  opt.events = uint64_t(events);
  tinescope::bench::SyntheticResult r;
  std::string error;
  auto t0 = std::chrono::steady_clock::now();
  if (!tinescope::bench::write_synthetic_trace(out, opt, r, error)) {
    std::fprintf(stderr, "tinescope-gen: %s\n", error.c_str());
    return 1;
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s: %llu events, %llu bytes (%.2f bytes/event), %llu anomalies, %llu messages (%llu orphans); "
              "%.1f s, %.1f M events/s\n",
              out.c_str(), (unsigned long long)r.events, (unsigned long long)r.bytes, double(r.bytes) / double(r.events),
              (unsigned long long)r.anomalies, (unsigned long long)r.messages, (unsigned long long)r.orphans, s,
              double(r.events) / s / 1e6);
  return 0;
}
