// A program for `tinescope record --sched` (record_sched_test.cpp): it links
// the recorder and starts it from its environment; its main thread spins 5
// ms, sleeps 10 ms, spins 5 ms (each a scope), while a worker spins 20 ms.
// A spin counts the thread's own CPU time, not the wall clock's: on a busy
// machine (CI runs two tests on two cores) a spin still runs its 5 ms.
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include "tinescope/tinescope.hpp"

namespace {

int64_t thread_cpu_ns() {
  timespec t;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

void spin(std::chrono::milliseconds d) {
  const int64_t end = thread_cpu_ns() + std::chrono::nanoseconds(d).count();
  while (thread_cpu_ns() < end) {
  }
}

}  // namespace

int main() {
  if (ts_start_from_env() != 0) return 3;
  ts::thread_name("sleeper.main");
  std::thread worker([] {
    ts::thread_name("sleeper.worker");
    TS_SCOPE("work");
    spin(std::chrono::milliseconds(20));
  });
  {
    TS_SCOPE("spin");
    spin(std::chrono::milliseconds(5));
  }
  {
    TS_SCOPE("sleep");
    ::usleep(10000);
  }
  {
    TS_SCOPE("spin");
    spin(std::chrono::milliseconds(5));
  }
  worker.join();
  return 0;
}
