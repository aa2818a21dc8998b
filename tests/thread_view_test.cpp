// The thread views of method tracing (render/activity.hpp,
// render/thread_overview.hpp, Scene::select_lanes): each against a
// brute-force reading of the calls the test wrote.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "scratch_dir.hpp"
#include "tinescope/render/activity.hpp"
#include "tinescope/render/picture.hpp"
#include "tinescope/render/thread_overview.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

using namespace format;

struct Call {
  uint32_t feedlet;
  uint64_t name, start, end;  // name: string id
};

// Names 1 "worker", 2 "io", 3 "f", 4 "g", 5 "h"; feedlets 1 and 2 are
// threads named "worker" (so their labels carry their tids), 3 is "io".
constexpr uint64_t kF = 3, kG = 4, kH = 5;

std::string write_calls(const std::string& file, std::vector<Call> calls) {
  TraceBytes trace = named_trace({"worker", "io", "f", "g", "h"}, {1, 1, 2});
  for (uint32_t feedlet = 1; feedlet <= 3; ++feedlet) {
    // Begins and ends in time order (ends first at a tie: a call ending
    // where the next begins; an inner call's end before its parent's).
    std::vector<std::tuple<uint64_t, int, uint64_t, uint64_t>> ev;  // ts, 0 end / 1 begin, -depth key, name
    for (const Call& c : calls)
      if (c.feedlet == feedlet) {
        ev.push_back({c.start, 1, UINT64_MAX - c.end, c.name});
        ev.push_back({c.end, 0, UINT64_MAX - c.start, c.name});
      }
    std::sort(ev.begin(), ev.end());
    ChunkBuilder cb;
    cb.feedlet = feedlet;
    for (auto [ts, begin, key, name] : ev) {
      put_named(cb, begin ? kIntervalBegin : kIntervalEnd, ts, name);
      if (cb.full()) trace.flush(cb);
    }
    trace.flush(cb);
  }
  const std::string path = scratch_dir() + "/" + file;
  std::ofstream(path, std::ios::binary) << trace.out;
  ::unlink((path + ".idx").c_str());
  return path;
}

// Random nested calls on each thread over [1 ms, 101 ms): durations from
// 20 ns to 5 ms, a stack up to 6 deep; the io thread never calls h.
std::vector<Call> random_calls(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Call> out;
  for (uint32_t feedlet = 1; feedlet <= 3; ++feedlet) {
    std::vector<Call> stack;
    uint64_t t = 1'000'000;
    const uint64_t end = 101'000'000;
    while (t < end) {
      t += 10 + rng() % (rng() % 4 == 0 ? 200'000 : 2'000);
      if (!stack.empty() && (stack.size() >= 6 || rng() % 2)) {
        Call c = stack.back();
        stack.pop_back();
        c.end = std::max(c.start + 20, t);
        out.push_back(c);
        t = c.end;
        continue;
      }
      const uint64_t names[] = {kF, kG, kH};
      uint64_t name = names[rng() % (feedlet == 3 ? 2 : 3)];
      stack.push_back({feedlet, name, t, 0});
      if (rng() % 50 == 0) t += rng() % 5'000'000;  // a long one
    }
    for (; !stack.empty(); stack.pop_back()) {
      Call c = stack.back();
      t += 50;
      c.end = t;
      out.push_back(c);
    }
  }
  return out;
}

std::shared_ptr<render::Scene> scene_of(const std::string& path) {
  auto scene = std::make_shared<render::Scene>();
  std::string error;
  EXPECT_TRUE(scene->add_trace(path, error)) << error;
  return scene;
}

// Where a function runs in a lane, as disjoint sorted [start, end] ranges.
std::vector<std::pair<int64_t, int64_t>> union_of(const std::vector<Call>& calls, uint32_t feedlet, uint64_t name,
                                                  int64_t origin) {
  std::vector<std::pair<int64_t, int64_t>> r, out;
  for (const Call& c : calls)
    if (c.feedlet == feedlet && c.name == name) r.push_back({origin + int64_t(c.start), origin + int64_t(c.end)});
  std::sort(r.begin(), r.end());
  for (auto [a, z] : r) {
    if (!out.empty() && a <= out.back().second) out.back().second = std::max(out.back().second, z);
    else out.push_back({a, z});
  }
  return out;
}

int64_t distance_to(const std::vector<std::pair<int64_t, int64_t>>& u, int64_t t) {
  auto it = std::upper_bound(u.begin(), u.end(), std::make_pair(t, INT64_MAX));
  int64_t d = INT64_MAX;
  if (it != u.end()) d = std::min(d, it->first - t);
  if (it != u.begin()) {
    --it;
    d = std::min(d, t <= it->second ? 0 : t - it->second);
  }
  return d;
}

// Every call that ends in the window, or runs across its right edge, is
// under a span of its lane; every point of a span is within a column of a
// call of that function in that lane; a lane that never calls it has none.
TEST(ThreadViews, ActivitySpansCoverEveryCallAndNothingElse) {
  const std::vector<Call> calls = random_calls(54);
  auto scene = scene_of(write_calls("activity.tine", calls));
  ASSERT_EQ(scene->lanes().size(), 3u);
  // The time of tick 0 (the trace's ticks are ns).
  const int64_t origin = scene->first_ns() - int64_t(scene->sources()[0].index->first_ts());
  std::mt19937_64 rng(7);
  size_t windows = 0, checked_calls = 0;
  for (int round = 0; round < 60; ++round) {
    const uint64_t name = kF + rng() % 3;
    const std::string fn = name == kF ? "f" : name == kG ? "g" : "h";
    const int64_t span = int64_t(1'000 + rng() % 100'000'000);
    const int64_t t0 = origin + int64_t(rng() % 102'000'000), t1 = t0 + span;
    const uint32_t columns = std::vector<uint32_t>{50, 300, 1000, 1600}[rng() % 4];
    const std::vector<render::ActiveSpan> spans = render::activity_spans(*scene, {}, fn, t0, t1, columns);
    ++windows;
    for (uint32_t lane = 0; lane < 3; ++lane) {
      const uint32_t feedlet = scene->lanes()[lane].feedlet;
      // A bucket: at most a column, or the finest stored level's where the
      // window holds more of the lane's events than the decode budget.
      const index::TraceIndex& ix = *scene->sources()[0].index;
      const int stream = ix.find_stream(index::StreamKind::Interval, feedlet, fn);
      const index::Buckets b =
          stream < 0 ? index::Buckets{} : ix.query(stream, uint64_t(t0 - origin), uint64_t(t1 - origin), columns);
      const int64_t res = std::max<int64_t>(span / columns, int64_t(1) << b.shift) + 2;
      std::vector<std::pair<int64_t, int64_t>> mine;
      for (const render::ActiveSpan& s : spans)
        if (s.lane == lane) {
          ASSERT_LE(s.t0, s.t1);
          ASSERT_GE(s.t0, t0);
          ASSERT_LE(s.t1, t1);
          mine.push_back({s.t0, s.t1});
        }
      const auto u = union_of(calls, feedlet, name, origin);
      if (u.empty()) {
        EXPECT_TRUE(mine.empty()) << fn << " never runs in feedlet " << feedlet;
        continue;
      }
      for (auto [a, z] : mine)
        for (int64_t t = a; t <= z; t += std::max<int64_t>(1, res / 2)) {
          ASSERT_LE(distance_to(u, std::min(t, z)), res)
              << fn << " marked at " << t - origin << " in feedlet " << feedlet << ", window " << t0 - origin << "+"
              << span << " at " << columns << " columns";
        }
      for (const Call& c : calls) {
        if (c.feedlet != feedlet || c.name != name) continue;
        const int64_t s = origin + int64_t(c.start), e = origin + int64_t(c.end);
        if (e < t0 || s > t1) continue;
        if (e <= t1 || s <= t1) {
          // Its end, or the window's edge where it runs past it.
          const int64_t at = std::min(e, t1);
          if (at < t0) continue;
          const bool under = std::any_of(mine.begin(), mine.end(), [&](auto r) { return r.first <= at && at <= r.second; });
          ASSERT_TRUE(under) << fn << " [" << s - origin << ", " << e - origin << "] in feedlet " << feedlet
                             << " has no mark at " << at - origin << "; window " << t0 - origin << "+" << span;
          ++checked_calls;
        }
      }
    }
  }
  EXPECT_GT(checked_calls, 1000u) << windows << " windows";
}

// A thread's overview: f in the first half of the trace, g in the second;
// another thread runs h throughout with an f inside every 10 ms; the third
// only g. Each function's columns and calls, as written.
TEST(ThreadViews, AnOverviewShowsEachFunctionWhereItRunsWithItsCalls) {
  std::vector<Call> calls;
  for (uint64_t i = 0; i < 50; ++i) calls.push_back({1, kF, 1'000'000 + i * 1'000'000, 1'000'000 + i * 1'000'000 + 900'000});
  for (uint64_t i = 0; i < 50; ++i) calls.push_back({1, kG, 51'000'000 + i * 1'000'000, 51'000'000 + i * 1'000'000 + 900'000});
  calls.push_back({2, kH, 1'000'000, 100'999'999});  // (the trace: 100 ms, a column a ms)
  for (uint64_t i = 0; i < 10; ++i) calls.push_back({2, kF, 2'000'000 + i * 10'000'000, 4'000'000 + i * 10'000'000});
  calls.push_back({3, kG, 41'000'000, 61'000'000});
  auto scene = scene_of(write_calls("overview.tine", calls));
  ASSERT_EQ(scene->lanes().size(), 3u);
  const uint32_t columns = 100;  // a column a ms
  std::map<uint32_t, render::ThreadOverview> by_feedlet;
  for (uint32_t lane = 0; lane < 3; ++lane)
    by_feedlet[scene->lanes()[lane].feedlet] = render::thread_overview(*scene, lane, columns);
  auto columns_of = [&](uint32_t feedlet, const std::string& name, uint64_t* calls_out) {
    std::set<uint32_t> out;
    const render::ThreadOverview& o = by_feedlet[feedlet];
    for (const auto& fn : o.functions)
      if (scene->string(0, fn.name) == name) {
        for (uint32_t c = 0; c < o.columns; ++c)
          if (fn.active[c]) out.insert(c);
        EXPECT_EQ(fn.columns_active, out.size());
        *calls_out = fn.calls;
      }
    return out;
  };
  auto range = [](uint32_t a, uint32_t z) {
    std::set<uint32_t> s;
    for (uint32_t c = a; c < z; ++c) s.insert(c);
    return s;
  };
  uint64_t n = 0;
  EXPECT_EQ(columns_of(1, "f", &n), range(0, 50));
  EXPECT_EQ(n, 50u);
  EXPECT_EQ(columns_of(1, "g", &n), range(50, 100));
  EXPECT_EQ(n, 50u);
  EXPECT_EQ(by_feedlet[1].calls, 100u);
  EXPECT_EQ(by_feedlet[1].functions.size(), 2u);
  EXPECT_EQ(columns_of(2, "h", &n), range(0, 100));
  EXPECT_EQ(n, 1u);
  std::set<uint32_t> f2;
  for (uint32_t i = 0; i < 10; ++i) f2.insert(1 + i * 10), f2.insert(2 + i * 10);
  EXPECT_EQ(columns_of(2, "f", &n), f2);
  EXPECT_EQ(n, 10u);
  EXPECT_EQ(columns_of(3, "g", &n), range(40, 60));
  EXPECT_EQ(by_feedlet[3].functions.size(), 1u);
  // Most columns first.
  EXPECT_EQ(scene->string(0, by_feedlet[2].functions[0].name), "h");
  // At most max_functions, the rest counted.
  const render::ThreadOverview one = render::thread_overview(*scene, 1, columns, 1);
  EXPECT_EQ(one.functions.size(), 1u);
  EXPECT_EQ(one.functions_left_out, 1u);
}

// --lanes and the thread list's filter: numbers, names, labels with the
// tid of threads that share a name, globs, /regular expressions/, and !X
// leaving lanes out; what matches nothing, or leaves nothing, says so.
TEST(ThreadViews, LanesAreChosenByNameGlobRegexAndLeftOutWithABang) {
  std::vector<Call> calls = {{1, kF, 1'000, 2'000}, {2, kF, 1'000, 2'000}, {3, kG, 1'000, 2'000}};
  auto scene = scene_of(write_calls("lanes.tine", calls));
  ASSERT_EQ(scene->lanes().size(), 3u);
  auto feedlets = [&](const std::string& spec) {
    std::string error;
    std::vector<uint32_t> out;
    for (uint32_t lane : scene->select_lanes(spec, error)) out.push_back(scene->lanes()[lane].feedlet);
    std::sort(out.begin(), out.end());
    return out;
  };
  using V = std::vector<uint32_t>;
  EXPECT_EQ(feedlets("worker"), (V{1, 2}));
  EXPECT_EQ(feedlets("worker (tid 2)"), (V{2})) << "a label with its tid names one of the two";
  EXPECT_EQ(feedlets("/^w.r/"), (V{1, 2}));
  EXPECT_EQ(feedlets("/o$/"), (V{3}));
  EXPECT_EQ(feedlets("/tid 1\\)/"), (V{1}));
  EXPECT_EQ(feedlets("!io"), (V{1, 2}));
  EXPECT_EQ(feedlets("!/^w/"), (V{3}));
  EXPECT_EQ(feedlets("w*,!worker (tid 1)"), (V{2}));
  EXPECT_EQ(feedlets("/^(io|x{1,2})$/"), (V{3})) << "a comma inside /.../ is the expression's";
  EXPECT_EQ(feedlets("!/^(io|x{1,2})$/"), (V{1, 2})) << "... and inside !/.../";
  std::string error;
  EXPECT_TRUE(scene->select_lanes("/[/", error).empty());
  EXPECT_NE(error.find("not a regular expression"), std::string::npos) << error;
  error.clear();
  EXPECT_TRUE(scene->select_lanes("!worker,!io", error).empty());
  EXPECT_NE(error.find("leaves out every lane"), std::string::npos) << error;
  error.clear();
  EXPECT_TRUE(scene->select_lanes("!nobody", error).empty());
  EXPECT_NE(error.find("no lane is 'nobody'"), std::string::npos) << error;
  // The thread list's filter is the same matcher.
  EXPECT_TRUE(render::lane_matches(scene->lanes()[0], "/^worker \\(tid \\d\\)$/"));
  EXPECT_FALSE(render::lane_matches(scene->lanes()[0], "/^io/"));
}

}  // namespace
}  // namespace tinescope::test
