#include "trace_reads.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace tinescope::index {

namespace {

// The trace opened again ("/proc/self/fd/N"), or -1. Its own open file:
// O_DIRECT or advice given on `fd` itself would change the reads of every
// other user of it (the queries' reads of chunks).
int reopen(int fd, int flags) {
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  return ::open(self.c_str(), O_RDONLY | O_CLOEXEC | flags);
}

ssize_t pread_retrying(int fd, uint8_t* into, size_t n, uint64_t at) {
  ssize_t r;
  do r = ::pread(fd, into, n, off_t(at));
  while (r < 0 && errno == EINTR);
  return r;
}

}  // namespace

double TraceReads::share_in_page_cache(const uint8_t* map, uint64_t from, uint64_t to) {
  constexpr uint64_t kRun = 16, kRuns = 1024;
  from = from / kAlign * kAlign;
  const uint64_t pages = (to - std::min(from, to)) / kAlign;
  if (pages < kRun) return 1.0;
  const uint64_t step = std::max<uint64_t>(kRun, pages / kRuns);
  unsigned char in[kRun];
  uint64_t seen = 0, held = 0;
  for (uint64_t page = 0; page + kRun <= pages; page += step) {
    if (::mincore(const_cast<uint8_t*>(map) + from + page * kAlign, kRun * kAlign, in) != 0) return 1.0;
    for (unsigned char c : in) held += c & 1;
    seen += kRun;
  }
  return double(held) / double(seen);
}

TraceReads::TraceReads(int fd, const uint8_t* map, uint64_t from, uint64_t to) : fd_(fd) {
  if (map && share_in_page_cache(map, from, to) < 0.5 && (direct_ = reopen(fd, O_DIRECT)) >= 0) {
    // Only the odd read that cannot go past the page cache goes through it,
    // with no read-ahead that would bring the rest in.
    if ((buffered_ = reopen(fd, 0)) >= 0) ::posix_fadvise(buffered_, 0, 0, POSIX_FADV_RANDOM);
    return;
  }
  ::posix_fadvise(fd_, off_t(from), 0, POSIX_FADV_SEQUENTIAL);
}

TraceReads::~TraceReads() {
  if (direct_ >= 0) ::close(direct_);
  if (buffered_ >= 0) ::close(buffered_);
}

ssize_t TraceReads::read_through_page_cache(uint8_t* into, uint64_t at, size_t n) {
  return pread_retrying(buffered_ >= 0 ? buffered_ : fd_, into, n, at);
}

ssize_t TraceReads::read(uint8_t* into, uint64_t at, size_t n) {
  const bool aligned = at % kAlign == 0 && reinterpret_cast<uintptr_t>(into) % kAlign == 0 && n >= kAlign;
  if (direct_ < 0 || !aligned) return read_through_page_cache(into, at, n);
  // The length too is aligned: up to kAlign - 1 bytes more (the caller's
  // room), read only where the file goes on past at + n.
  const size_t len = size_t((n + kAlign - 1) / kAlign * kAlign);
  ssize_t r = pread_retrying(direct_, into, len, at);
  if (r >= 0) {
    r = std::min<ssize_t>(r, ssize_t(n));
    direct_bytes_ += uint64_t(r);
    return r;
  }
  if (errno != EINVAL) return -1;
  // Refused after all (a file system that opens with O_DIRECT but does not
  // read so): through the page cache from here on, read ahead as before.
  ::close(direct_), direct_ = -1;
  ::posix_fadvise(buffered_ >= 0 ? buffered_ : fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  return read_through_page_cache(into, at, n);
}

}  // namespace tinescope::index
