// Growing the memory that queries write into, with its pages mapped in one
// call instead of a fault each.
//
// Fresh anonymous memory takes a page fault on each 4 KB page's first
// touch. On this VM a fault costs ~13 us, and a fresh process's first pass
// of index_bench's queries took ~3 900 of them at 2*10^8 events (the
// answers' nodes, the walks' item runs and payload buffers growing to their
// largest): that pass's stored queries had a p99 of 1.2-1.4 ms, where the
// same queries again took ~0.5 ms. With this: ~760 faults, p99 0.8-0.9 ms.
// MADV_POPULATE_WRITE maps the pages at ~1.2 us each, and the first touch
// after it costs ~3.4 us (8 MB, 2 048 pages: 26-30 ms touched; 2.1-2.6 ms
// populated, then 6.6-7.7 ms touched). On pages already mapped it still
// costs ~0.2 us a page, so it is asked only where memory is new: when a
// buffer grows, which stops once it has reached the largest a query needs.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#ifndef MADV_POPULATE_WRITE  // Linux 5.14; older kernels refuse the advice, which changes nothing
#define MADV_POPULATE_WRITE 23
#endif

namespace tinescope::index {

// Maps in the whole pages of [p, p + bytes) for writing; false where it
// did not (too small to be worth a call, or a kernel that refuses). A hint:
// where it does not, the pages fault in one by one as before. Below 4 pages
// the call saves little where faults are cheap.
inline bool prefault_for_write(void* p, size_t bytes) {
  constexpr uintptr_t kPage = 4096;
  if (bytes < 4 * kPage) return false;
  const uintptr_t a = (reinterpret_cast<uintptr_t>(p) + kPage - 1) & ~(kPage - 1);
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kPage - 1);
  return b > a && ::madvise(reinterpret_cast<void*>(a), b - a, MADV_POPULATE_WRITE) == 0;
}

// v.reserve(n), but the new buffer's pages are mapped before the old
// elements are copied in (reserve() would touch them one fault at a time),
// and it grows at least twofold, so that a buffer that creeps up is moved
// a few times, not at every step.
template <class T>
[[gnu::noinline]] void grow_prefaulted(std::vector<T>& v, size_t n) {
  std::vector<T> fresh;
  fresh.reserve(std::max(n, 2 * v.capacity()));
  prefault_for_write(fresh.data(), fresh.capacity() * sizeof(T));
  fresh.insert(fresh.end(), v.begin(), v.end());
  v.swap(fresh);
}
// (The growth out of line: inlined into the loops that call this, it made
// them slower even where nothing grew.)
template <class T>
[[gnu::always_inline]] inline void reserve_prefaulted(std::vector<T>& v, size_t n) {
  if (n > v.capacity()) grow_prefaulted(v, n);
}

// v.resize(n) (new elements value-initialized) through reserve_prefaulted.
template <class T>
void resize_prefaulted(std::vector<T>& v, size_t n) {
  reserve_prefaulted(v, n);
  v.resize(n);
}

}  // namespace tinescope::index
