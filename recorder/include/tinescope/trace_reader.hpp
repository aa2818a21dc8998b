// Reading the trace format, from a file or from a live feed, one byte range
// at a time. The reader validates every chunk (markers, sizes, checksums),
// resynchronises after damage, and reports every damaged byte range and every
// gap in a feedlet's sequence numbers. It never trusts a length it has not
// checked, so any input -- truncated, flipped, random -- is safe to feed it.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tinescope/format.hpp"

namespace tinescope::trace {

struct Header {
  uint16_t major = 0, minor = 0;
  format::ClockSection clock{};
  std::string host;
  uint32_t pid = 0;
  std::string process_name;
  std::vector<std::string> cmdline;
  std::string recorder;
  format::Schema schema;
  uint64_t size = 0;     // bytes
  bool intact = true;    // false: damaged; schema is this reader's built-in one
};

struct ChunkInfo {
  uint64_t offset = 0;   // of its begin marker, in the trace
  uint64_t size = 0;     // header + payload + trailer
  format::ChunkHeader header{};
};

struct Damage {
  uint64_t offset = 0, length = 0;
  std::string reason;
};

// Chunks of a feedlet that never arrived: sequence numbers [first, first+count).
struct Loss {
  uint32_t feedlet = 0;
  uint64_t first_sequence = 0, count = 0;
};

struct Event {
  uint16_t type = 0;
  uint32_t feedlet = 0;
  uint64_t ts = 0;  // ticks; Catalog::clock converts
  uint8_t field_count = 0;
  // Its type's definition is not in the schema (decode_events with
  // emit_unknown): bytes[0] holds its fields as written, undecoded.
  bool unknown = false;
  uint32_t index = 0;   // in its chunk, from 0
  uint32_t offset = 0;  // of its first byte in the chunk's raw payload
  // Per field: integers and string ids as is, I64 as int64 bits, F64 as double bits.
  uint64_t u[format::kMaxFields] = {};
  std::string_view bytes[format::kMaxFields];  // Bytes fields; valid during the callback

  int64_t i(size_t k) const { return int64_t(u[k]); }
  double f(size_t k) const {
    double d;
    std::memcpy(&d, &u[k], 8);
    return d;
  }
};

// Ticks → nanoseconds (CLOCK_MONOTONIC of the recording host), piecewise
// linear through the calibration points, so TSC drift is followed.
class ClockMap {
 public:
  void reset(double ticks_per_ns, uint64_t ref_ticks, uint64_t ref_ns);
  void add_point(uint64_t ticks, uint64_t ns);
  int64_t to_ns(uint64_t ticks) const;
  // The inverse: the tick at `ns` (0 before the clock's start).
  uint64_t to_ticks(int64_t ns) const;
  double ticks_per_ns() const { return nominal_; }
  // Onto another host's clock (several traces merged): to_ns() gives
  // offset_ns + rate × the host's own nanoseconds, and to_ticks() takes
  // those. Kept across reset() and add_point(); (0, 1) is the host's own.
  void align(double offset_ns, double rate);
  double align_offset_ns() const { return offset_; }
  double align_rate() const { return rate_; }

 private:
  int64_t host_ns(uint64_t ticks) const;
  uint64_t host_ticks(int64_t ns) const;
  double nominal_ = 1.0;
  std::vector<std::pair<uint64_t, uint64_t>> points_;  // sorted by ticks
  double offset_ = 0, rate_ = 1;
  bool aligned_ = false;
};

struct FeedletInfo {
  uint64_t tid = 0;
  std::string name;  // OS name at registration, then the latest thread_name event
};

// What the metadata feedlet (and naming events) tell about the trace.
struct Catalog {
  std::vector<std::string> strings{""};  // id → text; 0 is ""
  format::Schema schema;                  // header schema + user types
  ClockMap clock;
  std::unordered_map<uint32_t, FeedletInfo> feedlets;
  std::unordered_map<uint32_t, uint64_t> function_address;  // fn string id → code address
  struct SourceLine {
    uint32_t file = 0;  // string id
    uint32_t line = 0;
  };
  std::unordered_map<uint32_t, SourceLine> function_source;  // fn string id → where its code begins
  std::string process_name;
  std::unordered_map<uint32_t, std::string> cpu_names;    // ts_cpu_name: cpu -> latest name
  std::unordered_map<std::string, std::string> metadata;  // Metadata events: key -> latest value
  uint64_t version = 0;  // +1 whenever apply() changes anything (readers of a growing trace cache copies)

  std::string_view string(uint64_t id) const {
    return id < strings.size() ? std::string_view(strings[id]) : std::string_view("<unknown name>");
  }
  std::string_view type_name(uint16_t type) const {
    const format::EventTypeDef* d = schema.find(type);
    return d ? std::string_view(d->name) : std::string_view("<unknown type>");
  }
  void apply(const Event& e);  // metadata and naming events

  // A message channel's name (ts_channel_name: the metadata "channel.<id>"), "" if none.
  std::string channel_name(uint64_t channel) const;
  // What a reader calls it: "req (3)", or "3" with no name.
  std::string channel_label(uint64_t channel) const;

  // A feedlet's thread name ("?" for a feedlet it does not know).
  std::string_view thread_name(uint32_t feedlet) const {
    auto f = feedlets.find(feedlet);
    return f == feedlets.end() ? std::string_view("?") : std::string_view(f->second.name);
  }
  // The process of a feedlet's thread: an import's feedlet.N.process, else the trace's.
  std::string process_of(uint32_t feedlet) const;
  // Each feedlet's thread as a reader tells it from the others: its name,
  // and where other threads share that name, with its process and thread
  // id ("IOThread (Browser, tid 12)"; a thread with no name: "tid 12").
  std::unordered_map<uint32_t, std::string> thread_labels() const;
};

struct Visitor {
  virtual ~Visitor() = default;
  virtual void on_header(const Header&) {}
  // A valid chunk, before its events. dropped_before is in info.header.
  virtual void on_chunk(const ChunkInfo&) {}
  virtual void on_event(const Event&) {}
  virtual void on_damage(const Damage&) {}
  virtual void on_loss(const Loss&) {}
};

struct ReaderOptions {
  bool decode_data = true;        // false: decode only metadata chunks
  bool sequence_from_zero = true; // false (joining a live feed): a feedlet's first chunk sets its start
};

// Incremental parser over the bytes of one trace. parse() may be called with
// any split of the input; it consumes what it can and reports as it goes.
class Parser {
 public:
  explicit Parser(Visitor& visitor, ReaderOptions options = {});

  // `data` holds the trace bytes from offset `base`. Returns how many of them
  // were consumed; the caller presents the rest again with more appended.
  // eof: no more bytes will come (a truncated tail is then damage).
  size_t parse(const uint8_t* data, size_t n, uint64_t base, bool eof);

  const Catalog& catalog() const { return catalog_; }
  const Header& header() const { return header_; }
  bool header_done() const { return header_done_; }
  // A fatal error (for example a newer major version): nothing more is read.
  const std::string& error() const { return error_; }

  uint64_t chunks() const { return chunks_; }
  // Whether what was parsed is a tinescope trace at all: a file header, or
  // at least one intact chunk (a trace whose header alone is damaged is one).
  bool found_trace() const { return header_.intact || chunks_ > 0; }
  uint64_t events() const { return events_; }
  // Events skipped because their type's definition is missing (lost metadata).
  uint64_t skipped_events() const { return skipped_; }

 private:
  enum class Try { Valid, Invalid, Incomplete };
  Try try_chunk(const uint8_t* p, size_t avail, size_t& total, std::string& why) const;
  bool parse_header(const uint8_t* data, size_t n, bool eof, size_t& consumed);
  void deliver_chunk(const uint8_t* p, uint64_t offset, size_t total);
  void damage(uint64_t offset, uint64_t length, std::string reason);

  Visitor& v_;
  ReaderOptions opt_;
  Header header_;
  bool header_done_ = false;
  Catalog catalog_;
  std::string error_;
  std::unordered_map<uint32_t, uint64_t> next_seq_;
  std::vector<uint8_t> raw_;  // decompressed payload
  Damage pending_damage_;     // merged with adjacent damage before it is reported
  std::string pending_reason_;  // why the first damage happened, when known early
  uint64_t chunks_ = 0, events_ = 0, skipped_ = 0;
};

// Decodes the events of one chunk's raw payload. Returns false (with a
// reason) if the payload is not what its schema and header say. Self-sized
// events of unknown types are skipped and counted in `skipped`, or, with
// emit_unknown, given as they are (Event::unknown; what a details view shows).
bool decode_events(const uint8_t* raw, size_t n, const format::ChunkHeader& h, const format::Schema& schema,
                   const std::function<void(const Event&)>& emit, std::string& why, uint64_t& skipped,
                   bool emit_unknown = false);

// The raw payload of a valid chunk (its bytes from the begin marker):
// decompressed into `buf`, or pointing into the chunk when stored raw. Null
// if the payload does not decompress to its stated size.
const uint8_t* chunk_payload(const uint8_t* chunk, std::vector<uint8_t>& buf);
// At least bytes [from, *to) of that payload, at their offsets from the
// address returned: the segments that hold them (a segmented payload), or
// the payload up to *to (one lz4 block, which decodes only from its start).
// *to is then where what was decoded ends. For a walk that starts or stops
// inside a chunk.
const uint8_t* chunk_payload_range(const uint8_t* chunk, std::vector<uint8_t>& buf, size_t from, size_t* to);
// For a reader that reads a chunk's bytes piecemeal (a query that needs one
// segment of it): the bytes from the chunk's start through its segment
// table (a segmented payload), or its header; and the bytes [*begin, *end)
// of the chunk that chunk_payload_range(chunk, buf, from, &to) reads past
// those: of a segmented payload the blocks it decodes, of any other the
// whole chunk. chunk_range_bytes needs the chunk's head bytes; false if its
// segment table is not sound.
size_t chunk_head_bytes(const format::ChunkHeader& h);
bool chunk_range_bytes(const uint8_t* chunk, size_t from, size_t to, size_t* begin, size_t* end);

// Reads a whole file (memory-mapped). Returns false with a message naming the
// file if it cannot be opened or read at all; damage is reported, not fatal.
bool read_file(const std::string& path, Parser& parser, std::string& error);
bool read_file(const std::string& path, Visitor& visitor, std::string& error, ReaderOptions options = {});

// A live feed: push the bytes as they arrive.
class StreamReader {
 public:
  explicit StreamReader(Visitor& visitor, ReaderOptions options = {.sequence_from_zero = false})
      : parser_(visitor, options) {}
  void feed(const void* data, size_t n);
  void close();  // the source ended: a partial chunk at the end is damage
  const Parser& parser() const { return parser_; }
  uint64_t offset() const { return base_ + buf_.size(); }

 private:
  Parser parser_;
  std::vector<uint8_t> buf_;
  uint64_t base_ = 0;
};

}  // namespace tinescope::trace
