#include "tinescope/render/lane_order.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <numeric>

#include "tinescope/analysis/message_report.hpp"

namespace tinescope::render {

bool parse_lane_order(const std::string& text, LaneOrder& out) {
  if (text == "first") out = LaneOrder::FirstAppearance;
  else if (text == "name") out = LaneOrder::ByName;
  else if (text == "process") out = LaneOrder::ByProcess;
  else if (text == "arrows") out = LaneOrder::ShortestArrows;
  else return false;
  return true;
}

const char* lane_order_name(LaneOrder o) {
  switch (o) {
    case LaneOrder::FirstAppearance: return "first";
    case LaneOrder::ByName: return "name";
    case LaneOrder::ByProcess: return "process";
    case LaneOrder::ShortestArrows: return "arrows";
  }
  return "first";
}

LaneGraph lane_graph(const Scene& scene, const std::vector<uint32_t>& lanes) {
  LaneGraph g;
  g.lanes = lanes;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> index_of;  // (source, feedlet) -> index into lanes
  for (uint32_t i = 0; i < lanes.size(); ++i) {
    const Lane& l = scene.lanes()[lanes[i]];
    index_of[{l.source, l.feedlet}] = i;
  }
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> weight;
  for (uint32_t s = 0; s < scene.sources().size(); ++s) {
    const index::TraceIndex& ix = *scene.sources()[s].index;
    analysis::for_each_flow(ix, ix.first_ts(), ix.last_ts(), [&](const index::Flow& f) {
      if (!f.matched()) return;
      auto a = index_of.find({s, f.src}), b = index_of.find({s, f.dst});
      if (a == index_of.end() || b == index_of.end() || a->second == b->second) return;
      ++weight[{std::min(a->second, b->second), std::max(a->second, b->second)}];
    });
  }
  for (const auto& [ab, w] : weight) g.edges.push_back({ab.first, ab.second, w});
  return g;
}

std::vector<uint32_t> message_lanes(const Scene& scene, const std::vector<uint32_t>& lanes) {
  std::set<std::pair<uint32_t, uint32_t>> talk;  // (source, feedlet)
  for (uint32_t s = 0; s < scene.sources().size(); ++s) {
    const index::TraceIndex& ix = *scene.sources()[s].index;
    analysis::for_each_flow(ix, ix.first_ts(), ix.last_ts(), [&](const index::Flow& f) {
      if (f.flags & index::kFlowSent) talk.insert({s, f.src});
      if (f.flags & index::kFlowReceived) talk.insert({s, f.dst});
    });
  }
  std::vector<uint32_t> out;
  auto keep = [&](uint32_t lane) {
    const Lane& l = scene.lanes()[lane];
    if (talk.count({l.source, l.feedlet})) out.push_back(lane);
  };
  if (lanes.empty())
    for (uint32_t i = 0; i < scene.lanes().size(); ++i) keep(i);
  for (uint32_t lane : lanes) keep(lane);
  return out;
}

namespace {

// Cost of an order given as each lane's position (indices into g.lanes).
uint64_t cost_of(const LaneGraph& g, const std::vector<uint32_t>& pos) {
  uint64_t c = 0;
  for (const LaneGraph::Edge& e : g.edges) c += e.messages * uint64_t(pos[e.a] > pos[e.b] ? pos[e.a] - pos[e.b] : pos[e.b] - pos[e.a]);
  return c;
}

struct Neighbours {
  std::vector<std::vector<std::pair<uint32_t, double>>> of;  // [lane] -> (lane, messages)
  explicit Neighbours(const LaneGraph& g) : of(g.lanes.size()) {
    for (const LaneGraph::Edge& e : g.edges) {
      of[e.a].emplace_back(e.b, double(e.messages));
      of[e.b].emplace_back(e.a, double(e.messages));
    }
  }
};

// Swaps neighbours in the order while that shortens the arrows (a swap's
// gain needs only the two lanes' own edges). `order`: indices into lanes.
void improve_by_swaps(const Neighbours& nb, std::vector<uint32_t>& order) {
  const size_t n = order.size();
  std::vector<uint32_t> pos(n);
  for (uint32_t i = 0; i < n; ++i) pos[order[i]] = i;
  for (int pass = 0; pass < 200; ++pass) {
    bool better = false;
    for (uint32_t i = 0; i + 1 < n; ++i) {
      const uint32_t u = order[i], v = order[i + 1];
      double delta = 0;  // u moves right one place, v left one
      for (auto [x, w] : nb.of[u])
        if (x != v) delta += pos[x] < i ? w : -w;
      for (auto [x, w] : nb.of[v])
        if (x != u) delta += pos[x] > i + 1 ? w : -w;
      if (delta < 0) {
        std::swap(order[i], order[i + 1]);
        pos[u] = i + 1, pos[v] = i;
        better = true;
      }
    }
    if (!better) break;
  }
}

// Each lane to the weighted mean place of its neighbours, again and again
// (the barycentre heuristic), keeping the best order seen.
void improve_by_barycentres(const LaneGraph& g, const Neighbours& nb, std::vector<uint32_t>& order) {
  const size_t n = order.size();
  std::vector<uint32_t> pos(n), best = order;
  for (uint32_t i = 0; i < n; ++i) pos[order[i]] = i;
  uint64_t best_cost = cost_of(g, pos);
  std::vector<double> key(n);
  for (int round = 0; round < 50; ++round) {
    for (uint32_t u = 0; u < n; ++u) {
      double sum = 0, w = 0;
      for (auto [x, m] : nb.of[u]) sum += m * pos[x], w += m;
      key[u] = w > 0 ? (sum + pos[u]) / (w + 1) : pos[u];  // (its own place weighs one: isolated lanes stay)
    }
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key[a] < key[b]; });
    for (uint32_t i = 0; i < n; ++i) pos[order[i]] = i;
    const uint64_t c = cost_of(g, pos);
    if (c < best_cost) best_cost = c, best = order;
  }
  order = best;
}

// The lanes along the Fiedler vector of the graph's Laplacian (spectral
// ordering), by power iteration on (c I - L) away from the constant vector.
std::vector<uint32_t> spectral_order(const Neighbours& nb) {
  const size_t n = nb.of.size();
  std::vector<double> degree(n, 0), x(n), y(n);
  size_t linked = 0;
  for (size_t u = 0; u < n; ++u) {
    for (auto [v, w] : nb.of[u]) degree[u] += w;
    linked += degree[u] > 0;
  }
  const double c = 2 * (*std::max_element(degree.begin(), degree.end())) + 1;
  // Lanes no message touches are left out (at 0): each would be an
  // eigenvector of its own at the top, and the iteration would find it.
  for (size_t u = 0; u < n; ++u) x[u] = degree[u] > 0 ? std::sin(double(u) * 12.9898 + 1.0) : 0;  // (fixed: the same order every time)
  for (int it = 0; it < 2000 && linked; ++it) {
    double mean = 0;
    for (size_t u = 0; u < n; ++u) mean += degree[u] > 0 ? x[u] : 0;
    mean /= double(linked);
    for (size_t u = 0; u < n; ++u) x[u] = degree[u] > 0 ? x[u] - mean : 0;
    for (size_t u = 0; u < n; ++u) {
      double lx = degree[u] * x[u];
      for (auto [v, w] : nb.of[u]) lx -= w * x[v];
      y[u] = c * x[u] - lx;
    }
    double norm = 0;
    for (double v : y) norm += v * v;
    norm = std::sqrt(norm);
    if (norm == 0) break;
    for (size_t u = 0; u < n; ++u) x[u] = y[u] / norm;
  }
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return x[a] < x[b]; });
  return order;
}

// "q.9" before "q.10": runs of digits compare as numbers.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(uint8_t(a[i])) && std::isdigit(uint8_t(b[j]))) {
      size_t i1 = i, j1 = j;
      while (i1 < a.size() && std::isdigit(uint8_t(a[i1]))) ++i1;
      while (j1 < b.size() && std::isdigit(uint8_t(b[j1]))) ++j1;
      const std::string da = a.substr(i, i1 - i), db = b.substr(j, j1 - j);
      const size_t za = da.find_first_not_of('0'), zb = db.find_first_not_of('0');
      const std::string na = za == std::string::npos ? "" : da.substr(za), nb = zb == std::string::npos ? "" : db.substr(zb);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = i1, j = j1;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i, ++j;
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

uint64_t arrow_length(const LaneGraph& g, const std::vector<uint32_t>& order) {
  std::map<uint32_t, uint32_t> place;
  for (uint32_t i = 0; i < order.size(); ++i) place[order[i]] = i;
  std::vector<uint32_t> pos(g.lanes.size(), 0);
  for (uint32_t i = 0; i < g.lanes.size(); ++i) {
    auto p = place.find(g.lanes[i]);
    pos[i] = p == place.end() ? 0 : p->second;
  }
  return cost_of(g, pos);
}

std::vector<uint32_t> order_lanes(const Scene& scene, std::vector<uint32_t> lanes, LaneOrder how,
                                  ArrowLengths* lengths) {
  if (lanes.empty())
    for (uint32_t i = 0; i < scene.lanes().size(); ++i) lanes.push_back(i);
  std::erase_if(lanes, [&](uint32_t l) { return l >= scene.lanes().size(); });
  std::sort(lanes.begin(), lanes.end());  // the scene's order: first appearance
  auto group_rank = [&](const std::vector<uint32_t>& order) {  // each group by where it first appears
    std::map<std::string, size_t> rank;
    for (uint32_t l : order) rank.try_emplace(scene.lanes()[l].group, rank.size());
    return rank;
  };
  switch (how) {
    case LaneOrder::FirstAppearance: break;
    case LaneOrder::ByName: {
      auto rank = group_rank(lanes);
      std::stable_sort(lanes.begin(), lanes.end(), [&](uint32_t a, uint32_t b) {
        const Lane &x = scene.lanes()[a], &y = scene.lanes()[b];
        if (rank[x.group] != rank[y.group]) return rank[x.group] < rank[y.group];
        return natural_less(x.label(), y.label());
      });
      break;
    }
    case LaneOrder::ByProcess:
      std::stable_sort(lanes.begin(), lanes.end(), [&](uint32_t a, uint32_t b) {
        return natural_less(scene.lanes()[a].group, scene.lanes()[b].group);
      });
      break;
    case LaneOrder::ShortestArrows: {
      const LaneGraph g = lane_graph(scene, lanes);
      const Neighbours nb(g);
      const size_t n = lanes.size();
      std::vector<uint32_t> first(n);
      std::iota(first.begin(), first.end(), 0u);
      // Candidates: the first-appearance order and the spectral one, each
      // bettered by barycentres then swaps; the shortest wins (never
      // longer than first appearance).
      std::vector<uint32_t> best = first;
      std::vector<uint32_t> pos(n);
      auto cost = [&](const std::vector<uint32_t>& order) {
        for (uint32_t i = 0; i < n; ++i) pos[order[i]] = i;
        return cost_of(g, pos);
      };
      uint64_t best_cost = cost(first);
      for (std::vector<uint32_t> o : {first, n ? spectral_order(nb) : first}) {
        improve_by_barycentres(g, nb, o);
        improve_by_swaps(nb, o);
        if (const uint64_t c = cost(o); c < best_cost) best_cost = c, best = o;
      }
      // Lanes no message touches go last, as they came; then each process's
      // lanes together, the processes by their lanes' mean place.
      std::vector<uint32_t> out;
      std::vector<bool> linked(n, false);
      for (const LaneGraph::Edge& e : g.edges) linked[e.a] = linked[e.b] = true;
      for (uint32_t i : best)
        if (linked[i]) out.push_back(lanes[i]);
      for (uint32_t i = 0; i < n; ++i)
        if (!linked[i]) out.push_back(lanes[i]);
      std::map<std::string, std::pair<double, double>> mean;  // group -> (sum of places, lanes)
      for (uint32_t i = 0; i < out.size(); ++i) {
        auto& [sum, count] = mean[scene.lanes()[out[i]].group];
        sum += i, count += 1;
      }
      std::stable_sort(out.begin(), out.end(), [&](uint32_t a, uint32_t b) {
        const auto &x = mean[scene.lanes()[a].group], &y = mean[scene.lanes()[b].group];
        const double mx = x.first / x.second, my = y.first / y.second;
        return mx != my ? mx < my : scene.lanes()[a].group < scene.lanes()[b].group;
      });
      // (Keeping processes together can cost more than it saved: then the
      // lanes stay as they came.)
      const uint64_t first_length = arrow_length(g, lanes), out_length = arrow_length(g, out);
      if (out_length > first_length) out = lanes;
      if (lengths) lengths->first = first_length, lengths->chosen = std::min(out_length, first_length);
      lanes = std::move(out);
      break;
    }
  }
  return lanes;
}

}  // namespace tinescope::render
