#include "tinescope/render/chart.hpp"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

#include "tinescope/render/stream_picture.hpp"

namespace tinescope::render {

namespace {

// A drawing surface of the asked format: PNG is drawn in memory and written
// at the end; SVG and PDF stream to their file as they are drawn. Charts
// draw at the origin; a sheet moves the origin to each figure's slot.
class Canvas {
 public:
  Canvas(const std::string& path, int width, int height, std::string& error) : path_(path) {
    if (!chart_format(path, format_)) {
      error = path + ": writes .png, .svg or .pdf; name the output so";
      return;
    }
    surface_ = format_ == ChartFormat::Png ? cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height)
               : format_ == ChartFormat::Svg ? cairo_svg_surface_create(path.c_str(), width, height)
                                             : cairo_pdf_surface_create(path.c_str(), width, height);
    if (cairo_surface_status(surface_) != CAIRO_STATUS_SUCCESS) {
      error = path + ": " + cairo_status_to_string(cairo_surface_status(surface_));
      return;
    }
    cr_ = cairo_create(surface_);
    cairo_select_font_face(cr_, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr_, 11);
    // Paper white: the charts are for reports and papers as much as screens.
    cairo_set_source_rgb(cr_, 1, 1, 1);
    cairo_paint(cr_);
  }
  ~Canvas() {
    if (cr_) cairo_destroy(cr_);
    if (surface_) cairo_surface_destroy(surface_);
  }
  bool ok() const { return cr_ != nullptr; }
  cairo_t* cr() const { return cr_; }

  bool finish(std::string& error) {
    cairo_status_t st = cairo_status(cr_);
    if (st == CAIRO_STATUS_SUCCESS && format_ == ChartFormat::Png) st = cairo_surface_write_to_png(surface_, path_.c_str());
    cairo_surface_finish(surface_);
    if (st == CAIRO_STATUS_SUCCESS) st = cairo_surface_status(surface_);
    if (st != CAIRO_STATUS_SUCCESS) error = path_ + ": " + cairo_status_to_string(st);
    return st == CAIRO_STATUS_SUCCESS;
  }

  void colour(uint32_t rgba, double alpha = 1) {
    cairo_set_source_rgba(cr_, (rgba & 0xff) / 255.0, (rgba >> 8 & 0xff) / 255.0, (rgba >> 16 & 0xff) / 255.0, alpha);
  }
  void grey(double g, double alpha = 1) { cairo_set_source_rgba(cr_, g, g, g, alpha); }
  // Text with its left (align 0), centre (0.5) or right (1) at x, its baseline at y.
  double text(const std::string& s, double x, double y, double align = 0) {
    cairo_text_extents_t e;
    cairo_text_extents(cr_, s.c_str(), &e);
    cairo_move_to(cr_, x - e.x_advance * align, y);
    cairo_show_text(cr_, s.c_str());
    return e.x_advance;
  }
  void line(double x0, double y0, double x1, double y1, double width) {
    cairo_set_line_width(cr_, width);
    cairo_move_to(cr_, x0, y0);
    cairo_line_to(cr_, x1, y1);
    cairo_stroke(cr_);
  }
  void rect(double x0, double y0, double x1, double y1) {
    cairo_rectangle(cr_, x0, y0, x1 - x0, y1 - y0);
    cairo_fill(cr_);
  }

 private:
  std::string path_;
  ChartFormat format_ = ChartFormat::Png;
  cairo_surface_t* surface_ = nullptr;
  cairo_t* cr_ = nullptr;
};

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void frame(Canvas& c, const ChartPlot& p) {
  c.grey(0.25);
  cairo_set_line_width(c.cr(), 1);
  cairo_rectangle(c.cr(), p.x0 - 0.5, p.y0 - 0.5, p.w() + 1, p.h() + 1);
  cairo_stroke(c.cr());
}

}  // namespace

// A qualitative palette that prints and reads on white: the viewer's hashed
// colours may come out alike for two streams of one chart.
uint32_t series_colour(size_t i) {
  static constexpr uint32_t kPalette[] = {0xffb47729u, 0xff0e7fffu, 0xff2ca02cu, 0xff2827d6u,
                                          0xffbd6794u, 0xff4b568cu, 0xffc277e3u, 0xffcfbe17u};
  return kPalette[i % (sizeof kPalette / sizeof kPalette[0])];
}

ChartPlot stream_chart_plot(int width, int height, size_t streams) {
  return {72, 30 + 16.0 * double(streams), double(width) - 16, double(height) - 40};
}

ChartPlot histogram_chart_plot(int width, int height) { return {72, 48, double(width) - 24, double(height) - 44}; }

bool chart_format(const std::string& path, ChartFormat& format) {
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || path.find('/', dot) != std::string::npos) return false;
  std::string ext = path.substr(dot + 1);
  for (char& ch : ext) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  if (ext == "png") format = ChartFormat::Png;
  else if (ext == "svg") format = ChartFormat::Svg;
  else if (ext == "pdf") format = ChartFormat::Pdf;
  else return false;
  return true;
}

std::vector<double> value_ticks(double lo, double hi, int count) {
  std::vector<double> out;
  if (!(hi > lo) || count < 1 || !std::isfinite(hi - lo)) return out;
  const double raw = (hi - lo) / count;
  double step = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (step * m >= raw * (1 - 1e-9)) {
      step *= m;
      break;
    }
  // Values far from 0 and close together (1.7e18 + k * 256): a step below
  // their precision has no round values to give.
  const double first = std::ceil(lo / step);
  if (!std::isfinite(first) || lo + step == lo || hi + step == hi) return out;
  for (int i = 0; i <= count * 3; ++i) {
    const double v = (first + i) * step;
    if (v > hi + step * 1e-9) break;
    out.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  }
  return out;
}

namespace {

// A sample stream's smallest and largest value, from the top of its
// pyramid (lo > hi: it has none).
std::pair<double, double> value_range(const analysis::DerivedStream& s) {
  double lo = INFINITY, hi = -INFINITY;
  for (const index::Node& n : s.query_shift(0, UINT64_MAX, s.top_shift()).nodes)
    if (n.count) lo = std::min(lo, n.s.min), hi = std::max(hi, n.s.max);
  return {lo, hi};
}

}  // namespace

namespace {

std::string stream_chart_problem(int width, int height, const StreamChart& chart) {
  const ChartPlot p = stream_chart_plot(width, height, chart.streams.size());
  if (p.w() < 16 || p.h() < 16) return "too small for " + std::to_string(chart.streams.size()) + " streams and their axes";
  return "";
}

void draw_stream_chart(Canvas& c, int width, int height, const StreamChart& chart) {
  const ChartPlot p = stream_chart_plot(width, height, chart.streams.size());
  const TimeAxis axis(chart.t0, chart.t1, p.w());
  const uint32_t columns = uint32_t(std::max(1.0, p.w()));
  std::vector<StreamPicture> pictures;
  std::vector<std::pair<double, double>> ranges;  // each sample stream's own
  double lo = INFINITY, hi = -INFINITY;          // the sample streams' one value axis
  for (const ChartStream& s : chart.streams) {
    pictures.push_back(build_stream_picture(*s.stream, s.clock ? *s.clock : *chart.clock, axis, chart.t0, chart.t1, columns));
    ranges.push_back(pictures.back().intervals ? std::pair{0.0, 0.0} : value_range(*s.stream));
    if (!pictures.back().intervals) lo = std::min(lo, ranges.back().first), hi = std::max(hi, ranges.back().second);
  }
  const bool values = std::isfinite(lo) && std::isfinite(hi) && std::isfinite(hi - lo);
  if (values && !(hi > lo)) {  // one value: a flat line in the middle, not on the frame
    const double d = std::max(std::fabs(lo) * 0.05, 0.5);
    lo -= d, hi += d;
  }

  c.grey(0.1);
  cairo_set_font_size(c.cr(), 13);
  c.text(chart.title, p.x0, 18);
  cairo_set_font_size(c.cr(), 11);
  // The legend: each stream, its colour and what it holds.
  for (size_t i = 0; i < chart.streams.size(); ++i) {
    const double y = 30 + 16.0 * double(i);
    const StreamPicture& pic = pictures[i];
    c.colour(series_colour(i), pic.intervals ? 0.45 : 1);
    c.rect(p.x0, y + 2, p.x0 + 14, y + 12);
    c.grey(0.1);
    const std::string n = std::to_string(chart.streams[i].count);
    const std::string what = pic.intervals ? n + " intervals (shaded where they run)"
                             : chart.streams[i].count == 0 ? "no samples in the window"
                                                           : n + " samples, " + number(ranges[i].first) + " .. " + number(ranges[i].second);
    c.text(chart.streams[i].label + "   " + what, p.x0 + 20, y + 11);
  }

  // Axes: value grid and labels, then time ticks.
  auto y_of = [&](double v) { return p.y1 - (v - lo) / (hi - lo) * p.h(); };
  if (values)
    for (double v : value_ticks(lo, hi, std::max(2, int(p.h() / 40)))) {
      c.grey(0.88);
      c.line(p.x0, std::round(y_of(v)) + 0.5, p.x1, std::round(y_of(v)) + 0.5, 1);
      c.grey(0.25);
      c.text(number(v), p.x0 - 6, y_of(v) + 4, 1);
    }
  const std::vector<Tick> tk = ticks(axis, 110, chart.origin);
  const int64_t step = tk.size() > 1 ? tk[1].t - tk[0].t : std::max<int64_t>(1, chart.t1 - chart.t0);
  for (const Tick& t : tk) {
    const double x = std::round(p.x0 + t.x) + 0.5;
    c.grey(0.25);
    c.line(x, p.y1, x, p.y1 + 4, 1);
    c.text(format_time(t.t - chart.origin, step, chart.unit), x, p.y1 + 16, 0.5);
  }
  c.grey(0.4);
  c.text("time from the start of the trace", (p.x0 + p.x1) / 2, p.y1 + 32, 0.5);

  cairo_save(c.cr());
  cairo_rectangle(c.cr(), p.x0, p.y0, p.w(), p.h());
  cairo_clip(c.cr());
  // Intervals first, under the values: each bucket's span shaded by the
  // share of it they cover, and a solid band along the bottom so the short
  // ones show too.
  for (size_t i = 0; i < chart.streams.size(); ++i) {
    if (!pictures[i].intervals) continue;
    const uint32_t rgba = series_colour(i);
    for (const StreamPicture::Bar& b : pictures[i].bars) {
      const double x0 = p.x0 + std::max(b.x0, -1.0), x1 = std::max(p.x0 + std::min(b.x1, p.w() + 1), x0 + 1);
      c.colour(rgba, 0.10 + 0.25 * b.cover);
      c.rect(x0, p.y0, x1, p.y1);
      c.colour(rgba, 0.9);
      c.rect(x0, p.y1 - 6, x1, p.y1);
    }
  }
  // Samples: each column's min..max, joined from one column's last value to
  // the next one's first.
  for (size_t i = 0; i < chart.streams.size() && values; ++i) {
    if (pictures[i].intervals) continue;
    c.colour(series_colour(i));
    bool first = true;
    double last_x = 0, last_y = 0;
    for (const StreamPicture::Range& r : pictures[i].ranges) {
      const double x0 = p.x0 + r.x0, x1 = std::max(p.x0 + r.x1, x0 + 1);
      c.rect(x0, y_of(r.max) - 0.75, x1, y_of(r.min) + 0.75);
      if (r.min == r.max && r.x1 - r.x0 < 1) c.rect(x0 - 1, y_of(r.max) - 1.5, x0 + 2, y_of(r.max) + 1.5);  // (a lone value: a dot)
      if (!first) c.line(last_x, last_y, x0, y_of(r.first), 1);
      first = false, last_x = x1, last_y = y_of(r.last);
    }
  }
  // The bookmarks, a tick each along the top; the cursor, a line across.
  c.colour(0xff2a8cffu);  // (orange, as the viewer's)
  for (int64_t b : chart.bookmarks)
    if (b >= chart.t0 && b <= chart.t1) c.rect(p.x0 + axis.x(b) - 1, p.y0, p.x0 + axis.x(b) + 1, p.y0 + 8);
  if (chart.cursor >= chart.t0 && chart.cursor <= chart.t1) {
    c.grey(0.1);
    c.line(p.x0 + axis.x(chart.cursor), p.y0, p.x0 + axis.x(chart.cursor), p.y1, 1);
  }
  cairo_restore(c.cr());
  frame(c, p);
}

std::string histogram_chart_problem(int width, int height, const HistogramChart& chart) {
  const ChartPlot p = histogram_chart_plot(width, height);
  if (chart.counts.size() != chart.histogram->bins) return "the counts do not match the bins";
  if (p.w() < 16 || p.h() < 16) return "too small for a histogram";
  return "";
}

void draw_histogram_chart(Canvas& c, int width, int height, const HistogramChart& chart) {
  const PlayableHistogram& h = *chart.histogram;
  const ChartPlot p = histogram_chart_plot(width, height);
  uint64_t total = 0, top = 1;
  for (uint64_t n : chart.counts) total += n, top = std::max(top, n);
  c.grey(0.1);
  cairo_set_font_size(c.cr(), 13);
  c.text(chart.title, p.x0, 18);
  cairo_set_font_size(c.cr(), 11);
  c.text(std::to_string(total) + (h.durations ? " durations" : " values") + ", " + std::to_string(h.bins) +
             (h.log_bins ? " logarithmic bins" : " bins"),
         p.x0, 36);
  // Counts on a square-root scale, as the viewer draws them: one needle
  // still shows beside thousands. The axis says so, at round counts.
  auto y_of = [&](double n) { return p.y1 - std::sqrt(n / double(top)) * p.h(); };
  for (double v : value_ticks(0, double(top), 5)) {
    if (v != std::floor(v)) continue;
    c.grey(0.88);
    c.line(p.x0, std::round(y_of(v)) + 0.5, p.x1, std::round(y_of(v)) + 0.5, 1);
    c.grey(0.25);
    c.text(number(v), p.x0 - 6, y_of(v) + 4, 1);
  }
  c.grey(0.4);
  cairo_save(c.cr());
  cairo_translate(c.cr(), 16, (p.y0 + p.y1) / 2);
  cairo_rotate(c.cr(), -M_PI / 2);
  c.text("count (square-root scale)", 0, 0, 0.5);
  cairo_restore(c.cr());
  const double bw = p.w() / h.bins;
  c.colour(series_colour(0));
  for (uint32_t b = 0; b < h.bins; ++b)
    if (chart.counts[b]) c.rect(p.x0 + bw * b + 0.5, std::min(y_of(double(chart.counts[b])), p.y1 - 2), p.x0 + bw * (b + 1) - 0.5, p.y1);
  // Bin edges: about one label per 90 points.
  const uint32_t every = std::max<uint32_t>(1, uint32_t(std::ceil(90 / bw)));
  for (uint32_t b = 0; b <= h.bins; b += every) {
    const double x = std::round(p.x0 + bw * b) + 0.5;
    c.grey(0.25);
    c.line(x, p.y1, x, p.y1 + 4, 1);
    c.text(h.label(h.bin_low(b)), x, p.y1 + 16, 0.5);
  }
  c.grey(0.4);
  c.text(!chart.quantity.empty() ? chart.quantity : h.durations ? "duration" : "value", (p.x0 + p.x1) / 2, p.y1 + 32, 0.5);
  frame(c, p);
}

std::string pie_chart_problem(int width, int height, const PieChart&) {
  if (width < 200 || height < 120) return "too small for a pie chart (200x120 at least)";
  return "";
}

// The pie on the left, its legend on the right: each slice's label, time
// and share. Slices past the eleventh are one grey slice, "N others".
void draw_pie_chart(Canvas& c, int width, int height, const PieChart& chart) {
  c.grey(0.1);
  cairo_set_font_size(c.cr(), 13);
  c.text(chart.title, 16, 18);
  cairo_set_font_size(c.cr(), 11);
  uint64_t total = 0;
  for (const PieSlice& s : chart.slices) total += s.ticks;
  std::vector<PieSlice> shown(chart.slices.begin(), chart.slices.begin() + long(std::min<size_t>(chart.slices.size(), 11)));
  if (chart.slices.size() > 11) {
    PieSlice others{std::to_string(chart.slices.size() - 11) + " others", 0, 0};
    for (size_t i = 11; i < chart.slices.size(); ++i) others.ticks += chart.slices[i].ticks, others.items += chart.slices[i].items;
    shown.push_back(others);
  }
  c.grey(0.25);
  c.text(chart.subtitle, 16, 36);
  const double top = 48, radius = std::max(10.0, std::min((height - top - 12) / 2, width * 0.45 / 2));
  const double cx = 16 + radius, cy = top + radius;
  if (total == 0) {
    c.grey(0.85);
    cairo_arc(c.cr(), cx, cy, radius, 0, 2 * M_PI);
    cairo_fill(c.cr());
    c.grey(0.3);
    c.text("nothing ran in the window", cx, cy + 4, 0.5);
    return;
  }
  double angle = -M_PI / 2;  // from twelve o'clock, clockwise
  const double lx = cx + radius + 24;
  for (size_t i = 0; i < shown.size(); ++i) {
    const double share = double(shown[i].ticks) / double(total);
    const uint32_t colour = i == 11 ? 0xffb0b0b0u : series_colour(i);
    c.colour(colour);
    cairo_move_to(c.cr(), cx, cy);
    cairo_arc(c.cr(), cx, cy, radius, angle, angle + share * 2 * M_PI);
    cairo_close_path(c.cr());
    cairo_fill_preserve(c.cr());
    c.grey(1);
    cairo_set_line_width(c.cr(), shown.size() > 1 ? 1 : 0);
    cairo_stroke(c.cr());
    angle += share * 2 * M_PI;
    const double y = top + 6 + 18.0 * double(i);
    if (y + 12 > height) continue;
    c.colour(colour);
    c.rect(lx, y, lx + 12, y + 12);
    c.grey(0.1);
    char pct[32];
    std::snprintf(pct, sizeof pct, "%5.1f %%", share * 100);
    c.text(pct, lx + 18, y + 10);
    c.text(shown[i].time, lx + 78, y + 10);
    c.text(shown[i].label, lx + 170, y + 10);
  }
}

}  // namespace

PieChart build_pie(const Scene& scene, uint32_t source, const std::vector<uint32_t>& lanes, int64_t t0, int64_t t1,
                   analysis::ShareBy by) {
  const Source& src = scene.sources()[source];
  bool named = false;  // (does `lanes` name a lane of this source?)
  for (uint32_t id : lanes) named |= id < scene.lanes().size() && scene.lanes()[id].source == source;
  std::vector<uint32_t> feedlets;
  std::vector<std::string> labels;
  for (uint32_t id = 0; id < scene.lanes().size(); ++id) {
    const Lane& lane = scene.lanes()[id];
    if (lane.source != source || (named && std::find(lanes.begin(), lanes.end(), id) == lanes.end())) continue;
    if (std::find(feedlets.begin(), feedlets.end(), lane.feedlet) != feedlets.end()) continue;
    feedlets.push_back(lane.feedlet);
    labels.push_back(lane.shares_name ? lane.name + " (" + std::to_string(lane.tid) + ")" : lane.name);
  }
  const trace::ClockMap& clock = src.catalog->clock;
  const std::vector<analysis::Share> shares =
      analysis::time_share(*src.index, feedlets, labels, clock.to_ticks(t0), clock.to_ticks(std::max(t0, t1)), by);
  PieChart pie;
  pie.by = analysis::share_by_name(by);
  pie.title = std::string("time by ") + pie.by + ": " + src.path;
  uint64_t busy = 0;
  for (const analysis::Share& s : shares) {
    const int64_t ns = int64_t(double(s.ticks) / clock.ticks_per_ns());
    pie.slices.push_back({s.label, s.ticks, s.items, format_duration(ns, scene.time_unit())});
    busy += s.ticks;
  }
  pie.subtitle = (by == analysis::ShareBy::Name     ? "each name's own time (less what nests in it)"
                  : by == analysis::ShareBy::Thread ? "each thread's time in outermost intervals"
                                                    : "each task's job segments, on every CPU") +
                 std::string(", from ") + format_time(t0 - scene.first_ns(), 1, scene.time_unit()) + " to " +
                 format_time(t1 - scene.first_ns(), 1, scene.time_unit()) + " in " + std::to_string(feedlets.size()) +
                 " lanes: " + format_duration(int64_t(double(busy) / clock.ticks_per_ns()), scene.time_unit());
  return pie;
}

struct Sheet::Impl {
  Canvas canvas;
  int width;
  Impl(const std::string& path, int w, int h, std::string& error) : canvas(path, w, h, error), width(w) {}
};

Sheet::Sheet(const std::string& path, int width, int height, std::string& error)
    : impl_(std::make_unique<Impl>(path, width, height, error)) {}
Sheet::~Sheet() = default;
bool Sheet::ok() const { return impl_->canvas.ok(); }

namespace {

// Draws into the slot [y, y + height) of the page: the origin moved there,
// nothing drawn past it.
template <class Draw>
void in_slot(Canvas& c, int width, int y, int height, Draw draw) {
  cairo_save(c.cr());
  cairo_translate(c.cr(), 0, y);
  cairo_rectangle(c.cr(), 0, 0, width, height);
  cairo_clip(c.cr());
  draw();
  cairo_restore(c.cr());
}

}  // namespace

bool Sheet::stream_chart(int y, int height, const StreamChart& chart, std::string& error) {
  if (std::string why = stream_chart_problem(impl_->width, height, chart); !why.empty()) return error = why, false;
  in_slot(impl_->canvas, impl_->width, y, height, [&] { draw_stream_chart(impl_->canvas, impl_->width, height, chart); });
  return true;
}

bool Sheet::histogram_chart(int y, int height, const HistogramChart& chart, std::string& error) {
  if (std::string why = histogram_chart_problem(impl_->width, height, chart); !why.empty()) return error = why, false;
  in_slot(impl_->canvas, impl_->width, y, height, [&] { draw_histogram_chart(impl_->canvas, impl_->width, height, chart); });
  return true;
}

bool Sheet::pie_chart(int y, int height, const PieChart& chart, std::string& error) {
  if (std::string why = pie_chart_problem(impl_->width, height, chart); !why.empty()) return error = why, false;
  in_slot(impl_->canvas, impl_->width, y, height, [&] { draw_pie_chart(impl_->canvas, impl_->width, height, chart); });
  return true;
}

void Sheet::pixels(int y, int width, int height, const std::vector<uint8_t>& rgba) {
  // RGBA8 rows, top first, to cairo's premultiplied native-endian ARGB32.
  cairo_surface_t* img = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height);
  unsigned char* dst = cairo_image_surface_get_data(img);
  const int stride = cairo_image_surface_get_stride(img);
  cairo_surface_flush(img);
  for (int row = 0; row < height; ++row)
    for (int x = 0; x < width; ++x) {
      const uint8_t* p = &rgba[(size_t(row) * width + x) * 4];
      const uint32_t a = p[3], px = a << 24 | (p[0] * a / 255) << 16 | (p[1] * a / 255) << 8 | (p[2] * a / 255);
      std::memcpy(dst + size_t(row) * stride + size_t(x) * 4, &px, 4);
    }
  cairo_surface_mark_dirty(img);
  cairo_t* cr = impl_->canvas.cr();
  cairo_save(cr);
  cairo_set_source_surface(cr, img, 0, y);
  // Pixels stay pixels when a PDF or SVG is zoomed: no smoothing between them.
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
  cairo_rectangle(cr, 0, y, width, height);
  cairo_fill(cr);
  cairo_restore(cr);
  cairo_surface_destroy(img);
}

bool Sheet::finish(std::string& error) { return impl_->canvas.finish(error); }

namespace {

template <class Chart>
bool write_one(const std::string& path, int width, int height, const Chart& chart, std::string& error,
               std::string (*problem)(int, int, const Chart&), bool (Sheet::*draw)(int, int, const Chart&, std::string&)) {
  // (Checked before the file is made: a chart that cannot be drawn leaves none.)
  if (std::string why = problem(width, height, chart); !why.empty()) return error = path + ": " + why, false;
  Sheet sheet(path, width, height, error);
  return sheet.ok() && (sheet.*draw)(0, height, chart, error) && sheet.finish(error);
}

}  // namespace

bool write_stream_chart(const std::string& path, int width, int height, const StreamChart& chart, std::string& error) {
  return write_one(path, width, height, chart, error, stream_chart_problem, &Sheet::stream_chart);
}

bool write_histogram_chart(const std::string& path, int width, int height, const HistogramChart& chart,
                           std::string& error) {
  return write_one(path, width, height, chart, error, histogram_chart_problem, &Sheet::histogram_chart);
}

bool write_pie_chart(const std::string& path, int width, int height, const PieChart& chart, std::string& error) {
  return write_one(path, width, height, chart, error, pie_chart_problem, &Sheet::pie_chart);
}

}  // namespace tinescope::render
