// Priority inversion (docs/ANALYSIS.md, "Scheduling checks"): a task H
// waits for a lock (contend to acquire) while the lock's holder L, less
// urgent than H, is ready but not running, and a task M with a level
// strictly between theirs runs. Each wait in which that held for any time
// is one violation: from where it first held to where it last held (by the
// acquire, the thread's next contend or the trace's end), with the time it
// held in all.
//
// One pass over the jobs', locks' and priorities' events in the trace's
// merged order. The state after every event at a tick holds until the
// next tick: the condition is evaluated as time moves on, not per event.
#include <map>
#include <set>
#include <optional>
#include <string>
#include <unordered_map>

#include "lock_holders.hpp"
#include "merged_events.hpp"
#include "tinescope/analysis/sched_check.hpp"
#include "tinescope/analysis/stream_expr.hpp"

namespace tinescope::analysis {

namespace {

using namespace format;

enum class JobState : uint8_t { Running, Ready, Blocked };

struct Wait {
  uint32_t lock = 0;
  uint64_t lock_id = 0;
  bool open = false;
  uint64_t since = 0;
  uint64_t inverted_since = kNoTime;  // the condition holds since; kNoTime: it does not
  uint64_t first = kNoTime;           // where it first held
  uint64_t inverted = 0;              // ticks it held, closed stretches
  uint64_t last = 0;                  // where its last closed stretch ended
  uint32_t holder = 0, middle = 0;    // tasks, as first seen
  int32_t holder_level = 0, middle_level = 0, level = 0;
};

class Inversions {
 public:
  Inversions(const index::TraceIndex& ix, const Rules* rules) : ix_(ix), catalog_(ix.catalog_snapshot()) {
    if (rules) {
      tasks_per_rule_.resize(rules->rules.size());
      for (size_t i = 0; i < rules->rules.size(); ++i)
        if (rules->rules[i].kind == Rule::Priority) rules_.push_back({NameMatcher(rules->rules[i].task), rules->rules[i].level, i});
    }
  }

  PriorityScan run(const std::function<void(SchedViolation)>& violate) {
    PriorityScan scan;
    if (ix_.events_per_type()[kTaskPriority] == 0 && rules_.empty()) return scan;
    // Lock events ranked as the lock checks rank them (a release before
    // another thread's acquire at one tick), job ends before starts.
    MergedEvents events(ix_,
                        {kJobStart, kJobResume, kJobPreempt, kJobBlock, kJobComplete, kTaskPriority, kLockContend,
                         kLockAcquire, kLockRelease},
                        [](uint16_t type) {
                          return type == kTaskPriority || type == kLockRelease ? 0
                                 : type == kJobStart || type == kJobResume || type == kLockAcquire ? 2
                                                                                                   : 1;
                        });
    SmallEvent e;
    uint64_t now = kNoTime;
    while (events.next(e)) {
      if (e.ts != now) {
        if (now != kNoTime) evaluate(now);
        now = e.ts;
      }
      apply(e, scan, violate);
    }
    // Waits still open where the trace ends.
    if (now != kNoTime) evaluate(now);
    const uint64_t end = events.end();
    for (auto& [feedlet, w] : waits_) close(feedlet, w, end, TraceEnds, violate);
    for (const auto& [task, name] : names_)
      if (level_of(task)) ++scan.tasks;
    scan.tasks_per_rule = std::move(tasks_per_rule_);
    return scan;
  }

 private:
  void apply(const SmallEvent& e, PriorityScan& scan, const std::function<void(SchedViolation)>& violate) {
    switch (e.type) {
      case kTaskPriority: levels_[task_id(uint32_t(e.u[0]))] = int32_t(int64_t(e.u[1])); break;
      case kJobStart:
      case kJobResume: set_job({task_id(uint32_t(e.u[0])), e.u[1]}, JobState::Running); break;
      case kJobPreempt: set_job({task_id(uint32_t(e.u[0])), e.u[1]}, JobState::Ready); break;
      case kJobBlock: set_job({task_id(uint32_t(e.u[0])), e.u[1]}, JobState::Blocked); break;
      case kJobComplete: {
        const JobKey k{task_id(uint32_t(e.u[0])), e.u[1]};
        jobs_.erase(k), running_.erase(k);
        break;
      }
      case kLockContend: {
        Wait& w = waits_[e.feedlet];
        if (w.open) close(e.feedlet, w, e.ts, WaitedAnew, violate);  // (a try that timed out)
        w = Wait{};
        w.open = true, w.lock = uint32_t(e.u[0]), w.lock_id = e.u[1], w.since = e.ts;
        ++scan.waits;
        break;
      }
      case kLockAcquire: {
        auto w = waits_.find(e.feedlet);
        if (w != waits_.end() && w->second.lock == uint32_t(e.u[0]) && w->second.lock_id == e.u[1]) {
          close(e.feedlet, w->second, e.ts, Acquired, violate);
          waits_.erase(w);
        }
        held_.acquire({uint32_t(e.u[0]), e.u[1]}, e.feedlet, e.ts);
        break;
      }
      case kLockRelease: {
        held_.release({uint32_t(e.u[0]), e.u[1]}, e.feedlet);
        break;
      }
    }
  }

  using JobKey = std::pair<uint32_t, uint64_t>;  // (task, job)
  void set_job(const JobKey& k, JobState s) {
    jobs_[k] = s;
    if (s == JobState::Running) running_.insert(k);
    else running_.erase(k);
  }

  // Opens or closes each wait's stretch of inversion at `t`.
  void evaluate(uint64_t t) {
    for (auto& [feedlet, w] : waits_) {
      uint32_t holder = 0, middle = 0;
      int32_t holder_level = 0, middle_level = 0, level = 0;
      const bool inverted = inversion(feedlet, w, holder, middle, holder_level, middle_level, level);
      if (inverted && w.inverted_since == kNoTime) {
        w.inverted_since = t;
        if (w.first == kNoTime)
          w.first = t, w.holder = holder, w.middle = middle, w.holder_level = holder_level,
          w.middle_level = middle_level, w.level = level;
      } else if (!inverted && w.inverted_since != kNoTime) {
        w.inverted += t - w.inverted_since, w.last = t;
        w.inverted_since = kNoTime;
      }
    }
  }

  bool inversion(uint32_t feedlet, const Wait& w, uint32_t& holder_task, uint32_t& middle, int32_t& holder_level,
                 int32_t& middle_level, int32_t& level) {
    const uint32_t holder = held_.holder({w.lock, w.lock_id});
    if (holder == 0 || holder == feedlet) return false;
    const uint32_t task = thread_task(feedlet);
    holder_task = thread_task(holder);
    if (!task || !holder_task || task == holder_task) return false;
    const int32_t* hi = level_of(task);
    const int32_t* lo = level_of(holder_task);
    if (!hi || !lo || *lo >= *hi) return false;
    if (thread_state(holder, holder_task) != JobState::Ready) return false;
    for (const JobKey& job : running_) {  // (as many as CPUs: not every job followed)
      if (job.first == task || job.first == holder_task) continue;
      const int32_t* m = level_of(job.first);
      if (m && *m > *lo && *m < *hi) {
        middle = job.first, middle_level = *m, holder_level = *lo, level = *hi;
        return true;
      }
    }
    return false;
  }

  enum WaitEnd { Acquired, WaitedAnew, TraceEnds };
  void close(uint32_t feedlet, Wait& w, uint64_t t, WaitEnd how, const std::function<void(SchedViolation)>& violate) {
    if (w.inverted_since != kNoTime) w.inverted += t - w.inverted_since, w.last = t, w.inverted_since = kNoTime;
    if (w.first == kNoTime || w.inverted == 0) return;
    SchedViolation v;
    v.kind = SchedViolation::PriorityInversion;
    v.ts = w.first, v.end = w.last;
    const uint32_t waiter = thread_task(feedlet);
    v.feedlet = feedlet, v.task = string_id(waiter);
    v.lock = w.lock, v.lock_id = w.lock_id;
    v.holder = string_id(w.holder), v.middle = string_id(w.middle);
    v.by_ns = int64_t(span_ns(ix_, w.first, w.inverted));
    auto name = [&](uint32_t task, int32_t level) { return names_.at(task) + " (level " + std::to_string(level) + ")"; };
    v.why = name(waiter, w.level) + " waited " + readable_duration(ns_between(ix_, w.since, t)) +
            (how == WaitedAnew  ? " (then waited anew)"
             : how == TraceEnds ? " (still waiting when the trace ends)"
                                : "") + " while " + name(w.holder, w.holder_level) +
            ", which held it, was kept from running by " + name(w.middle, w.middle_level) + " for " +
            readable_duration(v.by_ns) + " in all";
    violate(std::move(v));
  }

  // A thread's scheduling state: its own job (the kernel's: job id = the
  // thread's id) where there is one, else the task's jobs (any running:
  // running; else any ready: ready).
  JobState thread_state(uint32_t feedlet, uint32_t task) const {
    auto f = catalog_->feedlets.find(feedlet);
    if (f != catalog_->feedlets.end()) {
      auto own = jobs_.find({task, f->second.tid});
      if (own != jobs_.end()) return own->second;
    }
    bool ready = false;
    for (auto it = jobs_.lower_bound({task, 0}); it != jobs_.end() && it->first.first == task; ++it) {
      if (it->second == JobState::Running) return JobState::Running;
      ready |= it->second == JobState::Ready;
    }
    return ready ? JobState::Ready : JobState::Blocked;
  }

  // Tasks are named by string ids; a thread is the task of its name.
  // Ids are made canonical by name (an importer may intern a name twice).
  uint32_t task_id(uint32_t string_id) {
    auto [it, fresh] = canonical_.try_emplace(string_id, 0);
    if (fresh) {
      const std::string name(catalog_->string(string_id));
      auto [n, added] = by_name_.try_emplace(name, string_id);
      it->second = n->second;
      if (added) names_.emplace(string_id, name);
      string_ids_.try_emplace(n->second, string_id);
    }
    return it->second;
  }
  // (A thread the program did not name is its OS name; the kernel's
  // scheduling names its task "COMM-TID".)
  uint32_t thread_task(uint32_t feedlet) {
    auto [it, fresh] = thread_tasks_.try_emplace(feedlet, 0);
    if (fresh || !it->second) {
      const std::string name(catalog_->thread_name(feedlet));
      auto n = by_name_.find(name);
      auto f = catalog_->feedlets.find(feedlet);
      if (n == by_name_.end() && f != catalog_->feedlets.end()) n = by_name_.find(name + "-" + std::to_string(f->second.tid));
      if (n == by_name_.end() && !rules_.empty() && name != "?") {
        // A thread no scheduling event names, whose level a rule may give:
        // a task of its own name (an id past the strings').
        n = by_name_.emplace(name, kOwnTask + uint32_t(names_.size())).first;
        names_.emplace(n->second, name);
      }
      it->second = n == by_name_.end() ? 0 : n->second;
    }
    return it->second;
  }
  static constexpr uint32_t kOwnTask = 0x80000000u;
  // A task's name as a string id of the trace (0: it has none: a thread's own).
  uint32_t string_id(uint32_t task) const {
    auto s = string_ids_.find(task);
    return s != string_ids_.end() ? s->second : task < kOwnTask ? task : 0;
  }
  const int32_t* level_of(uint32_t task) {
    auto l = levels_.find(task);
    if (l != levels_.end()) return &l->second;
    auto r = rule_levels_.try_emplace(task);
    if (r.second) {
      const std::string& name = names_.at(task);
      for (const LevelRule& rule : rules_)
        if (rule.task.matches(name)) {
          r.first->second = rule.level;
          ++tasks_per_rule_[rule.index];
          break;
        }
    }
    return r.first->second ? &*r.first->second : nullptr;
  }

  struct LevelRule {
    NameMatcher task;
    int32_t level = 0;
    size_t index = 0;  // in Rules::rules
  };

  const index::TraceIndex& ix_;
  std::shared_ptr<const trace::Catalog> catalog_;
  std::vector<LevelRule> rules_;
  std::vector<uint64_t> tasks_per_rule_;
  std::unordered_map<uint32_t, uint32_t> canonical_;           // string id -> the task's id
  std::unordered_map<std::string, uint32_t> by_name_;          // name -> the task's id
  std::unordered_map<uint32_t, std::string> names_;            // the task's id -> name
  std::unordered_map<uint32_t, uint32_t> string_ids_;          // the task's id -> a string id of its name
  std::unordered_map<uint32_t, uint32_t> thread_tasks_;        // feedlet -> task id (0: none yet)
  std::unordered_map<uint32_t, int32_t> levels_;               // from ts_task_priority
  std::unordered_map<uint32_t, std::optional<int32_t>> rule_levels_;
  std::map<JobKey, JobState> jobs_;                           // (task, job) in flight
  std::set<JobKey> running_;                                   // those running
  LockHolders held_;
  std::map<uint32_t, Wait> waits_;                             // feedlet -> its wait
};

}  // namespace

PriorityScan check_priorities(const index::TraceIndex& ix, const Rules* rules,
                              const std::function<void(SchedViolation)>& violate) {
  return Inversions(ix, rules).run(violate);
}

}  // namespace tinescope::analysis
