// Perfetto's protobuf traces (.perfetto-trace, .pftrace): a Trace message,
// which is a run of TracePacket fields (number 1), read packet by packet
// from a stream with protowire's reader, in place. Field numbers are
// Perfetto's (import/proto/perfetto_trace.proto); docs/IMPORT.md, "Perfetto",
// gives the mapping.
//
// Packets come per sequence (a writer: a thread of a process, or the
// kernel's data source) in order; sequences interleave in any order. So:
// per sequence its incremental state (interned names, defaults, its own
// clocks), valid from a packet that clears it until packets are lost;
// track events go to their lanes at once (the model sorts each lane);
// flows are paired by id in time order at the end; the kernel's events are
// collected and replayed in time order at the end, since a thread's states
// follow it across CPUs whose bundles interleave.
#include <zlib.h>

#include <algorithm>
#include <cinttypes>
#include <unordered_map>
#include <unordered_set>

#include "import_model.hpp"
#include "tinescope/format.hpp"
#include "tinescope/import/protowire.hpp"
#include "tinescope/import/trace_export.hpp"

namespace tinescope::import {

using namespace format;
using protowire::Field;
using protowire::Reader;

namespace {

// TracePacket's fields.
enum PacketField : uint32_t {
  kFtraceEvents = 1, kProcessTree = 2, kClockSnapshot = 6, kTimestamp = 8, kProcessStats = 9, kSequenceId = 10,
  kTrackEvent = 11, kInternedData = 12, kSequenceFlags = 13, kIncrementalStateCleared = 41, kPreviousPacketDropped = 42,
  kCompressedPackets = 50, kTimestampClockId = 58, kTracePacketDefaults = 59, kTrackDescriptor = 60,
  // Read as the packet's own bookkeeping, never counted as unread.
  kTrustedUid = 3, kSynchronizationMarker = 36, kTrustedPid = 79, kFirstPacketOnSequence = 87,
};
constexpr uint32_t kSeqIncrementalStateCleared = 1, kSeqNeedsIncrementalState = 2;
constexpr uint32_t kBootTime = 6;         // the trace clock unless a snapshot says otherwise
constexpr uint32_t kFirstSequenceClock = 64;  // ids 64..127 are a sequence's own clocks
constexpr uint64_t kDenseCategories = 1024;   // category iids below it: their fields kept once per sequence

// What a packet of a kind it does not read is, for the report.
std::string packet_kind(uint32_t number) {
  switch (number) {
    case 4: return "inode_file_map";
    case 5: return "chrome_events";
    case 7: return "sys_stats";
    case 33: return "trace_config";
    case 34: return "ftrace_stats";
    case 35: return "trace_stats";
    case 37: return "profile_packet";
    case 43: return "process_descriptor (deprecated)";
    case 44: return "thread_descriptor (deprecated)";
    case 45: return "system_info";
    case 66: return "perf_sample";
    case 67: return "cpu_info";
    case 69: return "service_event";
    case 89: return "trace_uuid";
    case 133: return "zstd_compressed_packets";
    default: return "field " + std::to_string(number);
  }
}

// Interned entries of one kind on a sequence: iid -> value. SDKs number
// them 1, 2, 3...: a vector up to kDense, a map past it.
template <class T>
class Interned {
 public:
  const T* find(uint64_t iid) const {
    if (iid < dense_.size()) return has_[iid] ? &dense_[iid] : nullptr;
    if (iid < kDense) return nullptr;
    auto it = far_.find(iid);
    return it == far_.end() ? nullptr : &it->second;
  }
  void set(uint64_t iid, T v) {
    if (iid >= kDense) {
      far_[iid] = std::move(v);
      return;
    }
    if (iid >= dense_.size()) dense_.resize(iid + 1), has_.resize(iid + 1);
    dense_[iid] = std::move(v), has_[iid] = 1;
  }
  void clear() { dense_.clear(), has_.clear(), far_.clear(); }

 private:
  static constexpr uint64_t kDense = 1 << 16;
  std::vector<T> dense_;
  std::vector<uint8_t> has_;
  std::unordered_map<uint64_t, T> far_;
};

struct SequenceClock {  // a sequence's own clock (ids 64..127)
  bool incremental = false;
  uint64_t multiplier = 1, last = 0;
};

struct Sequence {
  bool valid = false;  // its incremental state: set since it was last cleared, nothing lost since
  Interned<uint32_t> names;  // the model's string ids
  Interned<std::string> categories, annotation_names, annotation_strings;
  uint32_t clock = 0;  // the default clock of its packets (0: the trace's)
  bool has_track = false;
  uint64_t track = 0;
  std::vector<uint64_t> extra_counter_tracks, extra_double_counter_tracks;
  std::unordered_map<uint32_t, SequenceClock> clocks;
  std::vector<uint32_t> category_args;  // category iid -> the fields kept of an event with it alone (0: none yet)
  void clear() {
    names.clear(), categories.clear(), annotation_names.clear(), annotation_strings.clear();
    category_args.clear();
    clock = 0, has_track = false, track = 0;
    extra_counter_tracks.clear(), extra_double_counter_tracks.clear();
    clocks.clear();
  }
};

struct Track {
  enum Kind : uint8_t { Unknown, Process, Thread, Counter, Named } kind = Unknown;
  int64_t pid = 0, tid = 0;
  uint64_t parent = 0;
  std::string name;
  uint32_t feedlet = 0;  // index + 1 in the model's lanes, once an event needs it
  uint32_t counter = 0;  // counters: the name of their points
  int64_t multiplier = 1;
  bool incremental = false;
  double value = 0;  // an incremental counter's running value
};

// One of the kernel's events, kept to be replayed in time order.
struct KernelEvent {
  uint64_t ts, seq;
  uint32_t cpu, field;  // its FtraceEvent field (4 sched_switch, ...)
  int64_t a = 0, b = 0, c = 0, d = 0, e = 0;
  uint32_t s1 = 0, s2 = 0;  // texts, in kernel_texts
};

struct PerfettoFlow {
  uint64_t id, ts, seq;
  bool terminating;
  uint32_t feedlet, name;
};

// The file as a run of packets: reads it in blocks and gives each packet
// as a view into the block that holds it whole; or, for a file mapped in
// memory, a view into the file.
class PacketStream {
 public:
  explicit PacketStream(std::streambuf& in) : in_(&in) {
    buf_.resize(kBlock);
    data_ = buf_.data();
  }
  PacketStream(const char* data, size_t size) : data_(data), len_(size), eof_(true) {}
  enum Result { Packet, Other, End, Truncated, Malformed };
  // The next field of the Trace: a packet (field 1), another field (skipped), or why it stops.
  Result next(std::string_view& packet, uint64_t& offset, uint32_t& number) {
    if (ensure(16) == 0) return End;
    offset = consumed_ + uint64_t(at_);
    const uint8_t* start = reinterpret_cast<const uint8_t*>(data_ + at_);
    const uint8_t* p = start;
    const uint8_t* end = reinterpret_cast<const uint8_t*>(data_ + len_);
    uint64_t tag, n = 0;
    if (!protowire::read_varint(p, end, tag)) return p == end ? Truncated : Malformed;
    number = uint32_t(tag >> 3);
    const uint32_t type = tag & 7;
    if (number == 0) return Malformed;
    if (type == protowire::kVarint) {
      if (!protowire::read_varint(p, end, n)) return p == end ? Truncated : Malformed;
      at_ += size_t(p - start);
      return Other;
    }
    if (type == protowire::kFixed64 || type == protowire::kFixed32) {
      n = type == protowire::kFixed64 ? 8 : 4;
    } else if (type == protowire::kBytes) {
      if (!protowire::read_varint(p, end, n)) return p == end ? Truncated : Malformed;
    } else {
      return Malformed;
    }
    if (n > kLargestPacket) return Malformed;
    const size_t head = size_t(p - start);
    if (ensure(head + size_t(n)) < head + n) return Truncated;
    packet = std::string_view(data_ + at_ + head, size_t(n));
    at_ += head + size_t(n);
    return type == protowire::kBytes && number == 1 ? Packet : Other;
  }
  static constexpr uint64_t kLargestPacket = uint64_t(256) << 20;  // Perfetto's are below 1 MB (a compressed one 512 KB)

 private:
  static constexpr size_t kBlock = size_t(4) << 20;
  std::streambuf* in_ = nullptr;
  std::vector<char> buf_;
  const char* data_;  // buf_'s, or the mapped file's
  size_t at_ = 0, len_ = 0;
  uint64_t consumed_ = 0;  // bytes of the file before buf_[0]
  bool eof_ = false;
  // Bytes from at_ in the buffer: `need` or more, or all the file has left.
  size_t ensure(size_t need) {
    if (len_ - at_ >= need || eof_) return len_ - at_;
    std::memmove(buf_.data(), buf_.data() + at_, len_ - at_);
    consumed_ += at_, len_ -= at_, at_ = 0;
    if (buf_.size() < need) buf_.resize(need), data_ = buf_.data();
    while (len_ < buf_.size() && !eof_) {
      const std::streamsize got = in_->sgetn(buf_.data() + len_, std::streamsize(buf_.size() - len_));
      if (got <= 0) eof_ = true;
      else len_ += size_t(got);
    }
    return len_ - at_;
  }
};

class PerfettoReader {
 public:
  PerfettoReader(ImportModel& m, const std::string& name) : m_(m), file_(name), ftrace_(m) {}

  bool read(PacketStream& s, std::string& error) {
    std::string_view packet;
    uint64_t offset = 0;
    uint32_t number = 0;
    for (;;) {
      const auto r = s.next(packet, offset, number);
      if (r == PacketStream::End) break;
      if (r == PacketStream::Other) {
        ++m_.r.unsupported["perfetto: a Trace field other than packets (field " + std::to_string(number) + ")"];
        continue;
      }
      if (r != PacketStream::Packet) {
        const std::string why = r == PacketStream::Truncated ? "the file ends inside the packet that starts there"
                                                             : "not a protobuf field (or a packet over 256 MB)";
        if (packets_ == 0) {
          error = file_ + ": not a Perfetto trace: at byte " + std::to_string(offset) + ", " + why;
          return false;
        }
        m_.r.warning = file_ + ": stopped at byte " + std::to_string(offset) + ": " + why + "; the " +
                       std::to_string(packets_) + " packets before it are kept";
        break;
      }
      ++packets_;
      this->packet(packet, offset, 0);
    }
    finish();
    if (m_.r.events_read == 0 && packets_ == 0) {
      error = file_ + ": an empty Perfetto trace (no packets)";
      return false;
    }
    return true;
  }

 private:
  ImportModel& m_;
  std::string file_;
  FtraceReader ftrace_;
  uint64_t packets_ = 0;
  uint32_t trace_clock_ = kBootTime;
  std::unordered_map<uint32_t, Sequence> sequences_;
  uint32_t last_seq_id_ = UINT32_MAX;
  Sequence* last_seq_ = nullptr;
  std::unordered_map<uint64_t, Track> tracks_;
  std::map<std::pair<int64_t, std::string>, uint32_t> named_lanes_;  // (pid, name) -> tracks so named
  // Clock snapshots: per clock (a sequence's own: its id | sequence << 32),
  // its readings and the trace clock's at the same moments, in its order.
  std::unordered_map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> snapshots_;
  BulkArray<PerfettoFlow> flows_;
  BulkArray<KernelEvent> kernel_;
  std::vector<std::string> kernel_texts_{""};
  std::unordered_map<std::string, uint32_t> kernel_text_ids_;
  std::unordered_map<int64_t, std::string> comm_;  // tid -> its name, from the kernel's events and process trees
  RawEvent args_;                                   // an event's arguments, as the model keeps them
  uint64_t lost_kernel_events_ = 0;

  void malformed(uint64_t offset, const std::string& what) {
    ++m_.r.malformed_events;
    if (m_.r.malformed.size() < 10)
      m_.r.malformed.push_back(file_ + ": packet at byte " + std::to_string(offset) + ": " + what);
  }
  void unread(const std::string& what) { ++m_.r.unsupported["perfetto: " + what]; }

  Sequence& sequence(uint32_t id) {
    if (id != last_seq_id_) last_seq_ = &sequences_[id], last_seq_id_ = id;
    return *last_seq_;
  }

  void packet(std::string_view bytes, uint64_t offset, int depth) {
    Reader r(bytes);
    Field f;
    uint64_t ts = 0;
    bool has_ts = false, cleared = false, has_clock = false;
    uint32_t clock = 0, seq_id = 0, flags = 0, dropped = 0, data = 0;
    std::string_view payload, interned, defaults;
    while (r.next(f)) {
      switch (f.number) {
        case kTimestamp: ts = f.value, has_ts = true; break;
        case kTimestampClockId: clock = uint32_t(f.value), has_clock = true; break;
        case kSequenceId: seq_id = uint32_t(f.value); break;
        case kSequenceFlags: flags = uint32_t(f.value); break;
        case kIncrementalStateCleared: cleared = f.value != 0; break;
        case kPreviousPacketDropped: dropped = uint32_t(f.value); break;
        case kInternedData: interned = f.bytes; break;
        case kTracePacketDefaults: defaults = f.bytes; break;
        case kTrustedUid:
        case kTrustedPid:
        case kSynchronizationMarker:
        case kFirstPacketOnSequence: break;
        default:
          if (data) unread("a packet with two kinds of data (the first read)");
          else data = f.number, payload = f.bytes;
      }
    }
    if (r.malformed()) return malformed(offset, "malformed (" + std::to_string(r.left()) + " bytes unread)");
    if (data == kCompressedPackets) return compressed(payload, offset, depth);
    Sequence& s = sequence(seq_id);
    if (dropped) {
      s.valid = false;
      ++m_.r.unsupported["perfetto: packets lost before one of a sequence (previous_packet_dropped)"];
    }
    if (cleared || (flags & kSeqIncrementalStateCleared)) s.clear(), s.valid = true;
    if ((flags & kSeqNeedsIncrementalState) && !s.valid) {
      unread("packets skipped: their sequence's incremental state was not valid (never cleared, or lost)");
      return;
    }
    if (!interned.empty()) intern(s, interned, offset);
    if (!defaults.empty()) packet_defaults(s, defaults, offset);
    // Its time on the trace clock (ticks: ns).
    uint64_t t = 0;
    const bool timed = has_ts && to_trace_clock(s, seq_id, has_clock ? clock : s.clock, ts, t);
    switch (data) {
      case 0: return;  // a packet of state alone (interned data, defaults)
      case kTrackEvent:
        if (!timed) return untimed(has_ts, "track events");
        return track_event(s, payload, t, offset);
      case kTrackDescriptor: return track_descriptor(payload, offset);
      case kClockSnapshot: return clock_snapshot(seq_id, payload, offset);
      case kFtraceEvents: return ftrace_bundle(payload, offset);
      case kProcessTree: return process_tree(payload, offset);
      case kProcessStats:
        if (!timed) return untimed(has_ts, "process stats");
        return process_stats(payload, t, offset);
      default: unread(packet_kind(data) + " packets");
    }
  }

  void untimed(bool has_ts, const char* what) {
    unread(std::string(what) + (has_ts ? " on a clock no snapshot relates to the trace clock" : " without a timestamp"));
  }

  void compressed(std::string_view bytes, uint64_t offset, int depth) {
    if (depth > 0) return malformed(offset, "compressed packets inside compressed packets");
    std::string out;
    z_stream z{};
    if (inflateInit2(&z, 15 + 32) != Z_OK) return malformed(offset, "zlib could not start");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    z.avail_in = uInt(bytes.size());
    int rc = Z_OK;
    while (rc == Z_OK) {
      const size_t at = out.size();
      out.resize(at + std::max<size_t>(bytes.size() * 4, 1 << 16));
      z.next_out = reinterpret_cast<Bytef*>(out.data() + at);
      z.avail_out = uInt(out.size() - at);
      rc = inflate(&z, Z_NO_FLUSH);
      out.resize(out.size() - z.avail_out);
      if (out.size() > PacketStream::kLargestPacket) rc = Z_MEM_ERROR;
    }
    inflateEnd(&z);
    if (rc != Z_STREAM_END) return malformed(offset, "compressed packets that do not inflate (zlib error " + std::to_string(rc) + ")");
    Reader r(out);
    Field f;
    while (r.next(f)) {
      if (f.number == 1 && f.type == protowire::kBytes) ++packets_, packet(f.bytes, offset, depth + 1);
      else unread("compressed packets holding a field other than packets");
    }
    if (r.malformed()) malformed(offset, "compressed packets whose inflated bytes end malformed");
  }

  void intern(Sequence& s, std::string_view bytes, uint64_t offset) {
    Reader r(bytes);
    Field f;
    while (r.next(f)) {
      if (f.type != protowire::kBytes) continue;
      uint64_t iid = 0;
      std::string_view text;
      Reader e(f.bytes);
      Field g;
      while (e.next(g))
        if (g.number == 1) iid = g.value;
        else if (g.number == 2 && g.type == protowire::kBytes) text = g.bytes;
      switch (f.number) {
        case 1: s.categories.set(iid, std::string(text)); break;
        case 2: s.names.set(iid, m_.intern(std::string(text))); break;
        case 3: s.annotation_names.set(iid, std::string(text)); break;
        case 29: s.annotation_strings.set(iid, std::string(text)); break;
        default: unread("interned data of field " + std::to_string(f.number));
      }
    }
    if (r.malformed()) malformed(offset, "malformed interned data");
  }

  void packet_defaults(Sequence& s, std::string_view bytes, uint64_t offset) {
    Reader r(bytes);
    Field f;
    while (r.next(f)) {
      if (f.number == 58) s.clock = uint32_t(f.value);
      if (f.number != 11 || f.type != protowire::kBytes) continue;
      Reader d(f.bytes);
      Field g;
      while (d.next(g)) {
        if (g.number == 11) s.has_track = true, s.track = g.value;
        if (g.number == 31) protowire::each_number(g, [&](uint64_t v) { s.extra_counter_tracks.push_back(v); });
        if (g.number == 45) protowire::each_number(g, [&](uint64_t v) { s.extra_double_counter_tracks.push_back(v); });
      }
    }
    if (r.malformed()) malformed(offset, "malformed trace packet defaults");
  }

  // Clocks -----------------------------------------------------------------

  static uint64_t clock_key(uint32_t clock, uint32_t seq_id) {
    return clock >= kFirstSequenceClock && clock < 128 ? uint64_t(seq_id) << 32 | clock : clock;
  }

  void clock_snapshot(uint32_t seq_id, std::string_view bytes, uint64_t offset) {
    struct Reading {
      uint32_t clock;
      uint64_t ns;
    };
    std::vector<Reading> readings;
    Reader r(bytes);
    Field f;
    while (r.next(f)) {
      if (f.number == 2) trace_clock_ = uint32_t(f.value);
      if (f.number != 1 || f.type != protowire::kBytes) continue;
      uint32_t clock = 0;
      uint64_t value = 0, multiplier = 1;
      bool incremental = false;
      Reader c(f.bytes);
      Field g;
      while (c.next(g)) {
        if (g.number == 1) clock = uint32_t(g.value);
        if (g.number == 2) value = g.value;
        if (g.number == 3) incremental = g.value != 0;
        if (g.number == 4 && g.value) multiplier = g.value;
      }
      if (clock >= kFirstSequenceClock && clock < 128) {
        SequenceClock& sc = sequence(seq_id).clocks[clock];
        sc.incremental = incremental, sc.multiplier = multiplier, sc.last = value;
      }
      readings.push_back({clock, value * multiplier});
    }
    if (r.malformed()) return malformed(offset, "malformed clock snapshot");
    const Reading* trace = nullptr;
    for (const Reading& x : readings)
      if (x.clock == trace_clock_) trace = &x;
    if (!trace) return unread("clock snapshots without the trace clock");
    for (const Reading& x : readings) {
      auto& v = snapshots_[clock_key(x.clock, seq_id)];
      v.emplace_back(x.ns, trace->ns);
      if (v.size() > 1 && v[v.size() - 2].first > x.ns) std::sort(v.begin(), v.end());
    }
  }

  // A time of `clock` (0: the trace's) on the trace clock: the reading of
  // the latest snapshot at or before it (the first one, before them all).
  bool to_trace_clock(Sequence& s, uint32_t seq_id, uint32_t clock, uint64_t ts, uint64_t& out) {
    if (clock >= kFirstSequenceClock && clock < 128) {
      auto c = s.clocks.find(clock);
      if (c == s.clocks.end()) return false;
      ts = c->second.incremental ? (c->second.last += ts) : ts;
      ts *= c->second.multiplier;
    }
    if (clock == 0 || clock == trace_clock_) {
      out = ts;
    } else {
      auto it = snapshots_.find(clock_key(clock, seq_id));
      if (it == snapshots_.end()) return false;
      const auto& v = it->second;
      auto at = std::upper_bound(v.begin(), v.end(), std::make_pair(ts, UINT64_MAX));
      if (at != v.begin()) --at;
      const int64_t t = int64_t(at->second) + (int64_t(ts) - int64_t(at->first));
      if (t < 0) return false;
      out = uint64_t(t);
    }
    return out < (uint64_t(1) << 62);
  }

  // Tracks -----------------------------------------------------------------

  void track_descriptor(std::string_view bytes, uint64_t offset) {
    uint64_t uuid = 0;
    Track t;
    std::string process_name, thread_name, unit;
    Reader r(bytes);
    Field f;
    while (r.next(f)) {
      switch (f.number) {
        case 1: uuid = f.value; break;
        case 2: t.name = std::string(f.bytes); break;
        case 5: t.parent = f.value; break;
        case 3: {  // process
          t.kind = Track::Process;
          Reader p(f.bytes);
          Field g;
          while (p.next(g)) {
            if (g.number == 1) t.pid = int32_t(g.value);
            if (g.number == 6) process_name = std::string(g.bytes);
            if (g.number == 2 && process_name.empty()) process_name = std::string(g.bytes);  // cmdline
          }
          break;
        }
        case 4: {  // thread
          t.kind = Track::Thread;
          Reader p(f.bytes);
          Field g;
          while (p.next(g)) {
            if (g.number == 1) t.pid = int32_t(g.value);
            if (g.number == 2) t.tid = int32_t(g.value);
            if (g.number == 5) thread_name = std::string(g.bytes);
          }
          break;
        }
        case 8: {  // counter
          t.kind = Track::Counter;
          Reader p(f.bytes);
          Field g;
          while (p.next(g)) {
            if (g.number == 3) unit = g.value == 1 ? "ns" : g.value == 3 ? "bytes" : "";
            if (g.number == 4 && g.value) t.multiplier = int64_t(g.value);
            if (g.number == 5) t.incremental = g.value != 0;
            if (g.number == 6) unit = std::string(g.bytes);
          }
          break;
        }
        default: break;
      }
    }
    if (r.malformed()) return malformed(offset, "malformed track descriptor");
    if (t.kind == Track::Counter && !unit.empty()) t.name += " (" + unit + ")";
    if (t.kind == Track::Unknown) t.kind = Track::Named;
    if (t.kind == Track::Process && !process_name.empty()) m_.process_names[t.pid] = process_name;
    if (t.kind == Track::Thread && !thread_name.empty()) t.name = thread_name;
    // Described again (each time a sequence's state is cleared): a lane
    // already made keeps its place; a thread's new name names it.
    auto it = tracks_.find(uuid);
    if (it == tracks_.end()) {
      tracks_.emplace(uuid, std::move(t));
    } else if (!it->second.feedlet) {
      it->second = std::move(t);
    } else if (t.kind == Track::Thread && !t.name.empty()) {
      m_.feedlets[it->second.feedlet - 1].name = t.name;
    }
  }

  // The pid of the process a track belongs to (0: none, the trace's own).
  int64_t process_of(const Track& t, int hops = 0) {
    if (t.kind == Track::Process || t.kind == Track::Thread) return t.pid;
    auto it = tracks_.find(t.parent);
    if (t.parent == 0 || it == tracks_.end() || hops > 8) return 0;
    return process_of(it->second, hops + 1);
  }

  // The lane of a track's slices and instants.
  Feedlet& lane(uint64_t uuid) {
    if (uuid == last_lane_uuid_ && last_lane_) return m_.feedlets[last_lane_ - 1];
    Feedlet& f = find_lane(uuid);
    last_lane_uuid_ = uuid, last_lane_ = f.id;
    return f;
  }
  uint64_t last_lane_uuid_ = 0;
  uint32_t last_lane_ = 0;
  Feedlet& find_lane(uint64_t uuid) {
    auto it = tracks_.find(uuid);
    if (it == tracks_.end()) {
      if (uuid != 0) unread("events on tracks no descriptor names (each a lane \"track UUID\")");
      it = tracks_.emplace(uuid, Track{}).first;
      it->second.name = uuid == 0 ? "global" : "track " + std::to_string(uuid);
    }
    Track& t = it->second;
    if (!t.feedlet) {
      Feedlet* f;
      if (t.kind == Track::Thread) {
        f = &m_.feedlet(t.pid, t.tid, "");
        if (f->name.empty()) f->name = t.name;
      } else if (t.kind == Track::Process) {
        f = &m_.feedlet(t.pid, 0, "process");
      } else {
        // A named track (async slices, custom tracks): a lane of its process
        // by its name, "NAME #2" for a second track so named there.
        const int64_t pid = process_of(t);
        std::string name = t.name.empty() ? "track " + std::to_string(uuid) : t.name;
        const uint32_t n = ++named_lanes_[{pid, name}];
        if (n > 1) name += " #" + std::to_string(n);
        f = &m_.feedlet(pid, 0, name);
      }
      t.feedlet = f->id;
    }
    return m_.feedlets[t.feedlet - 1];
  }

  // A counter track's value at ts, on its process's "counters" lane.
  void counter(uint64_t uuid, uint64_t ts, double v) {
    auto it = tracks_.find(uuid);
    if (it == tracks_.end() || it->second.kind != Track::Counter) {
      unread("counter values on tracks no counter descriptor names");
      return;
    }
    Track& t = it->second;
    if (!t.feedlet) {
      t.feedlet = m_.feedlet(process_of(t), 0, "counters").id;
      t.counter = m_.intern(t.name.empty() ? "counter " + std::to_string(uuid) : t.name);
    }
    v *= double(t.multiplier);
    if (t.incremental) v = t.value += v;
    m_.feedlets[t.feedlet - 1].points.push_back(Point{ts, m_.next_seq(), kCounterFloat, t.counter, 0, bits_of(v)});
    ++m_.r.events_read;
  }

  // Track events -----------------------------------------------------------

  void annotation(Sequence& s, std::string_view bytes, const std::string& prefix, int depth) {
    if (depth > 8) return;
    Reader r(bytes);
    Field f;
    std::string key = prefix;
    Arg value;
    bool has_value = false;
    std::vector<std::string_view> entries, items;
    while (r.next(f)) {
      switch (f.number) {
        case 1: {
          const std::string* n = s.annotation_names.find(f.value);
          if (!n) unread("debug annotation names never interned");
          key += n ? *n : "iid " + std::to_string(f.value);
          break;
        }
        case 10: key += f.bytes; break;
        case 2: value.type = 'b', value.text = f.value ? "true" : "false", has_value = true; break;
        case 3:
          if (f.value <= uint64_t(INT64_MAX)) value.type = 'i', value.i = int64_t(f.value);
          else value.type = 'b', value.text = std::to_string(f.value);
          has_value = true;
          break;
        case 4: value.type = 'i', value.i = f.as_int(), has_value = true; break;
        case 5: value.type = 'f', value.f = f.as_double(), has_value = true; break;
        case 6:
        case 9: value.type = 'b', value.text = f.bytes, has_value = true; break;
        case 7: {
          char hex[24];
          std::snprintf(hex, sizeof hex, "0x%" PRIx64, f.value);
          value.type = 'b', value.text = hex, has_value = true;
          break;
        }
        case 17: {
          const std::string* v = s.annotation_strings.find(f.value);
          if (!v) unread("debug annotation strings never interned");
          value.type = 'b', value.text = v ? *v : "(string iid " + std::to_string(f.value) + ")", has_value = true;
          break;
        }
        case 11: entries.push_back(f.bytes); break;
        case 12: items.push_back(f.bytes); break;
        default: unread("debug annotation values of field " + std::to_string(f.number));
      }
    }
    if (has_value) {
      if (args_.arg_count == args_.args.size()) args_.args.emplace_back();
      Arg& a = args_.args[args_.arg_count++];
      a.key = key, a.type = value.type, a.i = value.i, a.f = value.f, a.text = std::move(value.text);
    }
    for (std::string_view e : entries) annotation(s, e, key + ".", depth + 1);
    for (size_t i = 0; i < items.size(); ++i) annotation(s, items[i], key + "[" + std::to_string(i) + "]", depth + 1);
  }

  void track_event(Sequence& s, std::string_view bytes, uint64_t ts, uint64_t offset) {
    uint32_t type = 0, name = 0;
    uint64_t track = s.track;
    bool has_counter = false;
    double value = 0;
    uint32_t categories = 0;
    uint64_t one_category = 0;
    args_.cat.clear(), args_.arg_count = 0;  // (all keep_args reads of it that this reader sets)
    std::string& cat = args_.cat;
    std::vector<uint64_t>* extra_tracks = nullptr;
    std::vector<uint64_t>* extra_double_tracks = nullptr;
    std::vector<uint64_t> own_tracks, own_double_tracks;
    flow_ids_.clear(), terminating_.clear(), extra_values_.clear(), extra_double_values_.clear();
    Reader r(bytes);
    Field f;
    while (r.next(f)) {
      switch (f.number) {
        case 9: type = uint32_t(f.value); break;
        case 10: {
          const uint32_t* n = s.names.find(f.value);
          if (!n) unread("event names never interned (named \"(name iid N)\")");
          name = n ? *n : m_.intern("(name iid " + std::to_string(f.value) + ")");
          break;
        }
        case 23: name = m_.intern(std::string(f.bytes)); break;
        case 3:
          protowire::each_number(f, [&](uint64_t iid) {
            if (!s.categories.find(iid)) unread("event categories never interned");
            if (categories == 1) add_category(s, cat, one_category);  // (the first waits: see below)
            if (categories++ == 0) one_category = iid;
            else add_category(s, cat, iid);
          });
          break;
        case 22:
          if (categories == 1) add_category(s, cat, one_category);
          if (!cat.empty()) cat += ',';
          cat += f.bytes;
          categories += 2;  // (not one interned)
          break;
        case 11: track = f.value; break;
        case 30: value = double(f.as_int()), has_counter = true; break;
        case 44: value = f.as_double(), has_counter = true; break;
        case 31: protowire::each_number(f, [&](uint64_t v) { own_tracks.push_back(v); }), extra_tracks = &own_tracks; break;
        case 12: protowire::each_number(f, [&](uint64_t v) { extra_values_.push_back(double(int64_t(v))); }); break;
        case 45:
          protowire::each_number(f, [&](uint64_t v) { own_double_tracks.push_back(v); });
          extra_double_tracks = &own_double_tracks;
          break;
        case 46:
          protowire::each_fixed64(f, [&](uint64_t v) {
            double d;
            std::memcpy(&d, &v, 8);
            extra_double_values_.push_back(d);
          });
          break;
        case 36:
        case 47: protowire::each_fixed64(f, [&](uint64_t id) { flow_ids_.push_back(id); }); break;
        case 42:
        case 48: protowire::each_fixed64(f, [&](uint64_t id) { terminating_.push_back(id); }); break;
        case 4: annotation(s, f.bytes, "", 0); break;
        case 1:
        case 16: break;  // legacy microsecond times: the packet's timestamp is read instead
        default: break;  // typed arguments of Chrome's and Android's own (task_execution, log_message, ...)
      }
    }
    if (r.malformed()) return malformed(offset, "malformed track event");
    // An interned category alone (most events) is written out only where
    // its text is read: not where this sequence kept its fields already.
    const bool category_alone = categories == 1 && args_.arg_count == 0 && one_category < kDenseCategories;
    if (categories == 1 &&
        (type == 3 || !category_alone || one_category >= s.category_args.size() || !s.category_args[one_category]))
      add_category(s, cat, one_category);
    if (type != 4) ++m_.r.events_read;  // (a counter's value counts where it is taken)
    if (type == 3 && cat == kMessageCategory && (!flow_ids_.empty() || !terminating_.empty())) {
      flows(lane(track), ts, name);  // a tinescope export's message: the message alone
      return;
    }
    uint32_t args = 0;
    if (type == 1 || type == 2 || type == 3) {
      // An interned category alone (most events): its fields were kept once on this sequence.
      if (category_alone) {
        if (one_category >= s.category_args.size()) s.category_args.resize(one_category + 1);
        uint32_t& kept = s.category_args[one_category];
        if (kept) args = kept, ++m_.r.events_with_args;
        else args = kept = m_.keep_args(args_);
      } else {
        args = m_.keep_args(args_);
      }
    }
    switch (type) {
      case 1:
      case 2: {
        Feedlet& l = lane(track);
        l.be.push_back(BeginEnd{ts, m_.next_seq(), type == 1, type == 1 ? name : 0, args});
        flows(l, ts, name);
        break;
      }
      case 3: {
        Feedlet& l = lane(track);
        l.points.push_back(Point{ts, m_.next_seq(), kInstant, name, args, 0});
        flows(l, ts, name);
        break;
      }
      case 4:
        if (has_counter) counter(track, ts, value);
        else unread("counter events without a value");
        break;
      default: unread("track events of type " + std::to_string(type) + " (legacy events)"); return;
    }
    // Values of other counters taken at the same time.
    if (!extra_tracks) extra_tracks = &s.extra_counter_tracks;
    if (!extra_double_tracks) extra_double_tracks = &s.extra_double_counter_tracks;
    for (size_t i = 0; i < extra_values_.size() && i < extra_tracks->size(); ++i)
      counter((*extra_tracks)[i], ts, extra_values_[i]);
    for (size_t i = 0; i < extra_double_values_.size() && i < extra_double_tracks->size(); ++i)
      counter((*extra_double_tracks)[i], ts, extra_double_values_[i]);
  }
  void add_category(Sequence& s, std::string& cat, uint64_t iid) {
    const std::string* c = s.categories.find(iid);
    if (!cat.empty()) cat += ',';
    cat += c ? *c : "(category iid " + std::to_string(iid) + ")";
  }
  std::vector<uint64_t> flow_ids_, terminating_;  // of the event being read (their memory kept)
  std::vector<double> extra_values_, extra_double_values_;

  void flows(const Feedlet& l, uint64_t ts, uint32_t name) {
    for (uint64_t id : flow_ids_) flows_.push_back(PerfettoFlow{id, ts, m_.next_seq(), false, l.id, name});
    for (uint64_t id : terminating_) flows_.push_back(PerfettoFlow{id, ts, m_.next_seq(), true, l.id, name});
  }

  // The kernel ---------------------------------------------------------------

  uint32_t kernel_text(std::string_view s) {
    auto [it, fresh] = kernel_text_ids_.try_emplace(std::string(s), uint32_t(kernel_texts_.size()));
    if (fresh) kernel_texts_.push_back(it->first);
    return it->second;
  }

  void ftrace_bundle(std::string_view bytes, uint64_t offset) {
    uint32_t cpu = 0;
    std::vector<std::string_view> events;
    Reader r(bytes);
    Field f;
    while (r.next(f)) {
      if (f.number == 1) cpu = uint32_t(f.value);
      else if (f.number == 2 && f.type == protowire::kBytes) events.push_back(f.bytes);
      else if (f.number == 3) lost_kernel_events_ += f.value;
      else if (f.number == 4) unread("compact_sched bundles (sched events in columns)");
    }
    if (r.malformed()) return malformed(offset, "malformed ftrace bundle");
    for (std::string_view e : events) ftrace_event(cpu, e, offset);
  }

  void ftrace_event(uint32_t cpu, std::string_view bytes, uint64_t offset) {
    KernelEvent k{};
    k.cpu = cpu;
    std::string_view body;
    bool timed = false;
    Reader r(bytes);
    Field f;
    while (r.next(f)) {
      if (f.number == 1) k.ts = f.value, timed = true;
      else if (f.number == 2) k.a = int64_t(f.value);  // the task that wrote it
      else if (f.number != 5 && f.type == protowire::kBytes) k.field = f.number, body = f.bytes;
    }
    if (r.malformed()) return malformed(offset, "malformed ftrace event");
    if (!timed) return unread("ftrace events without a timestamp");
    const uint32_t field = k.field;
    auto fields = [&](auto&& take) {
      Reader b(body);
      Field g;
      while (b.next(g)) take(g);
      if (b.malformed()) malformed(offset, "malformed ftrace event body");
    };
    switch (field) {
      case 4:  // sched_switch: a prev pid, b prev prio, c prev state, d next pid, e next prio; s1, s2 comms
        fields([&](const Field& g) {
          switch (g.number) {
            case 1: k.s1 = kernel_text(g.bytes); break;
            case 2: k.a = int32_t(g.value); break;
            case 3: k.b = int32_t(g.value); break;
            case 4: k.c = g.as_int(); break;
            case 5: k.s2 = kernel_text(g.bytes); break;
            case 6: k.d = int32_t(g.value); break;
            case 7: k.e = int32_t(g.value); break;
          }
        });
        break;
      case 17:
      case 20:
      case 114:  // wakeups: a pid, s1 comm
      case 238:  // sched_process_exit: a pid
        fields([&](const Field& g) {
          if (g.number == 1) k.s1 = kernel_text(g.bytes);
          if (g.number == 2) k.a = int32_t(g.value);
        });
        break;
      case 491:  // sched_migrate_task: a pid, b orig_cpu, c dest_cpu
        fields([&](const Field& g) {
          if (g.number == 2) k.a = int32_t(g.value);
          if (g.number == 4) k.b = int32_t(g.value);
          if (g.number == 5) k.c = int32_t(g.value);
        });
        break;
      case 11:
      case 13:  // cpu_frequency, cpu_idle: b state, c cpu
        fields([&](const Field& g) {
          if (g.number == 1) k.b = int64_t(g.value);
          if (g.number == 2) k.c = int64_t(g.value);
        });
        break;
      case 3:  // print: s1 its text
        fields([&](const Field& g) {
          if (g.number == 2) k.s1 = kernel_text(g.bytes);
        });
        break;
      case 235:  // task_newtask: b pid, s1 comm
      case 236:  // task_rename: b pid, s1 newcomm
        fields([&](const Field& g) {
          if (g.number == 1) k.b = int32_t(g.value);
          if ((field == 235 && g.number == 2) || (field == 236 && g.number == 3)) k.s1 = kernel_text(g.bytes);
        });
        break;
      default:
        ++m_.r.events_read;
        return unread("ftrace events of field " + std::to_string(field));
    }
    k.seq = kernel_.size();
    kernel_.push_back(k);
  }

  // ftrace text's letters for a switch's prev_state (the kernel's report bits).
  static std::string_view state_letters(int64_t s) {
    if (s == 0) return "R";
    if (s >= 256) return "R+";
    static const char* const kLetters[] = {"S", "D", "T", "t", "X", "Z", "P", "I"};
    for (int bit = 0; bit < 8; ++bit)
      if (s & (int64_t(1) << bit)) return kLetters[bit];
    return "R";
  }

  void replay_kernel() {
    std::sort(kernel_.begin(), kernel_.end(),
              [](const KernelEvent& x, const KernelEvent& y) { return x.ts != y.ts ? x.ts < y.ts : x.seq < y.seq; });
    for (const KernelEvent& k : kernel_) {
      if (k.field != 3) ++m_.r.events_read;  // (atrace counts the markers it takes)
      const std::string& s1 = kernel_texts_[k.s1];
      switch (k.field) {
        case 4: {
          FtraceReader::Switch sw;
          sw.prev_pid = k.a, sw.prev_prio = k.b, sw.has_prev_prio = true, sw.prev_state = state_letters(k.c);
          sw.next_pid = k.d, sw.next_prio = k.e, sw.has_next_prio = true;
          sw.prev_comm = s1, sw.next_comm = kernel_texts_[k.s2];
          if (k.a > 0 && !s1.empty()) comm_[k.a] = s1;
          if (k.d > 0 && !sw.next_comm.empty()) comm_[k.d] = sw.next_comm;
          ftrace_.sched_switch(k.cpu, k.ts, sw);
          break;
        }
        case 17:
        case 20:
        case 114: ftrace_.sched_wakeup(k.cpu, k.ts, k.a, s1); break;
        case 238:
          if (k.a > 0) ftrace_.exited(k.a, k.ts);
          break;
        case 491:
          if (!ftrace_.migrate(k.ts, k.b, k.c)) unread("sched_migrate_task of CPUs out of range");
          break;
        case 11:
        case 13:
          if (!ftrace_.cpu_counter(k.ts, k.c, k.field == 13, k.b)) unread("cpu counters of CPUs out of range");
          break;
        case 3: {
          auto c = comm_.find(k.a);
          std::string_view text = s1;
          while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.remove_suffix(1);
          if (!ftrace_.atrace(k.a, c == comm_.end() ? std::string_view() : std::string_view(c->second), double(k.ts) / 1000.0,
                              text)) {
            ++m_.r.events_read;
            unread("ftrace print events that are no atrace marker");
          }
          break;
        }
        case 235:
        case 236:
          if (k.b > 0) comm_[k.b] = s1;
          break;
      }
    }
    ftrace_.finish();
    kernel_.release();
  }

  // Processes ----------------------------------------------------------------

  void process_tree(std::string_view bytes, uint64_t offset) {
    Reader r(bytes);
    Field f;
    while (r.next(f)) {
      if (f.type != protowire::kBytes) continue;
      Reader p(f.bytes);
      Field g;
      int64_t id = 0;
      std::string name;
      while (p.next(g)) {
        if (g.number == 1) id = int32_t(g.value);
        if (f.number == 1 && g.number == 3 && name.empty()) name = std::string(g.bytes);  // cmdline[0]
        if (f.number == 2 && g.number == 2) name = std::string(g.bytes);
      }
      if (name.empty()) continue;
      if (f.number == 1) {
        if (size_t slash = name.rfind('/'); slash != std::string::npos && slash + 1 < name.size()) name = name.substr(slash + 1);
        if (!m_.process_names.count(id)) m_.process_names[id] = name;
      } else if (f.number == 2) {
        comm_[id] = name;
        if (!m_.tid_names.count(id)) m_.tid_names[id] = name;
      }
    }
    if (r.malformed()) malformed(offset, "malformed process tree");
  }

  void process_stats(std::string_view bytes, uint64_t ts, uint64_t offset) {
    static const char* const kNames[] = {nullptr,         nullptr,         "mem.virt_kb",   "mem.rss_kb",
                                         "mem.rss.anon_kb", "mem.rss.file_kb", "mem.rss.shmem_kb", "mem.swap_kb",
                                         "mem.locked_kb", "mem.rss.watermark_kb", "oom_score_adj"};
    Reader r(bytes);
    Field f;
    while (r.next(f)) {
      if (f.number != 1 || f.type != protowire::kBytes) continue;
      Reader p(f.bytes);
      Field g;
      int64_t pid = 0;
      std::vector<std::pair<uint32_t, double>> values;
      while (p.next(g)) {
        if (g.number == 1) pid = int32_t(g.value);
        else if (g.number >= 2 && g.number <= 10) values.emplace_back(g.number, g.number == 10 ? double(g.as_int()) : double(g.value));
      }
      if (values.empty()) continue;
      Feedlet& l = m_.feedlet(pid, 0, "counters");
      for (auto [k, v] : values) {
        l.points.push_back(Point{ts, m_.next_seq(), kCounterFloat, m_.intern(kNames[k]), 0, bits_of(v)});
        ++m_.r.events_read;
      }
    }
    if (r.malformed()) malformed(offset, "malformed process stats");
  }

  // The end ------------------------------------------------------------------

  // Flows by id in time order: the earliest event of an id starts the flow,
  // each later one steps it on, the last (or one that terminates it) ends
  // it, as Perfetto's importer reads flow_ids.
  void pair_flows() {
    std::sort(flows_.begin(), flows_.end(), [](const PerfettoFlow& a, const PerfettoFlow& b) {
      return a.id != b.id ? a.id < b.id : a.ts != b.ts ? a.ts < b.ts : a.seq < b.seq;
    });
    for (size_t i = 0; i < flows_.size();) {
      size_t j = i + 1;  // [i, j): one flow, up to the event that terminates it or the id's last
      while (j < flows_.size() && flows_[j].id == flows_[i].id && !flows_[j - 1].terminating) ++j;
      // A flow of one event is a message never received (sent, no other
      // end) or, terminating, one received but never sent (an unmatched end).
      const uint64_t key = flows_[i].id * 0x9e3779b97f4a7c15ull ^ (uint64_t(0x70) << 56);  // apart from the kernel's
      for (size_t k = i; k < j; ++k) {
        const PerfettoFlow& x = flows_[k];
        const char ph = j - i == 1 ? (x.terminating ? 'f' : 's') : k == i ? 's' : k + 1 == j ? 'f' : 't';
        m_.flows.push_back(Flow{key, x.ts, x.seq, ph, false, x.feedlet, x.name});
      }
      i = j;
    }
    flows_.release();
  }

  void finish() {
    replay_kernel();
    pair_flows();
    if (lost_kernel_events_)
      m_.r.notes.push_back(std::to_string(lost_kernel_events_) +
                           " kernel events were lost by ftrace's buffers (the bundles' lost_events)");
  }
};

}  // namespace

bool looks_like_perfetto(std::string_view head) {
  // A Trace starts with a packet: field 1, length-delimited (0x0a), whose
  // bytes are a well-formed message; then another packet or the end.
  if (head.size() < 2 || uint8_t(head[0]) != 0x0a) return false;
  const uint8_t* p = reinterpret_cast<const uint8_t*>(head.data()) + 1;
  const uint8_t* end = reinterpret_cast<const uint8_t*>(head.data()) + head.size();
  uint64_t n;
  if (!protowire::read_varint(p, end, n) || n == 0 || n > PacketStream::kLargestPacket) return false;
  const size_t at = size_t(p - reinterpret_cast<const uint8_t*>(head.data()));
  const std::string_view packet = head.substr(at, size_t(std::min<uint64_t>(n, head.size() - at)));
  Reader r(packet);
  Field f;
  size_t fields = 0;
  while (r.next(f)) ++fields;
  if (packet.size() < n) return fields > 0;  // (a packet longer than the head: its start parsed)
  return !r.malformed() && fields > 0 && (at + n == head.size() || uint8_t(head[at + n]) == 0x0a);
}

bool read_perfetto(std::istream& in, const std::string& name, ImportModel& m, std::string& error) {
  PerfettoReader reader(m, name);
  PacketStream packets(*in.rdbuf());
  return reader.read(packets, error);
}

bool read_perfetto(const char* data, size_t size, const std::string& name, ImportModel& m, std::string& error) {
  PerfettoReader reader(m, name);
  PacketStream packets(data, size);
  return reader.read(packets, error);
}

}  // namespace tinescope::import
