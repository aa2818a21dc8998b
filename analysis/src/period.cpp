// The oscilloscope's period finder (period.hpp says how it works).
#include "tinescope/analysis/period.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>

namespace tinescope::analysis {

namespace {

struct Line {
  double a = 0, period = 0;  // start of cycle n: a + period * n (ns after the first start)
};

// One robust least-squares pass: each start is given the cycle the line
// predicts; those more than a quarter period off the line are outliers (a
// late start after an interruption, a preempted one) and left out.
bool fit(const std::vector<const std::vector<int64_t>*>& parts, size_t first_count, int64_t origin, Line& line) {
  double sn = 0, sx = 0, snn = 0, snx = 0, k = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    const std::vector<int64_t>& v = *parts[p];
    const size_t count = p == 0 ? std::min(first_count, v.size()) : v.size();
    for (size_t i = 0; i < count; ++i) {
      const double x = double(v[i] - origin);
      const double n = std::nearbyint((x - line.a) / line.period);
      if (std::fabs(x - (line.a + line.period * n)) > line.period / 4) continue;
      sn += n, sx += x, snn += n * n, snx += n * x, ++k;
    }
  }
  const double var = snn - sn * sn / std::max(k, 1.0);
  if (k < 3 || var <= 0) return false;
  const double period = (snx - sn * sx / k) / var;
  if (!(period > 0)) return false;
  line.period = period;
  line.a = (sx - period * sn) / k;
  return true;
}

}  // namespace

PeriodCandidate refine_period(const std::vector<std::vector<int64_t>>& stretches, double guess_ns) {
  PeriodCandidate c;
  if (stretches.empty() || stretches[0].size() < 3 || !(guess_ns > 0)) return c;
  const int64_t origin = stretches[0][0];
  Line line{0, guess_ns};
  std::vector<const std::vector<int64_t>*> parts{&stretches[0]};
  // The first stretch, 16 starts, then 128, 1024 and all: each line is
  // exact enough to count the cycles of the next span without a slip.
  for (size_t count : {size_t(16), size_t(128), size_t(1024), stretches[0].size()}) {
    for (int pass = 0; pass < 2; ++pass)
      if (!fit(parts, count, origin, line)) return c;
    if (count >= stretches[0].size()) break;
  }
  for (size_t s = 1; s < stretches.size(); ++s) {
    if (stretches[s].empty()) continue;
    parts.push_back(&stretches[s]);
    Line tried = line;
    for (int pass = 0; pass < 2; ++pass)
      if (!fit(parts, stretches[0].size(), origin, tried)) break;
    line = tried;
  }
  // Sharpness: the mean resultant length of the starts' phases.
  std::complex<double> sum;
  uint64_t n = 0;
  for (const auto* v : parts)
    for (int64_t t : *v) {
      const double phase = std::fmod(double(t - origin) - line.a, line.period) / line.period;
      sum += std::polar(1.0, 2 * M_PI * phase);
      ++n;
    }
  c.period_ns = line.period;
  c.sharpness = n ? std::abs(sum) / double(n) : 0;
  c.starts = n;
  return c;
}

namespace {

double median_gap(const std::vector<int64_t>& starts) {
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < starts.size(); ++i)
    if (starts[i] > starts[i - 1]) gaps.push_back(starts[i] - starts[i - 1]);
  if (gaps.empty()) return 0;
  std::nth_element(gaps.begin(), gaps.begin() + long(gaps.size() / 2), gaps.end());
  return double(gaps[gaps.size() / 2]);
}

}  // namespace

PeriodCandidate period_of_starts(const std::vector<int64_t>& starts) {
  const size_t first = std::min<size_t>(starts.size(), 2000);
  std::vector<std::vector<int64_t>> stretches{{starts.begin(), starts.begin() + long(first)}};
  // Further stretches of a quarter of the first's span, at 8, 64, ... of it.
  if (first >= 3) {
    const int64_t t0 = starts.front(), span = std::max<int64_t>(1, starts[first - 1] - t0);
    for (double at = 8.0 * double(span); t0 + at <= double(starts.back()); at *= 8) {
      const int64_t from = t0 + int64_t(at), to = from + span / 4;
      auto b = std::lower_bound(starts.begin(), starts.end(), from), e = std::upper_bound(b, starts.end(), to);
      stretches.emplace_back(b, e);
    }
  }
  return refine_period(stretches, median_gap(stretches[0]));
}

std::vector<PeriodCandidate> find_periods(const index::TraceIndex& ix, const std::vector<uint32_t>& feedlets,
                                          const PeriodOptions& o) {
  const trace::Catalog& cat = ix.catalog();
  const trace::ClockMap& clock = cat.clock;
  const uint64_t first = ix.first_ts(), last = ix.last_ts();
  const uint64_t from = std::max(first, o.from_ns == INT64_MIN ? first : clock.to_ticks(o.from_ns));
  const uint64_t to = std::min(last, o.to_ns == INT64_MAX ? last : clock.to_ticks(o.to_ns));
  if (to <= from) return {};
  // The lane's busiest streams of intervals and job segments.
  const std::vector<index::StreamInfo> streams = ix.streams();
  std::vector<uint32_t> chosen;
  for (uint32_t id = 0; id < streams.size(); ++id) {
    const index::StreamInfo& st = streams[id];
    const bool kind = st.kind == index::StreamKind::Interval || st.kind == index::StreamKind::Sched ||
                      st.kind == index::StreamKind::Task;
    if (kind && st.items >= 3 && std::count(feedlets.begin(), feedlets.end(), st.feedlet)) chosen.push_back(id);
  }
  std::sort(chosen.begin(), chosen.end(), [&](uint32_t a, uint32_t b) { return streams[a].items > streams[b].items; });
  if (chosen.size() > 12) chosen.resize(12);

  struct Scored {
    PeriodCandidate c;
    double score;
  };
  std::vector<Scored> found;
  for (uint32_t id : chosen) {
    const index::StreamInfo& st = streams[id];
    auto starts_in = [&](uint64_t t0, uint64_t t1) {
      std::vector<int64_t> v;
      if (t1 < t0) return v;
      for (const index::Item& it : ix.items(int(id), t0, t1))
        if (it.start >= from) v.push_back(clock.to_ns(it.start));
      std::sort(v.begin(), v.end());
      return v;
    };
    // The first stretch: about `stretch` items at the stream's mean spacing,
    // widened (x4) where the stream is sparser here than on average.
    const uint64_t spacing = std::max<uint64_t>(1, (last - first) / st.items);
    uint64_t span = spacing > (UINT64_MAX / 4) / o.stretch ? UINT64_MAX / 4 : spacing * o.stretch;
    std::vector<int64_t> head;
    for (int widen = 0; widen < 8; ++widen, span = std::min(span * 4, UINT64_MAX / 4)) {
      head = starts_in(from, to - from < span ? to : from + span);
      if (head.size() >= o.stretch / 4 || to - from < span) break;
    }
    if (head.size() < 3) continue;
    std::vector<std::vector<int64_t>> stretches{head};
    // Further on: a quarter of the first's span at 8, 64, 512 ... times it.
    const uint64_t head_span = std::max<uint64_t>(1, span);
    for (uint64_t at = head_span; at <= (to - from) / 8;) {
      at *= 8;
      stretches.push_back(starts_in(from + at, from + at + std::min(head_span / 4, to - from - at)));
    }
    PeriodCandidate c = refine_period(stretches, median_gap(head));
    if (c.period_ns <= 0 || c.sharpness < o.min_sharpness) continue;
    switch (st.kind) {
      case index::StreamKind::Sched: c.source = "cpu" + std::to_string(st.key) + " jobs"; break;
      case index::StreamKind::Task: c.source = "task " + std::string(cat.string(st.key)); break;
      default: c.source = std::string(cat.string(st.key));
    }
    // Rank by coherent evidence: a column of many starts over a few perfect ones.
    found.push_back({c, c.sharpness * c.sharpness * double(st.items)});
  }
  std::sort(found.begin(), found.end(), [](const Scored& a, const Scored& b) { return a.score > b.score; });
  std::vector<PeriodCandidate> out;
  for (const Scored& s : found) {
    const bool near = std::any_of(out.begin(), out.end(), [&](const PeriodCandidate& k) {
      return std::fabs(k.period_ns - s.c.period_ns) <= 0.005 * k.period_ns;
    });
    if (!near && out.size() < o.max_candidates) out.push_back(s.c);
  }
  return out;
}

std::string format_period(double ns) {
  const char* unit = "ns";
  double v = ns;
  if (ns >= 1e9) v = ns / 1e9, unit = "s";
  else if (ns >= 1e6) v = ns / 1e6, unit = "ms";
  else if (ns >= 1e3) v = ns / 1e3, unit = "us";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.7g %s", v, unit);
  return buf;
}

}  // namespace tinescope::analysis
