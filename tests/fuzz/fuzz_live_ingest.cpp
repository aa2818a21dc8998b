// Fuzz target: the viewer's live ingest (FeedCapture) on any bytes arriving in
// any pieces. Bytes that do not start a feed are refused and leave no file;
// otherwise the feed is saved as it came, indexed a piece at a time, and the
// result equals the same bytes indexed whole.
#include "fuzz_util.hpp"
#include "tinescope/index/live_source.hpp"

using namespace tinescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string feed = fuzz::scratch() + "/feed.tine", whole = fuzz::scratch() + "/whole.tine";
  for (const std::string& f : {feed, whole}) ::unlink(f.c_str()), ::unlink((f + ".idx").c_str());
  index::BuildOptions o;
  o.threads = 1;
  index::FeedCapture cap;
  std::string error;
  if (!cap.open(feed, o, error)) return 0;
  uint64_t rng = size * 0x9E3779B97F4A7C15ull + 1;
  bool refused = false, failed = false;
  for (size_t at = 0; at < size && !failed;) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    const size_t n = std::min<size_t>(size - at, 1 + (rng >> 33) % 4096);
    if (!cap.append(data + at, n, error)) {
      refused = true;
      break;
    }
    at += n;
    // An update fails only for what no later byte can mend (a newer major
    // version): the same bytes whole must fail too.
    if ((rng >> 20) % 2 && !cap.update(error)) failed = true;
  }
  const bool finished = !failed && cap.finish(error);
  if (refused || size == 0) {
    if (finished && cap.bytes() == 0) std::abort();  // nothing saved, nothing to finish
    return 0;
  }
  if (!fuzz::write_file(whole, data, size)) return 0;
  auto ix = index::TraceIndex::build(whole, error, o);
  if (finished != bool(ix) && !(failed && !ix)) {
    std::fprintf(stderr, "the feed %s but the same bytes whole %s\n", finished ? "indexed" : "did not index",
                 ix ? "did" : "did not");
    std::abort();
  }
  if (!ix) return 0;
  const index::TraceIndex& got = *cap.index();
  if (got.events() != ix->events() || got.chunks().size() != ix->chunks().size() ||
      got.damage().size() != ix->damage().size() || got.streams().size() != ix->streams().size()) {
    std::fprintf(stderr, "in pieces: %llu events, %zu chunks, %zu damaged; whole: %llu, %zu, %zu\n",
                 (unsigned long long)got.events(), got.chunks().size(), got.damage().size(),
                 (unsigned long long)ix->events(), ix->chunks().size(), ix->damage().size());
    std::abort();
  }
  return 0;
}
