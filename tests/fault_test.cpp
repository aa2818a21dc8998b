// Faults, each asserting exactly what is kept and what is reported lost:
// an indexer killed mid-way, a trace with flipped bytes shown in the viewer's
// picture, a live source that stalls, disconnects or floods garbage. (The
// disk filling up while recording: recorder_disk_full_test; damaged and
// half-written index files: index_test.)
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "synthetic_trace.hpp"
#include "tinescope/render/picture.hpp"
#include "tinescope/index/trace_index.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

namespace fs = std::filesystem;

std::string dir() { return scratch_dir(); }

std::string synthetic(const std::string& name, uint64_t events, bench::SyntheticResult& r) {
  const std::string path = dir() + "/" + name;
  bench::SyntheticOptions o;
  o.events = events, o.threads = 4, o.seed = 11;
  std::string error;
  fs::remove(path);
  EXPECT_TRUE(bench::write_synthetic_trace(path, o, r, error)) << error;
  return path;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(Fault, KilledIndexerLeavesNoIndexAndTheNextOpenRebuildsAndCleansUp) {
  bench::SyntheticResult r;
  const std::string trace = synthetic("killed.tine", 3'000'000, r);
  const std::string idx = index::TraceIndex::default_index_path(trace);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    index::BuildOptions o;
    o.progress = [](const index::Progress& p) {
      if (p.bytes_done * 3 >= p.bytes_total) ::raise(SIGKILL);  // a third of the way in
    };
    std::string error;
    index::TraceIndex::build(trace, error, o);
    _exit(0);  // not reached when the kill happened
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the indexer was not killed mid-way";
  EXPECT_FALSE(fs::exists(idx)) << "a killed indexer must not leave an index under the real name";
  const std::string temp = idx + ".tmp." + std::to_string(child);
  EXPECT_TRUE(fs::exists(temp)) << "its pages went to a temporary file";

  std::string error, why;
  auto ix = index::TraceIndex::open(trace, error, {}, &why);
  ASSERT_TRUE(ix) << error;
  EXPECT_FALSE(why.empty()) << "open() says why it built the index";
  EXPECT_EQ(ix->events(), r.events);
  EXPECT_FALSE(fs::exists(temp)) << "the dead indexer's temporary file is removed";
  EXPECT_TRUE(index::TraceIndex::load(trace, idx, error)) << error;
}

TEST(Fault, FlippedBytesLoseOneChunkAndTheViewerMarksWhere) {
  bench::SyntheticResult r;
  const std::string trace = synthetic("flipped.tine", 400'000, r);
  std::string error;
  index::BuildOptions o;
  o.index_path = dir() + "/clean.idx";
  auto clean = index::TraceIndex::build(trace, error, o);
  ASSERT_TRUE(clean) << error;
  const std::vector<index::ChunkRecord> chunks = clean->chunks();
  ASSERT_GT(chunks.size(), 10u);
  const index::ChunkRecord victim = chunks[chunks.size() / 2];
  clean.reset();

  std::string bytes = slurp(trace);
  const uint64_t at = victim.offset + victim.size / 2;
  for (int i = 0; i < 16; ++i) bytes[at + uint64_t(i)] ^= 0x41;
  std::ofstream(trace, std::ios::binary | std::ios::trunc) << bytes;

  auto scene = std::make_shared<render::Scene>();
  ASSERT_TRUE(scene->add_trace(trace, error)) << error;
  const index::TraceIndex& ix = *scene->sources()[0].index;
  // Exactly the victim is lost, and said so.
  ASSERT_EQ(ix.damage().size(), 1u);
  EXPECT_EQ(ix.damage()[0].offset, victim.offset);
  EXPECT_EQ(ix.damage()[0].length, victim.size);
  EXPECT_EQ(ix.events(), r.events - victim.event_count);
  EXPECT_EQ(ix.chunks().size(), chunks.size() - 1);
  // ...and, as a gap in its feedlet's sequence numbers, as that feedlet's loss.
  ASSERT_EQ(ix.losses().size(), 1u);
  EXPECT_EQ(ix.losses()[0].feedlet, victim.feedlet);
  EXPECT_EQ(ix.losses()[0].count, 1u);
  // The viewer's picture hatches the damaged time across every lane (and the
  // loss again on the victim's lane), and still draws the intact chunks on
  // both sides.
  const std::vector<render::Gap>& gaps = scene->sources()[0].gaps;
  ASSERT_EQ(gaps.size(), 2u);
  const render::Gap gap = gaps[0].feedlet == render::Gap::kAllFeedlets ? gaps[0] : gaps[1];
  ASSERT_EQ(gap.feedlet, render::Gap::kAllFeedlets);
  render::TimelineRequest q;
  q.t0 = scene->first_ns(), q.t1 = scene->last_ns() + 1, q.width = 1000;
  q.layout = render::layout_lanes(*scene, {});
  const render::TimelinePicture p = render::build_timeline(*scene, q);
  ASSERT_EQ(p.gaps.size(), q.layout.lanes.size() + 1);
  const double x0 = p.axis.x(gap.t0), x1 = p.axis.x(gap.t1);
  for (const render::GapRect& g : p.gaps) {
    EXPECT_LE(g.x0, x0 + 1e-3);
    EXPECT_GE(g.x1, x1 - 1e-3);
  }
  auto covered = [&](uint32_t c0, uint32_t c1) {
    int n = 0;
    for (const render::Layout::LaneRows& lr : q.layout.lanes)
      for (uint32_t c = c0; c < c1; ++c) n += p.rgba[size_t(lr.first) * p.columns + c] != 0;
    return n;
  };
  EXPECT_GT(covered(0, uint32_t(std::max(1.0, x0 - 5))), 0) << "before the damage";
  EXPECT_GT(covered(uint32_t(x1 + 5), p.columns), 0) << "after the damage";
}

// A live feed's bytes, from the start of a trace file.
struct Feed {
  std::string bytes;
  std::vector<trace::ChunkInfo> chunks;
  explicit Feed(const std::string& path) : bytes(slurp(path)) {
    struct V : trace::Visitor {
      std::vector<trace::ChunkInfo>* out;
      void on_chunk(const trace::ChunkInfo& c) override { out->push_back(c); }
    } v;
    v.out = &chunks;
    std::string error;
    EXPECT_TRUE(trace::read_file(path, v, error, {.decode_data = false})) << error;
  }
};

struct Received : trace::Visitor {
  uint64_t chunks = 0;
  std::vector<trace::Damage> damage;
  void on_chunk(const trace::ChunkInfo&) override { ++chunks; }
  void on_damage(const trace::Damage& d) override { damage.push_back(d); }
};

TEST(Fault, LiveSourceThatStallsThenDisconnectsKeepsEveryCompleteChunk) {
  bench::SyntheticResult r;
  Feed feed(synthetic("live.tine", 200'000, r));
  ASSERT_GT(feed.chunks.size(), 6u);
  const trace::ChunkInfo& cut = feed.chunks[5];
  Received got;
  trace::StreamReader reader(got, {});
  // Everything up to the middle of chunk 5, in odd pieces; then the source stalls.
  const size_t upto = size_t(cut.offset + cut.size / 2);
  for (size_t at = 0; at < upto;) {
    const size_t n = std::min<size_t>(777, upto - at);
    reader.feed(feed.bytes.data() + at, n);
    at += n;
  }
  EXPECT_EQ(got.chunks, 5u);  // chunks 0..4 (the metadata chunk among them): all complete ones
  EXPECT_TRUE(got.damage.empty()) << "a stall is not damage";
  reader.close();  // ...and disconnects
  EXPECT_EQ(got.chunks, 5u);
  ASSERT_EQ(got.damage.size(), 1u);
  EXPECT_EQ(got.damage[0].offset, cut.offset);
  EXPECT_EQ(got.damage[0].length, upto - cut.offset);
}

TEST(Fault, LiveSourceThatFloodsGarbageLosesOnlyTheGarbage) {
  bench::SyntheticResult r;
  Feed feed(synthetic("flood.tine", 200'000, r));
  ASSERT_GT(feed.chunks.size(), 6u);
  const size_t split = size_t(feed.chunks[3].offset);  // garbage arrives between chunks 2 and 3
  Received got;
  trace::StreamReader reader(got, {});
  reader.feed(feed.bytes.data(), split);
  std::mt19937_64 rng(test_seed(3));
  std::string garbage(8 << 20, '\0');
  for (char& c : garbage) c = char(rng());
  for (size_t at = 0; at < garbage.size(); at += 65536) reader.feed(garbage.data() + at, 65536);
  reader.feed(feed.bytes.data() + split, feed.bytes.size() - split);
  reader.close();
  EXPECT_EQ(got.chunks, feed.chunks.size()) << "every real chunk, before and after the flood";
  ASSERT_GE(got.damage.size(), 1u);
  uint64_t lost = 0;
  for (const trace::Damage& d : got.damage) {
    EXPECT_GE(d.offset, split);
    EXPECT_LE(d.offset + d.length, split + garbage.size());
    lost += d.length;
  }
  EXPECT_EQ(lost, garbage.size()) << "exactly the garbage is reported lost";
}

}  // namespace
}  // namespace tinescope::test
