// Overload: the collector cannot keep up. The application thread must never
// block, and every event must be either in the trace or counted as dropped.
#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "tinescope/tinescope.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

using namespace format;

struct Tally {
  uint64_t recorded = 0, dropped = 0;
};

Tally tally(const Collected& c, uint32_t feedlet) {
  Tally t;
  for (const OwnedEvent& o : c.events) t.recorded += o.e.feedlet == feedlet && o.e.type == kInstant;
  for (const trace::ChunkInfo& ch : c.chunks)
    if (ch.header.feedlet == feedlet) t.dropped += ch.header.dropped_before;
  return t;
}

// The sink is a pipe nobody reads: the collector blocks in write() and stops
// draining. The producer must still run to completion, dropping and counting.
TEST(RecorderOverload, ProducerNeverBlocksWhenTheCollectorIsStuck) {
  const std::string path = temp_path("stuck-fifo");
  unlink(path.c_str());
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  int rfd = open(path.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(rfd, 0);
  ts_config cfg{};
  cfg.file_path = path.c_str();
  cfg.overwrite = 1;
  cfg.buffer_bytes = 4096;  // 256 events
  ASSERT_EQ(ts_start(&cfg), 0) << ts_last_error();

  constexpr uint64_t kEvents = 2'000'000;
  uint64_t tid = 0;
  double seconds = 0;
  std::thread producer([&] {
    tid = uint64_t(gettid());
    auto t0 = std::chrono::steady_clock::now();
    // Fill the pipe first so the collector is certainly stuck in write().
    for (uint64_t i = 0; i < kEvents; ++i) ts::instant("overload");
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  producer.join();  // returns although nobody has read the pipe yet
  EXPECT_LT(seconds, 20.0);

  std::string bytes;
  std::thread drain([&] {
    fcntl(rfd, F_SETFL, 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(rfd, buf, sizeof buf)) > 0) bytes.append(buf, size_t(n));
  });
  ts_stop();
  drain.join();
  close(rfd);
  unlink(path.c_str());

  Collected c = read_bytes(bytes);
  uint32_t feedlet = c.feedlet_of_tid(tid);
  ASSERT_NE(feedlet, UINT32_MAX);
  Tally t = tally(c, feedlet);
  EXPECT_EQ(t.recorded + t.dropped, kEvents) << "recorded " << t.recorded << " dropped " << t.dropped;
  EXPECT_GT(t.dropped, kEvents / 2) << "the collector was stuck: most events must have been dropped";
  EXPECT_TRUE(c.damage.empty());
  ts_stats st{};
  ts_get_stats(&st);
  EXPECT_EQ(st.events_dropped, t.dropped);
}

// A real file, a tiny ring and a producer far faster than the collector:
// drops interleave with recorded events, and the books still balance.
TEST(RecorderOverload, EmittedEqualsRecordedPlusDroppedExactly) {
  const std::string path = temp_path("overload");
  unlink(path.c_str());
  ts_config cfg{};
  cfg.file_path = path.c_str();
  cfg.buffer_bytes = 4096;
  ASSERT_EQ(ts_start(&cfg), 0) << ts_last_error();
  constexpr int kThreads = 2;
  constexpr uint64_t kEvents = 3'000'000;
  uint64_t tids[kThreads];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      tids[t] = uint64_t(gettid());
      for (uint64_t i = 0; i < kEvents; ++i) ts::instant("overload");
    });
  for (auto& th : threads) th.join();
  ts_stop();
  Collected c = read_trace(path);
  uint64_t total_dropped = 0;
  for (int t = 0; t < kThreads; ++t) {
    Tally tl = tally(c, c.feedlet_of_tid(tids[t]));
    EXPECT_EQ(tl.recorded + tl.dropped, kEvents) << "thread " << t;
    total_dropped += tl.dropped;
  }
  EXPECT_GT(total_dropped, 0u) << "a 4 KiB ring at full speed must overflow";
  EXPECT_TRUE(c.damage.empty());
  EXPECT_TRUE(c.losses.empty());
  unlink(path.c_str());
}

}  // namespace
}  // namespace tinescope::test
