#include "tinescope/analysis/time_share.hpp"

#include <algorithm>
#include <map>

namespace tinescope::analysis {

const char* share_by_name(ShareBy by) {
  switch (by) {
    case ShareBy::Thread: return "thread";
    case ShareBy::Task: return "task";
    default: return "name";
  }
}

bool parse_share_by(const std::string& text, ShareBy& by) {
  for (ShareBy k : {ShareBy::Name, ShareBy::Thread, ShareBy::Task})
    if (text == share_by_name(k)) return by = k, true;
  return false;
}

std::vector<Share> time_share(const index::TraceIndex& ix, const std::vector<uint32_t>& feedlets,
                              const std::vector<std::string>& labels, uint64_t t0, uint64_t t1, ShareBy by) {
  std::map<std::string, Share> shares;
  auto clipped = [&](uint64_t s, uint64_t e) { return std::min(e, t1) > std::max(s, t0) ? std::min(e, t1) - std::max(s, t0) : 0; };
  auto add = [&](const std::string& label, uint64_t s, uint64_t e, int sign = 1) {
    Share& sh = shares[label];
    sh.label = label;
    const uint64_t d = clipped(s, e);
    if (sign > 0) sh.ticks += d, ++sh.items;
    else sh.ticks -= std::min(sh.ticks, d);
  };
  if (t1 <= t0) return {};
  for (size_t i = 0; i < feedlets.size(); ++i) {
    const uint32_t feedlet = feedlets[i];
    // Items that end in the window, and those still running at its end.
    std::vector<index::Item> items;
    ix.lane_items(feedlet, t0, t1, [&](const index::Item& it) {
      const bool wanted = by == ShareBy::Task ? it.kind == index::StreamKind::Sched : it.kind == index::StreamKind::Interval;
      if (wanted) items.push_back(it);
    });
    const index::RunningAcross edge = ix.running_across(feedlet, t1);
    if (by == ShareBy::Task) {
      for (const index::Item& it : items) add(std::string(ix.catalog().string(it.name)), it.start, it.end);
      for (const index::RunningJob& r : edge.jobs) add(std::string(ix.catalog().string(r.task)), r.start, t1);
      continue;
    }
    for (const index::OpenInterval& o : edge.open) items.push_back({index::StreamKind::Interval, false, false, o.name, o.depth, 0, o.start, t1, 0});
    for (const index::Item& it : edge.spans) items.push_back({it.kind, it.complete, it.truncated, it.name, it.depth, 0, it.start, t1, 0});
    if (by == ShareBy::Thread) {
      const std::string label = i < labels.size() ? labels[i] : "feedlet " + std::to_string(feedlet);
      for (const index::Item& it : items)
        if (it.depth == 0) add(label, it.start, it.end);
      continue;
    }
    // By name, own time: in start order (outer before inner at one start),
    // each interval's time less its children's, found by the name open at
    // the depth above it.
    std::sort(items.begin(), items.end(), [](const index::Item& a, const index::Item& b) {
      return a.start != b.start ? a.start < b.start : a.depth < b.depth;
    });
    std::vector<std::string> open;  // the name open at each depth
    for (const index::Item& it : items) {
      const std::string name(ix.catalog().string(it.name));
      if (open.size() <= it.depth) open.resize(it.depth + 1);
      open[it.depth] = name;
      add(name, it.start, it.end);
      if (it.depth > 0 && !open[it.depth - 1].empty()) add(open[it.depth - 1], it.start, it.end, -1);
    }
  }
  std::vector<Share> out;
  for (auto& [label, s] : shares)
    if (s.ticks) out.push_back(s);
  std::sort(out.begin(), out.end(), [](const Share& a, const Share& b) {
    return a.ticks != b.ticks ? a.ticks > b.ticks : a.label < b.label;
  });
  return out;
}

}  // namespace tinescope::analysis
