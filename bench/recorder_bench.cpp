// Recorder benchmarks. Prints `figure: NAME VALUE UNIT` lines:
//   recorder.rdtsc_ns                 one rdtsc: the floor for a timestamped event
//   recorder.event_ns.1t / .2t        median cost of one event on the application
//                                     thread (1 and 2 threads), collector writing a file
//   recorder.event_ns.1t.one_core     the same with the collector on the producer's CPU
//   recorder.lossless_events_per_s    highest rate one thread sustains with zero drops
//   recorder.func_call_ns             one call of a -finstrument-functions function
//                                     (entry and exit), goal <= 2.3 x rdtsc; .one_core
//                                     with the collector on the producer's CPU
//   recorder.func_lossless_calls_per_s highest rate of such calls one thread
//                                     sustains with zero drops at the default
//                                     settings, goal >= 10 M/s
//   recorder.bytes_per_event          on disk, for the demo workload
// and each figure's ratio to its limit or goal.
//
// Usage: recorder_bench [--quick] [--demo PATH-TO-tinescope-demo]
#include <sched.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "instrumented_call.hpp"
#include "tinescope/tinescope.h"
#include "tinescope/trace_reader.hpp"

namespace {

bool g_quick = false;
uint32_t g_ring_bytes = 128u << 20;  // --ring BYTES

uint64_t mono_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

double ticks_per_ns() {
  uint64_t t0 = __rdtsc(), n0 = mono_ns();
  usleep(50000);
  return double(__rdtsc() - t0) / double(mono_ns() - n0);
}

void figure(const char* name, double value, const char* unit) {
  std::printf("figure: %s %.4g %s\n", name, value, unit);
  std::fflush(stdout);
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

std::string temp_trace(const char* name) {
  return std::string("/tmp/tinescope-bench-") + name + "-" + std::to_string(getpid()) + ".tine";
}

bool start(const std::string& path, uint32_t buffer_bytes) {
  unlink(path.c_str());
  ts_config c{};
  c.file_path = path.c_str();
  c.buffer_bytes = buffer_bytes;
  if (ts_start(&c) != 0) {
    std::fprintf(stderr, "recorder_bench: %s\n", ts_last_error());
    return false;
  }
  return true;
}

double rdtsc_ns(double tpn) {
  constexpr int kBatch = 1000;
  std::vector<double> per;
  for (int b = 0; b < (g_quick ? 200 : 5000); ++b) {
    uint64_t t0 = __rdtsc();
    uint64_t sink = 0;
    for (int i = 0; i < kBatch; ++i) sink += __rdtsc();
    uint64_t t1 = __rdtsc();
    asm volatile("" ::"r"(sink));
    per.push_back(double(t1 - t0) / tpn / kBatch);
  }
  return median(per);
}

// What a batch records, `kPairs` times: a begin and an end (two events), or
// a call of an instrumented function (its entry and exit).
enum class Work { Events, Calls };
constexpr int kPairs = 500;

inline void record_pairs(Work w, int n) {
  if (w == Work::Events) {
    for (int i = 0; i < n; ++i) {
      ts_begin("bench.event");
      ts_end("bench.event");
    }
  } else {
    int sink = 0;
    for (int i = 0; i < n; ++i) sink += bench_leaf(i);
    asm volatile("" ::"r"(sink));
  }
}

// Batches of kPairs pairs; the cost of each batch per pair.
std::vector<double> pair_batches(double tpn, int batches, Work w) {
  std::vector<double> per;
  per.reserve(size_t(batches));
  for (int b = 0; b < batches; ++b) {
    uint64_t t0 = __rdtsc();
    record_pairs(w, kPairs);
    per.push_back(double(__rdtsc() - t0) / tpn / kPairs);
  }
  return per;
}

// one_core: the collector and the producer share one CPU (affinity is
// inherited by the threads ts_start and the test create), which isolates the
// hot path from the collector's concurrent work on the other CPU.
// The median cost of one pair (a begin and an end, or a call) on the
// application thread: per event, half of it.
double pair_ns(double tpn, int threads, Work w, bool one_core = false) {
  cpu_set_t affinity;
  sched_getaffinity(0, sizeof affinity, &affinity);
  if (one_core) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    sched_setaffinity(0, sizeof one, &one);
  }
  const std::string path = temp_trace("event");
  // A ring big enough that no batch is dropped: dropping is cheaper than
  // recording and would flatter the figure.
  if (!start(path, g_ring_bytes)) return 0;
  const int batches = g_quick ? 200 : 4000;
  std::vector<std::vector<double>> per(static_cast<size_t>(threads));
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] {
    pair_batches(tpn, 20, w);  // first event: registration
    per[size_t(t)] = pair_batches(tpn, batches, w);
  });
  for (auto& t : ts) t.join();
  ts_stop();
  sched_setaffinity(0, sizeof affinity, &affinity);
  ts_stats st{};
  ts_get_stats(&st);
  if (st.events_dropped) std::fprintf(stderr, "note: %llu events dropped\n", (unsigned long long)st.events_dropped);
  unlink(path.c_str());
  std::vector<double> all;
  for (auto& v : per) all.insert(all.end(), v.begin(), v.end());
  return median(all);
}

// Records `rate` pairs/s for `seconds` in paced bursts at the default
// settings; true if no event was dropped.
bool sustains(double rate, double seconds, Work w) {
  const std::string path = temp_trace("lossless");
  if (!start(path, 0)) return false;
  bool ok = true;
  std::thread producer([&] {
    constexpr int kBurst = 200;
    const uint64_t start_ns = mono_ns();
    const uint64_t end_ns = start_ns + uint64_t(seconds * 1e9);
    const double burst_ns = kBurst / rate * 1e9;  // (kBurst pairs)
    for (uint64_t n = 0;; ++n) {
      uint64_t due = start_ns + uint64_t(double(n) * burst_ns);
      uint64_t now;
      while ((now = mono_ns()) < due) {
      }
      if (now > end_ns) break;
      if (now > due + 20'000'000) {  // the producer itself fell 20 ms behind
        ok = false;
        break;
      }
      record_pairs(w, kBurst);
    }
  });
  producer.join();
  ts_stop();
  ts_stats st{};
  ts_get_stats(&st);
  unlink(path.c_str());
  return ok && st.events_dropped == 0 && st.events_lost_io == 0;
}

// The highest rate of pairs a second one thread records with no drop.
double lossless_rate(Work w) {
  const double seconds = g_quick ? 0.2 : 1.0;
  double good = 0, bad = 0;
  for (double r = 1e6; r <= 128e6; r *= 2) {
    if (sustains(r, seconds, w)) {
      good = r;
    } else {
      bad = r;
      break;
    }
  }
  if (bad == 0) return good;
  for (int i = 0; i < (g_quick ? 2 : 6); ++i) {
    double mid = (good + bad) / 2;
    (sustains(mid, seconds, w) ? good : bad) = mid;
  }
  return good;
}

struct Counter : tinescope::trace::Visitor {
  uint64_t events = 0;
  void on_event(const tinescope::trace::Event&) override { ++events; }
};

double bytes_per_event(const std::string& demo) {
  const std::string path = temp_trace("demo");
  unlink(path.c_str());
  std::string cmd = demo + " --duration " + (g_quick ? "1" : "5") + " -o " + path + " > /dev/null";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "recorder_bench: cannot run %s\n", demo.c_str());
    return 0;
  }
  Counter c;
  std::string error;
  if (!tinescope::trace::read_file(path, c, error)) {
    std::fprintf(stderr, "recorder_bench: %s\n", error.c_str());
    return 0;
  }
  FILE* f = std::fopen(path.c_str(), "rb");
  std::fseek(f, 0, SEEK_END);
  double size = double(std::ftell(f));
  std::fclose(f);
  unlink(path.c_str());
  return size / double(c.events);
}

}  // namespace

int main(int argc, char** argv) {
  std::string demo = "recorder/tinescope-demo";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) g_quick = true;
    else if (!std::strcmp(argv[i], "--demo") && i + 1 < argc) demo = argv[++i];
    else if (!std::strcmp(argv[i], "--ring") && i + 1 < argc) g_ring_bytes = uint32_t(std::atoll(argv[++i]));
  }
  const double tpn = ticks_per_ns();
  const double rdtsc = rdtsc_ns(tpn);
  figure("recorder.rdtsc_ns", rdtsc, "ns");

  const double e1 = pair_ns(tpn, 1, Work::Events) / 2;
  figure("recorder.event_ns.1t", e1, "ns");
  figure("recorder.event_ns.1t.ratio_to_rdtsc", e1 / rdtsc, "x");
  const double e1one = pair_ns(tpn, 1, Work::Events, true) / 2;
  figure("recorder.event_ns.1t.one_core", e1one, "ns");
  figure("recorder.event_ns.1t.one_core.ratio_to_rdtsc", e1one / rdtsc, "x");
  const double e2 = pair_ns(tpn, 2, Work::Events) / 2;
  figure("recorder.event_ns.2t", e2, "ns");
  figure("recorder.event_ns.2t.ratio_to_rdtsc", e2 / rdtsc, "x");

  const double call = pair_ns(tpn, 1, Work::Calls);
  figure("recorder.func_call_ns", call, "ns");
  figure("recorder.func_call_ns.ratio_to_rdtsc", call / rdtsc, "x");
  const double call_one = pair_ns(tpn, 1, Work::Calls, true);
  figure("recorder.func_call_ns.one_core", call_one, "ns");
  figure("recorder.func_call_ns.one_core.ratio_to_rdtsc", call_one / rdtsc, "x");

  const double rate = 2 * lossless_rate(Work::Events);
  figure("recorder.lossless_events_per_s", rate, "events/s");
  figure("recorder.lossless_events_per_s.ratio_to_goal_20M", rate / 20e6, "x");

  const double calls = lossless_rate(Work::Calls);
  figure("recorder.func_lossless_calls_per_s", calls, "calls/s");
  figure("recorder.func_lossless_calls_per_s.ratio_to_goal_10M", calls / 10e6, "x");

  const double bpe = bytes_per_event(demo);
  figure("recorder.bytes_per_event", bpe, "bytes");
  figure("recorder.bytes_per_event.ratio_to_tuningfork_16B", bpe / 16.0, "x");
  return 0;
}
