// An array of plain records that grows without copying: what an import
// collects per lane (millions of spans, points, begin/end pairs) before it
// sorts them. Past 4 MB it is an anonymous mapping that grows with mremap
// (the kernel moves page tables, not bytes) in huge pages where the kernel
// has them. As std::vector, growing by doubling copied each array about
// once more and touched twice its size in fresh 4 KB pages, a fault each:
// ~75 000 faults and a third of the import of a 200 MB JSON on this VM.
//
// Under a SpillTo guard, once the process's arrays hold the guard's budget
// of memory, the ones its thread grows map a file instead (an unlinked temporary file
// in the guard's directory, one an array): their pages are the page
// cache's, which the kernel writes back and drops under pressure, so an
// import holds traces larger than its memory and its anonymous memory
// stays flat whatever the trace's size.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>

namespace tinescope::import {

// While one lives, BulkArrays that this thread grows past its budget map
// files in `dir` (where none can be made there, memory as before). The
// memory counted is every thread's arrays': an array grown on one thread
// may be given back on another (an import writes its lanes on two).
class SpillTo {
 public:
  // Arrays take memory up to `budget` bytes (all mapped ones together);
  // past it, files.
  explicit SpillTo(std::string dir, size_t budget = size_t(384) << 20)
      : previous_(dir_()), previous_budget_(budget_()) {
    dir_() = std::move(dir), budget_() = budget;
  }
  ~SpillTo() { dir_() = std::move(previous_), budget_() = previous_budget_; }
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

 public:
  // Bytes of the process's arrays mapped in memory (not files), and this thread's budget.
  static std::atomic<size_t>& anon_bytes() {
    static std::atomic<size_t> bytes{0};
    return bytes;
  }
  static size_t budget() { return dir_().empty() ? SIZE_MAX : budget_(); }
  // This thread's directory ("": none, arrays stay in memory).
  static const std::string& directory() { return dir_(); }

 private:
  static std::string& dir_() {
    thread_local std::string dir;
    return dir;
  }
  static size_t& budget_() {
    thread_local size_t b = SIZE_MAX;
    return b;
  }
  std::string previous_;
  size_t previous_budget_;
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
  // Room for n more records at the end, whose bytes are whatever they
  // were: the caller writes them, then gives back what it did not use.
  T* grow_by(size_t n) {
    if (n_ + n > cap_) grow(n_ + n);
    T* p = p_ + n_;
    n_ += n;
    return p;
  }
  void shrink_by(size_t n) { n_ -= n; }
  // n records whose bytes are whatever they were (to be written over whole).
  void resize_for_overwrite(size_t n) {
    reserve(n);
    n_ = n;
  }
  // Empty, its memory given back.
  void release() {
    free_memory();
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
    std::atomic<size_t>& anon = SpillTo::anon_bytes();
    // Past the budget, memory moves to a file (once: it grows there after).
    if (fd_ < 0 && anon.load(std::memory_order_relaxed) - mapped_ + bytes > SpillTo::budget() && to_file(bytes)) return;
    if (fd_ >= 0) {
      // The file's blocks taken now: a page of a sparse file that the disk
      // has no room for is a SIGBUS when it is written. No room: memory.
      if (::posix_fallocate(fd_, 0, off_t(bytes)) == 0) {
        void* p = ::mremap(p_, mapped_, bytes, MREMAP_MAYMOVE);
        if (p == MAP_FAILED) throw std::bad_alloc();
        p_ = static_cast<T*>(p), cap_ = bytes / sizeof(T), mapped_ = bytes;
        return;
      }
      to_memory(bytes);
      return;
    }
    void* p = mapped_ ? ::mremap(p_, mapped_, bytes, MREMAP_MAYMOVE)
                      : ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::madvise(p, bytes, MADV_HUGEPAGE);  // a hint: without it, 4 KB pages
    if (!mapped_) {
      if (n_) std::memcpy(p, p_, n_ * sizeof(T));
      std::free(p_);
    }
    anon.fetch_add(bytes - mapped_, std::memory_order_relaxed);
    p_ = static_cast<T*>(p), cap_ = bytes / sizeof(T), mapped_ = bytes;
  }
  // The records into a file mapping of `bytes` (SpillTo's directory); false
  // where none can be made, and nothing changed.
  bool to_file(size_t bytes) {
    const int fd = SpillTo::file();
    if (fd < 0) return false;
    void* p = ::posix_fallocate(fd, 0, off_t(bytes)) == 0
                  ? ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    if (p == MAP_FAILED) {
      ::close(fd);
      return false;
    }
    if (n_) std::memcpy(p, p_, n_ * sizeof(T));
    free_memory();
    p_ = static_cast<T*>(p), cap_ = bytes / sizeof(T), mapped_ = bytes, fd_ = fd;
    return true;
  }
  // A file's records back into memory (its disk is full).
  void to_memory(size_t bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    if (n_) std::memcpy(p, p_, n_ * sizeof(T));
    ::munmap(p_, mapped_);
    ::close(fd_);
    SpillTo::anon_bytes().fetch_add(bytes, std::memory_order_relaxed);
    p_ = static_cast<T*>(p), cap_ = bytes / sizeof(T), mapped_ = bytes, fd_ = -1;
  }
  void free_memory() {
    if (mapped_) ::munmap(p_, mapped_);
    else std::free(p_);
    if (mapped_ && fd_ < 0) SpillTo::anon_bytes().fetch_sub(mapped_, std::memory_order_relaxed);
  }
};

}  // namespace tinescope::import
