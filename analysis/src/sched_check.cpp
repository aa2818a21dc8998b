#include "tinescope/analysis/sched_check.hpp"

#include <map>
#include <tuple>

#include "first_n.hpp"
#include "merged_events.hpp"
#include "tinescope/analysis/stream_expr.hpp"

namespace tinescope::analysis {

const char* kind_name(SchedViolation::Kind k) {
  switch (k) {
    case SchedViolation::DeadlineMiss: return "deadline missed";
    case SchedViolation::ResponseOver: return "response over its bound";
    case SchedViolation::LockTaken: return "lock taken while held";
    case SchedViolation::ReleaseNotHeld: return "lock released by a non-holder";
  }
  return "?";
}

std::string subject(const SchedViolation& v, const trace::Catalog& catalog) {
  if (v.kind == SchedViolation::LockTaken || v.kind == SchedViolation::ReleaseNotHeld)
    return std::string(catalog.string(v.lock)) + " " + std::to_string(v.lock_id);
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
  struct Held {
    uint32_t holder = 0;  // feedlet; 0: free
    uint32_t depth = 0;
    uint64_t since = 0;
  };
  std::map<std::pair<uint32_t, uint64_t>, Held> locks;
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
    Held& h = locks[{uint32_t(e.u[0]), e.u[1]}];
    SchedViolation v;
    v.feedlet = e.feedlet, v.lock = uint32_t(e.u[0]), v.lock_id = e.u[1], v.ts = v.end = e.ts;
    if (e.type == format::kLockAcquire) {
      if (h.holder == e.feedlet) {
        ++h.depth;
        continue;
      }
      if (h.holder != 0) {
        v.kind = SchedViolation::LockTaken;
        v.by_ns = ns_between(ix, h.since, e.ts);
        v.why = "acquired by " + label(e.feedlet) + " while " + label(h.holder) + " held it (for " +
                readable_duration(v.by_ns) + ")";
        violate(v);
      }
      h = Held{e.feedlet, 1, e.ts};
    } else {
      if (h.holder == e.feedlet) {
        if (--h.depth == 0) h = Held{};
        continue;
      }
      v.kind = SchedViolation::ReleaseNotHeld;
      v.why = "released by " + label(e.feedlet) + (h.holder ? " while " + label(h.holder) + " held it" : ", which nobody held");
      violate(v);
    }
  }
  locks_seen = locks.size();
}

}  // namespace

std::vector<SchedViolation> lock_misuse(const index::TraceIndex& ix, size_t limit, uint64_t* total) {
  FirstN<SchedViolation, ByTime> found{limit, {}};
  uint64_t n = 0, events = 0, locks = 0;
  check_locks(ix, *ix.catalog_snapshot(), [&](SchedViolation v) { ++n, found.add(std::move(v)); }, events, locks);
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
  found.trim();
  rep.violations = std::move(found.list);
  return rep;
}

}  // namespace tinescope::analysis
