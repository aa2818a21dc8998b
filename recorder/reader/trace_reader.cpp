#include "tinescope/trace_reader.hpp"
#include "tinescope/trace_decode.hpp"

#include <fcntl.h>
#include <lz4.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>

namespace tinescope::trace {

using namespace format;

// ------------------------------------------------------------------ clock

void ClockMap::reset(double ticks_per_ns, uint64_t ref_ticks, uint64_t ref_ns) {
  nominal_ = ticks_per_ns > 0 ? ticks_per_ns : 1.0;
  points_.clear();
  points_.emplace_back(ref_ticks, ref_ns);
}

void ClockMap::add_point(uint64_t ticks, uint64_t ns) {
  if (!points_.empty() && (ticks <= points_.back().first || ns < points_.back().second)) return;
  points_.emplace_back(ticks, ns);
  // The nominal rate becomes the average over everything seen: far more
  // precise than the short measurement at start.
  const auto& [t0, n0] = points_.front();
  if (ns - n0 >= 10'000'000) nominal_ = double(ticks - t0) / double(ns - n0);
}

// Offsets from a calibration point are taken in integers before any double
// (and a nanosecond clock's not scaled at all): a tick count near 2^62 as a
// double is a microsecond off.
int64_t ClockMap::host_ns(uint64_t ticks) const {
  if (points_.empty()) return nominal_ == 1.0 ? int64_t(ticks) : int64_t(double(ticks) / nominal_);
  auto it = std::upper_bound(points_.begin(), points_.end(), ticks,
                             [](uint64_t t, const std::pair<uint64_t, uint64_t>& p) { return t < p.first; });
  if (it != points_.begin() && it != points_.end()) {  // inside a segment: interpolate
    const auto& [t0, n0] = *(it - 1);
    const auto& [t1, n1] = *it;
    return int64_t(n0) + int64_t(double(ticks - t0) * double(n1 - n0) / double(t1 - t0));
  }
  const auto& [t, n] = it == points_.begin() ? points_.front() : points_.back();
  const int64_t d = int64_t(ticks - t);  // (two's complement: ticks before t are negative)
  const int64_t scaled = nominal_ == 1.0 ? d : int64_t(double(d) / nominal_);
  return int64_t(uint64_t(n) + uint64_t(scaled));  // (wraps as the tick counter would, never UB)
}

uint64_t ClockMap::host_ticks(int64_t ns) const {
  auto clamp = [](double t) { return t <= 0 ? uint64_t(0) : uint64_t(t + 0.5); };
  if (points_.empty()) return nominal_ == 1.0 ? uint64_t(std::max<int64_t>(ns, 0)) : clamp(double(ns) * nominal_);
  auto it = std::upper_bound(points_.begin(), points_.end(), ns,
                             [](int64_t n, const std::pair<uint64_t, uint64_t>& p) { return n < int64_t(p.second); });
  if (it != points_.begin() && it != points_.end()) {
    const auto& [t0, n0] = *(it - 1);
    const auto& [t1, n1] = *it;
    if (n1 == n0) return t0;
    return t0 + uint64_t(double(ns - int64_t(n0)) * double(t1 - t0) / double(n1 - n0) + 0.5);
  }
  const auto& [t, n] = it == points_.begin() ? points_.front() : points_.back();
  int64_t d;
  if (__builtin_sub_overflow(ns, int64_t(n), &d)) return ns < 0 ? 0 : UINT64_MAX;
  if (nominal_ != 1.0) {
    const double v = double(d) * nominal_;
    if (!(std::fabs(v) < 9.2e18)) return v < 0 ? 0 : UINT64_MAX;
    d = std::llround(v);
  }
  if (d < 0) return uint64_t(0) - uint64_t(d) > t ? 0 : t - (uint64_t(0) - uint64_t(d));
  return UINT64_MAX - t < uint64_t(d) ? UINT64_MAX : t + uint64_t(d);
}

void ClockMap::align(double offset_ns, double rate) {
  offset_ = offset_ns;
  rate_ = rate > 0 ? rate : 1;
  aligned_ = offset_ != 0 || rate_ != 1;
}

// The host's nanoseconds stay integers until here: an aligned time is a
// double only for the one multiply (2^53 ns is a hundred days: exact enough).
int64_t ClockMap::to_ns(uint64_t ticks) const {
  const int64_t ns = host_ns(ticks);
  if (!aligned_) return ns;
  const double v = offset_ + rate_ * double(ns);
  return std::fabs(v) < 9.2e18 ? std::llround(v) : v < 0 ? INT64_MIN : INT64_MAX;
}

uint64_t ClockMap::to_ticks(int64_t ns) const {
  if (!aligned_) return host_ticks(ns);
  const double v = (double(ns) - offset_) / rate_;
  return host_ticks(std::fabs(v) < 9.2e18 ? std::llround(v) : v < 0 ? INT64_MIN : INT64_MAX);
}

// ----------------------------------------------------------------- chunks

namespace {

// A segmented payload's table (format.hpp), checked before any of it is
// trusted: a count the header implies, ends that rise within the payload.
struct Segments {
  const uint8_t* table = nullptr;
  const uint8_t* blocks = nullptr;
  uint32_t count = 0;
  uint32_t raw_end(uint32_t i) const { return load_le<uint32_t>(table + size_t(i) * kSegmentEntry); }
  uint32_t stored_end(uint32_t i) const { return load_le<uint32_t>(table + size_t(i) * kSegmentEntry + 4); }

  bool read(const ChunkHeader& h, const uint8_t* payload) {
    count = segment_count(h.event_count);
    const size_t table_size = size_t(count) * kSegmentEntry;
    if (count == 0 || table_size >= h.stored_size) return false;
    table = payload, blocks = payload + table_size;
    uint32_t raw = 0, stored = 0;
    for (uint32_t i = 0; i < count; ++i) {
      if (raw_end(i) <= raw || stored_end(i) <= stored) return false;
      raw = raw_end(i), stored = stored_end(i);
    }
    return raw == h.raw_size && stored == h.stored_size - table_size;
  }
  // The segments [*first, *last] that hold raw bytes [from, want): from the
  // one holding `from` on, up to the one where `want` falls (or the last).
  void span(size_t from, size_t want, uint32_t* first, uint32_t* last) const {
    uint32_t i = 0;
    while (i + 1 < count && raw_end(i) <= from) ++i;
    *first = i;
    while (raw_end(i) < want && i + 1 < count) ++i;
    *last = i;
  }
  // Segment i to its place in `out` (the raw payload).
  bool decode(uint32_t i, uint8_t* out) const {
    const uint32_t r0 = i ? raw_end(i - 1) : 0, r1 = raw_end(i);
    const uint32_t s0 = i ? stored_end(i - 1) : 0, s1 = stored_end(i);
    if (s1 - s0 == r1 - r0) {  // stored as is
      std::memcpy(out + r0, blocks + s0, r1 - r0);
      return true;
    }
    return LZ4_decompress_safe(reinterpret_cast<const char*>(blocks + s0), reinterpret_cast<char*>(out + r0),
                               int(s1 - s0), int(r1 - r0)) == int(r1 - r0);
  }
};

}  // namespace

const uint8_t* chunk_payload(const uint8_t* chunk, std::vector<uint8_t>& buf) {
  size_t to = SIZE_MAX;
  return chunk_payload_range(chunk, buf, 0, &to);
}

const uint8_t* chunk_payload_range(const uint8_t* chunk, std::vector<uint8_t>& buf, size_t from, size_t* to) {
  ChunkHeader h;
  std::memcpy(&h, chunk, sizeof h);
  const uint8_t* payload = chunk + h.header_size;
  const size_t want = std::min<size_t>(*to, h.raw_size);
  if (!(h.flags & (kChunkLz4 | kChunkLz4Segments))) {
    *to = h.raw_size;
    return payload;
  }
  if (buf.size() < h.raw_size) buf.resize(h.raw_size);
  if (h.flags & kChunkLz4Segments) {
    Segments s;
    if (!s.read(h, payload)) return nullptr;
    uint32_t first, last;
    s.span(from, want, &first, &last);
    for (uint32_t i = first; i <= last; ++i)
      if (!s.decode(i, buf.data())) return nullptr;
    *to = s.raw_end(last);
    return buf.data();
  }
  // One lz4 block (version 1): from its start, as far as asked.
  const char* src = reinterpret_cast<const char*>(payload);
  char* dst = reinterpret_cast<char*>(buf.data());
  const int got = want < h.raw_size ? LZ4_decompress_safe_partial(src, dst, int(h.stored_size), int(want), int(h.raw_size))
                                    : LZ4_decompress_safe(src, dst, int(h.stored_size), int(h.raw_size));
  if (got != int(want)) return nullptr;
  *to = want;
  return buf.data();
}

size_t chunk_head_bytes(const ChunkHeader& h) {
  return h.header_size + (h.flags & kChunkLz4Segments ? size_t(segment_count(h.event_count)) * kSegmentEntry : 0);
}

bool chunk_range_bytes(const uint8_t* chunk, size_t from, size_t to, size_t* begin, size_t* end) {
  ChunkHeader h;
  std::memcpy(&h, chunk, sizeof h);
  if (!(h.flags & kChunkLz4Segments)) {
    *begin = 0, *end = size_t(chunk_bytes(h));
    return true;
  }
  Segments s;
  if (!s.read(h, chunk + h.header_size)) return false;
  uint32_t first, last;
  s.span(from, std::min<size_t>(to, h.raw_size), &first, &last);
  const size_t blocks = chunk_head_bytes(h);
  *begin = blocks + (first ? s.stored_end(first - 1) : 0), *end = blocks + s.stored_end(last);
  return true;
}

// ---------------------------------------------------------------- catalog

std::string Catalog::process_of(uint32_t feedlet) const {
  auto p = metadata.find("feedlet." + std::to_string(feedlet) + ".process");
  return p != metadata.end() ? p->second : process_name;
}

std::unordered_map<uint32_t, std::string> Catalog::thread_labels() const {
  std::unordered_map<std::string, uint32_t> named;
  for (const auto& [id, f] : feedlets) ++named[f.name];
  std::unordered_map<uint32_t, std::string> out;
  for (const auto& [id, f] : feedlets) {
    const std::string tid = "tid " + std::to_string(f.tid);
    if (f.name.empty()) out[id] = tid;
    else if (named[f.name] == 1) out[id] = f.name;
    else {
      const std::string process = process_of(id);
      out[id] = f.name + " (" + (process.empty() ? "" : process + ", ") + tid + ")";
    }
  }
  return out;
}

void Catalog::apply(const Event& e) {
  if (e.type >= kFirstUserType) return;
  ++version;
  switch (e.type) {
    case kStringDef: {
      uint64_t id = e.u[0];
      if (id == 0 || id > strings.size() + (1u << 20)) return;  // nonsense id: ignore, don't allocate
      if (id >= strings.size()) strings.resize(id + 1, "<unknown name>");
      strings[id] = std::string(e.bytes[1]);
      break;
    }
    case kTypeDef: {
      EventTypeDef def;
      const uint8_t* p = reinterpret_cast<const uint8_t*>(e.bytes[1].data());
      if (decode_schema_entry(p, p + e.bytes[1].size(), def) && def.code == e.u[0] &&
          def.code >= kFirstUserType)
        schema.add(std::move(def));
      break;
    }
    case kCalibration: clock.add_point(e.ts, e.u[0]); break;
    case kFeedletInfo: {
      // The latest names it: the recorder writes one when the feedlet
      // starts (the OS thread's name) and one for each ts_thread_name().
      FeedletInfo& f = feedlets[uint32_t(e.u[0])];
      f.tid = e.u[1];
      f.name = std::string(string(e.u[2]));
      break;
    }
    case kFunctionDef: function_address[uint32_t(e.u[0])] = e.u[1]; break;
    case kFunctionSource: function_source[uint32_t(e.u[0])] = {uint32_t(e.u[1]), uint32_t(e.u[2])}; break;
    case kThreadName: feedlets[e.feedlet].name = std::string(string(e.u[0])); break;
    case kProcessName: process_name = std::string(string(e.u[0])); break;
    case kCpuName: cpu_names[uint32_t(e.u[0])] = std::string(string(e.u[1])); break;
    case kMetadata: metadata[std::string(string(e.u[0]))] = std::string(string(e.u[1])); break;
    default: break;
  }
}

std::string Catalog::channel_name(uint64_t channel) const {
  auto it = metadata.find("channel." + std::to_string(channel));
  return it == metadata.end() ? std::string() : it->second;
}

std::string Catalog::channel_label(uint64_t channel) const {
  const std::string name = channel_name(channel);
  return name.empty() ? std::to_string(channel) : name + " (" + std::to_string(channel) + ")";
}

// ----------------------------------------------------------------- events

bool decode_events(const uint8_t* raw, size_t n, const ChunkHeader& h, const Schema& schema,
                   const std::function<void(const Event&)>& emit, std::string& why, uint64_t& skipped,
                   bool emit_unknown) {
  return decode_each(raw, n, h, schema, emit, why, skipped, emit_unknown);
}

// ----------------------------------------------------------------- parser

Parser::Parser(Visitor& visitor, ReaderOptions options) : v_(visitor), opt_(options) {}

static bool is_marker_prefix(const uint8_t* p, size_t avail) {
  return std::memcmp(p, kChunkBegin, std::min<size_t>(avail, 8)) == 0;
}

Parser::Try Parser::try_chunk(const uint8_t* p, size_t avail, size_t& total, std::string& why) const {
  if (avail < 8) {
    if (is_marker_prefix(p, avail)) return Try::Incomplete;
    why = "bytes that are not a chunk";
    return Try::Invalid;
  }
  if (std::memcmp(p, kChunkBegin, 8) != 0) {
    why = "bytes that are not a chunk";
    return Try::Invalid;
  }
  if (avail < sizeof(ChunkHeader)) return Try::Incomplete;
  ChunkHeader h;
  std::memcpy(&h, p, sizeof h);
  if (!checksum_matches(header_check(h), h.header_check)) {
    why = "damaged chunk header";
    return Try::Invalid;
  }
  if (!chunk_sizes_possible(h)) {
    why = "chunk header with impossible sizes";
    return Try::Invalid;
  }
  total = size_t(chunk_bytes(h));
  if (avail < total) return Try::Incomplete;
  const uint8_t* trailer = p + h.header_size + h.stored_size;
  if (std::memcmp(trailer + 8, kChunkEnd, 8) != 0) {
    why = "chunk without its end marker";
    return Try::Invalid;
  }
  if (!checksum_matches(checksum(p + 8, h.header_size - 8 + h.stored_size), load_le<uint64_t>(trailer))) {
    why = "chunk checksum mismatch";
    return Try::Invalid;
  }
  return Try::Valid;
}

static size_t find_marker(const uint8_t* data, size_t n, size_t from) {
  while (from < n) {
    const void* hit = std::memchr(data + from, kChunkBegin[0], n - from);
    if (!hit) return SIZE_MAX;
    size_t at = size_t(static_cast<const uint8_t*>(hit) - data);
    if (is_marker_prefix(data + at, n - at)) return at;
    from = at + 1;
  }
  return SIZE_MAX;
}

void Parser::damage(uint64_t offset, uint64_t length, std::string reason) {
  if (length == 0) return;
  if (pending_damage_.length && pending_damage_.offset + pending_damage_.length == offset) {
    pending_damage_.length += length;
    return;
  }
  if (pending_damage_.length) v_.on_damage(pending_damage_);
  pending_damage_ = Damage{offset, length, std::move(reason)};
}

bool Parser::parse_header(const uint8_t* data, size_t n, bool eof, size_t& consumed) {
  consumed = 0;
  auto damaged = [&](const std::string& why) {
    // Keep going with this reader's own schema: chunks are self-delimiting.
    header_ = Header{};
    header_.intact = false;
    header_.schema = builtin_schema();
    catalog_.schema = header_.schema;
    catalog_.clock.reset(1.0, 0, 0);
    header_done_ = true;
    pending_reason_ = "file header damaged: " + why;
    v_.on_header(header_);
    return true;
  };
  if (n < kFileHeaderFixed) {
    if (!eof) return false;
    if (n == 0) return damaged("empty");
    return damaged("truncated");
  }
  if (std::memcmp(data, kFileMagic, 8) != 0) return damaged("no tinescope magic at offset 0");
  Header h;
  h.major = load_le<uint16_t>(data + 8);
  h.minor = load_le<uint16_t>(data + 10);
  // A newer major version is refused with a clear error, but only when the
  // header is intact: a flipped version byte (its checksum then fails) is
  // damage like any other, and every chunk after it is still read.
  const bool newer = h.major > kMajorVersion;
  auto refuse_newer = [&] {
    error_ = "trace format version " + std::to_string(h.major) + "." + std::to_string(h.minor) +
             " is newer than this reader (" + std::to_string(kMajorVersion) + "." +
             std::to_string(kMinorVersion) + "); use a newer tinescope";
    return false;
  };
  h.size = load_le<uint32_t>(data + 12);
  if (h.size < kFileHeaderFixed + 8 || h.size > kMaxFileHeader)
    return newer ? refuse_newer() : damaged("impossible header size");
  if (n < h.size) {
    if (!eof) return false;
    return damaged("truncated");
  }
  if (!checksum_matches(checksum(data, h.size - 8), load_le<uint64_t>(data + h.size - 8)))
    return damaged(newer ? "checksum mismatch (and a version " + std::to_string(h.major) + "." +
                               std::to_string(h.minor) + " newer than this reader's)"
                         : std::string("checksum mismatch"));
  if (newer) return refuse_newer();
  const uint8_t* p = data + kFileHeaderFixed;
  const uint8_t* end = data + h.size - 8;
  bool have_schema = false;
  while (end - p >= 6) {
    uint16_t tag = load_le<uint16_t>(p);
    uint32_t len = load_le<uint32_t>(p + 2);
    p += 6;
    if (len > uint64_t(end - p)) return damaged("section runs past the header");
    std::string_view body(reinterpret_cast<const char*>(p), len);
    switch (Section(tag)) {
      case Section::Clock:
        if (len >= sizeof(ClockSection)) std::memcpy(&h.clock, p, sizeof(ClockSection));
        break;
      case Section::Host: h.host = body; break;
      case Section::Process:
        if (len >= 4) {
          h.pid = load_le<uint32_t>(p);
          h.process_name = body.substr(4);
        }
        break;
      case Section::CmdLine:
        for (size_t i = 0; i < body.size();) {
          size_t z = body.find('\0', i);
          if (z == std::string_view::npos) z = body.size();
          h.cmdline.emplace_back(body.substr(i, z - i));
          i = z + 1;
        }
        break;
      case Section::Schema:
        if (!decode_schema(p, len, h.schema)) return damaged("malformed schema");
        have_schema = true;
        break;
      case Section::Recorder: h.recorder = body; break;
      default: break;  // a newer writer's section: skip
    }
    p += len;
  }
  if (!have_schema) return damaged("no schema");
  header_ = std::move(h);
  header_done_ = true;
  catalog_.schema = header_.schema;
  catalog_.process_name = header_.process_name;
  catalog_.clock.reset(header_.clock.ticks_per_ns, header_.clock.ref_ticks, header_.clock.ref_mono_ns);
  consumed = header_.size;
  v_.on_header(header_);
  return true;
}

void Parser::deliver_chunk(const uint8_t* p, uint64_t offset, size_t total) {
  ChunkInfo info;
  info.offset = offset;
  info.size = total;
  std::memcpy(&info.header, p, sizeof(ChunkHeader));
  const ChunkHeader& h = info.header;

  auto it = next_seq_.find(h.feedlet);
  uint64_t expected = it != next_seq_.end() ? it->second : (opt_.sequence_from_zero ? 0 : h.sequence);
  if (h.sequence < expected) {
    damage(offset, total, "chunk repeated or out of order (feedlet " + std::to_string(h.feedlet) + " sequence " +
                              std::to_string(h.sequence) + ")");
    return;
  }
  if (pending_damage_.length) {
    v_.on_damage(pending_damage_);
    pending_damage_ = {};
  }
  if (h.sequence > expected) v_.on_loss(Loss{h.feedlet, expected, h.sequence - expected});
  next_seq_[h.feedlet] = h.sequence + 1;
  ++chunks_;
  v_.on_chunk(info);

  const bool metadata = h.feedlet == kMetadataFeedlet;
  if (!metadata && !opt_.decode_data) return;
  const uint8_t* raw = chunk_payload(p, raw_);
  if (!raw) {
    damage(offset, total, "chunk payload does not decompress");
    return;
  }
  std::string why;
  bool ok = decode_events(raw, h.raw_size, h, catalog_.schema, [&](const Event& e) {
    if (metadata || e.type == kThreadName || e.type == kProcessName || e.type == kCpuName || e.type == kMetadata)
      catalog_.apply(e);
    ++events_;
    v_.on_event(e);
  }, why, skipped_);
  if (!ok) damage(offset, total, "undecodable chunk: " + why);
}

size_t Parser::parse(const uint8_t* data, size_t n, uint64_t base, bool eof) {
  if (!error_.empty()) return n;
  size_t pos = 0;
  if (!header_done_) {
    if (!parse_header(data, n, eof, pos)) return error_.empty() ? 0 : n;
  }
  while (pos < n) {
    size_t total = 0;
    std::string why;
    Try t = try_chunk(data + pos, n - pos, total, why);
    if (t == Try::Valid) {
      deliver_chunk(data + pos, base + pos, total);
      pos += total;
      continue;
    }
    if (t == Try::Incomplete) {
      if (!eof) break;
      why = "truncated chunk (the trace ends inside it)";
    }
    if (!pending_reason_.empty()) why = std::move(pending_reason_), pending_reason_.clear();
    // Damage from pos to the next place where a chunk can start.
    size_t q = pos + 1;
    bool wait = false;
    for (;;) {
      q = find_marker(data, n, q);
      if (q == SIZE_MAX) {
        q = n;
        if (!eof) {  // the last 7 bytes may hold the start of a marker
          q = n >= 7 ? std::max(pos, n - 7) : pos;
          wait = true;
        }
        break;
      }
      size_t t2;
      std::string w2;
      Try next = try_chunk(data + q, n - q, t2, w2);
      if (next == Try::Valid || (next == Try::Incomplete && !eof)) break;
      ++q;
    }
    damage(base + pos, q - pos, why);
    pos = q;
    if (wait) break;
  }
  if (eof && pending_damage_.length) {
    v_.on_damage(pending_damage_);
    pending_damage_ = {};
  }
  return pos;
}

// ------------------------------------------------------------ file, stream

bool read_file(const std::string& path, Visitor& visitor, std::string& error, ReaderOptions options) {
  Parser parser(visitor, options);
  return read_file(path, parser, error);
}

bool read_file(const std::string& path, Parser& parser, std::string& error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = path + ": not a regular file";
    ::close(fd);
    return false;
  }
  if (st.st_size == 0) {
    error = path + ": empty file, not a tinescope trace";
    ::close(fd);
    return false;
  }
  void* map = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    error = path + ": cannot map: " + std::strerror(errno);
    return false;
  }
  madvise(map, size_t(st.st_size), MADV_SEQUENTIAL);
  parser.parse(static_cast<const uint8_t*>(map), size_t(st.st_size), 0, true);
  munmap(map, size_t(st.st_size));
  if (!parser.error().empty()) {
    error = path + ": " + parser.error();
    return false;
  }
  if (!parser.found_trace()) {
    error = path + ": not a tinescope trace (no file header and no intact chunk)";
    return false;
  }
  return true;
}

void StreamReader::feed(const void* data, size_t n) {
  const uint8_t* bytes = static_cast<const uint8_t*>(data);
  buf_.insert(buf_.end(), bytes, bytes + n);
  size_t used = parser_.parse(buf_.data(), buf_.size(), base_, false);
  buf_.erase(buf_.begin(), buf_.begin() + long(used));
  base_ += used;
}

void StreamReader::close() {
  size_t used = parser_.parse(buf_.data(), buf_.size(), base_, true);
  base_ += used;
  buf_.clear();
}

}  // namespace tinescope::trace
