// Damage: a real trace (the demo workload) with random byte flips and
// truncations. No crash, every intact chunk read back, every damaged byte
// reported, no invented chunk; and a recorder killed with SIGKILL leaves a
// trace whose published chunks all read back.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <random>
#include <set>

#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

uint64_t mono_now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

pid_t spawn_demo(const std::string& path, const std::string& duration) {
  pid_t pid = fork();
  if (pid == 0) {
    const std::string exe = bin("recorder/tinescope-demo");
    execl(exe.c_str(), exe.c_str(), "-o", path.c_str(), "--overwrite", "--duration", duration.c_str(),
          (char*)nullptr);
    _exit(127);
  }
  return pid;
}

class TraceDamage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(temp_path("damage-demo"));
    pid_t pid = spawn_demo(*path_, "1");
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "tinescope-demo failed";
    bytes_ = new std::string(slurp(*path_));
    pristine_ = new Collected(read_bytes(*bytes_));
  }
  static void TearDownTestSuite() {
    unlink(path_->c_str());
    delete path_;
    delete bytes_;
    delete pristine_;
  }
  static std::string* path_;
  static std::string* bytes_;
  static Collected* pristine_;
};
std::string* TraceDamage::path_;
std::string* TraceDamage::bytes_;
Collected* TraceDamage::pristine_;

bool same_chunk(const trace::ChunkInfo& a, const trace::ChunkInfo& b) {
  return a.offset == b.offset && a.size == b.size && std::memcmp(&a.header, &b.header, sizeof a.header) == 0;
}

bool covered(const std::vector<trace::Damage>& damage, uint64_t offset) {
  for (const trace::Damage& d : damage)
    if (offset >= d.offset && offset < d.offset + d.length) return true;
  return false;
}

// Checks a damaged read against the pristine one, given the damaged bytes.
void check_against_pristine(const Collected& pristine, const Collected& got,
                            const std::vector<uint64_t>& touched, uint64_t size, const std::string& what) {
  // No invented chunk: everything read is a pristine chunk.
  std::set<uint64_t> got_offsets;
  for (const trace::ChunkInfo& c : got.chunks) {
    auto it = std::find_if(pristine.chunks.begin(), pristine.chunks.end(),
                           [&](const trace::ChunkInfo& p) { return same_chunk(p, c); });
    ASSERT_NE(it, pristine.chunks.end()) << what << ": invented chunk at " << c.offset;
    got_offsets.insert(c.offset);
  }
  // Every intact chunk is read back; every lost one is reported.
  std::map<uint32_t, std::vector<uint64_t>> missing;
  std::map<uint32_t, uint64_t> last_seen;
  for (const trace::ChunkInfo& p : pristine.chunks) {
    bool intact = p.offset + p.size <= size;
    for (uint64_t t : touched) intact &= !(t >= p.offset && t < p.offset + p.size);
    if (intact) {
      EXPECT_TRUE(got_offsets.count(p.offset)) << what << ": intact chunk at " << p.offset << " not read";
    }
    if (!got_offsets.count(p.offset)) {
      missing[p.header.feedlet].push_back(p.header.sequence);
      EXPECT_TRUE(covered(got.damage, p.offset) || p.offset >= size)
          << what << ": chunk at " << p.offset << " lost without a damage report";
    } else {
      last_seen[p.header.feedlet] = std::max(last_seen[p.header.feedlet], p.header.sequence);
    }
  }
  // A missing chunk followed by a surviving one of its feedlet is a reported loss.
  for (auto& [feedlet, seqs] : missing)
    for (uint64_t s : seqs) {
      if (!last_seen.count(feedlet) || s > last_seen[feedlet]) continue;
      bool reported = false;
      for (const trace::Loss& l : got.losses)
        reported |= l.feedlet == feedlet && s >= l.first_sequence && s < l.first_sequence + l.count;
      EXPECT_TRUE(reported) << what << ": feedlet " << feedlet << " chunk " << s << " lost but not reported";
    }
  // Every damaged byte inside the file is inside a reported damage range.
  for (uint64_t t : touched)
    if (t < size) {
      EXPECT_TRUE(covered(got.damage, t)) << what << ": flipped byte " << t << " not reported";
    }
  // Damage never overlaps a chunk that was read.
  for (const trace::Damage& d : got.damage)
    for (const trace::ChunkInfo& c : got.chunks)
      EXPECT_TRUE(d.offset + d.length <= c.offset || c.offset + c.size <= d.offset)
          << what << ": damage [" << d.offset << "," << d.offset + d.length << ") overlaps chunk " << c.offset;
}

TEST_F(TraceDamage, PristineTraceIsClean) {
  const Collected& p = *pristine_;
  EXPECT_TRUE(p.header.intact);
  EXPECT_GT(p.chunks.size(), 20u);
  EXPECT_TRUE(p.damage.empty());
  EXPECT_TRUE(p.losses.empty());
}

TEST_F(TraceDamage, RandomByteFlips) {
  std::mt19937_64 rng(test_seed(12345));
  for (int round = 0; round < 300; ++round) {
    std::string b = *bytes_;
    std::vector<uint64_t> touched;
    int flips = 1 + int(rng() % 16);
    for (int i = 0; i < flips; ++i) {
      uint64_t at = rng() % b.size();
      b[at] = char(uint8_t(b[at]) ^ uint8_t(1 + rng() % 255));
      touched.push_back(at);
    }
    Collected got = read_bytes(b);
    check_against_pristine(*pristine_, got, touched, b.size(), "round " + std::to_string(round));
    if (HasFailure()) return;
  }
}

// A flipped byte in the header's version claims a newer format; its checksum
// then fails, so it is damage like any other byte and every chunk is still
// read (a clean header of a newer version is refused: TraceFormat tests).
// The random flips above hit these bytes in about one run in thirty.
TEST_F(TraceDamage, FlippedVersionBytesAreDamageNotARefusal) {
  for (uint64_t at = 8; at < 12; ++at)
    for (int x : {1, 2, 0x40, 0x80, 0xff}) {
      std::string b = *bytes_;
      b[at] = char(uint8_t(b[at]) ^ uint8_t(x));
      Collected got = read_bytes(b);
      EXPECT_FALSE(got.header.intact);
      check_against_pristine(*pristine_, got, {at}, b.size(), "byte " + std::to_string(at) + " ^ " + std::to_string(x));
      if (HasFailure()) return;
    }
}

TEST_F(TraceDamage, RandomTruncation) {
  std::mt19937_64 rng(test_seed(777));
  for (int round = 0; round < 200; ++round) {
    uint64_t size = rng() % bytes_->size();
    Collected got = read_bytes(bytes_->substr(0, size));
    std::vector<uint64_t> touched;
    for (const trace::ChunkInfo& p : pristine_->chunks)
      if (p.offset < size && p.offset + p.size > size) touched.push_back(size - 1);  // the cut chunk
    check_against_pristine(*pristine_, got, touched, size, "cut at " + std::to_string(size));
    // Only the cut chunk at the very end can be damage.
    ASSERT_LE(got.damage.size(), 1u);
    if (!got.damage.empty()) {
      EXPECT_EQ(got.damage[0].offset + got.damage[0].length, size);
    }
    if (HasFailure()) return;
  }
}

TEST_F(TraceDamage, DamagedFileHeaderKeepsEveryChunk) {
  std::string b = *bytes_;
  for (size_t i = 20; i < 60; ++i) b[i] = char(0xAA);
  Collected got = read_bytes(b);
  EXPECT_FALSE(got.header.intact);
  EXPECT_EQ(got.chunks.size(), pristine_->chunks.size());
  EXPECT_EQ(got.events.size(), pristine_->events.size());
  ASSERT_EQ(got.damage.size(), 1u);
  EXPECT_EQ(got.damage[0].offset, 0u);
  EXPECT_EQ(got.damage[0].length, pristine_->header.size);
  EXPECT_NE(got.damage[0].reason.find("file header damaged"), std::string::npos) << got.damage[0].reason;
}

TEST_F(TraceDamage, GarbageIsNotATrace) {
  std::mt19937_64 rng(test_seed(99));
  std::string garbage(100000, '\0');
  for (char& c : garbage) c = char(rng());
  const std::string path = temp_path("garbage");
  write_file(path, garbage);
  Collected c;
  std::string error;
  EXPECT_FALSE(trace::read_file(path, c, error));
  EXPECT_NE(error.find(path), std::string::npos) << "the error names the file: " << error;
  EXPECT_NE(error.find("not a tinescope trace"), std::string::npos) << error;
  unlink(path.c_str());
}

TEST_F(TraceDamage, SplitAnywhereTheStreamReaderSeesTheSame) {
  std::mt19937_64 rng(test_seed(5));
  Collected got;
  trace::StreamReader stream(got, {.sequence_from_zero = true});
  for (size_t at = 0; at < bytes_->size();) {
    size_t n = std::min<size_t>(bytes_->size() - at, 1 + rng() % 3000);
    stream.feed(bytes_->data() + at, n);
    at += n;
  }
  stream.close();
  ASSERT_EQ(got.chunks.size(), pristine_->chunks.size());
  ASSERT_EQ(got.events.size(), pristine_->events.size());
  for (size_t i = 0; i < got.events.size(); ++i) {
    EXPECT_EQ(got.events[i].e.ts, pristine_->events[i].e.ts);
    EXPECT_EQ(got.events[i].e.type, pristine_->events[i].e.type);
  }
  EXPECT_TRUE(got.damage.empty());
}

TEST(TraceKill, SigkilledRecorderLeavesAReadableTrace) {
  const std::string path = temp_path("killed");
  unlink(path.c_str());
  pid_t pid = spawn_demo(path, "60");
  usleep(1'500'000);
  const uint64_t killed_at = mono_now();
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  Collected c = read_trace(path);
  EXPECT_TRUE(c.header.intact);
  EXPECT_GT(c.chunks.size(), 10u);
  EXPECT_TRUE(c.losses.empty()) << "chunks reach the file in order: no gaps";
  ASSERT_LE(c.damage.size(), 1u) << "at most the chunk being written when killed";
  if (!c.damage.empty()) {
    EXPECT_EQ(c.damage[0].offset + c.damage[0].length, slurp(path).size());
  }
  uint64_t last = 0;
  for (const OwnedEvent& o : c.events) last = std::max(last, o.e.ts);
  int64_t lag_ms = (int64_t(killed_at) - c.catalog.clock.to_ns(last)) / 1000000;
  EXPECT_LT(lag_ms, 150) << "partly filled buffers are published within the flush interval";
  unlink(path.c_str());
}

}  // namespace
}  // namespace tinescope::test
