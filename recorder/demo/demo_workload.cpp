// tinescope-demo: the seed's case studies as a real program with real threads
// and real timing, recorded with the tinescope recorder.
//
//  audio    22.05 kHz: one "audio.sample" interval every 45.3515 us, and every
//           50 ms a 300 us "interrupt" that delays the samples behind it
//           (TuningFork's cycle-counter resync).
//  gc       Metronome-like collector: 500 us quanta under a 70% minimum
//           mutator utilisation over 10 ms; in the sweep phase each quantum's
//           termination code gets slower, so quanta lengthen from 500 us to
//           1500 us (TuningFork section 4.2). --no-sweep-bug fixes it.
//  client,  a request generator and workers with mutex-protected queues:
//  worker.N messages with ids and payloads, lock events, queue depth
//           counters; one message in 1000 is lost by a worker, never received.
//
// Work is CPU time (a sample's 4 us, a GC quantum's 500 us, a request's
// 10-40 us spin), waiting is sleeping, so that on two cores what the trace
// shows is the story and not the demo's threads preempting each other. Every
// wait is an absolute clock_nanosleep on CLOCK_MONOTONIC with 1 ns timer
// slack; the audio task, whose samples must start on the exact 22.05 kHz
// grid, sleeps to a margin before each due time and spins only that margin,
// which follows the wake-ups' observed lateness. The audio task and the GC
// keep to CPUs of their own, and the GC runs at real-time priority where the
// process may (TuningFork's real-time Java did): a mark quantum is 500 us.
//
// Usage: tinescope-demo [-o FILE] [--live ADDR] [--duration S] [--rate X]
//        tinescope-demo --transactions [-o FILE] [--duration S]: the demo, and
//        a second process of transactions sharing a CPU with the GC, in a
//        trace of its own (FILE's stem + .txn.tine): TuningFork's figure 5
//        tinescope-demo --node [-o FILE] [--duration S]: two nodes, two traces
//        whose clocks differ (node_demo.cpp)
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tinescope/tinescope.hpp"

int run_node_demo(const std::string& out, double duration, bool overwrite);  // node_demo.cpp

namespace {

std::atomic<bool> g_stop{false};

uint64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

void spin_until(uint64_t deadline_ns) {
  while (now_ns() < deadline_ns) {
  }
}

void sleep_until(uint64_t deadline_ns) {
  const timespec t{time_t(deadline_ns / 1000000000u), long(deadline_ns % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr) == EINTR) {
  }
}

// Waits for the audio task's due times: a sleep to `margin` before each, then
// a spin to it, for a start on the grid (never early). The margin follows
// the tail of the wake-ups' lateness on this machine (a few us on bare
// metal, 12-30 us in a VM): about 2% of wake-ups come after the due time.
class Pacer {
 public:
  void wait(uint64_t due) {
    const uint64_t now = now_ns();
    if (due > now + margin_ + kMinSleep) {
      const uint64_t target = due - margin_;
      sleep_until(target);
      // Up by kUp after a wake-up past the due time, down by kDown after
      // one in time: it settles where kDown / (kUp + kDown) of them are late.
      if (now_ns() > due) margin_ = std::min(margin_ + kUp, kMaxMargin);
      else margin_ = std::max(margin_ - kDown, kMinMargin);
    } else {
      margin_ = std::max(margin_ - kDown, kMinMargin);  // too wide to sleep in: try narrower
    }
    spin_until(due);
  }

 private:
  // A sleep shorter than kMinSleep costs more than it saves.
  static constexpr uint64_t kMinSleep = 5'000, kUp = 5'000, kDown = 100, kMinMargin = 2'000, kMaxMargin = 200'000;
  uint64_t margin_ = 20'000;
};

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

// Real-time priority (SCHED_FIFO) for the GC where this process may have it
// (root, CAP_SYS_NICE or RLIMIT_RTPRIO): another program's busy threads then
// cannot take its CPU in the middle of a quantum, and its MMU holds it to
// 30% of any 10 ms. Without it, the normal priority (a busy machine can
// stretch a quantum). Not the audio task: in a VM it is runnable most of
// the time (a wake-up costs ~15 us of CPU), and above every other thread it
// starved a live viewer of the demo on two cores.
void try_realtime() {
  sched_param p{};
  p.sched_priority = 1;
  pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
}

// cpu >= 0: the audio task runs there only (away from the GC's).
void audio_thread(int cpu) {
  pthread_setname_np(pthread_self(), "audio");
  ts::thread_name("audio");
  if (cpu >= 0) pin_to(cpu);
  const double period_ns = 1e9 / 22050.0;  // 45351.47 ns
  const uint64_t start = now_ns();
  uint64_t next_interrupt = start + 50'000'000;
  Pacer pacer;
  for (uint64_t n = 0; !g_stop.load(std::memory_order_relaxed); ++n) {
    // Late by more than a period (preempted, or the interrupt ran long):
    // the missed samples are lost, as in a real audio underrun; the
    // schedule stays on its 22.05 kHz grid instead of bursting to catch up.
    uint64_t due = start + uint64_t(double(n) * period_ns);
    if (now_ns() > due + uint64_t(period_ns)) {
      n = uint64_t(double(now_ns() - start) / period_ns) + 1;
      due = start + uint64_t(double(n) * period_ns);
      ts::instant("audio.underrun");
    }
    pacer.wait(due);
    if (now_ns() >= next_interrupt) {
      // The OS takes the CPU for ~300 us to resynchronise the cycle counter.
      // 300 us from when it really starts: a late start (a busy machine, a
      // sanitizer) must not make it shorter.
      TS_SCOPE("interrupt");
      spin_until(now_ns() + 300'000);
      next_interrupt += 50'000'000;
    }
    TS_SCOPE("audio.sample");
    spin_until(now_ns() + 4'000);  // synthesise one sample: ~4 us
  }
}

// cpu >= 0: the GC runs there only (with --transactions, beside the
// transaction process). realtime: try_realtime(); not with --live, where a
// viewer on the same CPUs draws the feed: above it, the GC's quanta starved
// the viewer's picture builds under a sanitizer (gui.live, 1 run in 2).
void gc_thread(bool sweep_bug, int cpu, bool realtime) {
  pthread_setname_np(pthread_self(), "gc");
  ts::thread_name("gc");
  if (cpu >= 0) pin_to(cpu);
  if (realtime) try_realtime();
  constexpr uint64_t kQuantum = 500'000, kWindow = 10'000'000, kMaxGcInWindow = 3'000'000;  // MMU 70%
  std::vector<std::pair<uint64_t, uint64_t>> recent;  // GC intervals in the trailing window
  int64_t allocated = 0;
  uint64_t quantum_id = 0;
  for (int cycle = 0; !g_stop.load(); ++cycle) {
    // Mutator phase: allocation grows the heap.
    uint64_t mutator_end = now_ns() + 200'000'000;
    while (now_ns() < mutator_end && !g_stop.load()) {
      allocated += 64 * 1024;
      ts::counter("heap.allocated_bytes", allocated);
      sleep_until(now_ns() + 2'000'000);
    }
    TS_SCOPE("gc.cycle");
    for (int phase = 0; phase < 2 && !g_stop.load(); ++phase) {
      const char* phase_name = phase == 0 ? "gc.mark" : "gc.sweep";
      ts::Scope phase_scope(phase_name);
      const int quanta = 60;
      for (int q = 0; q < quanta && !g_stop.load(); ++q) {
        // Minimum mutator utilisation: run a quantum only if the GC time in
        // the trailing 10 ms window stays within 30%. The window's GC time
        // falls by at most the time that passes, so sleeping the excess
        // never oversleeps, and a few sleeps reach the moment it fits.
        for (;;) {
          uint64_t now = now_ns(), busy = 0;
          for (auto& [b, e] : recent)
            if (e > now - kWindow) busy += e - std::max(b, now - kWindow);
          if (busy + kQuantum <= kMaxGcInWindow) break;
          sleep_until(now + std::max<uint64_t>(busy + kQuantum - kMaxGcInWindow, 20'000));
        }
        ts::sched(TS_JOB_START, "gc.quantum", quantum_id, uint32_t(sched_getcpu()));
        uint64_t begin;
        {
          TS_SCOPE("gc.quantum");
          // Read after the scope opens, so that a preemption before it can
          // only lengthen the recorded quantum, never shorten it.
          begin = now_ns();
          {
            TS_SCOPE("gc.work");
            spin_until(begin + 480'000);
          }
          TS_SCOPE("gc.quantum_end");
          // The bug: statistics code walks every swept page, so the end of a
          // sweep quantum grows from 20 us to 1020 us over the phase.
          uint64_t extra = phase == 1 && sweep_bug ? uint64_t(q) * 1'000'000 / (quanta - 1) : 0;
          spin_until(begin + 500'000 + extra);
        }
        ts::sched(TS_JOB_COMPLETE, "gc.quantum", quantum_id++, uint32_t(sched_getcpu()));
        uint64_t end = now_ns();
        recent.emplace_back(begin, end);
        while (!recent.empty() && recent.front().second < end - kWindow) recent.erase(recent.begin());
        if (phase == 1) {
          allocated = std::max<int64_t>(0, allocated - 256 * 1024);
          ts::counter("heap.allocated_bytes", allocated);
        }
      }
    }
  }
}

struct Message {
  uint64_t id;
  uint64_t created_ns;
};

struct Queue {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<Message> items;
  const char* depth_name;
  uint64_t channel;
};

void push(Queue& q, Message m) {
  size_t depth;
  ts::lock(TS_LOCK_CONTEND, "queue.mutex", q.channel);
  {
    std::lock_guard<std::mutex> lock(q.mutex);
    ts::lock(TS_LOCK_ACQUIRE, "queue.mutex", q.channel);
    q.items.push_back(m);
    depth = q.items.size();
    ts::lock(TS_LOCK_RELEASE, "queue.mutex", q.channel);
  }
  ts::counter(q.depth_name, int64_t(depth));
  q.cv.notify_one();
}

bool pop(Queue& q, Message& m) {
  std::unique_lock<std::mutex> lock(q.mutex);
  if (!q.cv.wait_for(lock, std::chrono::milliseconds(20), [&] { return !q.items.empty(); })) return false;
  ts::lock(TS_LOCK_ACQUIRE, "queue.mutex", q.channel);
  m = q.items.front();
  q.items.pop_front();
  size_t depth = q.items.size();
  ts::lock(TS_LOCK_RELEASE, "queue.mutex", q.channel);
  lock.unlock();
  ts::counter(q.depth_name, int64_t(depth));
  return true;
}

void worker_thread(int index, std::vector<Queue>* queues, uint32_t txn_type) {
  char name[16];
  std::snprintf(name, sizeof name, "worker.%d", index);
  pthread_setname_np(pthread_self(), name);
  ts::thread_name(name);
  Queue& in = (*queues)[size_t(index)];
  std::mt19937_64 rng(uint64_t(index) * 7919);
  Message m;
  uint64_t handled = 0;
  while (!g_stop.load()) {
    if (!pop(in, m)) continue;
    if (rng() % 1000 == 0) continue;  // lost: popped and never handled (an orphan send)
    char payload[24];
    int len = std::snprintf(payload, sizeof payload, "req %llu", (unsigned long long)m.id);
    ts::recv(m.id, in.channel, 256, payload, uint32_t(len));
    {
      TS_SCOPE("worker.handle");
      spin_until(now_ns() + 10'000 + rng() % 30'000);
    }
    ++handled;
    ts::event(txn_type, m.id, double(now_ns() - m.created_ns) / 1e6, "request");
    // Half of the requests go on to a second stage at the next worker.
    if (rng() % 2 == 0 && queues->size() > 1) {
      Queue& next = (*queues)[size_t(index + 1) % queues->size()];
      uint64_t id = ts::message_id();
      ts::send(id, next.channel, 128, "stage2", 6);
      push(next, Message{id, m.created_ns});
    }
  }
}

void client_thread(std::vector<Queue>* queues, double rate_per_s) {
  pthread_setname_np(pthread_self(), "client");
  ts::thread_name("client");
  std::mt19937_64 rng(42);
  const uint64_t start = now_ns();
  const double gap_ns = 1e9 / rate_per_s;
  for (uint64_t n = 0; !g_stop.load(); ++n) {
    sleep_until(start + uint64_t(double(n) * gap_ns));
    Queue& q = (*queues)[rng() % queues->size()];
    uint64_t id = ts::message_id();
    char payload[24];
    int len = std::snprintf(payload, sizeof payload, "req %llu", (unsigned long long)id);
    ts::send(id, q.channel, 256, payload, uint32_t(len));
    push(q, Message{id, now_ns()});
  }
}

// --transactions: the second process, a transactional application on the
// GC's CPU. A transaction is a fixed amount of CPU work (about 1 ms on an
// idle core) arriving every 2 ms; it is a "transaction" interval and a
// "transaction" event whose latency_ms is that interval's length, so that
// it lengthens by the CPU time the GC's quanta take from it (TuningFork's
// figure 5). It runs until `stop_fd` reads end-of-file (the demo is done).
int run_transactions(const std::string& path, double duration, bool overwrite, int cpu, int stop_fd) {
  if (cpu >= 0) pin_to(cpu);
  ts_config c{};
  c.file_path = path.c_str();
  c.overwrite = overwrite;
  if (ts_start(&c) != 0) {
    std::fprintf(stderr, "tinescope-demo --transactions: %s: %s\n", path.c_str(), ts_last_error());
    return 1;
  }
  ts::process_name("tinescope-demo transactions");
  ts::metadata("workload", "transactions");
  ts::metadata("demo.cpu", std::to_string(cpu).c_str());
  if (cpu >= 0) ts::cpu_name(uint32_t(cpu), ts::intern(("cpu" + std::to_string(cpu)).c_str()));
  const ts_field fields[] = {{"id", TS_FIELD_U64}, {"latency_ms", TS_FIELD_F64}, {"kind", TS_FIELD_STRING}};
  const uint32_t txn_type = ts_define_event_type("transaction", fields, 3);
  pthread_setname_np(pthread_self(), "txn");
  ts::thread_name("txn");
  constexpr uint64_t kGap = 2'000'000, kWork = 850'000;  // kWork iterations: ~1 ms
  // Past the demo's own end by a margin at most, should the demo die.
  const uint64_t deadline = now_ns() + uint64_t((duration + 10) * 1e9);
  uint64_t due = now_ns();
  volatile uint64_t sink = 0;
  for (uint64_t id = 1;; ++id) {
    pollfd p{stop_fd, POLLIN, 0};
    if (poll(&p, 1, 0) != 0 || now_ns() > deadline) break;
    const uint64_t begin = now_ns();
    {
      TS_SCOPE("transaction");
      uint64_t x = id;
      for (uint64_t i = 0; i < kWork; ++i) x = x * 6364136223846793005u + 1442695040888963407u;
      sink = sink + x;
    }
    ts::event(txn_type, id, double(now_ns() - begin) / 1e6, "transaction");
    // The next arrival on the 2 ms grid; one that is already due starts now.
    due = std::max(due + kGap, now_ns());
    sleep_until(due);
  }
  ts_stop();
  return 0;
}

void usage() {
  std::fprintf(stderr,
               "usage: tinescope-demo [-o FILE] [--live unix:PATH|tcp:HOST:PORT] [--duration SECONDS]\n"
               "                      [--rate X] [--workers N] [--no-sweep-bug] [--overwrite]\n"
               "       tinescope-demo --transactions [-o FILE] [--duration SECONDS] [--overwrite]\n"
               "       tinescope-demo --node [-o FILE] [--duration SECONDS] [--overwrite]\n"
               "  records TuningFork's case studies: a 22.05 kHz audio task with 300 us\n"
               "  interruptions every 50 ms, a Metronome-like GC whose sweep quanta lengthen,\n"
               "  and workers passing messages (1 in 1000 never received). Its threads sleep\n"
               "  while they wait (the audio task spins only a short margin before each sample),\n"
               "  and the audio task and the GC have CPUs of their own (the GC at real-time\n"
               "  priority where allowed), so on 2 cores the GC's mark quanta stay 500 us.\n"
               "  --transactions: also a second process running a 1 ms transaction every 2 ms on\n"
               "  the GC's CPU (both pinned there, the demo's other threads kept off it), its\n"
               "  own trace FILE's stem + .txn.tine: transactions lengthen while the GC runs.\n"
               "  --node: two processes (nodes A and B) exchanging requests, replies and clock\n"
               "  sync messages over sockets, each recording its own trace (FILE's stem + .a.tine,\n"
               "  .b.tine); B's clock runs 5 s ahead and 1000 ppm fast.\n");
}

}  // namespace

int main(int argc, char** argv) {
  ts_config config{};
  std::string out = "demo.tine";
  double duration = 5, rate = 1;
  int workers = 4;
  bool sweep_bug = true, node = false, transactions = false;
  const char* live = nullptr;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-o" || a == "--out") out = value();
    else if (a == "--live") live = value();
    else if (a == "--duration") duration = std::atof(value());
    else if (a == "--rate") rate = std::atof(value());
    else if (a == "--workers") workers = std::max(1, std::atoi(value()));
    else if (a == "--no-sweep-bug") sweep_bug = false;
    else if (a == "--overwrite") config.overwrite = 1;
    else if (a == "--node") node = true;
    else if (a == "--transactions") transactions = true;
    else if (a == "-h" || a == "--help") return usage(), 0;
    else return usage(), 2;
  }
  if (node) return run_node_demo(out == "demo.tine" ? "nodes.tine" : out, duration, config.overwrite != 0);
  // Every wait sleeps to an absolute time; the default 50 us timer slack
  // would make each wake-up that much later (threads inherit it).
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  // The audio task and the GC each keep to a CPU of their own, the first
  // and the last this process may use: the audio task is runnable much of
  // the time (in a VM a sleep and its wake-up cost ~15 us of CPU, a third of
  // a sample period), and sharing a CPU with it the GC lost milliseconds of
  // its quanta to it.
  // --transactions: the transaction process shares the GC's CPU, and the
  // demo's other threads (and the recorder's) keep to the others, so that
  // what slows a transaction is the GC.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  sched_getaffinity(0, sizeof allowed, &allowed);
  int audio_cpu = -1, gc_cpu = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) gc_cpu = cpu, audio_cpu = audio_cpu < 0 ? cpu : audio_cpu;
  if (audio_cpu == gc_cpu && !transactions) audio_cpu = gc_cpu = -1;  // one CPU: nothing to keep apart
  pid_t txn_child = -1;
  int stop_pipe[2] = {-1, -1};
  std::string txn_path;
  if (transactions) {
    if (out.empty() || out == "-") return std::fprintf(stderr, "tinescope-demo --transactions: needs -o FILE\n"), 2;
    std::string stem = out;
    if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".tine") == 0) stem.resize(stem.size() - 5);
    txn_path = stem + ".txn.tine";
    if (pipe(stop_pipe) != 0) return std::perror("tinescope-demo --transactions: pipe"), 1;
    // Forked before this process starts its recorder or any thread.
    txn_child = fork();
    if (txn_child < 0) return std::perror("tinescope-demo --transactions: fork"), 1;
    if (txn_child == 0) {
      ::close(stop_pipe[1]);
      std::_Exit(run_transactions(txn_path, duration, config.overwrite != 0, gc_cpu, stop_pipe[0]));
    }
    ::close(stop_pipe[0]);
    if (audio_cpu != gc_cpu) {
      CPU_CLR(gc_cpu, &allowed);
      sched_setaffinity(0, sizeof allowed, &allowed);
    }
  }
  config.file_path = out.empty() || out == "-" ? nullptr : out.c_str();
  config.live_address = live;
  config.buffer_bytes = 4u << 20;
  if (ts_start(&config) != 0) {
    std::fprintf(stderr, "tinescope-demo: %s\n", ts_last_error());
    if (txn_child > 0) ::close(stop_pipe[1]), waitpid(txn_child, nullptr, 0);
    return 1;
  }
  ts::process_name("tinescope-demo");
  ts::metadata("workload", "tuningfork case studies");
  ts::metadata("sweep_bug", sweep_bug ? "on" : "off");
  for (unsigned cpu = 0; cpu < std::thread::hardware_concurrency(); ++cpu)
    ts::cpu_name(cpu, ts::intern(("cpu" + std::to_string(cpu)).c_str()));
  const ts_field txn_fields[] = {{"id", TS_FIELD_U64}, {"latency_ms", TS_FIELD_F64}, {"kind", TS_FIELD_STRING}};
  const uint32_t txn_type = ts_define_event_type("transaction", txn_fields, 3);

  std::vector<Queue> queues(static_cast<size_t>(workers));
  for (size_t i = 0; i < queues.size(); ++i) {
    queues[i].channel = i + 1;
    queues[i].depth_name = ts::intern(("queue." + std::to_string(i + 1) + ".depth").c_str());
  }
  std::vector<std::thread> threads;
  threads.emplace_back(audio_thread, audio_cpu);
  threads.emplace_back(gc_thread, sweep_bug, gc_cpu, live == nullptr);
  for (int i = 0; i < workers; ++i) threads.emplace_back(worker_thread, i, &queues, txn_type);
  threads.emplace_back(client_thread, &queues, 2000.0 * rate);

  std::this_thread::sleep_for(std::chrono::duration<double>(duration));
  g_stop = true;
  for (std::thread& t : threads) t.join();
  ts_stop();
  ts_stats st{};
  ts_get_stats(&st);
  std::printf("tinescope-demo: %.1f s, %llu events recorded, %llu dropped, %llu bytes%s%s\n", duration,
              (unsigned long long)st.events_recorded, (unsigned long long)st.events_dropped,
              (unsigned long long)st.bytes_written, config.file_path ? " -> " : "",
              config.file_path ? config.file_path : "");
  if (txn_child > 0) {
    ::close(stop_pipe[1]);  // the transaction process's end
    int status = 0;
    waitpid(txn_child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    std::printf("tinescope-demo --transactions: %s (transactions on cpu%d, beside the GC)\n"
                "  tinescope view %s %s --clock %s=none   shows them under the GC's phases\n"
                "  (both on this machine's clock: none leaves it as it is)\n",
                txn_path.c_str(), gc_cpu, out.c_str(), txn_path.c_str(), txn_path.c_str());
  }
  return 0;
}
