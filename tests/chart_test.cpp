// The charts of `tinescope render --figure stream|histogram` (issue 51, a
// field as a time series and a histogram): the pictures read back pixel by
// pixel against a brute-force reading of the samples the trace holds —
// every column shows its samples' min..max and nothing beyond, a single
// spike among thousands shows, an interval of a fraction of a column shows,
// each bin's bar has its count's height — and SVG, PDF and bad outputs.
#include <gtest/gtest.h>
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <set>

#include "tinescope/analysis/stream_expr.hpp"
#include "tinescope/import/trace_import.hpp"
#include "tinescope/index/trace_index.hpp"
#include "tinescope/render/chart.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

struct Sample {
  int64_t us;
  double v;
};

// A Chrome trace of `tick` instants, one a microsecond, each with its value
// as the argument `v` (the time series), and `busy` slices (the intervals).
struct ChartTrace {
  std::string path;
  std::vector<Sample> samples;
  std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) in us
};

ChartTrace chart_trace(const std::string& name) {
  ChartTrace t;
  std::mt19937_64 rng(test_seed(51));
  std::uniform_real_distribution<double> base(10, 20);
  for (int64_t us = 0; us < 6000; ++us) t.samples.push_back({us, std::round(base(rng) * 100) / 100});
  // Adversarial: single spikes among ~12 samples a column, and one dip.
  for (int64_t at : {777, 2500, 2501, 4321}) t.samples[size_t(at)].v = 100;
  t.samples[3333].v = -50;
  t.busy = {{1000, 1500}, {3000, 3001}, {4000, 5200}};
  std::string json = "[";
  for (const Sample& s : t.samples)
    json += R"({"ph":"i","s":"t","name":"tick","pid":1,"tid":1,"ts":)" + std::to_string(s.us) + R"(,"args":{"v":)" +
            std::to_string(s.v) + "}},\n";
  for (auto [b, e] : t.busy)
    json += R"({"ph":"X","name":"busy","pid":1,"tid":2,"ts":)" + std::to_string(b) + R"(,"dur":)" + std::to_string(e - b) +
            "},\n";
  // A message from thread 1 to 2 (the sequence diagram's).
  json += R"({"ph":"s","id":1,"cat":"m","name":"req","pid":1,"tid":1,"ts":100},)" "\n";
  json += R"({"ph":"f","bp":"e","id":1,"cat":"m","name":"req","pid":1,"tid":2,"ts":1100},)" "\n";
  json.resize(json.size() - 2);
  json += "]";
  const std::string src = scratch_dir() + "/" + name + ".json";
  std::ofstream(src) << json;
  t.path = scratch_dir() + "/" + name + ".tine";
  std::string error;
  import::ImportResult r;
  EXPECT_TRUE(import::import_trace(src, t.path, r, error)) << error;
  return t;
}

struct Png {
  int w = 0, h = 0;
  std::vector<uint8_t> rgb;
  int r(int x, int y) const { return rgb[(size_t(y) * w + x) * 3]; }
  int b(int x, int y) const { return rgb[(size_t(y) * w + x) * 3 + 2]; }
  // The first series' blue (41, 119, 180), even half over the second's
  // orange shading (255, 211, 170 at most), against white and grey.
  bool blue(int x, int y) const { return b(x, y) - r(x, y) > 20; }
  bool orange(int x, int y) const { return r(x, y) - b(x, y) > 40; }
};

Png load_png(const std::string& path) {
  Png p;
  int n = 0;
  uint8_t* data = stbi_load(path.c_str(), &p.w, &p.h, &n, 3);
  EXPECT_NE(data, nullptr) << path;
  if (data) p.rgb.assign(data, data + size_t(p.w) * p.h * 3), stbi_image_free(data);
  return p;
}

TEST(Chart, ATimeSeriesShowsEachColumnsSamplesAndNothingElse) {
  const ChartTrace t = chart_trace("chart_series");
  constexpr int W = 600, H = 300;
  const std::string png = scratch_dir() + "/series.png";
  const std::string cmd = bin("app/tinescope") + " render " + t.path + " --figure stream --stream 'field(name=\"tick\", \"v\")'" +
                          " --stream 'intervals(name=\"busy\")' --from 0 --to 6000us --size 600x300 -o " + png;
  std::string out;
  ASSERT_EQ(run(cmd, &out), 0) << cmd << "\n" << out;
  EXPECT_NE(out.find("6003 records"), std::string::npos) << out;  // 6000 samples, 3 intervals
  const Png p = load_png(png);
  ASSERT_EQ(p.w, W);
  const render::ChartPlot plot = render::stream_chart_plot(W, H, 2);
  const int px0 = int(plot.x0), columns = int(plot.w());
  // The brute-force reading: each pixel column's samples.
  std::vector<double> lo(size_t(columns), INFINITY), hi(size_t(columns), -INFINITY);
  double vmin = INFINITY, vmax = -INFINITY;
  for (const Sample& s : t.samples) {
    const int c = int(double(s.us) * columns / 6000);
    lo[size_t(c)] = std::min(lo[size_t(c)], s.v), hi[size_t(c)] = std::max(hi[size_t(c)], s.v);
    vmin = std::min(vmin, s.v), vmax = std::max(vmax, s.v);
  }
  auto y_of = [&](double v) { return plot.y1 - (v - vmin) / (vmax - vmin) * plot.h(); };
  auto blue_near = [&](int c, double y) {
    for (int dc = -1; dc <= 1; ++dc)
      for (int dy = -1; dy <= 1; ++dy) {
        const int x = px0 + c + dc, yy = int(std::floor(y)) + dy;
        if (x >= px0 && x < px0 + columns && yy >= int(plot.y0) && yy < int(plot.y1) && p.blue(x, yy)) return true;
      }
    return false;
  };
  auto ink_rows = [&](int c) {  // for messages: where the column has ink
    std::string rows;
    for (int y = int(plot.y0); y < int(plot.y1); ++y)
      if (p.blue(px0 + c, y)) rows += ' ', rows += std::to_string(y);
    return rows;
  };
  for (int c = 1; c + 1 < columns; ++c) {
    // What happened shows: the column's highest and lowest sample (the
    // spikes and the dip are one sample among a dozen).
    EXPECT_TRUE(blue_near(c, y_of(hi[size_t(c)]))) << "column " << c << ": its highest sample " << hi[size_t(c)]
                                                  << " at y " << y_of(hi[size_t(c)]) << "; ink at" << ink_rows(c);
    EXPECT_TRUE(blue_near(c, y_of(lo[size_t(c)]))) << "column " << c << ": its lowest sample " << lo[size_t(c)];
    // And nothing else: no ink above the highest or below the lowest of
    // this column and its neighbours (the lines join neighbours).
    const double top = std::max({hi[size_t(c - 1)], hi[size_t(c)], hi[size_t(c + 1)]});
    const double bottom = std::min({lo[size_t(c - 1)], lo[size_t(c)], lo[size_t(c + 1)]});
    for (int y = int(plot.y0) + 1; y < int(plot.y1) - 1; ++y)
      if (p.blue(px0 + c, y)) {
        EXPECT_GE(y, y_of(top) - 2.5) << "column " << c << ": drawn above every sample near it";
        EXPECT_LE(y, y_of(bottom) + 2.5) << "column " << c << ": drawn below every sample near it";
      }
  }
  // The intervals: the band along the plot's bottom where each runs (the
  // 1 us one a twelfth of a column), none where none does.
  const int band = int(plot.y1) - 3;
  for (int c = 0; c < columns; ++c) {
    const double u0 = 6000.0 * c / columns, u1 = 6000.0 * (c + 1) / columns;
    bool inside = false, near = false;
    for (auto [b, e] : t.busy) {
      inside |= double(b) <= u0 && u1 <= double(e);
      near |= double(b) < u1 + 2 * 6000.0 / columns && double(e) > u0 - 2 * 6000.0 / columns;
    }
    if (std::abs(c - int(3333.0 * columns / 6000)) <= 2) continue;  // the dip's ink is there
    if (inside) {
      EXPECT_TRUE(p.orange(px0 + c, band)) << "column " << c << " inside a busy interval";
    } else if (!near) {
      EXPECT_FALSE(p.orange(px0 + c, band)) << "column " << c << " far from any busy interval";
    }
  }
  const int c1us = int(3000.0 * columns / 6000);
  EXPECT_TRUE(p.orange(px0 + c1us, band) || p.orange(px0 + c1us + 1, band)) << "the 1 us interval";
}

TEST(Chart, AHistogramsBarsHaveTheirBinsCounts) {
  const ChartTrace t = chart_trace("chart_histogram");
  std::string error;
  auto ix = index::TraceIndex::build(t.path, error);
  ASSERT_TRUE(ix) << error;
  analysis::Expr e;
  ASSERT_TRUE(analysis::parse_stream(R"(field(name="tick", "v"))", e, error)) << error;
  auto s = analysis::DerivedStream::evaluate(*ix, e, error);
  ASSERT_TRUE(s) << error;
  ASSERT_EQ(s->size(), t.samples.size());
  const trace::ClockMap& clock = ix->catalog().clock;
  for (bool log : {true, false}) {
    const render::PlayableHistogram h = render::PlayableHistogram::build(*s, clock, log);
    EXPECT_FALSE(h.log_bins) << "a value at or below 0: linear bins, whatever was asked";
    uint64_t shown = 0;
    const std::vector<uint64_t> counts = h.up_to(*s, clock, UINT64_MAX, shown);
    ASSERT_EQ(shown, t.samples.size());
    // The reference: each value placed by the bins' edges.
    std::vector<uint64_t> want(h.bins, 0);
    for (const Sample& x : t.samples) {
      uint32_t b = 0;
      while (b + 1 < h.bins && h.bin_low(b + 1) <= x.v) ++b;
      ++want[b];
    }
    ASSERT_EQ(counts, want);
    const std::string png = scratch_dir() + "/hist.png";
    constexpr int W = 700, H = 320;
    ASSERT_TRUE(render::write_histogram_chart(png, W, H, {"field v", &h, counts, "v"}, error)) << error;
    const Png p = load_png(png);
    ASSERT_EQ(p.w, W);
    const render::ChartPlot plot = render::histogram_chart_plot(W, H);
    const uint64_t top = *std::max_element(counts.begin(), counts.end());
    const double bw = plot.w() / h.bins;
    for (uint32_t b = 0; b < h.bins; ++b) {
      const int x = int(plot.x0 + bw * (b + 0.5));
      int y = int(plot.y1) - 1;  // the bar's top: the highest blue row over the bin's middle
      while (y > int(plot.y0) && p.blue(x, y - 1)) --y;
      if (!counts[b]) {
        EXPECT_FALSE(p.blue(x, int(plot.y1) - 1)) << "bin " << b << " is empty";
        continue;
      }
      const double want_top = plot.y1 - std::sqrt(double(counts[b]) / double(top)) * plot.h();
      EXPECT_NEAR(y, std::min(want_top, plot.y1 - 2), 1.5) << "bin " << b << " of " << counts[b];
    }
  }
}

// Round values, and none where there are none to give: values far from 0
// and close together once looped forever (a review finding).
TEST(Chart, ValueTicksAreRoundAndEnd) {
  const std::vector<double> fifths = render::value_ticks(0, 1, 5);
  ASSERT_EQ(fifths.size(), 6u);
  for (size_t i = 0; i < fifths.size(); ++i) EXPECT_NEAR(fifths[i], 0.2 * double(i), 1e-12);
  EXPECT_EQ(render::value_ticks(-50, 100, 3), (std::vector<double>{-50, 0, 50, 100}));
  EXPECT_LE(render::value_ticks(1.7e18, 1.7e18 + 12800, 5).size(), 16u);
  EXPECT_TRUE(render::value_ticks(-1e308, 1e308, 5).empty());
  EXPECT_TRUE(render::value_ticks(3, 3, 5).empty());
}

TEST(Chart, PlayedToTheCursorAndWrittenAsSvgAndPdf) {
  const ChartTrace t = chart_trace("chart_formats");
  const std::string tool = bin("app/tinescope") + " render " + t.path + " --stream 'field(name=\"tick\", \"v\")' ";
  std::string out;
  // Up to the cursor: the samples at or before 2.5 ms of the trace.
  ASSERT_EQ(run(tool + "--figure histogram --cursor 2500us -o " + scratch_dir() + "/played.png 2>&1", &out), 0) << out;
  EXPECT_NE(out.find(" 2501 records"), std::string::npos) << out;
  for (const char* ext : {"svg", "pdf", "SVG"}) {
    const std::string path = scratch_dir() + "/chart." + ext;
    ASSERT_EQ(run(tool + "--figure stream -o " + path + " 2>&1", &out), 0) << out;
    const std::string bytes = slurp(path);
    if (ext[0] == 'p') {
      EXPECT_EQ(bytes.substr(0, 5), "%PDF-");
      EXPECT_NE(bytes.find("%%EOF", bytes.size() - 16), std::string::npos);
    } else {
      EXPECT_NE(bytes.find("<svg"), std::string::npos);
      EXPECT_NE(bytes.find("</svg>"), std::string::npos);
      EXPECT_GT(bytes.size(), 10000u) << "6000 samples and the axes' text";
    }
  }
  // Bad asks: a clear message and no file.
  EXPECT_EQ(run(tool + "--figure stream -o " + scratch_dir() + "/chart.jpg 2>&1", &out), 2);
  EXPECT_NE(out.find(".png, .svg or .pdf"), std::string::npos) << out;
  EXPECT_EQ(run(tool + "--figure stream -o /nonexistent-dir/chart.svg 2>&1", &out), 1);
  EXPECT_NE(out.find("/nonexistent-dir/chart.svg"), std::string::npos) << out;
  EXPECT_EQ(run(bin("app/tinescope") + " render " + t.path + " --figure histogram -o " + scratch_dir() + "/x.png 2>&1", &out), 2);
  EXPECT_NE(out.find("--stream"), std::string::npos) << out;
  EXPECT_EQ(run(tool + "--stream 'intervals(name=\"busy\")' --figure histogram -o " + scratch_dir() + "/x.png 2>&1", &out), 2);
  // Two traces: the stream drawn from each (the seed's figure 5 overlays
  // one program's transactions on another's GC phases).
  const std::string other = scratch_dir() + "/chart_other.tine";
  ASSERT_EQ(run("cp " + t.path + " " + other), 0);
  EXPECT_EQ(run(tool + "--figure stream " + other + " -o " + scratch_dir() + "/x.png 2>&1", &out), 0) << out;
  EXPECT_NE(out.find("stream of 2 streams, 12000 records"), std::string::npos) << out;
  EXPECT_EQ(run(tool + "--figure stream --size 64x64 -o " + scratch_dir() + "/small.svg 2>&1", &out), 1);
  EXPECT_NE(::access((scratch_dir() + "/small.svg").c_str(), F_OK), 0) << "a chart that cannot be drawn leaves no file";
  EXPECT_EQ(run(tool + "--figure timeline -o " + scratch_dir() + "/x.png 2>&1", &out), 2);
  EXPECT_NE(out.find("--figure stream, series or histogram"), std::string::npos) << out;
  EXPECT_EQ(run(bin("app/tinescope") + " render " + t.path + " --figure stream --stream 'field(name=\"tick\"' -o " +
                    scratch_dir() + "/x.png 2>&1", &out), 2);
}

// Issue 56, headless parity: every figure, alone and stacked, in each
// format. The SVG parses as XML; the PDF, rendered back by poppler
// (pdftocairo, 72 dpi: a point a pixel), is the PNG's picture: a GL
// figure exactly (its pixels are placed unsmoothed), a chart within the
// text's antialiasing. Any other extension is refused and writes nothing.
TEST(Chart, EveryFigureIsWrittenAsPngSvgAndPdfAloneAndStacked) {
  const ChartTrace t = chart_trace("chart_every");
  const std::string tool = bin("app/tinescope") + " render " + t.path + " ";
  const std::string stream = " --stream 'field(name=\"tick\", \"v\")'";
  const std::string dir = scratch_dir();
  std::string out;
  for (const std::string figure : {"timeline", "scope", "sequence", "series", "stream", "histogram", "pie",
                                   "timeline,scope,series,histogram,pie,stream"}) {
    const bool streams = figure.find("stream") != std::string::npos || figure.find("series") != std::string::npos ||
                         figure.find("histogram") != std::string::npos;
    const std::string base = dir + "/every-" + std::to_string(std::hash<std::string>()(figure) % 100000);
    const bool six = figure.find(',') != std::string::npos;
    const std::string cmd = tool + (six ? "--size 640x1200" : "--size 640x400") + " --figure " + figure + (streams ? stream : "") + " -o " + base;
    ASSERT_EQ(run(cmd + ".png 2>&1", &out), 0) << figure << ": " << out;
    const Png png = load_png(base + ".png");
    EXPECT_EQ(png.w, 640) << figure;
    EXPECT_EQ(png.h, six ? 1200 : 400) << figure;
    ASSERT_EQ(run(cmd + ".svg 2>&1", &out), 0) << figure << ": " << out;
    EXPECT_EQ(run("xmllint --noout " + base + ".svg 2>&1", &out), 0) << figure << ": not well-formed XML: " << out;
    EXPECT_NE(slurp(base + ".svg").find("<svg"), std::string::npos) << figure;
    ASSERT_EQ(run(cmd + ".pdf 2>&1", &out), 0) << figure << ": " << out;
    EXPECT_EQ(slurp(base + ".pdf").substr(0, 5), "%PDF-") << figure;
    ASSERT_EQ(run("pdftocairo -png -r 72 -singlefile " + base + ".pdf " + base + "-pdf 2>&1", &out), 0) << figure << ": " << out;
    // A GL figure is its pixels; text drawn by cairo into a PDF and back may
    // differ from cairo's PNG at glyph edges, never in what is drawn.
    const bool gl_only = figure == "timeline" || figure == "scope" || figure == "sequence";
    const std::string limits = gl_only ? "" : " --tolerance 96 --max-differing 1";
    EXPECT_EQ(run(bin("app/tinescope") + " compare-png " + base + ".png " + base + "-pdf.png" + limits + " 2>&1", &out), 0)
        << figure << ": the PDF is not the PNG's picture: " << out;
  }
  // Stacked: each figure in its slot, none of them blank.
  const Png stacked = load_png(dir + "/every-" + std::to_string(std::hash<std::string>()("timeline,scope,series,histogram,pie,stream") % 100000) + ".png");
  ASSERT_EQ(stacked.h, 1200);
  for (int slot = 0; slot < 6; ++slot) {
    std::set<int> colours;
    for (int y = slot * 200 + 2; y < slot * 200 + 198; y += 3)
      for (int x = 0; x < stacked.w; x += 3) colours.insert(stacked.r(x, y) << 8 | stacked.b(x, y));
    EXPECT_GT(colours.size(), 3u) << "slot " << slot << " is blank";
  }
  // Refused, and nothing written.
  for (const char* bad : {"x.jpg", "x.tiff", "x"}) {
    EXPECT_EQ(run(tool + "--figure timeline -o " + dir + "/" + bad + " 2>&1", &out), 2) << bad << ": " << out;
    EXPECT_NE(out.find(".png, .svg or .pdf"), std::string::npos) << out;
    EXPECT_NE(::access((dir + "/" + bad).c_str(), F_OK), 0) << bad;
  }
  EXPECT_EQ(run(tool + "--figure timeline,nothing -o " + dir + "/y.png 2>&1", &out), 105) << out;  // (CLI11's validation error)
  EXPECT_NE(out.find("not a figure: 'nothing'"), std::string::npos) << out;
}

// compare-png, for regression tests of pictures: 0 for the same picture, 1
// and a picture of the differences for a changed one (or another size), 2
// for a file that is no picture.
TEST(Chart, ComparePngTellsAChangedPictureAndShowsWhere) {
  const ChartTrace t = chart_trace("chart_compare");
  const std::string tool = bin("app/tinescope"), dir = scratch_dir();
  const std::string render = tool + " render " + t.path + " --figure timeline --size 400x300 -o ";
  std::string out;
  ASSERT_EQ(run(render + dir + "/a.png 2>&1", &out), 0) << out;
  ASSERT_EQ(run(render + dir + "/b.png 2>&1", &out), 0) << out;
  ASSERT_EQ(run(render + dir + "/c.png --from 1ms 2>&1", &out), 0) << out;
  EXPECT_EQ(run(tool + " compare-png " + dir + "/a.png " + dir + "/b.png 2>&1", &out), 0) << out;
  EXPECT_NE(out.find(" 0 pixels"), std::string::npos) << out;
  EXPECT_NE(::access((dir + "/b.diff.png").c_str(), F_OK), 0) << "no differences, no picture of them";
  EXPECT_EQ(run(tool + " compare-png " + dir + "/a.png " + dir + "/c.png 2>&1", &out), 1) << out;
  const Png diff = load_png(dir + "/c.diff.png");
  ASSERT_EQ(diff.w, 400);
  int red = 0;
  for (int y = 0; y < diff.h; ++y)
    for (int x = 0; x < diff.w; ++x) red += diff.r(x, y) >= 128 && diff.b(x, y) == 0;
  EXPECT_GT(red, 100) << "the changed pixels are red";
  // A tolerance as loose as the change passes it.
  EXPECT_EQ(run(tool + " compare-png " + dir + "/a.png " + dir + "/c.png --tolerance 255 2>&1", &out), 0) << out;
  EXPECT_EQ(run(tool + " render " + t.path + " --figure timeline --size 300x300 -o " + dir + "/d.png 2>&1", &out), 0) << out;
  EXPECT_EQ(run(tool + " compare-png " + dir + "/a.png " + dir + "/d.png 2>&1", &out), 1) << out;
  EXPECT_NE(out.find("not the same size"), std::string::npos) << out;
  EXPECT_EQ(run(tool + " compare-png " + dir + "/a.png " + t.path + " 2>&1", &out), 2) << out;
  EXPECT_NE(out.find(t.path), std::string::npos) << out;
}

// --bookmark and --cursor headless (issue 56): a stream's records are the
// bookmarks of every figure, as the viewer's "Bookmark all" makes them; the
// stream chart ticks each along its top and draws the cursor across.
TEST(Chart, BookmarksAndTheCursorAreDrawnHeadless) {
  const ChartTrace t = chart_trace("chart_marks");
  const std::string tool = bin("app/tinescope") + " render " + t.path + " --size 800x400 ", dir = scratch_dir();
  std::string out;
  ASSERT_EQ(run(tool + "--figure timeline -o " + dir + "/plain.png 2>&1", &out), 0) << out;
  ASSERT_EQ(run(tool + "--figure timeline --bookmark 'intervals(name=\"busy\")' -o " + dir + "/marked.png 2>&1", &out), 0) << out;
  EXPECT_NE(out.find("3 bookmarks from intervals(name=\"busy\")"), std::string::npos) << out;
  EXPECT_EQ(run(bin("app/tinescope") + " compare-png " + dir + "/plain.png " + dir + "/marked.png 2>&1", &out), 1)
      << "the bookmarks are drawn: " << out;
  const std::string chart = dir + "/marked-chart.png";
  ASSERT_EQ(run(tool + "--figure stream --stream 'field(name=\"tick\", \"v\")' --bookmark 'intervals(name=\"busy\")' "
                       "--cursor 2ms -o " + chart + " 2>&1", &out), 0) << out;
  const Png png = load_png(chart);
  const render::ChartPlot plot = render::stream_chart_plot(800, 400, 1);
  const render::TimeAxis axis(0, 6'000'000, plot.w());  // (the trace runs 6 ms from 0)
  for (auto [b, e] : t.busy) {
    const int x = int(std::lround(plot.x0 + axis.x(b * 1000)));
    bool tick = false;
    for (int dx = -2; dx <= 2; ++dx) tick |= png.r(x + dx, int(plot.y0) + 3) > 200 && png.b(x + dx, int(plot.y0) + 3) < 120;
    EXPECT_TRUE(tick) << "a bookmark's tick at " << b << " us";
  }
  const int cx = int(std::lround(plot.x0 + axis.x(2'000'000)));
  int dark = 0;
  for (int y = int(plot.y0) + 10; y < int(plot.y1) - 10; ++y)
    for (int dx = -1; dx <= 1; ++dx) dark += png.r(cx + dx, y) < 90 && png.b(cx + dx, y) < 90;
  EXPECT_GT(dark, int(plot.h()) / 2) << "the cursor's line across the plot";
}

}  // namespace
}  // namespace tinescope::test
