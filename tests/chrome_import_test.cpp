// The importer on the real samples in ../shared/samples (Chrome JSON, ftrace
// text, systrace HTML) and on Grasp traces after the Grasp paper's examples
// (tests/data/grasp): thread names, interval nesting, counters, flows, CPU
// slices and aligned clocks, checked through the index.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>

#include "tinescope/analysis/derived_stream.hpp"
#include "tinescope/analysis/event_details.hpp"
#include "tinescope/analysis/sched_check.hpp"
#include "tinescope/import/trace_import.hpp"
#include "tinescope/index/trace_index.hpp"
#include "import_helpers.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

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
  EXPECT_TRUE(im.result.unsupported.empty());
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
  // Samples are instants on their thread, named by their leaf frame when
  // "stackFrames" (after the events, here) names it: SampleC's "sf" 8 is frame8.
  for (auto [name, at] : {std::pair<const char*, uint64_t>{"SampleA", 870}, {"SampleB", 875}, {"frame8", 878}}) {
    auto v = im.items(StreamKind::Instant, "threadB", name);
    ASSERT_EQ(v.size(), 1u) << name;
    EXPECT_EQ(v[0].end, at * us) << name;
  }
  EXPECT_TRUE(im.items(StreamKind::Instant, "threadB", "SampleC").empty());
}

// Objects (N, O, D): a lifetime per object, keyed by process, scope and id,
// named by its type on a lane of its type (more where lifetimes overlap);
// snapshots as instants on it; samples (P) named by their leaf stack frame.
TEST(ChromeImport, ObjectLifetimesAndSnapshotsAndSamplesByFrame) {
  const std::string json = R"({"stackFrames": {"1": {"name": "main"}, "2": {"name": "draw", "parent": "1"}},
"traceEvents": [
{"ph":"N","pid":1,"tid":1,"ts":10,"id":"0x1","name":"Layer","cat":"cc"},
{"ph":"O","pid":1,"tid":1,"ts":15,"id":"0x1","name":"Layer","cat":"cc","args":{"snapshot":{"w":1}}},
{"ph":"D","pid":1,"tid":2,"ts":30,"id":"0x1","name":"Layer","cat":"cc"},
{"ph":"N","pid":1,"tid":1,"ts":40,"id":"0x1","name":"Layer","cat":"cc"},
{"ph":"N","pid":1,"tid":1,"ts":50,"id":"0x1","name":"Layer","cat":"cc"},
{"ph":"D","pid":1,"tid":1,"ts":70,"id":"0x1","name":"Layer","cat":"cc"},
{"ph":"N","pid":1,"tid":1,"ts":20,"id":"0x1","name":"Tile","cat":"cc","scope":"tiles"},
{"ph":"D","pid":1,"tid":1,"ts":25,"id":"0x1","name":"Tile","cat":"cc","scope":"tiles"},
{"ph":"N","pid":2,"tid":3,"ts":12,"id":"0x1","name":"Layer","cat":"cc"},
{"ph":"O","pid":2,"tid":3,"ts":60,"id":"0x9","name":"Layer","cat":"cc","args":{"snapshot":{}}},
{"ph":"D","pid":2,"tid":3,"ts":80,"id":"0x9","name":"Layer","cat":"cc"},
{"ph":"D","pid":2,"tid":3,"ts":90,"id":"0x7","name":"Layer","cat":"cc"},
{"ph":"P","pid":1,"tid":1,"ts":33,"name":"cpu","sf":2},
{"ph":"P","pid":1,"tid":1,"ts":34,"name":"cpu","sf":"1"},
{"ph":"P","pid":1,"tid":1,"ts":35,"name":"cpu","sf":77},
{"ph":"P","pid":1,"tid":1,"ts":36,"name":"idle"},
{"ph":"M","pid":1,"tid":1,"name":"process_name","args":{"name":"Renderer"}},
{"ph":"M","pid":1,"tid":1,"name":"process_labels","args":{"labels":"example.com, tab 2"}},
{"ph":"M","pid":2,"tid":3,"name":"process_labels","args":{"labels":"extension"}},
{"ph":"M","pid":1,"tid":0,"name":"num_cpus","args":{"number":6}}
]})";
  const std::string in = temp_path("objects.json");
  write_file(in, json);
  Imported im(AtPath{in}, "objects");
  ASSERT_TRUE(im.ix);
  EXPECT_TRUE(im.result.unsupported.empty());
  EXPECT_EQ(im.result.unmatched_ends, 1u) << "the D of 0x7, never created";
  const std::string layers = "Renderer: example.com, tab 2 objects Layer";
  ASSERT_TRUE(im.lane.count(layers));
  // 0x1: created at 10, deleted at 30; created again at 40, and again at 50
  // while alive (an address reused): the first ends there; deleted at 70.
  std::vector<std::pair<uint64_t, uint64_t>> got;
  for (const Item& it : im.items(StreamKind::Interval, layers, "Layer")) got.emplace_back(it.start / us, it.end / us);
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, uint64_t>>{{10, 30}, {40, 50}, {50, 70}}));
  auto snapshots = im.items(StreamKind::Instant, layers, "Layer");
  ASSERT_EQ(snapshots.size(), 1u);
  EXPECT_EQ(snapshots[0].end, 15 * us);
  // Another scope's 0x1 is another object, on its own type's lane.
  expect_one_interval(im, "Renderer: example.com, tab 2 objects Tile", "Tile", 20, 25, 0);
  // Another process's 0x1 is another object: never deleted, it is still
  // open at the end. Its 0x9 begins at its first snapshot, while 0x1 is
  // alive: on the type's second lane.
  const std::string other = "pid 2: extension objects Layer";
  ASSERT_TRUE(im.lane.count(other));
  auto open = im.ix->open_at(im.lane.at(other), 100 * us);
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].start, 12 * us);
  EXPECT_TRUE(im.items(StreamKind::Interval, other, "Layer").empty());
  expect_one_interval(im, other + " #2", "Layer", 60, 80, 0);
  EXPECT_EQ(im.items(StreamKind::Instant, other + " #2", "Layer").size(), 1u);
  EXPECT_EQ(im.lane.size(), 5u) << "tid 1, Layer, Tile; pid 2's Layer and Layer #2";
  // Samples: by their leaf frame (a number or a string id), else by their name.
  std::vector<std::pair<std::string, uint64_t>> samples;
  for (const char* name : {"draw", "main", "cpu", "idle"})
    for (const Item& it : im.items(StreamKind::Instant, "tid 1", name)) samples.emplace_back(name, it.end / us);
  EXPECT_EQ(samples, (std::vector<std::pair<std::string, uint64_t>>{{"draw", 33}, {"main", 34}, {"cpu", 35}, {"idle", 36}}));
  EXPECT_EQ(im.ix->catalog().metadata.at("num_cpus"), "6");
  EXPECT_EQ(im.ix->catalog().metadata.at("feedlet." + std::to_string(im.lane.at(layers)) + ".process"),
            "Renderer: example.com, tab 2");
  ::unlink(in.c_str());
}

TEST(ChromeImport, GzippedTrace) {
  Imported im("simple_trace_gz.gz");  // the same threads and slices, fewer instants
  ASSERT_TRUE(im.ix);
  for (const char* t : {"threadA", "threadB", "threadC"}) EXPECT_TRUE(im.lane.count(t)) << t;
  EXPECT_EQ(im.count(StreamKind::Interval), 8u + 4u);  // 8 B/E pairs, 4 X
  EXPECT_EQ(im.count(StreamKind::Counter), 5u);
  EXPECT_EQ(im.count(StreamKind::Instant), 4u + 3u);  // and 3 samples
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
  // Its 'f' at 3330 binds to the next slice of its thread, SomeSlice at 3331.
  EXPECT_EQ(by_send[3220].first, 3331u);
  EXPECT_EQ(by_send[3002].second, im.lane.at("tid 15794"));
  EXPECT_EQ(by_send[3220].second, im.lane.at("tid 15894"));
  // The slices are there too.
  EXPECT_EQ(im.items(StreamKind::Interval, "tid 15894", "SomeSlice").size(), 1u);
}

// Trust, fault 8: an end or a step whose id has no flow open (it ended, or
// never began) is an unmatched end, counted, never a second receive of the
// send that was already received. Ids are reused, as real traces do.
TEST(ChromeImport, AFlowEndWithNoFlowOpenIsCountedNotAnArrow) {
  const std::string in = temp_path("reused_flow_ids.json");
  write_file(in, R"([
    {"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":100},
    {"ph":"X","name":"b","pid":1,"tid":2,"ts":0,"dur":1000},
    {"ph":"s","name":"m","cat":"c","id":7,"pid":1,"tid":1,"ts":10,"bp":"e"},
    {"ph":"f","name":"m","cat":"c","id":7,"pid":1,"tid":2,"ts":20,"bp":"e"},
    {"ph":"f","name":"m","cat":"c","id":7,"pid":1,"tid":2,"ts":30,"bp":"e"},
    {"ph":"t","name":"m","cat":"c","id":7,"pid":1,"tid":2,"ts":40,"bp":"e"},
    {"ph":"f","name":"m","cat":"c","id":7,"pid":1,"tid":1,"ts":50,"bp":"e"},
    {"ph":"f","name":"m","cat":"c","id":9,"pid":1,"tid":2,"ts":60,"bp":"e"},
    {"ph":"s","name":"m","cat":"c","id":7,"pid":1,"tid":1,"ts":70,"bp":"e"},
    {"ph":"f","name":"m","cat":"c","id":7,"pid":1,"tid":2,"ts":80,"bp":"e"}])");
  Imported im(AtPath{in}, "reused_flow_ids");
  ASSERT_TRUE(im.ix);
  // The flows: 10 -> 20, (the end at 30: none open), the step at 40 (none
  // open) -> 50, (id 9's end: never began), 70 -> 80.
  EXPECT_EQ(im.result.unmatched_flow_ends, 3u);
  std::map<uint64_t, uint64_t> recv_of_send;
  size_t received = 0;
  for (const index::Flow& f : im.ix->flows(0, UINT64_MAX)) {
    if (f.flags & index::kFlowReceived) ++received;
    if (f.matched()) recv_of_send[f.send_ts / us] = f.recv_ts / us;
  }
  EXPECT_EQ(received, 3u) << "three receives, not five";
  EXPECT_EQ(recv_of_send, (std::map<uint64_t, uint64_t>{{10, 20}, {40, 50}, {70, 80}}));
  ::unlink(in.c_str());
}

// A flow's end binds to the next slice its thread starts at or after it
// (the format's default, as Perfetto's importer binds it), or with "bp":
// "e" to the slice around it; with no slice after it, it stays where it is.
// Starts and steps bind to the slice around them.
TEST(ChromeImport, FlowEndsBindToTheNextSliceUnlessToldTheEnclosingOne) {
  const std::string json = R"([
{"ph":"X","pid":1,"tid":1,"ts":0,"dur":10,"name":"post"},
{"ph":"s","pid":1,"tid":1,"ts":5,"id":1,"name":"task","cat":"c"},
{"ph":"s","pid":1,"tid":1,"ts":6,"id":2,"name":"task","cat":"c"},
{"ph":"s","pid":1,"tid":1,"ts":7,"id":3,"name":"task","cat":"c"},
{"ph":"X","pid":1,"tid":2,"ts":20,"dur":5,"name":"busy"},
{"ph":"f","pid":1,"tid":2,"ts":22,"id":1,"name":"task","cat":"c"},
{"ph":"f","pid":1,"tid":2,"ts":23,"id":2,"name":"task","cat":"c","bp":"e"},
{"ph":"B","pid":1,"tid":2,"ts":40,"name":"run"},
{"ph":"E","pid":1,"tid":2,"ts":50},
{"ph":"f","pid":1,"tid":2,"ts":60,"id":3,"name":"task","cat":"c"}
])";
  const std::string in = temp_path("bind_points.json");
  write_file(in, json);
  Imported im(AtPath{in}, "bind_points");
  ASSERT_TRUE(im.ix);
  std::map<uint64_t, uint64_t> recv_of_send;  // send us -> receive us
  for (const index::Flow& f : im.ix->flows(0, UINT64_MAX)) {
    ASSERT_TRUE(f.matched());
    EXPECT_EQ(f.dst, im.lane.at("tid 2"));
    recv_of_send[f.send_ts / us] = f.recv_ts / us;
  }
  EXPECT_EQ(recv_of_send, (std::map<uint64_t, uint64_t>{{5, 40}, {6, 23}, {7, 60}}))
      << "id 1 to the next slice (run at 40), id 2 in busy (bp e), id 3 with no slice after it";
  ::unlink(in.c_str());
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

// Async events pair by category and id, an end with the innermost open
// begin of its name (Catapult pairs S/F by name and id); an id's nested
// intervals go on one lane "PROCESS async NAME", named by the outermost.
TEST(ChromeImport, AsyncLanesNest) {
  Imported im("nestable_async.json");
  ASSERT_TRUE(im.ix);
  auto one = [&](const std::string& lane, const std::string& name) {
    const auto v = im.items(StreamKind::Interval, lane, name);
    EXPECT_EQ(v.size(), 1u) << lane << " " << name;
    return v.empty() ? Item{} : v[0];
  };
  const std::string bar = "pid 26037 async REQUEST_BAR", foo = "pid 26037 async REQUEST_FOO";
  EXPECT_EQ(im.lane.size(), 2u);
  // REQUEST_BAR's end closes it, not the begin left open inside it (which
  // ends with it); its children nest in it.
  const Item request_bar = one(bar, "REQUEST_BAR");
  EXPECT_EQ(request_bar.start, 10 * us);
  EXPECT_EQ(request_bar.end, 100 * us);
  EXPECT_EQ(request_bar.depth, 0u);
  EXPECT_EQ(one(bar, "URL_REQUEST_INNER").depth, 2u);
  const Item left_open = one(bar, "URL_REQUEST_DELEGATE_UNMATCHED_BEGIN");
  EXPECT_EQ(left_open.start, 80 * us);
  EXPECT_EQ(left_open.end, 100 * us);
  EXPECT_EQ(left_open.depth, 1u);
  // An end of a name never begun is counted, and closes nothing.
  const Item request_foo = one(foo, "REQUEST_FOO");
  EXPECT_EQ(request_foo.start, 110 * us);
  EXPECT_EQ(request_foo.end, 200 * us);
  EXPECT_EQ(im.items(StreamKind::Interval, foo, "URL_REQUEST_DELEGATE_UNMATCHED_END").size(), 0u);
  EXPECT_EQ(im.result.unmatched_ends, 1u);
  EXPECT_EQ(im.items(StreamKind::Instant, foo, "URL_REQUEST_INSTANT").size(), 1u);
}

// Lanes follow what runs at once, not how many ids or objects there are:
// 20 000 requests, at most 3 at a time, take 3 lanes (a lane an id took
// 20 000 lanes, and their index gigabytes); 100 objects never deleted take
// at most 32, sharing the last ones, with every lifetime kept.
TEST(ChromeImport, AsyncIdsAndObjectsShareLanesAsTheyRunAtOnce) {
  std::string json = "[";
  for (int i = 0; i < 20000; ++i) {
    const int start = i * 10;  // each runs 25 us: 3 at once
    json += R"({"ph":"b","cat":"net","name":"Request","pid":1,"tid":1,"id":")" + std::to_string(i) +
            R"(","ts":)" + std::to_string(start) + "},";
    json += R"({"ph":"e","cat":"net","name":"Request","pid":1,"tid":1,"id":")" + std::to_string(i) +
            R"(","ts":)" + std::to_string(start + 25) + "},";
  }
  for (int i = 0; i < 100; ++i)
    json += R"({"ph":"N","name":"Tile","pid":1,"tid":1,"id":")" + std::to_string(i) + R"(","ts":)" +
            std::to_string(i) + "},";
  json += R"({"ph":"X","name":"end","pid":1,"tid":1,"ts":300000,"dur":1}])";
  const std::string in = temp_path("many_ids.json");
  write_file(in, json);
  Imported im(AtPath{in}, "many_ids");
  ASSERT_TRUE(im.ix);
  std::vector<std::string> request_lanes, tile_lanes;
  for (const auto& [lane, id] : im.lane) {
    if (lane.rfind("pid 1 async Request", 0) == 0) request_lanes.push_back(lane);
    if (lane.rfind("pid 1 objects Tile", 0) == 0) tile_lanes.push_back(lane);
  }
  EXPECT_EQ(request_lanes, (std::vector<std::string>{"pid 1 async Request", "pid 1 async Request #2",
                                                     "pid 1 async Request #3"}));
  uint64_t requests = 0;
  for (const std::string& lane : request_lanes)
    for (const Item& it : im.items(StreamKind::Interval, lane, "Request")) {
      EXPECT_EQ(it.end - it.start, 25 * us);
      EXPECT_EQ(it.depth, 0u) << lane << " at " << it.start;
      ++requests;
    }
  EXPECT_EQ(requests, 20000u);
  EXPECT_EQ(tile_lanes.size(), 32u);
  size_t alive = 0;
  for (const std::string& lane : tile_lanes) alive += im.ix->open_at(im.lane.at(lane), 300 * 1000 * us).size();
  EXPECT_EQ(alive, 100u);
  EXPECT_LE(im.ix->streams().size(), 2u * (3u + 32u + 1u)) << "streams a lane, not an id";
  ::unlink(in.c_str());
}

// Legacy async events (S/T/F) with one id in several processes are one
// operation: "E" begins in pid 2 and ends in pid 3; "A" begins in pid 1 and
// has its steps in pid 3. Only "D" ends with no begin anywhere.
TEST(ChromeImport, AsyncIdsPairAcrossProcesses) {
  Imported im("async_begin_end.json");
  ASSERT_TRUE(im.ix);
  EXPECT_EQ(im.result.unmatched_ends, 1u);
  // Two E of two ids overlap (500-700, 600-800): two lanes of pid 2's E.
  const auto e1 = im.items(StreamKind::Interval, "pid 2 async E", "E");
  ASSERT_EQ(e1.size(), 1u);
  EXPECT_EQ(e1[0].start, 500 * us);
  EXPECT_EQ(e1[0].end, 700 * us);
  const auto e2 = im.items(StreamKind::Interval, "pid 2 async E #2", "E");
  ASSERT_EQ(e2.size(), 1u);
  EXPECT_EQ(e2[0].end, 800 * us);
  // A of id 2a (250-750) overlaps another A (50-900): the second lane.
  const auto a = im.items(StreamKind::Interval, "pid 1 async A #2", "A");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].start, 250 * us);
  EXPECT_EQ(a[0].end, 750 * us);
  EXPECT_EQ(im.items(StreamKind::Instant, "pid 1 async A #2", "A").size(), 2u) << "its steps, on its lane";
  for (const auto& [lane, id] : im.lane) EXPECT_EQ(lane.find("pid 3 "), std::string::npos) << lane;
  // Three S/F pairs in turn with one id, each with its step: one lane.
  EXPECT_EQ(im.items(StreamKind::Interval, "pid 4 async F", "F").size(), 3u);
  EXPECT_EQ(im.items(StreamKind::Instant, "pid 4 async F", "F").size(), 3u);
  EXPECT_EQ(im.lane.size(), 11u);
}

TEST(ChromeImport, BigTracesAndThreadNames) {
  Imported big("big_trace.json");
  ASSERT_TRUE(big.ix);
  EXPECT_EQ(big.count(StreamKind::Interval), 933u);  // every B/E pair
  EXPECT_EQ(big.result.unmatched_ends, 0u);

  Imported web("webview.json.gz");
  ASSERT_TRUE(web.ix);
  EXPECT_EQ(web.result.events_read, 9334u);
  EXPECT_EQ(web.result.unsupported, (std::map<std::string, uint64_t>{{"c", 1}}));  // clock sync: counted
  // The browser's two objects, each with its snapshots, under its labelled name.
  const std::string loader = "Browser: Rihanna objects FrameLoader", node = "Browser: Rihanna objects FrameTreeNode";
  EXPECT_EQ(web.items(StreamKind::Instant, loader, "FrameLoader").size(), 11u);
  EXPECT_EQ(web.items(StreamKind::Instant, node, "FrameTreeNode").size(), 3u);
  for (const std::string& lane : {loader, node}) {
    auto open = web.ix->open_at(web.lane.at(lane), UINT64_MAX - 1);
    ASSERT_EQ(open.size(), 1u) << lane << ": created, never deleted";
  }
  EXPECT_EQ(web.ix->catalog().metadata.at("num_cpus"), "6");
  EXPECT_TRUE(web.lane.count("ScriptStreamerThread"));
  EXPECT_TRUE(web.lane.count("CookieMonsterBackend"));
  // Every X and every B/E pair became an interval (R and I are instants).
  EXPECT_EQ(web.count(StreamKind::Interval), 8041u + 568u + 5u);
  EXPECT_EQ(web.count(StreamKind::Instant), 73u + 14u + 14u);  // and the objects' snapshots

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

// A lane of hundreds of thousands of events: its arrays grow past the
// importer's 4 MB mark, where they move from the heap to mappings that grow
// in place (bulk_array.hpp), and every event must come through that whole
// and in order.
TEST(ChromeImport, ALaneOfHundredsOfThousandsOfEventsComesThroughWhole) {
  constexpr uint64_t kN = 200'000;  // 6.4 MB of spans and of points
  const std::string json = temp_path("import_big_lane.json");
  {
    FILE* f = std::fopen(json.c_str(), "w");
    ASSERT_TRUE(f);
    std::fputs("[\n", f);
    for (uint64_t i = 0; i < kN; ++i) {
      // A complete event (an outer one every 1000) and a counter after it.
      std::fprintf(f, "{\"name\":\"%s\",\"ph\":\"X\",\"ts\":%" PRIu64 ".5,\"dur\":%s,\"pid\":1,\"tid\":7},\n",
                   i % 1000 == 0 ? "outer" : "work", i * 10, i % 1000 == 0 ? "9999" : "2.25");
      std::fprintf(f, "{\"name\":\"v\",\"ph\":\"C\",\"ts\":%" PRIu64 ".75,\"pid\":1,\"args\":{\"x\":%" PRIu64 "}}%s\n",
                   i * 10 + 3, i, i + 1 < kN ? "," : "");
    }
    std::fputs("]\n", f);
    ASSERT_EQ(std::fclose(f), 0);
  }
  Imported im(AtPath{json}, "big_lane");
  ::unlink(json.c_str());
  ASSERT_TRUE(im.ix);
  EXPECT_EQ(im.result.events_read, 2 * kN);
  EXPECT_EQ(im.result.unmatched_ends, 0u);

  const auto work = im.items(StreamKind::Interval, "tid 7", "work");
  const auto outer = im.items(StreamKind::Interval, "tid 7", "outer");
  ASSERT_EQ(work.size(), kN - kN / 1000);
  ASSERT_EQ(outer.size(), kN / 1000);
  for (size_t k = 0, i = 0; i < kN; ++i) {
    if (i % 1000 == 0) continue;
    const Item& w = work[k++];
    ASSERT_EQ(w.start, i * 10 * us + 500) << i;
    ASSERT_EQ(w.end, w.start + 2250) << i;
    ASSERT_EQ(w.depth, 1u) << i;  // inside its outer one
  }
  for (size_t j = 0; j < outer.size(); ++j) {
    ASSERT_EQ(outer[j].start, j * 1000 * 10 * us + 500) << j;
    ASSERT_EQ(outer[j].depth, 0u) << j;
  }
  const auto v = im.items(StreamKind::Counter, "pid 1 counters", "v");
  ASSERT_EQ(v.size(), kN);
  for (uint64_t i = 0; i < kN; ++i) {
    ASSERT_EQ(v[i].end, (i * 10 + 3) * us + 750) << i;
    ASSERT_EQ(v[i].value, double(i)) << i;
  }
}

// Begins and ends (held packed per lane, import_model.hpp's BeginEndLog)
// against a plain pairing: random nesting on several threads, ties at one
// time, gaps of days and of nanoseconds, arguments on some, and one lane
// whose events come in a shuffled order (sorted at the write). Every
// interval must come back with its times, name, depth and arguments; the
// arguments also where intervals of one name begin or end at one time
// nested (item_events tells their events apart by depth).
TEST(ChromeImport, BeginsAndEndsPairAsAPlainStackSaysOnRandomLanes) {
  std::mt19937_64 rng(11);
  struct Want {
    uint64_t start, end;  // ns
    uint32_t depth;
    std::string arg;  // its begin's argument "k", or ""
  };
  std::map<std::pair<std::string, std::string>, std::vector<Want>> want;  // (lane, name) -> intervals
  std::vector<std::string> events;
  for (int tid = 1; tid <= 4; ++tid) {
    const bool shuffled = tid == 4;
    std::string lane = "tid ";
    lane += std::to_string(tid);
    uint64_t t = 4'000'000'000'000 + uint64_t(tid) * 1000;  // µs: some 46 days in
    struct Open {
      uint64_t start;
      std::string name, arg;
    };
    std::vector<Open> stack;
    std::vector<std::string> lane_events;
    bool last_begin = false;
    for (int i = 0; i < 3000 || !stack.empty(); ++i) {
      const bool begin = i < 3000 && (stack.empty() || (stack.size() < 40 && rng() % 2));
      // Ties at one time (begins after begins, ends after ends) only where
      // the file order is the events' order.
      uint64_t gap = rng() % 50 == 0 ? rng() % (uint64_t(1) << 30) : rng() % 3;
      if (shuffled || begin != last_begin) gap = std::max<uint64_t>(gap, 1);
      t += gap, last_begin = begin;
      char line[200];
      if (begin) {
        const std::string name(1, char('a' + rng() % 5));
        const std::string arg = rng() % 3 == 0 ? std::to_string(rng() % 100000) : "";
        std::snprintf(line, sizeof line, R"({"name":"%s","ph":"B","ts":%)" PRIu64 R"(,"pid":1,"tid":%d%s%s%s})",
                      name.c_str(), t, tid, arg.empty() ? "" : R"(,"args":{"k":)", arg.c_str(), arg.empty() ? "" : "}");
        stack.push_back(Open{t * us, name, arg});
      } else {
        std::snprintf(line, sizeof line, R"({"ph":"E","ts":%)" PRIu64 R"(,"pid":1,"tid":%d})", t, tid);
        const Open o = stack.back();
        stack.pop_back();
        want[{lane, o.name}].push_back(Want{o.start, t * us, uint32_t(stack.size()), o.arg});
      }
      lane_events.push_back(line);
    }
    if (shuffled) std::shuffle(lane_events.begin(), lane_events.end(), rng);
    events.insert(events.end(), lane_events.begin(), lane_events.end());
  }
  const std::string json = temp_path("import_random_pairs.json");
  {
    std::ofstream f(json);
    f << "[\n";
    for (size_t i = 0; i < events.size(); ++i) f << events[i] << (i + 1 < events.size() ? ",\n" : "\n");
    f << "]\n";
  }
  Imported im(AtPath{json}, "random_pairs");
  ::unlink(json.c_str());
  ASSERT_TRUE(im.ix);
  EXPECT_EQ(im.result.unmatched_ends, 0u);
  size_t checked = 0, total = 0, with_args = 0;
  for (auto& [key, intervals] : want) total += intervals.size();
  ASSERT_GT(total, 4000u);
  for (auto& [key, intervals] : want) {
    auto got = im.items(StreamKind::Interval, key.first, key.second);
    auto order = [](const Want& a, const Want& b) { return a.start != b.start ? a.start < b.start : a.depth < b.depth; };
    std::sort(intervals.begin(), intervals.end(), order);
    std::sort(got.begin(), got.end(), [](const Item& a, const Item& b) {
      return a.start != b.start ? a.start < b.start : a.depth < b.depth;
    });
    ASSERT_EQ(got.size(), intervals.size()) << key.first << " " << key.second;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].start, intervals[i].start) << key.first << " " << key.second << " #" << i;
      ASSERT_EQ(got[i].end, intervals[i].end) << key.first << " " << key.second << " #" << i;
      ASSERT_EQ(got[i].depth, intervals[i].depth) << key.first << " " << key.second << " #" << i;
      ++checked;
      if (intervals[i].arg.empty() || i % 4) continue;  // (a quarter of those with arguments, read back)
      std::vector<analysis::EventView> ev;
      std::string why;
      ASSERT_TRUE(analysis::item_events(*im.ix, im.lane.at(key.first), got[i], ev, why)) << why;
      std::string k;
      for (auto& e : ev)
        for (auto& a : e.args)
          if (a.name == "k") k = a.text;
      EXPECT_EQ(k, intervals[i].arg) << key.first << " " << key.second << " #" << i;
      ++with_args;
    }
  }
  EXPECT_EQ(checked, total);
  EXPECT_GT(with_args, 100u);
}

// ---- ftrace text and the trace viewer's HTML

// ns from ftrace's "seconds.micros", as the importer rounds them.
uint64_t ftrace_ns(const std::string& seconds) { return uint64_t(std::llround(std::stod(seconds) * 1e6 * 1000.0)); }

struct SwitchLine {
  std::string ts, prev_pid, next_comm, next_pid, prev_state;
};

// The sample's sched_switch lines, read here with nothing but string search.
std::vector<SwitchLine> switch_lines(const std::string& text) {
  std::vector<SwitchLine> out;
  size_t at = 0;
  while ((at = text.find("sched_switch: ", at)) != std::string::npos) {
    size_t line_start = text.rfind('\n', at) + 1, line_end = text.find('\n', at);
    std::string line = text.substr(line_start, line_end - line_start);
    at = line_end;
    auto value = [&](const std::string& key, const std::string& until) {
      size_t k = line.find(key) + key.size();
      return line.substr(k, line.find(until, k) - k);
    };
    size_t colon = line.find(": sched_switch");
    size_t space = line.rfind(' ', colon);
    out.push_back({line.substr(space + 1, colon - space - 1), value("prev_pid=", " "), value("next_comm=", " next_pid="),
                   value("next_pid=", " "), value("prev_state=", " ")});
  }
  return out;
}

TEST(FtraceImport, SchedSwitchMakesCpuSlicesAndWakeupsMakeFlows) {
  Imported im("android_systrace.txt", "ftrace");
  ASSERT_TRUE(im.ix);
  const std::string text = slurp(sample("android_systrace.txt", "ftrace"));
  const std::vector<SwitchLine> switches = switch_lines(text);
  ASSERT_EQ(switches.size(), 58u);
  size_t wakeups = 0;
  for (size_t at = 0; (at = text.find("sched_wakeup: ", at)) != std::string::npos; ++at) ++wakeups;
  EXPECT_EQ(im.result.events_read, switches.size() + wakeups);
  EXPECT_TRUE(im.result.unsupported.empty());
  size_t cpu_lanes = 0;
  for (const auto& [name, id] : im.lane) cpu_lanes += name.rfind("CPU ", 0) == 0;
  ASSERT_EQ(cpu_lanes, 1u);  // every line is on CPU 0
  ASSERT_TRUE(im.lane.count("CPU 0"));

  // Replayed here: each switch ends the slice the one before it started
  // (the first one's start is before the trace), and the last runs to the end.
  std::vector<Item> want;
  for (size_t i = 1; i < switches.size(); ++i) {
    const SwitchLine& a = switches[i - 1];
    if (a.next_pid == "0" || a.next_pid != switches[i].prev_pid) continue;
    Item it;
    it.name = 0;
    it.start = ftrace_ns(a.ts), it.end = ftrace_ns(switches[i].ts);
    want.push_back(it);
  }
  std::vector<Item> got = im.lane_intervals("CPU 0");
  ASSERT_GE(got.size(), want.size());
  // The last switch's thread still runs when the trace ends: open (drawn to
  // the end), not a slice cut at the last line that statistics would count.
  EXPECT_EQ(got.size(), want.size());
  ASSERT_NE(switches.back().next_pid, "0");
  const uint32_t cpu0 = im.lane.at("CPU 0");
  const auto open = im.ix->open_at(cpu0, im.ix->last_ts());
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].start, ftrace_ns(switches.back().ts));
  EXPECT_EQ(im.ix->catalog().string(open[0].name), switches.back().next_comm + "-" + switches.back().next_pid);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].start, want[i].start) << i;
    EXPECT_EQ(got[i].end, want[i].end) << i;
    EXPECT_EQ(got[i].depth, 0u) << "a CPU runs one thread at a time";
  }
  // Each slice's end keeps the state its thread left in (ftrace's
  // prev_state): where= picks the preempted (R, R+) ones and the sleeping.
  for (const char* state : {"R*", "S"}) {
    size_t n = 0;
    for (size_t i = 1; i < switches.size(); ++i)
      n += switches[i - 1].next_pid != "0" && switches[i - 1].next_pid == switches[i].prev_pid &&
           analysis::NameMatcher(state).matches(switches[i].prev_state);
    std::string error;
    analysis::Expr e;
    ASSERT_TRUE(analysis::parse_stream(std::string("intervals(thread=\"CPU 0\", where=\"prev_state = ") + state + "\")", e,
                                       error)) << error;
    auto s = analysis::DerivedStream::evaluate(*im.ix, e, error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->size(), n) << "slices left in state " << state;
    EXPECT_GT(n, 0u);
  }

  // Named COMM-PID: the second switch's thread is kworker/0:0-13696, from .647576 to .647610.
  auto kworker = im.items(StreamKind::Interval, "CPU 0", "kworker/0:0-13696");
  ASSERT_FALSE(kworker.empty());
  EXPECT_EQ(kworker[0].start, 50260647576000u);
  EXPECT_EQ(kworker[0].end, 50260647610000u);

  // Each wakeup is a flow to the woken thread's next slice: mmcqd/0 (pid 95)
  // is woken at .647590 and switched in at .647833.
  auto flows = im.ix->flows(0, UINT64_MAX);
  EXPECT_EQ(flows.size(), wakeups);
  bool mmcqd = false;
  for (const auto& f : flows) {
    EXPECT_TRUE(f.matched());
    EXPECT_GE(f.recv_ts, f.send_ts);
    mmcqd |= f.send_ts == 50260647590000u && f.recv_ts == 50260647833000u;
  }
  EXPECT_TRUE(mmcqd);

  // Each thread's states: mmcqd/0 was Runnable (woken) from its wakeup to
  // its switch-in, inside an activation, then Running until it slept.
  ASSERT_TRUE(im.lane.count("mmcqd/0-95 states"));
  auto woken = im.items(StreamKind::Interval, "mmcqd/0-95 states", "Runnable (woken)");
  bool latency = false;
  for (const Item& it : woken) latency |= it.start == 50260647590000u && it.end == 50260647833000u;
  EXPECT_TRUE(latency);
  for (const SwitchLine& w : switches) {  // every switch-out of it to S begins its Sleeping
    if (w.prev_pid != "95" || w.prev_state != "S") continue;
    bool asleep = false;
    for (const Item& it : im.items(StreamKind::Interval, "mmcqd/0-95 states", "Sleeping")) asleep |= it.start == ftrace_ns(w.ts);
    for (const index::OpenInterval& o : im.ix->open_at(im.lane.at("mmcqd/0-95 states"), im.ix->last_ts()))
      asleep |= o.start == ftrace_ns(w.ts);
    EXPECT_TRUE(asleep) << w.ts;
  }
}

TEST(FtraceImport, SystraceHtmlCountersPerProcess) {
  Imported im("counter_tracks.html");
  ASSERT_TRUE(im.ix);
  EXPECT_TRUE(im.result.unsupported.empty());
  // Read here: every "C|pid|name|value" line of the page's JavaScript string.
  struct Want {
    uint64_t count = 0, first_ns = UINT64_MAX;
    double sum = 0;
  };
  std::map<std::pair<std::string, std::string>, Want> want;
  const std::string text = slurp(sample("counter_tracks.html"));
  size_t lines = 0;
  for (size_t at = 0; (at = text.find(": 0: C|", at)) != std::string::npos; ++at, ++lines) {
    size_t space = text.rfind(' ', at);
    std::string ts = text.substr(space + 1, at - space - 1);
    size_t end = text.find("\\n", at);
    std::string payload = text.substr(at + 7, end - at - 7);  // pid|name|value
    size_t bar1 = payload.find('|'), bar2 = payload.rfind('|');
    Want& w = want[{payload.substr(0, bar1), payload.substr(bar1 + 1, bar2 - bar1 - 1)}];
    ++w.count;
    w.sum += std::stod(payload.substr(bar2 + 1));
    w.first_ns = std::min(w.first_ns, ftrace_ns(ts));
  }
  EXPECT_EQ(lines, 1611u);
  EXPECT_EQ(im.result.events_read, lines);
  ASSERT_GE(want.size(), 5u);
  const auto& meta = im.ix->catalog().metadata;
  for (const auto& [key, w] : want) {
    // The lane: the process's counters.
    uint32_t feedlet = 0;
    for (const auto& [name, id] : im.lane)
      if (meta.at("feedlet." + std::to_string(id) + ".pid") == key.first && name.find(" counters") != std::string::npos)
        feedlet = id;
    ASSERT_NE(feedlet, 0u) << key.first;
    int s = im.ix->find_stream(StreamKind::Counter, feedlet, key.second);
    ASSERT_GE(s, 0) << key.second;
    auto items = im.ix->items(s, 0, UINT64_MAX);
    EXPECT_EQ(items.size(), w.count) << key.second;
    double sum = 0;
    uint64_t first = UINT64_MAX;
    for (const Item& it : items) sum += it.value, first = std::min(first, it.start);
    EXPECT_DOUBLE_EQ(sum, w.sum) << key.second;
    EXPECT_EQ(first, w.first_ns) << key.second;
  }
  EXPECT_TRUE(want.count({"124", "VSYNC"}));
}

// The same ftrace text in the JSON object form's "systemTraceEvents" and in
// a newer systrace page's trace-data block imports as the text alone.
TEST(FtraceImport, WrappedTextReadsAsThePlainText) {
  Imported plain("android_systrace.txt", "ftrace");
  ASSERT_TRUE(plain.ix);
  const std::string text = slurp(sample("android_systrace.txt", "ftrace"));
  std::string escaped;
  for (char c : text) {
    if (c == '\n') escaped += "\\n";
    else if (c == '"' || c == '\\') escaped += std::string("\\") + c;
    else escaped += c;
  }
  const std::string dir = ::testing::TempDir();
  const std::string json = dir + "/system_trace.json", html = dir + "/trace_data.html";
  write_file(json, "{\"traceEvents\": [], \"systemTraceEvents\": \"" + escaped + "\"}");
  write_file(html, "<!DOCTYPE html>\n<html><body>\n<script class=\"trace-data\" type=\"application/text\">\n" + text +
                       "</script>\n</body></html>\n");
  for (const std::string& in : {json, html}) {
    Imported wrapped(AtPath{in}, "wrapped");
    ASSERT_TRUE(wrapped.ix) << in;
    EXPECT_EQ(wrapped.result.events_read, plain.result.events_read) << in;
    auto a = plain.lane_intervals("CPU 0"), b = wrapped.lane_intervals("CPU 0");
    ASSERT_EQ(a.size(), b.size()) << in;
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].start == b[i].start && a[i].end == b[i].end) << in << " " << i;
    EXPECT_EQ(wrapped.ix->flows(0, UINT64_MAX).size(), plain.ix->flows(0, UINT64_MAX).size()) << in;
    ::unlink(in.c_str());
  }
}

// The reader reads the text a megabyte at a time and finds where each event
// ends by following strings and brackets (import/src/chrome_import.cpp).
// Names full of brackets, quotes and backslashes, a megabyte boundary that
// falls between a backslash and the character it escapes, other members of
// the object with brackets in their strings, and elements of the events
// array that are not events: every event comes through, its text decoded.
TEST(ChromeImport, EventsAreFoundWhateverTheirTextHolds) {
  // (A misread escape flips which text is in a string: the third name's
  // brackets then count, and the events array never ends.)
  const std::string names[] = {R"(\u0041\"]}\\{[)", R"(\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\)", "[[[x"};
  const std::string decoded[] = {"A\"]}\\{[", std::string(20, '\\'), "[[[x"};
  const std::string head = R"({"metadata":{"note":"]}[{\"","list":[1,{"a":"}"}]},"traceEvents":[)";
  std::string body = R"(1,"x]",null,{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"w\"1"}})";
  constexpr size_t kEvents = 40'000;  // ~3.3 MB: three megabyte boundaries
  for (size_t i = 0; i < kEvents; ++i)
    body += ",\n{\"name\":\"" + names[i % 3] + "\",\"ph\":\"X\",\"ts\":" + std::to_string(i * 10) +
            ",\"dur\":5,\"pid\":1,\"tid\":1}";
  const std::string tail = R"(],"displayTimeUnit":"ns","more":{"x":"]"}})";
  // Spaces before the events put a backslash that starts an escape (in the
  // second name, all escapes) last in the first megabyte read.
  const size_t mb = size_t(1) << 20;
  size_t q = body.rfind(names[1], mb - head.size() - 1);
  ASSERT_NE(q, std::string::npos);
  q += head.size();
  const std::string json = head + std::string(mb - 1 - q, ' ') + body + tail;
  ASSERT_EQ(json[mb - 1], '\\');
  ASSERT_EQ(json[mb - 2], '"') << "the escape starts at the last byte";
  const std::string in = temp_path("escapes.json");
  write_file(in, json);
  Imported im(AtPath{in}, "escapes");
  ASSERT_TRUE(im.ix);
  EXPECT_EQ(im.result.events_read, kEvents + 1) << "the numbers, string and null are not events";
  EXPECT_EQ(im.result.display_time_unit, "ns");
  ASSERT_EQ(im.lane.count("w\"1"), 1u);
  for (int k = 0; k < 3; ++k) {
    const auto v = im.items(StreamKind::Interval, "w\"1", decoded[k]);
    ASSERT_EQ(v.size(), kEvents / 3 + (size_t(k) < kEvents % 3)) << decoded[k];
    for (size_t j = 0; j < v.size(); ++j) ASSERT_EQ(v[j].start, (j * 3 + size_t(k)) * 10 * us) << decoded[k];
  }
  ::unlink(in.c_str());
}

// Trust, fault 1: a thread named by metadata that did nothing has a lane,
// but the trace's time range is that of the events that happened, not 0.
TEST(ChromeImport, ALaneNamedByMetadataAloneDoesNotStartTheTraceAtZero) {
  const std::string in = temp_path("named_only.json");
  write_file(in, R"([{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"idle"}},)"
                 R"({"ph":"X","name":"w","pid":1,"tid":1,"ts":5000000,"dur":100}])");
  Imported im(AtPath{in}, "named_only");
  ASSERT_TRUE(im.ix);
  EXPECT_EQ(im.lane.count("idle"), 1u) << "the named lane is kept";
  EXPECT_EQ(im.ix->to_ns(im.ix->first_ts()), 5'000'000'000) << "the trace starts at its first event";
  EXPECT_EQ(im.ix->to_ns(im.ix->last_ts()), 5'000'100'000);
  const auto w = im.items(StreamKind::Interval, "tid 1", "w");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(im.ix->to_ns(w[0].end - w[0].start), 100'000);
  ::unlink(in.c_str());
}

// Trust, fault 12: one event that is not JSON in the middle of a file costs
// that event only: it is counted and named (file, byte), and every event
// after it is kept, in this run of events and in those after it.
TEST(ChromeImport, AMalformedEventCostsItselfOnly) {
  const std::string in = temp_path("malformed_event.json");
  std::string text = "[";
  const int kGood = 40000;  // ~2.5 MB: the bad events fall in the first and a later run
  size_t bad_at[2] = {0, 0};
  for (int i = 0; i < kGood; ++i) {
    if (i == 100 || i == 30000) {
      bad_at[i == 30000] = text.size();
      text += R"({"ph":"X","name":"bad","pid":1,"tid":1,"ts":12a,"dur":1},)" "\n";
    }
    text += R"({"ph":"X","name":"w","pid":1,"tid":1,"ts":)" + std::to_string(i * 10) + R"(,"dur":5})";
    text += i + 1 < kGood ? ",\n" : "]\n";
  }
  write_file(in, text);
  Imported im(AtPath{in}, "malformed_event");
  ASSERT_TRUE(im.ix);
  EXPECT_EQ(im.result.events_read, uint64_t(kGood)) << "every event but the two bad ones";
  EXPECT_EQ(im.items(StreamKind::Interval, "tid 1", "w").size(), size_t(kGood));
  EXPECT_TRUE(im.items(StreamKind::Interval, "tid 1", "bad").empty());
  EXPECT_EQ(im.result.malformed_events, 2u);
  ASSERT_EQ(im.result.malformed.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    const std::string& m = im.result.malformed[k];
    EXPECT_EQ(m.find(in + ": JSON error at byte "), 0u) << m;
    const uint64_t byte = std::stoull(m.substr(m.find("byte ") + 5));
    EXPECT_GE(byte, bad_at[k]) << m;
    EXPECT_LT(byte, bad_at[k] + 60) << m << ": within the bad event";
  }
  EXPECT_TRUE(im.result.warning.empty()) << im.result.warning;
  // The command says so.
  const std::string out = temp_path("malformed_cli");
  ::unlink(out.c_str());
  std::string said;
  ASSERT_EQ(run(bin("app/tinescope") + " import " + in + " -o " + out + " 2>&1", &said), 0) << said;
  EXPECT_NE(said.find("2 events not JSON, skipped"), std::string::npos) << said;
  EXPECT_NE(said.find(im.result.malformed[0]), std::string::npos) << said;
  ::unlink(out.c_str());
  ::unlink(in.c_str());
}

// Trust, fault 13: pids and tids given as names keep them; a time given as
// a number in a string is that number, another string is reported.
TEST(ChromeImport, NamedPidsAndTidsAndTimesInStrings) {
  const std::string in = temp_path("named_ids.json");
  write_file(in, R"([
    {"ph":"X","name":"paint","pid":"browser","tid":"main","ts":"3000","dur":"10"},
    {"ph":"X","name":"load","pid":"browser","tid":"io","ts":3005,"dur":2},
    {"ph":"X","name":"late","pid":"browser","tid":"io","ts":"soon","dur":2},
    {"ph":"X","name":"gpu","pid":"7","tid":"8","ts":3001,"dur":1}])");
  Imported im(AtPath{in}, "named_ids");
  ASSERT_TRUE(im.ix);
  expect_one_interval(im, "main", "paint", 3000, 3010, 0);
  expect_one_interval(im, "io", "load", 3005, 3007, 0);
  expect_one_interval(im, "tid 8", "gpu", 3001, 3002, 0);  // numbers in strings are the numbers
  EXPECT_EQ(im.result.unsupported["X with ts not a number"], 1u);
  std::map<std::string, std::string> process;
  for (const auto& f : im.ix->feedlets()) process[f.name] = im.ix->catalog().metadata.at("feedlet." + std::to_string(f.id) + ".process");
  EXPECT_EQ(process["main"], "browser");
  EXPECT_EQ(process["io"], "browser");
  EXPECT_EQ(process["tid 8"], "pid 7");
  ::unlink(in.c_str());
}

// Trust, fault 11: what the importer does not read is reported (the
// top-level samples, frames as a list, systemTraceEvents as an object), and
// flows given as bind_id / flow_out / flow_in on slices (flow events v2,
// Chrome's current form) are imported, a step where a slice has both.
TEST(ChromeImport, BoundFlowsAreImportedAndWhatIsNotReadIsReported) {
  const std::string in = temp_path("bound_flows.json");
  write_file(in, R"({"traceEvents":[
    {"ph":"X","name":"post","pid":1,"tid":1,"ts":10,"dur":5,"bind_id":"0x1f","flow_out":true},
    {"ph":"X","name":"relay","pid":1,"tid":2,"ts":20,"dur":5,"bind_id":"0x1f","flow_in":true,"flow_out":true},
    {"ph":"B","name":"run","pid":2,"tid":3,"ts":30,"bind_id":"0x1f","flow_in":true},
    {"ph":"E","pid":2,"tid":3,"ts":40},
    {"ph":"X","name":"again","pid":1,"tid":1,"ts":50,"dur":5,"bind_id":31,"flow_out":true},
    {"ph":"X","name":"lone","pid":1,"tid":2,"ts":60,"dur":5,"bind_id":"0x99","flow_in":true}],
  "samples":[{"cpu":0,"tid":1,"ts":11,"sf":1,"weight":1},{"cpu":0,"tid":1,"ts":12,"sf":1,"weight":1}],
  "stackFrames":[{"name":"main"}],
  "systemTraceEvents":{"type":"fuchsia","events":[]}})");
  Imported im(AtPath{in}, "bound_flows");
  ASSERT_TRUE(im.ix);
  std::map<uint64_t, uint64_t> recv_of_send;
  for (const index::Flow& f : im.ix->flows(0, UINT64_MAX))
    if (f.matched()) recv_of_send[f.send_ts / us] = f.recv_ts / us;
  EXPECT_EQ(recv_of_send, (std::map<uint64_t, uint64_t>{{10, 20}, {20, 30}}));
  EXPECT_EQ(im.result.unmatched_flow_ends, 1u) << "lone's flow never began";
  EXPECT_EQ(im.result.unsupported["samples (the top-level array of CPU samples)"], 2u);
  EXPECT_EQ(im.result.unsupported["stackFrames given as an array"], 1u);
  EXPECT_EQ(im.result.unsupported["systemTraceEvents given as an object"], 1u);
  ::unlink(in.c_str());
}

// Found by the second parser's review (sample_counts_test): flows were keyed
// by hash(cat) ^ hash(id), so every flow whose cat equals its id shared one
// key, and an end took another flow's link.
TEST(ChromeImport, FlowsWhoseCategoryIsTheirIdAreApart) {
  const std::string in = temp_path("cat_is_id.json");
  write_file(in, R"([
    {"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":100},
    {"ph":"X","name":"b","pid":1,"tid":2,"ts":0,"dur":100},
    {"ph":"s","name":"m","cat":"x","id":"x","pid":1,"tid":1,"ts":1,"bp":"e"},
    {"ph":"s","name":"m","cat":"y","id":"y","pid":1,"tid":1,"ts":2,"bp":"e"},
    {"ph":"f","name":"m","cat":"x","id":"x","pid":1,"tid":2,"ts":3,"bp":"e"},
    {"ph":"f","name":"m","cat":"y","id":"y","pid":1,"tid":2,"ts":4,"bp":"e"}])");
  Imported im(AtPath{in}, "cat_is_id");
  ASSERT_TRUE(im.ix);
  std::map<uint64_t, uint64_t> recv_of_send;
  for (const index::Flow& f : im.ix->flows(0, UINT64_MAX))
    if (f.matched()) recv_of_send[f.send_ts / us] = f.recv_ts / us;
  EXPECT_EQ(recv_of_send, (std::map<uint64_t, uint64_t>{{1, 3}, {2, 4}}));
  EXPECT_EQ(im.result.unmatched_flow_ends, 0u);
  ::unlink(in.c_str());
}

// A begin never ended inside a complete event stays open (to the end of the
// trace); it was written as a complete event 2^64 ns long.
TEST(ChromeImport, ABeginNeverEndedInsideASpanStaysOpen) {
  const std::string in = temp_path("open_inside.json");
  write_file(in, R"([{"ph":"X","name":"x","pid":1,"tid":1,"ts":0,"dur":10},
    {"ph":"B","name":"open","pid":1,"tid":1,"ts":5},
    {"ph":"X","name":"later","pid":1,"tid":1,"ts":20,"dur":5}])");
  Imported im(AtPath{in}, "open_inside");
  ASSERT_TRUE(im.ix);
  const uint32_t lane = im.lane.at("tid 1");
  const auto open = im.ix->open_at(lane, im.ix->last_ts());
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].start, 5 * us);
  EXPECT_EQ(im.ix->catalog().string(open[0].name), "open");
  expect_one_interval(im, "tid 1", "x", 0, 10, 1);  // (under the open one, which began before it ended)
  EXPECT_TRUE(im.items(StreamKind::Interval, "tid 1", "open").empty()) << "no end: no item";
  EXPECT_EQ(im.ix->to_ns(im.ix->last_ts()), 25'000);
  ::unlink(in.c_str());
}

// Two intervals of one name that begin and end at one nanosecond, nested
// (zero-length), and two that begin together and end apart: each item's
// details are its own begin's arguments, found exactly and with slack.
TEST(ChromeImport, IntervalsOfOneNameAtOneTimeShowTheirOwnArguments) {
  const std::string in = temp_path("same_time.json");
  write_file(in, R"([{"ph":"B","name":"a","pid":1,"tid":1,"ts":10,"args":{"k":1}},
    {"ph":"B","name":"a","pid":1,"tid":1,"ts":10,"args":{"k":2}},
    {"ph":"E","pid":1,"tid":1,"ts":10},
    {"ph":"E","pid":1,"tid":1,"ts":10},
    {"ph":"B","name":"b","pid":1,"tid":1,"ts":20,"args":{"k":3}},
    {"ph":"B","name":"b","pid":1,"tid":1,"ts":20,"args":{"k":4}},
    {"ph":"E","pid":1,"tid":1,"ts":25},
    {"ph":"E","pid":1,"tid":1,"ts":30}])");
  Imported im(AtPath{in}, "same_time");
  ::unlink(in.c_str());
  ASSERT_TRUE(im.ix);
  const uint32_t lane = im.lane.at("tid 1");
  for (const char* name : {"a", "b"}) {
    auto items = im.items(StreamKind::Interval, "tid 1", name);
    ASSERT_EQ(items.size(), 2u) << name;
    for (const Item& it : items)
      for (uint64_t slack : {uint64_t(0), uint64_t(500)}) {
        std::vector<analysis::EventView> ev;
        std::string why;
        Item asked = it;  // with slack, a tick off (as the viewer's times from pixels may be)
        if (slack) asked.start += 1, asked.end += 1;
        ASSERT_TRUE(analysis::item_events(*im.ix, lane, asked, ev, why, slack)) << why;
        ASSERT_FALSE(ev.empty());
        std::string k;
        for (auto& a : ev[0].args)
          if (a.name == "k") k = a.text;
        // Outer first in the file: depth 0 holds the first begin's argument.
        const int want = (name[0] == 'a' ? 1 : 3) + int(it.depth);
        EXPECT_EQ(k, std::to_string(want)) << name << " depth " << it.depth << " slack " << slack;
      }
  }
}

TEST(ChromeImport, BadInputGetsAClearError) {
  std::string dir = ::testing::TempDir();
  std::string out = temp_path("import_bad");
  ::unlink(out.c_str());
  import::ImportResult r;
  std::string error;
  // Garbage: no trace, an error naming the file and the byte.
  std::string garbage = dir + "/garbage.json";
  write_file(garbage, "{\"traceEvents\": [ {\"ph\": \"B\", \"ts\": 1,, ]");
  EXPECT_FALSE(import::import_trace(garbage, out, r, error));
  EXPECT_NE(error.find(garbage), std::string::npos) << error;
  EXPECT_NE(error.find("byte"), std::string::npos) << error;
  EXPECT_NE(::access(out.c_str(), F_OK), 0);

  // Cut short in the middle of an event: every complete event is kept.
  std::string cut = dir + "/cut.json";
  std::string text = slurp(sample("big_trace.json"));
  write_file(cut, text.substr(0, text.size() / 2));
  r = {};
  ASSERT_TRUE(import::import_trace(cut, out, r, error)) << error;
  EXPECT_FALSE(r.warning.empty());
  EXPECT_GT(r.events_read, 800u);
  EXPECT_LT(r.events_read, 1866u);

  // Neither JSON nor ftrace text; an HTML page with no trace in it.
  std::string prose = dir + "/prose.txt", page = dir + "/page.html", none = out + ".not";
  ::unlink(none.c_str());
  write_file(prose, "Dear diary,\ntoday I traced nothing.\n");
  write_file(page, "<html><body><p>no trace here</p></body></html>\n");
  r = {};
  EXPECT_FALSE(import::import_trace(prose, none, r, error));
  EXPECT_NE(error.find(prose), std::string::npos) << error;
  EXPECT_NE(error.find("neither Perfetto, JSON, ftrace text nor a Grasp trace"), std::string::npos) << error;
  EXPECT_NE(error.find("Dear diary"), std::string::npos) << error;
  // Binary bytes: the message shows the first line's start escaped, so it
  // cannot garble the terminal it is printed on.
  std::string binary = dir + "/binary.dat";
  write_file(binary, std::string("\x01\x9b[2J\xff\xfe ok\x7f") + std::string(200, '\xc3') + "\n");
  EXPECT_FALSE(import::import_trace(binary, none, r, error));
  EXPECT_NE(error.find("neither Perfetto, JSON, ftrace text nor a Grasp trace"), std::string::npos) << error;
  EXPECT_NE(error.find("\\x01\\x9b[2J\\xff\\xfe ok\\x7f\\xc3"), std::string::npos) << error;
  for (char c : error) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "a byte " << int(static_cast<unsigned char>(c));
  EXPECT_LT(error.size(), binary.size() + 200) << "the line's start only: " << error;
  ::unlink(binary.c_str());
  EXPECT_FALSE(import::import_trace(page, none, r, error));
  EXPECT_NE(error.find("without trace data"), std::string::npos) << error;
  EXPECT_NE(::access(none.c_str(), F_OK), 0) << "nothing written";
  ::unlink(prose.c_str());
  ::unlink(page.c_str());

  // Never writes over a file.
  std::string before = slurp(out);
  r = {};
  EXPECT_FALSE(import::import_trace(sample("trivial_trace.json"), out, r, error));
  EXPECT_NE(error.find("never writes over"), std::string::npos) << error;
  EXPECT_EQ(slurp(out), before);
  ::unlink(out.c_str());
  ::unlink(garbage.c_str());
  ::unlink(cut.c_str());
}

// `tinescope import` says what it read, what it made and what it left out;
// a file in the way is never written over, and a broken input names the
// file and the byte.
TEST(ChromeImport, TheCommandSaysWhatItReadMadeAndLeftOut) {
  const std::string tool = bin("app/tinescope") + " import ";
  const std::string out = temp_path("import_cli");
  std::string said;
  ASSERT_EQ(run(tool + sample("simple_trace.json") + " -o " + out + " 2>&1", &said), 0) << said;
  EXPECT_NE(said.find(": 37 events read -> 44 events on 6 lanes in " + out), std::string::npos) << said;
  EXPECT_EQ(said.find("not imported"), std::string::npos) << said;
  const std::string before = slurp(out);
  EXPECT_EQ(run(tool + sample("trivial_trace.json") + " -o " + out + " 2>&1", &said), 1) << said;
  EXPECT_NE(said.find("never writes over a file"), std::string::npos) << said;
  EXPECT_EQ(slurp(out), before) << "the trace in the way is as it was";
  ::unlink(out.c_str());
  ASSERT_EQ(run(tool + sample("trivial_trace.json") + " -o " + out + " 2>&1", &said), 0) << said;
  EXPECT_NE(said.find("events on 1 lane in"), std::string::npos) << said;
  ::unlink(out.c_str());
  ASSERT_EQ(run(tool + sample("webview.json.gz") + " -o " + out + " 2>&1", &said), 0) << said;
  EXPECT_NE(said.find("not imported: 1 \"c\" events"), std::string::npos) << said;  // its clock sync
  // `info` says where the trace came from and what it says of itself; the
  // metadata that names lanes (feedlet.N.process, ...) shows as the lanes.
  ASSERT_EQ(run(bin("app/tinescope") + " info " + out + " 2>&1", &said), 0) << said;
  for (const std::string& want : {std::string("process   Browser: Rihanna\n"),
                                  "command   tinescope import " + sample("webview.json.gz") + "\n",
                                  std::string("metadata  15\n"), std::string("  num_cpus               6\n"),
                                  // (a flow's name is its messages' channel: named as channels are)
                                  std::string("  channel.65             WebURLLoaderImpl::loadAsynchronously\n")})
    EXPECT_NE(said.find(want), std::string::npos) << "\"" << want << "\" missing from:\n" << said;
  EXPECT_EQ(said.find("feedlet."), std::string::npos) << said;
  ::unlink(out.c_str());
  ::unlink((out + ".idx").c_str());
  const std::string cut = scratch_dir() + "/import_cut.json", nothing = temp_path("import_nothing");
  write_file(cut, "[{\"ph\":\"X\",\"ts\":");
  EXPECT_EQ(run(tool + cut + " -o " + nothing + " 2>&1", &said), 1) << said;
  EXPECT_NE(said.find(cut + ": JSON error at byte 16: the events array does not end"), std::string::npos) << said;
  EXPECT_NE(::access(nothing.c_str(), F_OK), 0) << "no trace from an input that does not parse";
}

// ---------------------------------------------------------------- Grasp

// Intervals of a lane by name, as [start, end] µs pairs in start order.
std::vector<std::pair<double, double>> spans_us(const Imported& im, const std::string& lane, const std::string& name) {
  std::vector<std::pair<double, double>> out;
  for (const Item& it : im.items(StreamKind::Interval, lane, name)) out.push_back({it.start / 1e3, it.end / 1e3});
  std::sort(out.begin(), out.end());
  return out;
}
using Spans = std::vector<std::pair<double, double>>;

TEST(GraspImport, JobsRunOnTheProcessorAndEachJobIsItsResponseTime) {
  // The Grasp paper's figure 2: task 2's job runs from 5, task 1's preempts
  // it from 20 to 35, and it completes at 50. No processor is declared.
  Imported im("uniprocessor.grasp", "grasp");
  ASSERT_TRUE(im.ix);
  EXPECT_EQ(im.result.events_read, 10u);
  EXPECT_TRUE(im.result.unsupported.empty());
  EXPECT_EQ(im.result.unmatched_ends, 0u);
  ASSERT_EQ(im.lane.size(), 3u);
  EXPECT_EQ(im.ix->feedlets()[0].name, "Processor") << "the processor's lane first";
  EXPECT_EQ(spans_us(im, "Processor", "Task 2"), (Spans{{5, 20}, {35, 50}}));
  EXPECT_EQ(spans_us(im, "Processor", "Task 1"), (Spans{{20, 35}}));
  // Each job from its arrival to its completion, on its task's lane.
  EXPECT_EQ(spans_us(im, "Task 1", "Task 1"), (Spans{{20, 35}}));
  EXPECT_EQ(spans_us(im, "Task 2", "Task 2"), (Spans{{5, 50}}));
  for (const Item& it : im.lane_intervals("Processor")) EXPECT_EQ(it.depth, 0u) << "one job at a time";
}

// Grasp's BudgetCheck: a server that serves past its budget is said so at
// import, and the moment its budget went below zero is marked in its lane.
TEST(GraspImport, AServerServingPastItsBudgetIsFound) {
  const std::string path = temp_path("overrun.grasp");
  std::ofstream(path) << "newServer s1 -name \"Server 1\"\n"
                         "plot 0 serverReplenished s1 10\n"
                         "plot 2 serverResumed s1\n"
                         "plot 4 serverResumed s1\n"   // two processors from 4: at 8, 10 - 2 - 8 = 0
                         "plot 9 serverPreempted s1\n"  // 10 - 2 - 10 = -2 at 9
                         "plot 12 serverPreempted s1\n" // -2 - 3 = -5
                         "plot 12 serverDepleted s1 0\n";
  Imported im(AtPath{path}, "overrun");
  ASSERT_TRUE(im.ix);
  ASSERT_EQ(im.result.notes.size(), 1u);
  EXPECT_EQ(im.result.notes[0], "budget check: Server 1 served past its budget 1 time, by up to 5 (marked \"budget overrun\" in its lane)");
  auto overrun = im.items(StreamKind::Instant, "Server 1", "budget overrun");
  ASSERT_EQ(overrun.size(), 1u);
  EXPECT_EQ(overrun[0].start, 8 * us) << "where the budget reached zero";
  auto budget = im.items(StreamKind::Counter, "Server 1", "budget");
  std::map<uint64_t, double> at;
  for (const Item& b : budget) at[b.start] = b.value;
  EXPECT_EQ(at.at(4 * us), 8.0);
  EXPECT_EQ(at.at(9 * us), -2.0);
  EXPECT_EQ(at.at(12 * us), 0.0) << "depleted: the budget the trace gives";
  // `check` finds it from the budget counter: from where it crossed zero to
  // the depletion, by the most it fell below.
  const analysis::SchedReport r = analysis::check_schedule(*im.ix, nullptr);
  EXPECT_EQ(r.per_kind[analysis::SchedViolation::BudgetOverrun], 1u);
  EXPECT_EQ(r.total, 1u);
  EXPECT_GT(r.budget_samples, 10u);
  ASSERT_EQ(r.violations.size(), 1u);
  const analysis::SchedViolation& v = r.violations[0];
  EXPECT_NEAR(double(v.ts), double(8 * us), 1.0);
  EXPECT_EQ(v.end, 12 * us);
  EXPECT_EQ(v.why, "served 5 past its budget, below zero for 4us");
  EXPECT_EQ(analysis::subject(v, im.ix->catalog()), "Server 1");
}

TEST(GraspImport, MigrationMutexesBuffersAndServers) {
  Imported im("multiprocessor.grasp", "grasp");
  ASSERT_TRUE(im.ix);
  EXPECT_TRUE(im.result.unsupported.empty());
  EXPECT_TRUE(im.result.notes.empty()) << im.result.notes[0];  // no clocks to align, the mutex used well
  EXPECT_EQ(im.result.unmatched_ends, 0u);
  for (const char* lane : {"Core 1", "Core 2", "Task 1", "Task 2", "Mutex 1", "Frames", "Server 1"})
    EXPECT_TRUE(im.lane.count(lane)) << lane;
  // Job 1.1 arrives on core 2 at 15, migrates to core 1 at 22, blocks from 26 to 28.
  EXPECT_EQ(spans_us(im, "Core 2", "Task 1"), (Spans{{15, 22}}));
  EXPECT_EQ(spans_us(im, "Core 1", "Task 1"), (Spans{{22, 26}, {28, 30}}));
  EXPECT_EQ(spans_us(im, "Core 1", "Task 2"), (Spans{{10, 20}}));
  EXPECT_EQ(spans_us(im, "Task 1", "Task 1"), (Spans{{15, 30}}));
  auto blocked = im.items(StreamKind::Instant, "Task 1", "blocked");
  ASSERT_EQ(blocked.size(), 1u);
  EXPECT_EQ(blocked[0].start, 26 * us);
  // The mutex's holder, from acquiring to releasing.
  EXPECT_EQ(spans_us(im, "Mutex 1", "Task 2"), (Spans{{12, 17}}));
  // The server serves while any processor consumes its budget: 10 to 30.
  EXPECT_EQ(spans_us(im, "Server 1", "serving"), (Spans{{10, 30}}));
  // Its budget as it is consumed: 25 at 0, one processor from 10, two from
  // 15 (twice the rate), one from 20, none from 30 (depleted, 0): a line
  // falling at each rate, sampled along it, never rising while it serves.
  auto budget = im.items(StreamKind::Counter, "Server 1", "budget");
  ASSERT_GE(budget.size(), 40u);
  EXPECT_EQ(budget.front().value, 25.0);
  EXPECT_EQ(budget.back().value, 0.0);
  EXPECT_EQ(analysis::check_schedule(*im.ix, nullptr).per_kind[analysis::SchedViolation::BudgetOverrun], 0u)
      << "served to zero, not past it";
  std::map<uint64_t, double> at;
  for (size_t k = 0; k < budget.size(); ++k) {
    at[budget[k].start] = budget[k].value;
    if (k) {
      EXPECT_LE(budget[k].value, budget[k - 1].value) << "at " << budget[k].start;
    }
  }
  EXPECT_EQ(at.at(10 * us), 25.0);
  EXPECT_EQ(at.at(15 * us), 20.0);
  EXPECT_EQ(at.at(20 * us), 10.0);
  EXPECT_EQ(at.at(25 * us), 5.0) << "halfway from 20 to 30, one processor";
  EXPECT_EQ(at.at(30 * us), 0.0);
  EXPECT_TRUE(im.items(StreamKind::Instant, "Server 1", "budget overrun").empty());
  // The buffer is first in, first out: I1 written at 12 is read at 25; P2 stays.
  auto depth = im.items(StreamKind::Counter, "Frames", "depth");
  ASSERT_EQ(depth.size(), 3u);
  EXPECT_EQ(depth[0].value, 1.0);
  EXPECT_EQ(depth[1].value, 2.0);
  EXPECT_EQ(depth[2].value, 1.0);
  const uint32_t frames = im.lane.at("Frames"), core1 = im.lane.at("Core 1"), core2 = im.lane.at("Core 2");
  bool read = false, waiting = false, migrated = false;
  for (const auto& f : im.ix->flows(0, UINT64_MAX)) {
    if (f.src == frames && f.matched()) read |= f.send_ts == 12 * us && f.recv_ts == 25 * us;
    if (f.src == frames && !f.matched()) waiting |= f.send_ts == 14 * us;
    // The migration: an arrow from where the job left to where it goes on.
    if (f.src == core2 && f.dst == core1) migrated |= f.send_ts == 22 * us && f.recv_ts == 22 * us;
  }
  EXPECT_TRUE(read);
  EXPECT_TRUE(waiting);
  EXPECT_TRUE(migrated);
}

// Each job's slice keeps its job, task and processor, and at its end how it
// ended; each job on its task's lane keeps where it arrived (issue 51).
TEST(GraspImport, JobSlicesKeepTheirJobTaskProcessorAndHowTheyEnded) {
  Imported im("multiprocessor.grasp", "grasp");
  ASSERT_TRUE(im.ix);
  // lane, start µs -> job, task, processor, how it ended (from the script above)
  const std::map<std::pair<std::string, double>, std::array<std::string, 4>> want = {
      {{"Core 1", 10}, {"job2.1", "Task 2", "Core 1", "completed"}},
      {{"Core 2", 15}, {"job1.1", "Task 1", "Core 2", "preempted"}},  // (and resumed on core 1)
      {{"Core 1", 22}, {"job1.1", "Task 1", "Core 1", "blocked"}},
      {{"Core 1", 28}, {"job1.1", "Task 1", "Core 1", "completed"}},
      {{"Task 1", 15}, {"job1.1", "Task 1", "Core 2", ""}},
      {{"Task 2", 10}, {"job2.1", "Task 2", "Core 1", ""}}};
  size_t seen = 0;
  for (const std::string lane : {"Core 1", "Core 2", "Task 1", "Task 2"})
    for (const Item& it : im.lane_intervals(lane)) {
      std::vector<analysis::EventView> ev;
      std::string why;
      ASSERT_TRUE(analysis::item_events(*im.ix, im.lane.at(lane), it, ev, why)) << why;
      ASSERT_EQ(ev.size(), 2u) << lane << " begin and end";
      auto text = [&](const analysis::EventView& v, const char* name) {
        const analysis::FieldView* f = v.field(name);
        return f ? f->text : std::string("(none)");
      };
      const auto w = want.find({lane, it.start / 1e3});
      ASSERT_NE(w, want.end()) << lane << " at " << it.start / 1e3;
      EXPECT_EQ(text(ev[0], "job"), w->second[0]);
      EXPECT_EQ(text(ev[0], "task"), w->second[1]);
      EXPECT_EQ(text(ev[0], "processor"), w->second[2]);
      EXPECT_EQ(text(ev[1], "ended"), w->second[3].empty() ? "(none)" : w->second[3]) << lane << " at " << it.start / 1e3;
      ++seen;
    }
  EXPECT_EQ(seen, want.size());
  // where= tests an end's fields too: the one preempted slice.
  std::string error;
  analysis::Expr e;
  ASSERT_TRUE(analysis::parse_stream(R"(intervals(thread="Core *", where="ended = preempted"))", e, error)) << error;
  auto s = analysis::DerivedStream::evaluate(*im.ix, e, error);
  ASSERT_TRUE(s) << error;
  ASSERT_EQ(s->size(), 1u);
  EXPECT_EQ(s->records()[0].start, 15 * us);
  EXPECT_EQ(s->records()[0].end, 22 * us);
}

// where= pairs an end with the begin it closes: a complete event of the
// same name that ends at the same time is another interval (a review finding).
TEST(ChromeImport, WhereTestsAnEndForTheIntervalItCloses) {
  const std::string in = scratch_dir() + "/where_ends.json";
  write_file(in, R"([{"ph":"B","name":"foo","pid":1,"tid":1,"ts":0,"args":{"k":"no"}},
    {"ph":"X","name":"foo","pid":1,"tid":1,"ts":5,"dur":5,"args":{"k":"no"}},
    {"ph":"E","name":"foo","pid":1,"tid":1,"ts":10,"args":{"k":"yes"}},
    {"ph":"B","name":"bar","pid":1,"tid":1,"ts":20,"args":{"k":"no"}},
    {"ph":"E","pid":1,"tid":1,"ts":30,"args":{"k":"yes"}}])");
  Imported im(AtPath{in}, "where_ends");
  ASSERT_TRUE(im.ix);
  std::string error;
  analysis::Expr e;
  ASSERT_TRUE(analysis::parse_stream(R"(intervals(where="k = yes"))", e, error)) << error;
  auto s = analysis::DerivedStream::evaluate(*im.ix, e, error);
  ASSERT_TRUE(s) << error;
  std::vector<std::pair<uint64_t, uint64_t>> got;
  for (const analysis::Record& r : s->records()) got.push_back({r.start / us, r.end / us});
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, uint64_t>>{{0, 10}, {20, 30}}));
}

// Two processors' traces concatenated, each on its own clock: core 2's runs
// at 1.001 times true time from 5 000. Sync messages go both ways (each
// answered 1 µs after it arrives, 2 µs of delay either way); a job on each
// core runs at known true times. Aligned, both land where they ran.
TEST(GraspImport, ConcatenatedTracesAreAlignedByTheirSyncMessages) {
  auto c2 = [](double t) { return 5000 + 1.001 * t; };
  std::string core1 = "newProcessor core1 -name \"Core 1\"\nnewTask a -processor core1\n";
  std::string core2 = "newProcessor core2 -name \"Core 2\"\nnewTask b -processor core2\n";
  auto plot = [](std::string& out, double t, const std::string& what) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "plot %.6f ", t);
    out += buf;
    out += what;
    out += '\n';
  };
  for (int k = 0; k < 4; ++k) {
    const double t = 100 + 300 * k;
    const std::string n = std::to_string(k), there = std::string("m").append(n), back = std::string("r").append(n);
    plot(core1, t, "syncSent core1 core2 " + there);
    plot(core2, c2(t + 2), "syncReceived core1 core2 " + there);
    plot(core2, c2(t + 3), "syncSent core2 core1 " + back);
    plot(core1, t + 5, "syncReceived core2 core1 " + back);
  }
  plot(core1, 250, "jobArrived a.1 a"), plot(core1, 250, "jobStarted a.1"), plot(core1, 300, "jobCompleted a.1");
  plot(core2, c2(260), "jobArrived b.1 b"), plot(core2, c2(260), "jobStarted b.1");
  plot(core2, c2(700), "jobCompleted b.1");
  const std::string in = scratch_dir() + "/concatenated.grasp";
  write_file(in, core1 + core2);
  Imported im(AtPath{in}, "concatenated");
  ASSERT_TRUE(im.ix);
  EXPECT_TRUE(im.result.warning.empty()) << im.result.warning;
  ASSERT_EQ(im.result.notes.size(), 1u);
  EXPECT_NE(im.result.notes[0].find("clock sync: Core 2 aligned to Core 1: t = "), std::string::npos)
      << im.result.notes[0];
  auto a = im.items(StreamKind::Interval, "Core 1", "a"), b = im.items(StreamKind::Interval, "Core 2", "b");
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].start, 250 * us);
  EXPECT_NEAR(double(b[0].start), 260e3, 5) << "true time, within rounding";
  EXPECT_NEAR(double(b[0].end), 700e3, 5);
  // Each sync message is a flow, received after it was sent.
  uint64_t syncs = 0;
  for (const auto& f : im.ix->flows(0, UINT64_MAX)) {
    EXPECT_TRUE(f.matched());
    EXPECT_NEAR(double(f.recv_ts - f.send_ts), 2e3, 5);
    ++syncs;
  }
  EXPECT_EQ(syncs, 8u);
  ::unlink(in.c_str());

  // A clock that jumps 100 µs ahead and back: no one line fits the round
  // trips, and after alignment some messages arrive before they left, which
  // Grasp reports as the constant-drift assumption failing.
  std::string jumpy = "newProcessor p\nnewProcessor q\n";
  for (int k = 0; k < 3; ++k) {
    const double t = 100 + 400 * k, jump = k == 1 ? 100 : 0;
    const std::string n = std::to_string(k), there = std::string("m").append(n), back = std::string("r").append(n);
    plot(jumpy, t, "syncSent p q " + there), plot(jumpy, t + 2 + jump, "syncReceived p q " + there);
    plot(jumpy, t + 3 + jump, "syncSent q p " + back), plot(jumpy, t + 5, "syncReceived q p " + back);
  }
  write_file(in, jumpy);
  Imported bad(AtPath{in}, "jumpy");
  EXPECT_NE(bad.result.warning.find("sync messages arrive before they were sent"), std::string::npos)
      << bad.result.warning;
  ::unlink(in.c_str());
}

TEST(GraspImport, WhatItDoesNotReadIsCountedAndEmptyScriptsAreRefused) {
  const std::string in = scratch_dir() + "/odd.grasp", out = temp_path("import_odd");
  write_file(in, "newTask t -name \"T\"\nplot 1 jobArrived j t\nplot 2 jobExploded j\nset x 5\n"
                 "plot 3 jobResumed\nplot x jobCompleted j\nplot 4 jobCompleted j\n"
                 "newServer s\nplot 5 serverDepleted s -2.5 -name S\n"
                 "plot 6 jobAcquiredMutex j m\nplot 7 jobAcquiredMutex k m\nplot 8 jobReleasedMutex j m\n"
                 "plot 9 jobReleasedMutex k m\nplot 10 jobReleasedMutex k m\n");
  Imported im(AtPath{in}, "odd");
  ASSERT_TRUE(im.ix);
  EXPECT_EQ(im.result.unsupported["grasp plot jobExploded"], 1u);
  EXPECT_EQ(im.result.unsupported["grasp set"], 1u);
  EXPECT_EQ(im.result.unsupported["grasp jobResumed with too few arguments"], 1u);
  EXPECT_EQ(im.result.unsupported["grasp plot whose time is not a number"], 1u);
  EXPECT_EQ(spans_us(im, "T", "T"), (Spans{{1, 4}}));
  auto budget = im.items(StreamKind::Counter, "s", "budget");  // a negative number is an argument, not an option
  ASSERT_EQ(budget.size(), 1u);
  EXPECT_EQ(budget[0].value, -2.5);
  // Grasp's MutexCheck: k takes m while j holds it; then j releases what k
  // holds, and k releases m twice (the second time m is free).
  ASSERT_EQ(im.result.notes.size(), 1u);
  EXPECT_EQ(im.result.notes[0], "mutex check: m: 1 acquired while another job held it, 2 released by a job that did not hold it");
  // The lane shows each job's own hold, as the trace says (not nested by
  // the order of the releases: j 6-8 and k 7-9, not j 6-9 around k 7-8;
  // j is a job of task T, named so).
  EXPECT_EQ(spans_us(im, "m", "T"), (Spans{{6, 8}}));
  EXPECT_EQ(spans_us(im, "m", "k"), (Spans{{7, 9}}));
  write_file(in, "newProcessor p\nnewTask t\n");
  ::unlink(out.c_str());
  import::ImportResult r;
  std::string error;
  EXPECT_FALSE(import::import_trace(in, out, r, error));
  EXPECT_NE(error.find(in + ": a Grasp trace without events"), std::string::npos) << error;
  EXPECT_NE(::access(out.c_str(), F_OK), 0);
  ::unlink(in.c_str());
}

}  // namespace
}  // namespace tinescope::test
