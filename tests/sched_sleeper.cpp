// A program for `tinescope record --sched` (record_sched_test.cpp): it links
// the recorder and starts it from its environment; its main thread spins 5
// ms, sleeps 10 ms, spins 5 ms (each a scope), while a worker spins 20 ms.
#include <unistd.h>

#include <chrono>
#include <thread>

#include "tinescope/tinescope.hpp"

namespace {

void spin(std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
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
