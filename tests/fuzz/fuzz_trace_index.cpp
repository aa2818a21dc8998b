// Fuzz target: the indexer (its own chunk walker, streams, pyramids, flows)
// and its queries, on any bytes as a trace. Intact chunks are indexed,
// everything else is damage; no query crashes.
#include <cstdio>
#include <cstdlib>

#include "fuzz_util.hpp"
#include "tinescope/index/trace_index.hpp"

using namespace tinescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string trace = fuzz::scratch() + "/t.tine", idx = fuzz::scratch() + "/t.idx";
  if (!fuzz::write_file(trace, data, size)) return 0;
  ::unlink(idx.c_str());
  std::string error;
  index::BuildOptions o;
  o.threads = 1;
  o.index_path = idx;
  auto ix = index::TraceIndex::build(trace, error, o);
  if (!ix) return 0;
  const uint64_t t0 = ix->first_ts(), t1 = ix->last_ts();
  uint64_t sum = ix->events() + ix->dropped() + ix->chunks().size() + ix->damage().size();
  for (const index::FeedletSummary& f : ix->feedlets()) {
    for (uint32_t columns : {1u, 7u, 100u})
      for (auto& [id, b] : ix->query_lane(f.id, t0, t1, columns)) sum += b.nodes.size() + uint64_t(id);
    // What runs across the middle, from one walk, is what the three
    // answers for its parts say (each a walk of its own).
    const uint64_t mid = t0 + (t1 - t0) / 2;
    const index::RunningAcross across = ix->running_across(f.id, mid);
    if (across.open.size() != ix->open_at(f.id, mid).size() || across.jobs.size() != ix->running_at(f.id, mid).size() ||
        across.spans.size() != ix->spanning(f.id, mid).size()) {
      std::fprintf(stderr, "running_across differs from open_at, running_at or spanning at feedlet %u\n", f.id);
      std::abort();
    }
    sum += across.open.size() + across.jobs.size() + across.spans.size();
    index::EventRef e;
    if (ix->feedlet_event(f.id, f.events / 2, e)) sum += e.ts;
    sum += ix->feedlet_position_at(f.id, t1);
  }
  for (size_t i = 0; i < ix->streams().size(); ++i) sum += ix->items(int(i), t0, t1).size();
  sum += ix->flows(t0, t1).size();
  index::EventRef g;
  for (uint64_t k = 0; k < ix->events() && k < 64; k += 7) sum += ix->global_event(k, g) ? g.ts : 0;
  // And the file it wrote loads back.
  auto again = index::TraceIndex::load(trace, idx, error);
  if (!again || again->events() != ix->events()) {
    std::fprintf(stderr, "the index just written does not load: %s\n", error.c_str());
    std::abort();
  }
  return int(sum & 0);
}
