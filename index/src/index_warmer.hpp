// Pages a loaded index file in on a background thread, so that the first
// queries after opening find their pages as warm as later ones: right after
// opening, with the index file not in the page cache, lane queries were
// about half as fast (each page came from the disk on its own fault).
//
// The whole file when it fits the budget (an eighth of the memory), back to
// front, in batches; a larger index gets the pages of its coarsest levels
// first, as far as the budget goes (a view starts at the whole trace). The
// pages land in the page cache and the file's mapping, never in anonymous
// memory. It checks their checksums (the tables', then the node pages')
// ahead of the queries: the whole file's on a second thread at the lowest
// priority, right behind the reads; a part's once it is all in. Stops
// between batches when its index is closed.
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
  using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;
  // The byte ranges of the index file to page in, in that order.
  static Ranges plan(const State& s, uint64_t budget);
  // Pages them in, a batch at a time, calling after_batch(b) once each batch
  // [b, e) is in; false if stopped before the end.
  template <class AfterBatch>
  bool run(const Ranges& ranges, AfterBatch&& after_batch);
  // The checksums of the node pages, so that the first query to read each
  // need not (a tenth of the first queries' time at 2*10^9 events went to
  // them). The whole file: on a thread of its own, each batch's pages once
  // it is in, in file order (check_behind). A part of it: after it is all
  // in, the coarsest levels first, as far as the budget goes (verify).
  void check_behind();
  void verify(uint64_t budget);
  // Both check at the lowest priority, the tables first: every block of
  // every table; false if stopped before the end.
  static void lowest_priority();
  bool check_tables();
  const State& s_;
  std::atomic<bool> stop_{false}, done_{false}, read_all_{false};
  // Reading the whole file: what is read in is [read_from_, end of file);
  // kStopped once the reading stopped before the end.
  static constexpr uint64_t kStopped = UINT64_MAX;
  std::atomic<uint64_t> read_from_{kStopped};
  std::thread thread_;
};

}  // namespace tinescope::index
