// analysis_bench: needle finding and derived streams on a synthetic trace of
// N events (2e9 by default, or --trace BIG.tine; --quick for a smoke run).
//   analysis.topk_ms               the 100 longest intervals of every thread's
//                                  interval streams over the whole trace (p50 of
//                                  10 runs, warm index pages; the first run too)
//   analysis.derive_events_per_s   computing a derived stream with its pyramid,
//                                  in trace events of the evaluated window per second
//   analysis.field_stream_events_per_s  a field stream (field(...)) over the same
//                                  window: every event decoded with its fields
//   inspect.details_ms             an event's every field, its chunk out of the
//                                  page cache first (p99 of 200 random events)
//   analysis.orphans_ms            the messages never received and never sent,
//                                  per channel and sender, from the index's flows
//   analysis.merge_ms              two nodes' traces (--merge-events each) put on
//                                  one clock (sync events read, fitted) and their
//                                  messages matched, against indexing both
//   analysis.jobs_events_per_s     the response times of every job of a trace of
//                                  --jobs-events scheduling events, as a stream
//                                  with its pyramid (response()), per second
//                                  (chunks dense unless --jobs-packing fast)
// Each printed with its ratio to the goal, and the cost behind it.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <random>
#include <chrono>
#include <cstdio>

#include "synthetic_trace.hpp"
#include "tinescope/analysis/clock_align.hpp"
#include "tinescope/analysis/derived_stream.hpp"
#include "tinescope/analysis/message_across.hpp"
#include "tinescope/analysis/event_details.hpp"
#include "tinescope/analysis/jobs.hpp"
#include "tinescope/analysis/message_report.hpp"
#include "tinescope/analysis/needles.hpp"
#include "tinescope/index/trace_index.hpp"
#include "tinescope/trace_writer.hpp"

using namespace tinescope;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Trace events whose time lies in [t0, t1], from the feedlet sub-index.
uint64_t events_between(const index::TraceIndex& ix, uint64_t t0, uint64_t t1) {
  uint64_t n = 0;
  for (const auto& f : ix.feedlets())
    n += ix.feedlet_position_at(f.id, t1 == UINT64_MAX ? t1 : t1 + 1) - ix.feedlet_position_at(f.id, t0);
  return n;
}

// A trace of `events` events for the field stream: 4 threads, each a loop of
// a "handle" interval and, inside it, a "txn" event of a user type {id: u,
// latency_ms: f} (one event in three is one). False with why.
bool write_field_trace(const std::string& path, uint64_t events, std::string& why) {
  using namespace format;
  Schema schema = builtin_schema();
  schema.add(EventTypeDef{kFirstUserType, "txn", {{FieldType::U64, "id"}, {FieldType::F64, "latency_ms"}}});
  HeaderInfo info;
  info.clock.source = uint8_t(ClockSource::Monotonic);
  info.clock.ticks_per_ns = 1.0;
  info.process_name = "field-bench";
  info.schema = &schema;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return why = path + ": cannot write", false;
  std::string header = build_file_header(info);
  std::fwrite(header.data(), 1, header.size(), f);
  std::vector<uint8_t> frame;
  ChunkBuilder meta;
  auto string_def = [&](uint64_t id, const char* text) {
    uint8_t* p = meta.begin(kStringDef, 0, 64);
    p = ChunkBuilder::put_u64(p, id);
    p = ChunkBuilder::put_bytes(p, text, std::strlen(text));
    meta.end(p);
  };
  string_def(1, "handle");
  meta.finish(0, frame);
  std::fwrite(frame.data(), 1, frame.size(), f);
  std::vector<ChunkBuilder> lanes(4);
  for (uint32_t l = 0; l < 4; ++l) lanes[l].feedlet = l + 1;
  std::mt19937_64 rng(7);
  for (uint64_t i = 0; i < events / 3; ++i) {
    ChunkBuilder& cb = lanes[i % 4];
    const uint64_t t = 1'000'000 + i * 100;
    uint8_t* p = cb.begin(kIntervalBegin, t);
    cb.end(ChunkBuilder::put_u64(p, 1));
    p = cb.begin(kFirstUserType, t + 10);
    uint8_t* size_at = p;
    p = ChunkBuilder::put_u64(p + 1, i);  // (a one-byte size: the fields fit in 127 bytes)
    p = ChunkBuilder::put_f64(p, double(rng() % 100000) / 1000);
    *size_at = uint8_t(p - size_at - 1);
    cb.end(p);
    p = cb.begin(kIntervalEnd, t + 50);
    cb.end(ChunkBuilder::put_u64(p, 1));
    if (cb.full()) {
      cb.finish(0, frame);
      std::fwrite(frame.data(), 1, frame.size(), f);
    }
  }
  for (ChunkBuilder& cb : lanes)
    if (!cb.empty()) cb.finish(0, frame), std::fwrite(frame.data(), 1, frame.size(), f);
  return std::fclose(f) == 0 || (why = path + ": write failed", false);
}

// A trace of about `events` scheduling events: 8 CPUs' threads and a
// dispatcher's; every 100 ns a job of one of 16 tasks arrives (with its
// deadline), starts on one CPU, is preempted, resumes on the next CPU and
// completes: six events a job, a preemption and a migration each.
// Its chunks are dense (lz4 HC) where `dense`, as the recorder writes a
// recording whose events come at under 16 MB/s (DensePace): scheduling
// events mostly do, though this trace's own clock has them 60 times that fast.
bool write_jobs_trace(const std::string& path, uint64_t events, bool dense, std::string& why) {
  using namespace format;
  HeaderInfo info;
  info.clock.source = uint8_t(ClockSource::Monotonic);
  info.clock.ticks_per_ns = 1.0;
  info.process_name = "jobs-bench";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return why = path + ": cannot write", false;
  const std::string header = build_file_header(info);
  std::fwrite(header.data(), 1, header.size(), f);
  std::vector<uint8_t> frame;
  ChunkBuilder meta;
  for (uint64_t id = 1; id <= 16; ++id) {
    const std::string name = "task" + std::to_string(id);
    uint8_t* p = meta.begin(kStringDef, 0, 64);
    p = ChunkBuilder::put_u64(p, id);
    meta.end(ChunkBuilder::put_bytes(p, name.data(), name.size()));
  }
  meta.finish(0, frame);
  std::fwrite(frame.data(), 1, frame.size(), f);
  std::vector<ChunkBuilder> lanes(9);  // 0: the dispatcher, 1 + c: CPU c
  for (uint32_t l = 0; l < 9; ++l) lanes[l].feedlet = l + 1, lanes[l].dense = dense;
  auto put = [&](uint32_t lane, uint16_t type, uint64_t ts, uint64_t task, uint64_t job, uint64_t last) {
    ChunkBuilder& cb = lanes[lane];
    uint8_t* p = cb.begin(type, ts);
    p = ChunkBuilder::put_u64(p, task);
    p = ChunkBuilder::put_u64(p, job);
    cb.end(ChunkBuilder::put_u64(p, last));
    if (cb.full()) cb.finish(0, frame), std::fwrite(frame.data(), 1, frame.size(), f);
  };
  for (uint64_t i = 0; i < events / 6; ++i) {
    const uint64_t t = 1000 + i * 100, task = 1 + i % 16, cpu = i % 8;
    put(0, kJobArrive, t, task, i, 0);
    put(0, kJobDeadline, t, task, i, t + 85 + i % 10);  // some are missed
    put(1 + uint32_t(cpu), kJobStart, t + 10, task, i, cpu);
    put(1 + uint32_t(cpu), kJobPreempt, t + 40, task, i, cpu);
    put(1 + uint32_t((cpu + 1) % 8), kJobResume, t + 60, task, i, (cpu + 1) % 8);
    put(1 + uint32_t((cpu + 1) % 8), kJobComplete, t + 90, task, i, (cpu + 1) % 8);
  }
  for (ChunkBuilder& cb : lanes)
    if (!cb.empty()) cb.finish(0, frame), std::fwrite(frame.data(), 1, frame.size(), f);
  return std::fclose(f) == 0 || (why = path + ": write failed", false);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"analysis_bench: needles and derived streams"};
  std::string trace, expr = "shorter(intervals(name=\"phase.*\"), 3us)", field_expr = "field(name=\"txn\", \"latency_ms\")";
  double events = 2e9, derive_events = 2e8;
  bool quick = false;
  size_t k = 100;
  app.add_option("--trace", trace, "an indexed or indexable trace (default: generate one)");
  app.add_option("-n,--events", events, "events in the generated trace");
  app.add_option("--derive-events", derive_events, "events in the window the derived stream is computed over");
  app.add_option("--stream", expr, "the derived stream to compute");
  app.add_option("--field-stream", field_expr, "the field stream to compute (over a trace made with user events)");
  double field_events = 2e8;
  app.add_option("--field-events", field_events, "events of the trace made for the field stream");
  double merge_events = 1e8;
  app.add_option("--merge-events", merge_events, "events in each of the two traces merged (0: no merge figure)");
  double jobs_events = 1e8;
  app.add_option("--jobs-events", jobs_events, "scheduling events of the trace made for the jobs figure (0: none)");
  std::string jobs_packing = "dense";
  app.add_option("--jobs-packing", jobs_packing, "how that trace's chunks are compressed (dense: lz4 HC, fast: lz4)")
      ->check(CLI::IsMember({"dense", "fast"}));
  app.add_option("-k", k, "needles to find");
  app.add_flag("--quick", quick, "a small trace: checks that every figure prints");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    events = 2e6, derive_events = 1e6, field_events = 1e6, merge_events = 1e6;
    if (!app.count("--jobs-events")) jobs_events = 1e6;
  }
  if (trace.empty()) trace = "index_bench." + std::to_string(uint64_t(events)) + ".tine";  // shared with index_bench
  if (!bench::ensure_bench_trace(trace, uint64_t(events), 16, "analysis_bench")) return 1;
  std::string error;
  auto ix = index::TraceIndex::open(trace, error);
  if (!ix) {
    std::fprintf(stderr, "analysis_bench: %s\n", error.c_str());
    return 1;
  }
  std::printf("trace %s: %llu events, %zu streams\n", trace.c_str(), (unsigned long long)ix->events(), ix->streams().size());

  // ---- needles
  auto streams = analysis::select_streams(*ix, analysis::Expr{});
  analysis::NeedleQuery q;
  q.k = k;
  std::vector<double> runs;
  analysis::NeedleCost cost;
  std::vector<analysis::Record> found;
  for (int i = 0; i < 11; ++i) {
    analysis::NeedleCost c;
    auto t0 = Clock::now();
    found = analysis::longest(*ix, streams, q, &c);
    runs.push_back(ms_since(t0));
    if (i == 0) cost = c;
  }
  const double first = runs[0];
  std::sort(runs.begin() + 1, runs.end());
  const double p50 = runs[1 + runs.size() / 2 - 1];
  std::printf("figure: analysis.topk_ms %.2f ms (k = %zu over %llu events, %zu streams; goal <= 50 ms: %.2fx; "
              "first run %.2f ms; %llu buckets opened, %llu leaves decoded; longest %.1f us, %zuth %.1f us)\n",
              p50, k, (unsigned long long)ix->events(), streams.size(), p50 / 50, first,
              (unsigned long long)cost.nodes_opened, (unsigned long long)cost.leaves_decoded,
              found.empty() ? 0.0 : double(found.front().duration()) / 1e3, found.size(),
              found.empty() ? 0.0 : double(found.back().duration()) / 1e3);

  // ---- a derived stream over a window of about derive_events events
  analysis::Expr e;
  if (!analysis::parse_stream(expr, e, error)) {
    std::fprintf(stderr, "analysis_bench: --stream: %s\n", error.c_str());
    return 1;
  }
  analysis::EvalOptions o;
  o.t0 = ix->first_ts();
  const double fraction = std::min(1.0, derive_events / double(std::max<uint64_t>(1, ix->events())));
  o.t1 = o.t0 + uint64_t(double(ix->last_ts() - ix->first_ts()) * fraction);
  const uint64_t window_events = events_between(*ix, o.t0, o.t1);
  // Three runs, the median reported: on a VM the first run's fresh pages
  // (the stored records) can cost several times what they cost once the
  // guest has touched that memory before; the first run is printed too.
  std::vector<double> times;
  std::unique_ptr<analysis::DerivedStream> s;
  for (int i = 0; i < 3; ++i) {
    s.reset();  // its file goes before the next run writes
    auto t0 = Clock::now();
    s = analysis::DerivedStream::evaluate(*ix, e, error, o);
    times.push_back(ms_since(t0));
    if (!s) {
      std::fprintf(stderr, "analysis_bench: %s\n", error.c_str());
      return 1;
    }
  }
  const double first_ms = times[0];
  std::sort(times.begin(), times.end());
  const double ms = times[1];
  const double per_s = double(window_events) / (ms / 1e3);
  std::printf("figure: analysis.derive_events_per_s %.0f events/s (%.1f M/s; goal >= 50 M/s: %.2fx; %s over %llu events "
              "in %.0f ms, median of 3, first %.0f ms -> %llu records, %u-level pyramid)\n",
              per_s, per_s / 1e6, per_s / 50e6, analysis::format_stream(e).c_str(), (unsigned long long)window_events, ms,
              first_ms, (unsigned long long)s->size(), s->top_shift() - s->leaf_shift() + 1);
  s.reset();

  // ---- a field stream: every event of a trace of user events and
  // intervals decoded with its fields (the index keeps none), a sample per
  // user event. Its own trace: the synthetic one has no user events.
  {
    const std::string ftrace = "analysis_bench.fields." + std::to_string(uint64_t(field_events)) + ".tine";
    if (::access(ftrace.c_str(), R_OK) != 0 && !write_field_trace(ftrace, uint64_t(field_events), error)) {
      std::fprintf(stderr, "analysis_bench: %s\n", error.c_str());
      return 1;
    }
    auto fx = index::TraceIndex::open(ftrace, error);
    if (!fx || !analysis::parse_stream(field_expr, e, error)) {
      std::fprintf(stderr, "analysis_bench: %s\n", error.c_str());
      return 1;
    }
    times.clear();
    for (int i = 0; i < 3; ++i) {
      s.reset();
      auto t0 = Clock::now();
      s = analysis::DerivedStream::evaluate(*fx, e, error);
      times.push_back(ms_since(t0));
      if (!s) {
        std::fprintf(stderr, "analysis_bench: %s\n", error.c_str());
        return 1;
      }
    }
    std::sort(times.begin(), times.end());
    const double field_per_s = double(fx->events()) / (times[1] / 1e3);
    std::printf("figure: analysis.field_stream_events_per_s %.0f events/s (%.1f M/s; goal >= 50 M/s: %.2fx; %s over "
                "%llu events, a third of them user events, in %.0f ms, median of 3 -> %llu samples)\n",
                field_per_s, field_per_s / 1e6, field_per_s / 50e6, analysis::format_stream(e).c_str(),
                (unsigned long long)fx->events(), times[1], (unsigned long long)s->size());
    s.reset();
  }

  // ---- an event's details, its chunk out of the page cache: the trace's
  // bytes of that chunk are dropped (POSIX_FADV_DONTNEED) before each read.
  {
    const int fd = ::open(trace.c_str(), O_RDONLY | O_CLOEXEC);
    std::mt19937_64 rng(51);
    const auto feedlets = ix->feedlets();
    std::vector<double> ms_each;
    std::string why;
    for (int i = 0; i < 200; ++i) {
      const index::FeedletSummary& f = feedlets[rng() % feedlets.size()];
      if (f.events == 0) continue;
      const uint64_t k = rng() % f.events;
      index::EventRef ref;
      ix->feedlet_event(f.id, k, ref);  // (which chunk: its bytes are let go below)
      for (const index::FeedletChunk& c : ix->feedlet_chunks(f.id))
        if (c.first_event <= k) ref.position = c.chunk;
      const index::ChunkRecord r = ix->chunks()[ref.position];
      ::posix_fadvise(fd, off_t(r.offset), off_t(r.size), POSIX_FADV_DONTNEED);
      analysis::EventView v;
      auto t0 = Clock::now();
      if (!analysis::read_event(*ix, f.id, k, v, why)) {
        std::fprintf(stderr, "analysis_bench: %s\n", why.c_str());
        return 1;
      }
      ms_each.push_back(ms_since(t0));
    }
    ::close(fd);
    std::sort(ms_each.begin(), ms_each.end());
    const double p99 = ms_each[size_t(double(ms_each.size() - 1) * 0.99)], p50 = ms_each[ms_each.size() / 2];
    std::printf("figure: inspect.details_ms %.3f ms p99 (p50 %.3f ms; goal p99 <= 5 ms: %.2fx; %zu random events of "
                "%llu, each one's chunk let go from the page cache first)\n",
                p99, p50, p99 / 5, ms_each.size(), (unsigned long long)ix->events());
  }

  // ---- the unreceived report (message_report): every flow of the index
  // read once, window by window; median of 3.
  {
    std::vector<double> ms_each;
    analysis::MessageReport r;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = Clock::now();
      r = analysis::message_report(*ix, 100);
      ms_each.push_back(ms_since(t0));
    }
    std::sort(ms_each.begin(), ms_each.end());
    std::printf("figure: analysis.orphans_ms %.1f ms (goal <= 1000 ms: %.2fx; %llu messages, %llu never received, "
                "%llu never sent, over %llu events, median of 3)\n",
                ms_each[1], ms_each[1] / 1000, (unsigned long long)r.flows, (unsigned long long)r.all.never_received,
                (unsigned long long)r.all.never_sent, (unsigned long long)ix->events());
  }

  // ---- two nodes' traces merged: each indexed (the goal's measure), then
  // put on one clock and their messages matched, from the indexes (median of 3).
  if (merge_events > 0) {
    std::vector<std::unique_ptr<index::TraceIndex>> nodes;
    double index_ms = 0;
    for (uint32_t node : {1u, 2u}) {
      const std::string path = "merge_bench." + std::to_string(uint64_t(merge_events)) + ".node" + std::to_string(node) + ".tine";
      if (::access(path.c_str(), F_OK) != 0) {
        bench::SyntheticOptions o;
        o.events = uint64_t(merge_events), o.threads = 16, o.seed = node, o.node = node;
        bench::SyntheticResult r;
        if (!bench::write_synthetic_trace(path, o, r, error)) return std::fprintf(stderr, "analysis_bench: %s\n", error.c_str()), 1;
      }
      ::unlink((path + ".idx").c_str());
      const auto t0 = Clock::now();
      auto nix = index::TraceIndex::build(path, error);
      index_ms += ms_since(t0);
      if (!nix) return std::fprintf(stderr, "analysis_bench: %s\n", error.c_str()), 1;
      nodes.push_back(std::move(nix));
    }
    std::vector<double> ms_each;
    analysis::ClockAlignment al;
    analysis::CrossMessages across;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = Clock::now();
      if (!analysis::align_traces({nodes[0].get(), nodes[1].get()}, {}, al, error))
        return std::fprintf(stderr, "analysis_bench: %s\n", error.c_str()), 1;
      across = analysis::match_across({nodes[0].get(), nodes[1].get()});
      ms_each.push_back(ms_since(t0));
    }
    std::sort(ms_each.begin(), ms_each.end());
    std::printf("figure: analysis.merge_ms %.1f ms (indexing both: %.1f ms; goal <= 1x of it: %.3fx; %llu + %llu events, "
                "%llu sync messages each way, %zu messages between them, median of 3)\n",
                ms_each[1], index_ms, ms_each[1] / index_ms, (unsigned long long)nodes[0]->events(),
                (unsigned long long)nodes[1]->events(), (unsigned long long)al.clocks[1].there, across.messages.size());
  }

  // ---- jobs: every job's response time as a stream with its pyramid
  // (response()), from a trace of scheduling events alone; median of 3.
  if (jobs_events > 0) {
    const std::string path =
        "analysis_bench.jobs." + jobs_packing + "." + std::to_string(uint64_t(jobs_events)) + ".tine";
    if (::access(path.c_str(), R_OK) != 0 &&
        !write_jobs_trace(path, uint64_t(jobs_events), jobs_packing == "dense", error))
      return std::fprintf(stderr, "analysis_bench: %s\n", error.c_str()), 1;
    auto jx = index::TraceIndex::open(path, error);
    if (!jx || !analysis::parse_stream("response()", e, error))
      return std::fprintf(stderr, "analysis_bench: %s\n", error.c_str()), 1;
    times.clear();
    for (int i = 0; i < 3; ++i) {
      s.reset();
      const auto t0 = Clock::now();
      s = analysis::DerivedStream::evaluate(*jx, e, error);
      times.push_back(ms_since(t0));
      if (!s) return std::fprintf(stderr, "analysis_bench: %s\n", error.c_str()), 1;
    }
    std::sort(times.begin(), times.end());
    const double per_s = double(jx->events()) / (times[1] / 1e3);
    std::printf("figure: analysis.jobs_events_per_s %.0f events/s (%.1f M/s; goal >= 50 M/s: %.2fx; response() over "
                "%llu scheduling events of 9 threads in %s chunks in %.0f ms, median of 3 -> %llu jobs, %u-level pyramid)\n",
                per_s, per_s / 1e6, per_s / 50e6, (unsigned long long)jx->events(), jobs_packing.c_str(), times[1],
                (unsigned long long)s->size(), s->top_shift() - s->leaf_shift() + 1);
    s.reset();
  }
  return 0;
}
