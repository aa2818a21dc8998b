// The workload the Release build's indexer is trained on (profile-guided
// optimization, bench/CMakeLists.txt): synthetic traces indexed on every
// core, each index opened again, and lane queries at random zooms from the
// whole trace down to 1280 ns, as index_bench and the viewer ask them. Run
// by the build, linked with an instrumented copy of the index library; what
// it counts goes to the compiler, not to a user.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "synthetic_trace.hpp"
#include "tinescope/index/trace_index.hpp"

using namespace tinescope;

namespace {

// Writes and indexes a trace of `events` on `threads` lanes, then asks
// `queries` lane queries of `min_columns` to 1280 columns whose windows are
// at most 2^`zooms` times narrower than the trace (0: down to 1280 ns).
// False after saying why.
bool train(const std::filesystem::path& dir, uint64_t events, uint32_t threads, int queries, double zooms,
           uint32_t min_columns) {
  const std::string trace = (dir / "train.tine").string();
  std::filesystem::remove(trace);
  std::filesystem::remove(trace + ".idx");
  bench::SyntheticOptions opt;
  opt.events = events;
  opt.threads = threads;
  bench::SyntheticResult made;
  std::string error;
  std::unique_ptr<index::TraceIndex> ix;
  if (!bench::write_synthetic_trace(trace, opt, made, error) || !index::TraceIndex::build(trace, error) ||
      !(ix = index::TraceIndex::load(trace, trace + ".idx", error))) {
    std::fprintf(stderr, "pgo_train: %s\n", error.c_str());
    return false;
  }
  std::vector<uint32_t> feedlets;
  for (const index::StreamInfo& s : ix->streams())
    if (feedlets.empty() || feedlets.back() != s.feedlet) feedlets.push_back(s.feedlet);
  const uint64_t lo = ix->first_ts(), hi = ix->last_ts();
  std::mt19937_64 rng(7);
  std::vector<std::pair<int, index::Buckets>> answer;
  uint64_t nodes = 0;
  const double widest = std::log2(double(hi - lo)), narrowest = zooms > 0 ? widest - zooms : std::log2(1280.0);
  for (int q = 0; q < queries && !feedlets.empty() && hi - lo > 1280; ++q) {
    const double zoom = std::uniform_real_distribution<double>(narrowest, widest)(rng);
    const uint64_t span = uint64_t(std::exp2(zoom)), t = lo + rng() % (hi - lo - span + 1);
    const uint32_t columns = min_columns + uint32_t(rng() % (1280 - min_columns + 1));
    ix->query_lane(feedlets[rng() % feedlets.size()], t, t + span, columns, answer);
    for (auto& [id, b] : answer) nodes += b.nodes.size();
  }
  std::printf("pgo_train: %llu events on %u lanes indexed, %llu nodes answered\n", (unsigned long long)made.events,
              threads, (unsigned long long)nodes);
  ix.reset();
  std::filesystem::remove(trace);
  std::filesystem::remove(trace + ".idx");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s WORK_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  // Indexing, and queries at every zoom. Then the coarse zooms of one dense
  // lane, as narrow as 64 columns: there a query reads levels above the leaf,
  // odd ones too, whose pairs of buckets fold (a lane of these traces has too
  // few items for 1280 columns to reach past its leaves, where index_bench's
  // do). Trained on the first alone, that fold was laid out as rarely run,
  // and stored lane queries were ~30 % slower.
  return train(dir, 3'000'000, 8, 600, 0, 1280) && train(dir, 4'000'000, 1, 600, 6, 64) ? 0 : 1;
}
