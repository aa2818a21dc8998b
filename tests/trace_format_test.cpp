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
  std::memcpy(h.data() + 8, &major, 2);
  std::memcpy(h.data() + 10, &minor, 2);
  uint64_t sum = checksum(h.data(), h.size() - 8);
  std::memcpy(h.data() + h.size() - 8, &sum, 8);
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
  std::mt19937_64 rng(1);
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
