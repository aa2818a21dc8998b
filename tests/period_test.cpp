// The oscilloscope's period finder (analysis/period.hpp) against periods it
// must find: jittered starts, missing cycles, late outliers, huge
// timestamps, fractional-ns periods; and streams with no period.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tinescope/analysis/period.hpp"

namespace tinescope::analysis {
namespace {

struct Periodic {
  double period;
  int64_t origin;
  size_t cycles;
  double jitter_ns = 0;     // uniform +- jitter on each start
  double missing = 0;       // share of cycles with no start
  double late = 0;          // share of starts late by up to a period (an interruption's victims)
};

std::vector<int64_t> starts_of(const Periodic& p, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<int64_t> v;
  for (size_t n = 0; n < p.cycles; ++n) {
    if (unit(rng) < p.missing) continue;
    double t = double(p.origin) + p.period * double(n) + (unit(rng) * 2 - 1) * p.jitter_ns;
    if (unit(rng) < p.late) t += unit(rng) * p.period * 0.9;
    v.push_back(int64_t(std::llround(t)));
  }
  std::sort(v.begin(), v.end());
  return v;
}

TEST(Period, FindsJitteredPeriodsWithinAHundredthOfAPercent) {
  std::mt19937_64 rng(7);
  const Periodic cases[] = {
      {1e9 / 22050, 1'000'000, 44'100, 800, 0.01, 0.01},           // the demo's audio task
      {1e9 / 22050, int64_t(36e12), 200'000, 2000, 0.05, 0.02},    // ten hours in
      {50e6, 5'000'000, 200, 40'000, 0, 0},                         // an interruption every 50 ms
      {1234.567, 0, 100'000, 100, 0.2, 0.05},                       // 1.2 us, a fifth missing
      {16.666666e6, int64_t(4e18), 5000, 1e5, 0.01, 0},             // 60 Hz, near the end of the clock
  };
  for (const Periodic& p : cases) {
    const std::vector<int64_t> starts = starts_of(p, rng);
    const PeriodCandidate c = period_of_starts(starts);
    EXPECT_NEAR(c.period_ns, p.period, p.period * 1e-4) << "period " << p.period << " at " << p.origin;
    EXPECT_GT(c.sharpness, 0.8) << "period " << p.period;
  }
}

TEST(Period, RandomStartsHaveNoSharpPeriod) {
  std::mt19937_64 rng(11);
  std::exponential_distribution<double> gap(1.0 / 50'000);
  std::vector<int64_t> starts;
  double t = 0;
  for (int i = 0; i < 20'000; ++i) starts.push_back(int64_t(t += gap(rng)));
  const PeriodCandidate c = period_of_starts(starts);
  EXPECT_LT(c.sharpness, 0.1) << "a Poisson stream folds at " << c.period_ns << " ns into no column";
}

TEST(Period, TooFewStartsGiveNothing) {
  EXPECT_EQ(period_of_starts({}).period_ns, 0);
  EXPECT_EQ(period_of_starts({5, 10}).period_ns, 0);
  EXPECT_EQ(period_of_starts({7, 7, 7, 7}).period_ns, 0) << "no gap, no period";
}

// The refinement minimises the phase spread: a guess off by 0.5 % converges.
TEST(Period, ARoughGuessIsRefined) {
  std::mt19937_64 rng(3);
  const Periodic p{45351.47, 0, 30'000, 500, 0, 0};
  const std::vector<int64_t> starts = starts_of(p, rng);
  const PeriodCandidate c = refine_period({starts}, p.period * 1.005);
  EXPECT_NEAR(c.period_ns, p.period, p.period * 1e-5);
  EXPECT_GT(c.sharpness, 0.9);
}

TEST(Period, PrintsSevenDigitsInTheUnitThatFits) {
  EXPECT_EQ(format_period(45351.47), "45.35147 us");
  EXPECT_EQ(format_period(50e6), "50 ms");
  EXPECT_EQ(format_period(12.5), "12.5 ns");
  EXPECT_EQ(format_period(2.5e9), "2.5 s");
}

}  // namespace
}  // namespace tinescope::analysis
