// A table of the index (chunks, a feedlet's chunks, a level's pages...):
// built in memory as the indexer grows it, or, for an index loaded from its
// file, read in place from the file's mapping. Loading copies nothing, so
// opening costs no fresh memory however large the trace: copying the
// directory into vectors was most of opening an index of 2*10^9 events.
//
// Nor does opening read a loaded table: its elements are checked a block
// of kCheckBlock at a time (against the block's XXH3 in the directory, and
// against what the queries assume of them) the first time one of them is
// read, by a query or by the warmer ahead of the queries. Checked whole at
// opening, the tables made opening linear in the trace: ~12.7 MB for each
// 10^9 events, 60 ms from the disk at 8*10^9. A block that does not check
// reads as zeros (entries that name nothing), is counted, and every later
// read of it is refused the same way.
#pragma once

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "grow_array.hpp"
#include "tinescope/format.hpp"

namespace tinescope::index {

constexpr uint32_t kCheckShift = 11;  // 2 048 elements a block
constexpr uint64_t kCheckBlock = uint64_t(1) << kCheckShift;
inline uint64_t check_blocks(uint64_t n) { return (n + kCheckBlock - 1) >> kCheckShift; }

// What a loaded index's tables are checked against; one per index.
struct TableChecks {
  uint64_t trace_size = 0;   // chunks lie in the trace
  uint64_t chunk_count = 0;  // feedlets' chunks name chunks
  uint64_t tables_begin = 0;  // resume points and flow blocks lie before the tables
  std::span<const uint64_t> column_events;  // checkpoints' positions stay within each column's feedlet
  std::atomic<uint64_t>* errors = nullptr;  // damaged blocks found (with damaged pages)
};

template <class T>
class Table {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  // Checks the n elements at p, elements [first, first + n) of the table,
  // which `before` (element first - 1, unchecked; null for element 0) precedes.
  using Valid = bool (*)(const T* p, size_t first, size_t n, const T* before, const TableChecks& c, uint64_t bound);

  // Reading, either way. A loaded table's element is checked first (its
  // whole block, once).
  const T& operator[](size_t i) const {
    if (marks_ && !block_ok(i >> kCheckShift)) return zero_;
    return data()[i];
  }
  // Whether element i reads as itself (its block checks; false: as zeros).
  bool readable(size_t i) const { return !marks_ || block_ok(i >> kCheckShift); }
  size_t size() const { return view_ ? view_size_ : built_.size(); }
  bool empty() const { return size() == 0; }
  const T& front() const { return (*this)[0]; }
  const T& back() const { return (*this)[size() - 1]; }
  // Every element, checked: empty if any block of a loaded table is damaged.
  std::span<const T> all() const {
    if (!all_ok()) return {};
    return {data(), size()};
  }
  const T* begin() const { return all().data(); }
  const T* end() const {
    std::span<const T> a = all();
    return a.data() + a.size();
  }
  operator std::span<const T>() const { return all(); }
  // Checks every block not yet checked; false if any is damaged.
  bool all_ok() const {
    bool ok = true;
    for (size_t b = 0; marks_ && b < check_blocks(view_size_); ++b) ok &= block_ok(b);
    return ok;
  }

  // Building: the array behind the table (never of a loaded table, which
  // is read-only in the file's mapping).
  GrowArray<T>& vec() {
    assert(!view_);
    return built_;
  }
  // Loading: the table is the n Ts at p (aligned for T), which outlive it,
  // unchecked; check() says how to check it (sums: XXH3-64 of each block,
  // marks: a byte a block, zero, both outliving it).
  void view(const T* p, size_t n) {
    built_ = {};
    view_ = p, view_size_ = n;
    marks_ = nullptr;
  }
  void check(const uint64_t* sums, uint8_t* marks, const TableChecks* checks, Valid valid, uint64_t bound = 0) {
    sums_ = sums, marks_ = marks, checks_ = checks, valid_ = valid, bound_ = bound;
  }
  // Where the block holding element i starts in memory (unchecked): for
  // saying where a damaged block lies in the file.
  const void* block_address(size_t i) const { return data() + (i >> kCheckShift << kCheckShift); }

 private:
  enum : uint8_t { kUnchecked = 0, kGood = 1, kBad = 2 };
  const T* data() const { return view_ ? view_ : built_.data(); }
  // Relaxed: two readers may check the same block at once; each finds the
  // same answer from the same read-only bytes.
  bool block_ok(size_t b) const {
    const uint8_t m = std::atomic_ref<uint8_t>(marks_[b]).load(std::memory_order_relaxed);
    if (m != kUnchecked) return m == kGood;
    return check_block(b);
  }
  [[gnu::noinline]] bool check_block(size_t b) const;

  GrowArray<T> built_;
  const T* view_ = nullptr;
  size_t view_size_ = 0;
  const uint64_t* sums_ = nullptr;
  uint8_t* marks_ = nullptr;
  const TableChecks* checks_ = nullptr;
  Valid valid_ = nullptr;
  uint64_t bound_ = 0;
  static inline const T zero_{};
};

uint64_t table_block_checksum(const void* p, size_t bytes);  // XXH3-64
// Asks for the OS pages of [p, p + bytes) of the index's mapping at once,
// without waiting for them (MADV_WILLNEED; a hint). The mapping reads only
// the page a fault needs (IndexFile::map_pages), one fault after another.
void ask_for_read(const void* p, size_t bytes);
// The same, then maps them, waiting for them: a loaded table's block about
// to be checked. A block of 2 048 chunk records (128 KB) not in the page
// cache was 32 reads one after the other, and a query's binary search over
// the chunks checks several blocks.
void populate_read(const void* p, size_t bytes);

template <class T>
bool Table<T>::check_block(size_t b) const {
  const size_t from = b << kCheckShift, n = std::min<size_t>(kCheckBlock, view_size_ - from);
  uint64_t sum;
  std::memcpy(&sum, sums_ + b, sizeof sum);
  populate_read(view_ + from, n * sizeof(T));
  const bool ok = format::checksum_matches(table_block_checksum(view_ + from, n * sizeof(T)), sum) &&
                  (!valid_ || valid_(view_ + from, from, n, from ? view_ + from - 1 : nullptr, *checks_, bound_));
  // Two readers may check a block at once: the one that marks it counts it.
  uint8_t unchecked = kUnchecked;
  const bool first = std::atomic_ref<uint8_t>(marks_[b]).compare_exchange_strong(unchecked, ok ? kGood : kBad,
                                                                                 std::memory_order_relaxed);
  if (first && !ok && checks_->errors) checks_->errors->fetch_add(1, std::memory_order_relaxed);
  return ok;
}

// The first i in [lo, hi) with !pred(t[i]) (hi if none), pred true then
// false over the range: std::partition_point through the checked reads.
template <class T, class Pred>
size_t partition_index(const Table<T>& t, size_t lo, size_t hi, Pred pred) {
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (pred(t[mid])) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace tinescope::index
