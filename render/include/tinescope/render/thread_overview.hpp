// A thread's life at a glance (the multithreaded-trace paper's thread
// overview, §4.1): which of its functions are active when, a row a function
// and a column a slice of the whole trace, with each function's calls. The
// viewer's thread list draws one beside every thread and marks on each the
// span the timelines show.
#pragma once

#include <cstdint>
#include <vector>

#include "tinescope/render/scene.hpp"

namespace tinescope::render {

struct ThreadOverview {
  uint32_t lane = 0;
  uint32_t source = 0, feedlet = 0;  // the lane's (a newer scene may number its lanes otherwise)
  int64_t t0 = 0, t1 = 1;  // ns: the span its columns cover (the scene's, the same for every thread)
  uint32_t columns = 0;
  struct Function {
    uint32_t name = 0;      // string id (of the lane's source)
    uint64_t calls = 0;     // intervals of the name the lane recorded (its Interval stream's items)
    uint32_t columns_active = 0;
    // Per column: 0 where it is not drawn there, else how much of the
    // column it covers where it covers most at a depth (1..255, as the
    // timeline's alpha).
    std::vector<uint8_t> active;
  };
  // The functions drawn in any column, most columns first (then most
  // calls), at most max_functions of them.
  std::vector<Function> functions;
  uint32_t functions_left_out = 0;  // drawn somewhere, past max_functions
  uint64_t calls = 0;               // every interval of the lane
};

// Built from the timeline picture of the lane alone over [scene.first_ns(),
// scene.last_ns()] at `columns` columns: a function is active in a column
// where it is the name covering most of that column at one of the lane's
// depth rows (TimelinePicture::top_name), so it shows what the timeline
// shows at that zoom, from the index's pyramids (no decoding of events
// below their finest stored level).
ThreadOverview thread_overview(const Scene& scene, uint32_t lane, uint32_t columns, uint32_t max_functions = 12);

}  // namespace tinescope::render
