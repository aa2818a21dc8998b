// Several traces on one clock (analysis/clock_align.hpp): traces whose
// clocks differ by a known offset and drift, written with sync messages at
// known true times, must come back onto the first's clock within a few
// microseconds; bad sync data is named and counted; the CLI's `align`,
// `render --clock`, and the two-node demo.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "index_helpers.hpp"
#include "tinescope/analysis/clock_align.hpp"
#include "tinescope/analysis/message_across.hpp"
#include "tinescope/render/figure_params.hpp"
#include "tinescope/render/lane_order.hpp"
#include "tinescope/render/picture.hpp"
#include "tinescope/render/scene.hpp"

namespace tinescope {
namespace {

using test::bin;
using test::run;

// A's clock is the truth; B's reads skew_offset + skew_rate × the truth.
struct TwoNodes {
  double skew_offset = 5e9, skew_rate = 1.001;
  int64_t b_of(int64_t truth) const { return int64_t(std::llround(skew_offset + skew_rate * double(truth))); }
  double truth_of_b(double b) const { return (b - skew_offset) / skew_rate; }
};

struct Sync {
  uint64_t id;
  int64_t send_ns, recv_ns;  // each on its own trace's clock; < 0: that end is missing
  bool a_to_b;
};

// A trace of one thread, "sync", holding sync events and a "work" interval
// at each end of its life (so that its events span first..last).
std::string sync_trace(const std::vector<Sync>& sync, bool is_a, int64_t first, int64_t last) {
  test::TraceBytes t = test::named_trace({"sync", "work"}, {1});
  format::ChunkBuilder cb;
  cb.feedlet = 1;
  struct E {
    int64_t ns;
    uint16_t type;
    uint64_t id;
  };
  std::vector<E> es;
  for (const Sync& s : sync) {
    const bool sent_here = s.a_to_b == is_a;
    if ((sent_here ? s.send_ns : s.recv_ns) < 0) continue;  // an end that was lost
    es.push_back({sent_here ? s.send_ns : s.recv_ns, uint16_t(sent_here ? format::kClockSyncSend : format::kClockSyncRecv), s.id});
  }
  std::sort(es.begin(), es.end(), [](const E& a, const E& b) { return a.ns < b.ns; });
  test::put_named(cb, format::kIntervalBegin, uint64_t(first), 2);
  test::put_named(cb, format::kIntervalEnd, uint64_t(first + 1000), 2);
  for (const E& e : es) {
    uint8_t* p = cb.begin(e.type, uint64_t(e.ns));
    p = format::ChunkBuilder::put_u64(p, e.id);
    p = format::ChunkBuilder::put_u64(p, is_a ? 2 : 1);
    cb.end(p);
    if (cb.full()) t.flush(cb);
  }
  test::put_named(cb, format::kIntervalBegin, uint64_t(last - 1000), 2);
  test::put_named(cb, format::kIntervalEnd, uint64_t(last), 2);
  t.flush(cb);
  return t.out;
}

// `n` sync messages each way over 10 s of true time, from 1000 s on, each
// taking 10 to 30 us (the same spread both ways).
std::vector<Sync> sync_messages(const TwoNodes& nodes, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> delay(10'000, 30'000);
  std::vector<Sync> out;
  for (int k = 0; k < 2 * n; ++k) {
    const int64_t t = 1'000'000'000'000 + int64_t(k) * 10'000'000'000 / (2 * n);
    const int64_t arrive = t + delay(rng);
    const bool a_to_b = k % 2 == 0;
    out.push_back({uint64_t(k + 1), a_to_b ? t : nodes.b_of(t), a_to_b ? nodes.b_of(arrive) : arrive, a_to_b});
  }
  return out;
}

struct Pair {
  test::IndexedTrace a, b;
  Pair(const std::string& name, const TwoNodes& nodes, const std::vector<Sync>& sync)
      : a(name + "-a", sync_trace(sync, true, 999'000'000'000, 1'011'000'000'000)),
        b(name + "-b", sync_trace(sync, false, nodes.b_of(999'000'000'000), nodes.b_of(1'011'000'000'000))) {}
  analysis::ClockAlignment align(std::vector<analysis::ClockChoice> choices = {}) {
    analysis::ClockAlignment out;
    std::string why;
    EXPECT_TRUE(analysis::align_traces({a.ix.get(), b.ix.get()}, choices, out, why)) << why;
    return out;
  }
};

// The worst error of B's aligned clock against the truth over B's life.
double worst_error_ns(const TwoNodes& nodes, const index::TraceIndex& b) {
  double worst = 0;
  const uint64_t first = b.first_ts(), last = b.last_ts();
  for (int k = 0; k <= 100; ++k) {
    const uint64_t ticks = first + (last - first) / 100 * uint64_t(k);  // B's ticks are its own ns
    worst = std::max(worst, std::fabs(double(b.to_ns(ticks)) - nodes.truth_of_b(double(ticks))));
  }
  return worst;
}

TEST(ClockAlign, AClockFiveSecondsAheadAndOnePerMilleFastAlignsWithinFiveMicroseconds) {
  const TwoNodes nodes;
  for (uint64_t seed : {1u, 2u, 3u}) {
    Pair p("fast" + std::to_string(seed), nodes, sync_messages(nodes, 500, test::test_seed(seed)));
    const analysis::ClockAlignment al = p.align();
    ASSERT_EQ(al.clocks.size(), 2u);
    EXPECT_EQ(al.clocks[1].how, analysis::TraceClock::Fitted);
    EXPECT_EQ(al.clocks[1].there, 500u);
    EXPECT_EQ(al.clocks[1].back, 500u);
    EXPECT_EQ(al.early, 0u);
    EXPECT_TRUE(al.warnings.empty()) << al.warnings[0];
    EXPECT_NEAR(al.clocks[1].line.rate, 1 / nodes.skew_rate, 2e-7);  // 0.2 ppm: 2 us over the 12 s
    EXPECT_LT(worst_error_ns(nodes, *p.b.ix), 5'000) << "seed " << seed;
    // The first trace stays on its own clock.
    EXPECT_EQ(p.a.ix->to_ns(p.a.ix->first_ts()), 999'000'000'000);
    ASSERT_FALSE(al.report.empty());
    EXPECT_NE(al.report[0].find("ppm fast and is 5.999s ahead"), std::string::npos) << al.report[0];
  }
}

TEST(ClockAlign, AReversedSyncPairIsACausalityWarning) {
  const TwoNodes nodes;
  std::vector<Sync> sync = sync_messages(nodes, 200, 7);
  // One A -> B message whose receive is recorded 1 ms before its send.
  sync[100].recv_ns = nodes.b_of(nodes.truth_of_b(double(nodes.b_of(sync[100].send_ns))) - 1'000'000);
  Pair p("reversed", nodes, sync);
  const analysis::ClockAlignment al = p.align();
  EXPECT_EQ(al.early, 1u);
  ASSERT_EQ(al.warnings.size(), 1u);
  EXPECT_NE(al.warnings[0].find("1 sync messages arrive before they were sent"), std::string::npos) << al.warnings[0];
  // And `tinescope align` says so and exits 1.
  std::string out;
  EXPECT_EQ(run(bin("app/tinescope") + " align " + p.a.path + " " + p.b.path + " 2>&1", &out), 1);
  EXPECT_NE(out.find("arrive before they were sent"), std::string::npos) << out;
}

TEST(ClockAlign, OneWaySyncFitsTheOffsetOnlyAndSaysSo) {
  TwoNodes nodes;
  nodes.skew_rate = 1;  // (one way, no drift can be fitted: test the offset alone)
  std::vector<Sync> sync;
  for (const Sync& s : sync_messages(nodes, 100, 9))
    if (s.a_to_b) sync.push_back(s);
  Pair p("oneway", nodes, sync);
  const analysis::ClockAlignment al = p.align();
  EXPECT_EQ(al.clocks[1].how, analysis::TraceClock::OffsetOnly);
  EXPECT_EQ(al.clocks[1].line.rate, 1);
  ASSERT_EQ(al.warnings.size(), 1u);
  EXPECT_NE(al.warnings[0].find("one way only, so the drift cannot be fitted"), std::string::npos);
  // The fastest message is taken as instant: off by its delay (10 to 30 us), never causality-violating.
  EXPECT_LE(worst_error_ns(nodes, *p.b.ix), 30'000);
  EXPECT_EQ(al.early, 0u);
}

TEST(ClockAlign, WithoutSyncATraceKeepsItsClockAndAGivenOffsetMovesIt) {
  const TwoNodes nodes;
  Pair p("nosync", nodes, {});
  analysis::ClockAlignment al = p.align();
  EXPECT_EQ(al.clocks[1].how, analysis::TraceClock::Own);
  ASSERT_EQ(al.warnings.size(), 1u);
  EXPECT_NE(al.warnings[0].find("has no clock sync messages"), std::string::npos);
  const int64_t own = p.b.ix->to_ns(p.b.ix->first_ts());
  al = p.align({{}, {analysis::ClockChoice::Shift, -5'000'000}});
  EXPECT_EQ(al.clocks[1].how, analysis::TraceClock::Given);
  EXPECT_EQ(p.b.ix->to_ns(p.b.ix->first_ts()), own - 5'000'000);
  // none: left alone even with sync messages.
  Pair q("none", nodes, sync_messages(nodes, 20, 4));
  al = q.align({{}, {analysis::ClockChoice::None, 0}});
  EXPECT_EQ(al.clocks[1].how, analysis::TraceClock::Own);
  EXPECT_EQ(q.b.ix->to_ns(q.b.ix->first_ts()), nodes.b_of(999'000'000'000));
}

TEST(ClockAlign, ReusedAndUnmatchedSyncIdsAreCountedAndLeftOut) {
  const TwoNodes nodes;
  std::vector<Sync> sync = sync_messages(nodes, 100, 11);
  sync[4].id = sync[6].id;  // A sends two messages to B under one id: both left out, both ends
  sync.push_back({9999, 1'005'000'000'000, -1, true});  // its receive was lost
  Pair p("reused", nodes, sync);
  const analysis::ClockAlignment al = p.align();
  EXPECT_EQ(al.reused, 4u);
  EXPECT_EQ(al.unmatched, 1u);
  EXPECT_EQ(al.clocks[1].there + al.clocks[1].back, 198u);
  EXPECT_LT(worst_error_ns(nodes, *p.b.ix), 5'000);
}

// Each node numbering its own sync messages from 1: one id is a message
// each way, and each send pairs with the receive in the other trace.
TEST(ClockAlign, NodesThatCountTheirOwnSyncIdsAlign) {
  const TwoNodes nodes;
  std::vector<Sync> sync = sync_messages(nodes, 300, 21);
  uint64_t there = 0, back = 0;
  for (Sync& s : sync) s.id = s.a_to_b ? ++there : ++back;
  Pair p("ownids", nodes, sync);
  const analysis::ClockAlignment al = p.align();
  EXPECT_EQ(al.reused, 0u);
  EXPECT_EQ(al.clocks[1].there, 300u);
  EXPECT_EQ(al.clocks[1].back, 300u);
  EXPECT_LT(worst_error_ns(nodes, *p.b.ix), 5'000);
}

// A chain: C syncs with B only, B with A; C reaches A's clock through B's
// (ClockLine::then and inverse, a breadth-first tree of the pairs).
TEST(ClockAlign, AClockSyncedOnlyThroughAnotherIsChainedToTheFirst) {
  const TwoNodes ab;            // B = 5 s + 1.001 A
  TwoNodes bc;                  // C from B's clock: C = 2 s + 0.9995 B (as a pair with B first)
  bc.skew_offset = 2e9, bc.skew_rate = 0.9995;
  std::vector<Sync> ab_sync = sync_messages(ab, 300, 31);
  // B -> C sync at true times: B's clock is b_of(truth), C's is bc.b_of(B's).
  std::vector<Sync> bc_sync;
  for (const Sync& s : sync_messages(TwoNodes{0, 1}, 300, 32)) {  // (times on the true clock)
    const int64_t send = s.send_ns, recv = s.recv_ns;
    const int64_t at_b_send = ab.b_of(send), at_b_recv = ab.b_of(recv);
    bc_sync.push_back({s.id + 100'000, s.a_to_b ? at_b_send : bc.b_of(at_b_send), s.a_to_b ? bc.b_of(at_b_recv) : at_b_recv, s.a_to_b});
  }
  // B's trace holds both: for the B-C pair it is the first (the sender of a_to_b messages).
  std::vector<Sync> b_events = ab_sync;
  for (Sync s : bc_sync) s.a_to_b = !s.a_to_b, b_events.push_back(s);
  const int64_t first = 999'000'000'000, last = 1'011'000'000'000;
  test::IndexedTrace a("chain-a", sync_trace(ab_sync, true, first, last));
  test::IndexedTrace b("chain-b", sync_trace(b_events, false, ab.b_of(first), ab.b_of(last)));
  test::IndexedTrace c("chain-c", sync_trace(bc_sync, false, bc.b_of(ab.b_of(first)), bc.b_of(ab.b_of(last))));
  analysis::ClockAlignment al;
  std::string why;
  ASSERT_TRUE(analysis::align_traces({a.ix.get(), b.ix.get(), c.ix.get()}, {}, al, why)) << why;
  EXPECT_EQ(al.clocks[2].how, analysis::TraceClock::Fitted);
  EXPECT_EQ(al.clocks[2].reference, 0u);
  EXPECT_EQ(al.clocks[2].peer, 1u);
  EXPECT_TRUE(al.warnings.empty()) << al.warnings[0];
  // C's every time back on A's clock, within the two fits' errors.
  double worst = 0;
  for (int k = 0; k <= 100; ++k) {
    const int64_t truth = first + (last - first) / 100 * k;
    const uint64_t c_ticks = uint64_t(bc.b_of(ab.b_of(truth)));
    worst = std::max(worst, std::fabs(double(c.ix->to_ns(c_ticks)) - double(truth)));
  }
  EXPECT_LT(worst, 10'000);
}

TEST(ClockAlign, ParsesClockChoices) {
  analysis::ClockChoice c;
  std::string error;
  ASSERT_TRUE(analysis::parse_clock_choice("+5ms", c, error));
  EXPECT_EQ(c.kind, analysis::ClockChoice::Shift);
  EXPECT_EQ(c.shift_ns, 5'000'000);
  ASSERT_TRUE(analysis::parse_clock_choice("-1.5s", c, error));
  EXPECT_EQ(c.shift_ns, -1'500'000'000);
  ASSERT_TRUE(analysis::parse_clock_choice("none", c, error));
  EXPECT_EQ(c.kind, analysis::ClockChoice::None);
  EXPECT_FALSE(analysis::parse_clock_choice("soon", c, error));
  EXPECT_NE(error.find("'soon'"), std::string::npos);
}

// The sync messages themselves are drawn, lane to lane on the one clock:
// in a window, exactly those in flight over it (counted here from their
// true times); past a quarter of the arrow budget none, and counted.
TEST(ClockAlign, TheSyncMessagesAreDrawnBetweenTheTracesLanes) {
  const TwoNodes nodes;
  const std::vector<Sync> sync = sync_messages(nodes, 150, 29);
  Pair p("drawn", nodes, sync);
  const analysis::ClockAlignment al = p.align();
  ASSERT_EQ(al.messages.size(), sync.size());
  const analysis::SyncArrows arrows = analysis::sync_arrows({p.a.ix.get(), p.b.ix.get()}, al);
  ASSERT_EQ(arrows.arrows.size(), sync.size());
  EXPECT_GE(arrows.longest_flight, 10'000);
  EXPECT_LE(arrows.longest_flight, 40'000) << "10 to 30 us, and the fit's few us";
  render::Scene scene;
  scene.add_index(std::shared_ptr<index::TraceIndex>(std::move(p.a.ix)));
  scene.add_index(std::shared_ptr<index::TraceIndex>(std::move(p.b.ix)));
  scene.sync = std::make_shared<analysis::SyncArrows>(arrows);
  // Node A's lane is drawn above node B's.
  ASSERT_EQ(scene.lanes().size(), 2u);
  // True times of each message's ends.
  std::vector<std::pair<double, double>> truth;
  for (const Sync& m : sync)
    truth.push_back(m.a_to_b ? std::pair<double, double>(double(m.send_ns), nodes.truth_of_b(double(m.recv_ns)))
                             : std::pair<double, double>(nodes.truth_of_b(double(m.send_ns)), double(m.recv_ns)));
  std::mt19937_64 rng(31);
  int rounds = 0, drawn = 0;
  while (rounds < 40) {
    const int64_t t0 = 1'000'000'000'000 + int64_t(rng() % 9'000'000'000), t1 = t0 + 1'000'000 + int64_t(rng() % 400'000'000);
    bool near_edge = false;  // (an end within 100 us of an edge: the fit's microseconds could move it across)
    size_t want = 0;
    for (const auto& [s, r] : truth) {
      for (double e : {s, r}) near_edge |= std::fabs(e - double(t0)) < 1e5 || std::fabs(e - double(t1)) < 1e5;
      want += s <= double(t1) && r >= double(t0);
    }
    if (near_edge) continue;
    ++rounds;
    render::FigureParams f;
    f.t0 = t0, f.t1 = t1;
    const render::TimelinePicture pic =
        render::build_timeline(scene, render::timeline_request(scene, f, render::TimelineGeometry::of(render::Rect{0, 0, 1150, 400})));
    size_t got = 0;
    for (const render::Arrow& a : pic.arrows) {
      if (a.orphan != 3) continue;
      ++got;
      EXPECT_NE(a.y0, a.y1) << "from one trace's lane to the other's";
      EXPECT_LE(a.send, a.recv);
      // Its ends at their true times (within the fit's 5 us), from its sender's lane.
      double best = 1e18;
      bool a_to_b = false;
      for (size_t k = 0; k < truth.size(); ++k) {
        const double d = std::fabs(double(a.send) - truth[k].first) + std::fabs(double(a.recv) - truth[k].second);
        if (d < best) best = d, a_to_b = sync[k].a_to_b;
      }
      EXPECT_LT(best, 10'000) << "an arrow at " << a.send << " matches no sync message";
      EXPECT_EQ(a.y0 < a.y1, a_to_b) << "from the sending node's lane";
    }
    if (want <= 200) {
      EXPECT_EQ(got, want) << "window " << t0 << ".." << t1;
      EXPECT_EQ(pic.sync_left_out, 0u);
    } else {
      EXPECT_EQ(got, 0u);
      EXPECT_EQ(pic.sync_left_out, want) << "past a quarter of the budget: counted";
    }
    drawn += int(got);
  }
  EXPECT_GT(drawn, 100);
  // The whole run: 300 sync messages, past a quarter of the 800-arrow budget.
  render::FigureParams all;
  all.t0 = scene.first_ns(), all.t1 = scene.last_ns() + 1;
  const render::TimelinePicture whole =
      render::build_timeline(scene, render::timeline_request(scene, all, render::TimelineGeometry::of(render::Rect{0, 0, 1150, 400})));
  for (const render::Arrow& a : whole.arrows) EXPECT_NE(a.orphan, 3);
  EXPECT_EQ(whole.sync_left_out, 201u) << "more than the 200 a quarter of the budget allows: none drawn, and said";
}

TEST(ClockAlign, CommandLine) {
  const TwoNodes nodes;
  Pair p("cli", nodes, sync_messages(nodes, 100, 13));
  const std::string tool = bin("app/tinescope");
  std::string out;
  ASSERT_EQ(run(tool + " align " + p.a.path + " " + p.b.path + " --json", &out), 0) << out;
  const nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j["traces"][1]["how"], "fitted");
  EXPECT_NEAR(j["traces"][1]["rate"].get<double>(), 1 / nodes.skew_rate, 1e-6);
  EXPECT_EQ(j["sync_before_sent"], 0);
  // render prints the fit and draws both traces on one clock.
  const std::string png = test::scratch_dir() + "/align.png";
  ASSERT_EQ(run(tool + " render " + p.a.path + " " + p.b.path + " -o " + png + " 2>&1", &out), 0) << out;
  EXPECT_NE(out.find("cli-b.tine aligned to cli-a.tine"), std::string::npos) << out;
  // Bad --clock values are named.
  EXPECT_EQ(run(tool + " render " + p.a.path + " " + p.b.path + " --clock nosuch.tine=+1ms -o " + png + " 2>&1", &out), 1);
  EXPECT_NE(out.find("'nosuch.tine' is none of the traces given"), std::string::npos) << out;
  EXPECT_NE(run(tool + " render " + p.a.path + " " + p.b.path + " --clock cli-a.tine=+1ms -o " + png + " 2>&1", &out), 0);
  EXPECT_NE(out.find("is the first trace"), std::string::npos) << out;
}

// The two-node demo: B's clock 5 s ahead and 1000 ppm fast, synced over a
// real socket between two processes. Real delays vary (this machine may be
// busy): held to 200 us, where the synthetic traces above are held to 5.
TEST(ClockAlign, TheTwoNodeDemoMerges) {
  const std::string stem = test::scratch_dir() + "/nodes";
  for (const char* s : {".a.tine", ".b.tine"}) test::remove_trace(stem + s);
  std::string out;
  ASSERT_EQ(run(bin("recorder/tinescope-demo") + " --node --duration 1.5 -o " + stem + ".tine", &out), 0) << out;
  std::string why;
  auto a = index::TraceIndex::open(stem + ".a.tine", why);
  ASSERT_TRUE(a) << why;
  auto b = index::TraceIndex::open(stem + ".b.tine", why);
  ASSERT_TRUE(b) << why;
  const int64_t b_own_first = b->to_ns(b->first_ts());
  analysis::ClockAlignment al;
  ASSERT_TRUE(analysis::align_traces({a.get(), b.get()}, {}, al, why)) << why;
  EXPECT_EQ(al.clocks[1].how, analysis::TraceClock::Fitted);
  EXPECT_GE(al.clocks[1].there, 50u);
  EXPECT_NEAR(al.clocks[1].line.rate, 1 / 1.001, 20e-6);
  // The skew B recorded with: its true first event is (own - 5 s) / 1.001.
  EXPECT_EQ(b->catalog().metadata.at("demo.clock_skew"), "5000000000,1.001");
  const double truth = (double(b_own_first) - 5e9) / 1.001;
  EXPECT_NEAR(double(b->to_ns(b->first_ts())), truth, 200'000);
  // Every request B received and every reply A received is a message
  // between the traces, sent by the other (the nodes' own counts).
  const analysis::CrossMessages across = analysis::match_across({a.get(), b.get()});
  const uint64_t requests = std::stoull(b->catalog().metadata.at("demo.requests_received"));
  const uint64_t replies = std::stoull(a->catalog().metadata.at("demo.replies_received"));
  EXPECT_GT(requests, 100u);
  EXPECT_EQ(across.messages.size(), requests + replies);
  EXPECT_EQ(across.ambiguous, 0u);
  uint64_t to_b = 0;
  for (const analysis::CrossMessage& m : across.messages) to_b += m.send_trace == 0 && m.recv_trace == 1;
  EXPECT_EQ(to_b, requests);
  // Traces on clocks of their own share no messages: where would their arrows go?
  EXPECT_TRUE(analysis::match_across({a.get(), b.get()}, {0, 1}).messages.empty());
  // In one scene the nodes' lanes are grouped by node, and overlap in time.
  render::Scene scene;
  scene.add_index(std::move(a));
  scene.add_index(std::move(b));
  std::set<std::string> groups;
  for (const render::Lane& l : scene.lanes()) groups.insert(l.group);
  EXPECT_TRUE(groups.count("node A") && groups.count("node B")) << groups.size() << " groups";
  EXPECT_LT(scene.last_ns() - scene.first_ns(), 3'000'000'000);
  // Its pictures draw those messages as arrows from one node's lane to the
  // other's, each leaving before it arrives, and no half as an orphan.
  scene.across = std::make_shared<analysis::CrossMessages>(across);
  render::FigureParams f;
  uint64_t between = 0;
  for (int64_t at = scene.first_ns() + 200'000'000; at < scene.first_ns() + 1'200'000'000; at += 100'000'000) {
    f.t0 = at, f.t1 = at + 10'000'000;
    const render::TimelinePicture p =
        render::build_timeline(scene, render::timeline_request(scene, f, render::TimelineGeometry::of(render::Rect{0, 0, 1150, 400})));
    std::set<uint64_t> ids;
    for (const render::Arrow& arrow : p.arrows) {
      EXPECT_TRUE(ids.insert(arrow.flow.id).second) << "message " << arrow.flow.id << " drawn twice";
      EXPECT_EQ(arrow.orphan, 0) << "message " << arrow.flow.id << " at " << arrow.send;
      // (Real delays, and a fit held to 200 us on a busy machine: a message
      // faster than the fit's error may seem to arrive early, and `align`
      // says how many do.)
      EXPECT_LE(arrow.send, arrow.recv + 200'000) << "message " << arrow.flow.id;
      between += arrow.flow.channel <= 2;
    }
  }
  EXPECT_GT(between, 20u);
  // So does the sequence diagram of both nodes' lanes, and of their queues.
  for (const render::Lifelines lifelines : {render::Lifelines::Threads, render::Lifelines::Queues}) {
    f.type = render::FigureParams::Sequence;
    f.lanes = render::message_lanes(scene, {});
    f.lifelines = lifelines;
    f.queue_map = std::make_shared<render::QueueMap>(render::queue_map(scene));
    f.t0 = scene.first_ns() + 300'000'000, f.t1 = f.t0 + 20'000'000;
    const render::SequencePicture q =
        render::build_sequence(scene, render::sequence_request(scene, f, render::SequenceGeometry::of({0, 0, 1100, 600})));
    EXPECT_GT(q.arrows.size(), 4u);
    for (const render::Arrow& arrow : q.arrows) {
      EXPECT_EQ(arrow.orphan, 0) << "message " << arrow.flow.id;
      EXPECT_LE(arrow.send, arrow.recv + 200'000) << "message " << arrow.flow.id << ": it leaves before it arrives";
      if (arrow.send <= arrow.recv) { EXPECT_LE(arrow.y0, arrow.y1) << "message " << arrow.flow.id; }
      EXPECT_NE(arrow.x0, arrow.x1) << "from one node to the other";
    }
  }
  // Zoomed out past the arrow budget, the messages between the nodes are
  // bundles, every one of them, in both figures.
  {
    render::FigureParams all;
    all.t0 = scene.first_ns(), all.t1 = scene.last_ns() + 1;
    render::TimelineRequest tr = render::timeline_request(scene, all, render::TimelineGeometry::of(render::Rect{0, 0, 1150, 400}));
    tr.max_arrows = 50, tr.decode_per_column = render::kAtRestDecodePerColumn;
    const render::TimelinePicture tp = render::build_timeline(scene, tr);
    EXPECT_TRUE(tp.arrows.empty() || tp.arrows.size() < across.messages.size());
    uint64_t drawn_as_arrows = 0;
    for (const render::Arrow& arrow : tp.arrows) drawn_as_arrows += arrow.orphan == 0;
    EXPECT_EQ(tp.bundled + drawn_as_arrows, across.messages.size()) << "each message between the nodes, once";
    all.type = render::FigureParams::Sequence;
    all.lanes = render::message_lanes(scene, {});
    render::SequenceRequest sr = render::sequence_request(scene, all, render::SequenceGeometry::of({0, 0, 1100, 600}));
    sr.max_arrows = 50;
    const render::SequencePicture sp = render::build_sequence(scene, sr);
    EXPECT_TRUE(sp.arrows.empty());
    EXPECT_EQ(sp.bundled, across.messages.size());
    EXPECT_FALSE(sp.bundles.empty());
  }
  // Node B folded into one lifeline: node A's lanes, then node B, every request on its way there.
  f.lifelines = render::Lifelines::Threads;
  f.collapsed = {"node B"};
  const render::SequencePicture folded =
      render::build_sequence(scene, render::sequence_request(scene, f, render::SequenceGeometry::of({0, 0, 1100, 600})));
  ASSERT_FALSE(folded.lifelines.empty());
  EXPECT_EQ(folded.lifelines.back().label, "node B");
  EXPECT_EQ(folded.lifelines.back().lane, -1);
  for (size_t i = 0; i + 1 < folded.lifelines.size(); ++i) EXPECT_EQ(folded.lifelines[i].group, "node A");
  size_t into_b = 0;
  for (const render::Arrow& arrow : folded.arrows) into_b += arrow.x1 == folded.lifelines.back().x;
  EXPECT_GT(into_b, 2u);
  // stats and find given both: the messages between them are matched, not
  // orphans, and counted (the nodes' own counts).
  const std::string both = stem + ".a.tine " + stem + ".b.tine";
  ASSERT_EQ(run(bin("app/tinescope") + " stats " + both + " --json 2>/dev/null", &out), 0) << out;
  nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j["between_traces"]["messages"], requests + replies);
  EXPECT_GT(j["between_traces"]["latency_ns"]["p50"].get<int64_t>(), 0);
  const nlohmann::json& ma = j["traces"][0]["messages"];
  const nlohmann::json& mb = j["traces"][1]["messages"];
  EXPECT_EQ(ma["to_other_traces"], requests);
  EXPECT_EQ(ma["from_other_traces"], replies);
  EXPECT_EQ(mb["to_other_traces"], replies);
  EXPECT_EQ(mb["from_other_traces"], requests);
  for (const nlohmann::json* m : {&ma, &mb}) {
    EXPECT_EQ((*m)["never_received"], 0) << m->dump();
    EXPECT_EQ((*m)["never_sent"], 0) << m->dump();
    for (const auto& row : (*m)["by_channel"]) EXPECT_EQ(row["never_received"].get<uint64_t>() + row["never_sent"].get<uint64_t>(), 0u);
  }
  ASSERT_EQ(run(bin("app/tinescope") + " find " + both + " --orphans 2>/dev/null", &out), 0) << out;
  j = nlohmann::json::parse(out);
  EXPECT_EQ(j["between_traces"]["messages"], requests + replies);
  for (int t = 0; t < 2; ++t) {
    EXPECT_EQ(j["traces"][t]["orphans"]["count"], 0);
    EXPECT_TRUE(j["traces"][t]["orphans"]["list"].empty());
  }
  EXPECT_EQ(j["traces"][0]["orphans"]["between_traces"]["sent_to_others"], requests);
  // Over a stretch, only that stretch's halves are taken off.
  ASSERT_EQ(run(bin("app/tinescope") + " find " + both + " --orphans --from 0.5s --to 0.7s 2>/dev/null", &out), 0) << out;
  j = nlohmann::json::parse(out);
  for (int t = 0; t < 2; ++t) {
    const nlohmann::json& o = j["traces"][t]["orphans"];
    EXPECT_EQ(o["count"], 0) << o.dump();
    EXPECT_EQ(o["never_received"], 0) << o.dump();
    EXPECT_GT(o["between_traces"]["sent_to_others"].get<uint64_t>(), 10u) << o.dump();
    EXPECT_LT(o["between_traces"]["sent_to_others"].get<uint64_t>(), requests) << o.dump();
  }
  // A message is in one trace or the other: asked for, it is found where it is.
  const uint64_t some_request = across.messages[across.messages.size() / 2].send.id;
  ASSERT_EQ(run(bin("app/tinescope") + " find " + both + " --message " + std::to_string(some_request) + " 2>/dev/null", &out), 0)
      << out;
  j = nlohmann::json::parse(out);
  size_t found = 0;
  for (const auto& tr : j["traces"]) found += tr.contains("messages");
  EXPECT_GE(found, 1u) << out;
  EXPECT_NE(run(bin("app/tinescope") + " find " + both + " --message 999999999 2>&1", &out), 0);
  EXPECT_NE(out.find("no message has id 999999999 in any of the traces"), std::string::npos) << out;
  // Alone, each trace's halves are orphans.
  ASSERT_EQ(run(bin("app/tinescope") + " find " + stem + ".a.tine --orphans --limit 5", &out), 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out)["orphans"]["count"], requests + replies);
  for (const char* s : {".a.tine", ".b.tine"}) test::remove_trace(stem + s);
}

}  // namespace
}  // namespace tinescope
