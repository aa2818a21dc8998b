#include "tinescope/analysis/jobs.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <unordered_map>

#include "merged_events.hpp"

namespace tinescope::analysis {

using namespace tinescope::format;

namespace {

struct JobKey {
  uint32_t task;
  uint64_t id;
  bool operator==(const JobKey&) const = default;
};

// JobKey → a uint32_t, open addressing with linear probing and deletion by
// shifting back (no tombstones): one lookup an event is the scan's most
// common cost, and a node-based map allocated and freed a node per job.
class JobTable {
 public:
  JobTable() { rehash(64); }
  size_t size() const { return used_; }
  // The value of k, or null.
  uint32_t* find(const JobKey& k) {
    for (size_t i = home(k);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.value == kEmpty) return nullptr;
      if (s.id == k.id && s.task == k.task) return &s.value;
    }
  }
  // k, not in the table, given v (not kEmpty).
  void insert(const JobKey& k, uint32_t v) {
    if ((used_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    size_t i = home(k);
    while (slots_[i].value != kEmpty) i = (i + 1) & mask_;
    slots_[i] = Slot{k.id, k.task, v};
    ++used_;
  }
  void erase(const JobKey& k) {
    size_t i = home(k);
    for (;; i = (i + 1) & mask_) {
      if (slots_[i].value == kEmpty) return;
      if (slots_[i].id == k.id && slots_[i].task == k.task) break;
    }
    // Later slots of the run that may sit at i instead move back to it.
    for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      Slot& s = slots_[j];
      if (s.value == kEmpty) break;
      const size_t h = home(JobKey{s.task, s.id});
      if (((j - h) & mask_) >= ((j - i) & mask_)) slots_[i] = s, i = j;
    }
    slots_[i].value = kEmpty;
    --used_;
  }
  template <class Fn>
  void each(Fn&& fn) const {
    for (const Slot& s : slots_)
      if (s.value != kEmpty) fn(s.value);
  }
  void clear() { rehash(64); }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    uint64_t id;
    uint32_t task;
    uint32_t value;
  };
  size_t home(const JobKey& k) const { return size_t(((k.id ^ uint64_t(k.task) << 40) * 0x9E3779B97F4A7C15ull) >> shift_); }
  void rehash(size_t n) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(n, Slot{0, 0, kEmpty});
    mask_ = n - 1, shift_ = 64 - std::countr_zero(n), used_ = 0;
    for (const Slot& s : old)
      if (s.value != kEmpty) insert(JobKey{s.task, s.id}, s.value);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0, used_ = 0;
  int shift_ = 0;
};

// A job while the scan follows it.
struct Following {
  Job job;
  bool running = false;
  uint64_t run_start = 0;
  uint64_t block_start = kNoTime;
  uint64_t last_end = 0;  // where its last segment ended
  uint64_t order = 0;  // when it was first seen: the order of jobs left incomplete
};

// The job each CPU runs: CPUs numbered below 4096 in a flat table (a
// lookup at every start and end), others in a map.
class CpuJobs {
 public:
  const JobKey* find(uint32_t cpu) const {
    if (cpu < kFlat) return cpu < used_.size() && used_[cpu] ? &flat_[cpu] : nullptr;
    auto it = other_.find(cpu);
    return it == other_.end() ? nullptr : &it->second;
  }
  void set(uint32_t cpu, const JobKey& k) {
    if (cpu >= kFlat) return void(other_[cpu] = k);
    if (cpu >= used_.size()) used_.resize(cpu + 1), flat_.resize(cpu + 1);
    // (Member by member: k was just written that way, and a copy of it
    // whole read it in one load that waited for those stores.)
    used_[cpu] = 1, flat_[cpu].task = k.task, flat_[cpu].id = k.id;
  }
  void erase(uint32_t cpu) {
    if (cpu >= kFlat) return void(other_.erase(cpu));
    if (cpu < used_.size()) used_[cpu] = 0;
  }

 private:
  static constexpr uint32_t kFlat = 4096;
  std::vector<uint8_t> used_;
  std::vector<JobKey> flat_;
  std::unordered_map<uint32_t, JobKey> other_;
};

}  // namespace

struct JobScan::Impl {
  Impl(const index::TraceIndex& ix, uint64_t t1)
      : events(ix, {kJobArrive, kJobStart, kJobPreempt, kJobResume, kJobBlock, kJobComplete, kJobDeadline}, rank, t1) {}

  // At one tick, an arrival before anything of its job, a segment's end
  // before the next start (a job preempted on one CPU and resumed on
  // another at the same tick).
  static int rank(uint16_t type) {
    return type == kJobArrive || type == kJobDeadline ? 0 : type == kJobStart || type == kJobResume ? 2 : 1;
  }

  MergedEvents events;
  std::vector<Migration>* migrations = nullptr;
  std::vector<Interruption>* interruptions = nullptr;
  JobCounts counts;
  JobTable jobs;                   // the jobs followed: their places in `pool`
  std::vector<Following> pool;
  std::vector<uint32_t> pool_free;  // places in `pool` free to reuse
  CpuJobs on_cpu;
  static constexpr size_t kRecent = 4096;       // the jobs completed last
  std::vector<JobKey> recent;
  size_t recent_at = 0;
  // The keys in `recent`, each with how many times it is there. Kept only
  // from the first event that asks (an event of a job not followed that is
  // not its arrival): where every job arrives first, none does, and the
  // table cost three lookups a job.
  JobTable recently_completed;
  bool recent_kept = false;
  // Finished, not yet given (from ready[given]): their places in `pool`,
  // freed as they are given. (Copied out then, not as they finish: a copy
  // of a job read whole right after its last fields were stored waited for
  // those stores, a fifth of the scan's own time.)
  std::vector<uint32_t> ready;
  size_t given = 0;
  uint64_t seen = 0;
  bool ended = false;

  Following* find(const JobKey& k) {
    const uint32_t* at = jobs.find(k);
    return at ? &pool[*at] : nullptr;
  }
  // k, not followed yet, from now on.
  Following& follow(const JobKey& k) {
    uint32_t at;
    if (pool_free.empty()) {
      at = uint32_t(pool.size());
      pool.emplace_back();
    } else {
      at = pool_free.back();
      pool_free.pop_back();
      pool[at] = Following{};
    }
    jobs.insert(k, at);
    Following& f = pool[at];
    f.job.task = k.task, f.job.id = k.id;
    f.order = seen++;
    return f;
  }
  // A finished job: no longer followed, its place kept until it is given.
  void unfollow(const JobKey& k) { jobs.erase(k); }
  // Whether k is one of the last kRecent jobs completed.
  bool completed_lately(const JobKey& k) {
    if (!recent_kept) {
      recent_kept = true;
      for (const JobKey& r : recent) remember(r);
    }
    return recently_completed.find(k);
  }
  void remember(const JobKey& k) {
    if (uint32_t* n = recently_completed.find(k)) ++*n;
    else recently_completed.insert(k, 1);
  }
  void forget(const JobKey& k) {
    uint32_t* n = recently_completed.find(k);
    if (n && --*n == 0) recently_completed.erase(k);
  }
  // A segment ends: the time it ran counts, the CPU is free.
  void stop_running(Following& f, uint64_t ts) {
    if (!f.running) return;
    f.job.executed += ts - f.run_start;
    f.running = false;
    f.last_end = ts;
    const JobKey* c = on_cpu.find(f.job.last_cpu);
    if (c && *c == JobKey{f.job.task, f.job.id}) on_cpu.erase(f.job.last_cpu);
  }
  void finish(Following& f) {
    ++counts.jobs;
    if (f.job.completed()) ++counts.completed;
    if (f.job.arrival == kNoTime && (f.job.first_start != kNoTime || f.job.completed())) ++counts.no_arrival;
    ready.push_back(uint32_t(&f - pool.data()));
  }

  void apply(const SmallEvent& e) {
    ++counts.events;
    const JobKey k{uint32_t(e.u[0]), e.u[1]};
    if (e.type == kJobArrive) {
      Following* was = find(k);
      if (was && was->job.arrival != kNoTime) {
        // The same job arrived again before completing: the first is left
        // incomplete as it was (its completion was lost or never recorded).
        ++counts.arrived_again;
        stop_running(*was, e.ts);
        was->job.last_event = e.ts;
        finish(*was);
        unfollow(k);
        was = nullptr;
      }
      Following& f = was ? *was : follow(k);
      f.job.arrival = e.ts, f.job.last_event = e.ts;
      return;
    }
    Following* known = find(k);  // (one lookup an event: the scan's most common cost)
    if (!known) {
      // An event of a job not followed: a preempt or block of none is
      // counted, not made a job; one that came after the job completed
      // (a late deadline, a second completion) is counted and left out.
      if (e.type == kJobPreempt || e.type == kJobBlock) return void(++counts.end_not_running);
      if (completed_lately(k)) return void(++counts.after_completion);
    }
    Following& f = known ? *known : follow(k);
    f.job.last_event = e.ts;
    const uint32_t cpu = uint32_t(e.u[2]);
    switch (e.type) {
      case kJobDeadline: f.job.deadline = e.u[2]; break;
      case kJobStart:
      case kJobResume: {
        if (f.running) {  // its end was lost: as the index draws it, the segment ends here
          ++counts.start_while_running;
          f.job.cut = true;
          stop_running(f, e.ts);
        }
        if (const JobKey* c = on_cpu.find(cpu)) {  // another job's end on this CPU was lost
          Following* other = find(*c);
          ++counts.cpu_taken;
          if (other) other->job.cut = true, stop_running(*other, e.ts);
          on_cpu.erase(cpu);
        }
        if (f.block_start != kNoTime) f.job.blocked += e.ts - f.block_start, f.block_start = kNoTime;
        if (f.job.last_cpu != kNoCpu && f.job.last_cpu != cpu) {
          ++f.job.migrations;
          if (migrations) migrations->push_back(Migration{k.task, k.id, f.last_end, e.ts, f.job.last_cpu, cpu});
        }
        if (f.job.first_start == kNoTime) f.job.first_start = e.ts, f.job.first_cpu = cpu;
        f.job.last_cpu = cpu;
        f.running = true, f.run_start = e.ts;
        on_cpu.set(cpu, k);
        break;
      }
      case kJobPreempt:
      case kJobBlock:
        if (!f.running) {
          ++counts.end_not_running;
          break;
        }
        if (interruptions) interruptions->push_back(Interruption{k.task, k.id, e.ts, f.job.last_cpu, e.type == kJobBlock});
        stop_running(f, e.ts);
        if (e.type == kJobPreempt) {
          ++f.job.preemptions;
        } else {
          ++f.job.blocks;
          f.block_start = e.ts;
        }
        break;
      case kJobComplete: {
        stop_running(f, e.ts);
        if (f.block_start != kNoTime) f.job.blocked += e.ts - f.block_start;
        f.job.completion = e.ts;
        f.job.completed_by = e.feedlet;
        finish(f);
        unfollow(k);
        // Remembered a while: an event of it after this is told from a new job's.
        // (k member by member, as CpuJobs::set does.)
        if (recent.size() < kRecent) recent.emplace_back();
        else if (recent_kept) forget(recent[recent_at]);
        recent[recent_at].task = k.task, recent[recent_at].id = k.id;
        recent_at = (recent_at + 1) % kRecent;
        if (recent_kept) remember(k);
        break;
      }
      default: break;
    }
  }

  // The jobs still open at the scan's end: running ones ran until then.
  void end_all() {
    ended = true;
    std::vector<Following*> open;
    jobs.each([&](uint32_t at) { open.push_back(&pool[at]); });
    std::sort(open.begin(), open.end(), [](const Following* a, const Following* b) { return a->order < b->order; });
    const uint64_t end = events.end();
    for (Following* f : open) {
      if (f->running) f->job.last_event = end;
      stop_running(*f, end);
      if (f->block_start != kNoTime) f->job.blocked += end - f->block_start;
      finish(*f);
    }
    jobs.clear();
    counts.unreadable = events.unreadable();
  }
};

JobScan::JobScan(const index::TraceIndex& ix, uint64_t t1) : impl_(std::make_unique<Impl>(ix, t1)) {}
JobScan::~JobScan() = default;

bool JobScan::next(Job& out) {
  const Job* j = next();
  if (j) out = *j;
  return j != nullptr;
}

const Job* JobScan::next() {
  Impl& m = *impl_;
  m.migrations = migrations;
  m.interruptions = interruptions;
  if (m.given == m.ready.size()) m.ready.clear(), m.given = 0;
  while (m.ready.empty()) {
    if (m.ended) return nullptr;
    if (const SmallEvent* e = m.events.next()) {
      m.apply(*e);
    } else {
      m.end_all();
    }
  }
  // (Its place is reused only by a job followed later: not before the next call.)
  const uint32_t at = m.ready[m.given++];
  m.pool_free.push_back(at);
  return &m.pool[at].job;
}

const JobCounts& JobScan::counts() const { return impl_->counts; }
uint64_t JobScan::end() const { return impl_->events.end(); }

bool JobScan::any(const index::TraceIndex& ix) {
  const std::vector<uint64_t> n = ix.events_per_type();
  for (uint16_t t : {kJobArrive, kJobStart, kJobResume, kJobComplete})
    if (t < n.size() && n[t]) return true;
  return false;
}

uint64_t span_ns(const index::TraceIndex& ix, uint64_t at, uint64_t ticks) {
  return uint64_t(std::max<int64_t>(0, ns_between(ix, at, at + ticks)));
}

std::shared_ptr<const JobMarks> job_marks(const index::TraceIndex& ix, size_t max_jobs) {
  if (!JobScan::any(ix)) return nullptr;
  auto out = std::make_shared<JobMarks>();
  JobScan scan(ix);
  scan.migrations = &out->migrations;
  scan.interruptions = &out->interruptions;
  Job j;
  while (scan.next(j)) {
    const uint64_t start = j.arrival != kNoTime ? j.arrival : j.first_start;
    if (start == kNoTime) continue;  // only a deadline was recorded
    if (out->jobs.size() == max_jobs) return nullptr;
    JobMark m;
    m.task = j.task, m.id = j.id, m.start = start, m.deadline = j.deadline;
    m.end = j.completed() ? j.completion : std::max(start, j.last_event);
    m.missed = j.missed(scan.end()), m.completed = j.completed();
    m.arrived = j.arrival != kNoTime, m.cut = j.cut;
    m.first_start = j.first_start, m.executed = j.executed, m.blocked = j.blocked, m.waiting = j.waiting();
    m.preemptions = j.preemptions, m.blocks = j.blocks, m.migrations = j.migrations;
    m.first_cpu = j.first_cpu, m.last_cpu = j.last_cpu;
    if (m.missed && !m.completed) m.end = std::max(m.end, scan.end());
    out->longest = std::max(out->longest, std::max(m.end, m.deadline == kNoTime ? 0 : m.deadline) - start);
    out->jobs.push_back(m);
  }
  std::stable_sort(out->jobs.begin(), out->jobs.end(), [](const JobMark& a, const JobMark& b) { return a.start < b.start; });
  out->scanned_events = scan.counts().events;
  for (const Migration& m : out->migrations) out->longest_move = std::max(out->longest_move, m.arrived - m.left);
  return out;
}

const JobMark* JobMarks::job_at(uint32_t task, uint64_t at) const {
  const JobMark* found = nullptr;
  each(at, at, [&](const JobMark& j) {
    if (!found && j.task == task && j.start <= at && at <= j.end) found = &j;
  });
  return found;
}

std::vector<TaskStats> task_stats(const index::TraceIndex& ix, JobCounts* counts) {
  JobScan scan(ix);
  std::map<uint32_t, TaskStats> per;
  const auto catalog = ix.catalog_snapshot();
  Job j;
  while (scan.next(j)) {
    TaskStats& s = per[j.task];
    ++s.jobs;
    s.preemptions += j.preemptions, s.migrations += j.migrations, s.blocks += j.blocks;
    if (j.first_start != kNoTime) s.executed.add(span_ns(ix, j.first_start, j.executed));
    if (j.completed()) ++s.completed;
    if (j.has_response()) {
      const uint64_t r = uint64_t(std::max<int64_t>(0, ns_between(ix, j.arrival, j.completion)));
      if (s.response.count() == 0 || r > uint64_t(ns_between(ix, s.longest.arrival, s.longest.completion)))
        s.longest = j;
      s.response.add(r);
      s.waiting.add(span_ns(ix, j.arrival, j.waiting()));
    }
    if (j.deadline != kNoTime) ++s.with_deadline;
    if (j.missed(scan.end())) {
      const int64_t late = ns_between(ix, j.deadline, j.completed() ? j.completion : scan.end());
      if (s.missed == 0 || late > s.worst_lateness_ns) s.worst_lateness_ns = late, s.latest = j;
      ++s.missed;
    }
  }
  std::vector<TaskStats> out;
  for (auto& [task, s] : per) {
    s.task = std::string(catalog->string(task));
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const TaskStats& a, const TaskStats& b) { return a.task < b.task; });
  if (counts) *counts = scan.counts();
  return out;
}

}  // namespace tinescope::analysis
