// Writing the trace format: a file header, and chunks built event by event.
// Used by the recorder's collector and by importers that convert other formats.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinescope/format.hpp"

namespace tinescope::format {

struct HeaderInfo {
  ClockSection clock{};
  std::string host;
  uint32_t pid = 0;
  std::string process_name;
  std::vector<std::string> cmdline;
  std::string recorder = "tinescope";
  const Schema* schema = &builtin_schema();
};
std::string build_file_header(const HeaderInfo& info);

// The lz4 HC level of dense chunks (ChunkBuilder::dense): two match
// candidates, ~190 MB/s to write here against ~500 for the fast mode; higher
// levels cost more and shrink little more. (Measured with lz4 1.9.4, Debian
// 12's; a block of any level decodes the same.)
constexpr int kDenseLevel = 2;

// One feedlet's chunk under construction. Events are encoded straight into
// the payload buffer:  p = begin(type, ts); p = put_...(p, field); end(p).
class ChunkBuilder {
 public:
  static constexpr size_t kTargetRaw = 64 * 1024;  // cut a chunk at about this size
  static constexpr size_t kMaxEventBytes = 4096;   // room begin() guarantees

  ChunkBuilder() : buf_(kTargetRaw + kMaxEventBytes) { cuts_.reserve(kTargetRaw / 2 / kSegmentEvents + 2); }

  uint32_t feedlet = 0;
  uint64_t sequence = 0;        // of the next chunk
  uint64_t pending_drops = 0;   // goes into the next chunk's header
  uint64_t opened_at_ns = 0;    // when its first event arrived (for the latency bound)
  // How finish() compresses: lz4's fast mode, or (dense) lz4 HC at a low
  // level, which takes ~2.6x the CPU to write but leaves fewer, longer
  // matches: on scheduling events 18 % smaller and ~3x faster to decode.
  // Readers see lz4 blocks either way.
  bool dense = false;

  bool empty() const { return events_ == 0; }
  bool full() const { return size_ >= kTargetRaw; }
  size_t size() const { return size_; }
  uint32_t events() const { return events_; }
  uint64_t last_ts() const { return last_ts_; }

  // Starts an event with room for `extra` bytes of fields beyond kMaxEventBytes.
  // A timestamp earlier than the feedlet's last one is raised to it: a feedlet
  // is time-monotone by definition.
  uint8_t* begin(uint16_t type, uint64_t ts, size_t extra = 0) {
    if (size_ + kMaxEventBytes + extra > buf_.size()) buf_.resize(size_ + kMaxEventBytes + extra);
    if (ts < last_ts_) ts = last_ts_;
    if (events_ == 0) first_ts_ = ts;
    uint8_t* p = put_varint(buf_.data() + size_, type);
    p = put_varint(p, ts - (events_ == 0 ? first_ts_ : last_ts_));
    last_ts_ = ts;
    return p;
  }
  void end(uint8_t* p) {
    size_ = size_t(p - buf_.data());
    if (++events_ % kSegmentEvents == 0) cuts_.push_back(uint32_t(size_));  // a segment may start here
  }

  static uint8_t* put_u64(uint8_t* p, uint64_t v) { return put_varint(p, v); }
  static uint8_t* put_i64(uint8_t* p, int64_t v) { return put_varint(p, zigzag(v)); }
  static uint8_t* put_f64(uint8_t* p, double v) {
    std::memcpy(p, &v, 8);
    return p + 8;
  }
  static uint8_t* put_bytes(uint8_t* p, const void* data, size_t n) {
    p = put_varint(p, n);
    if (n) std::memcpy(p, data, n);  // data may be null when n is 0
    return p + n;
  }
  uint8_t* put_delta(uint8_t* p, uint64_t v) {
    p = put_varint(p, zigzag(int64_t(v - prev_delta_)));
    prev_delta_ = v;
    return p;
  }

  // Writes the finished chunk (header, payload in lz4 segments, trailer)
  // into `frame` and starts the next one.
  void finish(uint16_t flags, std::vector<uint8_t>& frame);

 private:
  std::vector<uint8_t> buf_;
  std::vector<uint32_t> cuts_;  // where segments 1, 2, ... start in buf_ (the last may be its end)
  size_t size_ = 0;
  uint32_t events_ = 0;
  uint64_t first_ts_ = 0, last_ts_ = 0;
  uint64_t prev_delta_ = 0;
};

// Whether a writer that must keep up as events come (the recorder's
// collector) can afford dense chunks: while the raw bytes it compresses come
// at under kDenseBytesPerS, lz4 HC takes under a tenth of a core here, and
// scheduling, lock and message traces mostly come that slowly. Fast mode at
// first, until a whole window was that slow and never behind; again as soon
// as a window's bytes pass its share (a burst costs at most one window's
// share at HC), and at once when the writer says it is behind (a writer
// slower than its input compresses little, and must not slow itself more).
class DensePace {
 public:
  static constexpr uint64_t kWindowNs = 100'000'000;
  static constexpr double kDenseBytesPerS = 16e6;
  static constexpr double kWindowBytes = kDenseBytesPerS * double(kWindowNs) / 1e9;

  // For a chunk of `raw_bytes` finished at `now_ns` (a clock that never falls).
  bool dense(uint64_t now_ns, size_t raw_bytes) {
    if (!started_) {
      started_ = true, window_start_ = now_ns;
    } else if (now_ns - window_start_ >= kWindowNs) {  // the window (and any idle time after it) ended
      dense_ = !behind_ && double(bytes_) < kDenseBytesPerS * double(now_ns - window_start_) / 1e9;
      window_start_ = now_ns, bytes_ = 0, behind_ = false;
    }
    bytes_ += raw_bytes;
    if (double(bytes_) > kWindowBytes) dense_ = false;
    return dense_;
  }
  // Input is waiting that the writer has not reached (or was dropped):
  // fast for the rest of this window and the next.
  void behind() { dense_ = false, behind_ = true; }

 private:
  uint64_t window_start_ = 0, bytes_ = 0;
  bool started_ = false, dense_ = false, behind_ = false;
};

}  // namespace tinescope::format
