// The tinescope trace format: constants and layouts shared by the writer (the
// recorder's collector) and every reader. docs/FORMAT.md describes the same
// bytes in prose; keep the two in step.
//
// A trace (file or live feed) is:   file header, then chunks, back to back.
// All integers are little endian. Varints are LEB128 (7 bits a byte, low first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace tinescope::format {

// 2: chunk payloads in independently compressed segments (kChunkLz4Segments).
// A reader reads both; one of version 1 refuses a version-2 trace by name.
constexpr uint16_t kMajorVersion = 2;
constexpr uint16_t kMinorVersion = 0;

// "\x89TINE\r\n\x1a": the high byte catches 7-bit transfers, CR LF catches
// newline translation, ^Z stops `type` on DOS -- the PNG trick.
constexpr uint8_t kFileMagic[8] = {0x89, 'T', 'I', 'N', 'E', '\r', '\n', 0x1a};

// Chunk markers. Chosen to be unlikely in lz4 output and text; a false match
// is harmless because the reader also checks sizes, end marker and checksum.
constexpr uint8_t kChunkBegin[8] = {0xF1, 'T', 'S', 'C', 'K', 0x5A, 0xA5, 0x0B};
constexpr uint8_t kChunkEnd[8]   = {0xF1, 'T', 'S', 'C', 'K', 0xA5, 0x5A, 0x0E};

// ---------------------------------------------------------------- file header
// offset size
//  0     8   kFileMagic
//  8     2   major version
// 10     2   minor version
// 12     4   header size in bytes, from offset 0 to the end of the checksum
// 16     ..  sections: u16 tag, u32 length, `length` bytes (unknown tags skipped)
// end-8  8   XXH3-64 of bytes [0, end-8)
constexpr size_t kFileHeaderFixed = 16;
constexpr uint32_t kMaxFileHeader = 16u << 20;

enum class Section : uint16_t {
  Clock = 1,     // ClockSection below
  Host = 2,      // UTF-8 host name
  Process = 3,   // u32 pid, then UTF-8 process name
  CmdLine = 4,   // arguments, each terminated by NUL
  Schema = 5,    // schema encoding, see encode_schema()
  Recorder = 6,  // UTF-8 name and version of the writer
};

enum class ClockSource : uint8_t { Tsc = 1, Monotonic = 2 };

// Section::Clock, 40 bytes. Ticks map to CLOCK_MONOTONIC nanoseconds; the
// metadata feedlet carries Calibration events that refine the mapping.
struct ClockSection {
  uint8_t source;          // ClockSource
  uint8_t reserved[7];
  double ticks_per_ns;     // nominal rate, measured at start
  uint64_t ref_ticks;      // a tick reading ...
  uint64_t ref_mono_ns;    // ... the CLOCK_MONOTONIC reading taken with it ...
  uint64_t ref_real_ns;    // ... and CLOCK_REALTIME (wall time of the start)
};
static_assert(sizeof(ClockSection) == 40);

// --------------------------------------------------------------------- chunks
// offset size
//  0     8   kChunkBegin
//  8     2   header size (64 in this version; readers skip what they don't know)
// 10     2   flags (ChunkFlags)
// 12     4   feedlet id (0 is the metadata feedlet)
// 16     8   sequence number, per feedlet, from 0, +1 a chunk
// 24     8   first timestamp (ticks): the first event's, and the base of its delta
// 32     8   last timestamp (ticks)
// 40     4   event count
// 44     4   raw payload size (after decompression)
// 48     4   stored payload size (bytes that follow the header)
// 52     4   header check: low 32 bits of XXH3-64 of bytes [8, 52), so a reader
//            rejects a damaged header before it waits for a payload that isn't there
// 56     8   events dropped in this feedlet since its previous chunk
// 64     n   payload: lz4 block if flags & Lz4, else raw
// 64+n   8   XXH3-64 of bytes [8, 64+n): the header after the marker, and the payload
// 72+n   8   kChunkEnd
struct ChunkHeader {
  uint8_t begin[8];
  uint16_t header_size;
  uint16_t flags;
  uint32_t feedlet;
  uint64_t sequence;
  uint64_t first_ts;
  uint64_t last_ts;
  uint32_t event_count;
  uint32_t raw_size;
  uint32_t stored_size;
  uint32_t header_check;
  uint64_t dropped_before;
};
static_assert(sizeof(ChunkHeader) == 64);
constexpr size_t kChunkTrailer = 16;  // checksum + end marker
constexpr uint32_t kMaxChunkPayload = 64u << 20;

enum ChunkFlags : uint16_t {
  kChunkLz4 = 1 << 0,         // payload is one lz4 block (version 1's writers)
  kChunkFeedletEnd = 1 << 1,  // the thread exited: no more chunks of this feedlet
  kChunkPartial = 1 << 2,     // published early to bound live latency
  kChunkLz4Segments = 1 << 3, // payload is segments, each its own lz4 block (below)
};

// A segmented payload (kChunkLz4Segments) holds the raw payload's segments
// of kSegmentEvents events each (the last one what is left), each compressed
// on its own, so that a reader can decode the events from any segment on
// without the segments before it:
//   S = ceil(event_count / kSegmentEvents) entries of
//     u32 raw_end      where the segment ends in the raw payload
//     u32 stored_end   where its block ends, counted from the first block
//   then the S blocks, back to back: one lz4 block each, or the segment as
//   is where its stored size equals its raw size (lz4 did not shrink it).
// Both ends rise strictly; the last raw_end is raw_size, and the table and
// blocks fill stored_size exactly.
constexpr uint32_t kSegmentEvents = 2048;
constexpr size_t kSegmentEntry = 8;
inline uint32_t segment_count(uint32_t event_count) { return (event_count + kSegmentEvents - 1) / kSegmentEvents; }

constexpr uint32_t kMetadataFeedlet = 0;

// -------------------------------------------------------------------- events
// Payload: events back to back, each
//   varint type, varint (timestamp - previous timestamp in this chunk), fields.
// The first event's delta is from the chunk's first timestamp. How the fields
// of a type are encoded comes from the schema. Types from kFirstUserType up
// (user-defined, or added by a later version) are self-sized: their fields
// are preceded by a varint byte count, so a reader that lacks their
// definition (a lost metadata chunk, an older reader) skips them, and a
// reader that knows fewer fields than were written ignores the rest.
enum class FieldType : char {
  U64 = 'u',       // varint
  I64 = 'i',       // zigzag varint
  F64 = 'f',       // 8 bytes, IEEE 754
  String = 's',    // varint id of an interned string (0 = none)
  Bytes = 'b',     // varint length, then the bytes
  DeltaU64 = 'm',  // zigzag varint of (value - previous DeltaU64 value in this chunk)
};

enum EventType : uint16_t {
  kPadding = 0,
  kIntervalBegin = 1,     // name:s
  kIntervalEnd = 2,       // name:s
  kIntervalComplete = 3,  // name:s duration:u      timestamp is the END
  kInstant = 4,           // name:s
  kCounterInt = 5,        // name:s value:i
  kCounterFloat = 6,      // name:s value:f
  kMessageSend = 7,       // id:m channel:u size:u payload:b
  kMessageRecv = 8,       // id:m channel:u size:u payload:b
  kThreadName = 9,        // name:s
  kProcessName = 10,      // name:s
  kCpuName = 11,          // cpu:u name:s
  kMetadata = 12,         // key:s value:s
  kTaskArrive = 13,       // task:s cpu:u
  kJobArrive = 14,        // task:s job:u cpu:u
  kJobStart = 15,         // task:s job:u cpu:u
  kJobPreempt = 16,       // task:s job:u cpu:u
  kJobResume = 17,        // task:s job:u cpu:u
  kJobBlock = 18,         // task:s job:u cpu:u
  kJobComplete = 19,      // task:s job:u cpu:u
  kLockAcquire = 20,      // lock:s id:u
  kLockContend = 21,      // lock:s id:u
  kLockRelease = 22,      // lock:s id:u
  kClockSyncSend = 23,    // sync_id:u peer:u
  kClockSyncRecv = 24,    // sync_id:u peer:u
  kFuncEnter = 25,        // fn:s
  kFuncExit = 26,         // fn:s
  kJobDeadline = 27,      // task:s job:u deadline:u   absolute, in ticks
  kTaskPriority = 28,     // task:s level:i            from here on; higher: more urgent
  kFeedletEnd = 29,       // (none)   its thread ended (or the recording stopped) here, after dropped events
  kFuncUnwind = 30,       // fn:s     the function's frame was left without its exit (a longjmp): it ends here
  // Metadata feedlet only.
  kStringDef = 32,        // id:u text:b
  kTypeDef = 33,          // code:u schema:b   (one schema entry, see encode_schema)
  kCalibration = 34,      // mono_ns:u          timestamp is the tick reading
  kFeedletInfo = 35,      // feedlet:u tid:u name:s
  kFunctionDef = 36,      // fn:s address:u
  kFunctionSource = 37,   // fn:s file:s line:u   where a function's code begins (debug information)
  kFirstUserType = 64,
  kMaxEventType = 255,
};

inline bool self_sized(uint32_t type) { return type >= kFirstUserType; }

struct FieldDef {
  FieldType type;
  std::string name;
};

struct EventTypeDef {
  uint16_t code = 0;
  std::string name;
  std::vector<FieldDef> fields;  // at most kMaxFields
};
constexpr size_t kMaxFields = 16;

// The schema: which fields each type code has. Indexed by code.
struct Schema {
  std::vector<EventTypeDef> types = std::vector<EventTypeDef>(kMaxEventType + 1);
  std::vector<bool> known = std::vector<bool>(kMaxEventType + 1, false);

  void add(EventTypeDef def);
  const EventTypeDef* find(uint16_t code) const {
    return code <= kMaxEventType && known[code] ? &types[code] : nullptr;
  }
};

// An argument type (docs/FORMAT.md, "Arguments"): a user type whose name
// begins with '.'; its events carry more fields of the event before them.
inline bool is_argument_type(const EventTypeDef& d) {
  return d.code >= kFirstUserType && !d.name.empty() && d.name[0] == '.';
}

// The built-in event types of this version (what the writer puts in the header).
const Schema& builtin_schema();

// Schema encoding: varint count, then per type: varint code, varint name
// length, name, varint field count, per field: type char, varint name length, name.
void encode_schema_entry(const EventTypeDef& def, std::string& out);
void encode_schema(const Schema& schema, std::string& out);
// Both return false on malformed input.
bool decode_schema_entry(const uint8_t*& p, const uint8_t* end, EventTypeDef& def);
bool decode_schema(const uint8_t* p, size_t n, Schema& out);

// ------------------------------------------------------------ small helpers
inline uint8_t* put_varint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = uint8_t(v) | 0x80;
    v >>= 7;
  }
  *p++ = uint8_t(v);
  return p;
}
constexpr size_t kMaxVarint = 10;

inline void append_varint(std::string& out, uint64_t v) {
  uint8_t tmp[kMaxVarint];
  out.append(reinterpret_cast<char*>(tmp), size_t(put_varint(tmp, v) - tmp));
}

// The loop of get_varint, for varints of three bytes or more (out of line).
[[gnu::noinline]] inline bool get_long_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  uint64_t r = 0;
  const uint8_t* q = p;
  for (int shift = 0; shift < 64 && q < end; shift += 7) {
    uint8_t b = *q++;
    r |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      v = r;
      p = q;
      return true;
    }
  }
  return false;
}

// Reads a varint; returns false (and leaves p unchanged) if it runs past end
// or is longer than 10 bytes. Forced inline: the indexer reads every varint
// of a trace through here, and g++ stopped inlining the whole function into
// its walk when that file grew (a tenth of indexing in calls).
[[gnu::always_inline]] inline bool get_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  if (p < end && *p < 0x80) {  // most names and many deltas fit one byte...
    v = *p++;
    return true;
  }
  if (end - p >= 2 && p[1] < 0x80) {  // ...and most other deltas two
    v = uint64_t(p[0] & 0x7f) | uint64_t(p[1]) << 7;
    p += 2;
    return true;
  }
  // Through copies: a call given p's and v's own addresses would keep them in
  // memory, not registers, in every loop that inlines this (the indexer's
  // walk had kept p, the type and the delta on the stack).
  const uint8_t* q = p;
  uint64_t w;
  if (!get_long_varint(q, end, w)) return false;
  p = q, v = w;
  return true;
}

inline uint64_t zigzag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return int64_t(v >> 1) ^ -int64_t(v & 1); }

template <class T>
inline T load_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // x86 and ARM Linux are little endian
  return v;
}

uint64_t checksum(const void* data, size_t n);
// Whether a stored checksum matches the computed one. Fuzzing builds accept
// every checksum so that the fuzzer reaches the decoders behind them; no
// other build defines FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION.
inline bool checksum_matches(uint64_t computed, uint64_t stored) {
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  (void)computed, (void)stored;
  return true;
#else
  return computed == stored;
#endif
}
inline uint32_t header_check(const ChunkHeader& h) {
  return uint32_t(checksum(reinterpret_cast<const uint8_t*>(&h) + 8, 44));
}
// Whether a chunk header's sizes and counts are possible (its header_check
// aside): what a reader checks before it trusts them to find the payload.
inline bool chunk_sizes_possible(const ChunkHeader& h) {
  const bool lz4 = h.flags & kChunkLz4, segments = h.flags & kChunkLz4Segments;
  return h.header_size >= sizeof(ChunkHeader) && h.header_size <= 4096 && h.stored_size <= kMaxChunkPayload &&
         h.raw_size <= kMaxChunkPayload && !(lz4 && segments) && (lz4 || segments || h.stored_size == h.raw_size) &&
         (!segments || uint64_t(segment_count(h.event_count)) * kSegmentEntry < h.stored_size) &&
         h.last_ts >= h.first_ts && h.event_count <= h.raw_size;  // an event takes at least a byte
}
// The bytes of a chunk with this header: header, payload, trailer.
inline uint64_t chunk_bytes(const ChunkHeader& h) { return uint64_t(h.header_size) + h.stored_size + kChunkTrailer; }

}  // namespace tinescope::format
