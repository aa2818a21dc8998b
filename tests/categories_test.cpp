// Categories (issue 51, "the viewer can hide and show events by category"):
// found by one read of the trace, counted as the source files count them,
// and hidden from the timeline exactly: a picture with categories hidden
// equals, pixel for pixel and box for box, the picture of the same trace
// written without the hidden events.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "tinescope/analysis/categories.hpp"
#include "tinescope/import/trace_import.hpp"
#include "tinescope/render/picture.hpp"
#include "tinescope/render/scene.hpp"
#include "tinescope/tinescope.h"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

using analysis::Categories;

std::string sample_dir() {
  const std::string src = TINESCOPE_SOURCE_DIR;
  const std::string shared = src + "/../shared/samples/chrome-json";
  return ::access(shared.c_str(), R_OK) == 0 ? shared : src + "/tests/data/chrome-json";
}

// Imports a Chrome JSON file to a fresh trace and indexes it.
std::unique_ptr<index::TraceIndex> imported(const std::string& json, const std::string& out) {
  ::unlink(out.c_str());
  ::unlink((out + ".idx").c_str());
  import::ImportResult r;
  std::string error;
  EXPECT_TRUE(import::import_trace(json, out, r, error)) << json << ": " << error;
  auto ix = index::TraceIndex::build(out, error);
  EXPECT_TRUE(ix) << error;
  return ix;
}

std::map<std::string, uint64_t> counts(const Categories& c) {
  std::map<std::string, uint64_t> out;
  for (const auto& k : c.categories) out[k.name] = k.events;
  return out;
}

// Every Chrome sample: the events of each category equal a count of the
// source file's events that become intervals or instants (begins, complete
// events, instants, marks, samples, async begins, steps and instants,
// objects' creations and snapshots; not ends),
// each counted in every part of its comma-separated `cat`.
TEST(Categories, EverySamplesCategoriesCountAsItsSourceFile) {
  int files = 0;
  for (const char* name : {"async_begin_end", "big_trace", "flow_simple", "instance_counters", "instant_events",
                           "nanoseconds", "nestable_async", "simple_trace", "tall_trace", "trivial_trace"}) {
    const std::string json = sample_dir() + "/" + name + ".json";
    if (::access(json.c_str(), R_OK) != 0) continue;
    std::ifstream in(json);
    const nlohmann::json doc = nlohmann::json::parse(in);
    const nlohmann::json& events = doc.is_object() ? doc["traceEvents"] : doc;
    std::map<std::string, uint64_t> want;
    for (const auto& e : events) {
      const std::string ph = e.value("ph", "");
      static const std::set<std::string> kItems = {"B", "X", "i", "I", "R", "P", "b", "S", "n", "T", "p", "N", "O"};
      if (!kItems.count(ph)) continue;
      const auto parts = analysis::split_categories(e.value("cat", ""));
      if (parts.empty()) ++want[analysis::kNoCategory];
      for (const std::string& p : parts) ++want[p];
    }
    const std::string path = temp_path(std::string("categories-") + name);
    auto ix = imported(json, path);
    ASSERT_TRUE(ix);
    const Categories c = analysis::scan_categories(*ix);
    EXPECT_EQ(c.error, "");
    EXPECT_EQ(counts(c), want) << name;
    EXPECT_TRUE(analysis::records_categories(*ix->catalog_snapshot()) || want.count(analysis::kNoCategory) == want.size())
        << name;
    ::unlink(path.c_str()), ::unlink((path + ".idx").c_str());
    ++files;
  }
  EXPECT_GE(files, 8) << "the samples (or their copies in tests/data) are missing";
}

// The recorder's categories (ts_begin_c, ts_instant_c with named bits) are
// found too; a begin of the default category has none.
TEST(Categories, TheRecordersCategoriesAreFound) {
  const std::string path = temp_path("categories-recorder");
  ::unlink(path.c_str());
  constexpr uint64_t kIo = 2, kNet = 4;
  ts_category_name(kIo, "io");
  ts_category_name(kNet, "net");
  ts_config cfg{};
  cfg.file_path = path.c_str();
  ASSERT_EQ(ts_start(&cfg), 0) << ts_last_error();
  std::thread([] {
    for (int i = 0; i < 40; ++i) {
      const uint64_t cat = i % 4 == 0 ? kIo : i % 4 == 1 ? kNet : i % 4 == 2 ? (kIo | kNet) : 1;
      ts_begin_c(cat, i % 2 ? "odd" : "even");
      ts_instant_c(cat, "mark");
      ts_end_c(cat, i % 2 ? "odd" : "even");
    }
  }).join();
  ts_stop();
  std::string error;
  auto ix = index::TraceIndex::build(path, error);
  ASSERT_TRUE(ix) << error;
  const Categories c = analysis::scan_categories(*ix);
  // Of 40 begins and 40 instants: io 10+10 (and 10+10 of io,net), net the same, 20 with none.
  EXPECT_EQ(counts(c), (std::map<std::string, uint64_t>{{"io", 40}, {"net", 40}, {analysis::kNoCategory, 20}}));
  // even: i % 4 in {0, 2} (io; io,net); odd: {1, 3} (net; none); mark: all.
  auto catalog = ix->catalog_snapshot();
  auto hidden = [&](const std::vector<std::string>& h) {
    std::set<std::string> out;
    const auto names = analysis::hidden_names(c, h);
    for (size_t s = 0; s < names.size(); ++s)
      if (names[s]) out.insert(std::string(catalog->string(s)));
    return out;
  };
  EXPECT_EQ(hidden({"io"}), std::set<std::string>{}) << "even is also io,net: shown while net is";
  EXPECT_EQ(hidden({"io", "net"}), std::set<std::string>{"even"});
  EXPECT_EQ(hidden({"net", analysis::kNoCategory}), std::set<std::string>{"odd"});
  EXPECT_EQ(hidden({"io", "net", analysis::kNoCategory}), (std::set<std::string>{"even", "mark", "odd"}));
  EXPECT_EQ(c.mixed_names, 3u);
  ::unlink(path.c_str()), ::unlink((path + ".idx").c_str());
}

// ---- the picture with categories hidden, against the picture of the trace without those events

struct Ev {
  std::string ph, name, cat;
  int tid;
  uint64_t ts, dur;  // us
};

std::string to_json(const std::vector<Ev>& evs) {
  nlohmann::json list = nlohmann::json::array();
  for (const Ev& e : evs) {
    nlohmann::json j = {{"ph", e.ph}, {"name", e.name}, {"pid", 1}, {"tid", e.tid}, {"ts", e.ts}};
    if (!e.cat.empty()) j["cat"] = e.cat;
    if (e.ph == "X") j["dur"] = e.dur;
    if (e.ph == "i") j["s"] = "t";
    list.push_back(j);
  }
  return nlohmann::json{{"traceEvents", list}}.dump();
}

// Random lanes of nested intervals and instants. Parents are "frame.N" in
// category "frame" (never hidden: hiding a parent leaves its children in
// their rows, where the trace without it would lift them); leaves and
// instants are of names whose events are in one category, in one of two,
// in both at once ("io,net"), or in none. Each lane starts with a "frame"
// stack as deep as any, so both traces have the same rows, and ends, out
// of the window, with a "dummy" that both pictures hide: both lanes then
// answer by name.
std::vector<Ev> random_trace(std::mt19937_64& rng) {
  struct Leaf {
    std::string name;
    std::vector<std::string> cats;  // one chosen per event
  };
  const std::vector<Leaf> leaves = {{"read", {"io"}},      {"send", {"net"}},        {"poll", {"io", "net"}},
                                    {"copy", {"io,net"}},  {"think", {""}},          {"draw", {"gpu"}},
                                    {"blit", {"gpu", ""}}, {"flush", {"io", "gpu"}}};
  std::vector<Ev> out;
  constexpr int kDepth = 4;
  for (int tid = 1; tid <= 3; ++tid) {
    for (int d = 0; d <= kDepth; ++d) out.push_back({"X", "frame.0", "frame", tid, uint64_t(d), uint64_t(100 - 2 * d)});
    uint64_t t = 200;
    // A parent [t, t + len) with children inside, recursively.
    std::function<void(uint64_t, uint64_t, int)> fill = [&](uint64_t t0, uint64_t len, int depth) {
      uint64_t at = t0;
      while (at + 2 < t0 + len) {
        const uint64_t gap = rng() % 4, dur = 1 + rng() % std::max<uint64_t>(1, (t0 + len - at) / 2);
        if (at + gap + dur > t0 + len) break;
        at += gap;
        if (depth < kDepth && dur > 8 && rng() % 3 == 0) {
          out.push_back({"X", "frame." + std::to_string(rng() % 5), "frame", tid, at, dur});
          fill(at + 1, dur - 2, depth + 1);
        } else {
          const Leaf& l = leaves[rng() % leaves.size()];
          out.push_back({"X", l.name, l.cats[rng() % l.cats.size()], tid, at, dur});
        }
        if (rng() % 4 == 0) {
          const Leaf& l = leaves[rng() % leaves.size()];
          out.push_back({"i", l.name + ".mark", l.cats[rng() % l.cats.size()], tid, at, 0});
        }
        at += dur;
      }
    };
    for (int k = 0; k < 40; ++k) {
      const uint64_t len = 20 + rng() % 2000;
      if (rng() % 2) {
        out.push_back({"X", "frame." + std::to_string(rng() % 5), "frame", tid, t, len});
        fill(t + 1, len - 2, 1);
      } else {
        fill(t, len, 0);
      }
      t += len + rng() % 500;
    }
    out.push_back({"X", "dummy", "dummy", tid, 200'000, 10});
  }
  std::stable_sort(out.begin(), out.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts; });
  return out;
}

struct Drawn {
  std::vector<uint32_t> rgba, count;
  std::vector<std::string> top;  // top_name as text
  std::vector<std::tuple<uint32_t, std::string, int64_t, int64_t, float, float>> boxes;
};

Drawn draw(const render::Scene& scene, const render::Layout& layout, int64_t t0, int64_t t1, double width,
           uint32_t budget, std::shared_ptr<const std::vector<std::vector<uint8_t>>> hidden) {
  render::TimelineRequest r;
  r.t0 = t0, r.t1 = t1, r.width = width;
  r.layout = layout;
  r.decode_per_column = budget;
  r.hidden_names = std::move(hidden);
  const render::TimelinePicture p = render::build_timeline(scene, r);
  Drawn d{p.rgba, p.count, {}, {}};
  const auto& cat = *scene.sources()[0].catalog;
  for (uint32_t n : p.top_name) d.top.emplace_back(n ? cat.string(n) : "");
  for (const render::Box& b : p.boxes)
    d.boxes.emplace_back(b.row, std::string(cat.string(b.name)), b.start, b.end, b.x0, b.x1);
  std::sort(d.boxes.begin(), d.boxes.end());
  return d;
}

TEST(Categories, AHiddenCategorysPictureIsThePictureOfTheTraceWithoutIt) {
  const uint64_t seed = test_seed(51);
  std::mt19937_64 rng(seed);
  const std::vector<std::string> all = {"io", "net", "gpu", analysis::kNoCategory};
  int compared = 0;
  for (int round = 0; round < 3; ++round) {
    const std::vector<Ev> evs = random_trace(rng);
    const std::string dir = scratch_dir();
    const std::string json = dir + "/categories-" + std::to_string(round) + ".json";
    write_file(json, to_json(evs));
    const std::string path = temp_path("categories-full");
    auto ix = imported(json, path);
    ASSERT_TRUE(ix);
    render::Scene full;
    std::string error;
    ASSERT_TRUE(full.add_trace(path, error)) << error;
    const auto cats = std::make_shared<const Categories>(analysis::scan_categories(*full.sources()[0].index));
    ASSERT_EQ(cats->error, "");
    for (int mask = 0; mask < 16; ++mask) {
      std::vector<std::string> hide = {"dummy"};
      for (int b = 0; b < 4; ++b)
        if (mask >> b & 1) hide.push_back(all[b]);
      const auto names = analysis::hidden_names(*cats, hide);
      std::set<std::string> hidden_text;
      const auto& catalog = *full.sources()[0].catalog;
      for (size_t s = 0; s < names.size(); ++s)
        if (names[s]) hidden_text.insert(std::string(catalog.string(s)));
      // The brute-force rule: a name is hidden when each of its events has
      // every part of its category hidden.
      std::map<std::string, bool> shown;  // name -> some event shown
      for (const Ev& e : evs) {
        const auto parts = analysis::split_categories(e.cat);
        bool any = parts.empty() && std::find(hide.begin(), hide.end(), analysis::kNoCategory) == hide.end();
        for (const std::string& p : parts) any |= std::find(hide.begin(), hide.end(), p) == hide.end();
        shown[e.name] |= any;
      }
      for (const auto& [name, is_shown] : shown) EXPECT_EQ(hidden_text.count(name) == 0, is_shown) << name;

      // The same trace without the hidden names' events (but the dummies).
      std::vector<Ev> kept;
      for (const Ev& e : evs)
        if (!hidden_text.count(e.name) || e.name == "dummy") kept.push_back(e);
      const std::string json2 = dir + "/categories-kept.json", path2 = temp_path("categories-kept");
      write_file(json2, to_json(kept));
      auto ix2 = imported(json2, path2);
      ASSERT_TRUE(ix2);
      render::Scene less;
      ASSERT_TRUE(less.add_trace(path2, error)) << error;
      const auto less_cats = std::make_shared<const Categories>(analysis::scan_categories(*less.sources()[0].index));
      const auto full_hidden = std::make_shared<const std::vector<std::vector<uint8_t>>>(1, names);
      const auto less_hidden =
          std::make_shared<const std::vector<std::vector<uint8_t>>>(1, analysis::hidden_names(*less_cats, {"dummy"}));
      const render::Layout layout = render::layout_lanes(full, {});
      // (Both drawn in the full trace's rows: with every instant hidden, the
      // trace without them has no instant rows.)
      ASSERT_EQ(full.first_ns(), less.first_ns());
      // The whole trace but the dummies, and random windows of it.
      const int64_t first = full.first_ns(), end = first + 150'000'000;
      std::vector<std::pair<int64_t, int64_t>> windows = {{first, end}};
      for (int w = 0; w < 3; ++w) {
        const int64_t a = first + int64_t(rng() % 100'000'000), len = 1000 + int64_t(rng() % 20'000'000);
        windows.push_back({a, a + len});
      }
      // At rest (decoded): the same picture as the trace without them.
      for (const auto& [t0, t1] : windows)
        for (double width : {300.0, 1280.0}) {
          const Drawn a = draw(full, layout, t0, t1, width, render::kAtRestDecodePerColumn, full_hidden);
          const Drawn b = draw(less, layout, t0, t1, width, render::kAtRestDecodePerColumn, less_hidden);
          SCOPED_TRACE("seed " + std::to_string(seed) + " round " + std::to_string(round) + " mask " +
                       std::to_string(mask) + " window " + std::to_string(t0) + ".." + std::to_string(t1) + " width " +
                       std::to_string(width));
          EXPECT_EQ(a.rgba, b.rgba);
          EXPECT_EQ(a.count, b.count);
          EXPECT_EQ(a.top, b.top);
          EXPECT_EQ(a.boxes, b.boxes);
          ++compared;
        }
      // Over a budget of one event a column (the stored levels, where a
      // lane's depth streams would merge every name): no hidden name is
      // any column's name or any box's. (Which lanes decode follows their
      // events, so the two traces' pictures differ here.)
      for (const auto& [t0, t1] : windows) {
        const Drawn a = draw(full, layout, t0, t1, 1280, 1, full_hidden);
        for (const std::string& name : a.top) EXPECT_EQ(hidden_text.count(name), 0u) << name << " mask " << mask;
        for (const auto& box : a.boxes) EXPECT_EQ(hidden_text.count(std::get<1>(box)), 0u) << std::get<1>(box);
      }
      ::unlink(path2.c_str()), ::unlink((path2 + ".idx").c_str());
    }
    ::unlink(path.c_str()), ::unlink((path + ".idx").c_str());
  }
  EXPECT_EQ(compared, 3 * 16 * 4 * 2);
}

// The command line: `stats --categories` lists them (and --json), and
// `render --hide-categories` refuses a category no event is in, naming
// those there are.
TEST(Categories, StatsListsThemAndRenderRefusesOneThatIsNot) {
  const std::string json = sample_dir() + "/big_trace.json";
  const std::string path = temp_path("categories-cli");
  auto ix = imported(json, path);
  ASSERT_TRUE(ix);
  const Categories c = analysis::scan_categories(*ix);
  ASSERT_GE(c.categories.size(), 4u);
  std::string out;
  ASSERT_EQ(run(bin("app/tinescope") + " stats " + path + " --categories --json", &out), 0);
  const nlohmann::json j = nlohmann::json::parse(out);
  ASSERT_EQ(j["categories"].size(), c.categories.size());
  for (size_t i = 0; i < c.categories.size(); ++i) {
    EXPECT_EQ(j["categories"][i]["category"], c.categories[i].name);
    EXPECT_EQ(j["categories"][i]["events"], c.categories[i].events);
    EXPECT_EQ(j["categories"][i]["names"], c.categories[i].names);
  }
  ASSERT_EQ(run(bin("app/tinescope") + " stats " + path + " --categories", &out), 0);
  EXPECT_NE(out.find("webkit"), std::string::npos) << out;
  EXPECT_EQ(run(bin("app/tinescope") + " render " + path + " --hide-categories webkit,nosuch -o " + path + ".png 2>&1", &out), 2);
  EXPECT_NE(out.find("no event is in category 'nosuch' (its categories: gpu, renderer, renderer_host, webkit)"),
            std::string::npos) << out;
  EXPECT_EQ(run(bin("app/tinescope") + " render " + path + " --hide-categories ' , ' -o " + path + ".png 2>&1", &out), 2);
  EXPECT_NE(out.find("name the categories"), std::string::npos) << out;
  EXPECT_NE(run(bin("app/tinescope") + " render " + path + " --figure scope --hide-categories webkit -o " + path +
                ".png 2>&1", &out), 0);
  EXPECT_NE(out.find("applies to the timeline"), std::string::npos) << out;
  EXPECT_NE(::access((path + ".png").c_str(), F_OK), 0) << "no picture for a refused command";
  ::unlink(path.c_str()), ::unlink((path + ".idx").c_str());
}

// What the samples lack: object events (N, O, D) keep their category on
// their lifetime and snapshots; and past the importer's 191 argument shapes,
// where an event's arguments are one text "cat=...; ...", the category is
// still read.
TEST(Categories, ObjectsAndArgumentsKeptAsTextKeepTheirCategory) {
  std::string events;
  auto add = [&](const std::string& e) { events += (events.empty() ? "" : ",\n") + e; };
  add(R"({"name":"Frame","cat":"loading","ph":"N","id":"0x1","ts":10,"pid":1,"tid":1})");
  add(R"({"name":"Frame","cat":"loading","ph":"O","id":"0x1","ts":20,"pid":1,"tid":1,"args":{"snapshot":{"a":1}}})");
  add(R"({"name":"Frame","cat":"loading","ph":"D","id":"0x1","ts":30,"pid":1,"tid":1})");
  // 300 shapes of arguments, each event in "io": the last 109 are kept as text.
  for (int k = 0; k < 300; ++k)
    add(R"({"name":"op","cat":"io","ph":"X","ts":)" + std::to_string(100 + 10 * k) +
        R"(,"dur":5,"pid":1,"tid":2,"args":{"k)" + std::to_string(k) + R"(":1}})");
  const std::string json = scratch_dir() + "/categories-objects.json", path = temp_path("categories-objects");
  write_file(json, "{\"traceEvents\":[" + events + "]}");
  auto ix = imported(json, path);
  ASSERT_TRUE(ix);
  const Categories c = analysis::scan_categories(*ix);
  // The lifetime (an interval) and its snapshot (an instant); 300 ops.
  EXPECT_EQ(counts(c), (std::map<std::string, uint64_t>{{"io", 300}, {"loading", 2}}));
  ::unlink(path.c_str()), ::unlink((path + ".idx").c_str());
}

}  // namespace
}  // namespace tinescope::test
