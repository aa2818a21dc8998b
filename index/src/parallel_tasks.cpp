#include "parallel_tasks.hpp"

#include <algorithm>
#include <chrono>

namespace tinescope::index {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

ParallelTasks::ParallelTasks(unsigned most)
    : wanted_(std::min(most, std::max(1u, std::thread::hardware_concurrency()) - 1)) {}

ParallelTasks::~ParallelTasks() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ParallelTasks::work(Batch& b) {
  for (size_t i; (i = b.next.fetch_add(1, std::memory_order_relaxed)) < b.count;) (*b.task)(i);
}

void ParallelTasks::run(size_t count, const std::function<void(size_t)>& task) {
  if (count <= 1 || wanted_ == 0 || taken_.exchange(true, std::memory_order_acquire)) {
    for (size_t i = 0; i < count; ++i) task(i);
    return;
  }
  Batch b;
  b.task = &task;
  b.count = count;
  while (threads_.size() < wanted_) threads_.emplace_back([this] { helper_loop(); });
  batch_.store(&b);
  epoch_.fetch_add(1);
  {
    std::lock_guard lock(mu_);  // a helper going to sleep sees the new epoch or is woken
  }
  wake_.notify_all();
  work(b);
  // No helper joins from here on; wait for those inside to finish their parts.
  batch_.store(nullptr);
  for (unsigned spins = 0; active_.load() != 0; ++spins) {
    if (spins % 64 == 63) {
      std::this_thread::yield();
    } else {
      cpu_relax();
    }
  }
  taken_.store(false, std::memory_order_release);
}

void ParallelTasks::helper_loop() {
  uint64_t seen = epoch_.load();
  for (;;) {
    const auto until = std::chrono::steady_clock::now() + kHelperSpin;
    for (unsigned spins = 0; epoch_.load(std::memory_order_relaxed) == seen && !stop_.load(std::memory_order_relaxed);
         ++spins) {
      cpu_relax();
      if (spins % 256 == 255 && std::chrono::steady_clock::now() > until) {
        std::unique_lock lock(mu_);
        wake_.wait(lock, [&] { return stop_ || epoch_.load() != seen; });
      }
    }
    if (stop_) return;
    seen = epoch_.load();
    active_.fetch_add(1);
    if (Batch* b = batch_.load()) work(*b);
    active_.fetch_sub(1);
  }
}

}  // namespace tinescope::index
