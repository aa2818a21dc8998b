// A toy global-EDF scheduler, run in virtual time and written as a trace
// (1 tick = 1 ns), which knows the truth of every job it ran: the reference
// the job analysis is held to (jobs_test.cpp, the viewer's per-task view).
//
// Every microsecond the `cpus` ready jobs of the earliest absolute
// deadlines (ties: task, then job) run; a running job keeps its CPU, one
// that starts or resumes takes the lowest free one (so a job preempted on
// one CPU may resume on another: a migration). A dispatcher thread
// (feedlet 1) records arrivals and deadlines; each CPU's thread (feedlet
// 2 + cpu) records the starts, preemptions, resumptions and completions
// there.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "trace_helpers.hpp"

namespace tinescope::test {

struct SimTask {
  std::string name;
  uint64_t period_us = 0, wcet_us = 0, deadline_us = 0, offset_us = 0;  // deadline: relative to arrival
  uint32_t jobs = 0;
};

struct SimJob {
  uint32_t task = 0;  // index in tasks
  uint64_t id = 0;
  uint64_t arrival = 0, deadline = 0, completion = 0;  // ns
  uint64_t executed = 0;                               // ns
  uint32_t preemptions = 0, migrations = 0;
  uint32_t last_cpu = UINT32_MAX;
  bool missed() const { return completion > deadline; }
  uint64_t response() const { return completion - arrival; }
};

struct EdfSim {
  std::vector<SimTask> tasks;
  uint32_t cpus = 4;
  std::vector<SimJob> jobs;  // the truth, in arrival order
  uint64_t preemptions = 0, migrations = 0;

  // Runs the schedule; returns the trace. Task i's name is string id i + 1.
  std::string run() {
    std::vector<std::string> names;
    for (const SimTask& t : tasks) names.push_back(t.name);
    const size_t thread_names = names.size();
    names.push_back("dispatcher");
    for (uint32_t c = 0; c < cpus; ++c) names.push_back("cpu" + std::to_string(c));
    std::vector<uint64_t> threads;
    for (uint32_t f = 0; f <= cpus; ++f) threads.push_back(thread_names + 1 + f);
    TraceBytes trace = named_trace(names, threads);
    std::vector<format::ChunkBuilder> out(cpus + 1);
    for (uint32_t f = 0; f <= cpus; ++f) out[f].feedlet = f + 1;
    auto put = [&](uint32_t feedlet_index, uint16_t type, uint64_t ts, const SimJob& j, uint64_t last) {
      put_job(out[feedlet_index], type, ts, j.task + 1, j.id, last);
      if (out[feedlet_index].full()) trace.flush(out[feedlet_index]);
    };

    for (uint32_t t = 0; t < tasks.size(); ++t)
      for (uint32_t k = 0; k < tasks[t].jobs; ++k) {
        SimJob j;
        j.task = t, j.id = k;
        j.arrival = (tasks[t].offset_us + k * tasks[t].period_us) * 1000;
        j.deadline = j.arrival + tasks[t].deadline_us * 1000;
        jobs.push_back(j);
      }
    std::stable_sort(jobs.begin(), jobs.end(), [](const SimJob& a, const SimJob& b) { return a.arrival < b.arrival; });
    std::vector<uint64_t> left(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) left[i] = tasks[jobs[i].task].wcet_us * 1000;
    std::vector<int> on(jobs.size(), -1);     // job -> CPU it runs on
    std::vector<int> runs(cpus, -1);          // CPU -> job
    std::vector<bool> started(jobs.size(), false), done(jobs.size(), false);
    size_t arrived = 0, finished = 0;
    for (uint64_t now = 0; finished < jobs.size(); now += 1000) {
      while (arrived < jobs.size() && jobs[arrived].arrival <= now) {
        const SimJob& j = jobs[arrived++];
        put(0, format::kJobArrive, now, j, 0);
        uint8_t* p = out[0].begin(format::kJobDeadline, now);
        p = format::ChunkBuilder::put_u64(p, j.task + 1);
        p = format::ChunkBuilder::put_u64(p, j.id);
        p = format::ChunkBuilder::put_u64(p, j.deadline);
        out[0].end(p);
      }
      std::vector<size_t> ready;
      for (size_t i = 0; i < arrived; ++i)
        if (!done[i]) ready.push_back(i);
      std::sort(ready.begin(), ready.end(), [&](size_t a, size_t b) {
        return std::tie(jobs[a].deadline, jobs[a].task, jobs[a].id) < std::tie(jobs[b].deadline, jobs[b].task, jobs[b].id);
      });
      if (ready.size() > cpus) ready.resize(cpus);
      for (uint32_t c = 0; c < cpus; ++c) {  // preempt what is not chosen
        const int i = runs[c];
        if (i < 0 || std::find(ready.begin(), ready.end(), size_t(i)) != ready.end()) continue;
        put(1 + c, format::kJobPreempt, now, jobs[i], c);
        ++jobs[i].preemptions, ++preemptions;
        runs[c] = -1, on[i] = -1;
      }
      for (size_t i : ready) {  // start or resume the chosen on the lowest free CPU
        if (on[i] >= 0) continue;
        uint32_t c = 0;
        while (runs[c] >= 0) ++c;
        SimJob& j = jobs[i];
        if (j.last_cpu != UINT32_MAX && j.last_cpu != c) ++j.migrations, ++migrations;
        put(1 + c, started[i] ? format::kJobResume : format::kJobStart, now, j, c);
        started[i] = true, j.last_cpu = c;
        runs[c] = int(i), on[i] = int(c);
      }
      for (uint32_t c = 0; c < cpus; ++c) {  // run a microsecond
        const int i = runs[c];
        if (i < 0) continue;
        left[i] -= 1000, jobs[i].executed += 1000;
        if (left[i] > 0) continue;
        jobs[i].completion = now + 1000;
        put(1 + c, format::kJobComplete, now + 1000, jobs[i], c);
        done[i] = true, ++finished;
        runs[c] = -1, on[i] = -1;
      }
    }
    for (format::ChunkBuilder& cb : out) trace.flush(cb);
    return trace.out;
  }
};

// The scenario of the acceptance test: three periodic tasks on 4 CPUs, a
// fourth of short deadlines, and one heavy job (T5) that is preempted and
// migrates: with `overload` its deadline cannot be met, without it is loose.
inline EdfSim toy_edf(bool overload) {
  EdfSim sim;
  sim.tasks = {{"T1", 100, 60, 100, 0, 10},
               {"T2", 150, 110, 150, 0, 7},
               {"T3", 200, 150, 200, 10, 5},
               {"T4", 50, 30, 40, 5, 20}};
  sim.tasks.push_back({"T5", 1000, 500, overload ? 520u : 2000u, 300, 1});
  return sim;
}

}  // namespace tinescope::test
