#include "tinescope/render/scene.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <tuple>

namespace tinescope::render {

using index::StreamKind;

namespace {

// A trace's streams of one kind by the name of their key (a task's, a
// lock's): a string id of the name, and the streams of every feedlet.
std::map<std::string, std::pair<uint32_t, std::vector<int>>> streams_by_name(const std::vector<index::StreamInfo>& streams,
                                                                              index::StreamKind kind,
                                                                              const trace::Catalog& cat) {
  std::map<std::string, std::pair<uint32_t, std::vector<int>>> out;
  for (size_t id = 0; id < streams.size(); ++id)
    if (streams[id].kind == kind && streams[id].items) {
      auto& o = out[std::string(cat.string(streams[id].key))];
      o.first = streams[id].key;
      o.second.push_back(int(id));
    }
  return out;
}

// A lane of a trace with no thread of its own: rows a task's or a lock's.
Lane own_lane(uint32_t source, uint32_t feedlet, const char* name, const char* group) {
  Lane l;
  l.source = source, l.feedlet = feedlet;
  l.name = name, l.group = group;
  l.has_intervals = false, l.depth_rows = 0;
  return l;
}

// Whether what was read from `read_events` events (at `read_ms`) is read
// again now that there are `events`: when they changed, at most once a
// second once there is something (a live trace grows all the time).
bool read_again(uint64_t events, uint64_t& read_events, bool have, int64_t now_ms, int64_t& read_ms) {
  if (events == read_events || (have && now_ms - read_ms < 1000)) return false;
  read_events = events, read_ms = now_ms;
  return true;
}

// A metadata value that is a whole number (a sort index), if the trace has it.
std::optional<int64_t> metadata_int(const trace::Catalog& cat, const std::string& key) {
  auto it = cat.metadata.find(key);
  if (it == cat.metadata.end() || it->second.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (errno != 0 || *end != 0) return std::nullopt;
  return int64_t(v);
}

}  // namespace

uint32_t name_colour(std::string_view name) {
  // FNV-1a, then a hue around the wheel at a fixed, readable saturation.
  uint32_t h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  h ^= h >> 15;
  h *= 0x2c1b3c6dU;
  h ^= h >> 12;
  const double hue = double(h % 3600) / 600.0;  // [0, 6)
  const double s = 0.55 + double((h >> 12) % 20) / 100.0, v = 0.85 + double((h >> 20) % 10) / 100.0;
  const double c = v * s, x = c * (1 - std::fabs(std::fmod(hue, 2.0) - 1)), m = v - c;
  double r = 0, g = 0, b = 0;
  switch (int(hue)) {
    case 0: r = c, g = x; break;
    case 1: r = x, g = c; break;
    case 2: g = c, b = x; break;
    case 3: g = x, b = c; break;
    case 4: r = x, b = c; break;
    default: r = c, b = x; break;
  }
  auto u8 = [](double f) { return uint32_t(std::lround(std::clamp(f, 0.0, 1.0) * 255)); };
  return u8(r + m) | u8(g + m) << 8 | u8(b + m) << 16 | 0xff000000u;
}

ClockWindow::ClockWindow(const trace::ClockMap& clock, int64_t n0, int64_t n1) : ns0(n0) {
  k0 = clock.to_ticks(n0);
  k1 = clock.to_ticks(n1 > n0 ? n1 : n0 + 1);
  const int64_t back0 = clock.to_ns(k0), back1 = clock.to_ns(k1);
  exact = k1 - k0 == uint64_t(back1 - back0) && back0 == n0;
  ns_per_tick = k1 > k0 ? double(back1 - back0) / double(k1 - k0) : 1.0;
  ns0 = back0;
}

int64_t ClockWindow::ns(uint64_t t) const {
  if (exact) return ns0 + (int64_t(t) - int64_t(k0));
  return ns0 + int64_t(std::floor((double(t) - double(k0)) * ns_per_tick + 0.5));
}

uint64_t ClockWindow::ticks(int64_t n) const {
  if (exact) return uint64_t(std::max<int64_t>(0, int64_t(k0) + (n - ns0)));
  const double t = double(k0) + double(n - ns0) / ns_per_tick;
  return t <= 0 ? 0 : uint64_t(t + 0.5);
}

bool Scene::add_trace(const std::string& path, std::string& error, const index::BuildOptions& options) {
  std::unique_ptr<index::TraceIndex> ix = index::TraceIndex::open(path, error, options);
  if (!ix) return false;
  add_index(std::move(ix));
  return true;
}

void Scene::add_index(std::shared_ptr<index::TraceIndex> ix) {
  Source s;
  s.path = ix->trace_path();
  s.index = std::move(ix);
  sources_.push_back(std::move(s));
  refresh();
}

void Scene::refresh() {
  lanes_.clear();
  first_ns_ = INT64_MAX;
  last_ns_ = INT64_MIN;
  for (uint32_t i = 0; i < sources_.size(); ++i) {
    Source& s = sources_[i];
    if (!s.scan || s.scan->bytes != s.index->trace_bytes() || s.catalog != s.index->catalog_snapshot()) scan(s, i);
    lanes_.insert(lanes_.end(), s.scan->lanes.begin(), s.scan->lanes.end());
    first_ns_ = std::min(first_ns_, s.scan->first_ns);
    last_ns_ = std::max(last_ns_, s.scan->last_ns);
  }
  if (first_ns_ > last_ns_) first_ns_ = last_ns_ = 0;
  if (sources_.size() > 1) group_by_host();
  std::string unit;  // the one every trace names, else none
  for (size_t i = 0; i < sources_.size(); ++i) {
    const auto& meta = sources_[i].catalog->metadata;
    const auto named = meta.find("displayTimeUnit");
    const std::string this_one = named == meta.end() ? std::string() : named->second;
    if (i == 0) unit = this_one;
    else if (this_one != unit) unit.clear();
  }
  time_unit_ = time_unit_named(unit);
  // By process (those the trace orders first, as it orders them, then by
  // name), then by trace, then as the trace orders the lanes of a process
  // (those it orders first), then by feedlet: Catapult's order, with lanes
  // the trace does not order in the order they came.
  auto order = [](const std::optional<int64_t>& i) { return std::make_pair(!i.has_value(), i.value_or(0)); };
  std::stable_sort(lanes_.begin(), lanes_.end(), [&](const Lane& a, const Lane& b) {
    return std::forward_as_tuple(order(a.group_sort_index), a.group, a.source, order(a.sort_index), a.feedlet) <
           std::forward_as_tuple(order(b.group_sort_index), b.group, b.source, order(b.sort_index), b.feedlet);
  });
}

// Traces of several machines: a process's lanes under "host: process", and
// where two traces still give one name (two runs, two processes of one
// name on one host), each its process id.
void Scene::group_by_host() {
  std::set<std::string> hosts;
  for (const Source& s : sources_) hosts.insert(s.index->header().host);
  std::map<std::string, std::set<uint32_t>> sources_of;
  auto host_group = [&](const Lane& l) {
    const std::string& host = sources_[l.source].index->header().host;
    return hosts.size() > 1 && !host.empty() ? host + ": " + l.group : l.group;
  };
  for (const Lane& l : lanes_) sources_of[host_group(l)].insert(l.source);
  for (Lane& l : lanes_) {
    std::string g = host_group(l);
    if (sources_of[g].size() > 1) {
      const uint32_t pid = sources_[l.source].index->header().pid;
      g += pid ? " (pid " + std::to_string(pid) + ")" : " (trace " + std::to_string(l.source + 1) + ")";
    }
    l.group = std::move(g);
  }
}

void Scene::scan(Source& s, uint32_t source) {
  const index::TraceIndex& ix = *s.index;
  auto scan = std::make_shared<Source::Scan>();
  s.scan = scan;
  scan->bytes = ix.trace_bytes();
  s.catalog = ix.catalog_snapshot();
  const trace::Catalog& cat = *s.catalog;
  scan->catalog_version = cat.version;
  auto to_ns = [&](uint64_t ticks) { return cat.clock.to_ns(ticks); };
  // One reading of the extent: a growing index may move on between calls.
  const uint64_t events = ix.events(), first_ts = ix.first_ts(), last_ts = ix.last_ts();
  s.gaps.clear();
  if (events == 0) return;
  scan->first_ns = to_ns(first_ts);
  scan->last_ns = to_ns(last_ts);

  const std::vector<index::StreamInfo> streams = ix.streams();
  s.stream_colour.assign(streams.size(), 0);
  std::map<uint32_t, Lane> by_feedlet;
  for (const index::FeedletSummary& f : ix.feedlets()) {
    if (f.events == 0) continue;
    Lane& l = by_feedlet[f.id];
    l.source = source;
    l.feedlet = f.id;
    l.name = f.name.empty() ? "thread " + std::to_string(f.tid) : f.name;
    l.tid = f.tid;
    const std::string key = "feedlet." + std::to_string(f.id);
    auto p = cat.metadata.find(key + ".process");
    l.group = p != cat.metadata.end() ? p->second : cat.process_name;
    l.sort_index = metadata_int(cat, key + ".sort_index");
    if (auto pid = cat.metadata.find(key + ".pid"); pid != cat.metadata.end())
      l.group_sort_index = metadata_int(cat, "process." + pid->second + ".sort_index");
  }
  // Lanes of a group that share a name are told apart by their tids.
  std::map<std::pair<std::string, std::string>, uint32_t> named;
  for (const auto& [id, l] : by_feedlet) ++named[{l.group, l.name}];
  for (auto& [id, l] : by_feedlet) l.shares_name = named[{l.group, l.name}] > 1;
  // A row for a CPU of the lane, in order of the CPUs' numbers.
  auto add_cpu = [&](Lane& l, uint32_t cpu, int stream) {
    const auto at = std::lower_bound(l.cpu_numbers.begin(), l.cpu_numbers.end(), cpu);
    const ptrdiff_t k = at - l.cpu_numbers.begin();
    const auto named = cat.cpu_names.find(cpu);
    l.cpus.insert(l.cpus.begin() + k, stream);
    l.cpu_names.insert(l.cpu_names.begin() + k, named != cat.cpu_names.end() ? named->second : "cpu " + std::to_string(cpu));
    l.cpu_numbers.insert(at, cpu);
  };
  for (size_t id = 0; id < streams.size(); ++id) {
    const index::StreamInfo& st = streams[id];
    const bool named = st.kind != StreamKind::Sched && st.kind != StreamKind::Depth && st.kind != StreamKind::Span;
    const std::string_view name = named ? cat.string(st.key) : "";
    s.stream_colour[id] = name_colour(name);
    auto it = by_feedlet.find(st.feedlet);
    if (it == by_feedlet.end() || st.items == 0) continue;
    Lane& l = it->second;
    switch (st.kind) {
      case StreamKind::Interval: l.has_intervals = true; break;
      case StreamKind::Depth:
        // A lane's rows: its deepest interval, from its depth streams (one a
        // nesting depth, whatever the names: asking each name was a query a
        // name, thousands on a real thread, at every live update). Only the
        // last, which holds every deeper one, is asked how deep.
        if (st.key + 1 < index::kDepthStreams) {
          l.depths = std::max(l.depths, st.key + 1);
        } else {
          const index::Buckets b = ix.query(int(id), first_ts, last_ts, 1);
          for (const index::Node& n : b.nodes) l.depths = std::max(l.depths, n.max_depth + 1);
        }
        break;
      case StreamKind::Instant: l.has_instants = true; break;
      case StreamKind::Counter:
        l.counters.push_back(int(id));
        l.counter_names.emplace_back(name);
        break;
      case StreamKind::Sched: add_cpu(l, st.key, int(id)); break;
      default: break;
    }
  }
  // What still runs at the end is in no stream yet (streams are keyed by
  // ends): an interval never ended (an object alive at the end, a thread's
  // main loop) needs its rows, and a CPU whose only segment still runs, its
  // row (stream id -1: drawn from running_at alone). Both are the state
  // after a lane's last chunk, which the index keeps: no walk.
  for (auto& [f, l] : by_feedlet) {
    for (const index::OpenInterval& o : ix.open_at(f, last_ts)) {
      l.has_intervals = true;
      l.depths = std::max(l.depths, o.depth + 1);
    }
    for (const index::RunningJob& r : ix.running_at(f, last_ts))
      if (!std::binary_search(l.cpu_numbers.begin(), l.cpu_numbers.end(), r.cpu)) add_cpu(l, r.cpu, -1);
  }
  for (auto& [f, l] : by_feedlet) {
    l.depth_rows = std::min(l.depths, kMaxDepthRows);
    scan->lanes.push_back(std::move(l));
  }
  // Jobs by task, on every CPU: one lane of the trace, after its threads'.
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  const std::vector<uint64_t> per_type = ix.events_per_type();
  auto tasks = streams_by_name(streams, StreamKind::Task, cat);
  if (!tasks.empty()) {
    Lane l = own_lane(source, Lane::kTasksFeedlet, "jobs by task", "tasks");
    for (auto& [name, t] : tasks) l.tasks.push_back(t.first), l.task_names.push_back(name), l.task_streams.push_back(t.second);
    scan->lanes.push_back(std::move(l));
    // (A live trace's jobs are read again as its scheduling events grow, at
    // most once a second: the scan reads all of them.)
    uint64_t sched = per_type[format::kJobDeadline];
    for (uint16_t t = format::kJobArrive; t <= format::kJobComplete; ++t) sched += per_type[t];
    if (read_again(sched, s.jobs_events, s.jobs != nullptr, now, s.jobs_read_ms)) s.jobs = analysis::job_marks(ix);
  }

  // Locks, a row each: who held it, from every thread's Hold streams.
  auto locks = streams_by_name(streams, StreamKind::Hold, cat);
  for (const Lane& t : scan->lanes)  // (a lock held at the end, never released: in no stream yet)
    if (!t.is_tasks())
      for (const index::HeldLock& h : ix.held_at(t.feedlet, last_ts)) locks[std::string(cat.string(h.lock))].first = h.lock;
  if (!locks.empty()) {
    Lane l = own_lane(source, Lane::kLocksFeedlet, "holders", "locks");
    for (auto& [name, k] : locks) l.locks.push_back(k.first), l.lock_names.push_back(name), l.lock_streams.push_back(k.second);
    scan->lanes.push_back(std::move(l));
    // Its misuse, read again as a live trace's lock events grow.
    if (read_again(per_type[format::kLockAcquire] + per_type[format::kLockRelease], s.lock_events, s.misuse != nullptr, now,
                   s.misuse_read_ms))
    {
      s.misuse = std::make_shared<const std::vector<analysis::SchedViolation>>(
          analysis::lock_misuse(ix, Source::kMaxMisuse, &s.misuse_total));
      s.misuse_longest = 0;
      for (const analysis::SchedViolation& v : *s.misuse) s.misuse_longest = std::max(s.misuse_longest, v.end - v.ts);
    }
  }

  // Gaps: drops before a chunk, lost chunks, damaged bytes (the index keeps
  // them: a scan of every chunk here cost O(trace) at each live update).
  for (const index::Gap& g : ix.gaps()) s.gaps.push_back({g.feedlet, to_ns(g.t0), to_ns(g.t1), g.dropped});
}

bool lane_matches(const Lane& lane, const std::string& pattern, std::string* error) {
  if (pattern.size() >= 2 && pattern.front() == '/' && pattern.back() == '/') {
    // A regular expression (ECMAScript), found anywhere in the thread's
    // name, its label or its process's name.
    // (Compiled once for a run of lanes: the thread list asks for each lane every frame.)
    thread_local std::string compiled_from, compile_error;
    thread_local std::regex re;
    if (pattern != compiled_from) {
      compiled_from = pattern, compile_error.clear();
      try {
        re = std::regex(pattern.substr(1, pattern.size() - 2), std::regex::ECMAScript | std::regex::optimize);
      } catch (const std::regex_error& e) {
        compile_error = e.what();
      }
    }
    if (!compile_error.empty()) {
      if (error) *error = "'" + pattern + "' is not a regular expression: " + compile_error;
      return false;
    }
    return std::regex_search(lane.name, re) || std::regex_search(lane.label(), re) || std::regex_search(lane.group, re);
  }
  // A name (the thread's, its label, or its process's): exactly, as a
  // prefix that '.' or '#' follows, or as a glob (* ? [...]).
  const bool glob = pattern.find_first_of("*?[") != std::string::npos;
  auto match = [&](const std::string& s) {
    if (glob) return fnmatch(pattern.c_str(), s.c_str(), 0) == 0;
    return s == pattern || (s.size() > pattern.size() && s.compare(0, pattern.size(), pattern) == 0 &&
                            (s[pattern.size()] == '.' || s[pattern.size()] == '#'));
  };
  return match(lane.name) || match(lane.group) || (lane.shares_name && match(lane.label()));
}

std::vector<uint32_t> Scene::select_lanes(const std::string& spec, std::string& error) const {
  std::vector<uint32_t> out;
  auto take = [&](uint32_t i) {
    if (std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
  };
  std::vector<std::string> items, leave_out;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    // (A comma inside /regex/, or !/regex/, belongs to it.)
    const size_t open = pos + (pos < spec.size() && spec[pos] == '!');
    if (open < spec.size() && spec[open] == '/' && comma != std::string::npos) {
      const size_t close = spec.find('/', open + 1);
      if (close != std::string::npos && close > comma) comma = spec.find(',', close);
    }
    if (comma == std::string::npos) comma = spec.size();
    std::string want = spec.substr(pos, comma - pos);
    pos = comma + 1;
    if (want.empty()) continue;
    if (want[0] == '!' && want.size() > 1) leave_out.push_back(want.substr(1));
    else items.push_back(want);
  }
  auto matching = [&](const std::string& want, const auto& fn) {
    bool any = false;
    if (std::all_of(want.begin(), want.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      // A lane's number as `info` prints it: its feedlet's (of one trace:
      // with several, numbers name a lane of each); else a thread named so.
      uint64_t n = 0;
      const auto [end, ec] = std::from_chars(want.data(), want.data() + want.size(), n);
      for (uint32_t i = 0; ec == std::errc() && end == want.data() + want.size() && i < lanes_.size(); ++i)
        if (lanes_[i].feedlet == n) fn(i), any = true;
      for (uint32_t i = 0; !any && i < lanes_.size(); ++i)
        if (lanes_[i].name == want) fn(i), any = true;
    } else {
      for (uint32_t i = 0; i < lanes_.size(); ++i)
        if (lane_matches(lanes_[i], want, &error)) fn(i), any = true;
    }
    if (!any && error.empty())
      error = "no lane is '" + want +
              "' (a lane's number as info prints it, its thread or process name, a glob, or a /regular expression/)";
    return any;
  };
  for (const std::string& want : items)
    if (!matching(want, take)) return {};
  // Only lanes left out: every other lane, as they come.
  if (items.empty() && !leave_out.empty())
    for (uint32_t i = 0; i < lanes_.size(); ++i) out.push_back(i);
  for (const std::string& drop : leave_out)
    if (!matching(drop, [&](uint32_t i) { std::erase(out, i); })) return {};
  if (out.empty() && error.empty())
    error = leave_out.empty() ? "no lane named in '" + spec + "' (lanes by number as info prints them, name, glob or "
                                "/regex/, comma separated; !NAME leaves one out)"
                              : "'" + spec + "' leaves out every lane";
  return out;
}

}  // namespace tinescope::render
