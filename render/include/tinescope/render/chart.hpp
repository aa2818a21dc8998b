// The seed's charts as device-independent drawings (TuningFork §3.3): a
// stream chart (sample streams as a time series on a value axis, interval
// streams as the spans they cover, overlaid on one time axis) and a
// histogram chart. Drawn with cairo and written as PNG, SVG or PDF, as the
// output's name asks; `tinescope render --figure stream|histogram`.
//
// They draw what the viewer's stream figure and Histogram tab draw, from
// the same geometry (stream_picture.hpp, histogram.hpp): a time series is
// each pixel column's min..max of its samples, joined column to column.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tinescope/analysis/derived_stream.hpp"
#include "tinescope/analysis/time_share.hpp"
#include "tinescope/render/scene.hpp"
#include "tinescope/render/histogram.hpp"
#include "tinescope/render/time_axis.hpp"

namespace tinescope::render {

enum class ChartFormat { Png, Svg, Pdf };
// The format a file name's extension asks for (.png, .svg, .pdf, any case).
bool chart_format(const std::string& path, ChartFormat& format);

struct ChartStream {
  std::string label;                                 // the stream's text
  const analysis::DerivedStream* stream = nullptr;
  uint64_t count = 0;                                // its records in the window, for the legend
  const trace::ClockMap* clock = nullptr;            // its trace's (on the chart's time axis); null: StreamChart::clock
};

struct StreamChart {
  std::string title;
  std::vector<ChartStream> streams;  // samples share one value axis; intervals are shaded under them
  const trace::ClockMap* clock = nullptr;
  int64_t t0 = 0, t1 = 1;  // the window (ns)
  int64_t origin = 0;      // times are labelled from here (the trace's first event)
  TimeUnit unit = TimeUnit::Fit;
  int64_t cursor = INT64_MIN;      // a line there, where one is given (ns)
  std::vector<int64_t> bookmarks;  // a tick along the top at each (ns)
};

struct HistogramChart {
  std::string title;
  const PlayableHistogram* histogram = nullptr;
  std::vector<uint64_t> counts;  // per bin (PlayableHistogram::up_to)
  std::string quantity;          // what was binned, for the axis ("" : duration or value)
};

// The pie chart: where the time went (analysis/time_share.hpp), by name,
// thread or task, over the window or up to the play head.
struct PieSlice {
  std::string label;
  uint64_t ticks = 0;  // its share of the time
  uint64_t items = 0;
  std::string time;    // the time as the chart prints it ("12.5 ms")
};
struct PieChart {
  std::string title, subtitle, by;
  std::vector<PieSlice> slices;  // largest first
};
// Where the time of a trace's lanes went over [t0, t1) ns (every lane of
// the source where `lanes` names none of it).
PieChart build_pie(const Scene& scene, uint32_t source, const std::vector<uint32_t>& lanes, int64_t t0, int64_t t1,
                   analysis::ShareBy by);

// A page of figures stacked top to bottom, as the viewer shows them
// (`render --figure A --figure B`), written as PNG, SVG or PDF by the
// name's extension. The charts are drawn as vectors; a GL figure
// (timeline, scope, sequence diagram) is placed as its pixels, exactly
// what the viewer shows, unsmoothed when a PDF or SVG is zoomed.
class Sheet {
 public:
  Sheet(const std::string& path, int width, int height, std::string& error);  // !ok(): error names why
  ~Sheet();
  bool ok() const;
  // Each draws a figure in the slot [y, y + height) of the page's width;
  // false (and why) where the chart does not fit.
  bool stream_chart(int y, int height, const StreamChart& chart, std::string& error);
  bool histogram_chart(int y, int height, const HistogramChart& chart, std::string& error);
  bool pie_chart(int y, int height, const PieChart& chart, std::string& error);
  void pixels(int y, int width, int height, const std::vector<uint8_t>& rgba);  // RGBA8, top row first
  bool finish(std::string& error);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Each writes `path` (width × height points; pixels in a PNG), or returns
// false with the reason naming the file.
bool write_stream_chart(const std::string& path, int width, int height, const StreamChart& chart, std::string& error);
bool write_histogram_chart(const std::string& path, int width, int height, const HistogramChart& chart,
                           std::string& error);
bool write_pie_chart(const std::string& path, int width, int height, const PieChart& chart, std::string& error);

// Where each chart puts its plot (points from the top left): what tests
// read pictures against.
struct ChartPlot {
  double x0, y0, x1, y1;
  double w() const { return x1 - x0; }
  double h() const { return y1 - y0; }
};
ChartPlot stream_chart_plot(int width, int height, size_t streams);
ChartPlot histogram_chart_plot(int width, int height);
// The series colours, by a stream's place in the chart (RGBA8).
uint32_t series_colour(size_t i);

// Round values for a value axis over [lo, hi]: 1, 2 or 5 × 10^k apart,
// at most about `count` of them.
std::vector<double> value_ticks(double lo, double hi, int count);

}  // namespace tinescope::render
