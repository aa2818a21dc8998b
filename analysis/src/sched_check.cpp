#include "tinescope/analysis/sched_check.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>

#include "first_n.hpp"
#include "lock_holders.hpp"
#include "merged_events.hpp"
#include "tinescope/analysis/stream_expr.hpp"

namespace tinescope::analysis {

const char* kind_name(SchedViolation::Kind k) {
  switch (k) {
    case SchedViolation::DeadlineMiss: return "deadline missed";
    case SchedViolation::ResponseOver: return "response over its bound";
    case SchedViolation::LockTaken: return "lock taken while held";
    case SchedViolation::ReleaseNotHeld: return "lock released by a non-holder";
    case SchedViolation::PriorityInversion: return "priority inversion";
    case SchedViolation::BudgetOverrun: return "budget overrun";
  }
  return "?";
}

std::string subject(const SchedViolation& v, const trace::Catalog& catalog) {
  const std::string lock = std::string(catalog.string(v.lock)) + " " + std::to_string(v.lock_id);
  if (v.kind == SchedViolation::LockTaken || v.kind == SchedViolation::ReleaseNotHeld) return lock;
  if (v.kind == SchedViolation::PriorityInversion || v.kind == SchedViolation::BudgetOverrun) {
    const auto labels = catalog.thread_labels();
    auto l = labels.find(v.feedlet);
    const std::string thread = l == labels.end() ? "lane " + std::to_string(v.feedlet) : l->second;
    return v.kind == SchedViolation::BudgetOverrun ? thread : thread + " waiting for " + lock;
  }
  std::string out = std::string(catalog.string(v.task)) + " job " + std::to_string(v.job);
  if (v.cpu != kNoCpu) {
    auto n = catalog.cpu_names.find(v.cpu);
    out += " on " + (n != catalog.cpu_names.end() ? n->second : "cpu" + std::to_string(v.cpu));
  }
  return out;
}

namespace {

struct ByTime {
  bool operator()(const SchedViolation& a, const SchedViolation& b) const {
    return std::tie(a.ts, a.kind, a.feedlet) < std::tie(b.ts, b.kind, b.feedlet);
  }
};

// Locks: who holds each (its name and id), from the threads' events in
// the trace's merged order. A thread may take a lock it holds again (a
// recursive mutex): it holds it until as many releases.
template <class Violate>
void check_locks(const index::TraceIndex& ix, const trace::Catalog& catalog, Violate&& violate, uint64_t& events_read,
                 uint64_t& locks_seen) {
  LockHolders locks;
  const auto labels = catalog.thread_labels();
  auto label = [&](uint32_t feedlet) {
    auto l = labels.find(feedlet);
    return l == labels.end() ? "lane " + std::to_string(feedlet) : l->second;
  };
  MergedEvents events(ix, {format::kLockAcquire, format::kLockRelease},
                      [](uint16_t type) { return type == format::kLockRelease ? 0 : 1; });
  SmallEvent e;
  while (events.next(e)) {
    ++events_read;
    const LockHolders::Key key{uint32_t(e.u[0]), e.u[1]};
    SchedViolation v;
    v.feedlet = e.feedlet, v.lock = uint32_t(e.u[0]), v.lock_id = e.u[1], v.ts = v.end = e.ts;
    if (e.type == format::kLockAcquire) {
      const LockHold h = locks.acquire(key, e.feedlet, e.ts);
      if (h.holder == 0 || h.holder == e.feedlet) continue;
      v.kind = SchedViolation::LockTaken;
      v.by_ns = ns_between(ix, h.since, e.ts);
      v.why = "acquired by " + label(e.feedlet) + " while " + label(h.holder) + " held it (for " +
              readable_duration(v.by_ns) + ")";
      violate(v);
    } else {
      const LockHold h = locks.release(key, e.feedlet);
      if (h.holder == e.feedlet) continue;
      v.kind = SchedViolation::ReleaseNotHeld;
      v.why = "released by " + label(e.feedlet) + (h.holder ? " while " + label(h.holder) + " held it" : ", which nobody held");
      violate(v);
    }
  }
  locks_seen = locks.seen();
}

// Budgets: every counter named "budget" (a server's, as the Grasp import
// draws it, or one a program records) that falls below zero served past
// it. Where between two samples it crossed zero is interpolated (a budget
// is consumed at a steady rate between samples); the overrun lasts to the
// next sample at or above zero (a replenish), or the lane's last.
template <class Violate>
void check_budgets(const index::TraceIndex& ix, const trace::Catalog& catalog, Violate&& violate, uint64_t& samples) {
  if (std::find(catalog.strings.begin(), catalog.strings.end(), "budget") == catalog.strings.end()) return;
  struct Budget {
    uint64_t ts = 0;
    double value = 0;
    bool seen = false;
    SchedViolation over;  // open while over.ts != 0
    double worst = 0;
  };
  std::map<uint32_t, Budget> lanes;
  std::map<uint64_t, bool> is_budget;  // name id -> its text is "budget"
  auto report = [&](uint32_t feedlet, Budget& b, uint64_t end) {
    SchedViolation& v = b.over;
    v.end = end;
    v.by_ns = ns_between(ix, v.ts, end);
    char worst[32];
    std::snprintf(worst, sizeof worst, "%.6g", -b.worst);
    v.why = "served " + std::string(worst) + " past its budget, below zero for " + readable_duration(v.by_ns);
    v.feedlet = feedlet;
    violate(std::move(v));
    b.over = SchedViolation{};
  };
  MergedEvents events(ix, {format::kCounterInt, format::kCounterFloat});
  SmallEvent e;
  while (events.next(e)) {
    auto named = is_budget.try_emplace(e.u[0], false);
    if (named.second) named.first->second = catalog.string(e.u[0]) == "budget";
    if (!named.first->second) continue;
    ++samples;
    double value = 0;
    if (e.type == format::kCounterInt) value = double(int64_t(e.u[1]));
    else std::memcpy(&value, &e.u[1], sizeof value);
    Budget& b = lanes[e.feedlet];
    if (value < 0 && b.over.ts == 0) {
      b.over.kind = SchedViolation::BudgetOverrun;
      b.over.ts = e.ts;
      if (b.seen && b.value >= 0 && e.ts > b.ts)  // crossed zero in between
        b.over.ts = b.ts + uint64_t(double(e.ts - b.ts) * (b.value / (b.value - value)));
      b.over.ts = std::max<uint64_t>(b.over.ts, 1);
      b.worst = value;
    } else if (value < 0) {
      b.worst = std::min(b.worst, value);
    } else if (b.over.ts != 0) {
      report(e.feedlet, b, e.ts);
    }
    b.ts = e.ts, b.value = value, b.seen = true;
  }
  for (auto& [feedlet, b] : lanes)
    if (b.over.ts != 0) report(feedlet, b, b.ts);
}

}  // namespace

std::vector<SchedViolation> lock_misuse(const index::TraceIndex& ix, size_t limit, uint64_t* total) {
  FirstN<SchedViolation, ByTime> found{limit, {}};
  uint64_t n = 0, events = 0, locks = 0;
  auto add = [&](SchedViolation v) { ++n, found.add(std::move(v)); };
  check_locks(ix, *ix.catalog_snapshot(), add, events, locks);
  check_priorities(ix, nullptr, add);
  found.trim();
  if (total) *total = n;
  return std::move(found.list);
}

SchedReport check_schedule(const index::TraceIndex& ix, const Rules* rules, size_t limit) {
  SchedReport rep;
  FirstN<SchedViolation, ByTime> found{limit, {}};
  auto violate = [&](SchedViolation v) {
    ++rep.per_kind[v.kind], ++rep.total;
    found.add(std::move(v));
  };
  const auto catalog = ix.catalog_snapshot();

  // Response bounds: the rules and, per task, which of them apply.
  std::vector<size_t> bounds;
  if (rules) {
    rep.per_rule.resize(rules->rules.size());
    for (size_t i = 0; i < rules->rules.size(); ++i)
      if (rules->rules[i].kind == Rule::Response) bounds.push_back(i);
  }
  std::vector<NameMatcher> bound_tasks;
  for (size_t i : bounds) bound_tasks.emplace_back(rules->rules[i].task);
  std::map<uint32_t, std::vector<size_t>> bounds_of;  // task -> its rules

  JobScan scan(ix);
  Job j;
  while (scan.next(j)) {
    ++rep.jobs;
    const auto bound_of = bounds_of.try_emplace(j.task);
    if (bound_of.second)
      for (size_t b = 0; b < bounds.size(); ++b)
        if (bound_tasks[b].matches(catalog->string(j.task))) bound_of.first->second.push_back(bounds[b]);
    SchedViolation v;
    v.task = j.task, v.job = j.id, v.cpu = j.last_cpu, v.feedlet = j.completed() ? j.completed_by : 0;
    if (j.deadline != kNoTime) {
      ++rep.with_deadline;
      if (j.missed(scan.end())) {
        v.kind = SchedViolation::DeadlineMiss;
        v.ts = j.deadline;
        v.end = j.completed() ? j.completion : scan.end();
        v.by_ns = ns_between(ix, j.deadline, v.end);
        v.why = j.completed() ? "completed " + readable_duration(v.by_ns) + " after its deadline"
                              : "not completed " + readable_duration(v.by_ns) + " after its deadline (the trace ends)";
        violate(v);
      }
    }
    for (size_t i : bound_of.first->second) {
      if (!j.has_response()) continue;
      ++rep.per_rule[i].checked;
      const int64_t ns = ns_between(ix, j.arrival, j.completion), within = rules->rules[i].within_ns;
      if (ns <= within) continue;
      ++rep.per_rule[i].violated;
      v.kind = SchedViolation::ResponseOver;
      v.ts = j.arrival, v.end = j.completion, v.rule = i;
      v.by_ns = ns - within;
      v.why = "responded in " + readable_duration(ns) + " (within " + readable_duration(within) + ", " +
              rules->file + ":" + std::to_string(rules->rules[i].line) + ")";
      violate(v);
    }
  }
  rep.counts = scan.counts();

  check_locks(ix, *catalog, violate, rep.lock_events, rep.locks);
  const PriorityScan p = check_priorities(ix, rules, violate);
  rep.prioritised_tasks = p.tasks, rep.lock_waits = p.waits;
  for (size_t i = 0; i < p.tasks_per_rule.size(); ++i)
    if (p.tasks_per_rule[i]) rep.per_rule[i].checked = p.tasks_per_rule[i];
  check_budgets(ix, *catalog, violate, rep.budget_samples);
  found.trim();
  rep.violations = std::move(found.list);
  return rep;
}

}  // namespace tinescope::analysis
