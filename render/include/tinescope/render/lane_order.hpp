// The order of a figure's lanes (issue 52, "lane order"): as they first
// appeared (the scene's order), by name, grouped by process, or "shortest
// arrows": an order that makes the arrows between lanes short, a heuristic
// for the minimum linear arrangement of the message graph (Threadmill found
// 1-D force-directed layout disappointing and points to such heuristics).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinescope/render/scene.hpp"

namespace tinescope::render {

enum class LaneOrder { FirstAppearance, ByName, ByProcess, ShortestArrows };

// "first", "name", "process", "arrows"; false for anything else.
bool parse_lane_order(const std::string& text, LaneOrder& out);
const char* lane_order_name(LaneOrder o);

// The message graph of the lanes: for each pair of lanes, how many messages
// went between them (either way), from every source's flow table.
struct LaneGraph {
  std::vector<uint32_t> lanes;  // scene lane numbers, as given
  struct Edge {
    uint32_t a, b;  // indices into lanes, a < b
    uint64_t messages;
  };
  std::vector<Edge> edges;
};
LaneGraph lane_graph(const Scene& scene, const std::vector<uint32_t>& lanes);

// Those of `lanes` (empty: all of the scene's) that send or receive a
// message, in their order: a sequence diagram's lifelines. Reads every
// source's flow table once, as lane_graph.
std::vector<uint32_t> message_lanes(const Scene& scene, const std::vector<uint32_t>& lanes);

// The total arrow length of `order` (scene lane numbers): the sum over the
// graph's messages of how many lanes apart their two lanes are.
uint64_t arrow_length(const LaneGraph& g, const std::vector<uint32_t>& order);

// `lanes` (empty: all of the scene's) in the order asked for. Lanes of one
// process stay together in every order (the timeline gives each process
// one header): shortest arrows orders the lanes, then places each process
// where its lanes landed on average. With `lengths`, the total arrow length
// of the first-appearance order and of the one returned (shortest arrows
// only: the others leave it alone).
struct ArrowLengths {
  uint64_t first = 0, chosen = 0;
};
std::vector<uint32_t> order_lanes(const Scene& scene, std::vector<uint32_t> lanes, LaneOrder order,
                                  ArrowLengths* lengths = nullptr);

}  // namespace tinescope::render
