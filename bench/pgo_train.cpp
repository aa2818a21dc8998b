// The workload the Release build's indexer is trained on (profile-guided
// optimization, bench/CMakeLists.txt): a synthetic trace indexed on every
// core, the index opened again, and lane queries at random zooms from the
// whole trace down to 1280 ns, as index_bench and the viewer ask them. Run
// by the build, linked with an instrumented copy of the index library; what
// it counts goes to the compiler, not to a user.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "synthetic_trace.hpp"
#include "tinescope/trace_index.hpp"

using namespace tinescope;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s WORK_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  const std::string trace = (dir / "train.tine").string();
  std::filesystem::remove(trace);
  std::filesystem::remove(trace + ".idx");
  bench::SyntheticOptions opt;
  opt.events = 3'000'000;
  opt.threads = 8;
  bench::SyntheticResult made;
  std::string error;
  if (!bench::write_synthetic_trace(trace, opt, made, error)) {
    std::fprintf(stderr, "pgo_train: %s\n", error.c_str());
    return 1;
  }
  // The whole trace on every core, as `tinescope index` does.
  if (!index::TraceIndex::build(trace, error)) {
    std::fprintf(stderr, "pgo_train: %s\n", error.c_str());
    return 1;
  }
  auto ix = index::TraceIndex::load(trace, trace + ".idx", error);
  if (!ix) {
    std::fprintf(stderr, "pgo_train: %s\n", error.c_str());
    return 1;
  }
  std::vector<uint32_t> feedlets;
  for (const index::StreamInfo& s : ix->streams())
    if (feedlets.empty() || feedlets.back() != s.feedlet) feedlets.push_back(s.feedlet);
  const uint64_t lo = ix->first_ts(), hi = ix->last_ts();
  std::mt19937_64 rng(7);
  std::vector<std::pair<int, index::Buckets>> answer;
  uint64_t nodes = 0;
  for (int q = 0; q < 600 && !feedlets.empty() && hi - lo > 1280; ++q) {
    const double zoom = std::uniform_real_distribution<double>(std::log2(1280.0), std::log2(double(hi - lo)))(rng);
    const uint64_t span = uint64_t(std::exp2(zoom)), t = lo + rng() % (hi - lo - span + 1);
    ix->query_lane(feedlets[rng() % feedlets.size()], t, t + span, 1280, answer);
    for (auto& [id, b] : answer) nodes += b.nodes.size();
  }
  std::printf("pgo_train: %llu events indexed, %llu nodes answered\n", (unsigned long long)made.events,
              (unsigned long long)nodes);
  ix.reset();
  std::filesystem::remove(trace);
  std::filesystem::remove(trace + ".idx");
  return 0;
}
