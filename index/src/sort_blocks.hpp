// Sorting, in place, an array that is nearly in order: the flow log, whose
// entries are in the order their first halves were seen, which follows the
// trace's order to within about a chunk's time.
//
// The array is sorted a block at a time (on both cores, each block small
// enough for the cache), then each block is merged onto the sorted prefix
// before it. Where the blocks overlap only at their edges, a merge moves a
// few elements. Any order still ends sorted: at the first merge whose
// overlap is large, what is out of order is sorted whole instead, on one
// core, so the cost is never much more than sorting the whole array.
// Extra memory: std::inplace_merge's buffer, at most that bounded overlap.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>

namespace tinescope::index {

template <class T, class Less>
void sort_blocks(T* a, size_t n, Less less, size_t block = 1 << 16, bool two_threads = true) {
  block = std::max<size_t>(block, 2);
  const size_t blocks = (n + block - 1) / block;
  std::atomic<size_t> next{0};
  auto sort_some = [&] {
    for (size_t b; (b = next.fetch_add(1)) < blocks;) std::sort(a + b * block, a + std::min(n, (b + 1) * block), less);
  };
  if (two_threads && blocks > 1) {
    std::thread other(sort_some);
    sort_some();
    other.join();
  } else {
    sort_some();
  }
  // [0, e) is sorted. Of the next block Q = [e, f), the elements before
  // hi are less than the prefix's last; of the prefix, those from lo on are
  // greater than Q's first. Merging [lo, e) with [e, hi) sorts [0, f).
  const size_t most = 4 * block;  // an overlap beyond this: sort the rest
  for (size_t e = block; e < n; e += block) {
    const size_t f = std::min(n, e + block);
    if (!less(a[e], a[e - 1])) continue;  // already in order
    T* lo = std::upper_bound(a, a + e, a[e], less);
    T* hi = std::lower_bound(a + e, a + f, a[e - 1], less);
    if (size_t(hi - lo) > most) {
      // Far out of order: the prefix's elements up to the least of all
      // that follows stay, the rest is sorted whole.
      std::sort(std::upper_bound(a, a + e, *std::min_element(a + e, a + n, less), less), a + n, less);
      return;
    }
    std::inplace_merge(lo, a + e, hi, less);
  }
}

}  // namespace tinescope::index
