// The Grasp trace reader. A Grasp trace is a Tcl script for the Grasp player
// (Holenderski et al., seeds/grasp-hierarchical-multiprocessor.txt):
//
//   newProcessor core1 -name "Core 1"
//   newTask task1 -name "Task 1" -processor core1
//   plot 15 jobArrived job1.1 task1
//   plot 15 jobResumed job1.1
//   plot 22 jobPreempted job1.1 -processor core2
//   bufferplot 30 write buf1 A
//   plot 28 syncReceived core1 core2 m1
//
// Its events need not be in time order: per-processor traces are simply
// concatenated, each on its processor's own clock. So the script is read
// whole, the clocks are aligned from the sync messages (each processor's
// clock as offset + drift x the reference clock of its cluster), and the
// events are then replayed in time order into the model: a lane per
// processor (the jobs' execution, named by task), per task (each job from
// its arrival to its completion: the response time), per mutex (its
// holders), per buffer (messages as flows from write to read, its depth) and
// per server (its budget, and while it serves). docs/IMPORT.md, "Grasp".
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <deque>

#include "import_model.hpp"
#include "tinescope/import/clock_fit.hpp"
#include "tinescope/format.hpp"

namespace tinescope::import {

using namespace format;

namespace {

// The lanes' processes (the viewer's group headers).
enum : int64_t { kProcessorsPid = 1, kTasksPid, kMutexesPid, kBuffersPid, kServersPid };

// Flow ids of each kind, apart from each other and from other importers'.
constexpr uint64_t kSyncFlows = uint64_t(0x67) << 56, kBufferFlows = uint64_t(0x68) << 56,
                   kMigrationFlows = uint64_t(0x69) << 56;

// Splits a line into Tcl words: white space between them, "double quotes"
// (with backslash escapes) and {braces} (nested, taken as they are) group.
// False if a quote or brace does not close on the line.
bool split_words(std::string_view s, std::vector<std::string>& out) {
  out.clear();
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
    if (i == s.size()) break;
    std::string w;
    if (s[i] == '"') {
      for (++i; i < s.size() && s[i] != '"'; ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        w += s[i];
      }
      if (i == s.size()) return false;
      ++i;
    } else if (s[i] == '{') {
      int depth = 1;
      for (++i; i < s.size() && depth > 0; ++i) {
        if (s[i] == '{') ++depth;
        if (s[i] == '}' && --depth == 0) break;
        w += s[i];
      }
      if (depth > 0) return false;
      ++i;
    } else {
      while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '\r') w += s[i++];
    }
    out.push_back(std::move(w));
  }
  return true;
}

bool to_double(const std::string& s, double& v) { return to_number(s, v) && std::isfinite(v); }

// The value of option `key` ("-processor") among words [from, end), or null.
const std::string* option(const std::vector<std::string>& w, size_t from, std::string_view key) {
  for (size_t i = from; i + 1 < w.size(); ++i)
    if (w[i] == key) return &w[i + 1];
  return nullptr;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

bool GraspReader::is_grasp(std::string_view line) {
  static constexpr std::string_view kCommands[] = {"plot ",       "bufferplot ", "newProcessor ", "newTask ",
                                                   "newBuffer ",  "newMutex ",   "newServer "};
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  for (std::string_view c : kCommands)
    if (line.substr(0, c.size()) == c) return true;
  return false;
}

uint32_t GraspReader::id(std::string_view word) {
  auto [it, fresh] = ids_.emplace(std::string(word), uint32_t(words_.size()));
  if (fresh) words_.emplace_back(word);
  return it->second;
}

GraspReader::Object& GraspReader::declare(std::map<uint32_t, Object>& table, uint32_t key) {
  auto [it, fresh] = table.emplace(key, Object{});
  if (fresh) it->second.name = words_[key], it->second.order = uint32_t(table.size());
  return it->second;
}

const std::string& GraspReader::name_of(const std::map<uint32_t, Object>& table, uint32_t key) const {
  auto it = table.find(key);
  return it == table.end() ? words_[key] : it->second.name;
}

void GraspReader::line(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  if (text.empty() || text.front() == '#' || text == "\r") return;
  std::vector<std::string> w;
  ImportResult& r = m_.r;
  ++r.events_read;
  if (!split_words(text, w) || w.empty()) {
    ++r.unsupported["grasp line with a quote or brace left open"];
    return;
  }
  const std::string& cmd = w[0];
  if (cmd.rfind("new", 0) == 0 && w.size() >= 2) {
    std::map<uint32_t, Object>* table = cmd == "newProcessor" ? &processors_
                                        : cmd == "newTask"    ? &tasks_
                                        : cmd == "newMutex"   ? &mutexes_
                                        : cmd == "newBuffer"  ? &buffers_
                                        : cmd == "newServer"  ? &servers_
                                                              : nullptr;
    if (table) {
      Object& o = declare(*table, id(w[1]));
      if (const std::string* n = option(w, 2, "-name")) o.name = *n;
      if (const std::string* p = option(w, 2, "-processor"); p && table == &tasks_) {
        o.processor = id(*p);
        declare(processors_, o.processor);
      }
      return;
    }
  }
  const bool buffer = cmd == "bufferplot";
  double t = 0;
  if ((cmd == "plot" || buffer) && w.size() >= 3) {
    if (!to_double(w[1], t)) {
      ++r.unsupported["grasp " + cmd + " whose time is not a number"];
      return;
    }
    return plot(w, 2, t, buffer);
  }
  ++r.unsupported["grasp " + cmd];
}

void GraspReader::plot(const std::vector<std::string>& w, size_t at, double t, bool buffer) {
  ImportResult& r = m_.r;
  const std::string& ev = w[at];
  // Positional arguments: those before the first -option (a word of "-" and a letter: -5 is a number).
  auto is_option = [](const std::string& x) { return x.size() > 1 && x[0] == '-' && std::isalpha(uint8_t(x[1])); };
  size_t args = 0;
  while (at + 1 + args < w.size() && !is_option(w[at + 1 + args])) ++args;
  auto arg = [&](size_t k) { return id(w[at + 1 + k]); };
  Event e{t, events_.size(), JobArrived, 0, 0, 0, 0, 0, 0};
  if (const std::string* p = option(w, at + 1, "-processor")) e.processor = id(*p), declare(processors_, e.processor);
  auto need = [&](size_t n) {
    if (args >= n) return true;
    ++r.unsupported["grasp " + ev + " with too few arguments"];
    return false;
  };
  // The clock a job's event was written on: its processor's (the one it
  // runs on; a preemption's -processor is where it will resume).
  auto job_clock = [&](uint32_t job, bool moves_after) {
    uint32_t& where = job_processor_[job];
    if (!moves_after && e.processor) where = e.processor;
    e.clock = where;
    if (moves_after && e.processor) where = e.processor;
  };
  if (buffer) {
    if (ev == "write" && need(2)) {
      e.kind = BufferWrite, e.a = arg(0), e.b = arg(1);
    } else if (ev == "read" && need(1)) {
      e.kind = BufferRead, e.a = arg(0);
    } else {
      if (ev != "write" && ev != "read") ++r.unsupported["grasp bufferplot " + ev];
      return;
    }
    declare(buffers_, e.a);
  } else if (ev == "jobArrived") {
    if (!need(2)) return;
    e.kind = JobArrived, e.a = arg(0), e.b = arg(1);
    declare(tasks_, e.b);
    if (!e.processor) e.processor = tasks_[e.b].processor;
    job_processor_[e.a] = e.processor;
    e.clock = e.processor;
  } else if (ev == "jobStarted" || ev == "jobResumed" || ev == "jobPreempted" || ev == "jobBlocked" ||
             ev == "jobCompleted") {
    if (!need(1)) return;
    e.kind = ev == "jobStarted"     ? JobStarted
             : ev == "jobResumed"   ? JobResumed
             : ev == "jobPreempted" ? JobPreempted
             : ev == "jobBlocked"   ? JobBlocked
                                    : JobCompleted;
    e.a = arg(0);
    job_clock(e.a, e.kind == JobPreempted || e.kind == JobBlocked);
  } else if (ev == "jobAcquiredMutex" || ev == "jobReleasedMutex") {
    if (!need(2)) return;
    e.kind = ev == "jobAcquiredMutex" ? MutexAcquired : MutexReleased;
    e.a = arg(0), e.b = arg(1);
    declare(mutexes_, e.b);
    job_clock(e.a, false);
  } else if (ev == "serverReplenished" || ev == "serverDepleted") {
    if (!need(2)) return;
    e.kind = ev == "serverReplenished" ? ServerReplenished : ServerDepleted;
    e.a = arg(0);
    if (!to_double(w[at + 2], e.value)) {
      ++r.unsupported["grasp " + ev + " whose budget is not a number"];
      return;
    }
    declare(servers_, e.a);
  } else if (ev == "serverResumed" || ev == "serverPreempted") {
    if (!need(1)) return;
    e.kind = ev == "serverResumed" ? ServerResumed : ServerPreempted;
    e.a = arg(0);
    declare(servers_, e.a);
  } else if (ev == "syncSent" || ev == "syncReceived") {
    if (!need(3)) return;
    e.kind = ev == "syncSent" ? SyncSent : SyncReceived;
    e.a = arg(0), e.b = arg(1), e.c = arg(2);
    declare(processors_, e.a), declare(processors_, e.b);
    e.clock = e.kind == SyncSent ? e.a : e.b;  // each end on its own processor's clock
  } else {
    ++r.unsupported["grasp plot " + ev];
    return;
  }
  events_.push_back(e);
}

std::map<std::tuple<uint32_t, uint32_t, uint32_t>, GraspReader::SyncEnds> GraspReader::sync_messages() const {
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, SyncEnds> messages;
  for (const Event& e : events_) {
    if (e.kind != SyncSent && e.kind != SyncReceived) continue;
    SyncEnds& m = messages[{e.a, e.b, e.c}];
    if (e.kind == SyncSent) m.sent = true, m.s = e.t;
    else m.received = true, m.r = e.t;
  }
  return messages;
}

std::map<uint32_t, GraspReader::ClockMap> GraspReader::align_clocks() {
  const auto messages = sync_messages();
  std::map<uint32_t, ClockMap> maps;
  if (messages.empty()) return maps;
  // Clocks numbered in the order their processors were declared, so that
  // each cluster is put on its first declared processor's clock.
  std::vector<uint32_t> by_order(processors_.size());
  for (auto& [p, o] : processors_) by_order[o.order - 1] = p;  // (orders count from 1)
  auto order = [&](uint32_t p) { return processors_[p].order - 1; };
  // Per pair of processors {u, v} (u declared first), the messages u -> v and v -> u.
  struct Pair {
    std::vector<SyncPoint> there, back;
  };
  std::map<std::pair<uint32_t, uint32_t>, Pair> pairs;
  uint64_t lost = 0;
  for (auto& [key, m] : messages) {
    auto [src, dst, sync_id] = key;
    if (!m.sent || !m.received || src == dst) {
      lost += !m.sent || !m.received;
      continue;
    }
    if (order(src) < order(dst)) pairs[{order(src), order(dst)}].there.push_back({m.r, m.s});
    else pairs[{order(dst), order(src)}].back.push_back({m.s, m.r});
  }
  if (lost) m_.r.notes.push_back("clock sync: " + std::to_string(lost) + " sync messages with one end only (lost)");
  std::vector<PairEdge> edges;
  for (auto& [uv, p] : pairs) {
    PairFit fit;
    fit_clock_pair(p.there, p.back, fit);
    if (fit.one_way)
      m_.r.notes.push_back("clock sync: " + processors_[by_order[uv.first]].name + " and " +
                           processors_[by_order[uv.second]].name +
                           ": sync messages go one way only, so the drift cannot be fitted (offset only, the fastest "
                           "message taken as instant)");
    edges.push_back({uv.first, uv.second, fit.line});
  }
  const std::vector<ChainedClock> chained = chain_clocks(uint32_t(by_order.size()), edges);
  for (uint32_t i = 0; i < chained.size(); ++i) {
    if (chained[i].reference == i) {
      maps[by_order[i]] = ClockMap{};
      continue;
    }
    const ClockLine& l = chained[i].line;
    maps[by_order[i]] = ClockMap{l.offset, l.rate};
    m_.r.notes.push_back("clock sync: " + processors_[by_order[i]].name + " aligned to " +
                         processors_[by_order[chained[i].reference]].name + ": t = " + number(l.offset) + " + " +
                         number(l.rate) + " x its own clock");
  }
  return maps;
}

void GraspReader::finish() {
  if (events_.empty()) return;
  const std::map<uint32_t, ClockMap> maps = align_clocks();
  // Each event's time on its cluster's reference clock.
  for (Event& e : events_)
    if (auto it = maps.find(e.clock); it != maps.end()) e.t = it->second.offset + it->second.drift * e.t;
  // (Times far out, aligned past what a double holds, are left out before anything compares them.)
  const size_t before = events_.size();
  std::erase_if(events_, [](const Event& e) { return !(std::fabs(e.t) < ImportModel::kMaxUs); });
  if (events_.size() < before) m_.r.unsupported["grasp event with time out of range"] += before - events_.size();
  // Grasp's own check: once aligned, no sync message arrives before it left.
  {
    const auto ends = sync_messages();
    uint64_t early = 0;
    for (auto& [key, x] : ends) early += x.sent && x.received && x.r < x.s;
    if (early)
      m_.r.warning += std::string(m_.r.warning.empty() ? "" : "; ") + std::to_string(early) +
                      " sync messages arrive before they were sent once the clocks are aligned: the clocks' drift "
                      "is not constant, and events near them may be out of order";
  }
  // Ticks are unsigned: a clock aligned to start before 0 moves every event up.
  double least = 0;
  for (const Event& e : events_) least = std::min(least, e.t);
  if (least < 0) {
    for (Event& e : events_) e.t -= least;
    m_.r.notes.push_back("times moved up by " + number(-least) + ": the earliest event was before 0");
  }
  std::stable_sort(events_.begin(), events_.end(), [](const Event& a, const Event& b) { return a.t < b.t; });
  replay();
}

void GraspReader::replay() {
  ImportResult& r = m_.r;
  // The groups in this order (the viewer orders processes by sort index), whichever are used.
  const std::pair<int64_t, const char*> groups[] = {
      {kProcessorsPid, "Processors"}, {kTasksPid, "Tasks"}, {kMutexesPid, "Mutexes"}, {kServersPid, "Servers"},
      {kBuffersPid, "Buffers"}};
  for (size_t i = 0; i < std::size(groups); ++i) {
    m_.process_names[groups[i].first] = groups[i].second;
    m_.process_sort[groups[i].first] = int64_t(i);
  }
  // Lanes in the order things were declared: a trace of one processor may declare none.
  auto lane = [&](int64_t pid, const std::map<uint32_t, Object>& table, uint32_t key) -> Feedlet& {
    auto it = table.find(key);
    return m_.feedlet(pid, it == table.end() ? 0 : it->second.order, it == table.end() ? words_[key] : it->second.name);
  };
  auto processor_lane = [&](uint32_t p) -> Feedlet& {
    return p ? lane(kProcessorsPid, processors_, p) : m_.feedlet(kProcessorsPid, 0, "Processor");
  };
  if (processors_.empty())
    for (const Event& e : events_)
      if (e.kind == JobStarted || e.kind == JobResumed) {
        processor_lane(0);  // one processor, not declared: its lane first, as declared ones are
        break;
      }
  for (const auto* table : {&processors_, &tasks_})
    for (auto& [key, o] : *table) lane(table == &processors_ ? kProcessorsPid : kTasksPid, *table, key);

  struct Job {
    uint32_t task = 0, processor = 0;  // task 0: never arrived (named by its own id)
    bool arrived = false, running = false, left = false;
    uint64_t arrival = 0, arrival_seq = 0, since = 0, left_at = 0;
    uint32_t on = 0, left_from = 0;  // the processor it runs on; the one it last left
    uint32_t arrival_fields = 0, since_fields = 0;  // of its arrival; of the slice it runs
  };
  std::unordered_map<uint32_t, Job> jobs;
  std::map<uint32_t, uint32_t> running;  // processor -> job
  // A server's budget as it is consumed (Grasp §5): every processor that
  // serves from it consumes at rate 1, so while k serve it falls k units a
  // unit of time, from its last replenish. BudgetCheck: served past zero.
  struct Server {
    uint32_t consumers = 0;
    uint64_t since = 0;
    bool known = false;  // a budget was given (replenish or deplete)
    double budget = 0, at = 0;  // the budget at time `at` (the trace's units)
    uint64_t overruns = 0;
    double worst = 0;  // the most it went below zero
  };
  std::map<uint32_t, Server> servers;
  struct Mutex {
    uint32_t holder = 0;  // a job
    uint64_t taken_while_held = 0, released_by_other = 0;
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> holds;  // job -> (acquired at, seq)
  };
  std::map<uint32_t, Mutex> mutex_state;
  std::map<uint32_t, std::deque<uint64_t>> queued;  // buffer -> flow ids, oldest first
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint64_t> sync_flow;
  uint64_t flows = 0;
  uint64_t last = 0;
  double last_us = 0;
  const uint32_t migration = m_.intern("migration"), sync = m_.intern("sync"), blocked = m_.intern("blocked");
  auto job_name = [&](uint32_t job) {
    const Job& j = jobs[job];
    return m_.intern(j.task ? name_of(tasks_, j.task) : words_[job]);
  };
  // A job's fields (docs/IMPORT.md, "Grasp"): each slice on a processor
  // keeps the job, its task and where it ran, and at its end how it ended;
  // a task's job, its job and where it arrived.
  RawEvent fields;
  auto keep = [&](std::initializer_list<std::pair<const char*, std::string_view>> kv) {
    fields.reset();
    for (const auto& [key, value] : kv) {
      if (fields.arg_count == fields.args.size()) fields.args.emplace_back();
      Arg& a = fields.args[fields.arg_count++];
      a.key = key, a.type = 'b', a.text = value;
    }
    return m_.keep_args(fields);
  };
  auto job_fields = [&](uint32_t job, uint32_t p) {
    const Job& j = jobs[job];
    return keep({{"job", words_[job]}, {"task", j.task ? name_of(tasks_, j.task) : ""}, {"processor", name_of(processors_, p)}});
  };
  auto end_slice = [&](uint32_t job, uint64_t t, const char* how) {
    Job& j = jobs[job];
    if (!j.running) return;
    processor_lane(j.on).spans.push_back(Span{j.since, t, job_name(job), m_.next_seq(), j.since_fields, keep({{"ended", how}})});
    running.erase(j.on);
    j.running = false, j.left = true, j.left_at = t, j.left_from = j.on;
  };
  auto start_slice = [&](uint32_t job, uint32_t p, uint64_t t) {
    if (auto other = running.find(p); other != running.end() && other->second != job) end_slice(other->second, t, "preempted");
    Job& j = jobs[job];
    if (j.running && j.on == p) return;
    end_slice(job, t, "migrated");
    if (j.left && j.left_from != p) {  // a migration: an arrow from where it left to where it goes on
      const uint64_t fid = kMigrationFlows | ++flows;
      m_.flows.push_back(Flow{fid, j.left_at, m_.next_seq(), 's', false, processor_lane(j.left_from).id, migration});
      m_.flows.push_back(Flow{fid, t, m_.next_seq(), 'f', false, processor_lane(p).id, migration});
    }
    j.running = true, j.on = p, j.since = t, j.since_fields = job_fields(job, p);
    running[p] = job;
  };
  const uint32_t budget_name = m_.intern("budget"), overrun_name = m_.intern("budget overrun");
  auto budget_sample = [&](uint32_t server, uint64_t t, double value) {
    lane(kServersPid, servers_, server).points.push_back(Point{t, m_.next_seq(), kCounterFloat, budget_name, 0, bits_of(value)});
  };
  // The budget from s.at to `us`, consumed by those serving: drawn as it
  // falls (samples along the line, so that the held value between samples
  // stays within a sixteenth of the stretch of the true one), and the
  // moment it goes below zero marked and counted.
  auto consume = [&](uint32_t server, Server& s, double us) {
    if (!s.known || s.consumers == 0 || !(us > s.at)) {
      s.at = std::max(s.at, us);
      return;
    }
    const double rate = double(s.consumers), end = s.budget - rate * (us - s.at);
    constexpr int kSteps = 16;
    for (int k = 1; k < kSteps; ++k) {
      const double when = s.at + (us - s.at) * k / kSteps;
      budget_sample(server, ImportModel::ticks(when), s.budget - rate * (when - s.at));
    }
    // (Below zero by more than the rounding of fractional times.)
    if (s.budget >= 0 && end < -1e-9 * std::max(1.0, std::fabs(s.budget))) {
      ++s.overruns;
      const uint64_t crossed = ImportModel::ticks(s.at + s.budget / rate);
      lane(kServersPid, servers_, server).points.push_back(Point{crossed, m_.next_seq(), kInstant, overrun_name, 0, 0});
    }
    s.worst = std::min(s.worst, end);
    s.budget = end, s.at = us;
  };
  for (const Event& e : events_) {
    const double us = e.t;
    if (!(us < ImportModel::kMaxUs)) {
      ++r.unsupported["grasp event with time out of range"];
      continue;
    }
    const uint64_t t = ImportModel::ticks(us);
    last = std::max(last, t), last_us = std::max(last_us, us);
    switch (e.kind) {
      case JobArrived: {
        Job& j = jobs[e.a];
        if (j.arrived) ++r.unmatched_ends;  // arrived again before it completed: the first never ends
        j.task = e.b, j.processor = e.processor, j.arrived = true, j.arrival = t, j.arrival_seq = m_.next_seq();
        j.arrival_fields = job_fields(e.a, j.processor);
        break;
      }
      case JobStarted:
      case JobResumed: {
        Job& j = jobs[e.a];
        if (e.processor) j.processor = e.processor;
        start_slice(e.a, j.processor, t);
        break;
      }
      case JobPreempted:
      case JobBlocked: {
        end_slice(e.a, t, e.kind == JobBlocked ? "blocked" : "preempted");
        Job& j = jobs[e.a];
        if (e.processor) j.processor = e.processor;  // it resumes there: a migration
        if (e.kind == JobBlocked && j.task)
          lane(kTasksPid, tasks_, j.task).points.push_back(Point{t, m_.next_seq(), kInstant, blocked, 0, 0});
        break;
      }
      case JobCompleted: {
        end_slice(e.a, t, "completed");
        Job& j = jobs[e.a];
        if (!j.arrived) {
          ++r.unmatched_ends;
          break;
        }
        lane(kTasksPid, tasks_, j.task).spans.push_back(Span{j.arrival, t, job_name(e.a), j.arrival_seq, j.arrival_fields});
        j.arrived = false;
        break;
      }
      case MutexAcquired:
      case MutexReleased: {
        // Each job's hold, from its acquire to its own release: holds that
        // overlap (a misuse) are drawn as they were, never nested by the
        // order of the releases.
        Mutex& mx = mutex_state[e.b];
        auto held = mx.holds.find(e.a);
        if (e.kind == MutexAcquired) {
          if (held == mx.holds.end()) mx.holds.emplace(e.a, std::make_pair(t, m_.next_seq()));
        } else if (held != mx.holds.end()) {
          lane(kMutexesPid, mutexes_, e.b).spans.push_back(Span{held->second.first, t, job_name(e.a), held->second.second});
          mx.holds.erase(held);
        }
        // Grasp's MutexCheck: one holder at a time, and only the holder releases.
        if (e.kind == MutexAcquired) {
          mx.taken_while_held += mx.holder != 0 && mx.holder != e.a;
          mx.holder = e.a;
        } else {
          mx.released_by_other += mx.holder != e.a;
          if (mx.holder == e.a) mx.holder = 0;
        }
        break;
      }
      case ServerReplenished:
      case ServerDepleted: {
        Server& s = servers[e.a];
        consume(e.a, s, us);
        s.known = true, s.budget = e.value, s.at = us;
        budget_sample(e.a, t, e.value);
        break;
      }
      case ServerResumed:
      case ServerPreempted: {
        Server& s = servers[e.a];
        consume(e.a, s, us);
        if (s.known) budget_sample(e.a, t, s.budget);
        // Several processors may consume one server's budget at once: it
        // serves from the first resume until the last preemption.
        if (e.kind == ServerResumed && s.consumers++ == 0) s.since = t;
        if (e.kind == ServerPreempted && s.consumers > 0 && --s.consumers == 0)
          lane(kServersPid, servers_, e.a).spans.push_back(Span{s.since, t, m_.intern("serving"), m_.next_seq()});
        break;
      }
      case SyncSent:
      case SyncReceived: {
        uint64_t& fid = sync_flow[{e.a, e.b, e.c}];
        if (!fid) fid = kSyncFlows | ++flows;
        m_.flows.push_back(Flow{fid, t, m_.next_seq(), e.kind == SyncSent ? 's' : 'f', false,
                                processor_lane(e.kind == SyncSent ? e.a : e.b).id, sync});
        break;
      }
      case BufferWrite:
      case BufferRead: {
        Feedlet& f = lane(kBuffersPid, buffers_, e.a);
        std::deque<uint64_t>& q = queued[e.a];
        const uint32_t name = m_.intern(name_of(buffers_, e.a));
        if (e.kind == BufferWrite) {
          q.push_back(kBufferFlows | ++flows);
          m_.flows.push_back(Flow{q.back(), t, m_.next_seq(), 's', false, f.id, name});
        } else if (q.empty()) {
          ++r.unsupported["grasp bufferplot read of an empty buffer"];
          break;
        } else {
          m_.flows.push_back(Flow{q.front(), t, m_.next_seq(), 'f', false, f.id, name});
          q.pop_front();
        }
        f.points.push_back(Point{t, m_.next_seq(), kCounterFloat, m_.intern("depth"), 0, bits_of(double(q.size()))});
        break;
      }
    }
  }
  for (auto& [key, mx] : mutex_state)
    if (mx.taken_while_held || mx.released_by_other)
      r.notes.push_back("mutex check: " + name_of(mutexes_, key) + ": " + std::to_string(mx.taken_while_held) +
                        " acquired while another job held it, " + std::to_string(mx.released_by_other) +
                        " released by a job that did not hold it");
  for (auto& [key, sv] : servers) consume(key, sv, last_us);  // served on to the last event
  for (auto& [key, sv] : servers)
    if (sv.overruns)
      r.notes.push_back("budget check: " + name_of(servers_, key) + " served past its budget " +
                        std::to_string(sv.overruns) + (sv.overruns == 1 ? " time" : " times") + ", by up to " +
                        number(-sv.worst) + " (marked \"budget overrun\" in its lane)");
  // What still runs at the end runs to the last event; a job not completed,
  // a mutex still held and a server still serving stay open.
  for (auto [p, job] : std::map<uint32_t, uint32_t>(running)) end_slice(job, last, "still running");
  for (auto& [job, j] : jobs)
    if (j.arrived)
      lane(kTasksPid, tasks_, j.task).spans.push_back(Span{j.arrival, UINT64_MAX, job_name(job), j.arrival_seq, j.arrival_fields});
  for (auto& [key, mx] : mutex_state)
    for (auto& [job, at] : mx.holds)
      lane(kMutexesPid, mutexes_, key).spans.push_back(Span{at.first, UINT64_MAX, job_name(job), at.second});
  for (auto& [key, s] : servers)
    if (s.consumers) lane(kServersPid, servers_, key).spans.push_back(Span{s.since, UINT64_MAX, m_.intern("serving"), m_.next_seq()});
}

}  // namespace tinescope::import
