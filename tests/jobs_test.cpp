// Jobs (analysis/jobs.hpp) and the scheduling checks (sched_check.hpp),
// held to the truth of a toy global-EDF scheduler (edf_sim.hpp) that
// recorded them, on its scenario and on random task sets; and what does
// not fit a job's course, counted.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "../analysis/src/merged_events.hpp"
#include "edf_sim.hpp"
#include "index_helpers.hpp"
#include "tinescope/analysis/derived_stream.hpp"
#include "tinescope/analysis/jobs.hpp"
#include "tinescope/analysis/locks.hpp"
#include "tinescope/analysis/sched_check.hpp"

namespace tinescope::test {
namespace {

using format::ChunkBuilder;
using json = nlohmann::json;

std::map<std::pair<std::string, uint64_t>, analysis::Job> scan_all(const index::TraceIndex& ix,
                                                                   analysis::JobCounts* counts = nullptr) {
  std::map<std::pair<std::string, uint64_t>, analysis::Job> out;
  analysis::JobScan scan(ix);
  analysis::Job j;
  while (scan.next(j)) {
    const bool fresh = out.emplace(std::make_pair(std::string(ix.catalog().string(j.task)), j.id), j).second;
    EXPECT_TRUE(fresh) << "a job given twice";
  }
  if (counts) *counts = scan.counts();
  return out;
}

// Every job as the simulator ran it: times to the ns, preemptions,
// migrations, deadline; and nothing that did not fit.
void expect_truth(const EdfSim& sim, const index::TraceIndex& ix) {
  analysis::JobCounts counts;
  const auto got = scan_all(ix, &counts);
  ASSERT_EQ(got.size(), sim.jobs.size());
  for (const SimJob& t : sim.jobs) {
    auto it = got.find({sim.tasks[t.task].name, t.id});
    ASSERT_NE(it, got.end()) << sim.tasks[t.task].name << " job " << t.id;
    const analysis::Job& j = it->second;
    SCOPED_TRACE(sim.tasks[t.task].name + " job " + std::to_string(t.id));
    EXPECT_EQ(j.arrival, t.arrival);
    EXPECT_EQ(j.completion, t.completion);
    EXPECT_EQ(j.deadline, t.deadline);
    EXPECT_EQ(j.response(), t.response());
    EXPECT_EQ(j.executed, t.executed);
    EXPECT_EQ(j.preemptions, t.preemptions);
    EXPECT_EQ(j.migrations, t.migrations);
    EXPECT_EQ(j.last_cpu, t.last_cpu);
    EXPECT_EQ(j.missed(ix.last_ts()), t.missed());
    EXPECT_EQ(j.waiting(), t.response() - t.executed);
    EXPECT_FALSE(j.cut);
  }
  EXPECT_EQ(counts.jobs, sim.jobs.size());
  EXPECT_EQ(counts.completed, sim.jobs.size());
  EXPECT_EQ(counts.no_arrival + counts.arrived_again + counts.start_while_running + counts.cpu_taken +
                counts.end_not_running,
            0u);
  EXPECT_TRUE(counts.unreadable.empty());
}

TEST(Jobs, TheToySchedulersJobsAreTheOnesItRan) {
  EdfSim sim = toy_edf(true);
  IndexedTrace t("edf.tine", sim.run());
  ASSERT_TRUE(t.ix);
  // The scenario holds what the issue asks of it.
  EXPECT_GE(sim.preemptions, 5u);
  EXPECT_GE(sim.migrations, 3u);
  EXPECT_EQ(std::count_if(sim.jobs.begin(), sim.jobs.end(), [](const SimJob& j) { return j.missed(); }), 1);
  EXPECT_TRUE(analysis::JobScan::any(*t.ix));
  expect_truth(sim, *t.ix);
  // Its migrations, each from the end of a segment on one CPU to the start
  // of the next on another, as many as the scheduler made.
  const auto marks = analysis::job_marks(*t.ix);
  ASSERT_TRUE(marks);
  EXPECT_EQ(marks->jobs.size(), sim.jobs.size());
  EXPECT_EQ(marks->migrations.size(), sim.migrations);
  for (const analysis::Migration& m : marks->migrations) {
    EXPECT_NE(m.from_cpu, m.to_cpu);
    EXPECT_LE(m.left, m.arrived);
  }
  size_t missed = 0;
  for (const analysis::JobMark& j : marks->jobs) missed += j.missed;
  EXPECT_EQ(missed, 1u);
  // Its preemptions, each where a running job left its CPU; and each job's
  // record as the details panel gives it, found by a time inside it.
  EXPECT_EQ(marks->interruptions.size(), sim.preemptions);
  std::map<std::pair<std::string, uint64_t>, uint32_t> preempted;
  for (const analysis::Interruption& i : marks->interruptions) {
    EXPECT_FALSE(i.blocked);
    ++preempted[{std::string(t.ix->catalog().string(i.task)), i.job}];
  }
  EXPECT_TRUE(std::is_sorted(marks->interruptions.begin(), marks->interruptions.end(),
                             [](const auto& a, const auto& b) { return a.at < b.at; }));
  for (const SimJob& s : sim.jobs) {
    const std::string& task = sim.tasks[s.task].name;
    SCOPED_TRACE(task + " job " + std::to_string(s.id));
    EXPECT_EQ((preempted[{task, s.id}]), s.preemptions);
    const auto& strings = t.ix->catalog().strings;
    const uint32_t id = uint32_t(std::find(strings.begin(), strings.end(), task) - strings.begin());
    const analysis::JobMark* j = marks->job_at(id, s.arrival + (s.completion - s.arrival) / 2);
    ASSERT_NE(j, nullptr);
    EXPECT_EQ(j->id, s.id);
    EXPECT_EQ(j->start, s.arrival);
    EXPECT_EQ(j->end, s.completion);
    EXPECT_EQ(j->executed, s.executed);
    EXPECT_EQ(j->waiting, s.response() - s.executed);
    EXPECT_EQ(j->preemptions, s.preemptions);
    EXPECT_EQ(j->migrations, s.migrations);
    EXPECT_EQ(j->last_cpu, s.last_cpu);
    EXPECT_TRUE(j->arrived && j->completed);
  }
}

TEST(Jobs, RandomSchedulesGiveTheirOwnJobs) {
  std::mt19937_64 rng(test_seed(53));
  for (int round = 0; round < 25; ++round) {
    EdfSim sim;
    sim.cpus = 1 + uint32_t(rng() % 6);
    const int tasks = 1 + int(rng() % 9);
    for (int k = 0; k < tasks; ++k) {
      SimTask task;
      task.name = "task" + std::to_string(k);
      task.period_us = 10 + rng() % 200;
      task.wcet_us = 1 + rng() % (task.period_us * 3 / 2);  // some overload: misses
      task.deadline_us = 1 + rng() % (2 * task.period_us);
      task.offset_us = rng() % 50;
      task.jobs = 1 + uint32_t(rng() % 30);
      sim.tasks.push_back(task);
    }
    IndexedTrace t("edf_random.tine", sim.run());
    ASSERT_TRUE(t.ix);
    SCOPED_TRACE("round " + std::to_string(round));
    expect_truth(sim, *t.ix);
  }
}

// Events lost or out of course: each counted where it happens, no job made up.
TEST(Jobs, EventsThatDoNotFitAreCountedNotMadeUp) {
  TraceBytes trace = named_trace({"A", "B"});
  ChunkBuilder cb;
  cb.feedlet = 1;
  using namespace format;
  put_job(cb, kJobArrive, 100, 1, 1, 0);
  put_job(cb, kJobStart, 200, 1, 1, 0);
  put_job(cb, kJobStart, 300, 2, 7, 0);     // B 7 on CPU 0 while A 1 runs there: A's segment ends (cpu_taken)
  put_job(cb, kJobPreempt, 400, 1, 1, 0);   // A 1 no longer runs (end_not_running)
  put_job(cb, kJobResume, 500, 1, 1, 1);    // A 1 on CPU 1: a migration
  put_job(cb, kJobResume, 600, 1, 1, 1);    // again (start_while_running)
  put_job(cb, kJobComplete, 700, 1, 1, 1);  // A 1: arrived 100, ran 200-300, 500-700
  put_job(cb, kJobComplete, 800, 2, 7, 0);  // B 7: no arrival
  {  // a deadline of B 7 after it completed: counted, no job made of it
    uint8_t* p = cb.begin(kJobDeadline, 850);
    p = ChunkBuilder::put_u64(p, 2), p = ChunkBuilder::put_u64(p, 7);
    cb.end(ChunkBuilder::put_u64(p, 860));
  }
  put_job(cb, kJobBlock, 870, 2, 9, 0);     // a block of a job never seen: counted, no job made of it
  put_job(cb, kJobArrive, 900, 1, 2, 0);
  put_job(cb, kJobArrive, 950, 1, 2, 0);    // A 2 arrives again (arrived_again): the first left incomplete
  put_job(cb, kJobStart, 1000, 1, 2, 2);    // ... and still running when the trace ends at 1100
  put_named(cb, kInstant, 1100, 1);
  trace.flush(cb);
  IndexedTrace t("odd_jobs.tine", trace.out);
  ASSERT_TRUE(t.ix);
  analysis::JobCounts c;
  analysis::JobScan scan(*t.ix);
  std::vector<analysis::Job> jobs;
  for (analysis::Job j; scan.next(j);) jobs.push_back(j);
  c = scan.counts();
  EXPECT_EQ(c.cpu_taken, 1u);
  EXPECT_EQ(c.end_not_running, 2u);
  EXPECT_EQ(c.after_completion, 1u);
  EXPECT_EQ(c.start_while_running, 1u);
  EXPECT_EQ(c.no_arrival, 1u);
  EXPECT_EQ(c.arrived_again, 1u);
  ASSERT_EQ(jobs.size(), 4u);  // in completion order, then the rest as they appeared
  EXPECT_EQ(jobs[0].id, 1u);
  EXPECT_EQ(jobs[0].response(), 600u);
  EXPECT_EQ(jobs[0].executed, 100u + 200u);
  EXPECT_EQ(jobs[0].migrations, 1u);
  EXPECT_TRUE(jobs[0].cut);
  EXPECT_EQ(jobs[1].id, 7u);
  EXPECT_FALSE(jobs[1].has_response());
  EXPECT_EQ(jobs[1].executed, 500u);
  EXPECT_EQ(jobs[2].id, 2u);  // the first arrival of A 2, never run
  EXPECT_FALSE(jobs[2].completed());
  EXPECT_EQ(jobs[2].arrival, 900u);
  EXPECT_EQ(jobs[3].arrival, 950u);
  EXPECT_EQ(jobs[3].executed, 100u);  // to the trace's end
  EXPECT_EQ(jobs[3].last_event, 1100u);
  // As a stream: every job, those not completed running to the trace's end
  // (after every completion: a stream's keys only grow).
  std::string error;
  analysis::Expr e;
  ASSERT_TRUE(analysis::parse_stream("jobs()", e, error));
  auto s = analysis::DerivedStream::evaluate(*t.ix, e, error);
  ASSERT_TRUE(s) << error;
  ASSERT_EQ(s->size(), 4u);
  EXPECT_EQ(s->records()[2].start, 900u);
  EXPECT_EQ(s->records()[2].end, 1100u);
  EXPECT_TRUE(s->records()[2].truncated());
}

// Jobs with no arrival recorded, and late events of jobs completed before:
// one of the last 4096 jobs completed is counted (after_completion), one
// completed longer ago starts a job of its own. Against the ring's rule,
// with the same job arriving again and completed twice close together.
TEST(Jobs, ALateEventIsTheLast4096CompletionsOrANewJob) {
  std::mt19937_64 rng(test_seed(5302));
  TraceBytes trace = named_trace({"A"});
  ChunkBuilder cb;
  cb.feedlet = 1;
  std::vector<uint64_t> done;  // ids in completion order
  std::set<uint64_t> revived;  // completed ids a late event made a job again
  uint64_t want_late = 0, want_jobs = 0, t = 1000;
  for (uint64_t i = 0; i < 12000; ++i) {
    // Now and then a job completed a moment before runs and completes again.
    const uint64_t id = i % 97 == 5 && !done.empty() ? done[done.size() - 1 - rng() % std::min<size_t>(done.size(), 50)] : 1'000'000 + i;
    if (revived.count(id)) continue;
    if (id < 1'000'000 + i) put_job(cb, format::kJobArrive, t - 1, 1, id, 0);  // (without it, a late event)
    put_job(cb, format::kJobStart, t, 1, id, 0);
    put_job(cb, format::kJobComplete, t + 5, 1, id, 0);
    t += 10, ++want_jobs;
    done.push_back(id);
    if (cb.full()) trace.flush(cb);
    if (rng() % 10) continue;
    // A late preempt-less event: a deadline of a job completed d jobs ago.
    const uint64_t d = rng() % 6000;
    if (d >= done.size()) continue;
    const uint64_t late = done[done.size() - 1 - d];
    // In the ring: one of the last 4096 completions (a job completed twice
    // is there while either is).
    const bool in_ring = std::find(done.end() - std::min<size_t>(done.size(), 4096), done.end(), late) != done.end();
    if (!in_ring && (revived.count(late) || std::count(done.begin(), done.end(), late) > 1)) continue;
    uint8_t* p = cb.begin(format::kJobDeadline, t);
    p = ChunkBuilder::put_u64(p, 1), p = ChunkBuilder::put_u64(p, late);
    cb.end(ChunkBuilder::put_u64(p, t + 100));
    t += 10;
    if (in_ring) ++want_late;
    else revived.insert(late), ++want_jobs;  // a job of its own, never completed
  }
  trace.flush(cb);
  IndexedTrace tr("late_jobs.tine", trace.out);
  ASSERT_TRUE(tr.ix);
  analysis::JobScan scan(*tr.ix);
  uint64_t jobs = 0;
  for (analysis::Job j; scan.next(j);) ++jobs;
  EXPECT_EQ(scan.counts().after_completion, want_late);
  EXPECT_EQ(jobs, want_jobs);
  EXPECT_GT(want_late, 100u);
  EXPECT_GT(revived.size(), 20u);
}

// A job completed twice (it arrived again) stays among the recent while its
// later completion is, though its first has left the last 4096: whether
// the table of recent jobs is kept from the start (a job with no arrival
// asks first) or made from the ring when a late event first asks.
TEST(Jobs, AJobCompletedTwiceStaysRecentWhileItsLaterCompletionIs) {
  for (bool asked_early : {false, true}) {
    SCOPED_TRACE(asked_early ? "kept from the start" : "made when first asked");
    TraceBytes trace = named_trace({"A"});
    ChunkBuilder cb;
    cb.feedlet = 1;
    uint64_t t = 1000, jobs = 0;
    auto run = [&](uint64_t id, bool arrives) {
      if (arrives) put_job(cb, format::kJobArrive, t, 1, id, 0);
      put_job(cb, format::kJobStart, t + 1, 1, id, 0);
      put_job(cb, format::kJobComplete, t + 2, 1, id, 0);
      t += 10, ++jobs;
      if (cb.full()) trace.flush(cb);
    };
    auto late_deadline = [&](uint64_t id) {
      uint8_t* p = cb.begin(format::kJobDeadline, t);
      p = ChunkBuilder::put_u64(p, 1), p = ChunkBuilder::put_u64(p, id);
      cb.end(ChunkBuilder::put_u64(p, t + 5));
      t += 10;
    };
    if (asked_early) run(1, false);  // no arrival: its start asks
    run(777, true);
    for (uint64_t j = 0; j < 100; ++j) run(10000 + j, true);
    run(777, true);  // again, 101 completions later
    for (uint64_t j = 0; j < 4096 - 50; ++j) run(20000 + j, true);
    late_deadline(777);    // its second completion is among the last 4096, its first is not
    late_deadline(10000);  // completed 4147 jobs ago: a job of its own
    trace.flush(cb);
    IndexedTrace tr(asked_early ? "twice_early.tine" : "twice_late.tine", trace.out);
    ASSERT_TRUE(tr.ix);
    analysis::JobScan scan(*tr.ix);
    uint64_t got = 0;
    for (analysis::Job j; scan.next(j);) ++got;
    EXPECT_EQ(scan.counts().after_completion, 1u);
    EXPECT_EQ(got, jobs + 1);
  }
}

// Thousands of jobs open at once, their ids alike in their low or high
// bits, arriving and completing in random orders on several threads: each
// one's own response, against the times written (the scan's table of
// followed jobs grows, and loses jobs from the middle of its runs).
TEST(Jobs, ManyJobsOpenAtOnceAreEachTheirOwn) {
  std::mt19937_64 rng(test_seed(5301));
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    struct Truth {
      uint64_t task, id, arrival, completion;
    };
    std::vector<Truth> truth;
    const size_t n = 6000 + rng() % 6000;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t id = i % 3 == 0 ? i << 40 : i % 3 == 1 ? i : (i << 20) | 7;  // alike low bits, high bits, both
      const uint64_t arrival = 1000 + rng() % 1000000, completion = arrival + 1 + rng() % 200000;
      truth.push_back({1 + i % 2, id, arrival, completion});
    }
    // One thread's events in time order each; arrivals and completions on
    // threads of their own by job.
    std::vector<std::vector<std::tuple<uint64_t, uint16_t, size_t>>> per(4);
    for (size_t i = 0; i < n; ++i) {
      per[i % 2].push_back({truth[i].arrival, format::kJobArrive, i});
      per[2 + (i / 2) % 2].push_back({truth[i].completion, format::kJobComplete, i});
    }
    TraceBytes trace = named_trace({"A", "B"});
    for (size_t f = 0; f < per.size(); ++f) {
      std::sort(per[f].begin(), per[f].end());
      ChunkBuilder cb;
      cb.feedlet = uint32_t(f + 1);
      for (const auto& [ts, type, i] : per[f]) {
        put_job(cb, type, ts, truth[i].task, truth[i].id, 0);
        if (cb.full()) trace.flush(cb);
      }
      trace.flush(cb);
    }
    IndexedTrace t("many_jobs.tine", trace.out);
    ASSERT_TRUE(t.ix);
    analysis::JobCounts counts;
    const auto got = scan_all(*t.ix, &counts);
    ASSERT_EQ(got.size(), n);
    for (const Truth& j : truth) {
      auto it = got.find({j.task == 1 ? "A" : "B", j.id});
      ASSERT_NE(it, got.end()) << j.id;
      EXPECT_EQ(it->second.arrival, j.arrival);
      EXPECT_EQ(it->second.completion, j.completion);
    }
    EXPECT_EQ(counts.completed, n);
    EXPECT_EQ(counts.no_arrival + counts.arrived_again + counts.after_completion, 0u);
  }
}

// jobs() and response() as streams, and the per-task table, against the truth.
// The merged events every job scan reads: each feedlet's events once, in
// time order, in one window or several; and past the last, null at every
// later call (it gave a window's stale events again, or read an empty one).
TEST(MergedEvents, EveryEventOnceInTimeOrderThenNullForGood) {
  for (const uint64_t n : {uint64_t(1000), uint64_t(1) << 20 | 4321}) {  // one window; two (2^19 events each)
    TraceBytes trace("merged");
    std::vector<ChunkBuilder> lanes(3);
    for (uint32_t l = 0; l < 3; ++l) lanes[l].feedlet = l + 1;
    for (uint64_t i = 0; i < n; ++i) {
      ChunkBuilder& cb = lanes[(i * 7 + i / 3) % 3];
      put_job(cb, format::kJobStart, 1000 + i * 3, 1, i, 0);  // every time its own
      if (cb.full()) trace.flush(cb);
    }
    for (ChunkBuilder& cb : lanes) trace.flush(cb);
    IndexedTrace t("merged.tine", trace.out);
    ASSERT_TRUE(t.ix);
    analysis::MergedEvents events(*t.ix, {format::kJobStart});
    uint64_t i = 0;
    for (const analysis::SmallEvent* e; (e = events.next()); ++i)
      ASSERT_TRUE(i < n && e->u[1] == i && e->ts == 1000 + i * 3) << i << " of " << n;
    EXPECT_EQ(i, n);
    for (int again = 0; again < 3; ++again) EXPECT_EQ(events.next(), nullptr) << n;
  }
}

TEST(Jobs, StreamsAndPerTaskStatisticsAreTheJobs) {
  EdfSim sim = toy_edf(true);
  IndexedTrace t("edf_streams.tine", sim.run());
  ASSERT_TRUE(t.ix);
  std::string error;
  analysis::Expr e;
  ASSERT_TRUE(analysis::parse_stream("jobs(task=\"T3\")", e, error)) << error;
  EXPECT_EQ(analysis::format_stream(e), "jobs(task=\"T3\")");
  auto jobs = analysis::DerivedStream::evaluate(*t.ix, e, error);
  ASSERT_TRUE(jobs) << error;
  std::vector<std::pair<uint64_t, uint64_t>> want, got;
  for (const SimJob& j : sim.jobs)
    if (sim.tasks[j.task].name == "T3") want.emplace_back(j.arrival, j.completion);
  for (const analysis::Record& r : jobs->records()) got.emplace_back(r.start, r.end);
  std::sort(want.begin(), want.end()), std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);

  ASSERT_TRUE(analysis::parse_stream("response(task=\"T*\", value>100000)", e, error)) << error;
  auto slow = analysis::DerivedStream::evaluate(*t.ix, e, error);
  ASSERT_TRUE(slow) << error;
  std::vector<std::pair<uint64_t, double>> want_slow, got_slow;
  for (const SimJob& j : sim.jobs)
    if (j.response() > 100000) want_slow.emplace_back(j.completion, double(j.response()));
  for (const analysis::Record& r : slow->records()) got_slow.emplace_back(r.end, r.value);
  std::sort(want_slow.begin(), want_slow.end()), std::sort(got_slow.begin(), got_slow.end());
  EXPECT_EQ(got_slow, want_slow);
  EXPECT_FALSE(want_slow.empty());

  ASSERT_TRUE(analysis::parse_stream("intervals(task=\"T1\")", e, error));
  EXPECT_FALSE(analysis::DerivedStream::evaluate(*t.ix, e, error));
  EXPECT_NE(error.find("task= is for jobs() and response()"), std::string::npos) << error;

  const std::vector<analysis::TaskStats> stats = analysis::task_stats(*t.ix);
  ASSERT_EQ(stats.size(), sim.tasks.size());
  for (const analysis::TaskStats& s : stats) {
    SCOPED_TRACE(s.task);
    uint64_t n = 0, missed = 0, preempt = 0, migrate = 0, longest = 0, total = 0;
    for (const SimJob& j : sim.jobs) {
      if (sim.tasks[j.task].name != s.task) continue;
      ++n, missed += j.missed(), preempt += j.preemptions, migrate += j.migrations, total += j.response();
      longest = std::max(longest, j.response());
    }
    EXPECT_EQ(s.jobs, n);
    EXPECT_EQ(s.completed, n);
    EXPECT_EQ(s.with_deadline, n);
    EXPECT_EQ(s.missed, missed);
    EXPECT_EQ(s.preemptions, preempt);
    EXPECT_EQ(s.migrations, migrate);
    EXPECT_EQ(s.response.max(), longest);
    EXPECT_EQ(s.response.total(), total);
    EXPECT_EQ(s.longest.response(), longest);
  }
}

TEST(SchedCheck, LockMisuseIsFound) {
  TraceBytes trace = named_trace({"m", "a", "b"}, {2, 3});
  ChunkBuilder a, b;
  a.feedlet = 1, b.feedlet = 2;
  auto lock = [](ChunkBuilder& cb, uint16_t type, uint64_t ts, uint64_t id) {
    uint8_t* p = cb.begin(type, ts);
    p = ChunkBuilder::put_u64(p, 1);
    p = ChunkBuilder::put_u64(p, id);
    cb.end(p);
  };
  using namespace format;
  lock(a, kLockAcquire, 1000, 5);
  lock(a, kLockAcquire, 1500, 5);  // again by its holder: a recursive mutex, no misuse
  lock(a, kLockRelease, 1600, 5);
  lock(b, kLockContend, 2000, 5);
  lock(b, kLockAcquire, 3000, 5);  // while a holds it
  lock(a, kLockRelease, 4000, 5);  // a no longer holds it (b took it)
  lock(b, kLockRelease, 5000, 5);
  lock(a, kLockRelease, 6000, 6);  // never acquired
  lock(a, kLockAcquire, 7000, 5);  // b released at 7000 and a acquired at 7000: not taken while held
  lock(b, kLockAcquire, 6900, 5);
  trace.flush(a);
  b.feedlet = 2;
  lock(b, kLockRelease, 7000, 5);
  trace.flush(b);
  IndexedTrace t("locks.tine", trace.out);
  ASSERT_TRUE(t.ix);
  const analysis::SchedReport r = analysis::check_schedule(*t.ix, nullptr);
  EXPECT_EQ(r.locks, 2u);
  EXPECT_EQ(r.per_kind[analysis::SchedViolation::LockTaken], 1u);
  EXPECT_EQ(r.per_kind[analysis::SchedViolation::ReleaseNotHeld], 2u);
  ASSERT_EQ(r.violations.size(), 3u);
  EXPECT_EQ(r.violations[0].ts, 3000u);
  EXPECT_EQ(r.violations[0].why, "acquired by b while a held it (for 2us)");
  EXPECT_EQ(r.violations[1].ts, 4000u);
  EXPECT_EQ(r.violations[1].why, "released by a while b held it");
  EXPECT_EQ(r.violations[2].why, "released by a, which nobody held");

  // Per lock: b waited 1 us (contend 2000, acquire 3000) and held it 2 us,
  // then 0.1 us; a's first hold was taken from it (unmatched), its last
  // is held at the end.
  const std::vector<analysis::LockStats> locks = analysis::lock_stats(*t.ix);
  ASSERT_EQ(locks.size(), 2u);
  const analysis::LockStats& m5 = locks[0];
  EXPECT_EQ(m5.name, "m");
  EXPECT_EQ(m5.id, 5u);
  EXPECT_EQ(m5.acquires, 4u);
  EXPECT_EQ(m5.contended, 1u);
  EXPECT_EQ(m5.wait.max(), 1000u);
  EXPECT_EQ(m5.longest_wait_at, 3000u);
  EXPECT_EQ(m5.hold.count(), 2u);
  EXPECT_EQ(m5.hold.max(), 2000u);
  EXPECT_EQ(m5.hold.min(), 100u);
  EXPECT_EQ(m5.threads, 2u);
  EXPECT_EQ(m5.unmatched, 2u);
  EXPECT_EQ(m5.held_at_end, 1u);
  EXPECT_EQ(locks[1].id, 6u);
  EXPECT_EQ(locks[1].unmatched, 1u);
  EXPECT_EQ(locks[1].acquires, 0u);
}

// `check` on the toy scheduler: the missed deadline found, exit 1; the run
// without the overload passes; a response bound is held to every job.
TEST(SchedCheck, TheCommandFindsTheMissedDeadline) {
  EdfSim bad_sim = toy_edf(true), good_sim = toy_edf(false);
  IndexedTrace bad("edf_bad.tine", bad_sim.run()), good("edf_good.tine", good_sim.run());
  ASSERT_TRUE(bad.ix && good.ix);
  const std::string cli = bin("app/tinescope");
  std::string out;
  EXPECT_EQ(run(cli + " check " + bad.path + " --json 2>&1", &out), 1) << out;
  json j = json::parse(out);
  const json& s = j["schedule"];
  EXPECT_EQ(s["jobs"], bad_sim.jobs.size());
  EXPECT_EQ(s["per_kind"]["deadline missed"], 1);
  ASSERT_EQ(s["violations"].size(), 1u);
  const SimJob& missed = *std::find_if(bad_sim.jobs.begin(), bad_sim.jobs.end(), [](const SimJob& j) { return j.missed(); });
  EXPECT_EQ(s["violations"][0]["task"], "T5");
  EXPECT_EQ(s["violations"][0]["job"], missed.id);
  EXPECT_EQ(s["violations"][0]["cpu"], missed.last_cpu);
  EXPECT_EQ(s["violations"][0]["at_ns"], int64_t(missed.deadline));  // the trace starts at 0
  EXPECT_EQ(s["violations"][0]["by_ns"], int64_t(missed.completion - missed.deadline));
  EXPECT_EQ(run(cli + " check " + bad.path + " 2>&1", &out), 1);
  EXPECT_NE(out.find("deadline missed: T5 job 0 on cpu"), std::string::npos) << out;
  EXPECT_NE(out.find("FAILED: 1 violations"), std::string::npos) << out;
  EXPECT_EQ(run(cli + " check " + good.path + " 2>&1", &out), 0) << out;
  EXPECT_NE(out.find("passed: 0 violations in 0 messages and " + std::to_string(good_sim.jobs.size()) + " jobs"),
            std::string::npos)
      << out;

  // A bound on T3's response (its median): the jobs over it, each with its rule.
  std::vector<uint64_t> t3;
  for (const SimJob& sj : bad_sim.jobs)
    if (bad_sim.tasks[sj.task].name == "T3") t3.push_back(sj.response());
  std::sort(t3.begin(), t3.end());
  const uint64_t bound = t3[t3.size() / 2];
  const size_t over = size_t(std::count_if(t3.begin(), t3.end(), [&](uint64_t r) { return r > bound; }));
  EXPECT_GT(over, 0u);
  const std::string rules = temp_path("edf.rules");
  std::ofstream(rules) << "response task=T3 within=" << bound << "ns\nresponse task=\"nothing*\" within=1s\n";
  EXPECT_EQ(run(cli + " check " + bad.path + " --rules " + rules + " --json 2>&1", &out), 1) << out;
  j = json::parse(out);
  EXPECT_EQ(j["schedule"]["per_kind"]["response over its bound"], over);
  EXPECT_EQ(j["per_rule"][0]["checked"], 5);
  EXPECT_EQ(j["per_rule"][0]["violated"], over);
  EXPECT_EQ(j["per_rule"][1]["checked"], 0);
  EXPECT_EQ(run(cli + " check " + bad.path + " --rules " + rules + " 2>&1", &out), 1);
  EXPECT_NE(out.find("(it applies to no job: is its task right?)"), std::string::npos) << out;

  // stats --by-task and find --longest over response times.
  EXPECT_EQ(run(cli + " stats " + bad.path + " --by-task --json 2>&1", &out), 0) << out;
  j = json::parse(out);
  ASSERT_EQ(j["tasks"].size(), bad_sim.tasks.size());
  EXPECT_EQ(j["tasks"][4]["task"], "T5");
  EXPECT_EQ(j["tasks"][4]["missed"], 1);
  EXPECT_EQ(j["tasks"][4]["most_late"]["late_ns"], int64_t(missed.completion - missed.deadline));
  EXPECT_EQ(run(cli + " stats " + bad.path + " --by-task 2>&1", &out), 0) << out;
  EXPECT_NE(out.find("resp mean us"), std::string::npos) << out;
  EXPECT_EQ(run(cli + " find " + bad.path + " --longest 2 --stream 'jobs(task=\"T2\")' 2>&1", &out), 0) << out;
  std::vector<uint64_t> t2;
  for (const SimJob& sj : bad_sim.jobs)
    if (bad_sim.tasks[sj.task].name == "T2") t2.push_back(sj.response());
  std::sort(t2.rbegin(), t2.rend());
  EXPECT_NE(out.find(std::to_string(t2[0] / 1000)), std::string::npos) << out;
  ::unlink(rules.c_str());
}

}  // namespace
}  // namespace tinescope::test
