// Priority inversions (analysis/priority_inversion.cpp): the classic case
// to the tick, with levels from the trace or from a rules file; and random
// traces of jobs, locks and priority changes held to a brute force that
// replays every event from the start for each stretch of every wait.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <set>
#include <tuple>

#include "index_helpers.hpp"
#include "tinescope/analysis/sched_check.hpp"

namespace tinescope::test {
namespace {

using format::ChunkBuilder;
using namespace format;

// Strings: 1 "lock", then the tasks; feedlet f (tid f) is the thread named
// by string f + 1: 1 H, 2 M, 3 L, 4 X, 5 U; feedlet 6 the scheduler.
constexpr uint64_t kLock = 1;
const std::vector<std::string> kStrings = {"lock", "H", "M", "L", "X", "U", "sched"};
constexpr uint32_t kThreads = 5, kSched = 6;
uint64_t task_of(uint32_t feedlet) { return feedlet + 1; }

struct Ev {
  uint64_t ts = 0;
  uint32_t feedlet = 0;
  uint16_t type = 0;
  uint64_t a = 0, b = 0, c = 0;
};

std::string trace_of(const std::vector<Ev>& evs) {
  TraceBytes trace = named_trace(kStrings, {2, 3, 4, 5, 6, 7});
  std::map<uint32_t, ChunkBuilder> lanes;
  for (const Ev& e : evs) {
    ChunkBuilder& cb = lanes[e.feedlet];
    cb.feedlet = e.feedlet;
    uint8_t* p = cb.begin(e.type, e.ts);
    p = ChunkBuilder::put_u64(p, e.a);
    if (e.type == kTaskPriority) {
      p = ChunkBuilder::put_i64(p, int64_t(e.b));
    } else {
      p = ChunkBuilder::put_u64(p, e.b);
      if (e.type >= kJobArrive && e.type <= kJobComplete) p = ChunkBuilder::put_u64(p, e.c);
    }
    cb.end(p);
    if (cb.full()) trace.flush(cb);
  }
  for (auto& [f, cb] : lanes)
    if (!cb.empty()) trace.flush(cb);
  return trace.out;
}

analysis::Rules rules_of(const std::string& text) {
  analysis::Rules r;
  std::string error;
  EXPECT_TRUE(analysis::parse_rules(text, "prio.rules", r, error)) << error;
  return r;
}

std::vector<analysis::SchedViolation> inversions(const index::TraceIndex& ix, const analysis::Rules* rules,
                                                 analysis::PriorityScan* scan = nullptr) {
  std::vector<analysis::SchedViolation> out;
  const analysis::PriorityScan s = analysis::check_priorities(ix, rules, [&](analysis::SchedViolation v) { out.push_back(v); });
  if (scan) *scan = s;
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return std::tie(a.ts, a.feedlet) < std::tie(b.ts, b.feedlet); });
  return out;
}

// L holds the lock; H waits for it; M preempts L: inverted from M's start
// to its completion, not before (L ran) and not after (L ran again).
std::vector<Ev> classic(bool with_levels) {
  std::vector<Ev> e;
  auto job = [&](uint64_t ts, uint16_t type, uint32_t thread, uint64_t job) { e.push_back({ts, kSched, type, task_of(thread), job, 0}); };
  auto lock = [&](uint64_t ts, uint32_t thread, uint16_t type) { e.push_back({ts, thread, type, kLock, 9}); };
  if (with_levels)
    for (auto [thread, level] : {std::pair{1u, 30}, {2u, 20}, {3u, 10}}) e.push_back({10, kSched, kTaskPriority, task_of(thread), uint64_t(int64_t(level))});
  job(50, kJobStart, 3, 7);
  lock(100, 3, kLockAcquire);
  job(200, kJobPreempt, 3, 7), job(200, kJobStart, 1, 1);
  lock(210, 1, kLockContend);
  job(210, kJobBlock, 1, 1), job(210, kJobResume, 3, 7);
  job(300, kJobPreempt, 3, 7), job(300, kJobStart, 2, 1);
  job(800, kJobComplete, 2, 1), job(800, kJobResume, 3, 7);
  lock(850, 3, kLockRelease), lock(850, 1, kLockAcquire);
  job(850, kJobPreempt, 3, 7), job(850, kJobResume, 1, 1);
  // X (more urgent than H) preempts L while H waits again: no inversion.
  lock(900, 1, kLockRelease);
  job(900, kJobComplete, 1, 1), job(900, kJobResume, 3, 7);
  lock(910, 3, kLockAcquire);
  job(920, kJobPreempt, 3, 7), job(920, kJobStart, 1, 2);
  lock(930, 1, kLockContend);
  job(930, kJobBlock, 1, 2), job(930, kJobStart, 4, 1);
  job(990, kJobComplete, 4, 1), job(990, kJobResume, 3, 7);
  lock(995, 3, kLockRelease), lock(995, 1, kLockAcquire);
  std::stable_sort(e.begin(), e.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts; });
  return e;
}

TEST(PriorityInversion, TheClassicCaseIsFoundToTheTick) {
  IndexedTrace t("prio-classic.tine", trace_of(classic(true)));
  ASSERT_TRUE(t.ix);
  const analysis::Rules x = rules_of("priority task=X level=40\n");
  analysis::PriorityScan scan;
  const auto found = inversions(*t.ix, &x, &scan);
  EXPECT_EQ(scan.waits, 2u);
  EXPECT_EQ(scan.tasks, 4u) << "H, M, L from the trace, X from the rules";
  ASSERT_EQ(found.size(), 1u);
  const analysis::SchedViolation& v = found[0];
  EXPECT_EQ(v.kind, analysis::SchedViolation::PriorityInversion);
  EXPECT_EQ(v.ts, 300u);
  EXPECT_EQ(v.end, 800u) << "where M completed and L ran again";
  EXPECT_EQ(v.by_ns, 500);
  EXPECT_EQ(v.feedlet, 1u);
  EXPECT_EQ(t.ix->catalog().string(v.task), "H");
  EXPECT_EQ(t.ix->catalog().string(v.holder), "L");
  EXPECT_EQ(t.ix->catalog().string(v.middle), "M");
  EXPECT_EQ(v.why, "H (level 30) waited 640ns while L (level 10), which held it, was kept from running by M (level 20) for 500ns in all");
  EXPECT_EQ(analysis::subject(v, t.ix->catalog()), "H waiting for lock 9");

  // check_schedule counts it with the others; with X unranked, X is no
  // middle task either (a task with no level is none).
  const analysis::SchedReport r = analysis::check_schedule(*t.ix, nullptr);
  EXPECT_EQ(r.per_kind[analysis::SchedViolation::PriorityInversion], 1u);
  EXPECT_EQ(r.prioritised_tasks, 3u);
  // lock_misuse (what the viewer marks) has it too.
  const auto marked = analysis::lock_misuse(*t.ix, 10);
  ASSERT_EQ(marked.size(), 1u);
  EXPECT_EQ(marked[0].kind, analysis::SchedViolation::PriorityInversion);
}

TEST(PriorityInversion, LevelsComeFromARulesFileWhereTheTraceHasNone) {
  IndexedTrace t("prio-rules.tine", trace_of(classic(false)));
  ASSERT_TRUE(t.ix);
  analysis::PriorityScan scan;
  EXPECT_TRUE(inversions(*t.ix, nullptr, &scan).empty()) << "no level: nothing to invert";
  EXPECT_EQ(scan.tasks, 0u);
  const analysis::Rules r = rules_of("priority task=H level=3\npriority task=/[MX]/ level=2\npriority task=* level=1\n");
  const auto found = inversions(*t.ix, &r, &scan);
  EXPECT_EQ(scan.tasks, 4u);
  // X at 2 now is a middle task too: both waits are inverted.
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].ts, 300u);
  EXPECT_EQ(found[0].by_ns, 500);
  EXPECT_EQ(found[1].ts, 930u);
  EXPECT_EQ(found[1].end, 990u);
  EXPECT_EQ(found[1].by_ns, 60);
  EXPECT_EQ(t.ix->catalog().string(found[1].middle), "X");
}

// ------------------------------------------------------------ brute force

struct Model {
  std::map<uint64_t, int32_t> levels;                         // task -> from events
  std::map<std::pair<uint64_t, uint64_t>, int> jobs;          // (task, job) -> 0 running, 1 ready, 2 blocked
  std::map<uint64_t, std::pair<uint32_t, int>> held;          // lock id -> (holder, depth)
};

Model replay(const std::vector<Ev>& evs, size_t upto) {
  Model m;
  for (size_t i = 0; i < upto; ++i) {
    const Ev& e = evs[i];
    switch (e.type) {
      case kTaskPriority: m.levels[e.a] = int32_t(int64_t(e.b)); break;
      case kJobStart: case kJobResume: m.jobs[{e.a, e.b}] = 0; break;
      case kJobPreempt: m.jobs[{e.a, e.b}] = 1; break;
      case kJobBlock: m.jobs[{e.a, e.b}] = 2; break;
      case kJobComplete: m.jobs.erase({e.a, e.b}); break;
      case kLockAcquire: {
        auto& h = m.held[e.b];
        if (h.first == e.feedlet && h.second > 0) ++h.second;
        else h = {e.feedlet, 1};
        break;
      }
      case kLockRelease: {
        auto h = m.held.find(e.b);
        if (h != m.held.end() && h->second.first == e.feedlet && --h->second.second == 0) m.held.erase(h);
        break;
      }
    }
  }
  return m;
}

struct Expected {
  uint64_t first = 0, end = 0, inverted = 0;
  uint32_t feedlet = 0;
};

std::vector<Expected> brute_force(const std::vector<Ev>& evs, const std::map<uint64_t, int32_t>& rule_levels, uint64_t trace_end) {
  auto level = [&](const Model& m, uint64_t task) -> std::optional<int32_t> {
    if (auto l = m.levels.find(task); l != m.levels.end()) return l->second;
    if (auto l = rule_levels.find(task); l != rule_levels.end()) return l->second;
    return std::nullopt;
  };
  auto state = [&](const Model& m, uint32_t feedlet) {
    const uint64_t task = task_of(feedlet);
    if (auto own = m.jobs.find({task, feedlet}); own != m.jobs.end()) return own->second;
    int s = 2;
    for (const auto& [k, st] : m.jobs)
      if (k.first == task) s = std::min(s, st);
    return s;
  };
  std::vector<Expected> out;
  for (size_t c = 0; c < evs.size(); ++c) {
    if (evs[c].type != kLockContend) continue;
    const uint32_t f = evs[c].feedlet;
    const uint64_t id = evs[c].b;
    size_t a = c + 1;  // its acquire, or the thread's next contend
    while (a < evs.size() && !(evs[a].feedlet == f && (evs[a].type == kLockContend || (evs[a].type == kLockAcquire && evs[a].b == id)))) ++a;
    const uint64_t end = a < evs.size() ? evs[a].ts : trace_end;
    Expected x{UINT64_MAX, 0, 0, f};
    for (size_t i = c; i < a; ++i) {
      if (i + 1 < evs.size() && evs[i + 1].ts == evs[i].ts) continue;  // (the state after a tick's last event holds)
      const uint64_t t0 = evs[i].ts, t1 = i + 1 < evs.size() ? evs[i + 1].ts : trace_end;
      const Model m = replay(evs, i + 1);
      auto h = m.held.find(id);
      if (h == m.held.end() || h->second.first == f) continue;
      const auto hi = level(m, task_of(f)), lo = level(m, task_of(h->second.first));
      if (!hi || !lo || *lo >= *hi || state(m, h->second.first) != 1) continue;
      bool middle = false;
      for (const auto& [k, st] : m.jobs) {
        if (st != 0 || k.first == task_of(f) || k.first == task_of(h->second.first)) continue;
        const auto l = level(m, k.first);
        middle |= l && *l > *lo && *l < *hi;
      }
      if (!middle) continue;
      x.first = std::min(x.first, t0);
      x.inverted += std::min(t1, end) - t0;
      x.end = std::min(t1, end);
    }
    if (x.inverted) out.push_back(x);
  }
  std::sort(out.begin(), out.end(), [](const Expected& a, const Expected& b) { return std::tie(a.first, a.feedlet) < std::tie(b.first, b.feedlet); });
  return out;
}

// A random run: one job at a time per task (L's job id is its thread's id,
// as the kernel's), threads that take, retake, wait for and release two
// locks (some waits end in a misuse, some never), levels that change.
std::vector<Ev> random_run(std::mt19937_64& rng) {
  std::vector<Ev> e;
  uint64_t ts = 1;
  // A tick again, now and then, for a thread with no event at it yet:
  // threads' events at one tick come in the merged order's ranks.
  std::set<uint32_t> at_tick;
  auto tick = [&](uint32_t feedlet) {
    if (rng() % 4 == 0 && at_tick.insert(feedlet).second) return ts;
    at_tick = {feedlet};
    return ts += 1 + rng() % 20;
  };
  std::map<uint32_t, std::pair<uint64_t, int>> job;  // thread -> (job id, state: -1 none, 0 run, 1 ready, 2 blocked)
  std::map<uint32_t, int> holds[3];                   // lock -> thread -> depth
  std::map<uint32_t, uint64_t> waiting;               // thread -> lock it waits for
  uint64_t next_job = 100;
  for (uint32_t t = 1; t <= kThreads; ++t) job[t] = {0, -1};
  for (uint32_t t = 1; t <= 4; ++t)
    if (rng() % 4) e.push_back({tick(kSched), kSched, kTaskPriority, task_of(t), uint64_t(int64_t(rng() % 5))});
  const int n = 150 + int(rng() % 250);
  for (int i = 0; i < n; ++i) {
    const uint32_t t = 1 + uint32_t(rng() % kThreads);
    const int what = int(rng() % 10);
    if (what < 5) {
      if (t == 5) continue;  // U: a thread no scheduling event names (its level from a rule)
      auto& [id, st] = job[t];
      uint16_t type;
      if (st == -1) type = kJobStart, id = t == 3 ? 3 : next_job++, st = 0;
      else if (st == 0) type = rng() % 5 == 0 ? kJobComplete : rng() % 2 ? kJobPreempt : kJobBlock, st = type == kJobComplete ? -1 : type == kJobPreempt ? 1 : 2;
      else type = kJobResume, st = 0;
      e.push_back({tick(kSched), kSched, type, task_of(t), id, uint64_t(rng() % 2)});
    } else if (what < 9) {
      const uint64_t lock = 1 + rng() % 2;
      if (waiting.count(t)) {
        const uint64_t l = waiting[t];
        e.push_back({tick(t), t, kLockAcquire, kLock, l}), waiting.erase(t);
        for (auto& [th, d] : holds[l]) d = 0;
        holds[l][t] = 1;
      } else if (holds[lock][t] > 0 && rng() % 3) {
        e.push_back({tick(t), t, kLockRelease, kLock, lock}), --holds[lock][t];
      } else if (holds[lock][t] > 0) {
        e.push_back({tick(t), t, kLockAcquire, kLock, lock}), ++holds[lock][t];
      } else {
        e.push_back({tick(t), t, kLockContend, kLock, lock}), waiting[t] = lock;
      }
    } else if (rng() % 3 == 0) {
      e.push_back({tick(kSched), kSched, kTaskPriority, task_of(1 + uint32_t(rng() % 4)), uint64_t(int64_t(rng() % 5))});
    } else if (waiting.count(t) && rng() % 2) {
      e.push_back({tick(t), t, kLockContend, kLock, 1 + rng() % 2}), waiting[t] = e.back().b;  // gave up, waits anew
    }
  }
  return e;
}

TEST(PriorityInversion, RandomRunsMatchABruteForce) {
  std::mt19937_64 rng(20261206);
  const analysis::Rules rules = rules_of("priority task=X level=2\npriority task=L level=1\npriority task=U level=4\n");
  const std::map<uint64_t, int32_t> rule_levels = {{task_of(4), 2}, {task_of(3), 1}, {task_of(5), 4}};
  uint64_t found_any = 0, found_by_u = 0;
  for (int run = 0; run < 60; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    std::vector<Ev> evs = random_run(rng);
    // The merged order: time, then rank (a priority or release first, a
    // start, resume or acquire last), then thread (one event a thread a tick).
    auto rank = [](uint16_t type) {
      return type == kTaskPriority || type == kLockRelease                       ? 0
             : type == kJobStart || type == kJobResume || type == kLockAcquire ? 2
                                                                               : 1;
    };
    std::stable_sort(evs.begin(), evs.end(), [&](const Ev& a, const Ev& b) {
      return std::make_tuple(a.ts, rank(a.type), a.feedlet) < std::make_tuple(b.ts, rank(b.type), b.feedlet);
    });
    IndexedTrace t("prio-random.tine", trace_of(evs));
    ASSERT_TRUE(t.ix);
    const auto want = brute_force(evs, rule_levels, t.ix->last_ts());
    const auto got = inversions(*t.ix, &rules);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].ts, want[i].first) << i;
      EXPECT_EQ(got[i].end, want[i].end) << i;
      EXPECT_EQ(uint64_t(got[i].by_ns), want[i].inverted) << i;
      EXPECT_EQ(got[i].feedlet, want[i].feedlet) << i;
    }
    found_any += got.size();
    for (const auto& v : got) found_by_u += v.feedlet == 5;
  }
  EXPECT_GT(found_any, 20u) << "the runs must hold inversions to compare";
  EXPECT_GT(found_by_u, 0u) << "U waits too, its level from its rule alone";
}

}  // namespace
}  // namespace tinescope::test
