// Where the time went over a window: the pie chart's slices (TuningFork
// §3.3). By name, each interval's own time (its duration less that of the
// intervals nested in it), so the slices of one thread add up to its busy
// time; by thread, each lane's time inside outermost intervals; by task,
// the time of each task's job segments on every CPU. Every item is clipped
// to the window, so a share played up to a time counts only what ran
// before it. One pass over the items in the window.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinescope/index/trace_index.hpp"

namespace tinescope::analysis {

enum class ShareBy { Name, Thread, Task };
const char* share_by_name(ShareBy by);
bool parse_share_by(const std::string& text, ShareBy& by);

struct Share {
  std::string label;
  uint64_t ticks = 0;  // time, in the trace's ticks
  uint64_t items = 0;  // intervals or segments that gave it
};

// Shares of the feedlets' time over [t0, t1) ticks, the largest first.
// `labels[i]` names feedlets[i] where by == Thread.
std::vector<Share> time_share(const index::TraceIndex& ix, const std::vector<uint32_t>& feedlets,
                              const std::vector<std::string>& labels, uint64_t t0, uint64_t t1, ShareBy by);

}  // namespace tinescope::analysis
