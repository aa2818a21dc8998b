// Where a time goes on screen. Times are 64-bit nanoseconds; x is a pixel
// column counted from the left of the plot (a double, exact to far below a
// pixel because it is computed from the difference to the view's start, never
// from an absolute time in floating point).
//
// Linear, or the log-time warp of the multithreaded-trace-visualization seed
// (§4): every gap Δt between consecutive events in the merged order of all
// visible lanes takes ln(1 + θΔt)/θ of the width instead of Δt, so bursts of
// activity open up and long idle gaps shrink, one mapping for every lane.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tinescope::render {

class TimeAxis {
 public:
  TimeAxis() = default;
  TimeAxis(int64_t t0, int64_t t1, double width) : t0_(t0), t1_(t1 > t0 ? t1 : t0 + 1), width_(width) {}

  // Turns on the warp: `knots` are the event times in the window (any order,
  // repeats allowed); θ is per nanosecond; θ <= 0 stays linear.
  void warp(std::vector<int64_t> knots, double theta);

  int64_t t0() const { return t0_; }
  int64_t t1() const { return t1_; }
  double width() const { return width_; }
  double theta() const { return theta_; }
  bool linear() const { return knots_.empty(); }

  double x(int64_t t) const;       // may lie outside [0, width]
  int64_t time(double x) const;    // the inverse (clamped to the window when warped)
  // Nanoseconds per pixel around x (for choosing a query resolution).
  double ns_per_px(double x) const;

 private:
  int64_t t0_ = 0, t1_ = 1;
  double width_ = 1;
  double theta_ = 0;
  std::vector<int64_t> knots_;  // sorted, unique, first = t0, last = t1
  std::vector<double> xs_;      // x of each knot
};

// How a picture made for axis `pic` lies on axis `view`: picture column c is
// at view x = offset + c * scale. Linear axes only; otherwise (0, 1).
void reprojection(const TimeAxis& pic, const TimeAxis& view, float& offset, float& scale);

// Tick marks at round real times: for a linear axis every 1, 2 or 5 × 10^k
// ns; for a warped one, at evenly spaced x, labelled with the time there.
struct Tick {
  double x;
  int64_t t;
};
std::vector<Tick> ticks(const TimeAxis& axis, double min_spacing_px, int64_t origin = 0);  // round from origin
// The unit times print in: the one that fits each time (the default), or
// the one a trace names (Chrome JSON's displayTimeUnit "ns" or "ms"), as
// its own viewer prints them: every time in it.
enum class TimeUnit { Fit, Ns, Ms };
TimeUnit time_unit_named(std::string_view name);  // "ns", "ms"; anything else: Fit

// "1.234 567 s", "45.351 us", "12 ns": a time (or a duration) for a label,
// in the unit that fits its size (or `unit`), with as many digits as
// `resolution_ns` asks ("1 500 ns" and "0.001 500 ms" in those units).
std::string format_time(int64_t ns, int64_t resolution_ns = 1, TimeUnit unit = TimeUnit::Fit);
std::string format_duration(int64_t ns, TimeUnit unit = TimeUnit::Fit);

}  // namespace tinescope::render
