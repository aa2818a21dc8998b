// The indexer's reads of the trace, in order, a slice at a time: through
// the page cache where the trace is in it (a copy), else from the disk
// straight into the slices (O_DIRECT). Through the page cache, a trace that
// is not in it cost this VM ~1 s of system time a GB (pages made, filled,
// copied out once, let go): 5.6-9.1 s against 0.6-0.7 s to read a 7.6 GB
// trace, on a machine of two cores where indexing is bound by the CPU
// (docs/INDEX.md, "Reading the trace").
//
// Which way is chosen once, for the bytes a run reads, from a sample of
// their pages (mincore): less than half of them in the page cache, past it.
// Not slice by slice: a read through the page cache reads the next pages
// ahead into it (a page marked for read-ahead starts the next window, even
// on a file advised POSIX_FADV_RANDOM), so the slices after one found there
// were found there too, and the whole trace went through it.
//
// A read goes past the page cache only where it can: the trace's file
// system takes O_DIRECT (tmpfs does not), and the offset and the memory it
// is read into are aligned to kAlign. The caller keeps its reads aligned
// (each ends where the next one starts, on an aligned offset), and leaves
// kAlign bytes of room past each, which a read past the page cache may fill
// up to the next aligned offset.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace tinescope::index {

class TraceReads {
 public:
  // O_DIRECT's alignment of file offsets, lengths and memory: no block
  // device's logical block is larger than a page.
  static constexpr uint64_t kAlign = 4096;

  // For reads of [from, to) of the trace open as `fd`, mapped at `map`
  // (where mincore() tells which pages the page cache holds; null: through
  // the page cache).
  TraceReads(int fd, const uint8_t* map, uint64_t from, uint64_t to);
  ~TraceReads();
  TraceReads(const TraceReads&) = delete;
  TraceReads& operator=(const TraceReads&) = delete;

  // Reads up to n bytes at trace offset `at` into `into`, as pread() does:
  // the bytes read (fewer at the end of the file), or -1 with errno.
  ssize_t read(uint8_t* into, uint64_t at, size_t n);

  // Whether reads go past the page cache, and the bytes read so.
  bool direct() const { return direct_ >= 0; }
  uint64_t direct_bytes() const { return direct_bytes_; }

  // The share of the pages of [from, to) of a mapped file in the page
  // cache, from a sample of at most 1 024 runs of 16 pages (~1 ms).
  static double share_in_page_cache(const uint8_t* map, uint64_t from, uint64_t to);

 private:
  ssize_t read_through_page_cache(uint8_t* into, uint64_t at, size_t n);

  const int fd_;
  int direct_ = -1;    // the trace opened again with O_DIRECT, or -1
  int buffered_ = -1;  // and without, for what may not go past the page cache (else fd_)
  uint64_t direct_bytes_ = 0;
};

}  // namespace tinescope::index
