// A program for `tinescope record --sched` (record_sched_test.cpp) that
// makes a real priority inversion: every thread on CPU 0, SCHED_FIFO, a
// plain (not priority-inheriting) mutex. inv.L (priority 10) takes the
// lock and works 20 ms of CPU; inv.H (30) wakes and waits for it; inv.M
// (20) wakes and works 15 ms, keeping inv.L (and so inv.H) from running.
// Each lock call is recorded (ts_lock). Exits 4 where the kernel refuses
// SCHED_FIFO or the CPU pinning (the test then skips).
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "tinescope/tinescope.hpp"

namespace {

int64_t thread_cpu_ns() {
  timespec t;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

void work_ms(int ms) {
  const int64_t end = thread_cpu_ns() + int64_t(ms) * 1'000'000;
  while (thread_cpu_ns() < end) {
  }
}

bool fifo(int priority) {
  sched_param p{};
  p.sched_priority = priority;
  return pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) == 0;
}

pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;  // PTHREAD_PRIO_NONE: no inheritance
std::atomic<bool> locked{false};
constexpr const char* kLock = "inv.mutex";

void take() {
  if (pthread_mutex_trylock(&mutex) != 0) {
    ts::lock(TS_LOCK_CONTEND, kLock, 1);
    pthread_mutex_lock(&mutex);
  }
  ts::lock(TS_LOCK_ACQUIRE, kLock, 1);
}
void give() {
  ts::lock(TS_LOCK_RELEASE, kLock, 1);
  pthread_mutex_unlock(&mutex);
}

}  // namespace

int main() {
  if (ts_start_from_env() != 0) return 3;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0 || !fifo(60)) return 4;
  ts::thread_name("inv.main");
  std::thread low([] {
    ts::thread_name("inv.L");
    fifo(10);
    take();
    locked = true;
    work_ms(20);
    give();
  });
  while (!locked) ::usleep(200);
  std::thread high([] {
    ts::thread_name("inv.H");
    fifo(30);
    ::usleep(1000);
    take();
    give();
  });
  std::thread middle([] {
    ts::thread_name("inv.M");
    fifo(20);
    ::usleep(3000);
    work_ms(15);
  });
  high.join(), middle.join(), low.join();
  return 0;
}
