// The oscilloscope picture with folding. Every interval in the strips' range
// is cut into the periods it covers and added to per-strip column
// accumulators (partial columns directly, whole columns through a difference
// array), so the cost is one pass over the items plus one over the pixels,
// and dragging the period only repeats the pass. Whole periods inside a long
// interval are added per strip, not per period.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "tinescope/render/picture.hpp"

namespace tinescope::render {

namespace {

// Per strip and column: coverage of depth-0 intervals (the intensity) and
// colour sums weighted by coverage and depth (deeper names win the colour).
constexpr int kChannels = 5;  // r, g, b, weight, coverage

struct Folder {
  uint32_t columns, strips, fold;
  std::vector<float> direct, diff;  // strips × (columns + 1) × kChannels

  void add(uint64_t period, double c0, double c1, const float ch[kChannels], double times = 1) {
    const uint64_t strip = period / fold;
    if (strip >= strips || c1 <= c0) return;
    float* d = &direct[strip * (columns + 1) * kChannels];
    float* f = &diff[strip * (columns + 1) * kChannels];
    auto put = [&](float* base, uint32_t col, double w) {
      for (int k = 0; k < kChannels; ++k) base[col * kChannels + k] += float(w) * ch[k];
    };
    const uint32_t a = uint32_t(std::min<double>(columns - 1, c0)), b = uint32_t(std::min<double>(columns - 1, c1));
    if (a == b) return put(d, a, (c1 - c0) * times);
    put(d, a, (a + 1 - c0) * times);
    if (b > a + 1) put(f, a + 1, times), put(f, b, -times);
    put(d, b, (c1 - b) * times);
  }
};

// Max and min folds count, per strip and column, the periods in which the
// folded lanes are busy there: the union of their outermost intervals, cut
// at period boundaries, each piece adding one to the columns it touches
// (through a difference array; whole periods inside a long interval per
// strip). Pieces of the union are disjoint, so within one period two of
// them share at most the column where one ends and the next begins; that
// column is counted once.
struct PeriodCounter {
  uint32_t columns, strips, fold;
  std::vector<int32_t> diff;  // strips × (columns + 1)
  uint64_t last_period = UINT64_MAX;
  uint32_t last_column = 0;

  void touch(uint64_t period, uint32_t c0, uint32_t c1, int32_t times = 1) {
    const uint64_t strip = period / fold;
    if (strip >= strips) return;
    if (period == last_period && c0 == last_column) ++c0;
    last_period = period, last_column = c1;
    if (c0 > c1) return;
    int32_t* d = &diff[strip * (columns + 1)];
    d[c0] += times, d[c1 + 1] -= times;
  }
  // [u, v) in periods from the first strip's start, pieces in time order.
  void add(double u, double v) {
    const uint64_t p0 = uint64_t(u), p1 = uint64_t(v);
    auto col = [&](double x) { return uint32_t(std::clamp(x, 0.0, double(columns - 1))); };
    if (p0 == p1) return touch(p0, col(std::floor((u - double(p0)) * columns)), col(std::ceil((v - double(p1)) * columns) - 1));
    touch(p0, col(std::floor((u - double(p0)) * columns)), columns - 1);
    for (uint64_t p = p0 + 1; p < p1;) {
      const uint64_t strip_end = std::min(p1, (p / fold + 1) * fold);
      touch(p, 0, columns - 1, int32_t(strip_end - p));
      last_period = strip_end - 1;
      p = strip_end;
    }
    if (v > double(p1)) touch(p1, 0, col(std::ceil((v - double(p1)) * columns) - 1));
  }
};

}  // namespace

const char* fold_mode_name(FoldMode m) {
  switch (m) {
    case FoldMode::Max: return "max";
    case FoldMode::Min: return "min";
    default: return "mean";
  }
}

bool parse_fold_mode(const std::string& text, FoldMode& m) {
  for (FoldMode k : {FoldMode::Mean, FoldMode::Max, FoldMode::Min})
    if (text == fold_mode_name(k)) return m = k, true;
  return false;
}

bool ScopePicture::locate(int64_t t, uint32_t& strip, double& column) const {
  if (t < request.start || request.period_ns <= 0) return false;
  const double u = double(t - request.start) / request.period_ns;
  const uint64_t p = uint64_t(u);
  if (p / request.fold >= request.strips) return false;
  strip = uint32_t(p / request.fold);
  column = (u - double(p)) * request.columns;
  return true;
}

ScopePicture build_scope(const Scene& scene, const ScopeRequest& req) {
  const auto started = std::chrono::steady_clock::now();
  ScopePicture P;
  P.serial = next_picture_serial();
  P.request = req;
  P.request.fold = std::max(1u, req.fold);
  P.request.strips = std::max(1u, req.strips);
  P.request.columns = std::max(1u, req.columns);
  const uint32_t W = P.request.columns, S = P.request.strips, F = P.request.fold;
  const double period = std::max(req.period_ns, 1e-3);
  Folder fold{W, S, F, std::vector<float>(size_t(S) * (W + 1) * kChannels), {}};
  fold.diff = fold.direct;
  const int64_t end = P.end();
  std::vector<std::pair<double, double>> busy;  // max, min: outermost intervals, in periods from the start

  for (uint32_t lane_id : req.lanes) {
    if (lane_id >= scene.lanes().size() || P.truncated) continue;
    const Lane& lane = scene.lanes()[lane_id];
    const index::TraceIndex& ix = *scene.sources()[lane.source].index;
    const trace::Catalog& cat = *scene.sources()[lane.source].catalog;
    const ClockWindow cw(cat.clock, req.start, end);
    auto add_interval = [&](int64_t s, int64_t e, uint32_t depth, uint32_t colour) {
      const double u = double(std::max(s, req.start) - req.start) / period;
      const double v = double(std::min(e, end) - req.start) / period;
      if (v <= u) return;
      if (depth == 0 && req.mode != FoldMode::Mean) busy.emplace_back(u, v);
      const float weight = float(std::ldexp(1.0, 2 * int(std::min(depth, 8u))));
      const float ch[kChannels] = {weight * float(colour & 255) / 255.f, weight * float(colour >> 8 & 255) / 255.f,
                                   weight * float(colour >> 16 & 255) / 255.f, weight, depth == 0 ? 1.f : 0.f};
      const uint64_t p0 = uint64_t(u), p1 = uint64_t(v);
      if (p0 == p1) return fold.add(p0, (u - double(p0)) * W, (v - double(p1)) * W, ch);
      fold.add(p0, (u - double(p0)) * W, W, ch);
      // Whole periods p0+1 .. p1-1, strip by strip.
      for (uint64_t p = p0 + 1; p < p1;) {
        const uint64_t strip_end = std::min(p1, (p / F + 1) * F);
        fold.add(p, 0, W, ch, double(strip_end - p));
        p = strip_end;
      }
      fold.add(p1, 0, (v - double(p1)) * W, ch);
    };
    // Items end inside the range; those running on past its end come from
    // running_across (begin/end pairs, complete intervals, job segments). A
    // job segment folds as an outermost
    // interval named by its task: what ran is what periodic work looks like.
    ix.lane_items(lane.feedlet, cw.k0, cw.k1, [&](const index::Item& it) {
      const bool job = it.kind == index::StreamKind::Sched;
      if ((it.kind != index::StreamKind::Interval && !job) || P.truncated) return;
      if (++P.items > req.max_items) {
        P.truncated = true;
        return;
      }
      add_interval(cw.ns(it.start), cw.ns(it.end), job ? 0 : it.depth, name_colour(cat.string(it.name)));
    });
    const index::RunningAcross edge = ix.running_across(lane.feedlet, cw.k1);
    for (const index::OpenInterval& o : edge.open)
      add_interval(cw.ns(o.start), end, o.depth, name_colour(cat.string(o.name)));
    for (const index::Item& it : edge.spans)
      add_interval(cw.ns(it.start), end, it.depth, name_colour(cat.string(it.name)));
    for (const index::RunningJob& r : edge.jobs)
      add_interval(cw.ns(r.start), end, 0, name_colour(cat.string(r.task)));
  }

  PeriodCounter counter{W, S, F, {}};
  if (req.mode != FoldMode::Mean) {
    counter.diff.assign(size_t(S) * (W + 1), 0);
    std::sort(busy.begin(), busy.end());
    for (size_t i = 0; i < busy.size();) {  // the union, piece by piece
      double u = busy[i].first, v = busy[i].second;
      for (++i; i < busy.size() && busy[i].first <= v; ++i) v = std::max(v, busy[i].second);
      counter.add(u, v);
    }
  }
  P.rgba.assign(size_t(S) * W, 0);
  std::vector<float> run(kChannels);
  for (uint32_t s = 0; s < S; ++s) {
    std::fill(run.begin(), run.end(), 0.f);
    int32_t periods = 0;  // max, min: periods busy at the column
    const float* d = &fold.direct[size_t(s) * (W + 1) * kChannels];
    const float* f = &fold.diff[size_t(s) * (W + 1) * kChannels];
    for (uint32_t c = 0; c < W; ++c) {
      float v[kChannels];
      for (int k = 0; k < kChannels; ++k) run[k] += f[c * kChannels + k], v[k] = run[k] + d[c * kChannels + k];
      if (req.mode != FoldMode::Mean) periods += counter.diff[size_t(s) * (W + 1) + c];
      if (v[3] <= 0) continue;
      float shown;
      if (req.mode == FoldMode::Max) {
        shown = periods > 0 ? 1.f : 0.f;
      } else if (req.mode == FoldMode::Min) {
        shown = periods >= int32_t(F) ? 1.f : 0.f;
      } else {
        // Intensity: the fraction of the folded periods that are busy here.
        const float intensity = std::clamp(v[4] / float(F), 0.f, 1.f);
        shown = v[4] > 0 ? std::max(intensity, 0.08f) : 0.f;
      }
      auto u8 = [](float x) { return uint32_t(std::lround(std::clamp(x, 0.f, 1.f) * 255)); };
      P.rgba[size_t(s) * W + c] = u8(v[0] / v[3]) | u8(v[1] / v[3]) << 8 | u8(v[2] / v[3]) << 16 | u8(shown) << 24;
    }
  }
  P.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return P;
}

}  // namespace tinescope::render
