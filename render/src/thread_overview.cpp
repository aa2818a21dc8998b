#include "tinescope/render/thread_overview.hpp"

#include <algorithm>
#include <unordered_map>

#include "tinescope/render/picture.hpp"

namespace tinescope::render {

ThreadOverview thread_overview(const Scene& scene, uint32_t lane, uint32_t columns, uint32_t max_functions) {
  ThreadOverview o;
  o.lane = lane;
  o.columns = std::max<uint32_t>(1, columns);
  o.t0 = scene.first_ns();
  o.t1 = std::max(scene.last_ns() + 1, o.t0 + 1);
  if (lane >= scene.lanes().size()) return o;
  const Lane& l = scene.lanes()[lane];
  o.source = l.source, o.feedlet = l.feedlet;

  TimelineRequest r;
  r.t0 = o.t0, r.t1 = o.t1;
  r.width = o.columns;
  r.max_boxes = 0, r.max_arrows = 0, r.max_bundled = 0;
  LayoutOptions lo;
  lo.lanes = {lane};
  r.layout = layout_lanes(scene, lo);  // (its interval rows are read)
  const TimelinePicture p = build_timeline(scene, r);

  std::unordered_map<uint32_t, size_t> at;  // name -> into o.functions
  for (uint32_t row = 0; row < p.rows; ++row)
    for (uint32_t c = 0; c < p.columns && c < o.columns && p.request.layout.rows[row].kind == Row::Interval; ++c) {
      const size_t k = size_t(row) * p.columns + c;
      const uint8_t alpha = uint8_t(p.rgba[k] >> 24);
      if (!alpha) continue;
      auto [it, fresh] = at.try_emplace(p.top_name[k], o.functions.size());
      if (fresh) {
        o.functions.push_back({p.top_name[k]});
        o.functions.back().active.assign(o.columns, 0);
      }
      ThreadOverview::Function& fn = o.functions[it->second];
      if (!fn.active[c]) ++fn.columns_active;
      fn.active[c] = std::max(fn.active[c], alpha);
    }

  const index::TraceIndex& ix = *scene.sources()[l.source].index;
  for (const index::StreamInfo& s : ix.streams()) {
    if (s.kind != index::StreamKind::Interval || s.feedlet != l.feedlet) continue;
    o.calls += s.items;
    auto it = at.find(s.key);
    if (it != at.end()) o.functions[it->second].calls = s.items;
  }
  std::sort(o.functions.begin(), o.functions.end(), [](const auto& a, const auto& b) {
    return a.columns_active != b.columns_active ? a.columns_active > b.columns_active
           : a.calls != b.calls               ? a.calls > b.calls
                                              : a.name < b.name;
  });
  if (o.functions.size() > max_functions) {
    o.functions_left_out = uint32_t(o.functions.size() - max_functions);
    o.functions.resize(max_functions);
  }
  return o;
}

}  // namespace tinescope::render
