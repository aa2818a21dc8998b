// Runs the independent parts of one query (a lane's streams, the halves of
// a chunk walk) on the calling thread and on helper threads, so that a
// query that must touch many nodes or events uses every core.
//
// Helpers start with the first query that wants them. One caller at a time
// has them: a caller that finds them busy with another query runs all of its
// own parts itself, so callers never wait for each other. run() returns once
// every part is done, and what the parts wrote is then visible to the caller.
//
// Hand-offs spin instead of sleeping where they can: on a virtual machine a
// sleeping thread took ~100 us (p90 300 us) to wake, as long as a whole
// query. A helper spins for a while after each batch before it sleeps (a
// viewer asks for its lanes one after another), and the caller spins while
// a helper finishes its last part, yielding the core now and then in case
// they share it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tinescope::index {

class ParallelTasks {
 public:
  // Helpers: one less than the cores, at most `most`.
  explicit ParallelTasks(unsigned most = 3);
  ~ParallelTasks();
  ParallelTasks(const ParallelTasks&) = delete;
  ParallelTasks& operator=(const ParallelTasks&) = delete;

  // Calls task(i) once for every i < count; parts are taken in order of i,
  // so put the largest first.
  void run(size_t count, const std::function<void(size_t)>& task);
  unsigned helpers() const { return wanted_; }

  // How long a helper keeps looking for the next batch before it sleeps.
  static constexpr auto kHelperSpin = std::chrono::microseconds(200);

 private:
  struct Batch {
    const std::function<void(size_t)>* task = nullptr;
    size_t count = 0;
    std::atomic<size_t> next{0};
  };
  static void work(Batch& b);
  void helper_loop();

  const unsigned wanted_;
  std::atomic<bool> taken_{false};     // a caller has the helpers
  std::atomic<Batch*> batch_{nullptr};  // the batch helpers may join (on the caller's stack)
  std::atomic<uint64_t> epoch_{0};      // +1 a batch, so a helper joins each batch once
  // Helpers that may be looking at batch_: a helper counts itself in before
  // it reads batch_, and the caller clears batch_ before it waits for this
  // to reach zero, so no helper touches a batch after run() returns.
  std::atomic<unsigned> active_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;  // for sleeping helpers
  std::condition_variable wake_;
  std::vector<std::thread> threads_;
};

}  // namespace tinescope::index
