// Duration statistics and the comparison of two runs.
#include "tinescope/analysis/duration_stats.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>

namespace tinescope::analysis {

uint32_t DurationHistogram::bin_of(uint64_t ns) {
  if (ns < 2 * kBinsPerOctave) return uint32_t(ns);  // below 64 ns: one bin a nanosecond
  // Octave o holds [2^o, 2^(o+1)); its 32 bins split it evenly in log2.
  const uint32_t octave = uint32_t(std::bit_width(ns)) - 1;
  const double frac = std::log2(double(ns)) - double(octave);
  uint32_t sub = std::min<uint32_t>(kBinsPerOctave - 1, uint32_t(frac * kBinsPerOctave));
  return 2 * kBinsPerOctave + (octave - 6) * kBinsPerOctave + sub;
}

double DurationHistogram::bin_low(uint32_t bin) {
  if (bin < 2 * kBinsPerOctave) return double(bin);
  const uint32_t rel = bin - 2 * kBinsPerOctave;
  return std::exp2(double(6 + rel / kBinsPerOctave) + double(rel % kBinsPerOctave) / kBinsPerOctave);
}

void DurationHistogram::add(uint64_t ns) {
  uint32_t b = bin_of(ns);
  if (bins_.size() <= b) bins_.resize(b + 1);
  ++bins_[b];
  ++count_;
  total_ += ns;
  min_ = std::min(min_, ns);
  max_ = std::max(max_, ns);
}

void DurationHistogram::merge(const DurationHistogram& o) {
  if (bins_.size() < o.bins_.size()) bins_.resize(o.bins_.size());
  for (size_t i = 0; i < o.bins_.size(); ++i) bins_[i] += o.bins_[i];
  count_ += o.count_;
  total_ += o.total_;
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
}

double DurationHistogram::percentile(double p) const {
  if (count_ == 0) return 0;
  const uint64_t rank = std::max<uint64_t>(1, uint64_t(std::ceil(std::clamp(p, 0.0, 100.0) / 100 * double(count_))));
  uint64_t seen = 0;
  for (uint32_t b = 0; b < bins_.size(); ++b) {
    seen += bins_[b];
    if (seen < rank) continue;
    double v = b < 2 * kBinsPerOctave ? double(b) : std::sqrt(bin_low(b) * bin_low(b + 1));
    return std::clamp(v, double(min_), double(max_));
  }
  return double(max_);
}

std::vector<DurationStats> duration_stats(const index::TraceIndex& ix, const Expr& intervals, bool by_thread,
                                          std::string& error, const EvalOptions& options) {
  std::vector<DurationStats> out;
  if (!yields_intervals(intervals)) {
    error = std::string(op_name(intervals.op)) + " makes samples, not intervals: no durations";
    return out;
  }
  auto cursor = open_cursor(ix, intervals, options, error);
  if (!cursor) return out;
  const double tpn = ix.catalog_snapshot()->clock.ticks_per_ns();
  std::map<std::pair<uint32_t, uint32_t>, DurationHistogram> per;  // (name, feedlet)
  Record r;
  std::pair<uint32_t, uint32_t> last_key{UINT32_MAX, 0};
  DurationHistogram* last = nullptr;
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> truncated;  // (rare)
  while (cursor->next(r)) {
    std::pair<uint32_t, uint32_t> key{r.name, r.feedlet};
    if (key != last_key) last_key = key, last = &per[key];
    last->add(uint64_t(std::llround(double(r.duration()) / tpn)));
    if (r.truncated()) [[unlikely]] ++truncated[key];
  }
  if (error = cursor->error(); !error.empty()) return {};
  auto catalog = ix.catalog_snapshot();
  const auto threads = catalog->thread_labels();
  std::map<uint32_t, DurationStats> names;
  for (auto& [key, h] : per) {
    DurationStats& n = names[key.first];
    n.name = std::string(catalog->string(key.first));
    n.h.merge(h);
    if (auto c = truncated.find(key); c != truncated.end()) n.truncated += c->second;
  }
  for (auto& [id, s] : names) {
    out.push_back(std::move(s));
    if (!by_thread) continue;
    for (auto it = per.lower_bound({id, 0}); it != per.end() && it->first.first == id; ++it) {
      DurationStats t;
      t.name = out.back().name;
      t.feedlet = it->first.second;
      auto f = threads.find(t.feedlet);
      t.thread = f != threads.end() ? f->second : "feedlet " + std::to_string(t.feedlet);
      t.h = it->second;
      if (auto c = truncated.find(it->first); c != truncated.end()) t.truncated = c->second;
      out.push_back(std::move(t));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const DurationStats& a, const DurationStats& b) {
    return a.name != b.name ? a.name < b.name : a.thread < b.thread;
  });
  return out;
}

std::vector<Comparison> compare(const std::vector<DurationStats>& a, const std::vector<DurationStats>& b,
                                const CompareOptions& o) {
  std::map<std::string, const DurationStats*> in_a;
  for (const DurationStats& s : a)
    if (s.thread.empty()) in_a[s.name] = &s;
  std::vector<Comparison> out;
  for (const DurationStats& s : b) {
    if (!s.thread.empty()) continue;
    auto it = in_a.find(s.name);
    if (it == in_a.end()) continue;
    Comparison c;
    c.name = s.name;
    c.count_a = it->second->h.count();
    c.count_b = s.h.count();
    c.a_ns = it->second->h.percentile(o.percentile);
    c.b_ns = s.h.percentile(o.percentile);
    c.change = c.a_ns > 0 ? c.b_ns / c.a_ns - 1 : (c.b_ns > 0 ? INFINITY : 0);
    c.judged = c.count_a >= o.min_count && c.count_b >= o.min_count;
    c.regressed = c.judged && c.change > o.threshold && c.b_ns - c.a_ns >= o.min_delta_ns;
    out.push_back(c);
  }
  std::stable_sort(out.begin(), out.end(), [](const Comparison& x, const Comparison& y) {
    return x.regressed != y.regressed ? x.regressed : x.change > y.change;
  });
  return out;
}

}  // namespace tinescope::analysis
