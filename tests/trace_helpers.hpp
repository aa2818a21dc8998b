// Reading a whole trace into memory, for tests.
#pragma once

#include <gtest/gtest.h>
#include <lz4.h>
#include <lz4hc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "tinescope/trace_reader.hpp"
#include "tinescope/trace_writer.hpp"
#include "scratch_dir.hpp"

namespace tinescope::test {

// Whether TINESCOPE_TEST_SEED is set: a soak (scripts/soak.sh) runs the
// tests under its seeds, not their fixed ones.
inline bool soaking() {
  const char* soak = std::getenv("TINESCOPE_TEST_SEED");
  return soak != nullptr && *soak != 0;
}

// A randomized test's seed: `fixed`, or, in a soak, one drawn from both. A
// failure under a soak is repeated by running the test with the same
// variable.
inline uint64_t test_seed(uint64_t fixed) {
  if (!soaking()) return fixed;
  const char* soak = std::getenv("TINESCOPE_TEST_SEED");
  auto mix = [](uint64_t x) {  // one step of splitmix64
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  return mix(fixed ^ mix(std::strtoull(soak, nullptr, 10)));
}

// A trace built in memory event by event, for tests: a file header with a
// nanosecond clock, then chunks appended as they are flushed.
struct TraceBytes {
  std::string out;
  explicit TraceBytes(const char* process) {
    format::HeaderInfo info;
    info.clock.source = uint8_t(format::ClockSource::Monotonic);
    info.clock.ticks_per_ns = 1.0;
    info.process_name = process;
    out = format::build_file_header(info);
  }
  // Appends the chunk under construction (if it holds anything) and empties it.
  void flush(format::ChunkBuilder& cb) {
    if (cb.empty()) return;
    cb.finish(0, frame_);
    out.append(frame_.begin(), frame_.end());
  }

 private:
  std::vector<uint8_t> frame_;
};

// A trace (1 tick = 1 ns) whose string ids 1, 2, ... name `names`, in a
// metadata chunk, and whose feedlets 1, 2, ... are the threads named by
// string ids threads[0], threads[1], ...; its events follow in the chunks a
// test flushes.
inline TraceBytes named_trace(const std::vector<std::string>& names, const std::vector<uint64_t>& threads = {}) {
  TraceBytes trace("test");
  format::ChunkBuilder meta;
  for (uint64_t id = 1; id <= names.size(); ++id) {
    uint8_t* p = meta.begin(format::kStringDef, 0, 64);
    p = format::ChunkBuilder::put_u64(p, id);
    p = format::ChunkBuilder::put_bytes(p, names[id - 1].data(), names[id - 1].size());
    meta.end(p);
  }
  for (uint64_t f = 1; f <= threads.size(); ++f) {
    uint8_t* p = meta.begin(format::kFeedletInfo, 0);
    p = format::ChunkBuilder::put_u64(p, f);  // feedlet
    p = format::ChunkBuilder::put_u64(p, f);  // tid
    p = format::ChunkBuilder::put_u64(p, threads[f - 1]);
    meta.end(p);
  }
  trace.flush(meta);
  return trace;
}

// Appends an event whose one field is a name (a string id): a begin, an
// end, an instant.
inline void put_named(format::ChunkBuilder& cb, uint16_t type, uint64_t ts, uint64_t name) {
  uint8_t* p = cb.begin(type, ts);
  p = format::ChunkBuilder::put_u64(p, name);
  cb.end(p);
}

// A scheduling event (ts_sched's: kJobStart ... kJobComplete) of `task` (a string id) on `cpu`.
inline void put_job(format::ChunkBuilder& cb, uint16_t type, uint64_t ts, uint64_t task, uint64_t job, uint64_t cpu) {
  uint8_t* p = cb.begin(type, ts);
  p = format::ChunkBuilder::put_u64(p, task);
  p = format::ChunkBuilder::put_u64(p, job);
  p = format::ChunkBuilder::put_u64(p, cpu);
  cb.end(p);
}

struct OwnedEvent {
  trace::Event e;
  std::vector<std::string> bytes;  // copies of the Bytes fields
  uint32_t chunk = 0;     // in Collected::chunks
  uint32_t in_chunk = 0;  // the event's place in its chunk
};

struct Collected : trace::Visitor {
  trace::Header header;
  std::vector<trace::ChunkInfo> chunks;
  std::vector<OwnedEvent> events;  // every event, metadata included
  std::vector<trace::Damage> damage;
  std::vector<trace::Loss> losses;
  trace::Catalog catalog;  // copied at the end
  uint64_t dropped = 0;
  uint32_t in_chunk = 0;  // events of the last chunk so far

  void on_header(const trace::Header& h) override { header = h; }
  void on_chunk(const trace::ChunkInfo& c) override {
    chunks.push_back(c);
    dropped += c.header.dropped_before;
    in_chunk = 0;
  }
  void on_event(const trace::Event& e) override {
    OwnedEvent o{e, {}, uint32_t(chunks.size() - 1), in_chunk++};
    for (size_t k = 0; k < e.field_count; ++k) o.bytes.emplace_back(e.bytes[k]);
    for (size_t k = 0; k < e.field_count; ++k) o.e.bytes[k] = {};
    events.push_back(std::move(o));
  }
  void on_damage(const trace::Damage& d) override { damage.push_back(d); }
  void on_loss(const trace::Loss& l) override { losses.push_back(l); }

  // Data events (not the metadata feedlet) of one type.
  std::vector<const OwnedEvent*> of_type(uint16_t type) const {
    std::vector<const OwnedEvent*> out;
    for (const OwnedEvent& o : events)
      if (o.e.type == type && o.e.feedlet != format::kMetadataFeedlet) out.push_back(&o);
    return out;
  }
  std::string name(uint64_t id) const { return std::string(catalog.string(id)); }
  // The feedlet whose OS thread id is `tid`.
  uint32_t feedlet_of_tid(uint64_t tid) const {
    for (auto& [f, info] : catalog.feedlets)
      if (info.tid == tid) return f;
    return UINT32_MAX;
  }
};

inline Collected read_trace(const std::string& path, bool expect_ok = true) {
  Collected c;
  trace::Parser parser(c);
  std::string error;
  bool ok = trace::read_file(path, parser, error);
  if (expect_ok) {
    EXPECT_TRUE(ok) << error;
  }
  c.catalog = parser.catalog();
  return c;
}

inline Collected read_bytes(const std::string& bytes, trace::ReaderOptions opt = {}) {
  Collected c;
  trace::Parser parser(c, opt);
  parser.parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, true);
  c.catalog = parser.catalog();
  return c;
}

// Makes a file header's version and checksum what a test wants of them.
inline void set_header_version(std::string& header, uint16_t major, uint16_t minor) {
  uint32_t size;
  std::memcpy(&size, header.data() + 12, 4);
  std::memcpy(header.data() + 8, &major, 2);
  std::memcpy(header.data() + 10, &minor, 2);
  const uint64_t sum = format::checksum(header.data(), size - 8);
  std::memcpy(header.data() + size - 8, &sum, 8);
}

// Makes a chunk's header check and checksum good for its bytes as they are
// (after a test changed them, so that a reader gets past the checks to what
// was changed).
inline void seal_chunk(std::string& c) {
  format::ChunkHeader h;
  std::memcpy(&h, c.data(), sizeof h);
  h.header_check = format::header_check(h);
  std::memcpy(c.data(), &h, sizeof h);
  const uint64_t sum = format::checksum(c.data() + 8, sizeof h - 8 + h.stored_size);
  std::memcpy(c.data() + sizeof h + h.stored_size, &sum, 8);
}

// Calls fn(chunk, its header, its offset) for each chunk of an intact trace
// file's bytes, in order, until fn returns false; the offset where the walk
// ended (the size, where it reached the end).
template <class Fn>
size_t each_chunk(const std::string& trace, Fn&& fn) {
  uint32_t at;
  std::memcpy(&at, trace.data() + 12, 4);  // the header's size
  while (at + sizeof(format::ChunkHeader) <= trace.size()) {
    const auto* chunk = reinterpret_cast<const uint8_t*>(trace.data() + at);
    format::ChunkHeader h;
    std::memcpy(&h, chunk, sizeof h);
    if (!fn(chunk, h, size_t(at))) break;
    at += uint32_t(format::chunk_bytes(h));
  }
  return at;
}

// The same trace as version 1 wrote it: every chunk's payload one lz4 block
// (kChunkLz4), not segments, and major version 1 in the file header. For the
// tests that old traces still read and index as before. (Header and chunks
// must be intact.)
inline std::string as_version_one(const std::string& trace) {
  using namespace format;
  uint32_t header_size;
  std::memcpy(&header_size, trace.data() + 12, 4);
  std::string v1 = trace.substr(0, header_size);
  set_header_version(v1, 1, 0);
  std::vector<uint8_t> raw_buf;
  each_chunk(trace, [&](const uint8_t* chunk, ChunkHeader h, size_t at) {
    const uint8_t* raw = trace::chunk_payload(chunk, raw_buf);
    EXPECT_NE(raw, nullptr) << "chunk at " << at;
    if (!raw) return false;
    std::vector<char> block(size_t(LZ4_compressBound(int(h.raw_size))));
    int stored = h.raw_size ? LZ4_compress_default(reinterpret_cast<const char*>(raw), block.data(), int(h.raw_size),
                                                  int(block.size()))
                            : 0;
    h.flags = uint16_t(h.flags & ~kChunkLz4Segments);
    if (stored > 0) {
      h.flags |= kChunkLz4;
    } else {
      stored = int(h.raw_size);
      std::memcpy(block.data(), raw, h.raw_size);
    }
    h.stored_size = uint32_t(stored);
    std::string c(reinterpret_cast<const char*>(&h), sizeof h);
    c.append(block.data(), size_t(stored));
    c.append(8, '\0');  // the checksum, below
    c.append(reinterpret_cast<const char*>(kChunkEnd), 8);
    seal_chunk(c);
    v1 += c;
    return true;
  });
  return v1;
}

// How a chunk's segments were compressed: each stored block against what
// lz4's fast mode and dense mode (HC at kDenseLevel) make of its raw bytes.
// Either: both make those bytes (a small segment often gives both the same).
struct Packing {
  int fast = 0, dense = 0, either = 0, as_is = 0, neither = 0;
};
inline Packing packing_of(const uint8_t* chunk) {
  using namespace format;
  Packing out;
  ChunkHeader h;
  std::memcpy(&h, chunk, sizeof h);
  if (!(h.flags & kChunkLz4Segments)) return out.as_is += h.event_count > 0, out;
  std::vector<uint8_t> buf;
  const uint8_t* raw = trace::chunk_payload(chunk, buf);
  EXPECT_NE(raw, nullptr);
  if (!raw) return out;
  const uint8_t* table = chunk + h.header_size;
  const uint32_t segments = segment_count(h.event_count);
  const uint8_t* blocks = table + segments * kSegmentEntry;
  std::vector<char> fast, dense;
  std::vector<uint64_t> state((size_t(LZ4_sizeofStateHC()) + 7) / 8);  // (8-byte aligned, as lz4 asks)
  uint32_t raw_from = 0, stored_from = 0;
  for (uint32_t i = 0; i < segments; ++i) {
    uint32_t raw_to, stored_to;
    std::memcpy(&raw_to, table + i * kSegmentEntry, 4);
    std::memcpy(&stored_to, table + i * kSegmentEntry + 4, 4);
    const int n = int(raw_to - raw_from);
    const std::string stored(reinterpret_cast<const char*>(blocks + stored_from), stored_to - stored_from);
    if (stored.size() == size_t(n)) {
      ++out.as_is;
    } else {
      fast.resize(size_t(LZ4_compressBound(n)));
      dense.resize(fast.size());
      const char* src = reinterpret_cast<const char*>(raw + raw_from);
      fast.resize(size_t(LZ4_compress_default(src, fast.data(), n, int(fast.size()))));
      dense.resize(size_t(LZ4_compress_HC_extStateHC(state.data(), src, dense.data(), n, int(dense.size()), kDenseLevel)));
      const bool is_fast = stored == std::string(fast.begin(), fast.end());
      const bool is_dense = stored == std::string(dense.begin(), dense.end());
      (is_fast && is_dense ? out.either : is_fast ? out.fast : is_dense ? out.dense : out.neither)++;
    }
    raw_from = raw_to, stored_from = stored_to;
  }
  return out;
}

// A program of this build (TINESCOPE_BIN, set by ctest): bin("app/tinescope").
inline std::string bin(const std::string& rel) {
  const char* b = std::getenv("TINESCOPE_BIN");
#ifdef TINESCOPE_BINARY_DIR
  if (!b) b = TINESCOPE_BINARY_DIR;  // (the build these tests belong to)
#endif
  return std::string(b ? b : ".") + "/" + rel;
}

// Runs a shell command; its exit status (-1 if it did not exit), its
// standard output into *out if given.
inline int run(const std::string& cmd, std::string* out = nullptr) {
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return -1;
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) s.append(buf, n);
  const int status = ::pclose(p);
  if (out) *out = s;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A file in this process's scratch directory (removed when it ends).
inline std::string temp_path(const std::string& name) { return scratch_dir() + "/" + name + ".tine"; }

// The queue workload (recorder/demo/queues_workload.cpp) recorded with
// `args` into temp_path(name): its path, or "" if it failed.
inline std::string record_queues(const std::string& name, const std::string& args) {
  const std::string path = temp_path(name);
  ::unlink(path.c_str()), ::unlink((path + ".idx").c_str());
  return run(bin("recorder/tinescope-queues") + " -o " + path + " " + args + " > /dev/null") == 0 ? path : "";
}

inline std::string slurp(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  std::string s;
  if (!f) return s;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

inline void write_file(const std::string& path, const std::string& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

// `bytes` as a new file renamed over `path`, as tinescope replaces an index:
// an index still open keeps reading the file it mapped, where writing over
// it in place cuts that file short under the mapping (SIGBUS).
inline void replace_file(const std::string& path, const std::string& bytes) {
  const std::string fresh = path + ".new";
  write_file(fresh, bytes);
  ASSERT_EQ(std::rename(fresh.c_str(), path.c_str()), 0) << path;
}

}  // namespace tinescope::test
