// Evaluating streams (tinescope/stream_expr.hpp) over an indexed trace.
//
// Evaluation is a chain of cursors that read records in key order (end
// time), so a stream of any length passes through a bounded amount of
// memory: base streams decode the trace's chunks window by window (both
// cores), operators transform as records pass. The result is stored as a
// DerivedStream: its records in a temporary file, mapped, and a summary
// pyramid built exactly like a base stream's, so it draws, plays and is
// searched for needles as fast. docs/ANALYSIS.md has the semantics.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tinescope/analysis/stream_expr.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {
class ItemPyramid;
}

namespace tinescope::analysis {

constexpr uint32_t kNoFeedlet = UINT32_MAX;

// One item of a stream. 32 bytes, the layout of a DerivedStream's file.
struct Record {
  uint64_t start = 0;  // intervals: the start; samples: the virtual time (exclude) or the time
  uint64_t end = 0;    // the key: intervals end, samples' time
  double value = 0;    // samples: the value; messages: the size; a base interval: -1 if truncated, else 0
  uint32_t name = 0;   // string id in the trace's catalog; 0 for intervals an operator made
  uint32_t feedlet = kNoFeedlet;  // where it happened; kNoFeedlet for intervals an operator made
  uint64_t duration() const { return end - start; }
  // An interval whose end was not recorded (index::Item::truncated): its
  // duration is as far as the trace saw it. (-1: never a message's size.)
  bool truncated() const { return value == -1; }
  static double interval_value(const index::Item& it) { return it.truncated ? -1 : 0; }
};
static_assert(sizeof(Record) == 32);

// Reads a stream's records in key order.
class Cursor {
 public:
  virtual ~Cursor() = default;
  virtual bool next(Record& r) = 0;
  // Up to out.size() records at once (0: the end); what next() would give.
  virtual size_t next_batch(std::span<Record> out) {
    size_t n = 0;
    while (n < out.size() && next(out[n])) ++n;
    return n;
  }
  // No interval of the stream is longer than this (UINT64_MAX: not known).
  virtual uint64_t max_duration() const = 0;
  // Its intervals are disjoint (so they are also in start order).
  virtual bool flat() const { return false; }
  // Events the base streams under this cursor read so far.
  virtual uint64_t events_read() const = 0;
  // Non-empty if evaluation failed on the way (e.g. the temporary file).
  virtual std::string error() const { return {}; }
  // About how many records it will give, and the span of their keys
  // (ticks), where known before reading them: DerivedStream::store then
  // builds the pyramid as the records pass, and writes them around the page
  // cache. An estimate sizes the pyramid's leaves only; what is stored is
  // the records given.
  virtual bool estimate(uint64_t& count, uint64_t& key_span) const {
    (void)count, (void)key_span;
    return false;
  }
};

struct EvalOptions {
  uint64_t t0 = 0, t1 = UINT64_MAX;  // only records whose key lies in [t0, t1] (ticks)
  unsigned threads = 0;              // decoding threads a window (two windows decode at once); 0: one per core
  std::string temp_dir;              // for stored streams; "": $TMPDIR or /tmp
};

// A duration in ticks of the trace's clock (at its nominal rate).
uint64_t duration_ticks(const index::TraceIndex& ix, int64_t ns);

// The base streams of the index a base expression selects (its name, thread
// and process fields; depth and value tests apply to each event).
std::vector<int> select_streams(const index::TraceIndex& ix, const Expr& base);

// A cursor over the stream; null with the reason if it cannot be evaluated.
std::unique_ptr<Cursor> open_cursor(const index::TraceIndex& ix, const Expr& e, const EvalOptions& options,
                                    std::string& error);

// An evaluated stream, stored and summarised.
class DerivedStream {
 public:
  static std::unique_ptr<DerivedStream> evaluate(const index::TraceIndex& ix, const Expr& e, std::string& error,
                                                 const EvalOptions& options = {});
  // Stores what a cursor yields (which must be in key order).
  static std::unique_ptr<DerivedStream> store(Cursor& cursor, bool intervals, std::string& error,
                                              const std::string& temp_dir = {});
  ~DerivedStream();

  bool intervals() const { return intervals_; }
  index::StreamKind kind() const { return intervals_ ? index::StreamKind::Interval : index::StreamKind::Counter; }
  uint64_t size() const { return count_; }
  std::span<const Record> records() const { return {records_, count_}; }
  // Records with their key in [t0, t1].
  std::span<const Record> records(uint64_t t0, uint64_t t1) const;
  uint64_t events_read() const { return events_read_; }

  // The pyramid, as TraceIndex::query / query_shift answer for a base stream.
  index::Buckets query(uint64_t t0, uint64_t t1, uint32_t columns) const;
  index::Buckets query_shift(uint64_t t0, uint64_t t1, uint32_t shift) const;
  uint32_t leaf_shift() const;
  uint32_t top_shift() const;  // the coarsest level

 private:
  DerivedStream();
  bool intervals_ = true;
  uint64_t count_ = 0, events_read_ = 0;
  // Two temporary files, each mapped: the records, and the pyramid's pages.
  int records_fd_ = -1, pages_fd_ = -1;
  const Record* records_ = nullptr;
  size_t records_size_ = 0;  // bytes mapped
  const uint8_t* pages_ = nullptr;
  size_t pages_size_ = 0;
  std::unique_ptr<index::ItemPyramid> pyramid_;
};

}  // namespace tinescope::analysis
