#include "tinescope/render/activity.hpp"

#include <algorithm>

namespace tinescope::render {

std::vector<ActiveSpan> activity_spans(const Scene& scene, const std::vector<uint32_t>& lanes, std::string_view name,
                                       int64_t t0, int64_t t1, uint32_t columns, uint32_t decode_per_column) {
  std::vector<ActiveSpan> out;
  if (t1 <= t0 || name.empty()) return out;
  std::vector<uint32_t> all;
  if (lanes.empty())
    for (uint32_t i = 0; i < scene.lanes().size(); ++i) all.push_back(i);
  std::vector<std::pair<int64_t, int64_t>> spans;  // one lane's
  for (uint32_t lane : lanes.empty() ? all : lanes) {
    if (lane >= scene.lanes().size()) continue;
    const Lane& l = scene.lanes()[lane];
    const index::TraceIndex& ix = *scene.sources()[l.source].index;
    const int stream = ix.find_stream(index::StreamKind::Interval, l.feedlet, name);
    if (stream < 0) continue;
    const ClockWindow cw(scene.sources()[l.source].catalog->clock, t0, t1);
    spans.clear();
    auto mark = [&](uint64_t a, uint64_t b) {  // ticks, inclusive
      if (b < cw.k0 || a > cw.k1) return;
      spans.push_back({std::max(t0, cw.ns(std::max(a, cw.k0))), std::min(t1, cw.ns(std::min(b, cw.k1)) + 1)});
    };
    const index::Buckets b = ix.query(stream, cw.k0, cw.k1, std::max<uint32_t>(1, columns), decode_per_column);
    for (const index::Node& n : b.nodes) {
      const uint64_t b0 = n.bucket << b.shift, b1 = b0 + ((uint64_t(1) << b.shift) - 1);
      mark(std::max(b0, n.iv.min_start), std::min(b1, n.iv.max_end));
      mark(n.iv.longest_end - n.iv.max_dur, n.iv.longest_end);
    }
    const index::RunningAcross across = ix.running_across(l.feedlet, cw.k1);
    for (const index::OpenInterval& o : across.open)
      if (scene.string(l.source, o.name) == name) mark(o.start, cw.k1);
    for (const index::Item& it : across.spans)
      if (scene.string(l.source, it.name) == name) mark(it.start, cw.k1);
    std::sort(spans.begin(), spans.end());
    for (const auto& [a, z] : spans) {
      if (!out.empty() && out.back().lane == lane && a <= out.back().t1) out.back().t1 = std::max(out.back().t1, z);
      else out.push_back({lane, a, z});
    }
  }
  return out;
}

}  // namespace tinescope::render
