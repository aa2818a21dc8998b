// A derived stream stored: the records a cursor yields, in a temporary file,
// and a summary pyramid after them (index::ItemPyramid), so that it is drawn
// and queried at any zoom as the trace's own streams are.
#include "tinescope/analysis/derived_stream.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <future>
#include <new>
#include <system_error>

#include "tinescope/index/item_pyramid.hpp"

namespace tinescope::analysis {

using index::Buckets;
using index::Item;
using index::TraceIndex;

DerivedStream::DerivedStream() = default;

DerivedStream::~DerivedStream() {
  if (records_) ::munmap(const_cast<Record*>(records_), records_size_);
  if (pages_) ::munmap(const_cast<uint8_t*>(pages_), pages_size_);
  if (records_fd_ >= 0) ::close(records_fd_);
  if (pages_fd_ >= 0) ::close(pages_fd_);
}

std::unique_ptr<DerivedStream> DerivedStream::evaluate(const TraceIndex& ix, const Expr& e, std::string& error,
                                                       const EvalOptions& options) {
  auto c = open_cursor(ix, e, options, error);
  if (!c) return nullptr;
  return store(*c, yields_intervals(e), error, options.temp_dir);
}

namespace {

int temp_file(const std::string& dir_option, std::string& error) {
  std::string dir = dir_option;
  if (dir.empty()) {
    const char* t = std::getenv("TMPDIR");
    dir = t && *t ? t : "/tmp";
  }
  // Unnamed: it goes away with the stream, even after a crash.
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  std::string path = dir + "/tinescope-stream-XXXXXX";
  fd = ::mkstemp(path.data());
  if (fd < 0) {
    error = "cannot make a temporary file in " + dir + ": " + std::strerror(errno);
    return -1;
  }
  ::unlink(path.c_str());
  return fd;
}

// The records go to the file from a buffer of 4 MiB with pwrite: fresh
// page-cache pages behind a mapping were zeroed by the kernel before they
// were written (a sixth of a dense field stream's time went to it). Where
// nothing reads them back at once (the pyramid built as they pass), they
// go around the page cache (O_DIRECT): every fresh page costs its first
// touch, on a VM ten times a copy's (a quarter of a job scan's time, for
// its 533 MB of records). Where the file system refuses that (EINVAL, as
// tmpfs before Linux 6.6 did), they go through the page cache.
class RecordWriter {
 public:
  static constexpr size_t kBuffer = size_t(4) << 20;  // bytes; a multiple of 32 and of kAlign
  static constexpr size_t kAlign = 4096;              // O_DIRECT's alignment of memory, offsets and sizes
  RecordWriter(int fd, bool direct) : fd_(fd) {
    for (Record*& b : bufs_)
      if (!(b = static_cast<Record*>(std::aligned_alloc(kAlign, kBuffer)))) throw std::bad_alloc();
    direct_ = direct && set_direct(true);
  }
  ~RecordWriter() {
    if (writing_.valid()) writing_.wait();
    for (Record* b : bufs_) std::free(b);
  }
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;
  // Room for at least one record (empty on error).
  std::span<Record> room(std::string& error) {
    if (used_ == kRecords && !flush(error)) return {};
    return {bufs_[cur_] + used_, kRecords - used_};
  }
  void wrote(size_t n) { used_ += n; }
  // Bytes of records written (the file's size).
  uint64_t finish(std::string& error) {
    if (!flush(error) || !written(error)) return size_;
    // A direct write's last block was padded: the file ends at the records.
    if (written_ != size_ && ::ftruncate(fd_, off_t(size_)) != 0)
      error = std::string("cannot write a stream's temporary file: ") + std::strerror(errno);
    return size_;
  }

 private:
  static constexpr size_t kRecords = kBuffer / sizeof(Record);
  bool set_direct(bool on) {
    const int flags = ::fcntl(fd_, F_GETFL);
    return flags != -1 && ::fcntl(fd_, F_SETFL, on ? flags | O_DIRECT : flags & ~O_DIRECT) == 0;
  }
  // The buffer goes to the file on a thread of its own while the other one
  // fills (a direct write waits for the disk). Only the last buffer is
  // partly full: its padding is the only one, cut by finish().
  bool flush(std::string& error) {
    if (!written(error)) return false;
    const size_t bytes = used_ * sizeof(Record);
    if (!bytes) return true;
    const size_t padded = direct_ ? (bytes + kAlign - 1) / kAlign * kAlign : bytes;
    char* p = reinterpret_cast<char*>(bufs_[cur_]);
    std::memset(p + bytes, 0, padded - bytes);
    try {
      writing_ = std::async(std::launch::async, [this, p, padded] { return write(p, padded); });
    } catch (const std::system_error& e) {  // no thread to be had: written here
      if (std::string why = write(p, padded); !why.empty()) return error = why, false;
    }
    size_ += bytes, used_ = 0, cur_ ^= 1;
    return true;
  }
  // The write in flight, done: false with its error.
  bool written(std::string& error) {
    if (!writing_.valid()) return true;
    if (std::string why = writing_.get(); !why.empty()) return error = why, false;
    return true;
  }
  std::string write(const char* p, size_t left) {
    while (left) {
      const ssize_t n = ::pwrite(fd_, p, left, off_t(written_));
      if (n < 0 && errno == EINVAL && direct_) {  // refused around the cache (or a short write left it unaligned): through it
        direct_ = false;
        set_direct(false);
        continue;
      }
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        return std::string("cannot write a stream's temporary file: ") + (n < 0 ? std::strerror(errno) : "no room");
      }
      p += n, left -= size_t(n), written_ += uint64_t(n);
    }
    return {};
  }
  int fd_;
  bool direct_ = false;
  Record* bufs_[2] = {};
  size_t cur_ = 0, used_ = 0;  // the buffer filling, and its records
  uint64_t written_ = 0, size_ = 0;  // bytes in the file; of records (less the last block's padding)
  std::future<std::string> writing_;  // the other buffer's write
};

void add_records(index::ItemPyramid& pyramid, index::StreamKind kind, std::span<const Record> records) {
  Item it;
  it.kind = kind;
  for (const Record& r : records) {
    it.start = r.start, it.end = r.end, it.value = r.value, it.name = r.name;
    pyramid.add(it);
  }
}

const uint8_t* map_file(int fd, size_t size, std::string& error) {
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (m != MAP_FAILED) return static_cast<const uint8_t*>(m);
  error = std::string("cannot map a stream's temporary file: ") + std::strerror(errno);
  return nullptr;
}

}  // namespace

std::unique_ptr<DerivedStream> DerivedStream::store(Cursor& cursor, bool intervals, std::string& error,
                                                    const std::string& temp_dir) {
  std::unique_ptr<DerivedStream> s(new DerivedStream());
  s->intervals_ = intervals;
  s->records_fd_ = temp_file(temp_dir, error);
  if (s->records_fd_ < 0) return nullptr;
  s->pages_fd_ = temp_file(temp_dir, error);
  if (s->pages_fd_ < 0) return nullptr;
  // Where the cursor knows about how many records come, the pyramid is
  // built from them as they pass, while they are in the cache; else from
  // the file once all are written.
  uint64_t expected = 0, expected_span = 0;
  const bool as_they_pass = cursor.estimate(expected, expected_span);
  if (as_they_pass) s->pyramid_ = std::make_unique<index::ItemPyramid>(s->kind(), expected, expected_span, s->pages_fd_, 0);
  // The records, in order, through RecordWriter's buffer into the file.
  RecordWriter out(s->records_fd_, as_they_pass);
  uint64_t first_key = 0, last_key = 0;
  for (;;) {
    std::span<Record> room = out.room(error);
    if (room.empty()) return nullptr;
    const size_t n = cursor.next_batch(room);
    if (n == 0) break;
    if ((s->count_ && room[0].end < last_key) || !std::is_sorted(room.begin(), room.begin() + n, [](auto& x, auto& y) { return x.end < y.end; })) {
      error = "internal: a stream's records came out of order";
      return nullptr;
    }
    if (!s->count_) first_key = room[0].end;
    last_key = room[n - 1].end;
    s->count_ += n;
    if (as_they_pass) add_records(*s->pyramid_, s->kind(), room.first(n));
    out.wrote(n);
  }
  if (error = cursor.error(); !error.empty()) return nullptr;
  s->records_size_ = out.finish(error);
  if (!error.empty()) return nullptr;
  s->events_read_ = cursor.events_read();
  if (!as_they_pass)
    s->pyramid_ = std::make_unique<index::ItemPyramid>(s->kind(), s->count_, last_key - first_key, s->pages_fd_, 0);
  if (!s->count_) return s;
  const uint8_t* m = map_file(s->records_fd_, s->records_size_, error);
  if (!m) return nullptr;
  s->records_ = reinterpret_cast<const Record*>(m);
  if (!as_they_pass) {
    ::madvise(const_cast<uint8_t*>(m), s->records_size_, MADV_SEQUENTIAL);
    add_records(*s->pyramid_, s->kind(), s->records());
    ::madvise(const_cast<uint8_t*>(m), s->records_size_, MADV_NORMAL);
  }
  uint64_t end = 0;
  if (!s->pyramid_->finish(end, error)) return nullptr;
  if (end) {
    if (!(s->pages_ = map_file(s->pages_fd_, end, error))) return nullptr;
    s->pages_size_ = end;
  }
  return s;
}

std::span<const Record> DerivedStream::records(uint64_t t0, uint64_t t1) const {
  auto all = records();
  auto b = std::partition_point(all.begin(), all.end(), [&](const Record& r) { return r.end < t0; });
  auto e = std::partition_point(b, all.end(), [&](const Record& r) { return r.end <= t1; });
  return {b, e};
}

uint32_t DerivedStream::leaf_shift() const { return pyramid_->leaf_shift(); }
uint32_t DerivedStream::top_shift() const { return pyramid_->top_shift(); }

Buckets DerivedStream::query(uint64_t t0, uint64_t t1, uint32_t columns) const {
  if (t1 < t0) std::swap(t0, t1);
  uint64_t width = (t1 - t0) / std::max(columns, 1u) + 1;
  return query_shift(t0, t1, uint32_t(std::bit_width(width)) - 1);
}

Buckets DerivedStream::query_shift(uint64_t t0, uint64_t t1, uint32_t shift) const {
  Buckets out;
  if (t1 < t0) std::swap(t0, t1);
  if (pyramid_->answers(shift)) {
    pyramid_->query(t0, t1, shift, pages_, pages_size_, out);
    return out;
  }
  // Below the finest level: from the records of the whole buckets.
  out.shift = shift;
  out.from_events = true;
  uint64_t from = (t0 >> shift) << shift, to = ((t1 >> shift) + 1) << shift;
  to = to == 0 || to <= from ? UINT64_MAX : to - 1;
  Item it;
  it.kind = kind();
  for (const Record& r : records(from, to)) {
    it.start = r.start, it.end = r.end, it.value = r.value, it.name = r.name;
    index::ItemPyramid::fold_item(out.nodes, it, shift);
  }
  return out;
}

}  // namespace tinescope::analysis
