#include "index_warmer.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "pyramid.hpp"
#include "state.hpp"

namespace tinescope::index {

namespace {

#ifndef MADV_POPULATE_READ  // Linux 5.14
#define MADV_POPULATE_READ 22
#endif

constexpr uint64_t kOsPage = 4096;
constexpr uint64_t kBatch = 4 << 20;  // between looks at the stop flag
// Batches asked for ahead of the one being mapped: one synchronous batch at
// a time kept one read in flight (342 MB of index in ~0.4 s, a third of this
// disk's speed), and the first queries after opening waited for it. With 32
// MB asked for ahead, index_bench's first pass at 2*10^9 events (index not
// in the page cache): p99 ~1.66 -> ~1.29 ms (12 and 9 runs, alternating).
constexpr size_t kReadAhead = 8;

}  // namespace

IndexWarmer::Ranges IndexWarmer::plan(const State& s, uint64_t budget) {
  Ranges out;
  const uint64_t size = s.index_map_size;
  if (size <= budget) {  // (the tables, every query's way to its pages and chunks, lie near the end)
    for (uint64_t end = size; end > 0;) {
      const uint64_t begin = end > kBatch ? (end - kBatch) / kOsPage * kOsPage : 0;
      out.emplace_back(begin, end);
      end = begin;
    }
    return out;
  }
  // Levels counted down from each stream's top ("tiers"): every stream's top
  // level, then the ones below, until the budget is spent. The bytes of
  // each tier first, then a list of only the pages that fit: a list of every
  // page, sorted, was ~40 ms at 2*10^9 events on the opening thread, and
  // would be ~10^7 pages at 10^11.
  // The tables first: every query reads them (chunks, page lists).
  const uint64_t tables = s.tables_end - s.tables_begin;
  if (tables > 0 && tables <= budget) {
    out.emplace_back(s.tables_begin / kOsPage * kOsPage, s.tables_end);
    budget -= tables;
  }
  std::vector<uint64_t> tier_bytes;
  for (const auto& [id, f] : s.feedlets)
    for (const Stream& st : f->streams) {
      if (tier_bytes.size() < st.levels.size()) tier_bytes.resize(st.levels.size());
      for (size_t l = 0; l < st.levels.size(); ++l)
        for (const PageRef& p : st.levels[l].pages) tier_bytes[st.levels.size() - 1 - l] += p.bytes;
    }
  uint64_t spent = 0;
  size_t whole = 0;  // tiers that fit whole
  while (whole < tier_bytes.size() && spent + tier_bytes[whole] <= budget) spent += tier_bytes[whole++];
  struct Page {
    uint64_t offset, bytes;
  };
  std::vector<Page> pages;
  bool full = false;  // the next tier, stream by stream, as far as the budget goes (as verify() takes it)
  for (size_t tier = 0; tier <= whole && tier < tier_bytes.size() && !full; ++tier)
    for (const auto& [id, f] : s.feedlets)
      for (const Stream& st : f->streams) {
        if (tier >= st.levels.size() || full) continue;
        for (const PageRef& p : st.levels[st.levels.size() - 1 - tier].pages) {
          if (tier == whole && (full = spent + p.bytes > budget)) break;
          if (tier == whole) spent += p.bytes;
          pages.push_back({p.offset, p.bytes});
        }
      }
  // In file order, whole OS pages, neighbours joined.
  std::sort(pages.begin(), pages.end(), [](const Page& a, const Page& b) { return a.offset < b.offset; });
  for (const Page& p : pages) {
    const uint64_t begin = p.offset / kOsPage * kOsPage, end = std::min(size, p.offset + p.bytes);
    if (!out.empty() && begin <= out.back().second) {
      out.back().second = std::max(out.back().second, end);
    } else {
      out.emplace_back(begin, end);
    }
  }
  return out;
}

IndexWarmer::IndexWarmer(const State& s, uint64_t budget) : s_(s) {
  if (budget == 0) budget = uint64_t(::sysconf(_SC_PHYS_PAGES)) * uint64_t(::sysconf(_SC_PAGESIZE)) / 8;
  // The plan too is made on the thread: opening waits for none of it.
  thread_ = std::thread([this, budget] {
    if (s_.index_map_size <= budget) {
      // The whole file, back to front, each batch's pages checked behind
      // the reads by a thread of their own (check_behind).
      read_from_.store(s_.index_map_size, std::memory_order_relaxed);
      std::thread checks([this] { check_behind(); });
      const bool all = run(plan(s_, budget), [this](uint64_t batch_begin) {
        read_from_.store(batch_begin, std::memory_order_release);
        read_from_.notify_one();
      });
      if (all) read_all_.store(true, std::memory_order_release);
      read_from_.store(all ? 0 : kStopped, std::memory_order_release);
      read_from_.notify_one();
      checks.join();
    } else if (run(plan(s_, budget), [](uint64_t) {})) {
      verify(budget);
    }
    done_.store(true, std::memory_order_release);
  });
}

IndexWarmer::~IndexWarmer() {
  stop_.store(true, std::memory_order_relaxed);
  thread_.join();
}

template <class AfterBatch>
bool IndexWarmer::run(const Ranges& ranges, AfterBatch&& after_batch) {
  Ranges batches;
  for (auto [begin, end] : ranges)
    for (uint64_t at = begin; at < end; at += kBatch) batches.emplace_back(at, std::min(end, at + kBatch));
  auto advise = [&](size_t i, int advice) {
    return ::madvise(const_cast<uint8_t*>(s_.index_map) + batches[i].first,
                     size_t(batches[i].second - batches[i].first), advice);
  };
  for (size_t i = 0; i < kReadAhead && i < batches.size(); ++i) advise(i, MADV_WILLNEED);
  for (size_t i = 0; i < batches.size() && !stop_.load(std::memory_order_relaxed); ++i) {
    if (i + kReadAhead < batches.size()) advise(i + kReadAhead, MADV_WILLNEED);
    // Into the page cache and this mapping's page tables; a kernel without
    // MADV_POPULATE_READ (before 5.14) has read it ahead already.
    advise(i, MADV_POPULATE_READ);
    after_batch(batches[i].first);
  }
  return !stop_.load(std::memory_order_relaxed);
}

namespace {

// The node pages of every stream's levels, the last in the file first: a
// heap of one cursor a level (a level's pages lie in file order, as they
// filled), ~2 000 at 2*10^9 events, so no list of every page is made.
class PagesBackward {
 public:
  explicit PagesBackward(const State& s) {
    for (const auto& [id, f] : s.feedlets)
      for (const Stream& st : f->streams)
        for (uint32_t l = 0; l < st.levels.size(); ++l)
          if (const size_t n = st.levels[l].pages.size(); n > 0 && st.levels[l].verified)
            heap_.push_back({st.levels[l].pages[n - 1].offset, &st, l, n - 1});
    std::make_heap(heap_.begin(), heap_.end(), later_first);
  }
  bool empty() const { return heap_.empty(); }
  uint64_t offset() const { return heap_.front().offset; }  // the next page's
  // Calls fn(stream, level, page) for the next page, and moves past it.
  template <class Fn>
  void take(Fn&& fn) {
    std::pop_heap(heap_.begin(), heap_.end(), later_first);
    Cursor& c = heap_.back();
    fn(*c.st, c.level, c.page);
    if (c.page == 0) {
      heap_.pop_back();
      return;
    }
    c.offset = c.st->levels[c.level].pages[--c.page].offset;
    std::push_heap(heap_.begin(), heap_.end(), later_first);
  }

 private:
  struct Cursor {
    uint64_t offset;
    const Stream* st;
    uint32_t level;
    size_t page;
  };
  static bool later_first(const Cursor& a, const Cursor& b) { return a.offset < b.offset; }
  std::vector<Cursor> heap_;
};

}  // namespace

void IndexWarmer::check_behind() {
  // In the order the pages were read, right behind the reads: their bytes
  // come from memory in sequence, and the checks are done soon after the
  // reading is. Checked a level at a time once the whole file was read (as
  // verify() does a part of it), they went back and forth through it: ~165
  // ms of CPU at 2*10^9 events (342 MB of index), and index_bench's first
  // pass of queries, which keeps both cores busy, was over before they
  // were, so its queries checked the pages themselves. On the reading
  // thread, at its priority, they took the CPU from the first queries
  // (index_bench's first pass, six alternating rounds: p99 ~420 -> ~690 us).
  // Here, at the lowest priority (verify()'s reasons), they take what the
  // first queries leave while they wait for the disk.
  lowest_priority();
  std::optional<PagesBackward> pages;  // (once the tables are checked)
  size_t checked = 0;
  for (;;) {
    const uint64_t from = read_from_.load(std::memory_order_acquire);  // read in: [from, end of file)
    if (from == kStopped || stop_.load(std::memory_order_relaxed)) return;
    if (!pages && from <= s_.tables_begin) {  // (the file is read back to front: the tables, near its end, first)
      if (!check_tables()) return;
      pages.emplace(s_);
    }
    // Every page that starts in what is read by now lies whole in it.
    while (pages && !pages->empty() && pages->offset() >= from) {
      if (++checked % 256 == 0 && stop_.load(std::memory_order_relaxed)) return;
      pages->take([&](const Stream& st, uint32_t level, size_t page) {
        verify_page(st, level, page, s_.index_map, s_.index_map_size);
      });
    }
    if (from == 0) return;
    read_from_.wait(from, std::memory_order_acquire);  // (the reading thread says each batch)
  }
}

void IndexWarmer::lowest_priority() {
  // The checks are what a query would do anyway, and at the same priority
  // they took the CPU from the queries they were to spare (index_bench's
  // first pass right after opening, 2*10^9 events: decoded p99 0.94-1.09 ->
  // 1.07-1.76 ms). Only this thread's (a Linux thread's nice value is its own).
  ::setpriority(PRIO_PROCESS, pid_t(::syscall(SYS_gettid)), 19);
}

bool IndexWarmer::check_tables() {
  // A block at a time, as a query would: with these checked, opening need
  // not (table.hpp).
  bool stopped = false;
  s_.for_each_table([&](const auto& t) {
    if (!stopped) t.all_ok();
    stopped = stopped || stop_.load(std::memory_order_relaxed);
  });
  return !stopped;
}

void IndexWarmer::verify(uint64_t budget) {
  lowest_priority();
  // The tables first (chunks, page lists...).
  if (!check_tables()) return;
  // Then every stream's top level, then the ones below (the order plan()
  // pages them in), as far as the budget goes.
  uint64_t spent = 0;
  size_t checked = 0;
  for (uint32_t from_top = 0;; ++from_top) {
    bool any = false;
    for (const auto& [id, f] : s_.feedlets) {
      for (const Stream& st : f->streams) {
        if (from_top >= st.levels.size()) continue;
        any = true;
        const uint32_t level = uint32_t(st.levels.size() - 1 - from_top);
        const Level& lv = st.levels[level];
        for (size_t page = 0; page < lv.pages.size(); ++page) {
          if ((spent += lv.pages[page].bytes) > budget) return;
          if (++checked % 256 == 0 && stop_.load(std::memory_order_relaxed)) return;
          verify_page(st, level, page, s_.index_map, s_.index_map_size);
        }
      }
    }
    if (!any) return;
  }
}

}  // namespace tinescope::index
