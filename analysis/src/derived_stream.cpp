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
#include <cstring>

#include "tinescope/index/item_pyramid.hpp"

namespace tinescope::analysis {

using index::Buckets;
using index::Item;
using index::TraceIndex;

DerivedStream::DerivedStream() = default;

DerivedStream::~DerivedStream() {
  if (map_) ::munmap(const_cast<uint8_t*>(map_), map_size_);
  if (fd_ >= 0) ::close(fd_);
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
// were written (a sixth of a dense field stream's time went to it).
class RecordWriter {
 public:
  static constexpr size_t kBuffer = size_t(4) << 20;  // bytes; a multiple of 32
  explicit RecordWriter(int fd) : fd_(fd), buf_(kBuffer / sizeof(Record)) {}
  // Room for at least one record (empty on error).
  std::span<Record> room(std::string& error) {
    if (used_ == buf_.size() && !flush(error)) return {};
    return {buf_.data() + used_, buf_.size() - used_};
  }
  void wrote(size_t n) { used_ += n; }
  // Bytes written.
  uint64_t finish(std::string& error) {
    flush(error);
    return written_;
  }

 private:
  bool flush(std::string& error) {
    const char* p = reinterpret_cast<const char*>(buf_.data());
    size_t left = used_ * sizeof(Record);
    while (left) {
      const ssize_t n = ::pwrite(fd_, p, left, off_t(written_));
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        error = std::string("cannot write a stream's temporary file: ") + (n < 0 ? std::strerror(errno) : "no room");
        return false;
      }
      p += n, left -= size_t(n), written_ += uint64_t(n);
    }
    used_ = 0;
    return true;
  }
  int fd_;
  std::vector<Record> buf_;
  size_t used_ = 0;
  uint64_t written_ = 0;
};

}  // namespace

std::unique_ptr<DerivedStream> DerivedStream::store(Cursor& cursor, bool intervals, std::string& error,
                                                    const std::string& temp_dir) {
  std::unique_ptr<DerivedStream> s(new DerivedStream());
  s->intervals_ = intervals;
  s->fd_ = temp_file(temp_dir, error);
  if (s->fd_ < 0) return nullptr;
  // The records, in order, through RecordWriter's buffer into the file.
  RecordWriter out(s->fd_);
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
    out.wrote(n);
  }
  if (error = cursor.error(); !error.empty()) return nullptr;
  const uint64_t written = out.finish(error);
  if (!error.empty()) return nullptr;
  s->events_read_ = cursor.events_read();
  // The pyramid, from the records mapped back, its pages after them.
  s->pyramid_ = std::make_unique<index::ItemPyramid>(s->kind(), s->count_, last_key - first_key, s->fd_, written);
  if (s->count_) {
    void* m = ::mmap(nullptr, written, PROT_READ, MAP_SHARED, s->fd_, 0);
    if (m == MAP_FAILED) {
      error = std::string("cannot map a stream's temporary file: ") + std::strerror(errno);
      return nullptr;
    }
    ::madvise(m, written, MADV_SEQUENTIAL);
    const Record* rec = static_cast<const Record*>(m);
    Item it;
    it.kind = s->kind();
    for (uint64_t i = 0; i < s->count_; ++i) {
      it.start = rec[i].start, it.end = rec[i].end, it.value = rec[i].value, it.name = rec[i].name;
      s->pyramid_->add(it);
    }
    ::munmap(m, written);
    uint64_t end = 0;
    if (!s->pyramid_->finish(end, error)) return nullptr;
    s->map_size_ = end;
    m = ::mmap(nullptr, s->map_size_, PROT_READ, MAP_SHARED, s->fd_, 0);
    if (m == MAP_FAILED) {
      error = std::string("cannot map a stream's temporary file: ") + std::strerror(errno);
      return nullptr;
    }
    s->map_ = static_cast<const uint8_t*>(m);
    s->records_ = reinterpret_cast<const Record*>(s->map_);
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
    pyramid_->query(t0, t1, shift, map_, map_size_, out);
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
