// A derived stream's figure (the analysis panel's, under the timeline) as
// geometry in plot columns, from the stream's pyramid: what the app draws.
//  - intervals: each bucket where its intervals lie, [earliest start, latest
//    end), shaded by the share of that time they cover (a single interval is
//    exact), and those that run on past the window's right edge;
//  - samples: each bucket's min..max, and the line from one bucket's last
//    value to the next one's first, on the whole stream's scale.
#pragma once

#include <cstdint>
#include <vector>

#include "tinescope/analysis/derived_stream.hpp"
#include "tinescope/render/time_axis.hpp"

namespace tinescope::render {

struct StreamPicture {
  struct Bar {  // intervals
    double x0, x1;
    float cover;  // (0, 1]: the share of [x0, x1) its intervals cover
  };
  struct Range {  // samples
    double x0, x1;
    double min, max, first, last;
  };
  bool intervals = false;
  std::vector<Bar> bars;
  std::vector<Range> ranges;
  double lo = 0, hi = 1;  // samples: the stream's range
};

// The figure of `s` over the axis's window [t0, t1] (ns), `columns` wide.
StreamPicture build_stream_picture(const analysis::DerivedStream& s, const trace::ClockMap& clock,
                                   const TimeAxis& axis, int64_t t0, int64_t t1, uint32_t columns);

}  // namespace tinescope::render
