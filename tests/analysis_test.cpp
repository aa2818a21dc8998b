// Streams and analysis: the syntax, every operator's exact values on a trace
// of known content, derived pyramids, needles against a full scan, and on
// the demo workload the duration filter, statistics and compare.
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <set>
#include <random>

#include "../bench/synthetic_trace.hpp"
#include "tinescope/analysis/derived_stream.hpp"
#include "tinescope/analysis/duration_stats.hpp"
#include "tinescope/analysis/locks.hpp"
#include "tinescope/analysis/needles.hpp"
#include "tinescope/analysis/period.hpp"
#include "tinescope/index/item_pyramid.hpp"
#include "tinescope/render/headless.hpp"
#include "tinescope/render/scene.hpp"
#include "index_helpers.hpp"

namespace tinescope::test {
namespace {

using namespace format;
using namespace analysis;
using index::Node;
using index::TraceIndex;

// ---------------------------------------------------------------- syntax

TEST(StreamSyntax, ParsesPrintsAndParsesBack) {
  const char* texts[] = {
      "intervals()",
      "intervals(name=\"gc.*\", thread=\"gc\", depth=0)",
      "longer(intervals(name=\"interrupt\"), 250us)",
      "union(\"a\", \"b\", intersect(instants(name=\"x\"), \"c\"))",
      "smooth(rate(exclude(sum(samples(name=\"heap\", value>=0)), intervals(thread=\"gc\"))), 100ms)",
      "span(instants(name=\"req\"), messages(channel=\"3\"))",
      "shorter(intervals(name=\"/^audio\\\\./\"), 1500ns)",
  };
  for (const char* t : texts) {
    Expr e, again;
    std::string error;
    ASSERT_TRUE(parse_stream(t, e, error)) << t << ": " << error;
    std::string printed = format_stream(e);
    ASSERT_TRUE(parse_stream(printed, again, error)) << printed << ": " << error;
    EXPECT_EQ(format_stream(again), printed) << t;
  }
  Expr e;
  std::string error;
  ASSERT_TRUE(parse_stream("longer(\"interrupt\", 0.25ms)", e, error));
  EXPECT_EQ(e.op, Op::Longer);
  EXPECT_EQ(e.ns, 250'000);
  EXPECT_EQ(e.args[0].filter.name, "interrupt");
  EXPECT_EQ(format_stream(e), "longer(intervals(name=\"interrupt\"), 250us)");
}

TEST(StreamSyntax, ErrorsNameTheColumnAndWhatWasExpected) {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {"longer(intervals(), 250)", ""},  // a bare number is ns: fine
      {"longr(intervals(), 1ms)", "column 1: unknown stream 'longr'"},
      {"longer(intervals())", "longer needs a duration"},
      {"longer(intervals(), 1 parsec)", "column 23: ',' or ')'"},
      {"rate(intervals())", "rate: argument 1 must be samples"},
      {"exclude(samples(), samples())", "exclude: argument 2 must be intervals"},
      {"intervals(nme=\"x\")", "column 11: unknown field 'nme'"},
      {"intervals(name=\"/(/\")", "not a regular expression"},
      {"union(\"a\"", "',' or ')'"},
      {"span(\"a\")", "span takes 2 stream(s), not 1"},
      {"intervals() x", "column 13: unexpected 'x'"},
      {"\"unterminated", "closing quote"},
  };
  for (const Case& c : cases) {
    Expr e;
    std::string error;
    bool ok = parse_stream(c.text, e, error);
    if (!*c.says) {
      EXPECT_TRUE(ok) << c.text << ": " << error;
      continue;
    }
    EXPECT_FALSE(ok) << c.text;
    EXPECT_NE(error.find(c.says), std::string::npos) << c.text << " -> " << error;
  }
}

TEST(StreamSyntax, GlobsAndRegularExpressions) {
  EXPECT_TRUE(NameMatcher("gc.*").matches("gc.sweep"));
  EXPECT_FALSE(NameMatcher("gc.*").matches("audio.gc"));
  EXPECT_TRUE(NameMatcher("*.s?mple").matches("audio.sample"));
  EXPECT_TRUE(NameMatcher("").matches("anything"));
  EXPECT_TRUE(NameMatcher("/^wor.*[0-9]$/").matches("worker.12"));
  EXPECT_FALSE(NameMatcher("/^wor.*[0-9]$/").matches("worker.x"));
}

// ---------------------------------------------------------------- operators

// A trace with two threads and every kind of base stream, at known times (1 tick = 1 ns).
struct KnownTrace {
  TraceBytes trace{"known"};
  ChunkBuilder meta, a, b, c;
  uint64_t next_id = 1;
  std::map<std::string, uint64_t> ids;

  uint64_t id(const std::string& s) {
    auto [it, fresh] = ids.emplace(s, next_id);
    if (fresh) {
      uint8_t* p = meta.begin(kStringDef, 0, 8);
      p = ChunkBuilder::put_u64(p, next_id++);
      p = ChunkBuilder::put_bytes(p, s.data(), s.size());
      meta.end(p);
    }
    return it->second;
  }
  void name_thread(uint32_t feedlet, const std::string& name) {
    uint64_t n = id(name);
    uint8_t* p = meta.begin(kFeedletInfo, 0, 16);
    p = ChunkBuilder::put_u64(p, feedlet), p = ChunkBuilder::put_u64(p, 100 + feedlet), p = ChunkBuilder::put_u64(p, n);
    meta.end(p);
  }
  void ev(ChunkBuilder& c, uint16_t type, uint64_t t, const std::string& name) {
    uint64_t n = id(name);
    uint8_t* p = c.begin(type, t);
    p = ChunkBuilder::put_u64(p, n);
    c.end(p);
  }
  void counter(ChunkBuilder& c, uint64_t t, const std::string& name, int64_t v) {
    uint64_t n = id(name);
    uint8_t* p = c.begin(kCounterInt, t);
    p = ChunkBuilder::put_u64(p, n), p = ChunkBuilder::put_i64(p, v);
    c.end(p);
  }
  void message(ChunkBuilder& c, uint16_t type, uint64_t t, uint64_t msg, uint64_t channel, uint64_t size) {
    uint8_t* p = c.begin(type, t);
    p = c.put_delta(p, msg), p = ChunkBuilder::put_u64(p, channel), p = ChunkBuilder::put_u64(p, size);
    p = ChunkBuilder::put_bytes(p, nullptr, 0);
    c.end(p);
  }

  std::string bytes() {
    a.feedlet = 1, b.feedlet = 2, c.feedlet = 3;
    name_thread(1, "main");
    name_thread(2, "helper");
    name_thread(3, "collector");
    // main: task [100,200], [300,350], task [400,1000] with "other" [500,600] inside.
    ev(a, kIntervalBegin, 100, "task"), ev(a, kIntervalEnd, 200, "task");
    message(a, kMessageRecv, 250, 1, 7, 64);  // main receives message 1
    ev(a, kIntervalBegin, 300, "task"), ev(a, kIntervalEnd, 350, "task");
    ev(a, kIntervalBegin, 400, "task"), ev(a, kIntervalBegin, 500, "other");
    ev(a, kIntervalEnd, 600, "other"), ev(a, kIntervalEnd, 1000, "task");
    // collector: gc [250,350]. helper: task [150,320]; instants req 10, 20; done 15, 40, 50; heap samples.
    ev(b, kInstant, 10, "req"), ev(b, kInstant, 15, "done"), ev(b, kInstant, 20, "req");
    ev(b, kInstant, 40, "done"), ev(b, kInstant, 50, "done");
    counter(b, 100, "heap", 10);
    message(b, kMessageSend, 100, 1, 7, 64);
    ev(b, kIntervalBegin, 150, "task");
    counter(b, 200, "heap", 30);
    message(b, kMessageSend, 200, 2, 7, 32);  // never received
    ev(c, kIntervalBegin, 250, "gc");
    counter(b, 300, "heap", 60);
    ev(b, kIntervalEnd, 320, "task");
    ev(c, kIntervalEnd, 350, "gc");
    counter(b, 400, "heap", 60);
    counter(b, 500, "heap", 100);
    trace.flush(meta);
    trace.flush(a);
    trace.flush(b);
    trace.flush(c);
    return trace.out;
  }
};

struct Indexed : IndexedTrace {
  using IndexedTrace::IndexedTrace;
  std::vector<Record> eval(const std::string& text) const {
    Expr e;
    std::string error;
    EXPECT_TRUE(parse_stream(text, e, error)) << text << ": " << error;
    auto s = DerivedStream::evaluate(*ix, e, error);
    EXPECT_TRUE(s) << text << ": " << error;
    if (!s) return {};
    return {s->records().begin(), s->records().end()};
  }
};

using Span2 = std::pair<uint64_t, uint64_t>;
std::vector<Span2> spans(const std::vector<Record>& r) {
  std::vector<Span2> out;
  for (const Record& x : r) out.emplace_back(x.start, x.end);
  return out;
}
std::vector<std::pair<uint64_t, double>> values(const std::vector<Record>& r) {
  std::vector<std::pair<uint64_t, double>> out;
  for (const Record& x : r) out.emplace_back(x.end, x.value);
  return out;
}

class Operators : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    KnownTrace k;
    known_ = new Indexed("analysis_known", k.bytes());
  }
  static void TearDownTestSuite() { delete known_; }
  static Indexed* known_;
};
Indexed* Operators::known_;

TEST_F(Operators, BaseStreamsFilterByNameThreadDepthAndValue) {
  const Indexed& k = *known_;
  EXPECT_EQ(spans(k.eval("intervals(name=\"task\")")),
            (std::vector<Span2>{{100, 200}, {150, 320}, {300, 350}, {400, 1000}}));
  EXPECT_EQ(spans(k.eval("intervals(name=\"task\", thread=\"main\")")), (std::vector<Span2>{{100, 200}, {300, 350}, {400, 1000}}));
  EXPECT_EQ(spans(k.eval("intervals(depth=1)")), (std::vector<Span2>{{500, 600}}));
  EXPECT_EQ(spans(k.eval("intervals(name=\"/^(gc|other)$/\")")), (std::vector<Span2>{{250, 350}, {500, 600}}));
  EXPECT_EQ(spans(k.eval("instants(name=\"req\")")), (std::vector<Span2>{{10, 10}, {20, 20}}));
  EXPECT_EQ(values(k.eval("samples(name=\"heap\", value>20, value<100)")),
            (std::vector<std::pair<uint64_t, double>>{{200, 30}, {300, 60}, {400, 60}}));
  EXPECT_TRUE(k.eval("intervals(process=\"somebody else\")").empty());
  // Messages: matched ones only, send -> receive, their size as the value.
  auto m = k.eval("messages()");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].start, 100u);
  EXPECT_EQ(m[0].end, 250u);
  EXPECT_EQ(m[0].value, 64);
  // Names and threads come along.
  auto main_tasks = k.eval("intervals(name=\"task\", thread=\"main\")");
  EXPECT_EQ(main_tasks[0].feedlet, 1u);
  EXPECT_EQ(std::string(k.ix->catalog().string(main_tasks[0].name)), "task");
}

TEST_F(Operators, DurationFiltersAreStrict) {
  const Indexed& k = *known_;
  EXPECT_EQ(spans(k.eval("longer(\"task\", 100ns)")), (std::vector<Span2>{{150, 320}, {400, 1000}}));
  EXPECT_EQ(spans(k.eval("longer(\"task\", 99ns)")), (std::vector<Span2>{{100, 200}, {150, 320}, {400, 1000}}));
  EXPECT_EQ(spans(k.eval("shorter(\"task\", 100ns)")), (std::vector<Span2>{{300, 350}}));
  EXPECT_EQ(spans(k.eval("shorter(longer(\"task\", 60), 200)")), (std::vector<Span2>{{100, 200}, {150, 320}}));
  // Nested filters over a base stream are applied while decoding; over
  // anything else as a filter: the same answers.
  EXPECT_EQ(spans(k.eval("longer(shorter(\"task\", 600), 100)")), (std::vector<Span2>{{150, 320}}));
  EXPECT_EQ(spans(k.eval("longer(longer(shorter(\"task\", 601), 99), 60)")),
            (std::vector<Span2>{{100, 200}, {150, 320}, {400, 1000}}));
  EXPECT_TRUE(k.eval("shorter(\"task\", 0)").empty());
  EXPECT_TRUE(k.eval("longer(shorter(\"task\", 100), 100)").empty());
  EXPECT_EQ(spans(k.eval("longer(union(\"task\"), 300)")), (std::vector<Span2>{{400, 1000}}));
  EXPECT_EQ(spans(k.eval("shorter(longer(union(\"task\"), 100), 300)")), (std::vector<Span2>{{100, 350}}));
}

TEST_F(Operators, UnionAndIntersectionOfTime) {
  const Indexed& k = *known_;
  EXPECT_EQ(spans(k.eval("union(\"task\")")), (std::vector<Span2>{{100, 350}, {400, 1000}}));
  EXPECT_EQ(spans(k.eval("union(intervals(name=\"task\", thread=\"main\"), \"gc\")")),
            (std::vector<Span2>{{100, 200}, {250, 350}, {400, 1000}}));
  EXPECT_EQ(spans(k.eval("intersect(intervals(name=\"task\", thread=\"main\"), intervals(name=\"task\", thread=\"helper\"))")),
            (std::vector<Span2>{{150, 200}, {300, 320}}));
  EXPECT_EQ(spans(k.eval("intersect(\"task\", \"gc\", \"task\")")), (std::vector<Span2>{{250, 350}}));
  EXPECT_EQ(spans(k.eval("intersect(\"other\", \"gc\")")), (std::vector<Span2>{}));
  // Instants inside intervals.
  EXPECT_EQ(spans(k.eval("intersect(instants(name=\"done\"), union(intervals(name=\"task\"), instants(name=\"req\")))")),
            (std::vector<Span2>{}));
  // Made intervals have no name or thread.
  EXPECT_EQ(k.eval("union(\"task\")")[0].feedlet, kNoFeedlet);
}

TEST_F(Operators, SpanPairsEachStartWithTheNextUnusedEnd) {
  const Indexed& k = *known_;
  EXPECT_EQ(spans(k.eval("span(instants(name=\"req\"), instants(name=\"done\"))")), (std::vector<Span2>{{10, 15}, {20, 40}}));
}

TEST_F(Operators, SumRateExcludeSmooth) {
  const Indexed& k = *known_;
  using V = std::vector<std::pair<uint64_t, double>>;
  EXPECT_EQ(values(k.eval("sum(samples(name=\"heap\"))")), (V{{100, 10}, {200, 40}, {300, 100}, {400, 160}, {500, 260}}));
  // Per second: 20 over 100 ns is 2e8/s.
  EXPECT_EQ(values(k.eval("rate(samples(name=\"heap\"))")), (V{{200, 2e8}, {300, 3e8}, {400, 0}, {500, 4e8}}));
  // gc covers [250, 350): the sample at 300 goes, later ones lose 100 ns of time.
  auto ex = k.eval("exclude(samples(name=\"heap\"), \"gc\")");
  EXPECT_EQ(values(ex), (V{{100, 10}, {200, 30}, {400, 60}, {500, 100}}));
  std::vector<uint64_t> virt;
  for (const Record& r : ex) virt.push_back(r.start);
  EXPECT_EQ(virt, (std::vector<uint64_t>{100, 200, 300, 400}));
  EXPECT_EQ(values(k.eval("rate(exclude(samples(name=\"heap\"), \"gc\"))")), (V{{200, 2e8}, {400, 3e8}, {500, 4e8}}));
  auto sm = values(k.eval("smooth(samples(name=\"heap\"), 250ns)"));
  ASSERT_EQ(sm.size(), 5u);
  const double want[] = {10, 20, 100.0 / 3, 50, 220.0 / 3};
  for (size_t i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(sm[i].second, want[i]) << i;
  // Interval time accumulates in ns at each end.
  EXPECT_EQ(values(k.eval("sum(intervals(name=\"task\", thread=\"main\"))")), (V{{200, 100}, {350, 150}, {1000, 750}}));
}

TEST_F(Operators, WindowLimitsTheKeys) {
  Expr e;
  std::string error;
  ASSERT_TRUE(parse_stream("intervals(name=\"task\")", e, error));
  EvalOptions o;
  o.t0 = 200, o.t1 = 350;
  auto s = DerivedStream::evaluate(*known_->ix, e, error, o);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(spans({s->records().begin(), s->records().end()}), (std::vector<Span2>{{100, 200}, {150, 320}, {300, 350}}));
}

// ---------------------------------------------------------------- pyramids and needles

// The synthetic benchmark trace: many threads, nested periodic tasks, 1 in 997 twenty times too long.
class Synthetic : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(temp_path("analysis_synthetic"));
    remove_trace(*path_);
    bench::SyntheticOptions opt;
    opt.events = 3'000'000;
    opt.threads = 6;
    opt.seed = test_seed(opt.seed);
    bench::SyntheticResult r;
    std::string error;
    ASSERT_TRUE(bench::write_synthetic_trace(*path_, opt, r, error)) << error;
    anomalies_ = r.anomalies;
    ix_ = TraceIndex::build(*path_, error).release();
    ASSERT_TRUE(ix_) << error;
  }
  static void TearDownTestSuite() {
    delete ix_;
    remove_trace(*path_);
    delete path_;
  }
  static std::unique_ptr<DerivedStream> eval(const std::string& text, EvalOptions o = {}) {
    Expr e;
    std::string error;
    EXPECT_TRUE(parse_stream(text, e, error)) << error;
    auto s = DerivedStream::evaluate(*ix_, e, error, o);
    EXPECT_TRUE(s) << error;
    return s;
  }
  static std::string* path_;
  static TraceIndex* ix_;
  static uint64_t anomalies_;
};
uint64_t Synthetic::anomalies_;
std::string* Synthetic::path_;
TraceIndex* Synthetic::ix_;

// The k longest by a full scan: durations longest first, ties by end.
std::vector<Record> scan_longest(std::span<const Record> all, size_t k, uint64_t t0 = 0, uint64_t t1 = UINT64_MAX) {
  std::vector<Record> v;
  for (const Record& r : all)
    if (r.end >= t0 && r.end <= t1) v.push_back(r);
  std::stable_sort(v.begin(), v.end(), [](const Record& a, const Record& b) {
    return a.duration() != b.duration() ? a.duration() > b.duration() : a.end < b.end;
  });
  v.resize(std::min(v.size(), k));
  return v;
}

void expect_same_needles(const std::vector<Record>& want, const std::vector<Record>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i].duration(), got[i].duration()) << what << " #" << i;
  }
  // The same intervals (order among equal durations may differ).
  auto key = [](const Record& r) { return std::make_tuple(r.duration(), r.end, r.start, r.feedlet, r.name); };
  std::vector<std::tuple<uint64_t, uint64_t, uint64_t, uint32_t, uint32_t>> a, b;
  for (const Record& r : want) a.push_back(key(r));
  for (const Record& r : got) b.push_back(key(r));
  // The last duration may tie with intervals left out: compare the strictly longer ones exactly.
  const uint64_t edge = want.empty() ? 0 : want.back().duration();
  std::erase_if(a, [&](auto& t) { return std::get<0>(t) == edge; });
  std::erase_if(b, [&](auto& t) { return std::get<0>(t) == edge; });
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b) << what;
}

TEST_F(Synthetic, LongestAgreesWithAFullScan) {
  auto all = eval("intervals()");
  ASSERT_TRUE(all);
  ASSERT_GT(all->size(), 500'000u);
  for (size_t k : {1, 10, 100, 1000}) {
    NeedleQuery q;
    q.k = k;
    NeedleCost cost;
    std::string error;
    auto got = longest(*ix_, select_streams(*ix_, Expr{}), q, &cost);
    expect_same_needles(scan_longest(all->records(), k), got, "k=" + std::to_string(k));
    // Through the pyramids: far fewer buckets opened than items in the trace.
    EXPECT_LT(cost.leaves_decoded, 4 * k + 64) << k;
  }
  // Random windows, and names.
  std::mt19937_64 rng(test_seed(5));
  uint64_t lo = ix_->first_ts(), hi = ix_->last_ts();
  for (int round = 0; round < 20; ++round) {
    NeedleQuery q;
    q.k = 1 + rng() % 50;
    q.t0 = lo + rng() % (hi - lo);
    q.t1 = q.t0 + rng() % (hi - q.t0 + 1);
    auto got = longest(*ix_, select_streams(*ix_, Expr{}), q);
    expect_same_needles(scan_longest(all->records(), q.k, q.t0, q.t1), got, "window round " + std::to_string(round));
  }
}

TEST_F(Synthetic, LongestOfDerivedStreamsAndThroughTheSyntax) {
  auto all = eval("intervals(depth=0)");
  ASSERT_TRUE(all);
  Expr e;
  std::string error;
  ASSERT_TRUE(parse_stream("intervals(depth=0)", e, error));
  NeedleQuery q;
  q.k = 50;
  // A per-event test: evaluated and stored, then searched through its own pyramid.
  auto got = longest(*ix_, e, q, error);
  ASSERT_TRUE(error.empty()) << error;
  expect_same_needles(scan_longest(all->records(), 50), got, "depth=0");
  // longer() of base intervals goes through the index with a floor.
  ASSERT_TRUE(parse_stream("longer(intervals(), 100us)", e, error));
  q.k = 100000;
  got = longest(*ix_, e, q, error);
  std::vector<Record> want;
  auto every = eval("intervals()");
  for (const Record& r : every->records())
    if (r.duration() > 100'000) want.push_back(r);
  EXPECT_EQ(got.size(), want.size());
  EXPECT_FALSE(want.empty());
}

TEST_F(Synthetic, DerivedPyramidsEqualTheirRecords) {
  auto s = eval("longer(intervals(), 20us)");
  ASSERT_TRUE(s);
  ASSERT_GT(s->size(), 1000u);
  auto r = s->records();
  std::mt19937_64 rng(test_seed(9));
  const uint64_t lo = r.front().end, hi = r.back().end;
  for (int round = 0; round < 200; ++round) {
    uint64_t t0 = lo + rng() % (hi - lo), t1 = t0 + ((hi - lo) >> (rng() % 16));
    uint32_t shift = uint32_t(rng() % 34);
    auto got = s->query_shift(t0, t1, shift);
    // Brute force over the records of the whole buckets.
    std::vector<Node> want;
    for (const Record& x : r) {
      uint64_t b = x.end >> got.shift;
      if (b < (t0 >> got.shift) || b > (t1 >> got.shift)) continue;
      if (want.empty() || want.back().bucket != b) {
        want.emplace_back();
        want.back().bucket = b;
        want.back().iv.min_dur = UINT64_MAX;
      }
      Node& n = want.back();
      ++n.count;
      n.iv.busy += x.duration();
      n.iv.min_dur = std::min(n.iv.min_dur, x.duration());
      n.iv.max_dur = std::max(n.iv.max_dur, x.duration());
    }
    ASSERT_EQ(got.nodes.size(), want.size()) << "round " << round << " shift " << got.shift;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got.nodes[i].bucket, want[i].bucket);
      ASSERT_EQ(got.nodes[i].count, want[i].count);
      ASSERT_EQ(got.nodes[i].iv.busy, want[i].iv.busy);
      ASSERT_EQ(got.nodes[i].iv.min_dur, want[i].iv.min_dur);
      ASSERT_EQ(got.nodes[i].iv.max_dur, want[i].iv.max_dur);
    }
  }
  // At most about two buckets a column.
  EXPECT_LE(s->query(lo, hi, 300).nodes.size(), 602u);
}

// Records from a vector, with or without an estimate of how many come.
class VectorCursor : public Cursor {
 public:
  VectorCursor(const std::vector<Record>& r, bool estimate, uint64_t count, uint64_t span)
      : r_(r), estimate_(estimate), count_(count), span_(span) {}
  bool next(Record& out) override { return at_ < r_.size() ? (out = r_[at_++], true) : false; }
  uint64_t max_duration() const override { return UINT64_MAX; }
  uint64_t events_read() const override { return at_; }
  bool estimate(uint64_t& count, uint64_t& key_span) const override {
    count = count_, key_span = span_;
    return estimate_;
  }

 private:
  const std::vector<Record>& r_;
  size_t at_ = 0;
  bool estimate_;
  uint64_t count_, span_;
};

// A stored stream is its records however it was stored: its pyramid built
// after them or as they passed (with an estimate right, ten times over or
// under), written around the page cache or through it (tmpfs), across the
// writer's buffers and not a multiple of a disk block.
TEST(DerivedStore, EveryWayOfStoringGivesTheRecordsAndTheirBuckets) {
  std::mt19937_64 rng(test_seed(31));
  for (size_t n : {size_t(0), size_t(1), size_t(1000), size_t(131072), size_t(300007)}) {
    for (bool intervals : {true, false}) {
      std::vector<Record> rs(n);
      uint64_t t = rng() % (uint64_t(1) << 40);
      for (Record& r : rs) {
        t += rng() % 3 == 0 ? 0 : rng() % 5000;  // ties too
        const uint64_t d = intervals ? rng() % 20000 : 0;
        r = Record{t >= d ? t - d : 0, t, intervals ? 0.0 : double(int64_t(rng() % 2000) - 1000), uint32_t(rng() % 7), 3};
      }
      const uint64_t span = n ? rs.back().end - rs.front().end : 0;
      struct Way {
        const char* what;
        bool estimate;
        uint64_t count;
        const char* dir;
      };
      for (const Way& w : {Way{"after", false, 0, "/tmp"}, Way{"as they pass", true, n, "/tmp"},
                           Way{"estimate x10", true, n * 10, "/tmp"}, Way{"estimate /10", true, n / 10, "/tmp"},
                           Way{"tmpfs, as they pass", true, n, "/dev/shm"}, Way{"tmpfs, after", false, 0, "/dev/shm"}}) {
        if (::access(w.dir, W_OK) != 0) continue;
        SCOPED_TRACE(std::string(w.what) + ", " + std::to_string(n) + (intervals ? " intervals" : " samples"));
        VectorCursor c(rs, w.estimate, w.count, span);
        std::string error;
        auto s = DerivedStream::store(c, intervals, error, w.dir);
        ASSERT_TRUE(s) << error;
        ASSERT_EQ(s->size(), n);
        // Around the page cache where the pyramid was built as they passed
        // (on a disk's file system: tmpfs is the page cache), through it
        // otherwise: which of the records' pages are in memory, before
        // anything reads them here.
        if (n >= 131072) {
          struct statfs fs {};
          const size_t page = size_t(::sysconf(_SC_PAGESIZE)), bytes = n * sizeof(Record), pages = (bytes + page - 1) / page;
          std::vector<unsigned char> in(pages);
          ASSERT_EQ(::mincore(const_cast<Record*>(s->records().data()), bytes, in.data()), 0) << std::strerror(errno);
          const size_t resident = size_t(std::count_if(in.begin(), in.end(), [](unsigned char c) { return c & 1; }));
          if (!w.estimate) {
            EXPECT_GT(resident, pages * 9 / 10);
          } else if (::statfs(w.dir, &fs) == 0 && fs.f_type != TMPFS_MAGIC) {
            EXPECT_LT(resident, pages / 10);
          }
        }
        ASSERT_TRUE(std::equal(rs.begin(), rs.end(), s->records().begin(), s->records().end(), [](const Record& a, const Record& b) {
          return a.start == b.start && a.end == b.end && a.value == b.value && a.name == b.name && a.feedlet == b.feedlet;
        }));
        if (!n) continue;
        for (int round = 0; round < 40; ++round) {
          const uint64_t t0 = rs.front().end + (span ? rng() % span : 0), t1 = t0 + (span >> (rng() % 12));
          const uint32_t shift = uint32_t(rng() % 40);
          const index::Buckets got = s->query_shift(t0, t1, shift);
          // Every record of the buckets folded one by one.
          std::vector<Node> want;
          index::Item it;
          it.kind = s->kind();
          for (const Record& x : rs)
            if ((x.end >> got.shift) >= (t0 >> got.shift) && (x.end >> got.shift) <= (t1 >> got.shift)) {
              it.start = x.start, it.end = x.end, it.value = x.value, it.name = x.name;
              index::ItemPyramid::fold_item(want, it, got.shift);
            }
          ASSERT_EQ(got.nodes.size(), want.size()) << "round " << round << " shift " << got.shift;
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_EQ(got.nodes[i].bucket, want[i].bucket);
            ASSERT_EQ(got.nodes[i].count, want[i].count);
            const Node &g = got.nodes[i], &x = want[i];
            if (intervals) {
              ASSERT_EQ(g.iv.busy, x.iv.busy);
              ASSERT_EQ(g.iv.min_dur, x.iv.min_dur);
              ASSERT_EQ(g.iv.max_dur, x.iv.max_dur);
              ASSERT_EQ(g.iv.min_start, x.iv.min_start);
              ASSERT_EQ(g.iv.max_end, x.iv.max_end);
            } else {  // (sums of whole numbers: exact in any order)
              ASSERT_EQ(g.s.min, x.s.min);
              ASSERT_EQ(g.s.max, x.s.max);
              ASSERT_EQ(g.s.first, x.s.first);
              ASSERT_EQ(g.s.last, x.s.last);
              ASSERT_EQ(g.s.sum, x.s.sum);
            }
          }
        }
      }
    }
  }
}

TEST_F(Synthetic, OutliersAreTheInjectedAnomalies) {
  // Each thread's 997th task (and every 997th after) runs 20 times too long,
  // its phases with it. Outliers at 5 times their name's mean are all inside
  // those tasks, and find most of them (a task of two short phases stays
  // under 5 times the mean even so).
  auto tasks = eval("intervals(name=\"task\")");
  ASSERT_TRUE(tasks);
  std::map<uint32_t, uint64_t> task_no;
  std::vector<Record> anomalous;
  for (const Record& t : tasks->records())
    if (task_no[t.feedlet]++ % 997 == 996) anomalous.push_back(t);
  ASSERT_EQ(anomalous.size(), anomalies_);
  auto found = outliers(*ix_, Expr{}, 5, 100000);
  auto catalog = ix_->catalog_snapshot();
  size_t task_outliers = 0;
  for (const Outlier& o : found) {
    EXPECT_GT(o.ratio, 5);
    task_outliers += catalog->string(o.r.name) == "task";
    EXPECT_TRUE(std::any_of(anomalous.begin(), anomalous.end(), [&](const Record& t) {
      return t.feedlet == o.r.feedlet && t.start <= o.r.start && o.r.end <= t.end;
    })) << catalog->string(o.r.name) << " outlier outside every anomalous task";
  }
  EXPECT_GT(task_outliers, anomalies_ * 9 / 10);
}

TEST(DurationHistogram, PercentilesWithinTheirBinAndExactMoments) {
  DurationHistogram h;
  std::vector<uint64_t> v;
  std::mt19937_64 rng(test_seed(3));
  for (int i = 0; i < 100000; ++i) {
    uint64_t d = 1 + rng() % 1000 + (rng() % 100 == 0 ? 50000 + rng() % 10000 : 0);
    v.push_back(d);
    h.add(d);
  }
  std::sort(v.begin(), v.end());
  EXPECT_EQ(h.count(), v.size());
  EXPECT_EQ(h.min(), v.front());
  EXPECT_EQ(h.max(), v.back());
  uint64_t total = 0;
  for (uint64_t d : v) total += d;
  EXPECT_EQ(h.total(), total);
  for (double p : {1.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
    double want = double(v[size_t(std::ceil(p / 100 * double(v.size()))) - 1]);
    EXPECT_NEAR(h.percentile(p), want, want * 0.012 + 1) << "p" << p;
  }
}

// ---------------------------------------------------------------- the demo workload

std::string record_demo(const std::string& name, const std::string& args) {
  std::string path = temp_path(name);
  remove_trace(path);
  EXPECT_EQ(run(bin("recorder/tinescope-demo") + " --duration 2 --workers 1 --rate 0.1 " + args + " -o " + path + " 2>&1"), 0);
  return path;
}

// Intervals of a name on any thread, straight from the trace (not the index).
std::vector<Span2> raw_intervals_of(const Collected& trace, const std::string& name) {
  std::map<uint32_t, std::vector<uint64_t>> open;
  std::vector<Span2> out;
  for (const OwnedEvent& o : trace.events) {
    if (o.e.feedlet == kMetadataFeedlet || trace.name(o.e.u[0]) != name) continue;
    if (o.e.type == kIntervalBegin) open[o.e.feedlet].push_back(o.e.ts);
    if (o.e.type == kIntervalEnd && !open[o.e.feedlet].empty()) {
      out.emplace_back(open[o.e.feedlet].back(), o.e.ts);
      open[o.e.feedlet].pop_back();
    }
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.second < b.second; });
  return out;
}

class Demo : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(record_demo("analysis_demo", ""));
    std::string error;
    ix_ = TraceIndex::open(*path_, error).release();
    ASSERT_TRUE(ix_) << error;
    trace_ = new Collected(read_trace(*path_));
  }
  static void TearDownTestSuite() {
    delete ix_;
    delete trace_;
    remove_trace(*path_);
    delete path_;
  }
  // (Of the trace the suite recorded.)
  static std::vector<Span2> raw_intervals(const std::string& name) { return raw_intervals_of(*trace_, name); }
  static std::vector<Record> eval(const std::string& text) {
    Expr e;
    std::string error;
    EXPECT_TRUE(parse_stream(text, e, error)) << error;
    auto s = DerivedStream::evaluate(*ix_, e, error);
    EXPECT_TRUE(s) << error;
    return s ? std::vector<Record>(s->records().begin(), s->records().end()) : std::vector<Record>{};
  }
  static std::string* path_;
  static TraceIndex* ix_;
  static Collected* trace_;
};
std::string* Demo::path_;
TraceIndex* Demo::ix_;
Collected* Demo::trace_;

TEST_F(Demo, DurationFilterFindsTheLengtheningSweepQuanta) {
  // The sweep bug: the q-th quantum of a sweep phase takes 500 us + q * 1000/59 us
  // (a busy machine can only make a quantum longer, never shorter).
  const double tpn = ix_->catalog().clock.ticks_per_ns();
  auto sweeps = raw_intervals("gc.sweep"), marks = raw_intervals("gc.mark"), quanta = raw_intervals("gc.quantum");
  ASSERT_FALSE(sweeps.empty());
  ASSERT_FALSE(marks.empty());
  // Sweep quanta due to last over 606 us: the 7th quantum is due at 601.7 us,
  // too near the threshold for a clock read through a calibrated TSC, so it
  // may fall either side.
  std::vector<Span2> injected;
  for (const auto& s : sweeps) {
    int q = 0;
    for (const auto& x : quanta)
      if (x.first >= s.first && x.second <= s.second && q++ * 1000.0 / 59 + 500 > 606) injected.push_back(x);
  }
  ASSERT_GT(injected.size(), 20u);
  auto found = spans(eval("intersect(longer(intervals(name=\"gc.quantum\"), 600us), intervals(name=\"gc.sweep\"))"));
  for (const auto& x : injected)
    EXPECT_TRUE(std::count(found.begin(), found.end(), x))
        << "missed the sweep quantum ending at " << x.second << ", " << double(x.second - x.first) / tpn << " ns long";
  // Nothing else: every hit is a quantum of a sweep phase; none is from a mark phase.
  for (const auto& f : found) {
    EXPECT_TRUE(std::count(quanta.begin(), quanta.end(), f)) << "not a quantum: " << f.first << ".." << f.second;
    EXPECT_TRUE(std::any_of(sweeps.begin(), sweeps.end(), [&](auto& s) { return f.first >= s.first && f.second <= s.second; }));
    EXPECT_GT(double(f.second - f.first) / tpn, 600e3);
  }
  // The filter alone equals a scan of the raw trace.
  std::vector<Span2> want;
  for (const auto& x : quanta)
    if (double(x.second - x.first) > 600e3 * tpn) want.push_back(x);
  EXPECT_EQ(spans(eval("longer(intervals(name=\"gc.quantum\"), 600us)")), want);
}

// Issue 56 on the demo: the scope's period is found from the audio lane's
// starts (45.3515 us within 0.01 %, the interruptions' 50 ms within 1 %),
// and folded at it 1024 times in max mode, every strip that holds an
// interruption is lit across, mostly in its colour, while in mean mode it
// hides. What failed, or "": these read the demo's timing, which a busy
// machine scatters (the test records again then).
std::string audio_fold_failure(const std::string& path, const TraceIndex& ix, const Collected& trace) {
  uint32_t audio = UINT32_MAX;
  for (const auto& f : ix.feedlets())
    if (f.name == "audio") audio = f.id;
  if (audio == UINT32_MAX) return "no audio thread";
  const std::vector<PeriodCandidate> found = find_periods(ix, {audio});
  auto near = [&](double want, double tolerance) {
    return std::any_of(found.begin(), found.end(), [&](const PeriodCandidate& c) { return std::fabs(c.period_ns - want) <= want * tolerance; });
  };
  std::string list;
  for (const PeriodCandidate& c : found) list += format_period(c.period_ns) + " (" + c.source + ") ";
  if (found.empty() || std::fabs(found[0].period_ns - 1e9 / 22050) > 1e9 / 22050 * 1e-4) return "the best of " + list;
  if (!near(50e6, 0.01)) return "no 50 ms (the interruptions') among " + list;

  // The pictures, as `tinescope render` draws them: 1024 columns a strip.
  const int strips = 40, height = 22 + strips * 8;
  const std::string png = temp_path("demo_fold") + ".png";
  std::string out;
  const std::string render = bin("app/tinescope") + " render " + path + " --figure scope --lanes audio --period auto "
                             "--fold 1024 --size 1174x" + std::to_string(height) + " -o " + png + " --fold-mode ";
  if (run(render + "max 2>&1", &out) != 0) return out;
  if (out.find("period " + format_period(found[0].period_ns) + ", fold 1024 max (found)") == std::string::npos) return out;
  int w = 0, h = 0;
  std::vector<uint8_t> max_px, mean_px;
  if (!render::read_png(png, w, h, max_px, out)) return out;
  if (run(render + "mean 2>&1", &out) != 0 || !render::read_png(png, w, h, mean_px, out)) return out;
  const trace::ClockMap& clock = ix.catalog().clock;
  const int64_t first = clock.to_ns(ix.first_ts()), last = clock.to_ns(ix.last_ts());
  const double strip_ns = found[0].period_ns * 1024;
  std::vector<int64_t> irq;
  for (const auto& x : raw_intervals_of(trace, "interrupt")) irq.push_back(clock.to_ns(x.first));
  const uint32_t irq_colour = render::name_colour("interrupt"), sample_colour = render::name_colour("audio.sample");
  auto distance = [](const uint8_t* p, uint32_t c) {
    int d = 0;
    for (int k = 0; k < 3; ++k) d += std::abs(int(p[k]) - int(c >> (8 * k) & 255));
    return d;
  };
  int with = 0, lit = 0, coloured = 0, hidden = 0;
  for (int s = 0; s < strips && first + (s + 1) * strip_ns <= last; ++s) {
    const bool has = std::any_of(irq.begin(), irq.end(), [&](int64_t t) {
      return t >= first + s * strip_ns && t < first + (s + 1) * strip_ns;
    });
    if (!has) continue;
    ++with;
    const int y = 22 + s * 8 + 3;
    int irq_like = 0, dim = 0, full = 0;
    for (int x = 150; x < w; ++x) {
      const uint8_t* p = &max_px[(size_t(y) * w + x) * 4];
      irq_like += distance(p, irq_colour) < distance(p, sample_colour);
      full += std::max({p[0], p[1], p[2]}) >= 120;  // (at full strength: a colour of the palette)
      const uint8_t* q = &mean_px[(size_t(y) * w + x) * 4];
      dim += std::max({q[0], q[1], q[2]}) < 80;
    }
    coloured += irq_like > (w - 150) / 2;
    lit += full > (w - 150) * 95 / 100;
    hidden += dim > (w - 150) / 2;
  }
  auto of = [&](int n) { return std::to_string(n) + " of " + std::to_string(with) + " strips holding an interruption"; };
  if (with < 20) return of(with);
  if (lit != with) return "max: lit across (300 us covers every phase) only " + of(lit);
  // Its colour prevails where no other rare event (a sample the OS
  // preempted for a millisecond covers more periods) shares its strip; and
  // in mean mode it hides.
  if (coloured * 4 < with * 3) return "max: in the interruption's colour only " + of(coloured);
  if (hidden != with) return "mean: the interruption hides (under 1 % of the periods) only in " + of(hidden);
  return "";
}

TEST_F(Demo, TheAudioPeriodsAreFoundAndFoldMaxMarksEveryInterruption) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // What the demo recorded under a sanitizer is its timing under one: an
  // ASan run's audio starts scattered so that no sample period was offered
  // (the 50 ms of its interruptions was). The finder and both folds run
  // here for the sanitizer's sake; what they find is checked in the
  // uninstrumented builds, with the timing of a real run.
  uint32_t audio = UINT32_MAX;
  for (const auto& f : ix_->feedlets())
    if (f.name == "audio") audio = f.id;
  ASSERT_NE(audio, UINT32_MAX);
  for (const PeriodCandidate& c : find_periods(*ix_, {audio})) EXPECT_GT(c.period_ns, 0) << c.source;
  std::string said;
  for (const char* mode : {"max", "mean"})
    EXPECT_EQ(run(bin("app/tinescope") + " render " + *path_ + " --figure scope --lanes audio --period auto --fold 1024 "
                  "--size 600x200 -o " + temp_path("demo_fold") + ".png --fold-mode " + mode + " 2>&1", &said), 0) << said;
  return;
#endif
  std::string why = audio_fold_failure(*path_, *ix_, *trace_);
  // A machine busy enough to scatter the audio thread's samples (a VM's
  // neighbours: 4 runs in 5 here one day, with this build and the one
  // before) fails the timing, not the code: the demo is recorded again,
  // twice at most, and every check must hold on one recording.
  for (int again = 0; again < 2 && !why.empty(); ++again) {
    std::printf("recording the demo again (%s)\n", why.c_str());
    const std::string path = record_demo("analysis_demo_again", "");
    std::string error;
    std::unique_ptr<TraceIndex> ix = TraceIndex::open(path, error);
    ASSERT_TRUE(ix) << error;
    why = audio_fold_failure(path, *ix, read_trace(path));
    ix.reset();
    remove_trace(path);
  }
  EXPECT_EQ(why, "");
}

TEST_F(Demo, DurationFilterFindsThe300usInterruptions) {
  auto interrupts = raw_intervals("interrupt");
  ASSERT_GE(interrupts.size(), 30u);
  auto found = eval("longer(intervals(thread=\"audio\", depth=0), 250us)");
  std::vector<Span2> hits = spans(found), others;
  for (const auto& x : interrupts)
    EXPECT_TRUE(std::count(hits.begin(), hits.end(), x)) << "missed the interruption ending at " << x.second;
  // Every other hit is a 4 us sample that the OS preempted for over 250 us on
  // this shared 2-core machine (the demo's threads spin): a real needle of
  // this run, rare, and the filter's answer equals the raw trace's.
  auto samples = raw_intervals("audio.sample");
  std::vector<Span2> want = interrupts;
  const double tpn = ix_->catalog().clock.ticks_per_ns();
  for (const auto& x : samples)
    if (double(x.second - x.first) > 250e3 * tpn) want.push_back(x), others.push_back(x);
  std::sort(want.begin(), want.end(), [](auto& a, auto& b) { return a.second < b.second; });
  EXPECT_EQ(hits, want);
  EXPECT_LT(others.size(), samples.size() / 200) << "preempted samples";
  // The k longest of the thread's outermost intervals agree with the filter's longest.
  NeedleQuery q;
  q.k = 10;
  std::string error;
  Expr e;
  ASSERT_TRUE(parse_stream("intervals(thread=\"audio\")", e, error));
  auto top = longest(*ix_, e, q, error);
  ASSERT_EQ(top.size(), 10u);
  auto all = eval("intervals(thread=\"audio\")");
  expect_same_needles(scan_longest(all, 10), top, "audio");
}

// The demo's queue mutexes (each queue's, ts_lock around its pushes and
// pops): per lock, its waits (contend to acquire) and holds (acquire to
// release), against a reading of each thread's lock events in the trace.
TEST_F(Demo, TheQueueMutexesWaitsAndHoldsAreTheirLockEvents) {
  struct Want {
    uint64_t acquires = 0, contended = 0, wait_ns = 0, holds = 0, hold_ns = 0;
  };
  std::map<uint64_t, Want> want;  // lock id
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> contend, acquired;  // (thread, lock) -> when
  std::set<std::pair<uint32_t, uint64_t>> contend_at;                   // (thread, when)
  for (const OwnedEvent& o : trace_->events) {
    const trace::Event& e = o.e;
    if (e.feedlet == kMetadataFeedlet || e.type < kLockAcquire || e.type > kLockRelease) continue;
    ASSERT_EQ(trace_->name(e.u[0]), "queue.mutex");
    Want& w = want[e.u[1]];
    const auto key = std::make_pair(e.feedlet, e.u[1]);
    auto ns = [&](uint64_t a) { return uint64_t(ix_->to_ns(e.ts) - ix_->to_ns(a)); };
    if (e.type == kLockContend) contend[key] = e.ts, contend_at.insert({e.feedlet, e.ts});
    if (e.type == kLockAcquire) {
      ++w.acquires;
      acquired[key] = e.ts;
      if (auto c = contend.find(key); c != contend.end()) ++w.contended, w.wait_ns += ns(c->second), contend.erase(c);
    }
    if (e.type == kLockRelease) ++w.holds, w.hold_ns += ns(acquired.at(key));
  }
  ASSERT_EQ(want.size(), 1u);  // --workers 1: one queue
  const std::vector<analysis::LockStats> got = analysis::lock_stats(*ix_);
  ASSERT_EQ(got.size(), want.size());
  for (const analysis::LockStats& l : got) {
    const Want& w = want.at(l.id);
    EXPECT_EQ(l.name, "queue.mutex");
    EXPECT_EQ(l.acquires, w.acquires);
    EXPECT_GT(l.contended, 0u) << "pushes say they wait (contend) first";
    EXPECT_EQ(l.contended, w.contended);
    EXPECT_EQ(l.wait.total(), w.wait_ns);
    EXPECT_EQ(l.hold.count(), w.holds);
    EXPECT_EQ(l.hold.total(), w.hold_ns);
    EXPECT_EQ(l.unmatched, 0u);
    EXPECT_GE(l.threads, 2u) << "a producer and a worker";
  }
  // Each wait is an interval named by the lock on the waiting thread, from
  // its contend to its acquire (drawn there, in stats and streams).
  const Want& w = want.begin()->second;
  const std::vector<Record> waits = eval("intervals(name=\"queue.mutex\")");
  EXPECT_EQ(waits.size(), w.contended);
  uint64_t wait_ns = 0;
  for (const Record& r : waits) {
    wait_ns += uint64_t(ix_->to_ns(r.end) - ix_->to_ns(r.start));
    EXPECT_NE(contend_at.count({r.feedlet, r.start}), 0u) << "a wait begins at a contend";
  }
  EXPECT_EQ(wait_ns, w.wait_ns);
  std::string out;
  ASSERT_EQ(run(bin("app/tinescope") + " stats " + *path_ + " --locks 2>&1", &out), 0);
  EXPECT_NE(out.find("queue.mutex"), std::string::npos) << out;
  EXPECT_NE(out.find("wait p99 us"), std::string::npos) << out;
}

TEST_F(Demo, StatisticsPerNameAndThread) {
  Expr all;
  std::string error;
  auto rows = duration_stats(*ix_, all, true, error);
  ASSERT_TRUE(error.empty()) << error;
  auto interrupts = raw_intervals("interrupt");
  ASSERT_GE(interrupts.size(), 30u);
  // The median straight from the trace. Not 300 us itself: the demo's
  // threads spin on 2 cores, and under a sanitizer the OS stretched most
  // interrupts of a run past 315 us (CI saw that once).
  const double tpn = ix_->catalog().clock.ticks_per_ns();
  std::vector<double> ns;
  for (const auto& x : interrupts) ns.push_back(double(x.second - x.first) / tpn);
  std::sort(ns.begin(), ns.end());
  const double median = ns[(ns.size() + 1) / 2 - 1];  // the smallest with half of them at or below it
  EXPECT_GE(median, 299e3);
  bool seen = false;
  for (const auto& r : rows) {
    if (r.name != "interrupt") continue;
    EXPECT_EQ(r.h.count(), interrupts.size());
    EXPECT_GE(r.h.min(), 299'000u);
    EXPECT_NEAR(r.h.percentile(50), median, median * 0.012) << "a percentile is its bin's middle: within 1.1 %";
    if (!r.thread.empty()) {
      EXPECT_EQ(r.thread, "audio");
      seen = true;
    }
  }
  EXPECT_TRUE(seen) << "a per-thread row for interrupt";
  // The CLI prints the same as stable JSON.
  std::string out;
  ASSERT_EQ(run(bin("app/tinescope") + " stats --durations --json " + *path_, &out), 0);
  EXPECT_NE(out.find("\"durations\""), std::string::npos);
  EXPECT_NE(out.find("\"p99_9_ns\""), std::string::npos);
  ASSERT_GT(ix_->chunk_count(), 10u);
  const std::string chunks = "\"chunks\": " + std::to_string(ix_->chunk_count());
  const size_t at = out.find(chunks);
  ASSERT_NE(at, std::string::npos) << out.substr(0, 2000);
  EXPECT_FALSE(std::isdigit(static_cast<unsigned char>(out[at + chunks.size()]))) << out.substr(at, 40);
  ASSERT_EQ(run(bin("app/tinescope") + " find " + *path_ + " --longest 5 --name gc.quantum", &out), 0);
  EXPECT_NE(out.find("\"longest\""), std::string::npos);
  ASSERT_EQ(run(bin("app/tinescope") + " stream " + *path_ + " 'sum(samples(name=\"heap.*\"))' --csv --limit 3", &out), 0);
  EXPECT_EQ(out.rfind("time_ns,virtual_ns,value\n", 0), 0u) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 4);
  ASSERT_EQ(run(bin("app/tinescope") + " stream " + *path_ + " 'longr(\"x\", 1ms)' 2>&1", &out), 2);
  EXPECT_NE(out.find("unknown stream 'longr'"), std::string::npos) << out;
}

// The 90th percentile of the durations of the intervals named `name` in a
// recording, in us.
double p90_us(const std::string& path, const std::string& name) {
  const Collected c = read_trace(path);
  std::map<uint32_t, uint64_t> begin;
  std::vector<double> us;
  for (const OwnedEvent& o : c.events) {
    if (o.e.feedlet == kMetadataFeedlet || c.name(o.e.u[0]) != name) continue;
    const int64_t ns = c.catalog.clock.to_ns(o.e.ts);
    if (o.e.type == kIntervalBegin) begin[o.e.feedlet] = uint64_t(ns);
    if (o.e.type == kIntervalEnd && begin.count(o.e.feedlet)) us.push_back(double(uint64_t(ns) - begin[o.e.feedlet]) / 1e3);
  }
  if (us.empty()) return 1e9;
  std::sort(us.begin(), us.end());
  return us[us.size() * 9 / 10];
}

// A recording of the demo made while nothing else took its cores: up to three
// tries. The demo spins for wall time: an "interrupt" for 300 us, a
// "gc.work" for 480 us (neither changed by the sweep bug), so a preempted one
// is longer, and their p90s say how busy the machine was while it recorded.
// Under load (two CPU-bound loops beside ctest -j2) one recording's
// interruptions had a p90 of 1 037 us against the other's 400; with a fuzzer
// beside ctest -j2, gc.work's was 891 us against 486. compare rightly called
// both regressions; the tool under test is compare, not the machine.
std::string record_quiet_demo(const std::string& name, const std::string& args) {
  std::string path;
  for (int attempt = 0; attempt < 3; ++attempt) {
    path = record_demo(name, args);
    const double interrupt = p90_us(path, "interrupt"), work = p90_us(path, "gc.work");
    if (interrupt <= 350 && work <= 560) break;
    std::printf("%s: p90 of interrupt %.0f us (300 planned), of gc.work %.0f us (480): a busy machine; recording again\n",
                name.c_str(), interrupt, work);
  }
  return path;
}

TEST(Compare, CatchesTheSweepBugAndStaysQuietBetweenNormalRuns) {
  std::string a = record_quiet_demo("analysis_compare_a", "--no-sweep-bug");
  std::string b = record_quiet_demo("analysis_compare_b", "--no-sweep-bug");
  std::string c = record_quiet_demo("analysis_compare_c", "");
  std::string out;
  // At least 200 us: on a 2-core machine where the demo's seven threads spin,
  // a 10-40 us worker task is preempted now and then, which moved its p90 by
  // 53 us between two normal runs in CI; the sweep bug moves gc.quantum's p90
  // by ~800 us.
  const std::string tool = bin("app/tinescope") + " compare --min-delta 200us ";
  EXPECT_EQ(run(tool + a + " " + b, &out), 0) << out;
  EXPECT_NE(out.find("0 regressions"), std::string::npos) << out;
  EXPECT_EQ(run(tool + a + " " + c + " --json", &out), 1) << out;
  EXPECT_NE(out.find("\"name\": \"gc.quantum\""), std::string::npos) << out;
  // The regressed names: the sweep quanta and what holds them.
  EXPECT_EQ(run(tool + a + " " + c, &out), 1);
  EXPECT_NE(out.find("REGRESSED  gc.quantum "), std::string::npos) << out;
  EXPECT_NE(out.find("REGRESSED  gc.quantum_end"), std::string::npos) << out;
  EXPECT_EQ(out.find("REGRESSED  audio"), std::string::npos) << out;
  EXPECT_EQ(out.find("REGRESSED  interrupt"), std::string::npos) << out;
  EXPECT_EQ(run(tool + a + " /nonexistent.tine 2>&1", &out), 2) << out;
  for (auto& p : {a, b, c}) remove_trace(p);
}

}  // namespace
}  // namespace tinescope::test
