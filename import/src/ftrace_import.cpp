// The ftrace text reader: one line at a time, as `trace` and `trace_pipe`
// print them (and Android's systrace, which wraps them):
//
//   <comm>-<pid> [(<tgid>)] [<cpu>] [<flags>] <seconds>: <event>: <args>
//
// The comm may hold spaces and dashes (the pid is after the last dash); the
// tgid column and the irq-flags column are optional.
#include <cstring>

#include "import_model.hpp"
#include "tinescope/format.hpp"

namespace tinescope::import {

using namespace format;

namespace {

// The value of `key=` in ftrace's "k1=v1 k2=v2" arguments: up to the next
// space, or (for a comm, which may hold spaces) up to ` next_key=`.
std::string_view arg(std::string_view args, std::string_view key, std::string_view next_key = {}) {
  size_t at = 0;
  for (;;) {
    at = args.find(key, at);
    if (at == std::string_view::npos) return {};
    if (at == 0 || args[at - 1] == ' ') break;  // a whole key, not the end of another
    at += key.size();
  }
  at += key.size();
  size_t end = next_key.empty() ? args.find(' ', at) : args.find(next_key, at);
  if (end == std::string_view::npos) end = args.size();
  return args.substr(at, end - at);
}


}  // namespace

Feedlet& FtraceReader::cpu_lane(uint32_t cpu) {
  if (!m_.process_names.count(kCpuLanesPid)) m_.process_names[kCpuLanesPid] = "CPUs";
  return m_.feedlet(kCpuLanesPid, cpu, "CPU " + std::to_string(cpu));
}

void FtraceReader::line(std::string_view s) {
  s = trim(s);
  if (s.empty() || s.front() == '#') return;
  // The CPU column: the first "[digits]".
  size_t lb = std::string_view::npos, rb = 0;
  for (size_t i = s.find('['); i != std::string_view::npos; i = s.find('[', i + 1)) {
    size_t j = i + 1;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    if (j > i + 1 && j < s.size() && s[j] == ']') {
      lb = i, rb = j;
      break;
    }
  }
  if (lb == std::string_view::npos) return;
  std::string_view task = trim(s.substr(0, lb));
  int64_t tgid = -1;
  if (!task.empty() && task.back() == ')') {  // "(  123)" or "(-----)"
    size_t open = task.rfind('(');
    if (open == std::string_view::npos) return;
    if (!to_number(task.substr(open + 1, task.size() - open - 2), tgid)) tgid = -1;
    task = trim(task.substr(0, open));
  }
  const size_t dash = task.rfind('-');
  int64_t pid = 0, cpu = 0;
  if (dash == std::string_view::npos || !to_number(task.substr(dash + 1), pid)) return;
  if (!to_number(s.substr(lb + 1, rb - lb - 1), cpu) || cpu < 0 || cpu > 65535) return;
  // "[flags] seconds:" then " event: args".
  std::string_view rest = s.substr(rb + 1);
  const size_t colon = rest.find(':');
  if (colon == std::string_view::npos) return;
  std::string_view stamp = trim(rest.substr(0, colon));
  const size_t space = stamp.rfind(' ');
  if (space != std::string_view::npos) stamp = stamp.substr(space + 1);
  double seconds;
  if (!to_number(stamp, seconds) || !(seconds >= 0 && seconds * 1e6 < ImportModel::kMaxUs)) return;
  rest = rest.substr(colon + 1);
  const size_t event_end = rest.find(':');
  if (event_end == std::string_view::npos) return;
  const std::string_view event = trim(rest.substr(0, event_end));
  const std::string_view args = trim(rest.substr(event_end + 1));
  ++events_;
  const double us = seconds * 1e6;
  const uint64_t ts = ImportModel::ticks(us);
  last_ts_ = std::max(last_ts_, ts);
  if (tgid >= 0) tgid_of_[pid] = tgid;
  const std::string_view comm = task.substr(0, dash);

  if (event == "sched_switch") {
    ++m_.r.events_read;
    Switch sw;
    if (!to_number(arg(args, "prev_pid="), sw.prev_pid) || !to_number(arg(args, "next_pid="), sw.next_pid)) {
      ++m_.r.unsupported["ftrace sched_switch without prev_pid= and next_pid="];
      return;
    }
    // (the sample's lines end in a JavaScript string's "\n\")
    auto field = [&](std::string_view key) { std::string_view v = arg(args, key); return v.substr(0, v.find('\\')); };
    sw.prev_comm = arg(args, "prev_comm=", " prev_pid="), sw.next_comm = arg(args, "next_comm=", " next_pid=");
    sw.has_prev_prio = to_number(field("prev_prio="), sw.prev_prio);
    sw.has_next_prio = to_number(field("next_prio="), sw.next_prio);
    sw.prev_state = field("prev_state=");
    return sched_switch(uint32_t(cpu), ts, sw);
  }
  if (event == "sched_wakeup" || event == "sched_waking" || event == "sched_wakeup_new") {
    ++m_.r.events_read;
    int64_t woken = -1;
    if (to_number(arg(args, "pid="), woken)) sched_wakeup(uint32_t(cpu), ts, woken, arg(args, "comm=", " pid="));
    return;
  }
  if (event == "sched_migrate_task") {
    int64_t from = -1, to = -1;
    if (to_number(arg(args, "orig_cpu="), from) && to_number(arg(args, "dest_cpu="), to) && migrate(ts, from, to)) {
      ++m_.r.events_read;
      return;
    }
  }
  if (event == "sched_process_exit") {
    int64_t exiting = -1;
    if (to_number(arg(args, "pid="), exiting) && exiting > 0) {
      ++m_.r.events_read;
      exited(exiting, ts);
      return;
    }
  }
  if (event == "cpu_frequency" || event == "cpu_idle") {
    int64_t state = 0, on = 0;
    if (to_number(arg(args, "state="), state) && to_number(arg(args, "cpu_id="), on) &&
        cpu_counter(ts, on, event == "cpu_idle", state)) {
      ++m_.r.events_read;
      return;
    }
  }
  // Userspace annotations (atrace): tracing_mark_write, or a print event
  // shown by its caller's address ("0: B|...").
  const bool print = event == "tracing_mark_write" || event == "print" ||
                     event.find_first_not_of("0123456789abcdefx") == std::string_view::npos;
  if (print && atrace(pid, comm, us, args)) return;
  ++m_.r.events_read;
  ++m_.r.unsupported["ftrace " + std::string(print ? "print" : event)];
}

bool FtraceReader::migrate(uint64_t ts, int64_t from, int64_t to) {
  if (from < 0 || to < 0 || from > 65535 || to > 65535) return false;
  // An arrow from the CPU it left to the one it was moved to.
  const uint64_t id = kMigrationFlowIds | ++migrations_;
  const uint32_t name = m_.intern("migration");
  m_.flows.push_back(Flow{id, ts, m_.next_seq(), 's', false, cpu_lane(uint32_t(from)).id, name});
  m_.flows.push_back(Flow{id, ts, m_.next_seq(), 'f', false, cpu_lane(uint32_t(to)).id, name});
  return true;
}

bool FtraceReader::cpu_counter(uint64_t ts, int64_t cpu, bool idle, int64_t state) {
  if (cpu < 0 || cpu > 65535) return false;
  // cpu_idle's "no longer idle" is state 4294967295 (-1 as u32).
  const double v = idle && state == 4294967295 ? -1.0 : double(state);
  Feedlet& f = cpu_lane(uint32_t(cpu));
  f.points.push_back(Point{ts, m_.next_seq(), kCounterFloat, m_.intern(idle ? "idle state" : "frequency kHz"), 0,
                           bits_of(v)});
  return true;
}

uint32_t FtraceReader::switch_args(const Switch& s, bool prev) {
  RawEvent& e = switch_event_;
  e.reset();
  auto add = [&](const char* key) -> Arg& {
    if (e.arg_count == e.args.size()) e.args.emplace_back();
    Arg& a = e.args[e.arg_count++];
    a.key = key;
    return a;
  };
  auto number = [&](const char* key, int64_t n) {
    Arg& a = add(key);
    a.type = 'i', a.i = n;
  };
  number(prev ? "prev_pid" : "next_pid", prev ? s.prev_pid : s.next_pid);
  if (prev ? s.has_prev_prio : s.has_next_prio) number(prev ? "prev_prio" : "next_prio", prev ? s.prev_prio : s.next_prio);
  if (prev && !s.prev_state.empty()) {  // R (preempted), S (sleeping), D (waiting on I/O)...
    Arg& a = add("prev_state");
    a.type = 'b', a.text = s.prev_state;
  }
  return m_.keep_args(e);
}

void FtraceReader::sched_switch(uint32_t cpu, uint64_t ts, const Switch& s) {
  last_ts_ = std::max(last_ts_, ts);
  const int64_t prev = s.prev_pid, next = s.next_pid;
  // The threads' states first: they may add lanes (the model's vector of
  // lanes grows: a reference into it taken before would dangle).
  if (prev > 0) {
    name_state_lane(prev, s.prev_comm);
    states_.switched_out(int32_t(prev), ts, state_name(s.prev_state));
  }
  if (next > 0) {
    name_state_lane(next, s.next_comm);
    states_.switched_in(int32_t(next), ts);
  }
  Feedlet& lane = cpu_lane(cpu);
  Running& run = running_[cpu];
  // The slice that ends: known only from the switch that started it (the
  // first switch on each CPU ends a slice whose start the trace missed).
  if (run.pid > 0 && run.pid == prev)
    lane.spans.push_back(Span{run.start, ts, run.name, m_.next_seq(), run.args, switch_args(s, true)});
  run = Running{};
  if (next <= 0) return;  // idle
  run = Running{next, m_.intern(std::string(s.next_comm) + "-" + std::to_string(next)), ts, switch_args(s, false)};
  // The woken thread runs: its wakeup's flow ends here.
  auto w = woken_.find(next);
  if (w == woken_.end()) return;
  const uint64_t id = kWakeupFlowIds | ++wakeups_;
  const uint32_t name = m_.intern("wakeup");
  // (The end is placed at the slice's start already: no binding to move it.)
  m_.flows.push_back(Flow{id, w->second.ts, w->second.seq, 's', false, w->second.from, name});
  m_.flows.push_back(Flow{id, ts, m_.next_seq(), 'f', false, lane.id, name});
  woken_.erase(w);
}

void FtraceReader::sched_wakeup(uint32_t cpu, uint64_t ts, int64_t pid, std::string_view comm) {
  if (pid <= 0) return;
  last_ts_ = std::max(last_ts_, ts);
  name_state_lane(pid, comm);
  states_.woken(int32_t(pid), ts);
  // The first wakeup counts (sched_waking comes before sched_wakeup).
  woken_.emplace(pid, Wakeup{ts, m_.next_seq(), cpu_lane(cpu).id});
}

bool FtraceReader::atrace(int64_t tid, std::string_view comm, double us, std::string_view text) {
  // B|tgid|name, E[|tgid], C|tgid|name|value, S|tgid|name|cookie, F|tgid|name|cookie
  if (text.empty() || std::strchr("BECSF", text[0]) == nullptr || (text.size() > 1 && text[1] != '|')) return false;
  std::vector<std::string_view> part;
  for (size_t at = 0;;) {
    size_t bar = text.find('|', at);
    part.push_back(text.substr(at, bar == std::string_view::npos ? std::string_view::npos : bar - at));
    if (bar == std::string_view::npos) break;
    at = bar + 1;
  }
  RawEvent e;
  e.ph = std::string(1, text[0]);
  e.ts = us, e.has_ts = true;
  e.tid = tid, e.has_tid = true;
  int64_t tgid = -1;
  if (part.size() > 1 && !to_number(part[1], tgid)) return false;
  if (tgid < 0) {  // "E" alone: the thread's process from an earlier event
    auto it = tgid_of_.find(tid);
    tgid = it != tgid_of_.end() ? it->second : tid;
  }
  tgid_of_[tid] = tgid;
  e.pid = tgid, e.has_pid = true;
  switch (text[0]) {
    case 'B':
      if (part.size() < 3) return false;
      // The name is the rest: it may hold bars itself.
      e.name = std::string(text.substr(part[0].size() + part[1].size() + 2));
      break;
    case 'E': break;
    case 'C': {
      double v;
      if (part.size() < 4 || !to_number(part[3], v)) return false;
      e.name = std::string(part[2]);
      e.num_args.emplace_back("value", v);
      break;
    }
    default:  // S, F: async, a lane per (process, name, cookie)
      if (part.size() < 4) return false;
      e.name = std::string(part[2]);
      e.cat = e.name;
      e.id = std::string(part[3]);
      e.local_id = true;  // (a cookie is its process's own)
      break;
  }
  m_.take(e);
  if (e.ph == "B" || e.ph == "E") {
    Feedlet& thread = m_.feedlet(tgid, tid, "");
    if (thread.name.empty()) thread.name = std::string(comm);
  }
  if (tid == tgid && !m_.process_names.count(tgid)) m_.process_names[tgid] = std::string(comm);
  return true;
}

void FtraceReader::name_state_lane(int64_t tid, std::string_view comm) {
  std::string& name = state_lane_[int32_t(tid)];
  if (name.empty()) name = std::string(comm) + "-" + std::to_string(tid) + " states";
}

void FtraceReader::state_event(int32_t tid, uint64_t ts, const char* name, bool begin) {
  if (!m_.process_names.count(kThreadStatesPid)) m_.process_names[kThreadStatesPid] = "thread states";
  Feedlet& f = m_.feedlet(kThreadStatesPid, tid, state_lane_[tid]);
  f.be.push_back(BeginEnd{ts, m_.next_seq(), begin, m_.intern(name)});
}

void FtraceReader::finish() {
  // A thread still running when the trace ends has no known end: it stays
  // open (drawn to the end, in no statistics), never a slice cut at the
  // last line (0 ns where it was switched in there).
  for (auto& [cpu, run] : running_)
    if (run.pid > 0) cpu_lane(cpu).spans.push_back(Span{run.start, UINT64_MAX, run.name, m_.next_seq(), run.args});
  running_.clear();
}

}  // namespace tinescope::import
