// Pictures and numbers against the reference model (oracle.hpp), on random
// traces that hold the cases that went wrong before: stacks deeper than 64,
// ends with no begin, begins never ended, drops and lost chunks in the middle
// of stacks, counters sampled seldom (windows between two samples), threads
// that share a name, timestamps near the top of the clock's range, jobs that
// migrate and collide, messages never received or never sent. For each,
// the timeline's picture data (before GL) of random windows must draw every
// column the oracle says something covers (an interval at its depth, a job
// on its CPU) and nothing where nothing is, hatch what was cut, draw an
// arrow for each message in view, hold a counter's value carried in, and
// the statistics and the index's counts must equal the oracle's. A fixed seed in the suite; under
// scripts/soak.sh (TINESCOPE_TEST_SEED) a random one.
#include <array>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "oracle.hpp"
#include "tinescope/analysis/duration_stats.hpp"
#include "tinescope/render/figure.hpp"
#include "tinescope/render/figure_params.hpp"
#include "tinescope/render/picture.hpp"
#include "tinescope/render/scene.hpp"

namespace tinescope::test {
namespace {

using namespace format;

enum Name : uint64_t { kA = 1, kB, kC, kD, kCtr, kFctr, kWorker, kOther, kNames };
const std::vector<std::string> kNameText = {"a", "b", "c", "d", "ctr", "fctr", "worker", "other"};

struct Shape {
  uint32_t feedlets = 3, events = 2000;
  uint64_t base = 1'000'000;  // the first timestamp
};

// A random trace: per feedlet a stack of begins and ends (some ends name
// nothing open, some begins never end, now and then a run 70 deep), complete
// intervals, instants, two counters sampled seldom; jobs of tasks a and b
// on CPUs 0-2 that migrate, collide, and end naming the wrong CPU or a job
// not running; messages between the threads, some never received, some
// received never sent; chunks that follow drops or lost chunks. Threads 1
// and 2 share the name "worker".
std::string random_trace(uint64_t seed, const Shape& shape) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> threads;
  for (uint32_t f = 0; f < shape.feedlets; ++f) threads.push_back(f < 2 ? kWorker : kOther);
  TraceBytes trace = named_trace(kNameText, threads);
  std::vector<ChunkBuilder> cb(shape.feedlets);
  std::vector<uint64_t> ts(shape.feedlets, shape.base);
  std::vector<std::vector<uint64_t>> open(shape.feedlets);
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> inflight(shape.feedlets);  // to receive: (id, sent at)
  uint64_t next_id = 1;
  std::vector<std::array<uint64_t, 2>> job(shape.feedlets, {0, 0});  // per task: its current job
  for (uint32_t f = 0; f < shape.feedlets; ++f) cb[f].feedlet = f + 1;
  auto flush = [&](ChunkBuilder& c) {
    if (c.empty()) return;
    if (rng() % 6 == 0) c.pending_drops = 1 + rng() % 9;
    trace.flush(c);
    if (rng() % 10 == 0) ++c.sequence;  // the next chunk is lost
  };
  auto put = [&](ChunkBuilder& c, uint16_t type, uint64_t t, uint64_t name) { put_named(c, type, t, name); };
  for (uint32_t i = 0; i < shape.events; ++i) {
    const uint32_t f = uint32_t(rng() % shape.feedlets);
    ChunkBuilder& c = cb[f];
    ts[f] += rng() % 4 == 0 ? rng() % 20000 : rng() % 300;
    const uint64_t t = ts[f];
    std::vector<uint64_t>& stack = open[f];
    switch (rng() % 13) {
      case 0:
      case 1:
      case 2: {
        const uint64_t n = 1 + rng() % 4;
        put(c, kIntervalBegin, t, n), stack.push_back(n);
        if (rng() % 200 == 0)  // a deep run
          for (int d = 0; d < 70; ++d, ++ts[f]) put(c, kIntervalBegin, ts[f], kA + d % 3), stack.push_back(kA + d % 3);
        break;
      }
      case 3:
      case 4:
      case 5: {
        // Mostly the innermost; sometimes one further down, or a name not open.
        uint64_t n = 1 + rng() % 4;
        if (!stack.empty() && rng() % 8) n = stack[stack.size() - 1 - (rng() % 6 == 0 ? rng() % stack.size() : 0)];
        put(c, kIntervalEnd, t, n);
        while (!stack.empty() && stack.back() != n) stack.pop_back();
        if (!stack.empty()) stack.pop_back();
        break;
      }
      case 6: {
        uint8_t* p = c.begin(kIntervalComplete, t);
        p = ChunkBuilder::put_u64(p, 1 + rng() % 4);
        p = ChunkBuilder::put_u64(p, rng() % std::min<uint64_t>(t - shape.base + 1, 5000));
        c.end(p);
        break;
      }
      case 7: put(c, kInstant, t, kD); break;
      case 10: {  // a send to another thread (every 8th never received)
        const uint64_t id = next_id++;
        uint8_t* p = c.begin(kMessageSend, t);
        p = c.put_delta(p, id), p = ChunkBuilder::put_u64(p, 1), p = ChunkBuilder::put_u64(p, rng() % 64);
        c.end(ChunkBuilder::put_bytes(p, "x", 1));
        if (id % 8) inflight[(f + 1 + rng() % 2) % shape.feedlets].emplace_back(id, t);
        break;
      }
      case 11: {  // a receive: of a message sent to it, or now and then of one never sent
        uint64_t id = next_id++;
        if (!inflight[f].empty() && rng() % 10) {
          id = inflight[f].front().first;
          ts[f] = std::max(ts[f], inflight[f].front().second);
          inflight[f].erase(inflight[f].begin());
        }
        uint8_t* p = c.begin(kMessageRecv, ts[f]);
        p = c.put_delta(p, id), p = ChunkBuilder::put_u64(p, 1), p = ChunkBuilder::put_u64(p, 0);
        c.end(ChunkBuilder::put_bytes(p, nullptr, 0));
        break;
      }
      case 12: {  // a job event: mostly as a scheduler says them, sometimes not
        const uint32_t task = uint32_t(rng() % 2);
        const uint64_t cpu = rng() % 3;
        static constexpr uint16_t kTypes[] = {kJobStart, kJobResume, kJobPreempt, kJobBlock, kJobComplete};
        const uint16_t type = kTypes[rng() % std::size(kTypes)];
        uint8_t* p = c.begin(type, t);
        p = ChunkBuilder::put_u64(p, kA + task), p = ChunkBuilder::put_u64(p, job[f][task]);
        c.end(ChunkBuilder::put_u64(p, cpu));
        if (type == kJobComplete) ++job[f][task];
        break;
      }
      case 8:
        if (rng() % 4 == 0) {
          uint8_t* p = c.begin(kCounterInt, t);
          p = ChunkBuilder::put_u64(p, kCtr);
          p = ChunkBuilder::put_i64(p, int64_t(rng() % 2000) - 1000);
          c.end(p);
        }
        break;
      default:
        if (rng() % 4 == 0) {
          uint8_t* p = c.begin(kCounterFloat, t);
          p = ChunkBuilder::put_u64(p, kFctr);
          p = ChunkBuilder::put_f64(p, double(rng() % 100000) / 7.0);
          c.end(p);
        }
        break;
    }
    if (c.full() || rng() % 150 == 0) flush(c);
  }
  for (ChunkBuilder& c : cb) flush(c);
  return trace.out;
}

std::string save(const std::string& bytes, const std::string& name) {
  const std::string path = temp_path(name);
  ::unlink((path + ".idx").c_str());
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// The held value of a counter at tick t: the last sample at or before it.
bool held(const std::vector<std::pair<uint64_t, double>>& samples, uint64_t t, double& v) {
  auto it = std::upper_bound(samples.begin(), samples.end(), t, [](uint64_t x, auto& s) { return x < s.first; });
  if (it == samples.begin()) return false;
  v = std::prev(it)->second;
  return true;
}

// Hatching in a row (trust, fault 5) against the oracle's cut intervals or
// job segments of the row (`spans`). At rest: a cut one is hatched over its
// columns (in a row of one depth, or a CPU's), and nothing else is. Coarse:
// each cut one ending in the window has a hatch where it ends, within a
// column (the last depth stream's buckets are hatched in their deepest
// item's row: not checked there).
template <class X>
int check_cuts(const render::TimelinePicture& p, uint32_t r, const std::vector<oracle::Interval>& spans,
               bool one_depth, X&& x, bool coarse, const std::string& what) {
  std::vector<bool> hatched(p.columns, false);
  for (const render::CutRect& c : p.cuts)
    if (c.row == r)
      for (int64_t k = std::max<int64_t>(0, int64_t(std::floor(c.x0))); k < std::min<double>(p.columns, c.x1); ++k)
        hatched[size_t(k)] = true;
  // (A cut interval that ends past the right edge is drawn as one open
  // there, as it is in the window: it may be hatched, need not be. Cut
  // intervals too short to draw are hatched over their bucket's keys, up to
  // two columns: a column more of slack.)
  oracle::Columns want(p.columns), ends_inside(p.columns);
  for (const oracle::Interval& iv : spans)
    if (iv.truncated) {
      want.cover(x(iv.start) - 1, x(iv.end) + 1);
      if (x(iv.end) <= p.columns) ends_inside.cover(x(iv.start), x(iv.end));
    }
  int bad = 0;
  auto report = [&](uint32_t c, const std::string& why) {
    if (++bad <= 5) ADD_FAILURE() << what << " column " << c << ": " << why;
  };
  if (!coarse) {
    for (uint32_t c = 0; c < p.columns; ++c) {
      if (hatched[c] && !want.may[c]) report(c, "hatched where nothing was cut");
      if (one_depth && ends_inside.must[c] && !hatched[c]) report(c, "a cut interval covers it, not hatched");
    }
    return bad;
  }
  if (!one_depth) return 0;
  for (const oracle::Interval& iv : spans) {
    if (!iv.truncated) continue;
    const double e = x(iv.end);
    if (e < 0 || e >= p.columns) continue;
    bool near = false;
    for (int64_t k = int64_t(e) - 1; k <= int64_t(e) + 1; ++k) near |= k >= 0 && k < int64_t(p.columns) && hatched[size_t(k)];
    if (!near) {
      std::string rects;
      for (const render::CutRect& c : p.cuts) if (c.row == r) rects += " [" + std::to_string(c.x0) + "," + std::to_string(c.x1) + "]";
      report(uint32_t(e), "a cut interval ends here, no hatch: " + std::to_string(x(iv.start)) + ".." + std::to_string(e) + " depth " + std::to_string(iv.depth) + rects);
    }
  }
  return bad;
}

int check_arrows(const render::TimelinePicture& p, const oracle::Model& m, int64_t t0, int64_t t1,
                 const std::string& what);

// One window of one trace: the picture's rows against the oracle's columns
// (intervals by depth, a CPU's job segments, instants, counters), its
// hatching and its arrows.
// Returns the number of mismatches (each reported). At rest (the budget of
// a headless render) a small trace is drawn from its events, exactly; a
// picture over its decode budget (`coarse`: drawn from the stored levels, a
// bucket's intervals as a smear of their density) must still draw every
// column something covers, and may smear into the columns around.
int check_window(const render::Scene& scene, const oracle::Model& m, int64_t t0, int64_t t1, uint32_t width,
                 bool coarse, const std::string& what) {
  render::FigureParams f;
  f.t0 = t0, f.t1 = t1;
  render::TimelineRequest req =
      render::timeline_request(scene, f, render::TimelineGeometry::of({0, 0, float(width) + 150, 4000}));
  req.decode_per_column = coarse ? 1 : render::kAtRestDecodePerColumn;
  const render::TimelinePicture p = render::build_timeline(scene, req);
  if (!coarse) {
    EXPECT_FALSE(p.over_budget) << what << ": a small trace is drawn from its events at rest";
  }
  const trace::ClockMap& clock = m.catalog.clock;
  auto x = [&](uint64_t ticks) { return p.axis.x(clock.to_ns(ticks)); };
  const double right = double(p.columns) + 2;
  int bad = 0;
  auto report = [&](const std::string& row, uint32_t c, const std::string& why) {
    if (++bad <= 5) ADD_FAILURE() << what << " " << row << " column " << c << ": " << why;
  };
  bad += check_arrows(p, m, t0, t1, what);
  for (const render::Layout::LaneRows& lr : req.layout.lanes) {
    const render::Lane& lane = scene.lanes()[lr.lane];
    const auto found = m.lanes.find(lane.feedlet);
    if (found == m.lanes.end()) continue;
    const oracle::Lane& ol = found->second;
    for (uint32_t r = lr.first; r < lr.end; ++r) {
      const render::Row& row = req.layout.rows[r];
      const std::string name = "lane " + std::to_string(lane.feedlet) + " row " + std::to_string(r - lr.first);
      if (row.kind == render::Row::Interval || row.kind == render::Row::Instant || row.kind == render::Row::Cpu) {
        oracle::Columns want(p.columns);
        std::vector<oracle::Interval> spans;  // the row's intervals, or its CPU's job segments
        bool one_depth = true;
        if (row.kind == render::Row::Interval) {
          const bool last = row.index + 1 == lane.depth_rows;
          one_depth = !last && row.index + 1 < index::kDepthStreams;
          for (const oracle::Interval& iv : ol.intervals)
            if (iv.depth == row.index || (last && iv.depth > row.index)) spans.push_back(iv);
        } else if (row.kind == render::Row::Cpu) {
          const uint32_t cpu = lane.cpu_numbers[row.index];
          if (auto segments = ol.cpus.find(cpu); segments != ol.cpus.end())
            for (const oracle::Segment& s : segments->second) spans.push_back({s.start, s.end, s.task, 0, s.truncated});
        }
        if (row.kind != render::Row::Instant) {
          for (const oracle::Interval& iv : spans) want.cover(x(iv.start), iv.end == UINT64_MAX ? right : x(iv.end));
        } else {
          for (uint64_t t : ol.instants) want.cover(x(t), x(t));
          want.must.assign(want.must.size(), false);  // (an instant's column may be drawn: no must)
        }
        for (uint32_t c = 0; c < p.columns; ++c) {
          const bool drawn = p.rgba[size_t(r) * p.columns + c] != 0;
          if (want.must[c] && !drawn) report(name, c, "an interval (or job segment) covers it, nothing is drawn");
          if (drawn && !want.may[c] && !(coarse && p.over_budget)) report(name, c, "drawn where nothing happened");
        }
        if (row.kind != render::Row::Instant) bad += check_cuts(p, r, spans, one_depth, x, coarse, what + " " + name);
      } else if (row.kind == render::Row::Counter) {
        const std::string& counter = lane.counter_names[row.index];
        const auto samples = ol.counters.find(counter == "ctr" ? kCtr : kFctr);
        if (samples == ol.counters.end()) continue;
        const auto [lo, hi] = p.counter_range[r];
        std::vector<bool> quiet(p.columns, true);  // no sample (nor the trace's end) within a column of it
        std::vector<uint64_t> edges{m.last_ts};
        for (auto& [t, v] : samples->second) edges.push_back(t);
        for (uint64_t t : edges) {  // (a column of slack, and a tick: columns may be finer than ticks)
          const double sx0 = x(t > 0 ? t - 1 : t), sx1 = x(t + 1);
          for (int64_t c = int64_t(std::floor(sx0)) - 1; c <= int64_t(std::floor(sx1)) + 1; ++c)
            if (c >= 0 && c < int64_t(p.columns)) quiet[size_t(c)] = false;
        }
        const double tick_per_col = double(t1 - t0) / p.columns;
        for (uint32_t c = 0; c < p.columns; ++c) {
          if (!quiet[c]) continue;
          const uint64_t mid = clock.to_ticks(t0 + int64_t((c + 0.5) * tick_per_col));
          double v;
          const bool has = held(samples->second, mid, v) && mid <= m.last_ts;
          const float a = p.envelope[(size_t(r) * p.columns + c) * 2], z = p.envelope[(size_t(r) * p.columns + c) * 2 + 1];
          if (std::isnan(a) != !has) {
            report(name + " (" + counter + ")", c, has ? "a value is held, none drawn" : "a value drawn, none held");
            continue;
          }
          if (!has) continue;
          // Exactly the value held; coarse, a bucket's range that holds it.
          const double tol = 1e-3 * (hi - lo) + 1e-9 * std::fabs(v);
          const double dlo = lo + a * (hi - lo), dhi = lo + z * (hi - lo);
          const bool fits = coarse && p.over_budget ? dlo - tol <= v && v <= dhi + tol
                                                    : std::fabs(dlo - v) <= tol && std::fabs(dhi - v) <= tol;
          if (!fits)
            report(name + " (" + counter + ")", c,
                   "held " + std::to_string(v) + ", drawn " + std::to_string(lo + a * (hi - lo)) + ".." +
                       std::to_string(lo + z * (hi - lo)));
        }
      }
    }
  }
  return bad;
}

// The picture's message arrows against the oracle's messages (every lane
// is shown): each with a half in the window or in flight across it, a
// matched one from its send to its receive, an orphan at the half it has,
// and no other; past the picture's limit, none, and said. A message within
// a tick of an edge may be either way.
int check_arrows(const render::TimelinePicture& p, const oracle::Model& m, int64_t t0, int64_t t1,
                 const std::string& what) {
  const trace::ClockMap& clock = m.catalog.clock;
  const uint64_t k0 = clock.to_ticks(t0), k1 = clock.to_ticks(t1);
  auto near = [](uint64_t t, uint64_t k) { return t + 1 >= k && t <= k + 1; };
  auto near_edge = [&](uint64_t t) { return near(t, k0) || near(t, k1); };
  auto in = [&](uint64_t t) { return t >= k0 && t <= k1; };
  using ArrowKey = std::tuple<int, int64_t, int64_t>;  // (orphan, send ns, receive ns)
  std::multiset<ArrowKey> want, maybe, got;
  for (const auto& [id, msg] : m.messages) {
    ArrowKey arrow;
    bool shown = false, edge = false;
    if (msg.sent && msg.received) {
      arrow = {0, clock.to_ns(msg.send), clock.to_ns(msg.recv)};
      shown = in(msg.send) || in(msg.recv) || (msg.send < k0 && msg.recv > k1);
      edge = near_edge(msg.send) || near_edge(msg.recv);
    } else if (msg.sent) {
      arrow = {1, clock.to_ns(msg.send), 0}, shown = in(msg.send), edge = near_edge(msg.send);
    } else {
      arrow = {2, 0, clock.to_ns(msg.recv)}, shown = in(msg.recv), edge = near_edge(msg.recv);
    }
    if (edge) maybe.insert(arrow);
    else if (shown) want.insert(arrow);
  }
  for (const render::Arrow& a : p.arrows)
    if (!maybe.count({a.orphan, a.send, a.recv})) got.insert({a.orphan, a.send, a.recv});
  if (want.size() + maybe.size() > p.request.max_arrows) return 0;  // (the limit's own test: render_test)
  int bad = 0;
  auto text = [](const ArrowKey& a) {
    return std::to_string(std::get<0>(a)) + " " + std::to_string(std::get<1>(a)) + " -> " + std::to_string(std::get<2>(a));
  };
  for (const ArrowKey& a : want)
    if (got.count(a) != want.count(a) && ++bad <= 5) ADD_FAILURE() << what << ": arrows for message " << text(a) << ": " << got.count(a);
  for (const ArrowKey& a : got)
    if (!want.count(a) && ++bad <= 5) ADD_FAILURE() << what << ": an arrow for no message in view: " << text(a);
  if (p.arrows_left_out && ++bad <= 5) ADD_FAILURE() << what << ": " << p.arrows_left_out << " arrows left out";
  return bad;
}

// The statistics and the index's counts against the oracle's.
void check_numbers(const render::Scene& scene, const oracle::Model& m, const std::string& what) {
  const index::TraceIndex& ix = *scene.sources()[0].index;
  std::map<std::string, std::tuple<uint64_t, uint64_t, uint64_t>> want;  // name -> (count, longest, truncated)
  for (auto& [f, lane] : m.lanes)
    for (const oracle::Interval& iv : lane.intervals) {
      if (iv.end == UINT64_MAX) continue;  // still open: no duration yet
      auto& [n, longest, cut] = want[kNameText[iv.name - 1]];
      ++n, longest = std::max(longest, iv.end - iv.start), cut += iv.truncated;
    }
  std::string error;
  std::map<std::string, std::tuple<uint64_t, uint64_t, uint64_t>> got;
  for (const analysis::DurationStats& s : analysis::duration_stats(ix, analysis::Expr{}, false, error))
    got[s.name] = {s.h.count(), s.h.max(), s.truncated};
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_EQ(got, want) << what << ": stats per name (count, longest, truncated)";
  for (const index::FeedletSummary& f : ix.feedlets()) {
    const auto lane = m.lanes.find(f.id);
    if (lane == m.lanes.end()) continue;
    EXPECT_EQ(f.counts.unmatched_ends, lane->second.unmatched_ends) << what << ": feedlet " << f.id;
    EXPECT_EQ(f.counts.truncated, lane->second.truncated) << what << ": feedlet " << f.id;
    EXPECT_EQ(f.counts.job_moved, lane->second.job_moved) << what << ": feedlet " << f.id;
    EXPECT_EQ(f.counts.cpu_taken, lane->second.cpu_taken) << what << ": feedlet " << f.id;
    EXPECT_EQ(f.counts.job_end_elsewhere, lane->second.job_end_elsewhere) << what << ": feedlet " << f.id;
    EXPECT_EQ(f.counts.job_end_unmatched, lane->second.job_end_unmatched) << what << ": feedlet " << f.id;
  }
}

void check_trace(uint64_t seed, const Shape& shape) {
  const std::string what = "seed " + std::to_string(seed);
  const std::string bytes = random_trace(seed, shape);
  const oracle::Model m = oracle::build(read_bytes(bytes));
  const std::string path = save(bytes, "oracle_" + std::to_string(seed));
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(path, error)) << what << ": " << error;
  check_numbers(scene, m, what);
  std::mt19937_64 rng(seed * 31 + 7);
  const int64_t first = m.catalog.clock.to_ns(m.first_ts), last = m.catalog.clock.to_ns(m.last_ts);
  const int64_t span = std::max<int64_t>(last - first, 1);
  int bad = 0;
  for (int w = 0; w < 12 && bad < 20; ++w) {
    // The whole trace, zooms anywhere (some past its ends), and a window
    // between two samples of a counter.
    int64_t t0 = first, t1 = last + 1;
    if (w > 0) {
      const int64_t len = std::max<int64_t>(50, span >> (rng() % 14));
      t0 = first - span / 20 + int64_t(rng() % uint64_t(span + span / 10));
      t1 = t0 + len;
    }
    if (w == 11)
      for (auto& [f, lane] : m.lanes)
        for (auto& [name, samples] : lane.counters)
          for (size_t k = 1; k < samples.size(); ++k)
            if (samples[k].first - samples[k - 1].first > 400) {
              t0 = m.catalog.clock.to_ns(samples[k - 1].first + 100), t1 = m.catalog.clock.to_ns(samples[k].first - 100);
              break;
            }
    const uint32_t width = 50 + uint32_t(rng() % 700);
    const std::string window = what + " window " + std::to_string(t0) + ".." + std::to_string(t1);
    bad += check_window(scene, m, t0, t1, width, false, window);
    bad += check_window(scene, m, t0, t1, width, true, window + " (coarse)");
  }
  EXPECT_EQ(bad, 0) << what;
  ::unlink(path.c_str());
  ::unlink((path + ".idx").c_str());
}

TEST(Oracle, PicturesAndNumbersEqualTheEventsOnRandomTraces) {
  const uint64_t seed = test_seed(20261129);
  const int traces = soaking() ? 200 : 40;
  for (int i = 0; i < traces && !::testing::Test::HasFailure(); ++i) {
    Shape shape;
    shape.feedlets = 1 + uint32_t(i % 4);
    shape.events = 300 + uint32_t((seed + uint64_t(i) * 7919) % 3000);
    shape.base = i % 5 == 4 ? (uint64_t(1) << 62) : 1'000'000;  // near the top of the clock's range
    check_trace(seed + uint64_t(i), shape);
  }
}

}  // namespace
}  // namespace tinescope::test
