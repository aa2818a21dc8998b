#include "synthetic_trace.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <barrier>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

#include "tinescope/trace_writer.hpp"

namespace tinescope::bench {

using namespace format;

namespace {

// String ids, defined in the metadata chunk.
enum : uint32_t { kTask = 1, kTick = 2, kQueueDepth = 3, kPhase0 = 4, kPhases = 16, kThreadNames = kPhase0 + kPhases };

constexpr uint64_t kSyncEveryNs = 10'000'000;  // (SyntheticOptions::node)
constexpr uint64_t kSliceNs = 1'000'000;  // threads advance in lockstep slices; messages take >= 1 slice

struct Recv {
  uint64_t ts, id, channel, size;
  bool operator>(const Recv& o) const { return ts > o.ts; }
};

struct Thread {
  ChunkBuilder cb;
  uint64_t rng = 0, next_task = 0, task_no = 0, sent = 0, next_sync = 0;
  int64_t depth_counter = 0;
  std::mutex inbox_mu;
  std::priority_queue<Recv, std::vector<Recv>, std::greater<Recv>> inbox;
};

uint64_t next(uint64_t& s) {  // xorshift64*
  s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
  return s * 2685821657736338717ull;
}

class Writer {
 public:
  explicit Writer(int fd) : fd_(fd) {}
  void write(const std::vector<uint8_t>& bytes) {
    std::lock_guard lock(mu_);
    const uint8_t* p = bytes.data();
    size_t n = bytes.size();
    while (n && ok_) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        ok_ = false;
        err_ = std::strerror(w < 0 ? errno : ENOSPC);
        break;
      }
      p += w, n -= size_t(w);
    }
    bytes_ += bytes.size();
  }
  bool ok() const { return ok_; }
  const std::string& error() const { return err_; }
  uint64_t bytes() const { return bytes_; }

 private:
  int fd_;
  std::mutex mu_;
  bool ok_ = true;
  std::string err_;
  uint64_t bytes_ = 0;
};

}  // namespace

bool write_synthetic_trace(const std::string& path, const SyntheticOptions& opt, SyntheticResult& result,
                           std::string& error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  Writer out(fd);
  HeaderInfo info;
  info.clock.source = uint8_t(ClockSource::Monotonic);
  info.clock.ticks_per_ns = 1.0;
  info.process_name = "synthetic";
  info.recorder = "tinescope synthetic trace generator";
  std::string header = build_file_header(info);
  out.write(std::vector<uint8_t>(header.begin(), header.end()));

  const uint32_t nt = std::max(1u, opt.threads);
  std::vector<uint8_t> frame;
  {  // names and feedlets
    ChunkBuilder meta;
    meta.feedlet = kMetadataFeedlet;
    std::vector<std::string> names = {"", "task", "tick", "queue.depth"};
    for (uint32_t i = 0; i < kPhases; ++i) names.push_back("phase." + std::to_string(i));
    for (uint32_t i = 0; i < nt; ++i) names.push_back("worker." + std::to_string(i));
    for (uint32_t id = 1; id < names.size(); ++id) {
      uint8_t* p = meta.begin(kStringDef, 0, names[id].size());
      p = ChunkBuilder::put_u64(p, id);
      p = ChunkBuilder::put_bytes(p, names[id].data(), names[id].size());
      meta.end(p);
    }
    for (uint32_t i = 0; i < nt; ++i) {
      uint8_t* p = meta.begin(kFeedletInfo, 0);
      p = ChunkBuilder::put_u64(p, i + 1);
      p = ChunkBuilder::put_u64(p, 1000 + i);
      p = ChunkBuilder::put_u64(p, kThreadNames + i);
      meta.end(p);
    }
    meta.finish(0, frame);
    out.write(frame);
  }

  std::vector<std::unique_ptr<Thread>> threads;
  for (uint32_t i = 0; i < nt; ++i) {
    auto t = std::make_unique<Thread>();
    t->cb.feedlet = i + 1;
    t->rng = opt.seed * 0x9E3779B97F4A7C15ull + i + 1;
    t->next_task = 1'000'000 + (next(t->rng) % opt.period_ns);
    threads.push_back(std::move(t));
  }

  std::atomic<uint64_t> events{0}, anomalies{0}, messages{0}, orphans{0};
  std::atomic<bool> done{false};
  uint64_t slice_end = 1'000'000 + kSliceNs;
  const unsigned workers = std::max(1u, std::min(opt.compress_threads, nt));
  std::barrier sync(workers, [&]() noexcept {
    if (events.load() >= opt.events) done = true;
    slice_end += kSliceNs;
  });

  auto generate = [&](unsigned w) {
    std::vector<uint8_t> frame;
    uint64_t local = 0;
    auto flush = [&](Thread& t) {
      if (t.cb.empty()) return;
      local += t.cb.events();
      t.cb.finish(0, frame);
      out.write(frame);
    };
    auto emit = [&](Thread& t, auto&& body) {
      body();
      if (t.cb.full()) flush(t);
    };
    auto deliver = [&](Thread& t, uint64_t upto) {
      std::lock_guard lock(t.inbox_mu);
      while (!t.inbox.empty() && t.inbox.top().ts <= upto) {
        Recv r = t.inbox.top();
        t.inbox.pop();
        emit(t, [&] {
          uint8_t* p = t.cb.begin(kMessageRecv, r.ts);
          p = t.cb.put_delta(p, r.id);
          p = ChunkBuilder::put_u64(p, r.channel);
          p = ChunkBuilder::put_u64(p, r.size);
          p = ChunkBuilder::put_bytes(p, nullptr, 0);
          t.cb.end(p);
        });
      }
    };
    auto named = [&](Thread& t, uint16_t type, uint64_t ts, uint64_t name) {
      deliver(t, ts);
      emit(t, [&] {
        uint8_t* p = t.cb.begin(type, ts);
        p = ChunkBuilder::put_u64(p, name);
        t.cb.end(p);
      });
    };
    while (!done) {
      for (uint32_t i = w; i < nt; i += workers) {
        Thread& t = *threads[i];
        while (t.next_task < slice_end) {
          uint64_t ts = t.next_task;
          const bool anomaly = t.task_no % 997 == 996;
          const uint64_t scale = anomaly ? 20 : 1;
          anomalies += anomaly;
          const uint64_t task_start = ts;
          if (opt.node && i == nt - 1 && ts >= t.next_sync) {
            // Node 1 sends 2k and receives 2k + 1; node 2 the other way round.
            for (uint64_t id : {t.next_sync / kSyncEveryNs * 2, t.next_sync / kSyncEveryNs * 2 + 1}) {
              const bool send = (id % 2 == 0) == (opt.node == 1);
              deliver(t, ts);
              emit(t, [&] {
                uint8_t* p = t.cb.begin(send ? kClockSyncSend : kClockSyncRecv, ts++);
                p = ChunkBuilder::put_u64(p, id);
                p = ChunkBuilder::put_u64(p, 3 - opt.node);
                t.cb.end(p);
              });
            }
            t.next_sync += kSyncEveryNs;
          }
          if (!opt.completes) named(t, kIntervalBegin, ts, kTask);
          uint64_t phases = 2 + next(t.rng) % 4;
          for (uint64_t k = 0; k < phases; ++k) {
            uint32_t phase = kPhase0 + uint32_t(next(t.rng) % kPhases);
            ts += 200 + next(t.rng) % 800;
            named(t, kIntervalBegin, ts, phase);
            if (next(t.rng) & 1) {
              ts += 100 + next(t.rng) % 400;
              named(t, kIntervalBegin, ts, kPhase0 + (phase - kPhase0 + 1) % kPhases);
              ts += (500 + next(t.rng) % 2000) * scale;
              named(t, kIntervalEnd, ts, kPhase0 + (phase - kPhase0 + 1) % kPhases);
            }
            ts += (1000 + next(t.rng) % 4000) * scale;
            named(t, kIntervalEnd, ts, phase);
          }
          ts += 100;
          deliver(t, ts);
          t.depth_counter += int64_t(next(t.rng) % 7) - 3;
          emit(t, [&] {
            uint8_t* p = t.cb.begin(kCounterInt, ts);
            p = ChunkBuilder::put_u64(p, kQueueDepth);
            p = ChunkBuilder::put_i64(p, t.depth_counter);
            t.cb.end(p);
          });
          if (next(t.rng) % 4 == 0) named(t, kInstant, ts, kTick);
          if (nt > 1 && next(t.rng) % 20 == 0) {  // a message to the next thread
            uint64_t id = uint64_t(t.cb.feedlet) << 40 | t.sent++;
            uint64_t size = 64 + next(t.rng) % 4096;
            deliver(t, ts);
            emit(t, [&] {
              uint8_t* p = t.cb.begin(kMessageSend, ts);
              p = t.cb.put_delta(p, id);
              p = ChunkBuilder::put_u64(p, 1);
              p = ChunkBuilder::put_u64(p, size);
              p = ChunkBuilder::put_bytes(p, nullptr, 0);
              t.cb.end(p);
            });
            ++messages;
            if (id % 1000 == 999) {
              ++orphans;
            } else {
              Thread& dst = *threads[(t.cb.feedlet) % nt];
              std::lock_guard lock(dst.inbox_mu);
              dst.inbox.push(Recv{ts + kSliceNs + next(t.rng) % kSliceNs, id, 1, size});
            }
          }
          ts += 300;
          if (opt.completes) {
            deliver(t, ts);
            emit(t, [&] {
              uint8_t* p = t.cb.begin(kIntervalComplete, ts);
              p = ChunkBuilder::put_u64(p, kTask);
              p = ChunkBuilder::put_u64(p, ts - task_start);
              t.cb.end(p);
            });
          } else {
            named(t, kIntervalEnd, ts, kTask);
          }
          ++t.task_no;
          t.next_task += opt.period_ns * (anomaly ? 21 : 1) / 1 + next(t.rng) % (opt.period_ns / 10 + 1);
          t.next_task = std::max(t.next_task, ts + 1);
        }
        events += local;
        local = 0;
      }
      sync.arrive_and_wait();
    }
    for (uint32_t i = w; i < nt; i += workers) {
      Thread& t = *threads[i];
      deliver(t, UINT64_MAX);
      flush(t);
    }
    events += local;
  };
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < workers; ++w) pool.emplace_back(generate, w);
  for (auto& th : pool) th.join();
  ::close(fd);
  if (!out.ok()) {
    error = path + ": " + out.error();
    return false;
  }
  result.events = events;
  result.bytes = out.bytes();
  result.anomalies = anomalies;
  result.messages = messages;
  result.orphans = orphans;
  return true;
}

bool ensure_bench_trace(const std::string& path, uint64_t events, uint32_t threads, const char* tool,
                        bool* generated) {
  if (generated) *generated = false;
  if (::access(path.c_str(), F_OK) == 0) return true;
  SyntheticOptions opt;
  opt.events = events;
  opt.threads = threads;
  SyntheticResult r;
  std::string error;
  auto t0 = std::chrono::steady_clock::now();
  if (!write_synthetic_trace(path, opt, r, error)) {
    std::fprintf(stderr, "%s: %s\n", tool, error.c_str());
    return false;
  }
  std::printf("generated %s: %llu events on %u threads, %.2f GB in %.1f s\n", path.c_str(), (unsigned long long)r.events,
              threads, double(r.bytes) / 1e9,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (generated) *generated = true;
  return true;
}

}  // namespace tinescope::bench
