// The disk fills up while recording (a file-size limit stands in for a full
// disk): the application keeps running, the recorder counts exactly what it
// could not write, and what was written reads back.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <thread>

#include "tinescope/tinescope.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

TEST(RecorderDiskFull, KeepsRunningCountsTheLossAndTheTraceReadsBack) {
  const std::string path = temp_path("disk-full");
  unlink(path.c_str());
  constexpr uint64_t kEvents = 400'000;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);  // a full disk: write() fails, no signal
    rlimit limit{256 * 1024, 256 * 1024};
    setrlimit(RLIMIT_FSIZE, &limit);
    ts_config cfg{};
    cfg.file_path = path.c_str();
    cfg.buffer_bytes = 64u << 20;
    if (ts_start(&cfg) != 0) _exit(2);
    std::thread([] {
      for (uint64_t i = 0; i < kEvents; ++i) {
        ts::counter("value", int64_t(i * 7919 % 100003));  // poorly compressible
        if (i % 1000 == 0) usleep(1000);
      }
    }).join();
    ts_stop();
    ts_stats st{};
    ts_get_stats(&st);
    ssize_t w = write(fds[1], &st, sizeof st);
    _exit(w == sizeof st ? 0 : 3);
  }
  close(fds[1]);
  ts_stats st{};
  ASSERT_EQ(read(fds[0], &st, sizeof st), ssize_t(sizeof st));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the recording process must survive a full disk";
  EXPECT_EQ(WEXITSTATUS(status), 0);

  EXPECT_GT(st.events_lost_io, 0u);
  EXPECT_LE(st.bytes_written, 256u * 1024);
  Collected c = read_trace(path);
  EXPECT_TRUE(c.header.intact);
  EXPECT_EQ(c.events.size(), st.events_recorded - st.events_lost_io)
      << "every event the recorder did not count as lost is in the file";
  ASSERT_LE(c.damage.size(), 1u) << "at most the chunk cut by the limit";
  uint64_t counters = c.of_type(format::kCounterInt).size();
  EXPECT_GT(counters, 1000u);
  EXPECT_LT(counters, kEvents);
  unlink(path.c_str());
}

}  // namespace
}  // namespace tinescope::test
