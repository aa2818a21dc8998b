// The memory behind a table while the indexer builds it (table.hpp): an
// array that grows without copying its elements and without holding memory
// it does not use. Past a megabyte it is an anonymous mapping of its own,
// which mremap() grows (the kernel moves the pages, nothing is copied) and
// whose room past the last element is never touched, so never resident;
// below that, malloc's. A std::vector held up to twice its elements and,
// while it grew, a copy of them beside the old ones: with the directory also
// made whole in memory, indexing's peak memory grew ~28 MB for each 10^9
// events where the tables are ~12.7 MB (8*10^9 events: 267 -> 166 MB).
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

namespace tinescope::index {

template <class T>
class GrowArray {
  static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= alignof(std::max_align_t));

 public:
  GrowArray() = default;
  ~GrowArray() { release(); }
  GrowArray(const GrowArray& o) { assign(std::span<const T>(o.data(), o.size())); }
  GrowArray& operator=(const GrowArray& o) {
    if (this != &o) assign(std::span<const T>(o.data(), o.size()));
    return *this;
  }
  GrowArray(GrowArray&& o) noexcept { take(o); }
  GrowArray& operator=(GrowArray&& o) noexcept {
    if (this != &o) release(), take(o);
    return *this;
  }

  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }
  T* begin() { return p_; }
  T* end() { return p_ + n_; }
  const T* begin() const { return p_; }
  const T* end() const { return p_ + n_; }
  T& back() { return p_[n_ - 1]; }

  void push_back(const T& v) {
    if (n_ == cap_) {
      const T copy = v;  // v may be one of ours, and growing may move them
      grow(n_ + 1);
      p_[n_++] = copy;
      return;
    }
    p_[n_++] = v;
  }
  void clear() { n_ = 0; }  // keeps the room, as std::vector does
  void reserve(size_t n) {
    if (n > cap_) grow(n);
  }
  // New elements are T{}.
  void resize(size_t n) {
    reserve(n);
    std::fill(p_ + std::min(n_, n), p_ + n, T{});
    n_ = n;
  }
  void assign(size_t n, const T& v) {
    n_ = 0;
    reserve(n);
    std::fill_n(p_, n, v);
    n_ = n;
  }
  void assign(std::span<const T> v) {
    n_ = 0;
    reserve(v.size());
    if (!v.empty()) std::memcpy(static_cast<void*>(p_), v.data(), v.size() * sizeof(T));
    n_ = v.size();
  }

 private:
  static constexpr size_t kMapBytes = size_t(1) << 20;
  static constexpr size_t kOsPage = 4096;

  void grow(size_t need) {
    const size_t cap = std::max({need, cap_ * 2, size_t(16)});
    size_t bytes = cap * sizeof(T);
    if (bytes < kMapBytes) {
      void* q = std::realloc(static_cast<void*>(p_), bytes);
      if (!q) throw std::bad_alloc();
      p_ = static_cast<T*>(q), cap_ = cap;
      return;
    }
    bytes = (bytes + kOsPage - 1) / kOsPage * kOsPage;
    void* q;
    if (map_bytes_) {
      q = ::mremap(static_cast<void*>(p_), map_bytes_, bytes, MREMAP_MAYMOVE);
      if (q == MAP_FAILED) throw std::bad_alloc();
    } else {
      q = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (q == MAP_FAILED) throw std::bad_alloc();
      if (n_) std::memcpy(q, static_cast<const void*>(p_), n_ * sizeof(T));
      std::free(static_cast<void*>(p_));
    }
    p_ = static_cast<T*>(q), cap_ = bytes / sizeof(T), map_bytes_ = bytes;
  }
  void release() {
    if (map_bytes_) {
      ::munmap(static_cast<void*>(p_), map_bytes_);
    } else {
      std::free(static_cast<void*>(p_));
    }
    p_ = nullptr, n_ = cap_ = map_bytes_ = 0;
  }
  void take(GrowArray& o) {
    p_ = std::exchange(o.p_, nullptr), n_ = std::exchange(o.n_, 0);
    cap_ = std::exchange(o.cap_, 0), map_bytes_ = std::exchange(o.map_bytes_, 0);
  }

  T* p_ = nullptr;
  size_t n_ = 0, cap_ = 0;
  size_t map_bytes_ = 0;  // of the mapping (0: from malloc)
};

}  // namespace tinescope::index
