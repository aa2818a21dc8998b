#include "tinescope/render/time_axis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

namespace tinescope::render {

void TimeAxis::warp(std::vector<int64_t> knots, double theta) {
  knots_.clear();
  xs_.clear();
  theta_ = theta > 0 ? theta : 0;
  if (theta_ == 0) return;
  knots.push_back(t0_);
  knots.push_back(t1_);
  std::sort(knots.begin(), knots.end());
  knots.erase(std::unique(knots.begin(), knots.end()), knots.end());
  // Keep the window's part; the gaps outside do not take any of the width.
  auto lo = std::lower_bound(knots.begin(), knots.end(), t0_);
  auto hi = std::upper_bound(knots.begin(), knots.end(), t1_);
  knots_.assign(lo, hi);
  xs_.resize(knots_.size());
  double u = 0;
  xs_[0] = 0;
  for (size_t i = 1; i < knots_.size(); ++i) {
    u += std::log1p(theta_ * double(knots_[i] - knots_[i - 1])) / theta_;
    xs_[i] = u;
  }
  for (double& x : xs_) x *= width_ / u;
}

double TimeAxis::x(int64_t t) const {
  if (knots_.empty() || t <= t0_ || t >= t1_) return double(t - t0_) * width_ / double(t1_ - t0_);
  size_t i = size_t(std::upper_bound(knots_.begin(), knots_.end(), t) - knots_.begin());  // knots_[i-1] <= t < knots_[i]
  const double f = double(t - knots_[i - 1]) / double(knots_[i] - knots_[i - 1]);
  return xs_[i - 1] + f * (xs_[i] - xs_[i - 1]);
}

int64_t TimeAxis::time(double x) const {
  if (knots_.empty()) return t0_ + int64_t(std::floor(x * double(t1_ - t0_) / width_));
  if (x <= 0) return t0_;
  if (x >= width_) return t1_;
  size_t i = size_t(std::upper_bound(xs_.begin(), xs_.end(), x) - xs_.begin());
  if (i >= xs_.size()) return t1_;
  const double f = xs_[i] > xs_[i - 1] ? (x - xs_[i - 1]) / (xs_[i] - xs_[i - 1]) : 0;
  return knots_[i - 1] + int64_t(f * double(knots_[i] - knots_[i - 1]));
}

double TimeAxis::ns_per_px(double x) const {
  if (knots_.empty()) return double(t1_ - t0_) / width_;
  return double(time(x + 0.5) - time(x - 0.5));
}

void reprojection(const TimeAxis& pic, const TimeAxis& view, float& offset, float& scale) {
  offset = 0, scale = 1;
  if (!pic.linear() || !view.linear()) return;
  if (pic.t0() == view.t0() && pic.t1() == view.t1() && pic.width() == view.width()) return;
  const double view_px_per_ns = view.width() / double(view.t1() - view.t0());
  scale = float(double(pic.t1() - pic.t0()) / pic.width() * view_px_per_ns);
  offset = float(double(pic.t0() - view.t0()) * view_px_per_ns);
}

std::vector<Tick> ticks(const TimeAxis& axis, double min_spacing_px, int64_t origin) {
  std::vector<Tick> out;
  const int count = int(axis.width() / min_spacing_px);
  if (count < 1) return out;
  if (!axis.linear()) {
    for (int i = 0; i <= count; ++i) {
      const double x = axis.width() * i / count;
      out.push_back({x, axis.time(x)});
    }
    return out;
  }
  const double span = double(axis.t1() - axis.t0());
  const double raw = span / count;
  double step = 1;
  while (step * 10 <= raw) step *= 10;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (step * m >= raw) {
      step *= m;
      break;
    }
  const int64_t s = std::max<int64_t>(1, int64_t(step));
  const int64_t rel = axis.t0() - origin;
  int64_t t = axis.t0() - ((rel % s) + s) % s;
  for (; t <= axis.t1(); t += s)
    if (t >= axis.t0()) out.push_back({axis.x(t), t});
  return out;
}

TimeUnit time_unit_named(std::string_view name) {
  return name == "ns" ? TimeUnit::Ns : name == "ms" ? TimeUnit::Ms : TimeUnit::Fit;
}

std::string format_time(int64_t ns, int64_t resolution_ns, TimeUnit unit) {
  // In the unit that fits the time (s from a second, ms, us, ns below), with
  // the digits the resolution needs, grouped in threes: "1.500 us", never
  // "0.000 001 5 s".
  const bool neg = ns < 0;
  const uint64_t v = neg ? uint64_t(0) - uint64_t(ns) : uint64_t(ns);
  static constexpr struct {
    uint64_t ns;
    int digits;  // of the unit's fraction at a resolution of 1 ns
    const char* name;
  } kUnits[] = {{1000000000, 9, " s"}, {1000000, 6, " ms"}, {1000, 3, " us"}, {1, 0, " ns"}};
  // (Zero in the resolution's unit: a ruler's "0 s" beside "1 s", "0 us" beside "500 us".)
  const uint64_t size = v ? v : uint64_t(std::max<int64_t>(resolution_ns, 1));
  size_t u = unit == TimeUnit::Ms ? 1 : unit == TimeUnit::Ns ? 3 : 0;
  while (unit == TimeUnit::Fit && u + 1 < std::size(kUnits) && size < kUnits[u].ns) ++u;
  int digits = kUnits[u].digits;
  for (int64_t r = resolution_ns; r >= 10 && digits > 0; r /= 10) --digits;
  char frac[24];  // (9 digits: the remainder is below a second)
  std::snprintf(frac, sizeof frac, "%09llu", (unsigned long long)(v % kUnits[u].ns));
  // (Appended, not "-" + to_string(): g++ 12 warns falsely on that, -Wrestrict.)
  std::string out = neg ? "-" : "";
  const std::string whole = std::to_string(v / kUnits[u].ns);
  for (size_t i = 0; i < whole.size(); ++i) {  // grouped in threes where a unit is named ("1 500 ns")
    if (unit != TimeUnit::Fit && i && (whole.size() - i) % 3 == 0) out += ' ';
    out += whole[i];
  }
  if (digits > 0) {
    out += '.';
    for (int i = 0; i < digits; ++i) {
      if (i && i % 3 == 0) out += ' ';
      out += frac[9 - kUnits[u].digits + i];
    }
  }
  return out + kUnits[u].name;
}

std::string format_duration(int64_t ns, TimeUnit unit) {
  if (unit != TimeUnit::Fit) return format_time(ns, 1, unit);
  char buf[48];
  const double v = double(ns < 0 ? -ns : ns);
  const char* sign = ns < 0 ? "-" : "";
  if (v < 1e3) std::snprintf(buf, sizeof buf, "%s%.0f ns", sign, v);
  else if (v < 1e6) std::snprintf(buf, sizeof buf, "%s%.3f us", sign, v / 1e3);
  else if (v < 1e9) std::snprintf(buf, sizeof buf, "%s%.3f ms", sign, v / 1e6);
  else if (v < 3600e9) std::snprintf(buf, sizeof buf, "%s%.3f s", sign, v / 1e9);
  else std::snprintf(buf, sizeof buf, "%s%.0f h %.0f min", sign, std::floor(v / 3600e9), std::fmod(v / 60e9, 60));
  return buf;
}

}  // namespace tinescope::render
