// Fuzz target: the index file loader. A small valid trace is made once; the
// input is its index file. A damaged index is refused (checksums, sizes,
// offsets all checked) and never crashes; one that loads answers queries.
// The first corpus directory is seeded with the valid index when empty.
#include <dirent.h>

#include <cstring>
#include <vector>

#include "fuzz_util.hpp"
#include "index_file_base.hpp"
#include "tinescope/index/trace_index.hpp"

using namespace tinescope;

namespace {
std::string g_trace;
}

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  g_trace = fuzz::scratch() + "/base.tine";
  std::string error;
  if (!fuzz::write_index_file_base(g_trace, error)) return 0;
  const std::string seed = fuzz::scratch() + "/seed.idx";
  if (!fuzz::write_index_file_seed(g_trace, seed, error)) return 0;
  for (int i = 1; i < *argc; ++i) {  // the first corpus directory, if empty, gets the valid index
    const char* a = (*argv)[i];
    if (a[0] == '-') continue;
    DIR* d = opendir(a);
    if (!d) break;
    bool empty = true;
    while (dirent* e = readdir(d)) empty &= e->d_name[0] == '.';
    closedir(d);
    if (empty) std::system(("cp " + seed + " " + std::string(a) + "/valid.idx").c_str());
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
