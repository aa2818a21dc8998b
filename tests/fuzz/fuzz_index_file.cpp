// Fuzz target: the index file loader. A small valid trace is made once; the
// input is its index file. A damaged index is refused (checksums, sizes,
// offsets all checked) and never crashes; one that loads answers queries.
// The first corpus directory is seeded with the valid index when empty.
#include <dirent.h>

#include <cstring>
#include <vector>

#include "fuzz_util.hpp"
#include "synthetic_trace.hpp"
#include "tinescope/trace_index.hpp"

using namespace tinescope;

namespace {
std::string g_trace;
}

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  g_trace = fuzz::scratch() + "/base.tine";
  bench::SyntheticOptions o;
  o.events = 3000, o.threads = 2, o.period_ns = 20'000, o.seed = 5, o.compress_threads = 1;
  bench::SyntheticResult r;
  std::string error;
  ::unlink(g_trace.c_str());
  if (!bench::write_synthetic_trace(g_trace, o, r, error)) return 0;
  // Its header and first data chunk only (a chunk is about 60 KB): a small
  // index that still has node pages, flow blocks and checkpoints to damage.
  if (::truncate(g_trace.c_str(), 90000) != 0) return 0;
  index::BuildOptions b;
  b.threads = 1;
  b.index_path = fuzz::scratch() + "/seed.idx";
  if (!index::TraceIndex::build(g_trace, error, b)) return 0;
  for (int i = 1; i < *argc; ++i) {  // the first corpus directory, if empty, gets the valid index
    const char* a = (*argv)[i];
    if (a[0] == '-') continue;
    DIR* d = opendir(a);
    if (!d) break;
    bool empty = true;
    while (dirent* e = readdir(d)) empty &= e->d_name[0] == '.';
    closedir(d);
    if (empty) std::system(("cp " + b.index_path + " " + std::string(a) + "/valid.idx").c_str());
    break;
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (g_trace.empty()) return 0;
  const std::string idx = fuzz::scratch() + "/in.idx";
  if (!fuzz::write_file(idx, data, size)) return 0;
  std::string error;
  auto ix = index::TraceIndex::load(g_trace, idx, error);
  if (!ix) {
    if (error.empty()) std::abort();  // a refusal always says why
    return 0;
  }
  uint64_t sum = 0;
  for (const index::FeedletSummary& f : ix->feedlets())
    for (auto& [id, b] : ix->query_lane(f.id, ix->first_ts(), ix->last_ts(), 50)) sum += b.nodes.size() + uint64_t(id);
  for (size_t i = 0; i < ix->streams().size(); ++i) sum += ix->query(int(i), 0, UINT64_MAX, 10).nodes.size();
  sum += ix->flows(0, UINT64_MAX).size();
  index::EventRef g;
  sum += ix->global_event(ix->events() / 2, g);
  return int(sum & 0);
}
