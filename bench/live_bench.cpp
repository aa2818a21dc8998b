// Live TiVo mode under load: a real recording process (this program, run
// again as a source) streams intervals at a fixed rate over a unix socket to
// the viewer, which saves, indexes and draws them in a GLFW window (run it
// under xvfb-run where there is no display). Prints `figure: NAME VALUE UNIT`:
//   live.latency_ms.p95      from an event's timestamp to the first frame
//                            whose picture holds it, at 10 M events/s
//   live.ingest_events_per_s the highest rate (of a rising ladder) that the
//                            viewer takes with zero loss while drawing:
//                            nothing dropped by the recorder, nothing lost
//                            on the feed, every recorded event indexed.
// The source waits for the viewer to connect, so no event precedes it.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "tinescope/tinescope.hpp"
#include "tinescope/app/viewer.hpp"

extern char** environ;

namespace {

using namespace tinescope;

uint64_t mono_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

// ---- the source: `live_bench --source ADDRESS RATE SECONDS`
int run_source(const std::string& address, double rate, double seconds) {
  ts_config c{};
  c.live_address = address.c_str();
  c.flush_interval_us = 5000;  // a partly filled chunk goes out within 5 ms
  if (ts_start(&c) != 0) {
    std::fprintf(stderr, "source: %s\n", ts_last_error());
    return 1;
  }
  ts_stats st{};
  for (uint64_t waited = 0; st.live_clients == 0; waited += 5) {
    if (waited > 20000) {
      std::fprintf(stderr, "source: no viewer connected\n");
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ts_get_stats(&st);
  }
  // Threads of up to 6 M events/s each, paced in steps of 64 events.
  const unsigned threads = unsigned(std::max(1.0, std::ceil(rate / 6e6)));
  std::vector<std::thread> workers;
  std::atomic<uint64_t> emitted{0};
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      ts_thread_name(ts_intern(("source." + std::to_string(t)).c_str()));
      const double per_ns = rate / threads / 1e9;
      const uint64_t start = mono_ns(), end = start + uint64_t(seconds * 1e9);
      uint64_t sent = 0;
      for (uint64_t now = start; now < end; now = mono_ns()) {
        const uint64_t due = uint64_t(double(now - start) * per_ns);
        while (sent + 2 <= due + 64) {
          ts_begin("work");
          ts_end("work");
          sent += 2;
        }
      }
      emitted += sent;
    });
  for (auto& w : workers) w.join();
  ts_stop();
  ts_get_stats(&st);
  std::printf("emitted %llu dropped %llu live_dropped %llu\n", (unsigned long long)emitted.load(),
              (unsigned long long)st.events_dropped, (unsigned long long)st.live_chunks_dropped);
  return 0;
}

struct Step {
  double rate = 0;
  uint64_t recorded = 0, dropped = 0, live_dropped = 0, indexed = 0, lost_chunks = 0;
  std::vector<std::pair<uint64_t, int64_t>> frames;  // (presented at, newest data shown)
  uint64_t from_ns = 0, to_ns = 0;                   // the source's steady part
  // Every emitted event indexed (the index also holds the source's thread names).
  bool lossless() const { return recorded > 0 && !dropped && !live_dropped && !lost_chunks && indexed >= recorded; }
};

bool run_step(const std::string& self, const std::string& dir, double rate, double seconds, Step& out) {
  out.rate = rate;
  const std::string address = "unix:" + dir + "/feed-" + std::to_string(int64_t(rate)) + ".sock";
  index::LiveOptions lo;
  lo.save_dir = dir;
  lo.retry_ms = 10;
  std::string error;
  std::shared_ptr<index::LiveSource> src = index::LiveSource::start(address, lo, error);
  if (!src) return std::fprintf(stderr, "live_bench: %s\n", error.c_str()), false;

  int pipefd[2];
  if (pipe(pipefd) != 0) return false;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_addclose(&fa, pipefd[0]);
  const std::string r = std::to_string(rate), s = std::to_string(seconds);
  const char* argv[] = {self.c_str(), "--source", address.c_str(), r.c_str(), s.c_str(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, self.c_str(), &fa, nullptr, const_cast<char**>(argv), environ) != 0) return false;
  close(pipefd[1]);

  app::ViewerOptions vo;
  vo.vsync = false;
  auto viewer = app::Viewer::create(std::make_shared<render::Scene>(), {}, {}, vo, error);
  if (!viewer) return std::fprintf(stderr, "live_bench: %s\n", error.c_str()), false;
  viewer->add_live(src);
  const uint64_t started = mono_ns();
  // Frames at up to 60 a second until the source has stopped and its capture is saved.
  int status = 0;
  bool exited = false;
  auto next = std::chrono::steady_clock::now();
  for (;;) {
    viewer->frame();
    out.frames.push_back({mono_ns(), viewer->shown_until()});
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) exited = true;
    if (exited && !src->status().receiving) break;
    if (mono_ns() - started > uint64_t((seconds + 30) * 1e9)) {
      std::fprintf(stderr, "live_bench: the source did not finish\n");
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    next += std::chrono::microseconds(16667);
    std::this_thread::sleep_until(next);
    if (std::chrono::steady_clock::now() > next) next = std::chrono::steady_clock::now();
  }
  viewer.reset();
  src->stop();
  char buf[256] = {};
  const ssize_t n = read(pipefd[0], buf, sizeof buf - 1);
  close(pipefd[0]);
  unsigned long long rec = 0, drop = 0, ldrop = 0;
  if (n <= 0 || std::sscanf(buf, "emitted %llu dropped %llu live_dropped %llu", &rec, &drop, &ldrop) != 3) {
    std::fprintf(stderr, "live_bench: the source said nothing\n");
    return false;
  }
  out.recorded = rec, out.dropped = drop, out.live_dropped = ldrop;
  for (auto& ix : src->indexes()) {
    out.indexed += ix->events();
    for (const trace::Loss& l : ix->losses()) out.lost_chunks += l.count;
    if (!ix->damage().empty()) out.lost_chunks += ix->damage().size();
    if (ix->first_ts() < ix->last_ts()) {
      // The steady part: a second in from the start, half a second before the end.
      out.from_ns = uint64_t(ix->to_ns(ix->first_ts())) + 1'000'000'000;
      out.to_ns = uint64_t(ix->to_ns(ix->last_ts())) - 500'000'000;
    }
  }
  for (auto& ix : src->indexes()) std::filesystem::remove(ix->trace_path()), std::filesystem::remove(ix->index_path());
  return true;
}

// For events at each millisecond of the steady part: the wait until a frame showed them.
double latency_p95_ms(const Step& s) {
  std::vector<double> lat;
  size_t f = 0;
  for (uint64_t t = s.from_ns; t < s.to_ns; t += 1'000'000) {
    while (f < s.frames.size() && s.frames[f].second < int64_t(t)) ++f;
    if (f == s.frames.size()) return -1;
    lat.push_back(double(s.frames[f].first - t) / 1e6);
  }
  if (lat.empty()) return -1;
  std::sort(lat.begin(), lat.end());
  return lat[size_t(double(lat.size() - 1) * 0.95)];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--source") return run_source(argv[2], std::atof(argv[3]), std::atof(argv[4]));
  CLI::App app{"live_bench: the viewer's live ingest and latency"};
  bool quick = false;
  double seconds = 5;
  app.add_flag("--quick", quick, "short steps, low rates (a smoke test)");
  app.add_option("--seconds", seconds, "length of each step");
  std::vector<double> rates;
  app.add_option("--rates", rates, "the ladder of rates, events/s (default 2.5M .. 30M)");
  CLI11_PARSE(app, argc, argv);
  if (!std::getenv("DISPLAY")) {
    std::fprintf(stderr, "live_bench: no display; run it under xvfb-run (scripts/bench.sh does)\n");
    return 1;
  }
  char tmpl[] = "/tmp/tinescope-live-bench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  if (quick) seconds = 2.5;
  const std::vector<double> ladder = !rates.empty() ? rates
                                     : quick ? std::vector<double>{1e6, 2e6}
                                             : std::vector<double>{2.5e6, 5e6, 10e6, 15e6, 20e6, 30e6};

  double best = 0, latency = -1, latency_rate = 0;
  for (double rate : ladder) {
    Step s;
    if (!run_step(self, dir, rate, seconds, s)) return 1;
    const double p95 = latency_p95_ms(s);
    std::printf("step %.1f M events/s: emitted %llu, dropped %llu, feed chunks dropped %llu, indexed %llu, "
                "lost chunks %llu, %zu frames, latency p95 %.1f ms%s\n",
                rate / 1e6, (unsigned long long)s.recorded, (unsigned long long)s.dropped,
                (unsigned long long)s.live_dropped, (unsigned long long)s.indexed, (unsigned long long)s.lost_chunks,
                s.frames.size(), p95, s.lossless() ? "" : "  (LOSS)");
    std::fflush(stdout);
    if (rate <= 10e6 || latency < 0) latency = p95, latency_rate = rate;
    if (!s.lossless()) break;
    best = rate;
  }
  std::filesystem::remove_all(dir);
  std::printf("figure: live.latency_ms.p95 %.1f ms (event time to the first frame showing it, at %.3g M events/s; "
              "goal <= 100 ms: %.2fx of 100)\n",
              latency, latency_rate / 1e6, latency / 100);
  std::printf("figure: live.ingest_events_per_s %.4g events/s (highest lossless step while drawing; goal >= 10 M "
              "events/s: %.2fx of 10 M)\n",
              best, best / 10e6);
  return 0;
}
