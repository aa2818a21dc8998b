// The format's edges: varints, schema, versions, loss and drop reporting.
#include <random>

#include "tinescope/trace_writer.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

using namespace format;

std::string header_with_version(uint16_t major, uint16_t minor) {
  HeaderInfo info;
  info.clock.source = uint8_t(ClockSource::Monotonic);
  info.clock.ticks_per_ns = 1.0;
  std::string h = build_file_header(info);
  set_header_version(h, major, minor);
  return h;
}

std::string chunk(ChunkBuilder& b, uint16_t flags = 0) {
  std::vector<uint8_t> frame;
  b.finish(flags, frame);
  return std::string(frame.begin(), frame.end());
}

std::string instants(ChunkBuilder& b, uint64_t t0, int n) {
  for (int i = 0; i < n; ++i) {
    uint8_t* p = b.begin(kInstant, t0 + uint64_t(i) * 10);
    p = ChunkBuilder::put_u64(p, 0);
    b.end(p);
  }
  return chunk(b);
}

TEST(TraceFormat, VarintsRoundTrip) {
  std::mt19937_64 rng(test_seed(1));
  for (int i = 0; i < 100000; ++i) {
    uint64_t v = rng() >> (rng() % 64);
    uint8_t buf[kMaxVarint];
    uint8_t* end = put_varint(buf, v);
    const uint8_t* p = buf;
    uint64_t got;
    ASSERT_TRUE(get_varint(p, end, got));
    EXPECT_EQ(got, v);
    EXPECT_EQ(p, end);
    const uint8_t* q = buf;
    if (end - buf > 1) {
      EXPECT_FALSE(get_varint(q, end - 1, got)) << "a cut varint is an error";
    }
    int64_t s = int64_t(v);
    EXPECT_EQ(unzigzag(zigzag(s)), s);
  }
}

TEST(TraceFormat, SchemaRoundTrips) {
  std::string bytes;
  encode_schema(builtin_schema(), bytes);
  Schema s;
  ASSERT_TRUE(decode_schema(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), s));
  for (size_t code = 0; code <= kMaxEventType; ++code) {
    ASSERT_EQ(s.known[code], builtin_schema().known[code]);
    if (!s.known[code]) continue;
    EXPECT_EQ(s.types[code].name, builtin_schema().types[code].name);
    ASSERT_EQ(s.types[code].fields.size(), builtin_schema().types[code].fields.size());
  }
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    Schema t;
    EXPECT_FALSE(decode_schema(reinterpret_cast<const uint8_t*>(bytes.data()), cut, t)) << cut;
  }
}

TEST(TraceFormat, NewerMajorVersionIsRejectedWithAClearMessage) {
  const std::string path = temp_path("v2");
  std::string bytes = header_with_version(kMajorVersion + 1, 0);
  ChunkBuilder b;
  b.feedlet = 1;
  bytes += instants(b, 100, 3);
  write_file(path, bytes);
  Collected c;
  std::string error;
  EXPECT_FALSE(trace::read_file(path, c, error));
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("newer than this reader"), std::string::npos) << error;
  EXPECT_TRUE(c.events.empty());
  unlink(path.c_str());
}

TEST(TraceFormat, OlderMinorVersionsAreAccepted) {
  // A 1.0 trace read by any 1.x reader; and a header that claims a newer
  // minor (with sections this reader does not know) is read too.
  for (uint16_t minor : {uint16_t(0), uint16_t(kMinorVersion + 3)}) {
    std::string bytes = header_with_version(kMajorVersion, minor);
    ChunkBuilder b;
    b.feedlet = 1;
    bytes += instants(b, 100, 5);
    Collected c = read_bytes(bytes);
    EXPECT_TRUE(c.header.intact);
    EXPECT_EQ(c.header.minor, minor);
    EXPECT_EQ(c.of_type(kInstant).size(), 5u);
  }
}

TEST(TraceFormat, SequenceGapsAreLossesAndDropCountsAreReported) {
  std::string bytes = header_with_version(kMajorVersion, kMinorVersion);
  ChunkBuilder b;
  b.feedlet = 3;
  bytes += instants(b, 100, 2);  // seq 0
  instants(b, 200, 2);           // seq 1: never written
  instants(b, 300, 2);           // seq 2: never written
  b.pending_drops = 17;
  bytes += instants(b, 400, 2);  // seq 3, after 17 dropped events
  Collected c = read_bytes(bytes);
  ASSERT_EQ(c.losses.size(), 1u);
  EXPECT_EQ(c.losses[0].feedlet, 3u);
  EXPECT_EQ(c.losses[0].first_sequence, 1u);
  EXPECT_EQ(c.losses[0].count, 2u);
  EXPECT_EQ(c.dropped, 17u);
  EXPECT_TRUE(c.damage.empty());
  // A live viewer that joins late starts at whatever sequence it sees first.
  std::string late = header_with_version(kMajorVersion, kMinorVersion);
  late += bytes.substr(bytes.find(reinterpret_cast<const char*>(kChunkBegin), 0, 8));
  Collected joined = read_bytes(late.substr(0, late.size()), {.sequence_from_zero = false});
  EXPECT_EQ(joined.losses.size(), 1u);
}

TEST(TraceFormat, UnknownUserTypesAreSkippedNotFatal) {
  std::string bytes = header_with_version(kMajorVersion, kMinorVersion);
  ChunkBuilder b;
  b.feedlet = 1;
  uint8_t* p = b.begin(kInstant, 10);
  p = ChunkBuilder::put_u64(p, 0);
  b.end(p);
  p = b.begin(200, 20);  // a user type nobody defined
  p = ChunkBuilder::put_bytes(p, "\x01\x02\x03", 3);
  b.end(p);
  p = b.begin(kInstant, 30);
  p = ChunkBuilder::put_u64(p, 0);
  b.end(p);
  bytes += chunk(b);
  Collected c;
  trace::Parser parser(c);
  parser.parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, true);
  EXPECT_EQ(c.of_type(kInstant).size(), 2u);
  EXPECT_EQ(parser.skipped_events(), 1u);
  EXPECT_TRUE(c.damage.empty());
}

// A chunk of `n` events, instants and intervals in turn, with deltas of 1 to
// 3 varint bytes, as the recorder's collector would write them.
uint64_t mixed_delta(int k) { return k % 5 == 0 ? 20000 : k % 2 ? 300 : 5; }  // 1, 2 and 3 varint bytes
uint64_t mixed_ts(int i) {
  uint64_t ts = 1000;
  for (int k = 1; k <= i; ++k) ts += mixed_delta(k);
  return ts;
}
std::string mixed_chunk(ChunkBuilder& b, int n) {
  uint64_t ts = 1000;
  for (int i = 0; i < n; ++i) {
    if (i > 0) ts += mixed_delta(i);
    const uint16_t type = i % 3 == 0 ? kInstant : i % 3 == 1 ? kIntervalBegin : kIntervalEnd;
    put_named(b, type, ts, uint64_t(i % 7 + 1));
  }
  return chunk(b);
}

uint32_t table_entry(const std::string& chunk_bytes, uint32_t i, int half) {
  return load_le<uint32_t>(reinterpret_cast<const uint8_t*>(chunk_bytes.data()) + sizeof(ChunkHeader) +
                           i * kSegmentEntry + 4 * half);
}

// Each segment of kSegmentEvents events is its own lz4 block: the whole
// payload decodes, and so does any segment alone, leaving the rest as it was.
TEST(TraceFormat, ChunkPayloadsAreSegmentsThatDecodeOnTheirOwn) {
  ChunkBuilder b;
  b.feedlet = 1;
  const std::string c = mixed_chunk(b, 5000);
  ChunkHeader h;
  std::memcpy(&h, c.data(), sizeof h);
  ASSERT_TRUE(h.flags & kChunkLz4Segments);
  EXPECT_FALSE(h.flags & kChunkLz4);
  ASSERT_EQ(segment_count(h.event_count), 3u);  // 2048, 2048 and 904 events
  EXPECT_LT(h.stored_size, h.raw_size);
  EXPECT_EQ(table_entry(c, 2, 0), h.raw_size);
  EXPECT_EQ(table_entry(c, 2, 1) + 3 * kSegmentEntry, h.stored_size);

  const auto* bytes = reinterpret_cast<const uint8_t*>(c.data());
  std::vector<uint8_t> whole_buf;
  const uint8_t* whole = trace::chunk_payload(bytes, whole_buf);
  ASSERT_NE(whole, nullptr);
  const std::vector<uint8_t> raw(whole, whole + h.raw_size);

  // Segment 1 alone: bytes of segments 0 and 2 are left untouched.
  const uint32_t end0 = table_entry(c, 0, 0), end1 = table_entry(c, 1, 0);
  std::vector<uint8_t> buf(h.raw_size, 0xAA);
  size_t to = end0 + 1;
  const uint8_t* got = trace::chunk_payload_range(bytes, buf, end0, &to);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(to, end1);
  EXPECT_TRUE(std::equal(got + end0, got + end1, raw.begin() + end0));
  EXPECT_TRUE(std::all_of(buf.begin(), buf.begin() + end0, [](uint8_t x) { return x == 0xAA; }));
  EXPECT_TRUE(std::all_of(buf.begin() + end1, buf.end(), [](uint8_t x) { return x == 0xAA; }));
  // From segment 1 to the end.
  to = SIZE_MAX;
  got = trace::chunk_payload_range(bytes, buf, end1 - 1, &to);
  EXPECT_EQ(to, h.raw_size);
  EXPECT_TRUE(std::equal(got + end0, got + h.raw_size, raw.begin() + end0));

  // The events read back in order, across the segments' edges.
  std::string trace = header_with_version(kMajorVersion, kMinorVersion) + c;
  Collected read = read_bytes(trace);
  EXPECT_TRUE(read.damage.empty());
  ASSERT_EQ(read.of_type(kInstant).size() + read.of_type(kIntervalBegin).size() + read.of_type(kIntervalEnd).size(),
            5000u);
  EXPECT_EQ(read.of_type(kInstant).back()->e.ts, mixed_ts(4998));
  EXPECT_EQ(read.of_type(kIntervalEnd).back()->e.ts, mixed_ts(4997));

  // A chunk of exactly two segments' events has two segments, not a third
  // empty one.
  const std::string two = mixed_chunk(b, 2 * int(kSegmentEvents));
  EXPECT_EQ(table_entry(two, 1, 0), load_le<uint32_t>(reinterpret_cast<const uint8_t*>(two.data()) + 44));
  EXPECT_TRUE(read_bytes(header_with_version(kMajorVersion, kMinorVersion) + two).damage.empty());
}

// Dense chunks are lz4 blocks as fast ones are: a reader tells them apart
// by nothing but their size. (Scheduling events as the jobs figure's trace
// holds them: the kind of trace that comes slowly enough to be written dense.)
TEST(TraceFormat, DenseChunksReadBackAsFastOnes) {
  std::string chunks[2];
  for (int dense = 0; dense < 2; ++dense) {
    ChunkBuilder b;
    b.feedlet = 1;
    b.dense = dense;
    for (uint64_t i = 0; i < 9000; ++i)
      put_job(b, uint16_t(kJobArrive + i % 6), 1000 + i * 17, 1 + i % 16, i / 6, i % 8);
    chunks[dense] = chunk(b);
    const Packing p = packing_of(reinterpret_cast<const uint8_t*>(chunks[dense].data()));
    EXPECT_EQ(p.neither + p.as_is, 0) << dense;
    EXPECT_EQ(dense ? p.fast : p.dense, 0) << "every segment as the builder was told";
    EXPECT_GE(dense ? p.dense : p.fast, 1) << "(the two modes give different blocks for these events)";
  }
  ChunkHeader fast, dense;
  std::memcpy(&fast, chunks[0].data(), sizeof fast);
  std::memcpy(&dense, chunks[1].data(), sizeof dense);
  EXPECT_EQ(fast.raw_size, dense.raw_size);
  EXPECT_LT(dense.stored_size, fast.stored_size);
  const Collected a = read_bytes(header_with_version(kMajorVersion, kMinorVersion) + chunks[0]);
  const Collected b = read_bytes(header_with_version(kMajorVersion, kMinorVersion) + chunks[1]);
  EXPECT_TRUE(a.damage.empty() && b.damage.empty());
  ASSERT_EQ(a.events.size(), 9000u);
  ASSERT_EQ(b.events.size(), a.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    const trace::Event &x = a.events[i].e, &y = b.events[i].e;
    ASSERT_TRUE(x.type == y.type && x.ts == y.ts && x.field_count == 3 && y.field_count == 3) << i;
    ASSERT_TRUE(x.u[0] == y.u[0] && x.u[1] == y.u[1] && x.u[2] == y.u[2]) << i;
    ASSERT_EQ(x.u[1], i / 6) << i;
  }
}

// The collector's choice: fast until a whole window came slowly, dense then,
// fast again from the chunk that takes a window past its share, and for the
// window after such a burst.
TEST(TraceFormat, DensePaceIsFastUntilAWindowWasSlowAndAtABurst) {
  const uint64_t ms = 1'000'000;
  DensePace pace;
  for (uint64_t t = 0; t < 100 * ms; t += 10 * ms) EXPECT_FALSE(pace.dense(t, 1000)) << t;  // nothing known yet
  EXPECT_TRUE(pace.dense(100 * ms, 1000));  // 10 KB came in those 100 ms
  // A burst in this window: 1000 + 24 chunks of 64 KiB stay within 1.6 MB, a 25th does not.
  for (int k = 1; k <= 24; ++k) EXPECT_TRUE(pace.dense(110 * ms, 65536)) << k;
  EXPECT_FALSE(pace.dense(110 * ms, 65536));
  EXPECT_FALSE(pace.dense(150 * ms, 10));  // the rest of the window
  for (uint64_t t = 200 * ms; t < 300 * ms; t += 10 * ms) EXPECT_FALSE(pace.dense(t, 1000)) << t;  // after it
  EXPECT_TRUE(pace.dense(300 * ms, 1000));
  // Idle for a minute, then a chunk: the idle time was slow too.
  EXPECT_TRUE(pace.dense(60'300 * ms, 65536));
  // Behind: fast at once, for the rest of the window and the next, however slow.
  EXPECT_TRUE(pace.dense(60'310 * ms, 10));
  pace.behind();
  EXPECT_FALSE(pace.dense(60'320 * ms, 10));
  EXPECT_FALSE(pace.dense(60'410 * ms, 10));  // the next window
  EXPECT_FALSE(pace.dense(60'500 * ms, 10));
  EXPECT_TRUE(pace.dense(60'510 * ms, 10));   // a whole window slow and not behind
  // A window just over 16 MB/s: the next is fast; one just under: the next is dense.
  DensePace edge;
  EXPECT_FALSE(edge.dense(0, 0));
  EXPECT_FALSE(edge.dense(50 * ms, 1'600'001));
  EXPECT_FALSE(edge.dense(100 * ms, 0));
  EXPECT_FALSE(edge.dense(150 * ms, 1'599'999));
  EXPECT_TRUE(edge.dense(200 * ms, 0));
}

// A reader that reads a chunk piecemeal (a query that needs one segment):
// the chunk's head, then the bytes that chunk_range_bytes names, are all that
// chunk_payload_range reads for that range.
TEST(TraceFormat, ARangeOfAPayloadDecodesFromTheBytesItNames) {
  ChunkBuilder b;
  b.feedlet = 1;
  const std::string c = mixed_chunk(b, 5000);
  const auto* bytes = reinterpret_cast<const uint8_t*>(c.data());
  ChunkHeader h;
  std::memcpy(&h, bytes, sizeof h);
  const size_t head = trace::chunk_head_bytes(h);
  EXPECT_EQ(head, h.header_size + 3 * kSegmentEntry);
  std::vector<uint8_t> whole_buf;
  const uint8_t* whole = trace::chunk_payload(bytes, whole_buf);
  ASSERT_NE(whole, nullptr);
  const uint32_t end0 = table_entry(c, 0, 0), end1 = table_entry(c, 1, 0);
  const size_t blocks = head;  // the first block starts after the table
  struct Case {
    size_t from, to, begin, end;  // a raw range, and the chunk's bytes it takes
  };
  for (const Case& k : {Case{0, 1, blocks, blocks + table_entry(c, 0, 1)},
                        Case{end0, end0 + 1, blocks + table_entry(c, 0, 1), blocks + table_entry(c, 1, 1)},
                        Case{end0 - 1, end1 + 1, blocks, blocks + table_entry(c, 2, 1)},
                        Case{end1, SIZE_MAX, blocks + table_entry(c, 1, 1), blocks + table_entry(c, 2, 1)}}) {
    size_t begin = 0, end = 0;
    ASSERT_TRUE(trace::chunk_range_bytes(bytes, k.from, k.to, &begin, &end));
    EXPECT_EQ(begin, k.begin) << k.from;
    EXPECT_EQ(end, k.end) << k.from;
    // Only the head and those bytes, the rest of the chunk garbage.
    std::vector<uint8_t> sparse(c.size(), 0x5A);
    std::memcpy(sparse.data(), bytes, head);
    std::memcpy(sparse.data() + begin, bytes + begin, end - begin);
    std::vector<uint8_t> buf;
    size_t to = k.to;
    const uint8_t* got = trace::chunk_payload_range(sparse.data(), buf, k.from, &to);
    ASSERT_NE(got, nullptr) << k.from;
    const size_t want = std::min<size_t>(k.to, h.raw_size);
    EXPECT_GE(to, want);
    EXPECT_TRUE(std::equal(got + k.from, got + want, whole + k.from)) << k.from;
  }
  // A broken table: no range.
  std::string broken = c;
  std::memcpy(broken.data() + h.header_size + kSegmentEntry, &end0, 4);  // raw ends that do not rise
  size_t begin = 0, end = 0;
  EXPECT_FALSE(trace::chunk_range_bytes(reinterpret_cast<const uint8_t*>(broken.data()), 0, 1, &begin, &end));
  // A payload in one lz4 block (version 1) is read whole.
  const std::string v1 = as_version_one(header_with_version(kMajorVersion, kMinorVersion) + c);
  const Collected read1 = read_bytes(v1);
  ASSERT_EQ(read1.chunks.size(), 1u);
  const auto* chunk1 = reinterpret_cast<const uint8_t*>(v1.data() + read1.chunks[0].offset);
  ChunkHeader h1;
  std::memcpy(&h1, chunk1, sizeof h1);
  ASSERT_TRUE(h1.flags & kChunkLz4);
  EXPECT_EQ(trace::chunk_head_bytes(h1), h1.header_size);
  ASSERT_TRUE(trace::chunk_range_bytes(chunk1, end0, end0 + 1, &begin, &end));
  EXPECT_EQ(begin, 0u);
  EXPECT_EQ(end, chunk_bytes(h1));
}

// Traces written by version 1 (one lz4 block a chunk) read as before.
TEST(TraceFormat, VersionOneTracesStillRead) {
  ChunkBuilder b;
  b.feedlet = 1;
  std::string v2 = header_with_version(kMajorVersion, kMinorVersion);
  v2 += mixed_chunk(b, 5000);
  v2 += instants(b, 9'000'000, 5);
  const std::string v1 = as_version_one(v2);
  Collected a = read_bytes(v2), c = read_bytes(v1);
  ASSERT_EQ(a.chunks.size(), 2u);
  EXPECT_EQ(c.header.major, 1);
  ASSERT_EQ(c.chunks.size(), 2u);
  EXPECT_TRUE(c.chunks[0].header.flags & kChunkLz4);
  EXPECT_TRUE(c.damage.empty());
  ASSERT_EQ(c.events.size(), a.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_EQ(c.events[i].e.ts, a.events[i].e.ts);
    EXPECT_EQ(c.events[i].e.type, a.events[i].e.type);
    EXPECT_EQ(c.events[i].e.u[0], a.events[i].e.u[0]);
  }
  // Its payload decodes from the start only: as far as asked.
  const auto* chunk = reinterpret_cast<const uint8_t*>(v1.data() + c.chunks[0].offset);
  std::vector<uint8_t> buf;
  size_t to = 1000;
  ASSERT_NE(trace::chunk_payload_range(chunk, buf, 500, &to), nullptr);
  EXPECT_EQ(to, 1000u);
}

// A segment table that does not add up, or a block that does not decode, is
// that chunk's damage (its checksum made good, so that the reader gets to
// them); the chunks around it still read.
TEST(TraceFormat, BrokenSegmentsAreDamageNotACrash) {
  ChunkBuilder b;
  b.feedlet = 1;
  const std::string head = header_with_version(kMajorVersion, kMinorVersion);
  const std::string before = instants(b, 100, 3);
  const std::string good = mixed_chunk(b, 5000);
  const std::string after = instants(b, 9'000'000, 3);
  const size_t table = sizeof(ChunkHeader);
  auto put32 = [](std::string& c, size_t at, uint32_t v) { std::memcpy(c.data() + at, &v, 4); };
  std::vector<std::pair<const char*, std::string>> broken;
  std::string c = good;
  put32(c, table, table_entry(good, 1, 0));  // segment 0 ends where segment 1 does
  broken.emplace_back("raw ends that do not rise", c);
  c = good;
  put32(c, table + 2 * kSegmentEntry, table_entry(good, 2, 0) - 1);
  broken.emplace_back("a last raw end short of the payload", c);
  c = good;
  put32(c, table + 2 * kSegmentEntry + 4, table_entry(good, 2, 1) + 1);
  broken.emplace_back("a last block past the payload", c);
  c = good;
  put32(c, table + 4, 3);  // block 0 three bytes long
  broken.emplace_back("a block that does not decompress", c);
  for (auto& [what, bad] : broken) {
    seal_chunk(bad);
    Collected r = read_bytes(head + before + bad + after);
    ASSERT_EQ(r.damage.size(), 1u) << what;
    EXPECT_NE(r.damage[0].reason.find("does not decompress"), std::string::npos) << what << ": " << r.damage[0].reason;
    EXPECT_EQ(r.of_type(kInstant).size(), 6u) << what;  // the chunks before and after
  }
}

TEST(TraceFormat, ClockMapFollowsDrift) {
  trace::ClockMap m;
  m.reset(2.0, 1000, 500);
  EXPECT_EQ(m.to_ns(1000), 500);
  EXPECT_EQ(m.to_ns(3000), 1500);  // nominal rate before any calibration point
  m.add_point(2'000'001'000, 1'000'000'500);   // 2 ticks/ns over the first second
  m.add_point(4'100'001'000, 2'000'000'500);   // 2.1 ticks/ns over the next
  EXPECT_EQ(m.to_ns(1'000'001'000), 500'000'500);
  EXPECT_EQ(m.to_ns(3'050'001'000), 1'500'000'500);
  EXPECT_GT(m.to_ns(5'000'000'000), 2'000'000'500);
}

}  // namespace
}  // namespace tinescope::test
