// The first `limit` of many things by some order, kept while they come in
// any order: a checker lists the earliest violations of millions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace tinescope::analysis {

template <class T, class Before>
struct FirstN {
  size_t limit;
  std::vector<T> list;
  void add(T v) {
    if (limit == 0) return;
    list.push_back(std::move(v));
    if (list.size() > limit && list.size() - limit >= std::max<size_t>(limit, 64)) trim();  // (twice the limit: no overflow)
  }
  void trim() {
    std::stable_sort(list.begin(), list.end(), Before());
    if (list.size() > limit) list.resize(limit);
  }
};

}  // namespace tinescope::analysis
