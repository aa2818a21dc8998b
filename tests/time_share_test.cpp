// The pie chart's time shares (analysis/time_share.hpp) against a brute
// force over the intervals the test wrote: random nesting on several
// threads, windows that cut intervals at both ends, windows inside one
// interval, and empty windows.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>

#include "tinescope/analysis/time_share.hpp"
#include "tinescope/import/trace_import.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

struct Span {
  int64_t b, e;  // ns
  int name, tid, parent;  // parent: index, -1 for an outermost one
};

// Children inside [b, e), recursively, at random.
void grow(std::mt19937_64& rng, std::vector<Span>& out, int64_t b, int64_t e, int tid, int parent, int depth) {
  int64_t t = b;
  while (t < e) {
    const int64_t gap = int64_t(rng() % 4) * 1000, len = 1000 + int64_t(rng() % 20) * 1000;
    if (t + gap + len > e) break;
    out.push_back({t + gap, t + gap + len, int(rng() % 5), tid, parent});
    const int me = int(out.size()) - 1;
    if (depth < 4 && len > 3000 && rng() % 2) grow(rng, out, t + gap + 1000, t + gap + len - 1000, tid, me, depth + 1);
    t += gap + len;
  }
}

TEST(TimeShare, OwnTimeByNameAndBusyTimeByThreadEqualABruteForce) {
  std::mt19937_64 rng(test_seed(56));
  std::vector<Span> spans;
  for (int tid = 1; tid <= 3; ++tid) grow(rng, spans, 0, 2'000'000, tid, -1, 0);
  ASSERT_GT(spans.size(), 100u);
  const char* names[] = {"alpha", "beta", "gamma", "delta", "eps"};
  std::string json = "[";
  for (const Span& s : spans) {
    char event[160];
    std::snprintf(event, sizeof event, R"(%s{"ph":"X","pid":1,"tid":%d,"name":"%s","ts":%lld,"dur":%lld})",
                  json.size() > 1 ? ",\n" : "", s.tid, names[s.name], (long long)(s.b / 1000), (long long)((s.e - s.b) / 1000));
    json += event;
  }
  json += "]";
  const std::string src = scratch_dir() + "/shares.json", trace = scratch_dir() + "/shares.tine";
  std::ofstream(src) << json;
  import::ImportResult result;
  std::string error;
  ASSERT_TRUE(import::import_trace(src, trace, result, error)) << error;
  auto ix = index::TraceIndex::open(trace, error);
  ASSERT_TRUE(ix) << error;
  const trace::ClockMap& clock = ix->catalog().clock;
  std::vector<uint32_t> feedlets;
  for (const auto& f : ix->feedlets())
    if (f.id != 0) feedlets.push_back(f.id);
  ASSERT_EQ(feedlets.size(), 3u);
  const int64_t origin = clock.to_ns(ix->first_ts());  // (the first interval starts at 0)
  auto clip = [](int64_t b, int64_t e, int64_t w0, int64_t w1) { return std::max<int64_t>(0, std::min(e, w1) - std::max(b, w0)); };
  for (int trial = 0; trial < 40; ++trial) {
    int64_t w0 = int64_t(rng() % 2'100'000), w1 = w0 + 1 + int64_t(rng() % 900'000);
    if (trial == 0) w0 = 0, w1 = 2'100'000;   // everything
    if (trial == 1) w0 = 500'500, w1 = 500'700;  // a sliver, inside intervals
    std::map<std::string, int64_t> by_name;
    std::map<int, int64_t> by_tid;
    for (const Span& s : spans) {
      const int64_t d = clip(s.b, s.e, w0, w1);
      by_name[names[s.name]] += d;
      if (s.parent >= 0) by_name[names[spans[size_t(s.parent)].name]] -= d;
      else by_tid[s.tid] += d;
    }
    const uint64_t k0 = clock.to_ticks(origin + w0), k1 = clock.to_ticks(origin + w1);
    std::map<std::string, int64_t> got;
    for (const analysis::Share& s : analysis::time_share(*ix, feedlets, {}, k0, k1, analysis::ShareBy::Name))
      got[s.label] = int64_t(std::llround(double(s.ticks) / clock.ticks_per_ns()));
    for (auto it = by_name.begin(); it != by_name.end();) it = it->second ? std::next(it) : by_name.erase(it);
    EXPECT_EQ(got, by_name) << "by name, window " << w0 << ".." << w1;
    const std::vector<std::string> labels = {"t1", "t2", "t3"};
    std::map<std::string, int64_t> threads, want_threads;
    for (const analysis::Share& s : analysis::time_share(*ix, feedlets, labels, k0, k1, analysis::ShareBy::Thread))
      threads[s.label] = int64_t(std::llround(double(s.ticks) / clock.ticks_per_ns()));
    for (auto [tid, d] : by_tid)
      if (d) want_threads[labels[size_t(tid - 1)]] = d;  // (feedlets in tid order: the importer's)
    EXPECT_EQ(threads, want_threads) << "by thread, window " << w0 << ".." << w1;
  }
  EXPECT_TRUE(analysis::time_share(*ix, feedlets, {}, 10, 10, analysis::ShareBy::Name).empty()) << "an empty window";
}

}  // namespace
}  // namespace tinescope::test
