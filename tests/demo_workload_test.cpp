// The demo workload reproduces the seed's case studies with real timing, and
// `tinescope dump` shows them.
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <utility>

#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

using namespace format;

struct Interval {
  int64_t start, end;
};

// The timing checks hold in uninstrumented builds; a sanitizer slows the
// recorder and the demo's threads enough to stretch what they time.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kInstrumented = true;
#else
constexpr bool kInstrumented = false;
#endif

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Whether a thread of this process, and so of the demo it starts, may run at
// real-time priority (the demo's GC does where it may).
bool may_run_realtime() {
  static const bool may = [] {
    bool ok = false;
    std::thread([&] {
      sched_param p{};
      p.sched_priority = 1;
      ok = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) == 0;
    }).join();
    return ok;
  }();
  return may;
}

bool inside(const Interval& x, const std::vector<Interval>& spans) {
  return std::any_of(spans.begin(), spans.end(), [&](const Interval& s) { return x.start >= s.start && x.end <= s.end; });
}

// Completed intervals of `name` in a trace, in ns, matched by nesting per feedlet.
std::vector<Interval> intervals_of(const Collected& c, const std::string& name) {
  std::map<uint32_t, std::vector<int64_t>> open;
  std::vector<Interval> out;
  for (const OwnedEvent& o : c.events) {
    if (o.e.feedlet == kMetadataFeedlet || c.name(o.e.u[0]) != name) continue;
    int64_t t = c.catalog.clock.to_ns(o.e.ts);
    if (o.e.type == kIntervalBegin) open[o.e.feedlet].push_back(t);
    if (o.e.type == kIntervalEnd && !open[o.e.feedlet].empty()) {
      out.push_back({open[o.e.feedlet].back(), t});
      open[o.e.feedlet].pop_back();
    }
  }
  return out;
}

class DemoWorkload : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(temp_path("demo-workload"));
    ASSERT_EQ(run(bin("recorder/tinescope-demo") + " --overwrite --duration 2 -o " + *path_), 0);
    trace_ = new Collected(read_trace(*path_));
  }
  static void TearDownTestSuite() {
    unlink(path_->c_str());
    delete path_;
    delete trace_;
  }
  static std::vector<Interval> intervals(const std::string& name) { return intervals_of(*trace_, name); }
  static std::string* path_;
  static Collected* trace_;
};
std::string* DemoWorkload::path_;
Collected* DemoWorkload::trace_;

TEST_F(DemoWorkload, AudioRunsAt22kHzWith300usInterruptionsEvery50ms) {
  auto samples = intervals("audio.sample");
  // 22.05 kHz for 2 s is 44 100; a slow machine (TSan on a busy 2-core CI
  // made 29 442) falls behind, so the rate is checked by the median period.
  ASSERT_GT(samples.size(), 20000u) << "22.05 kHz for 2 s";
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < samples.size(); ++i) gaps.push_back(samples[i].start - samples[i - 1].start);
  std::nth_element(gaps.begin(), gaps.begin() + long(gaps.size() / 2), gaps.end());
  EXPECT_NEAR(double(gaps[gaps.size() / 2]), 45351.5, 2000.0) << "median sample period";
  auto irq = intervals("interrupt");
  ASSERT_GE(irq.size(), 30u);
  std::vector<double> lengths;
  for (const Interval& i : irq) lengths.push_back(double(i.end - i.start));
  std::sort(lengths.begin(), lengths.end());
  // Preemption can only stretch an interruption (it spins 300 us of wall
  // time), and on a busy 2-core CI machine it stretches many: an ASan run
  // had its median at 336 us. What holds whatever the load: none is cut
  // short, the shortest quarter is the designed 300 us, and the median is
  // not stretched past double.
  EXPECT_GE(lengths.front(), 295e3) << "shortest interruption";
  EXPECT_LE(lengths[lengths.size() / 2], 600e3) << "median interruption";
#if defined(__SANITIZE_THREAD__)
  // Under ThreadSanitizer the demo's seven busy threads share two cores with
  // a slowed-down recorder: preemption stretches most interruptions.
  const double every_tolerance = 5e6;
#else
  EXPECT_NEAR(lengths[lengths.size() / 4], 300e3, 30e3) << "lower quartile of the interruptions";
  const double every_tolerance = 1e6;
#endif
  EXPECT_NEAR(double(irq.back().start - irq.front().start) / double(irq.size() - 1), 50e6, every_tolerance)
      << "one interruption every 50 ms";
}

TEST_F(DemoWorkload, GcSweepQuantaLengthenFrom500To1500us) {
  auto mark = intervals("gc.mark");
  auto sweep = intervals("gc.sweep");
  auto quanta = intervals("gc.quantum");
  ASSERT_FALSE(mark.empty());
  ASSERT_FALSE(sweep.empty());
  double max_sweep = 0;
  std::vector<double> mark_durations;
  size_t in_sweep = 0;
  for (const Interval& q : quanta) {
    double d = double(q.end - q.start);
    bool sweeping = std::any_of(sweep.begin(), sweep.end(),
                                [&](const Interval& s) { return q.start >= s.start && q.end <= s.end; });
    if (sweeping) {
      max_sweep = std::max(max_sweep, d);
      ++in_sweep;
    } else {
      mark_durations.push_back(d);
    }
  }
  // A 2-core machine preempts the spinning GC thread now and then, so judge
  // the typical quantum, not every one.
  ASSERT_GT(mark_durations.size(), 30u);
  std::nth_element(mark_durations.begin(), mark_durations.begin() + long(mark_durations.size() / 2),
                   mark_durations.end());
  EXPECT_NEAR(mark_durations[mark_durations.size() / 2], 500e3, 30e3) << "mark quanta are 500 us";
  EXPECT_GT(in_sweep, 30u);
  EXPECT_GT(max_sweep, 1400e3) << "the sweep bug lengthens quanta to ~1500 us";
}

// The demo's threads sleep while they wait, and the GC has a CPU of its own,
// so on two cores nothing holds it off its CPU for long: `longer(gc.quantum,
// 600us)` is the sweep bug's lengthening quanta, not the mark phases' 500 us
// ones (TuningFork 4.2; while the demo's threads spun, 3 to 47% of the mark
// quanta were over 600 us). Most recordings have none at all. At real-time
// priority one in a few hundred is stretched by a stall no thread of the
// demo can prevent (in a VM, the host takes the virtual CPU for a few
// hundred us), so up to 1% are let pass; at normal priority (not root)
// another program's busy threads can take the GC's CPU too (1 to 6% with
// builds running beside it), so up to 10%.
TEST_F(DemoWorkload, OnlySweepQuantaLastOver600us) {
  auto sweep = intervals("gc.sweep");
  auto quanta = intervals("gc.quantum");
  ASSERT_FALSE(sweep.empty());
  size_t long_sweep = 0, mark = 0;
  std::vector<int64_t> long_mark_us;
  for (const Interval& q : quanta) {
    const bool sweeping = inside(q, sweep);
    mark += !sweeping;
    if (q.end - q.start <= 600'000) continue;
    if (sweeping) ++long_sweep;
    else long_mark_us.push_back((q.end - q.start) / 1000);
  }
  ASSERT_GT(mark, 100u);
  EXPECT_GT(long_sweep, 20u) << "the sweep bug's quanta over 600 us";
  std::printf("quanta over 600 us: %zu of the sweep phases', %zu of %zu in mark phases\n", long_sweep,
              long_mark_us.size(), mark);
  if (!kInstrumented) {
    const size_t allowed = may_run_realtime() ? mark / 100 : mark / 10;
    EXPECT_LE(long_mark_us.size(), allowed) << "mark quanta over 600 us: " << ::testing::PrintToString(long_mark_us)
                                            << (may_run_realtime() ? "" : " (the GC at normal priority)");
  }
}

// The audio task sleeps between samples but starts each on the 22.05 kHz
// grid, never early (it spins the last of the wait) and now and then late
// (a late wake-up, the interrupt, a preemption): the starts on time fit a
// line against their sample numbers whose slope is the period, 45 351.47 ns
// within 0.01 %.
TEST_F(DemoWorkload, AudioStartsKeepThe22kHzGrid) {
  auto samples = intervals("audio.sample");
  ASSERT_GT(samples.size(), 20000u);
  const double period = 1e9 / 22050;
  const int64_t t0 = samples[0].start;
  // The grid's phase: the most common phase of a start in the period (1 us
  // bins), shared by the starts on time; the late ones scatter after it.
  std::vector<size_t> bins(size_t(period / 1000) + 1);
  for (const Interval& s : samples) ++bins[size_t(std::fmod(double(s.start - t0), period) / 1000)];
  const double grid = double(std::max_element(bins.begin(), bins.end()) - bins.begin()) * 1000 - 2000;
  std::vector<double> n, t;  // the starts within 5 us after their grid point
  for (const Interval& s : samples) {
    const double since = double(s.start - t0) - grid, k = std::floor(since / period);
    if (since - k * period < 5000) n.push_back(k), t.push_back(since);
  }
  ASSERT_GT(n.size(), samples.size() / 4) << "starts on the grid";
  double sn = 0, st = 0, snn = 0, snt = 0;
  const double count = double(n.size());
  for (size_t i = 0; i < n.size(); ++i) sn += n[i], st += t[i], snn += n[i] * n[i], snt += n[i] * t[i];
  const double slope = (count * snt - sn * st) / (count * snn - sn * sn);
  std::printf("audio: %zu samples, %.1f%% on the grid (within 5 us), fitted period %.3f ns\n", samples.size(),
              100.0 * count / double(samples.size()), slope);
  EXPECT_NEAR(slope, period, period * 1e-4) << "fitted sample period";
  if (!kInstrumented) {
    EXPECT_GT(count, 0.75 * double(samples.size())) << "samples starting on time";
  }
}

TEST_F(DemoWorkload, MessagesMatchAndAFewAreNeverReceived) {
  std::set<uint64_t> sent, received;
  for (const OwnedEvent* o : trace_->of_type(kMessageSend)) sent.insert(o->e.u[0]);
  for (const OwnedEvent* o : trace_->of_type(kMessageRecv)) received.insert(o->e.u[0]);
  ASSERT_GT(sent.size(), 3000u);
  for (uint64_t id : received) EXPECT_TRUE(sent.count(id)) << "received a message never sent: " << id;
  size_t orphans = sent.size() - received.size();
  EXPECT_GT(orphans, 0u) << "one in a thousand messages is never received";
  EXPECT_LT(orphans, sent.size() / 50);
  EXPECT_FALSE(trace_->of_type(kCounterInt).empty());
  EXPECT_FALSE(trace_->of_type(kLockAcquire).empty());
}

TEST_F(DemoWorkload, DumpShowsHeaderFeedletsAndEvents) {
  std::string out;
  EXPECT_EQ(run(bin("app/tinescope") + " dump " + *path_ + " --limit 5000", &out), 0);
  for (const char* want : {"format 2.0", "clock: tsc", "summary:", "\"audio\"", "\"gc\"", "\"worker.0\"",
                           "interval_begin", "message_send", "transaction", "name=\"audio.sample\""})
    EXPECT_NE(out.find(want), std::string::npos) << want << " missing from:\n" << out.substr(0, 3000);
}

TEST_F(DemoWorkload, DumpReportsDamageAndRejectsNonTraces) {
  std::string bytes = slurp(*path_);
  const std::string cut = temp_path("cut");
  write_file(cut, bytes.substr(0, bytes.size() / 2));
  std::string out;
  EXPECT_EQ(run(bin("app/tinescope") + " dump --summary " + cut, &out), 0);
  EXPECT_NE(out.find("DAMAGE at offset"), std::string::npos) << out;
  EXPECT_NE(out.find("truncated chunk"), std::string::npos) << out;
  std::string err;
  EXPECT_NE(run(bin("app/tinescope") + " dump /etc/hostname 2>&1", &err), 0);
  EXPECT_NE(err.find("/etc/hostname: not a tinescope trace"), std::string::npos) << err;
  unlink(cut.c_str());
}

// `tinescope index`, `info` and `stats --json` on the recording cut in half:
// what they say is what a reader of the same bytes finds.
TEST_F(DemoWorkload, IndexInfoAndStatsDescribeATraceCutShort) {
  const std::string bytes = slurp(*path_);
  const std::string cut = temp_path("cut-info");
  write_file(cut, bytes.substr(0, bytes.size() / 2));
  unlink((cut + ".idx").c_str());
  const Collected c = read_trace(cut, false);
  uint64_t data_events = 0, begins = 0, sends = 0;
  std::set<uint32_t> feedlets;
  for (const OwnedEvent& o : c.events) {
    if (o.e.feedlet == kMetadataFeedlet) continue;
    ++data_events, feedlets.insert(o.e.feedlet);
    begins += o.e.type == kIntervalBegin, sends += o.e.type == kMessageSend;
  }
  ASSERT_GT(data_events, 10'000u);
  // The GC's quanta as job segments, per CPU, by docs/INDEX.md's rules: a
  // job is (task, id); its start or resume on a CPU ends what ran there and
  // the same job running elsewhere; a preempt, block or complete ends it
  // where it runs, whichever CPU it names. (Counted by the CPU named, it
  // was one short now and then: the demo names sched_getcpu(), and a
  // quantum that began on cpu0 and migrated completes naming cpu1.)
  struct Job {
    uint32_t feedlet, cpu;
    uint64_t task, id;
  };
  std::map<uint32_t, uint64_t> segments;  // cpu -> segments ended
  std::vector<Job> running;
  for (const OwnedEvent& o : c.events) {
    const trace::Event& e = o.e;
    const bool start = e.type == kJobStart || e.type == kJobResume;
    const bool end = e.type == kJobPreempt || e.type == kJobBlock || e.type == kJobComplete;
    if (!start && !end) continue;
    const Job now{e.feedlet, uint32_t(e.u[2]), e.u[0], e.u[1]};
    std::erase_if(running, [&](const Job& r) {
      const bool same = r.feedlet == now.feedlet && r.task == now.task && r.id == now.id;
      const bool ends = same || (start && r.feedlet == now.feedlet && r.cpu == now.cpu);
      if (ends) ++segments[r.cpu];
      return ends;
    });
    if (start) running.push_back(now);
  }
  ASSERT_FALSE(segments.empty());

  std::string out;
  EXPECT_EQ(run(bin("app/tinescope") + " index " + cut + " 2>&1", &out), 0) << out;
  EXPECT_NE(out.find(std::to_string(data_events) + " events in"), std::string::npos) << out;
  EXPECT_NE(out.find("indexing [##############################] 100%"), std::string::npos) << out;  // the progress bar

  EXPECT_EQ(run(bin("app/tinescope") + " info " + cut, &out), 0) << out;
  char kind_line[64];  // as info prints a kind's count
  std::snprintf(kind_line, sizeof kind_line, "  %-22s %12llu", "interval_begin", (unsigned long long)begins);
  for (const std::string& want : std::vector<std::string>{
           "process   tinescope-demo (pid ", "command   ", "tinescope-demo", "recorder  tinescope recorder",
           "metadata  2\n", "  sweep_bug              on\n", "  workload               tuningfork case studies\n",
           "duration  ", "events    " + std::to_string(data_events) + " (0 dropped",
           "feedlets  " + std::to_string(feedlets.size()), " audio ", " gc ", " worker.0 ", kind_line,
           "damaged   1 ranges", "bytes: truncated chunk", "lost      0 chunk ranges"})
    EXPECT_NE(out.find(want), std::string::npos) << "\"" << want << "\" missing from:\n" << out;
  // Each CPU the GC ran on, with the name the demo gives it and its segments.
  EXPECT_NE(out.find("cpus      " + std::to_string(segments.size()) + "\n"), std::string::npos) << out;
  for (const auto& [cpu, n] : segments) {
    char line[64];
    std::snprintf(line, sizeof line, "%12llu job segments, from gc\n", (unsigned long long)n);
    const size_t at = out.find("  cpu" + std::to_string(cpu) + " ");
    ASSERT_NE(at, std::string::npos) << "cpu " << cpu << " missing from:\n" << out;
    const std::string cpu_line = out.substr(at, out.find('\n', at) - at + 1);
    EXPECT_NE(cpu_line.find(line), std::string::npos) << "\"" << line << "\" not on cpu " << cpu << "'s line:\n" << out;
  }

  EXPECT_EQ(run(bin("app/tinescope") + " stats " + cut + " --json", &out), 0) << out;
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["events"].get<uint64_t>(), data_events);
  EXPECT_EQ(j["process"], "tinescope-demo");
  EXPECT_GT(j["pid"].get<uint32_t>(), 0u);
  ASSERT_FALSE(j["command"].empty());
  EXPECT_NE(j["command"][0].get<std::string>().find("tinescope-demo"), std::string::npos);
  EXPECT_EQ(j["metadata"], (nlohmann::json{{"sweep_bug", "on"}, {"workload", "tuningfork case studies"}}));
  EXPECT_EQ(j["events_per_kind"]["interval_begin"].get<uint64_t>(), begins);
  EXPECT_EQ(j["events_per_kind"]["message_send"].get<uint64_t>(), sends);
  EXPECT_EQ(j["feedlets"].size(), feedlets.size());
  uint64_t sum = 0;
  for (const auto& f : j["feedlets"]) sum += f["events"].get<uint64_t>();
  EXPECT_EQ(sum, data_events);
  ASSERT_EQ(j["cpus"].size(), segments.size()) << j["cpus"].dump();
  for (const auto& cpu : j["cpus"]) {
    const uint32_t n = cpu["cpu"].get<uint32_t>();
    EXPECT_EQ(cpu["segments"].get<uint64_t>(), segments[n]) << cpu.dump();
    EXPECT_EQ(cpu["name"].get<std::string>(), "cpu" + std::to_string(n)) << cpu.dump();
  }
  ASSERT_EQ(j["damaged"].size(), 1u);
  EXPECT_EQ(j["damaged"][0]["offset"].get<uint64_t>() + j["damaged"][0]["length"].get<uint64_t>(), bytes.size() / 2);
  EXPECT_GT(j["duration_ns"].get<int64_t>(), 500'000'000);  // about half the 2 s recording
  // What the index is made of: its parts add up to it, and hold what the recording has.
  const nlohmann::json& parts = j["index_parts"];
  uint64_t part_sum = parts["flow_blocks"].get<uint64_t>() + parts["resume_points"].get<uint64_t>() +
                      parts["other"].get<uint64_t>();
  for (const auto& [kind, bytes] : parts["node_pages"].items()) part_sum += bytes.get<uint64_t>();
  EXPECT_EQ(part_sum, j["index_bytes"].get<uint64_t>()) << parts.dump();
  EXPECT_GT(parts["node_pages"].value("interval", uint64_t(0)), 0u) << parts.dump();
  EXPECT_GT(parts["node_pages"].value("depth", uint64_t(0)), 0u) << parts.dump();
  EXPECT_GT(parts["flow_blocks"].get<uint64_t>(), 0u) << parts.dump();  // (it sends messages)
  EXPECT_GT(parts["other"].get<uint64_t>(), 4096u) << parts.dump();  // the header page at least
  unlink(cut.c_str());
  unlink((cut + ".idx").c_str());
}

// --transactions: a second process of transactions on the GC's CPU, in a
// trace of its own on the same clock; a transaction that meets a GC quantum
// loses CPU time to it, so those are longer than the rest (TuningFork's
// figure 5).
TEST_F(DemoWorkload, TransactionsLengthenWhileTheGcRuns) {
  const std::string stem = temp_path("demo-txn");  // ".../demo-txn.tine"
  const std::string txn = stem.substr(0, stem.size() - 5) + ".txn.tine";
  std::string out;
  ASSERT_EQ(run(bin("recorder/tinescope-demo") + " --transactions --overwrite --duration 2 --workers 1 -o " + stem, &out), 0)
      << out;
  const Collected demo = read_trace(stem), t = read_trace(txn);
  const auto quanta = intervals_of(demo, "gc.quantum");
  const auto txns = intervals_of(t, "transaction");
  ASSERT_GT(quanta.size(), 30u);
  ASSERT_GT(txns.size(), 300u) << "one every 2 ms";
  // Each transaction's event says how long it took, as its interval does.
  size_t events = 0;
  for (const OwnedEvent& o : t.events)
    if (o.e.feedlet != kMetadataFeedlet && t.catalog.type_name(o.e.type) == "transaction") {
      EXPECT_GT(o.e.f(1), 0.1) << "latency_ms";
      EXPECT_EQ(t.name(o.e.u[2]), "transaction");
      ++events;
    }
  EXPECT_EQ(events, txns.size());
  std::vector<double> during, outside;
  for (const Interval& x : txns) {
    const bool meets = std::any_of(quanta.begin(), quanta.end(), [&](const Interval& q) { return q.start < x.end && x.start < q.end; });
    (meets ? during : outside).push_back(double(x.end - x.start));
  }
  ASSERT_GT(during.size(), 20u);
  ASSERT_GT(outside.size(), 100u);
  std::printf("transactions: median %.0f us during GC quanta (%zu), %.0f us outside (%zu)\n", median(during) / 1e3,
              during.size(), median(outside) / 1e3, outside.size());
  if (!kInstrumented) {
    EXPECT_GT(median(during), 1.2 * median(outside)) << "transactions during GC quanta";
  }
  unlink(stem.c_str()), unlink(txn.c_str());
}

}  // namespace
}  // namespace tinescope::test
