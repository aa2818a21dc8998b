// The reference model ("oracle") that pictures and commands are checked
// against: deliberately simple and slow. It decodes every event of a small
// trace with the trace reader and works out by brute force, from the rules
// docs/INDEX.md states (Stream items, Breaks), what happened on each lane:
// its intervals (with their depths, the truncated ones, those never ended),
// its instants and its counters' samples, its job segments per CPU, and the
// messages between lanes. From that it says what each pixel
// column of a window must show, and what it may show (a column of slack on
// each side of an edge, where rounding decides). It shares no code with the
// index or the renderer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trace_helpers.hpp"

namespace tinescope::test::oracle {

struct Interval {
  uint64_t start = 0, end = 0;  // ticks; end UINT64_MAX: never ended (drawn to the right edge)
  uint32_t name = 0, depth = 0;
  bool truncated = false;       // cut at a break (drops or lost chunks before its end)
};

// A job's segment on a CPU (docs/INDEX.md, Sched): a job is (task, id).
struct Segment {
  uint64_t start = 0, end = 0;  // ticks; end UINT64_MAX: still running at the end
  uint32_t task = 0;
  bool truncated = false;
};

// A message: a send and its receive, matched by id (the tests' ids are
// never reused); an orphan has one half.
struct Message {
  bool sent = false, received = false;
  uint64_t send = 0, recv = 0;  // ticks
  uint32_t src = 0, dst = 0;    // feedlets
};

struct Lane {
  std::vector<Interval> intervals;
  std::map<uint32_t, std::vector<Segment>> cpus;  // by CPU
  std::vector<uint64_t> instants;
  std::map<uint32_t, std::vector<std::pair<uint64_t, double>>> counters;  // name -> (ts, value), in time order
  uint64_t unmatched_ends = 0, truncated = 0;
  uint64_t job_moved = 0, cpu_taken = 0, job_end_elsewhere = 0, job_end_unmatched = 0;
};

struct Model {
  std::map<uint32_t, Lane> lanes;  // by feedlet
  std::map<uint64_t, Message> messages;  // by id
  uint64_t first_ts = UINT64_MAX, last_ts = 0;
  trace::Catalog catalog;
};

// Every event of the trace, walked per feedlet in its chunks' order.
inline Model build(const Collected& c) {
  Model m;
  m.catalog = c.catalog;
  struct Frame {
    uint32_t name;
    uint64_t start;
  };
  std::map<uint32_t, std::vector<Frame>> stacks;
  struct Job {
    uint32_t task, cpu;
    uint64_t id, start;
  };
  std::map<uint32_t, std::vector<Job>> running;  // per feedlet
  auto segment_ends = [&](Lane& lane, const Job& j, uint64_t end, bool cut) {
    lane.cpus[j.cpu].push_back({j.start, end, j.task, cut});
  };
  std::map<uint32_t, uint64_t> last_sequence;  // per feedlet
  uint32_t chunk = UINT32_MAX;
  for (const OwnedEvent& o : c.events) {
    const trace::Event& e = o.e;
    if (e.feedlet == format::kMetadataFeedlet) continue;
    Lane& lane = m.lanes[e.feedlet];
    std::vector<Frame>& stack = stacks[e.feedlet];
    if (o.chunk != chunk) {  // a chunk's first event: does it follow a break?
      chunk = o.chunk;
      const format::ChunkHeader& h = c.chunks[o.chunk].header;
      auto last = last_sequence.find(e.feedlet);
      const bool brk = last != last_sequence.end() && (h.dropped_before != 0 || h.sequence != last->second + 1);
      last_sequence[e.feedlet] = h.sequence;
      if (brk) {  // every open frame ends here, truncated
        for (size_t d = 0; d < stack.size(); ++d)
          lane.intervals.push_back({stack[d].start, e.ts, stack[d].name, uint32_t(d), true});
        lane.truncated += stack.size() + running[e.feedlet].size();
        stack.clear();
        for (const Job& j : running[e.feedlet]) segment_ends(lane, j, e.ts, true);
        running[e.feedlet].clear();
      }
    }
    m.first_ts = std::min(m.first_ts, e.ts), m.last_ts = std::max(m.last_ts, e.ts);
    switch (e.type) {
      case format::kIntervalBegin: stack.push_back({uint32_t(e.u[0]), e.ts}); break;
      case format::kIntervalEnd: {
        // The nearest open frame of its name; frames above it never ended:
        // they end with it, truncated.
        size_t d = stack.size();
        while (d > 0 && stack[d - 1].name != uint32_t(e.u[0])) --d;
        if (d == 0) {
          ++lane.unmatched_ends;
          break;
        }
        for (size_t k = d; k < stack.size(); ++k, ++lane.truncated)
          lane.intervals.push_back({stack[k].start, e.ts, stack[k].name, uint32_t(k), true});
        lane.intervals.push_back({stack[d - 1].start, e.ts, stack[d - 1].name, uint32_t(d - 1), false});
        stack.resize(d - 1);
        break;
      }
      case format::kIntervalComplete:
        lane.intervals.push_back({e.ts - std::min(e.ts, e.u[1]), e.ts, uint32_t(e.u[0]), uint32_t(stack.size()), false});
        m.first_ts = std::min(m.first_ts, e.ts - std::min(e.ts, e.u[1]));
        break;
      case format::kInstant: lane.instants.push_back(e.ts); break;
      case format::kJobStart:
      case format::kJobResume: {
        // It ends the same job running elsewhere (moved) and whatever runs on its CPU.
        const Job now{uint32_t(e.u[0]), uint32_t(e.u[2]), e.u[1], e.ts};
        std::vector<Job> left;
        for (const Job& j : running[e.feedlet]) {
          if (j.cpu == now.cpu || (j.task == now.task && j.id == now.id)) {
            segment_ends(lane, j, e.ts, false);
            ++(j.cpu == now.cpu ? lane.cpu_taken : lane.job_moved);
          } else {
            left.push_back(j);
          }
        }
        left.push_back(now);
        running[e.feedlet] = left;
        break;
      }
      case format::kJobPreempt:
      case format::kJobBlock:
      case format::kJobComplete: {  // ends the job where it runs, whichever CPU it names
        std::vector<Job>& jobs = running[e.feedlet];
        size_t i = 0;
        while (i < jobs.size() && !(jobs[i].task == uint32_t(e.u[0]) && jobs[i].id == e.u[1])) ++i;
        if (i == jobs.size()) {
          ++lane.job_end_unmatched;
          break;
        }
        if (jobs[i].cpu != uint32_t(e.u[2])) ++lane.job_end_elsewhere;
        segment_ends(lane, jobs[i], e.ts, false);
        jobs.erase(jobs.begin() + ptrdiff_t(i));
        break;
      }
      case format::kMessageSend:
      case format::kMessageRecv: {
        Message& msg = m.messages[e.u[0]];
        if (e.type == format::kMessageSend) msg.sent = true, msg.send = e.ts, msg.src = e.feedlet;
        else msg.received = true, msg.recv = e.ts, msg.dst = e.feedlet;
        break;
      }
      case format::kCounterInt: lane.counters[uint32_t(e.u[0])].push_back({e.ts, double(e.i(1))}); break;
      case format::kCounterFloat: lane.counters[uint32_t(e.u[0])].push_back({e.ts, e.f(1)}); break;
      default: break;
    }
  }
  for (auto& [f, stack] : stacks)  // never ended: open at the end, drawn to the right edge
    for (size_t d = 0; d < stack.size(); ++d)
      m.lanes[f].intervals.push_back({stack[d].start, UINT64_MAX, stack[d].name, uint32_t(d), false});
  for (auto& [f, jobs] : running)
    for (const Job& j : jobs) segment_ends(m.lanes[f], j, UINT64_MAX, false);
  for (auto& [f, lane] : m.lanes)
    for (auto& [name, samples] : lane.counters)
      std::stable_sort(samples.begin(), samples.end(), [](auto& a, auto& b) { return a.first < b.first; });
  return m;
}

// What a row's pixel column must and may show: `must`, something is drawn
// (the column lies inside an interval, a column from its edges); `may`,
// something may be (the column is within a column of one).
struct Columns {
  std::vector<bool> must, may;
  explicit Columns(uint32_t n) : must(n, false), may(n, false) {}
  // [x0, x1) in columns (x1 >= x0).
  void cover(double x0, double x1) {
    const int64_t n = int64_t(must.size());
    const int64_t lo = std::max<int64_t>(0, int64_t(std::floor(x0)) - 1);
    const int64_t hi = std::min<int64_t>(n - 1, int64_t(std::ceil(x1)) + 1);
    for (int64_t c = lo; c <= hi; ++c) may[size_t(c)] = true;
    for (int64_t c = std::max<int64_t>(0, int64_t(std::ceil(x0)) + 1); c + 2 <= x1 && c < n; ++c)
      must[size_t(c)] = true;
  }
};

}  // namespace tinescope::test::oracle
