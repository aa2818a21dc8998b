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
// Usage: tinescope-demo [-o FILE] [--live ADDR] [--duration S] [--rate X]
//        tinescope-demo --node [-o FILE] [--duration S]: two nodes, two traces
//        whose clocks differ (node_demo.cpp)
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
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

// Sleeps most of the way, spins the rest: sleep is coarse, spinning is exact.
void wait_until(uint64_t deadline_ns) {
  uint64_t now = now_ns();
  if (deadline_ns > now + 200'000) {
    timespec t{0, long(deadline_ns - now - 150'000)};
    nanosleep(&t, nullptr);
  }
  spin_until(deadline_ns);
}

void audio_thread() {
  pthread_setname_np(pthread_self(), "audio");
  ts::thread_name("audio");
  const double period_ns = 1e9 / 22050.0;  // 45351.47 ns
  const uint64_t start = now_ns();
  uint64_t next_interrupt = start + 50'000'000;
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
    spin_until(due);
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

void gc_thread(bool sweep_bug) {
  pthread_setname_np(pthread_self(), "gc");
  ts::thread_name("gc");
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
      wait_until(now_ns() + 2'000'000);
    }
    TS_SCOPE("gc.cycle");
    for (int phase = 0; phase < 2 && !g_stop.load(); ++phase) {
      const char* phase_name = phase == 0 ? "gc.mark" : "gc.sweep";
      ts::Scope phase_scope(phase_name);
      const int quanta = 60;
      for (int q = 0; q < quanta && !g_stop.load(); ++q) {
        // Minimum mutator utilisation: run a quantum only if the GC time in
        // the trailing 10 ms window stays within 30%.
        for (;;) {
          uint64_t now = now_ns(), busy = 0;
          for (auto& [b, e] : recent)
            if (e > now - kWindow) busy += e - std::max(b, now - kWindow);
          if (busy + kQuantum <= kMaxGcInWindow) break;
          wait_until(now + 250'000);
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
    wait_until(start + uint64_t(double(n) * gap_ns));
    Queue& q = (*queues)[rng() % queues->size()];
    uint64_t id = ts::message_id();
    char payload[24];
    int len = std::snprintf(payload, sizeof payload, "req %llu", (unsigned long long)id);
    ts::send(id, q.channel, 256, payload, uint32_t(len));
    push(q, Message{id, now_ns()});
  }
}

void usage() {
  std::fprintf(stderr,
               "usage: tinescope-demo [-o FILE] [--live unix:PATH|tcp:HOST:PORT] [--duration SECONDS]\n"
               "                      [--rate X] [--workers N] [--no-sweep-bug] [--overwrite]\n"
               "       tinescope-demo --node [-o FILE] [--duration SECONDS] [--overwrite]\n"
               "  records TuningFork's case studies: a 22.05 kHz audio task with 300 us\n"
               "  interruptions every 50 ms, a Metronome-like GC whose sweep quanta lengthen,\n"
               "  and workers passing messages (1 in 1000 never received).\n"
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
  bool sweep_bug = true, node = false;
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
    else if (a == "-h" || a == "--help") return usage(), 0;
    else return usage(), 2;
  }
  if (node) return run_node_demo(out == "demo.tine" ? "nodes.tine" : out, duration, config.overwrite != 0);
  config.file_path = out.empty() || out == "-" ? nullptr : out.c_str();
  config.live_address = live;
  config.buffer_bytes = 4u << 20;
  if (ts_start(&config) != 0) {
    std::fprintf(stderr, "tinescope-demo: %s\n", ts_last_error());
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
  threads.emplace_back(audio_thread);
  threads.emplace_back(gc_thread, sweep_bug);
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
  return 0;
}
