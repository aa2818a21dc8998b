// An array of plain records that grows without copying: what an import
// collects per lane (millions of spans, points, begin/end pairs) before it
// sorts them. Past 4 MB it is an anonymous mapping that grows with mremap
// (the kernel moves page tables, not bytes) in huge pages where the kernel
// has them. As std::vector, growing by doubling copied each array about
// once more and touched twice its size in fresh 4 KB pages, a fault each:
// ~75 000 faults and a third of the import of a 200 MB JSON on this VM.
#pragma once

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

namespace tinescope::import {

template <class T>
class BulkArray {
  static_assert(std::is_trivially_copyable_v<T>, "its bytes are moved, never its objects");

 public:
  BulkArray() = default;
  BulkArray(BulkArray&& o) noexcept { steal(o); }
  BulkArray& operator=(BulkArray&& o) noexcept {
    if (this != &o) release(), steal(o);
    return *this;
  }
  BulkArray(const BulkArray&) = delete;
  BulkArray& operator=(const BulkArray&) = delete;
  ~BulkArray() { release(); }

  void push_back(const T& v) {
    if (n_ == cap_) grow(n_ + 1);
    p_[n_++] = v;
  }
  void append(const T* a, const T* b) {
    const size_t k = size_t(b - a);
    reserve(n_ + k);
    if (k) std::memcpy(p_ + n_, a, k * sizeof(T));
    n_ += k;
  }
  void reserve(size_t n) {
    if (n > cap_) grow(n);
  }
  // Empty, its memory given back.
  void release() {
    if (mapped_) ::munmap(p_, mapped_);
    else std::free(p_);
    p_ = nullptr, n_ = cap_ = mapped_ = 0;
  }

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T* begin() { return p_; }
  T* end() { return p_ + n_; }
  const T* begin() const { return p_; }
  const T* end() const { return p_ + n_; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }

 private:
  static constexpr size_t kMapFrom = size_t(4) << 20, kHugePage = size_t(2) << 20;
  T* p_ = nullptr;
  size_t n_ = 0, cap_ = 0;
  size_t mapped_ = 0;  // bytes mapped; 0: p_ is from malloc

  void steal(BulkArray& o) {
    p_ = o.p_, n_ = o.n_, cap_ = o.cap_, mapped_ = o.mapped_;
    o.p_ = nullptr, o.n_ = o.cap_ = o.mapped_ = 0;
  }
  void grow(size_t need) {
    size_t cap = cap_ ? cap_ * 2 : 256;
    if (cap < need) cap = need;
    size_t bytes = cap * sizeof(T);
    if (bytes < kMapFrom) {  // small: the heap, which may extend it in place
      void* p = std::realloc(p_, bytes);
      if (!p) throw std::bad_alloc();
      p_ = static_cast<T*>(p), cap_ = cap;
      return;
    }
    bytes = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    void* p = mapped_ ? ::mremap(p_, mapped_, bytes, MREMAP_MAYMOVE)
                      : ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::madvise(p, bytes, MADV_HUGEPAGE);  // a hint: without it, 4 KB pages
    if (!mapped_) {
      if (n_) std::memcpy(p, p_, n_ * sizeof(T));
      std::free(p_);
    }
    p_ = static_cast<T*>(p), cap_ = bytes / sizeof(T), mapped_ = bytes;
  }
};

}  // namespace tinescope::import
