// An array of plain records that grows without copying: what an import
// collects per lane (millions of spans, points, begin/end pairs) before it
// sorts them. Past 4 MB it is an anonymous mapping that grows with mremap
// (the kernel moves page tables, not bytes) in huge pages where the kernel
// has them. As std::vector, growing by doubling copied each array about
// once more and touched twice its size in fresh 4 KB pages, a fault each:
// ~75 000 faults and a third of the import of a 200 MB JSON on this VM.
//
// Under a SpillTo guard, the arrays of that thread map a file instead (an
// unlinked temporary file in the guard's directory, one an array): their
// pages are the page cache's, which the kernel writes back and drops under
// pressure, so an import holds traces larger than its memory and its
// anonymous memory stays flat whatever the trace's size.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>

namespace tinescope::import {

// While one lives, BulkArrays that this thread grows past 4 MB map files in
// `dir` (where none can be made there, anonymous memory as before).
class SpillTo {
 public:
  explicit SpillTo(std::string dir) : previous_(dir_()) { dir_() = std::move(dir); }
  ~SpillTo() { dir_() = std::move(previous_); }
  SpillTo(const SpillTo&) = delete;
  SpillTo& operator=(const SpillTo&) = delete;
  // A new unlinked file in the current directory, or -1.
  static int file() {
    const std::string& dir = dir_();
    if (dir.empty()) return -1;
    int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    std::string name = dir + "/.tinescope-spill-XXXXXX";  // (file systems without O_TMPFILE)
    fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(name.c_str());
    return fd;
  }

 private:
  static std::string& dir_() {
    thread_local std::string dir;
    return dir;
  }
  std::string previous_;
};

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
    if (fd_ >= 0) ::close(fd_);
    p_ = nullptr, n_ = cap_ = mapped_ = 0, fd_ = -1;
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
  int fd_ = -1;        // the file mapped (SpillTo), else -1

  void steal(BulkArray& o) {
    p_ = o.p_, n_ = o.n_, cap_ = o.cap_, mapped_ = o.mapped_, fd_ = o.fd_;
    o.p_ = nullptr, o.n_ = o.cap_ = o.mapped_ = 0, o.fd_ = -1;
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
    if (!mapped_) fd_ = SpillTo::file();
    // The file's blocks taken now: a page of a sparse file that the disk has
    // no room for is a SIGBUS when it is written. No room: memory, as without.
    bool moved = false;
    if (fd_ >= 0 && ::posix_fallocate(fd_, 0, off_t(bytes)) != 0) {
      void* anon = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (anon == MAP_FAILED) throw std::bad_alloc();
      if (n_) std::memcpy(anon, p_, n_ * sizeof(T));
      if (mapped_) ::munmap(p_, mapped_);
      else std::free(p_);
      ::close(fd_);
      fd_ = -1, p_ = static_cast<T*>(anon), mapped_ = bytes, moved = true;
    }
    void* p = moved     ? p_
            : mapped_   ? ::mremap(p_, mapped_, bytes, MREMAP_MAYMOVE)
            : fd_ >= 0  ? ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0)
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
