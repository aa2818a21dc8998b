// The trace that the index_file fuzz target's inputs are the index of: the
// header and first data chunk (a chunk is about 60 KB) of a small synthetic
// trace, so that a small index still has node pages, flow blocks and
// checkpoints to damage. The seeds in corpus/index_file were made on it, and
// a test loads them against it (Index.DamagedIndexSeedsAreRefusedForWhatIsWrong):
// it must make the same bytes every time.
#pragma once

#include <unistd.h>

#include <string>

#include "synthetic_trace.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::fuzz {

inline bool write_index_file_base(const std::string& path, std::string& error) {
  bench::SyntheticOptions o;
  o.events = 3000, o.threads = 2, o.period_ns = 20'000, o.seed = 5, o.compress_threads = 1;
  bench::SyntheticResult r;
  ::unlink(path.c_str());
  if (!bench::write_synthetic_trace(path, o, r, error)) return false;
  if (::truncate(path.c_str(), 90000) != 0) {
    error = path + ": cannot cut it to 90000 bytes";
    return false;
  }
  return true;
}

// The valid index of that trace, as the seed valid.idx is made.
inline bool write_index_file_seed(const std::string& trace, const std::string& idx, std::string& error) {
  index::BuildOptions b;
  b.threads = 1;
  b.index_path = idx;
  return index::TraceIndex::build(trace, error, b) != nullptr;
}

}  // namespace tinescope::fuzz
