// A table of the index (chunks, a feedlet's chunks, a level's pages...):
// built in memory as the indexer grows it, or, for an index loaded from its
// file, read in place from the file's mapping. Loading copies nothing, so
// opening costs no fresh memory however large the trace: copying the
// directory into vectors was most of opening an index of 2*10^9 events.
#pragma once

#include <cassert>
#include <cstddef>
#include <span>
#include <type_traits>

#include "grow_array.hpp"

namespace tinescope::index {

template <class T>
class Table {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  // Reading, either way.
  const T* data() const { return view_ ? view_ : built_.data(); }
  size_t size() const { return view_ ? view_size_ : built_.size(); }
  bool empty() const { return size() == 0; }
  const T& operator[](size_t i) const { return data()[i]; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  const T& front() const { return data()[0]; }
  const T& back() const { return data()[size() - 1]; }
  operator std::span<const T>() const { return {data(), size()}; }

  // Building: the array behind the table (never of a loaded table, which
  // is read-only in the file's mapping).
  GrowArray<T>& vec() {
    assert(!view_);
    return built_;
  }
  // Loading: the table is the n Ts at p (aligned for T), which outlive it.
  void view(const T* p, size_t n) {
    built_ = {};
    view_ = p, view_size_ = n;
  }

 private:
  GrowArray<T> built_;
  const T* view_ = nullptr;
  size_t view_size_ = 0;
};

}  // namespace tinescope::index
