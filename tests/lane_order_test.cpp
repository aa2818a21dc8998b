// The lanes' order (issue 52): by name (numbers as numbers), by process,
// and shortest arrows, whose total arrow length is counted here from every
// message and never exceeds the order the threads came in.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "tinescope/render/lane_order.hpp"
#include "tinescope/render/scene.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

// The brute force: every matched message between two of `order`'s lanes,
// how many places apart they are.
uint64_t counted_length(const render::Scene& scene, const std::vector<uint32_t>& order) {
  std::map<std::pair<uint32_t, uint32_t>, size_t> place;  // (source, feedlet) -> place
  for (size_t i = 0; i < order.size(); ++i)
    place[{scene.lanes()[order[i]].source, scene.lanes()[order[i]].feedlet}] = i;
  uint64_t total = 0;
  for (uint32_t s = 0; s < scene.sources().size(); ++s)
    for (const index::Flow& f : scene.sources()[s].index->flows(0, UINT64_MAX)) {
      auto a = place.find({s, f.src}), b = place.find({s, f.dst});
      if (f.matched() && a != place.end() && b != place.end())
        total += a->second > b->second ? a->second - b->second : b->second - a->second;
    }
  return total;
}

TEST(LaneOrder, EachOrderIsAPermutationAndShortestArrowsIsShorter) {
  const std::string path = record_queues("order", "--queues 24 --producers 2 --duration 0.3");
  ASSERT_FALSE(path.empty());
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(path, error)) << error;
  std::vector<uint32_t> all(scene.lanes().size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  const std::set<uint32_t> every(all.begin(), all.end());

  EXPECT_EQ(render::order_lanes(scene, {}, render::LaneOrder::FirstAppearance), all);
  std::vector<uint32_t> reversed(all.rbegin(), all.rend());
  EXPECT_EQ(render::order_lanes(scene, reversed, render::LaneOrder::FirstAppearance), all);

  // By name: "q.9" before "q.10"; the producers' "p" before "q"; the main thread's "t" last.
  const std::vector<uint32_t> named = render::order_lanes(scene, {}, render::LaneOrder::ByName);
  ASSERT_EQ(std::set<uint32_t>(named.begin(), named.end()), every);
  auto key = [&](uint32_t lane) {
    const std::string& n = scene.lanes()[lane].label();
    const size_t dot = n.find('.');
    const bool numbered = dot != std::string::npos && dot + 1 < n.size() && std::isdigit(uint8_t(n[dot + 1]));
    return std::make_pair(n.substr(0, dot), numbered ? std::stol(n.substr(dot + 1)) : -1L);
  };
  for (size_t i = 1; i < named.size(); ++i) EXPECT_LE(key(named[i - 1]), key(named[i])) << i;

  render::ArrowLengths lengths;
  const std::vector<uint32_t> shortest = render::order_lanes(scene, {}, render::LaneOrder::ShortestArrows, &lengths);
  ASSERT_EQ(shortest.size(), all.size());
  ASSERT_EQ(std::set<uint32_t>(shortest.begin(), shortest.end()), every);
  EXPECT_EQ(lengths.first, counted_length(scene, all));
  EXPECT_EQ(lengths.chosen, counted_length(scene, shortest));
  EXPECT_EQ(render::arrow_length(render::lane_graph(scene, all), shortest), lengths.chosen);
  EXPECT_GT(lengths.first, 0u);
  // The queues forward along a ring in a shuffled order: an order that
  // follows it has far shorter arrows than the one the threads came in
  // (0.5-0.63 with 24 queues, by how the threads happened to start).
  EXPECT_LE(double(lengths.chosen), 0.75 * double(lengths.first)) << lengths.chosen << " against " << lengths.first;
  // A lane no message touches goes last (the process's main thread).
  const std::string last = scene.lanes()[shortest.back()].label();
  EXPECT_EQ(last.find("q."), std::string::npos) << last;

  // A subset keeps to itself.
  const std::vector<uint32_t> some = scene.select_lanes("q.0*,producer.*", error);
  ASSERT_FALSE(some.empty()) << error;
  const std::vector<uint32_t> part = render::order_lanes(scene, some, render::LaneOrder::ShortestArrows, &lengths);
  EXPECT_EQ(std::set<uint32_t>(part.begin(), part.end()), std::set<uint32_t>(some.begin(), some.end()));
  EXPECT_LE(lengths.chosen, lengths.first);
}

TEST(LaneOrder, ParsesItsNames) {
  render::LaneOrder o;
  for (const char* n : {"first", "name", "process", "arrows"}) {
    ASSERT_TRUE(render::parse_lane_order(n, o)) << n;
    EXPECT_STREQ(render::lane_order_name(o), n);
  }
  EXPECT_FALSE(render::parse_lane_order("shortest", o));
}

}  // namespace
}  // namespace tinescope::test
