// The demo workload reproduces the seed's case studies with real timing, and
// `tinescope dump` shows them.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

using namespace format;

struct Interval {
  int64_t start, end;
};

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
  // Completed intervals of `name`, in ns, matched by nesting per feedlet.
  static std::vector<Interval> intervals(const std::string& name) {
    const Collected& c = *trace_;
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

}  // namespace
}  // namespace tinescope::test
