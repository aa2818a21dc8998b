// Pages a loaded index file in on a background thread, so that the first
// queries after opening find their pages as warm as later ones: right after
// opening, with the index file not in the page cache, lane queries were
// about half as fast (each page came from the disk on its own fault).
//
// The whole file when it fits the budget (an eighth of the memory), back to
// front, in batches; a larger index gets the pages of its coarsest levels
// first, as far as the budget goes (a view starts at the whole trace). The
// pages land in the page cache and the file's mapping, never in anonymous
// memory. Then it checks those node pages' checksums ahead of the queries.
// Stops between batches when its index is closed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

namespace tinescope::index {

struct State;

class IndexWarmer {
 public:
  static constexpr uint64_t kSmallest = 256 << 10;  // bytes of index worth a thread
  // Starts on `s`, whose index mapping and page tables no longer change;
  // budget 0: an eighth of the memory.
  IndexWarmer(const State& s, uint64_t budget);
  ~IndexWarmer();  // stops, and waits for the thread
  IndexWarmer(const IndexWarmer&) = delete;
  IndexWarmer& operator=(const IndexWarmer&) = delete;

  bool done() const { return done_.load(std::memory_order_acquire); }
  // Whether every page of the index has been read in (its budget holds the
  // whole file, and that much is done; the checks may still be going on).
  bool read_all() const { return read_all_.load(std::memory_order_acquire); }

 private:
  // The byte ranges of the index file to page in, in that order.
  static std::vector<std::pair<uint64_t, uint64_t>> plan(const State& s, uint64_t budget);
  // False if stopped before the end.
  bool run(const std::vector<std::pair<uint64_t, uint64_t>>& ranges);
  // Then checks the checksums of the node pages it paged in, so that the
  // first query to read each need not (a tenth of the first queries' time
  // at 2*10^9 events went to them).
  void verify(uint64_t budget);
  const State& s_;
  std::atomic<bool> stop_{false}, done_{false}, read_all_{false};
  std::thread thread_;
};

}  // namespace tinescope::index
