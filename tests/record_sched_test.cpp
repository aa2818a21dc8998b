// `tinescope record --sched`: a real program (sched_sleeper.cpp) recorded
// with the kernel's scheduling of its threads (tracefs, as root), on its
// own clock: its 10 ms sleep is the kernel's 10 ms Sleeping, its spins are
// Running, and its threads' time on the CPUs is there as job segments.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "index_helpers.hpp"
#include "tinescope/analysis/derived_stream.hpp"
#include "tinescope/analysis/jobs.hpp"
#include "tinescope/import/kernel_sched.hpp"

namespace tinescope::test {
namespace {

std::vector<analysis::Record> stream(const index::TraceIndex& ix, const std::string& text) {
  analysis::Expr e;
  std::string error;
  EXPECT_TRUE(analysis::parse_stream(text, e, error)) << error;
  auto s = analysis::DerivedStream::evaluate(ix, e, error);
  EXPECT_TRUE(s) << error;
  if (!s) return {};
  return {s->records().begin(), s->records().end()};
}

// The kernel's scheduling could be recorded here (root, tracefs): else the
// reason record gave, for the skip.
bool can_record_sched(const std::string& out, std::string& why) {
  if (out.find("not recorded") == std::string::npos) return true;
  why = out;
  return false;
}

TEST(RecordSched, AProgramsSleepIsTheKernelsSleepingOnItsClock) {
  const std::string path = temp_path("sleeper");
  remove_trace(path);
  std::string out;
  ASSERT_EQ(run(bin("app/tinescope") + " record --sched -o " + path + " -- " + bin("tests/sched_sleeper") + " 2>&1", &out),
            0)
      << out;
  std::string why;
  if (!can_record_sched(out, why)) GTEST_SKIP() << why;
  EXPECT_NE(out.find("0 events lost"), std::string::npos) << out;
  EXPECT_TRUE(out.find("(x86-tsc clock)") != std::string::npos || out.find("(mono clock)") != std::string::npos) << out;
  std::string error;
  auto ix = index::TraceIndex::build(path, error);
  ASSERT_TRUE(ix) << error;

  // The program's own sleep, and the kernel's account of that thread.
  const auto sleep = stream(*ix, "intervals(name=\"sleep\", thread=\"sleeper.main\")");
  ASSERT_EQ(sleep.size(), 1u);
  const auto sleeping = stream(*ix, "intervals(name=\"Sleeping\", thread=\"sleeper.main states\")");
  const analysis::Record* in_sleep = nullptr;
  for (const analysis::Record& r : sleeping)
    if (r.start >= sleep[0].start && r.end <= sleep[0].end) in_sleep = &r;
  ASSERT_NE(in_sleep, nullptr) << "no Sleeping inside the program's sleep scope";
  const int64_t ns = ix->to_ns(in_sleep->end) - ix->to_ns(in_sleep->start);
  EXPECT_GE(ns, 9'800'000);
  EXPECT_LE(ns, 15'000'000);
  const auto state = [&](const char* name) {
    return stream(*ix, std::string("intervals(name=\"") + name + "\", thread=\"sleeper.main states\")");
  };
  const auto running = state("Running"), preempted = state("Runnable (preempted)"), woken = state("Runnable (woken)");
  auto overlap = [](const std::vector<analysis::Record>& rs, uint64_t t0, uint64_t t1) {
    uint64_t n = 0;
    for (const analysis::Record& r : rs)
      if (r.end > t0 && r.start < t1) n += std::min(r.end, t1) - std::max(r.start, t0);
    return n;
  };
  // On one clock: between entering the scope and falling asleep the thread
  // ran (or waited for a CPU: the machine may be busy) for under 1 ms of
  // CPU, a usleep call; woken, it was Runnable (woken) until it ran, then
  // ran under 2 ms before leaving the scope.
  const uint64_t into = in_sleep->start - sleep[0].start, out_of = sleep[0].end - in_sleep->end;
  EXPECT_EQ(overlap(running, sleep[0].start, in_sleep->start) + overlap(preempted, sleep[0].start, in_sleep->start), into);
  EXPECT_LE(ix->to_ns(overlap(running, sleep[0].start, in_sleep->start)) - ix->to_ns(0), 1'000'000);
  EXPECT_EQ(overlap(woken, in_sleep->end, sleep[0].end) + overlap(running, in_sleep->end, sleep[0].end) +
                overlap(preempted, in_sleep->end, sleep[0].end),
            out_of);
  EXPECT_LE(ix->to_ns(overlap(running, in_sleep->end, sleep[0].end)) - ix->to_ns(0), 2'000'000);
  bool after = false;
  for (const analysis::Record& r : woken) after |= r.start == in_sleep->end;
  EXPECT_TRUE(after);
  // Its spins never slept: the kernel has it Running, or Runnable where
  // another thread took its CPU, for all of each; a spin counts its own
  // CPU time, so Running for about its 5 ms.
  const auto spins = stream(*ix, "intervals(name=\"spin\", thread=\"sleeper.main\")");
  ASSERT_EQ(spins.size(), 2u);
  for (const analysis::Record& s : spins) {
    const uint64_t ran = overlap(running, s.start, s.end), ready = overlap(preempted, s.start, s.end);
    EXPECT_GE(double(ran + ready), 0.95 * double(s.end - s.start)) << "a spin the kernel had asleep";
    EXPECT_GE(ix->to_ns(ran) - ix->to_ns(0), 4'500'000) << "a spin the kernel did not run";
  }

  // The CPUs' rows: the threads' time on the CPUs as job segments, a job a
  // thread; the worker spun 20 ms.
  std::map<std::string, uint64_t> executed;
  analysis::JobScan scan(*ix);
  for (analysis::Job j; scan.next(j);) executed[std::string(ix->catalog().string(j.task))] += j.executed;
  ASSERT_TRUE(executed.count("sleeper.worker")) << "no segment of the worker on a CPU";
  EXPECT_GE(ix->to_ns(executed["sleeper.worker"]) - ix->to_ns(0), 15'000'000);
  EXPECT_TRUE(executed.count("sleeper.main"));
  remove_trace(path);
}

TEST(RecordSched, ItRefusesToOverwriteAndSaysWhyAProgramDidNotRun) {
  const std::string path = temp_path("exists");
  std::ofstream(path) << "a user's file";
  std::string out;
  EXPECT_EQ(run(bin("app/tinescope") + " record -o " + path + " -- true 2>&1", &out), 2);
  EXPECT_NE(out.find("exists: record writes a new trace, never over one"), std::string::npos) << out;
  std::ifstream in(path);
  std::string kept;
  std::getline(in, kept);
  EXPECT_EQ(kept, "a user's file");
  ::unlink(path.c_str());

  const std::string none = temp_path("none");
  remove_trace(none);
  EXPECT_EQ(run(bin("app/tinescope") + " record -o " + none + " -- /no/such/program 2>&1", &out), 2);
  EXPECT_NE(out.find("cannot run /no/such/program: No such file or directory"), std::string::npos) << out;
  struct stat st;
  EXPECT_NE(::stat(none.c_str(), &st), 0);
  // A program that does not link the recorder: said so; its exit status kept.
  EXPECT_EQ(run(bin("app/tinescope") + " record -o " + none + " -- sh -c 'exit 3' 2>&1", &out), 3);
  EXPECT_NE(out.find("wrote no trace: is it linked with the recorder"), std::string::npos) << out;
}

// With --sched, a program that records nothing itself still gets a trace:
// the kernel's scheduling of it alone, which opens and draws.
TEST(RecordSched, AProgramWithoutTheRecorderGetsItsSchedulingAlone) {
  const std::string path = temp_path("kernel_only");
  remove_trace(path);
  std::string out;
  ASSERT_EQ(run(bin("app/tinescope") + " record --sched -o " + path + " -- sh -c 'sleep 0.02; echo hi > /dev/null' 2>&1", &out),
            0)
      << out;
  std::string why;
  if (!can_record_sched(out, why)) GTEST_SKIP() << why;
  EXPECT_NE(out.find("recorded nothing of its own"), std::string::npos) << out;
  std::string error;
  auto ix = index::TraceIndex::build(path, error);
  ASSERT_TRUE(ix) << error;
  const auto sleeping = stream(*ix, "intervals(name=\"Sleeping\")");
  uint64_t longest = 0;
  for (const analysis::Record& r : sleeping) longest = std::max<uint64_t>(longest, ix->to_ns(r.end) - ix->to_ns(r.start));
  EXPECT_GE(longest, 15'000'000u) << "sh waits for sleep 0.02";
  remove_trace(path);
}

// A real priority inversion (sched_inversion.cpp: SCHED_FIFO threads on
// one CPU, a plain mutex): the kernel's switches give each thread its
// priority, the program's ts_lock events the wait and the holder, and
// `check` finds inv.H waiting while inv.M keeps inv.L from running, for
// about inv.M's 15 ms of work.
TEST(RecordSched, APriorityInversionOfARealProgramIsFound) {
  const std::string path = temp_path("inversion");
  remove_trace(path);
  std::string out;
  const int rc = run(bin("app/tinescope") + " record --sched -o " + path + " -- " + bin("tests/sched_inversion") + " 2>&1", &out);
  if (rc == 4) GTEST_SKIP() << "SCHED_FIFO or CPU pinning refused here";
  ASSERT_EQ(rc, 0) << out;
  std::string why;
  if (!can_record_sched(out, why)) GTEST_SKIP() << why;
  std::string report;
  EXPECT_EQ(run(bin("app/tinescope") + " check --json " + path, &report), 1) << report;
  const auto j = nlohmann::json::parse(report, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << report;
  const auto& sched = j["schedule"];
  EXPECT_EQ(sched["per_kind"]["priority inversion"], 1) << report;
  EXPECT_GE(sched["prioritised_tasks"].get<int>(), 4) << "inv.main, H, M and L from the kernel's switches";
  const nlohmann::json* inversion = nullptr;
  for (const auto& v : sched["violations"])
    if (v["kind"] == "priority inversion") inversion = &v;
  ASSERT_NE(inversion, nullptr) << report;
  EXPECT_EQ((*inversion)["task"], "inv.H");
  EXPECT_EQ((*inversion)["holder"], "inv.L");
  EXPECT_EQ((*inversion)["middle"], "inv.M");
  EXPECT_EQ((*inversion)["lock"], "inv.mutex");
  // inv.M works 15 ms of CPU time, all of it while inv.H waits.
  EXPECT_GE((*inversion)["by_ns"].get<int64_t>(), 14'000'000) << report;
  EXPECT_LE((*inversion)["by_ns"].get<int64_t>(), 40'000'000) << report;
  EXPECT_NE((*inversion)["why"].get<std::string>().find("inv.L (level 50)"), std::string::npos)
      << "SCHED_FIFO 10 is level 50: " << report;
  remove_trace(path);
}

// The kernel's events appended to a program's trace (no tracefs needed):
// the program's names, lanes and metadata stay; ours continue after them
// (a name it has is reused), CPU lanes carry the job segments and the
// drops, a lane a thread its states, a migration an arrow; a damaged
// trace is refused and left as it was.
TEST(KernelSched, AppendedEventsContinueTheProgramsTrace) {
  using import::KernelSched;
  TraceBytes trace = named_trace({"main-thread", "Running", "work"}, {1});  // feedlet 1: tid 1
  format::ChunkBuilder cb;
  cb.feedlet = 1;
  put_named(cb, format::kIntervalBegin, 500, 3);
  put_named(cb, format::kIntervalEnd, 3500, 3);
  trace.flush(cb);
  const std::string path = temp_path("append");
  remove_trace(path);
  write_file(path, trace.out);
  auto sw = [](uint32_t cpu, uint64_t ts, int32_t prev, int64_t state, int32_t next, const char* prev_comm,
               const char* next_comm) {
    KernelSched k;
    k.kind = KernelSched::Switch, k.cpu = cpu, k.ts = ts, k.pid = prev, k.prev_state = state, k.next_pid = next;
    k.comm = prev_comm, k.next_comm = next_comm;
    return k;
  };
  std::vector<KernelSched> events;
  events.push_back(sw(0, 1000, 0, 0, 1, "swapper/0", "prog"));
  KernelSched wake;
  wake.kind = KernelSched::Wakeup, wake.cpu = 0, wake.ts = 1500, wake.pid = 2, wake.comm = "helper";
  events.push_back(wake);
  events.push_back(sw(0, 2000, 1, 1, 2, "prog", "helper"));  // prog sleeps (S), helper runs
  KernelSched move;
  move.kind = KernelSched::Migrate, move.cpu = 0, move.ts = 2500, move.pid = 2, move.comm = "helper";
  move.orig_cpu = 0, move.dest_cpu = 1;
  events.push_back(move);
  events.push_back(sw(0, 2500, 2, 0, 0, "helper", "swapper/0"));  // preempted (R) for the move
  events.push_back(sw(1, 2600, 0, 0, 2, "swapper/1", "helper"));
  events.push_back(sw(1, 3000, 2, 1, 0, "helper", "swapper/1"));
  const std::vector<import::LostEvents> lost{{1, 2600, 5}};
  import::AppendResult r;
  std::string error;
  ASSERT_TRUE(import::append_kernel_sched(path, events, lost, 0, r, error)) << error;
  EXPECT_EQ(r.switches, 5u);
  EXPECT_EQ(r.cpus, 2u);
  EXPECT_EQ(r.threads, 2u);
  EXPECT_EQ(r.lost, 5u);

  auto ix = index::TraceIndex::build(path, error);
  ASSERT_TRUE(ix) << error;
  EXPECT_TRUE(ix->damage().empty());
  EXPECT_TRUE(ix->losses().empty()) << "the metadata chunks' sequence goes on";
  const trace::Catalog& cat = ix->catalog();
  EXPECT_EQ(std::count(cat.strings.begin(), cat.strings.end(), "Running"), 1) << "its name reused";
  std::map<std::string, index::FeedletSummary> lanes;
  for (const index::FeedletSummary& f : ix->feedlets()) lanes[f.name] = f;
  ASSERT_TRUE(lanes.count("main-thread"));
  EXPECT_EQ(lanes["main-thread"].events, 2u) << "the program's own events, untouched";
  ASSERT_TRUE(lanes.count("cpu 0") && lanes.count("cpu 1"));
  EXPECT_GT(lanes["cpu 0"].id, 1u);
  EXPECT_EQ(lanes["cpu 1"].dropped, 5u) << "the kernel's losses, where they were";
  ASSERT_TRUE(lanes.count("main-thread states")) << "tid 1: the program's name for it";
  ASSERT_TRUE(lanes.count("helper-2 states")) << "a thread it did not name: COMM-TID";
  const auto running = stream(*ix, "intervals(name=\"Running\", thread=\"main-thread states\")");
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].start, 1000u);
  EXPECT_EQ(running[0].end, 2000u);
  const auto woken = stream(*ix, "intervals(name=\"Runnable (woken)\", thread=\"helper-2 states\")");
  ASSERT_EQ(woken.size(), 1u);
  EXPECT_EQ(woken[0].start, 1500u);
  EXPECT_EQ(woken[0].end, 2000u);
  // The migration: an arrow from cpu 0 to cpu 1, on the channel "migration".
  const auto flows = ix->flows(0, UINT64_MAX);
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_TRUE(flows[0].matched());
  EXPECT_EQ(flows[0].src, lanes["cpu 0"].id);
  EXPECT_EQ(flows[0].dst, lanes["cpu 1"].id);
  EXPECT_EQ(cat.channel_name(flows[0].channel), "migration");
  EXPECT_NE(flows[0].id >> 56, 0u) << "apart from the program's message ids";
  // The helper's job: two segments, on CPU 0 then CPU 1 (a migration).
  analysis::JobScan scan(*ix);
  std::map<std::string, analysis::Job> jobs;
  for (analysis::Job j; scan.next(j);) jobs[std::string(cat.string(j.task))] = j;
  ASSERT_TRUE(jobs.count("helper-2"));
  EXPECT_EQ(jobs["helper-2"].executed, 500u + 400u);
  EXPECT_EQ(jobs["helper-2"].migrations, 1u);
  EXPECT_EQ(jobs["helper-2"].preemptions, 1u);
  ix.reset();
  remove_trace(path);

  // A trace whose header is damaged: refused, its bytes left as they were.
  std::string bytes = trace.out;
  bytes[20] ^= 0x55;
  write_file(path, bytes);
  EXPECT_FALSE(import::append_kernel_sched(path, events, lost, 0, r, error));
  EXPECT_NE(error.find("header is damaged"), std::string::npos) << error;
  std::ifstream in(path, std::ios::binary);
  const std::string after{std::istreambuf_iterator<char>(in), {}};
  EXPECT_EQ(after, bytes);
  remove_trace(path);
}

// A trace.dat that trace-cmd made (here `trace-cmd extract` of a tracefs
// instance of the test's own: `trace-cmd record` cannot run where
// /proc/sys/kernel/ftrace_enabled is read-only) imports with exactly the
// switches of trace-cmd's own text report.
TEST(TraceDat, ImportsWithTheSwitchesOfItsTextReport) {
  const std::string tracing = "/sys/kernel/tracing";
  const std::string name = "tinescope-dat-" + std::to_string(::getpid()), inst = tracing + "/instances/" + name;
  if (run("command -v trace-cmd > /dev/null") != 0) GTEST_SKIP() << "no trace-cmd";
  if (::mkdir(inst.c_str(), 0755) != 0) GTEST_SKIP() << inst << ": " << std::strerror(errno) << " (tracefs as root)";
  auto put = [&](const std::string& file, const std::string& text) { std::ofstream(inst + "/" + file) << text; };
  for (const char* ev : {"sched_switch", "sched_wakeup", "sched_migrate_task", "sched_process_fork"})
    put(std::string("events/sched/") + ev + "/enable", "1");
  put("tracing_on", "1");
  run("sh -c 'for i in 1 2 3 4 5; do sleep 0.005; done'");
  put("tracing_on", "0");
  const std::string dat = scratch_dir() + "/sched.dat", out = temp_path("sched_dat");
  remove_trace(out);
  std::string text;
  const int extracted = run("trace-cmd extract -B " + name + " -o " + dat + " 2>&1", &text);
  ::rmdir(inst.c_str());  // (extract removes it)
  ASSERT_EQ(extracted, 0) << text;
  ASSERT_EQ(run("trace-cmd report -R -t -i " + dat + " 2>/dev/null", &text), 0);

  // The report's switches: CPU, time in ns, previous and next task.
  struct Switch {
    uint32_t cpu;
    uint64_t ts;
    int64_t prev, next;
    bool operator<(const Switch& o) const { return std::tie(ts, cpu, prev, next) < std::tie(o.ts, o.cpu, o.prev, o.next); }
    bool operator==(const Switch& o) const = default;
  };
  std::vector<Switch> want;
  std::multiset<std::pair<int64_t, std::string>> forks;  // (child_pid, child_comm) of each sched_process_fork
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (const size_t fork = line.find(": sched_process_fork:"); fork != std::string::npos) {
      auto value = [&](const std::string& key) {
        const size_t k = line.find(key, fork) + key.size();
        return line.substr(k, line.find(' ', k) - k);
      };
      forks.emplace(std::stoll(value(" child_pid=")), value(" child_comm="));
    }
    const size_t at = line.find(": sched_switch:");
    if (at == std::string::npos) continue;
    const size_t open = line.rfind('[', at), close = line.find(']', open);
    const size_t ts_at = line.rfind(' ', at) + 1, dot = line.find('.', ts_at);
    Switch w;
    w.cpu = uint32_t(std::stoul(line.substr(open + 1, close - open - 1)));
    w.ts = std::stoull(line.substr(ts_at, dot - ts_at)) * 1'000'000'000ull + std::stoull(line.substr(dot + 1, at - dot - 1));
    auto field = [&](const std::string& key) {
      const size_t k = line.find(key, at) + key.size();
      return std::stoll(line.substr(k, line.find(' ', k) - k));
    };
    w.prev = field("prev_pid="), w.next = field("next_pid=");
    want.push_back(w);
  }
  ASSERT_GT(want.size(), 10u) << text;

  ASSERT_EQ(run(bin("app/tinescope") + " import " + dat + " -o " + out + " 2>&1", &text), 0) << text;
  std::string error;
  auto ix = index::TraceIndex::build(out, error);
  ASSERT_TRUE(ix) << error;
  // The imported CPUs' job events at each switch: an end of the previous
  // task's segment and a start of the next's (idle, pid 0, has none).
  std::map<std::pair<uint32_t, uint64_t>, std::pair<int64_t, int64_t>> at;  // (cpu, ts) -> (ended, started)
  for (const index::FeedletSummary& f : ix->feedlets()) {
    if (f.name.rfind("cpu ", 0) != 0) continue;
    ASSERT_TRUE(ix->decode_events(f.id, 0, UINT64_MAX, [&](const trace::Event& e) {
      if (e.type < format::kJobStart || e.type > format::kJobComplete) return;
      auto& slot = at.try_emplace({uint32_t(e.u[2]), e.ts}, 0, 0).first->second;
      (e.type == format::kJobStart || e.type == format::kJobResume ? slot.second : slot.first) = int64_t(e.u[1]);
    }, error)) << error;
  }
  std::vector<Switch> got;
  for (const auto& [key, tids] : at) got.push_back(Switch{key.first, key.second, tids.first, tids.second});
  std::vector<Switch> expected;
  for (const Switch& w : want)
    if (w.prev > 0 || w.next > 0) expected.push_back(Switch{w.cpu, w.ts, std::max<int64_t>(w.prev, 0), std::max<int64_t>(w.next, 0)});
  std::sort(got.begin(), got.end()), std::sort(expected.begin(), expected.end());
  EXPECT_EQ(got, expected);

  // Every other event kept whole: each fork an instant on its CPU's lane,
  // its fields as arguments (".sched_process_fork"), as the report gives them.
  ASSERT_GE(forks.size(), 5u) << "sh forks each sleep";
  std::multiset<std::pair<int64_t, std::string>> imported;
  uint64_t instants = 0;
  for (const index::FeedletSummary& f : ix->feedlets()) {
    ASSERT_TRUE(ix->decode_events(f.id, 0, UINT64_MAX, [&](const trace::Event& e) {
      if (e.type == format::kInstant && ix->catalog().string(e.u[0]) == "sched_process_fork") ++instants;
      const format::EventTypeDef* d = ix->catalog().schema.find(e.type);
      if (e.type < format::kFirstUserType || !d || d->name != ".sched_process_fork") return;
      int64_t pid = -1;
      std::string comm;
      for (size_t k = 0; k < d->fields.size(); ++k) {
        if (d->fields[k].name == "child_pid") pid = e.i(k);
        if (d->fields[k].name == "child_comm") comm = std::string(e.bytes[k]);
      }
      imported.emplace(pid, comm);
    }, error)) << error;
  }
  EXPECT_EQ(imported, forks);
  EXPECT_EQ(instants, forks.size());
  remove_trace(out);
}

}  // namespace
}  // namespace tinescope::test
