#include "parallel_tasks.hpp"

#include <algorithm>

namespace tinescope::index {

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
  {
    std::lock_guard lock(mu_);
    while (threads_.size() < wanted_) threads_.emplace_back([this] { helper_loop(); });
    batch_ = &b;
    ++epoch_;
  }
  wake_.notify_all();
  work(b);
  {
    // No helper joins from here on; wait for those inside to finish their parts.
    std::unique_lock lock(mu_);
    batch_ = nullptr;
    finished_.wait(lock, [&] { return b.inside == 0; });
  }
  taken_.store(false, std::memory_order_release);
}

void ParallelTasks::helper_loop() {
  uint64_t seen = 0;
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || (batch_ && epoch_ != seen); });
    if (stop_) return;
    seen = epoch_;
    Batch& b = *batch_;
    ++b.inside;
    lock.unlock();
    work(b);
    lock.lock();
    if (--b.inside == 0) finished_.notify_all();
  }
}

}  // namespace tinescope::index
