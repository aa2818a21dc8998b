// Runs the independent parts of one query (a lane's streams, the halves of
// a chunk walk) on the calling thread and on helper threads, so that a
// query that must touch many nodes or events uses every core.
//
// Helpers sleep between queries and start with the first query that wants
// them. One caller at a time has them: a caller that finds them busy with
// another query runs all of its own parts itself, so callers never wait for
// each other. run() returns once every part is done, and what the parts
// wrote is then visible to the caller.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
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

 private:
  struct Batch {
    const std::function<void(size_t)>* task = nullptr;
    size_t count = 0;
    std::atomic<size_t> next{0};
    unsigned inside = 0;  // helpers working on it (under mu_)
  };
  static void work(Batch& b);
  void helper_loop();

  const unsigned wanted_;
  std::atomic<bool> taken_{false};  // a caller has the helpers
  std::mutex mu_;
  std::condition_variable wake_, finished_;
  Batch* batch_ = nullptr;  // the batch helpers may join
  uint64_t epoch_ = 0;      // +1 a batch, so a helper joins each batch once
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tinescope::index
