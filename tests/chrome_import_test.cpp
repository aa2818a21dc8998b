// The Chrome JSON importer on the real samples in ../shared/samples: thread
// names, interval nesting, counters and flows, checked through the index.
#include <unistd.h>

#include <algorithm>
#include <map>

#include "tinescope/chrome_import.hpp"
#include "tinescope/trace_index.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

using index::Item;
using index::StreamKind;
using index::TraceIndex;

std::string sample(const std::string& name) {
  std::string src = TINESCOPE_SOURCE_DIR;
  std::string shared = src + "/../shared/samples/chrome-json/" + name;
  return ::access(shared.c_str(), R_OK) == 0 ? shared : src + "/tests/data/chrome-json/" + name;
}

struct Imported {
  std::string path;
  index::ImportResult result;
  std::unique_ptr<TraceIndex> ix;
  std::map<std::string, uint32_t> lane;  // feedlet name -> id

  explicit Imported(const std::string& name) : path(temp_path("import_" + name)) {
    ::unlink(path.c_str());
    ::unlink((path + ".idx").c_str());
    std::string error;
    bool ok = index::import_chrome_json(sample(name), path, result, error);
    EXPECT_TRUE(ok) << error;
    if (!ok) return;
    ix = TraceIndex::build(path, error);
    EXPECT_TRUE(ix) << error;
    if (!ix) return;
    EXPECT_TRUE(ix->damage().empty());
    for (auto& f : ix->feedlets()) lane[f.name] = f.id;
  }
  ~Imported() {
    ::unlink(path.c_str());
    ::unlink((path + ".idx").c_str());
  }
  std::vector<Item> items(StreamKind kind, const std::string& lane_name, const std::string& name) const {
    auto it = lane.find(lane_name);
    if (it == lane.end()) return {};
    int s = ix->find_stream(kind, it->second, name);
    return s < 0 ? std::vector<Item>{} : ix->items(s, 0, UINT64_MAX);
  }
  uint64_t count(StreamKind kind) const {
    uint64_t n = 0;
    for (auto& s : ix->streams())
      if (s.kind == kind) n += s.items;
    return n;
  }
};

constexpr uint64_t us = 1000;  // ticks are nanoseconds

// The lane has exactly one interval of that name, at [start, end] µs and that depth.
void expect_one_interval(const Imported& im, const std::string& lane, const std::string& name, uint64_t start,
                         uint64_t end, uint32_t depth) {
  auto v = im.items(StreamKind::Interval, lane, name);
  ASSERT_EQ(v.size(), 1u) << name;
  EXPECT_EQ(v[0].start, start * us) << name;
  EXPECT_EQ(v[0].end, end * us) << name;
  EXPECT_EQ(v[0].depth, depth) << name;
}

TEST(ChromeImport, SimpleTraceNestingCountersAndNames) {
  Imported im("simple_trace.json");
  ASSERT_TRUE(im.ix);
  EXPECT_EQ(im.result.events_read, 37u);
  EXPECT_EQ(im.result.unsupported["P"], 3u);  // samples: counted, reported, not silently lost
  for (const char* t : {"threadA", "threadB", "threadC"}) EXPECT_TRUE(im.lane.count(t)) << t;

  // threadA: X "Long X type" [820, 835] holds B "A long name..." [826, 833]
  // (closed by an E with an empty name), which holds "Asub with..." [827, 828].
  expect_one_interval(im, "threadA", "Long X type", 820, 835, 0);
  expect_one_interval(im, "threadA", "A long name that doesnt fit but is exceedingly informative", 826, 833, 1);
  expect_one_interval(im, "threadA", "Asub with a name that wont fit", 827, 828, 2);
  // Two X of the same time and duration: one inside the other, not lost.
  auto x1 = im.items(StreamKind::Interval, "threadA", "X1");
  auto x2 = im.items(StreamKind::Interval, "threadA", "X same ts and dur as X1");
  ASSERT_EQ(x1.size(), 1u);
  ASSERT_EQ(x2.size(), 1u);
  EXPECT_EQ(x1[0].start, 818 * us);
  EXPECT_EQ(x1[0].end, 820 * us);
  EXPECT_EQ(x1[0].depth + x2[0].depth, 1u);

  // The counter, in time order, on the process's counter lane.
  auto c = im.items(StreamKind::Counter, "pid 22630 counters", "counter");
  std::vector<std::pair<uint64_t, double>> got;
  for (auto& it : c) got.emplace_back(it.end / us, it.value);
  std::vector<std::pair<uint64_t, double>> want = {{826, 10}, {832, 1}, {839, 5}, {848, 1}, {854, 10}};
  EXPECT_EQ(got, want);
  // Process- and global-scoped instants have lanes of their own.
  EXPECT_EQ(im.items(StreamKind::Instant, "pid 22630 process", "ProcessWideEvent1").size(), 1u);
  EXPECT_EQ(im.items(StreamKind::Instant, "global", "GlobalEvent1").size(), 1u);
  EXPECT_EQ(im.items(StreamKind::Instant, "threadA", "ThreadLevelI1").size(), 1u);
}

TEST(ChromeImport, GzippedTrace) {
  Imported im("simple_trace_gz.gz");  // the same threads and slices, fewer instants
  ASSERT_TRUE(im.ix);
  for (const char* t : {"threadA", "threadB", "threadC"}) EXPECT_TRUE(im.lane.count(t)) << t;
  EXPECT_EQ(im.count(StreamKind::Interval), 8u + 4u);  // 8 B/E pairs, 4 X
  EXPECT_EQ(im.count(StreamKind::Counter), 5u);
  EXPECT_EQ(im.count(StreamKind::Instant), 4u);
  EXPECT_EQ(im.items(StreamKind::Interval, "threadA", "Asub with a name that wont fit")[0].depth, 2u);
}

TEST(ChromeImport, FlowsAcrossProcessesWithASteps) {
  Imported im("flow_simple.json");
  ASSERT_TRUE(im.ix);
  auto flows = im.ix->flows(0, UINT64_MAX);
  ASSERT_EQ(flows.size(), 3u);  // 8780d403: s -> f; 8780d402: s -> t -> f (two links)
  for (auto& f : flows) EXPECT_TRUE(f.matched());
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> by_send;
  for (auto& f : flows) by_send[f.send_ts / us] = {f.recv_ts / us, f.dst};
  EXPECT_EQ(by_send[1].first, 1001u);
  EXPECT_EQ(by_send[3002].first, 3220u);
  EXPECT_EQ(by_send[3220].first, 3330u);
  EXPECT_EQ(by_send[3002].second, im.lane.at("tid 15794"));
  EXPECT_EQ(by_send[3220].second, im.lane.at("tid 15894"));
  // The slices are there too.
  EXPECT_EQ(im.items(StreamKind::Interval, "tid 15894", "SomeSlice").size(), 1u);
}

TEST(ChromeImport, CountersWithIds) {
  Imported im("instance_counters.json");
  ASSERT_TRUE(im.ix);
  auto a = im.items(StreamKind::Counter, "pid 52 counters", "counter[123]");
  auto b = im.items(StreamKind::Counter, "pid 52 counters", "counter[b]");
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 2u);
  std::vector<double> va;
  for (auto& it : a) va.push_back(it.value);
  EXPECT_EQ(va, (std::vector<double>{2, 10, 5, 8, 4, 10}));
  EXPECT_EQ(b[1].value, 0);
  EXPECT_EQ(im.items(StreamKind::Interval, "tid 53", "a").size(), 1u);
}

TEST(ChromeImport, AsyncLanesNest) {
  Imported im("nestable_async.json");
  ASSERT_TRUE(im.ix);
  uint32_t deepest = 0;
  uint64_t intervals = 0;
  for (auto& s : im.ix->streams()) {
    if (s.kind != StreamKind::Interval) continue;
    int id = im.ix->find_stream(s.kind, s.feedlet, s.key);
    for (auto& it : im.ix->items(id, 0, UINT64_MAX)) deepest = std::max(deepest, it.depth), ++intervals;
  }
  EXPECT_GE(intervals, 8u);
  EXPECT_GE(deepest, 1u);
  bool async_lane = false;
  for (auto& [name, id] : im.lane) async_lane |= name.find("async") != std::string::npos;
  EXPECT_TRUE(async_lane);
}

TEST(ChromeImport, BigTracesAndThreadNames) {
  Imported big("big_trace.json");
  ASSERT_TRUE(big.ix);
  EXPECT_EQ(big.count(StreamKind::Interval), 933u);  // every B/E pair
  EXPECT_EQ(big.result.unmatched_ends, 0u);

  Imported web("webview.json.gz");
  ASSERT_TRUE(web.ix);
  EXPECT_EQ(web.result.events_read, 9334u);
  EXPECT_EQ(web.result.unsupported["O"], 14u);
  EXPECT_EQ(web.result.unsupported["N"], 2u);
  EXPECT_EQ(web.result.unsupported["c"], 1u);
  EXPECT_TRUE(web.lane.count("ScriptStreamerThread"));
  EXPECT_TRUE(web.lane.count("CookieMonsterBackend"));
  // Every X and every B/E pair became an interval (R and I are instants).
  EXPECT_EQ(web.count(StreamKind::Interval), 8041u + 568u + 5u);
  EXPECT_EQ(web.count(StreamKind::Instant), 73u + 14u);

  Imported tall("tall_trace.json");
  ASSERT_TRUE(tall.ix);
  EXPECT_TRUE(tall.lane.count("threadA"));
  EXPECT_TRUE(tall.lane.count("thread12345678B"));
  EXPECT_EQ(tall.ix->catalog().metadata.at("feedlet." + std::to_string(tall.lane.at("threadA")) + ".process"),
            "processA");
}

TEST(ChromeImport, NanosecondTimestampsKeepTheirPrecision) {
  Imported im("nanoseconds.json");
  ASSERT_TRUE(im.ix);
  EXPECT_EQ(im.result.display_time_unit, "ns");
  EXPECT_EQ(im.ix->catalog().metadata.at("displayTimeUnit"), "ns");
  auto us1 = im.items(StreamKind::Interval, "tid 1", "us1");
  ASSERT_EQ(us1.size(), 1u);
  EXPECT_EQ(us1[0].end - us1[0].start, 1100u);  // 1.1 µs
}

TEST(ChromeImport, BadInputGetsAClearError) {
  std::string dir = ::testing::TempDir();
  std::string out = temp_path("import_bad");
  ::unlink(out.c_str());
  index::ImportResult r;
  std::string error;
  // Garbage: no trace, an error naming the file and the byte.
  std::string garbage = dir + "/garbage.json";
  write_file(garbage, "{\"traceEvents\": [ {\"ph\": \"B\", \"ts\": 1,, ]");
  EXPECT_FALSE(index::import_chrome_json(garbage, out, r, error));
  EXPECT_NE(error.find(garbage), std::string::npos) << error;
  EXPECT_NE(error.find("byte"), std::string::npos) << error;
  EXPECT_NE(::access(out.c_str(), F_OK), 0);

  // Cut short in the middle of an event: every complete event is kept.
  std::string cut = dir + "/cut.json";
  std::string text = slurp(sample("big_trace.json"));
  write_file(cut, text.substr(0, text.size() / 2));
  r = {};
  ASSERT_TRUE(index::import_chrome_json(cut, out, r, error)) << error;
  EXPECT_FALSE(r.warning.empty());
  EXPECT_GT(r.events_read, 800u);
  EXPECT_LT(r.events_read, 1866u);

  // Never writes over a file.
  std::string before = slurp(out);
  r = {};
  EXPECT_FALSE(index::import_chrome_json(sample("trivial_trace.json"), out, r, error));
  EXPECT_NE(error.find("never writes over"), std::string::npos) << error;
  EXPECT_EQ(slurp(out), before);
  ::unlink(out.c_str());
  ::unlink(garbage.c_str());
  ::unlink(cut.c_str());
}

}  // namespace
}  // namespace tinescope::test
