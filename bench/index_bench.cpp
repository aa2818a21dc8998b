// index_bench: indexing speed (warm and cold page cache) against lz4 and the
// disk, peak anonymous memory, index size, open time and query latency, on a
// synthetic trace of N events (2e9 by default; --quick for a smoke run).
// Prints `figure: NAME VALUE UNIT` lines with the ratio to each limit.
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "bench_util.hpp"
#include "chunk_walk.hpp"  // (index/src) the walk of a chunk's events
#include "pyramid.hpp"  // (index/src) the node pages' packing
#include "synthetic_trace.hpp"
#include "tinescope/index/trace_index.hpp"
#include "tinescope/trace_reader.hpp"

using namespace tinescope;
using bench::Clock;
using bench::PeakAnon;
using bench::seconds_since;

namespace {

void evict(const std::string& path) {  // clean pages leave the page cache without root
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// Reads a file (up to `limit` bytes) through the page cache; the bytes read.
uint64_t read_into_page_cache(const std::string& path, uint64_t limit = UINT64_MAX) {
  std::vector<char> buf(8 << 20);
  int fd = ::open(path.c_str(), O_RDONLY);
  uint64_t total = 0;
  for (ssize_t n; total < limit && (n = ::read(fd, buf.data(), buf.size())) > 0;) total += uint64_t(n);
  ::close(fd);
  return total;
}

double disk_read_mb_per_s(const std::string& path, uint64_t limit) {
  evict(path);
  auto t0 = Clock::now();
  const uint64_t total = read_into_page_cache(path, limit);
  double s = seconds_since(t0);
  return double(total) / s / 1e6;
}

// The trace's first 2 GB mapped, and the chunks in it (headers only), for
// the figures that time decoding them: lz4, and the walk.
struct MappedTrace {
  const uint8_t* map = nullptr;
  size_t size = 0;
  format::Schema schema;
  std::vector<std::pair<uint64_t, format::ChunkHeader>> chunks;  // (offset, header)
  explicit MappedTrace(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    struct stat st;
    ::fstat(fd, &st);
    size = size_t(std::min<uint64_t>(uint64_t(st.st_size), 2ull << 30));
    map = static_cast<const uint8_t*>(::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0));
    ::close(fd);
    struct V : trace::Visitor {
      MappedTrace* t;
      void on_header(const trace::Header& h) override { t->schema = h.schema; }
      void on_chunk(const trace::ChunkInfo& c) override { t->chunks.emplace_back(c.offset, c.header); }
    } v;
    v.t = this;
    trace::Parser p(v, {.decode_data = false});
    p.parse(map, size, 0, false);
  }
  // (Unmapped before the cold figures: pages this mapping holds stay in the page cache.)
  ~MappedTrace() { ::munmap(const_cast<uint8_t*>(map), size); }
  MappedTrace(const MappedTrace&) = delete;
  MappedTrace& operator=(const MappedTrace&) = delete;
};

// lz4 decompression of the trace's own compressed chunks (its first 2 GB),
// on every core: a limit of indexing, which must decode every chunk.
struct Lz4Figure {
  double raw_mb_per_s;        // decompressed output
  double raw_per_stored;      // payload bytes out per trace byte in
};
Lz4Figure lz4_decompress(const MappedTrace& t, unsigned threads) {
  std::atomic<uint64_t> raw{0};
  uint64_t stored = 0;
  for (auto& [off, h] : t.chunks) stored += h.header_size + h.stored_size;
  auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < threads; ++w)
    pool.emplace_back([&, w] {
      std::vector<uint8_t> out(1 << 20);
      uint64_t mine = 0;
      for (size_t i = w; i < t.chunks.size(); i += threads) {
        auto& [off, h] = t.chunks[i];
        // As indexing decodes it: one lz4 block, or each segment's (format.hpp).
        if ((h.flags & (format::kChunkLz4 | format::kChunkLz4Segments)) && trace::chunk_payload(t.map + off, out))
          mine += h.raw_size;
      }
      raw += mine;
    });
  for (auto& th : pool) th.join();
  double s = seconds_since(t0);
  return {double(raw) / s / 1e6, stored ? double(raw) / double(stored) : 1.0};
}

// The walk alone (chunk_walk.hpp): indexing decodes every event through it
// before any stream, pyramid or position is built, and so do the queries
// below the finest stored level. The trace's first data chunks are
// decompressed once, then walked on one core (items gathered per name, as
// indexing does); against lz4 decompressing the same chunks on that core.
struct WalkFigure {
  double walk_ns, lz4_ns;  // an event, one core
  uint64_t events, items;  // walked each pass
};
WalkFigure walk_alone(const MappedTrace& t) {
  std::vector<std::pair<uint64_t, format::ChunkHeader>> chunks;  // the first 1 500 data chunks
  for (const auto& c : t.chunks)
    if (c.second.feedlet != format::kMetadataFeedlet && chunks.size() < 1500) chunks.push_back(c);
  std::vector<std::pair<format::ChunkHeader, std::vector<uint8_t>>> raw;  // (header, payload)
  WalkFigure f{1e9, 1e9, 0, 0};
  std::vector<uint8_t> buf;
  for (auto& [off, h] : chunks)
    if (const uint8_t* r = trace::chunk_payload(t.map + off, buf)) {
      raw.emplace_back(h, std::vector<uint8_t>(r, r + h.raw_size));
      f.events += h.event_count;
    }
  for (int rep = 0; rep < 5 && f.events; ++rep) {  // the best of several: this VM's speed swings
    auto t0 = Clock::now();
    for (auto& [off, h] : chunks) trace::chunk_payload(t.map + off, buf);
    f.lz4_ns = std::min(f.lz4_ns, seconds_since(t0) * 1e9 / double(f.events));
  }
  const index::Layouts layouts(t.schema);
  std::vector<index::ItemRun> runs(64);
  for (int rep = 0; rep < 7 && f.events; ++rep) {
    std::map<uint32_t, index::WalkState> walks;
    uint64_t types[format::kMaxEventType + 1] = {};
    f.items = 0;
    auto t0 = Clock::now();
    for (const auto& [h, payload] : raw) {
      for (index::ItemRun& r : runs) r.clear();
      std::string why;
      index::walk_chunk(
          payload.data(), payload.size(), h, layouts, walks[h.feedlet], [&](uint64_t, uint16_t type) { ++types[type]; },
          [&](const index::Item& it) __attribute__((always_inline)) { runs[it.name & 63].add(it); },
          [](const index::MessageEvent&) {}, why);
      for (const index::ItemRun& r : runs) f.items += r.size();
    }
    f.walk_ns = std::min(f.walk_ns, seconds_since(t0) * 1e9 / double(f.events));
  }
  return f;
}

// Unpacking a stored level's node pages, the inner loop of a query answered
// from stored levels: ns a node for interval pages like a dense stream's
// (56 nodes, in the cache), against copying the node's 72 bytes there.
struct UnpackFigure {
  double ns_per_node, copy_ns_per_node;
};
UnpackFigure page_unpack() {
  using index::Node;
  std::mt19937_64 rng(3);
  constexpr uint32_t kShift = 30;
  std::vector<std::vector<uint8_t>> pages;
  std::vector<uint64_t> first;
  for (int pg = 0; pg < 64; ++pg) {
    std::vector<Node> nodes(index::kNodesPerPage);
    uint64_t bucket = 5000 + uint64_t(pg) * 200;
    for (Node& n : nodes) {
      bucket += 1 + rng() % 3;
      const uint64_t base = bucket << kShift, last = base + ((uint64_t(1) << kShift) - 1);
      n.bucket = bucket, n.count = uint32_t(100 + rng() % 300), n.max_depth = uint32_t(rng() % 6);
      n.iv.busy = rng() % (uint64_t(1) << 32), n.iv.min_dur = rng() % 5000;
      n.iv.max_dur = n.iv.min_dur + rng() % (uint64_t(1) << 28);
      n.iv.longest_end = base + rng() % (uint64_t(1) << kShift);
      n.iv.min_start = base - rng() % (uint64_t(1) << 26), n.iv.max_end = last - rng() % (uint64_t(1) << 20);
    }
    std::vector<uint8_t> out(index::kNodesPerPage * index::kMaxPackedNode + index::kPagePadding);
    out.resize(index::pack_nodes(index::StreamKind::Interval, kShift, nodes.data(), index::kNodesPerPage, out.data()) +
               index::kPagePadding);
    pages.push_back(std::move(out));
    first.push_back(nodes[0].bucket);
  }
  Node got[index::kNodesPerPage], copy[index::kNodesPerPage];
  const double nodes = 2000.0 * double(pages.size() * index::kNodesPerPage);
  UnpackFigure best{1e9, 1e9};
  for (int rep = 0; rep < 9; ++rep) {  // the best of several: this VM's speed swings
    auto t0 = Clock::now();
    for (int it = 0; it < 2000; ++it)
      for (size_t pg = 0; pg < pages.size(); ++pg)
        index::unpack_nodes(index::StreamKind::Interval, kShift, first[pg], pages[pg].data(),
                            pages[pg].size() - index::kPagePadding, index::kNodesPerPage, got);
    best.ns_per_node = std::min(best.ns_per_node, seconds_since(t0) * 1e9 / nodes);
    t0 = Clock::now();
    for (int it = 0; it < 2000; ++it)
      for (size_t pg = 0; pg < pages.size(); ++pg) {
        std::memcpy(copy, got, sizeof got);
        asm volatile("" : : "r"(copy) : "memory");  // each copy is made
      }
    best.copy_ns_per_node = std::min(best.copy_ns_per_node, seconds_since(t0) * 1e9 / nodes);
  }
  return best;
}

// The open and query figures, in a process that only opens the trace's
// index (evicted from the page cache) and queries it, as a viewer does: the
// process that built the index has its heap grown and its memory touched
// already, which a viewer's first queries do not find (index_bench runs
// itself again with --queries for these). Returns the peak anonymous memory
// in MB, or -1 if the index does not open.
double open_and_query(const std::string& trace, bool quick) {
  const std::string idx = trace + ".idx";
  std::string error;
  struct stat st;
  const uint64_t index_bytes = ::stat(idx.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
  PeakAnon peak_query;
  // Open an indexed trace. First as an index larger than the warming budget
  // (an eighth of the memory: past ~1.8*10^10 events on a 24 GB machine),
  // where the warmer picks the coarsest levels' pages; then as this one is.
  evict(idx);
  index::BuildOptions part;
  part.warm_bytes = index_bytes / 4;
  auto t0 = Clock::now();
  auto ix = index::TraceIndex::open(trace, error, part);
  const double open_part_ms = seconds_since(t0) * 1e3;
  ix.reset();
  // The first view: what a viewer's first picture asks of the index just
  // opened (evicted): every lane over the whole trace at 1 280 columns
  // (stored levels, at this zoom). Story 2 of the mission: the first
  // picture of a trace larger than memory well under a second once indexed.
  evict(idx);
  t0 = Clock::now();
  ix = index::TraceIndex::open(trace, error);
  uint32_t view_lanes = 0;
  if (ix) {
    std::vector<std::pair<int, index::Buckets>> view;
    std::vector<bool> lane(1, false);
    for (const index::StreamInfo& info : ix->streams()) {  // each feedlet once
      if (lane.size() <= info.feedlet) lane.resize(info.feedlet + 1, false);
      if (lane[info.feedlet]) continue;
      lane[info.feedlet] = true, ++view_lanes;
      ix->query_lane(info.feedlet, ix->first_ts(), ix->last_ts(), 1280, view);
    }
  }
  const double first_view_ms = seconds_since(t0) * 1e3;
  ix.reset();
  evict(idx);
  t0 = Clock::now();
  ix = index::TraceIndex::open(trace, error);
  double open_ms = seconds_since(t0) * 1e3;
  if (!ix) {
    std::fprintf(stderr, "index_bench: %s\n", error.c_str());
    peak_query.finish_mb();  // (its thread)
    return -1;
  }
  std::printf("figure: index.open_ms %.2f ms (goal <= 50 ms: %.2fx; %.2f ms where the index is four times the warming "
              "budget)\n",
              open_ms, open_ms / 50, open_part_ms);
  std::printf("figure: index.first_view_ms %.1f ms (opening the index, evicted, and answering every lane, %u, over the "
              "whole trace at 1280 columns: a first picture's queries; goal well under 1 s: %.2fx)\n",
              first_view_ms, view_lanes, first_view_ms / 1000);

  // Queries: one lane (every stream of one feedlet), 1280 columns, random zooms
  // from the whole trace down to 1280 ns; each answer into the last one's
  // memory, as the viewer's picture builder asks.
  auto streams = ix->streams();
  std::vector<std::vector<int>> lanes;
  for (int id = 0; id < int(streams.size()); ++id) {
    uint32_t f = streams[size_t(id)].feedlet;
    if (lanes.size() < f) lanes.resize(f);
    lanes[f - 1].push_back(id);
  }
  const uint64_t lo = ix->first_ts(), hi = ix->last_ts();
  std::mt19937_64 rng(1);
  struct Query {
    uint32_t feedlet;
    uint64_t t, span;
    int octave;  // log2 of the span, in ticks
  };
  std::vector<Query> list(quick ? 300 : 3000);
  for (Query& q : list) {
    q.feedlet = streams[size_t(lanes[rng() % lanes.size()][0])].feedlet;
    double zoom = std::uniform_real_distribution<double>(std::log2(1280.0), std::log2(double(hi - lo)))(rng);
    q.span = uint64_t(std::exp2(zoom));
    q.t = lo + rng() % (hi - lo - q.span + 1);
    q.octave = int(zoom);
  }
  uint64_t nodes = 0;
  std::vector<std::pair<int, index::Buckets>> answer;
  // The first pass right after opening (index pages come from the disk as
  // they are first needed), then the same queries again (in the page cache).
  // Where the time goes, by how the answer was made: decoded from the chunks
  // (some stream below its finest stored level) or all from stored levels.
  std::vector<double> decoded_us, stored_us;
  // The last pass by the window's octave: where the p99 comes from (the
  // decoded band at the budget, the stored levels of every stream).
  struct Band {
    std::vector<double> us;
    size_t decoded = 0;
    uint64_t nodes = 0;
  };
  std::map<int, Band> bands;
  // Page faults of this process in a pass: on a VM where one costs several
  // us, the first pass's (memory every thread's answers touch for the first
  // time) are what sets it apart from the next (docs/PERFORMANCE.md, index.query_us).
  auto minor_faults = [] {
    rusage u;
    ::getrusage(RUSAGE_SELF, &u);
    return uint64_t(u.ru_minflt);
  };
  std::vector<double> us;           // the last pass, in the list's order
  std::vector<bool> decoded_query;  // the same
  auto run = [&](double& p50, double& p99, uint64_t& faults) {
    us.clear(), decoded_query.clear();
    decoded_us.clear(), stored_us.clear(), bands.clear();
    faults = minor_faults();
    for (const Query& q : list) {
      auto q0 = Clock::now();
      ix->query_lane(q.feedlet, q.t, q.t + q.span, 1280, answer);
      const double took = seconds_since(q0) * 1e6;
      bool decoded = false;
      Band& band = bands[q.octave];
      for (auto& [id, b] : answer) nodes += b.nodes.size(), band.nodes += b.nodes.size(), decoded |= b.from_events;
      us.push_back(took);
      decoded_query.push_back(decoded);
      (decoded ? decoded_us : stored_us).push_back(took);
      band.us.push_back(took);
      band.decoded += decoded;
    }
    faults = minor_faults() - faults;
    std::vector<double> sorted = us;
    std::sort(sorted.begin(), sorted.end());
    p50 = sorted[sorted.size() / 2], p99 = sorted[sorted.size() * 99 / 100];
  };
  // Which queries the first pass's p99 comes from: the slowest 1 %, by when
  // they came (the first ones wait for the index's pages) and how they were
  // answered.
  auto slowest_of_pass = [&] {
    std::vector<size_t> order(us.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    const size_t k = std::max<size_t>(1, us.size() / 100);
    std::partial_sort(order.begin(), order.begin() + ptrdiff_t(k), order.end(),
                      [&](size_t a, size_t b) { return us[a] > us[b]; });
    size_t early = 0, dec = 0;
    std::map<int, size_t> by_octave;
    for (size_t j = 0; j < k; ++j) {
      early += order[j] < 300, dec += decoded_query[order[j]];
      ++by_octave[list[order[j]].octave];
    }
    std::printf("first pass, its slowest %zu queries: %zu among the first 300, %zu decoded; by window 2^octave:", k, early,
                dec);
    for (auto& [octave, n] : by_octave) std::printf(" %d:%zu", octave, n);
    // How many are over the goal: steadier from run to run than the p99,
    // which is the goal's exactly when fewer than 1 % are.
    size_t over = 0, over_early = 0;
    for (size_t i = 0; i < us.size(); ++i) over += us[i] > 200, over_early += us[i] > 200 && i < 300;
    std::printf("; over 200 us: %zu (%zu among the first 300)\n", over, over_early);
  };
  auto p99_of = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() * 99 / 100];
  };
  auto p50_of = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  double p50, p99, warm50, warm99;
  uint64_t faults, warm_faults;
  run(p50, p99, faults);
  slowest_of_pass();
  run(warm50, warm99, warm_faults);
  std::printf("lane queries by window (warm pass): 2^octave ticks, queries, decoded, p50 / p90 / max us, nodes\n");
  for (auto& [octave, band] : bands) {
    std::sort(band.us.begin(), band.us.end());
    const size_t n = band.us.size();
    std::printf("  2^%-2d %4zu %4zu %7.0f %7.0f %7.0f %8.0f\n", octave, n, band.decoded, band.us[n / 2],
                band.us[n * 9 / 10], band.us.back(), double(band.nodes) / double(n));
  }
  const double buckets_per_query = double(nodes) / double(2 * list.size());
  const double decoded99 = p99_of(decoded_us), stored99 = p99_of(stored_us);
  const size_t decoded_n = decoded_us.size(), stored_n = stored_us.size();
  // The first pass again, on the index opened (evicted) as one four times
  // the warming budget: a trace past ~2*10^10 events on a 24 GB machine,
  // whose finer levels come from the disk as the queries first read them,
  // and so do the chunks its decoded queries read (a trace that large is
  // not in the page cache: evicted too).
  ix.reset();
  evict(idx);
  evict(trace);
  ix = index::TraceIndex::open(trace, error, part);
  double over50 = 0, over99 = 0;
  uint64_t over_faults = 0;
  if (ix) run(over50, over99, over_faults);
  const double over_decoded50 = decoded_us.empty() ? 0.0 : p50_of(decoded_us);
  const double anon_query = peak_query.finish_mb();
  std::printf("figure: index.query_us %.0f us p99 (p50 %.0f us; goal p99 <= 200 us: %.2fx; just opened, the trace in the "
              "page cache; %zu streams a lane, "
              "%.0f buckets a query; %llu page faults)\n",
              p99, p50, p99 / 200, lanes[0].size(), buckets_per_query, (unsigned long long)faults);
  std::printf("figure: index.query_warm_us %.0f us p99 (p50 %.0f us; the same queries again; %llu page faults)\n", warm99,
              warm50, (unsigned long long)warm_faults);
  std::printf("figure: index.query_decoded_us %.0f us p99 (%zu queries decoded from the chunks; warm)\n", decoded99,
              decoded_n);
  std::printf("figure: index.query_stored_us %.0f us p99 (%zu queries from stored levels only; warm)\n", stored99,
              stored_n);
  std::printf("figure: index.query_over_budget_us %.0f us p99 (p50 %.0f us, decoded ones' %.0f us; the same queries just "
              "opened, the index four times the warming budget and the trace out of the page cache: %.2fx query_us's "
              "goal; %llu page faults)\n",
              over99, over50, over_decoded50, over99 / 200, (unsigned long long)over_faults);
  std::printf("figure: index.query_anon_rss_mb %.0f MB (peak while opening and querying, in a process that only does that)\n",
              anon_query);
  return anon_query;
}

// Runs this program again with --queries (open_and_query) in a process of
// its own, its figures passed through to this one's output. Returns the
// peak anonymous memory it printed, or -1 if it did not run to the end.
double queries_in_a_fresh_process(const std::string& trace, bool quick) {
  std::fflush(stdout);  // this process's figures first
  int out[2];
  if (::pipe(out) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addclose(&actions, out[1]);
  std::vector<std::string> args = {"index_bench", "--queries", "--trace", trace};
  if (quick) args.push_back("--quick");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (spawned != 0) {
    ::close(out[0]);
    std::fprintf(stderr, "index_bench: cannot run itself again for the queries: %s\n", std::strerror(spawned));
    return -1;
  }
  double anon = -1;
  FILE* in = ::fdopen(out[0], "r");
  char* line = nullptr;
  size_t room = 0;
  while (::getline(&line, &room, in) > 0) {
    std::fputs(line, stdout);
    std::sscanf(line, "figure: index.query_anon_rss_mb %lf", &anon);
  }
  std::free(line);
  std::fclose(in);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? anon : -1;
}

// The complete intervals running across a time (TraceIndex::spanning), which
// every lane's picture asks at its right edge: on a synthetic trace whose
// tasks are complete events (the 2*10^9 trace has none, and a lane without
// any asks nothing). Random lanes and times; the index warm, as the lane
// queries' warm figure. Returns false (said) if the trace cannot be made.
bool spanning_figure(bool quick) {
  const std::string trace = "index_bench.spans.tine";
  ::unlink(trace.c_str());
  ::unlink((trace + ".idx").c_str());
  bench::SyntheticOptions opt;
  opt.events = quick ? 2'000'000 : 50'000'000;
  opt.threads = 16;
  opt.completes = true;
  bench::SyntheticResult made;
  std::string error;
  if (!bench::write_synthetic_trace(trace, opt, made, error)) {
    std::fprintf(stderr, "index_bench: %s\n", error.c_str());
    return false;
  }
  auto ix = index::TraceIndex::build(trace, error);
  if (!ix) {
    std::fprintf(stderr, "index_bench: %s\n", error.c_str());
    return false;
  }
  // The same times for each of: spanning() alone; open_at() with
  // spanning(), as a picture asked for its lanes' right edge before
  // running_across(); and that. Each over all of them in turn (one after
  // another at one time, the first would pay for the others' reads).
  std::mt19937_64 rng(5);
  const uint64_t lo = ix->first_ts(), hi = ix->last_ts();
  std::vector<std::pair<uint32_t, uint64_t>> times(4000);
  for (auto& [f, t] : times) f = 1 + uint32_t(rng() % opt.threads), t = lo + rng() % (hi - lo);
  std::vector<double> us, apart_us, across_us;
  std::vector<size_t> apart_found, across_found;
  uint64_t found = 0;
  for (int pass = 0; pass < 2; ++pass) {  // the first reads the index in; the second is timed
    us.clear(), apart_us.clear(), across_us.clear(), apart_found.clear(), across_found.clear(), found = 0;
    for (const auto& [f, t] : times) {
      const auto t0 = Clock::now();
      found += ix->spanning(f, t).size();
      us.push_back(seconds_since(t0) * 1e6);
    }
    for (const auto& [f, t] : times) {
      const auto t0 = Clock::now();
      apart_found.push_back(ix->open_at(f, t).size() + ix->spanning(f, t).size());
      apart_us.push_back(seconds_since(t0) * 1e6);
    }
    for (const auto& [f, t] : times) {
      const auto t0 = Clock::now();
      const index::RunningAcross across = ix->running_across(f, t);
      across_us.push_back(seconds_since(t0) * 1e6);
      across_found.push_back(across.open.size() + across.spans.size());
    }
    if (across_found != apart_found) {
      std::fprintf(stderr, "index_bench: running_across found other than open_at and spanning\n");
      return false;
    }
  }
  std::sort(us.begin(), us.end());
  std::sort(apart_us.begin(), apart_us.end());
  std::sort(across_us.begin(), across_us.end());
  const index::TraceIndex::Parts parts = ix->index_parts();
  const uint64_t span_bytes = parts.node_pages[uint32_t(index::StreamKind::Span)];
  uint64_t span_items = 0, completes = 0;
  for (const index::StreamInfo& info : ix->streams()) {
    if (info.kind == index::StreamKind::Span) span_items += info.items;
    if (info.kind == index::StreamKind::Interval && info.key == 1) completes += info.items;  // (string 1: "task")
  }
  std::printf("figure: index.spanning_us %.1f us p99 (p50 %.1f us; %.2f found a query; %llu events, %llu complete "
              "tasks, %llu of them long: span stream %.1f kB, %.4f of the trace; asked with each lane's query, whose "
              "goal p99 <= 200 us it shares: %.2fx)\n",
              us[us.size() * 99 / 100], us[us.size() / 2], double(found) / double(us.size()),
              (unsigned long long)ix->events(), (unsigned long long)completes, (unsigned long long)span_items,
              double(span_bytes) / 1e3, double(span_bytes) / double(made.bytes), us[us.size() * 99 / 100] / 200);
  const double across99 = across_us[across_us.size() * 99 / 100], apart99 = apart_us[apart_us.size() * 99 / 100];
  std::printf("figure: index.running_across_us %.1f us p99 (p50 %.1f us; a lane's right edge in one walk, where open_at "
              "and spanning took p99 %.1f us, p50 %.1f us: %.2fx of that; of the lane query's goal, p99 <= 200 us: "
              "%.2fx)\n",
              across99, across_us[across_us.size() / 2], apart99, apart_us[apart_us.size() / 2], across99 / apart99,
              across99 / 200);
  ix.reset();
  ::unlink(trace.c_str());
  ::unlink((trace + ".idx").c_str());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"index_bench: indexing, memory, size, open and query figures"};
  std::string trace;
  double events = 2e9;
  bool quick = false, keep = false;
  app.add_option("--trace", trace, "trace to use (made with tinescope-gen if missing)");
  app.add_option("-n,--events", events, "events in the synthetic trace");
  app.add_flag("--quick", quick, "a small trace: checks that every figure prints");
  app.add_flag("--keep", keep, "keep the generated trace and its index");
  bool queries_only = false;
  app.add_flag("--queries", queries_only, "only the open and query figures, on the trace's index as it is (what "
                                          "index_bench runs in a fresh process of its own)");
  bool spanning_only = false;
  app.add_flag("--spanning", spanning_only, "only the figures of what runs across a time (spanning, running_across)");
  CLI11_PARSE(app, argc, argv);
  if (queries_only) return open_and_query(trace, quick) < 0 ? 1 : 0;
  if (spanning_only) return spanning_figure(quick) ? 0 : 1;
  if (quick) events = 2e6;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  bool generated = false;
  if (trace.empty()) trace = "index_bench." + std::to_string(uint64_t(events)) + ".tine";
  if (!bench::ensure_bench_trace(trace, uint64_t(events), 16, "index_bench", &generated)) return 1;
  const std::string idx = trace + ".idx";
  struct stat st;
  ::stat(trace.c_str(), &st);
  const double trace_mb = double(st.st_size) / 1e6;

  // Cold first: neither the trace nor the index in the page cache. (Indexing
  // reads such a trace past the page cache, docs/INDEX.md: the warm figure
  // below reads it into it, and the queries after find it there, as the
  // recorder leaves a trace.)
  // The disk's speed varies on a VM (here 0.5-2.1 GB/s from run to run): it
  // is read here and again after the warm figure, and the faster taken.
  double disk = disk_read_mb_per_s(trace, 4ull << 30);
  evict(trace);
  std::unique_ptr<index::TraceIndex> ix;
  auto index_anew = [&](double& seconds) {  // false (said) if it fails
    ::unlink(idx.c_str());
    std::string error;
    auto t0 = Clock::now();
    ix = index::TraceIndex::build(trace, error);
    seconds = seconds_since(t0);
    if (!ix) std::fprintf(stderr, "index_bench: %s\n", error.c_str());
    return ix != nullptr;
  };
  double cold_s = 0, warm_s = 0;
  PeakAnon peak_index;  // (of this process's first indexing: the heap is its own)
  if (!index_anew(cold_s)) return 1;
  const double anon_indexing = peak_index.finish_mb();
  ix.reset();

  // Warm: the trace is in the page cache.
  read_into_page_cache(trace);
  if (!index_anew(warm_s)) return 1;
  const uint64_t n = ix->events();
  Lz4Figure lz4;
  WalkFigure walk;
  {
    const MappedTrace mapped(trace);
    lz4 = lz4_decompress(mapped, cores);
    walk = walk_alone(mapped);
  }
  const double warm_mb_s = trace_mb / warm_s;
  // What lz4 alone allows: indexing decodes every chunk, so it reads the trace
  // no faster than lz4 turns it into payload on these cores.
  const double lz4_trace_mb_s = lz4.raw_mb_per_s / lz4.raw_per_stored;
  const double lz4_events_s = lz4_trace_mb_s * double(n) / trace_mb;
  std::printf("figure: index.events_per_s %.0f events/s (%.1f M/s, goal 150 M/s: %.2fx; %llu events, %.0f MB/s of trace; "
              "%.2f of what lz4 alone allows)\n",
              double(n) / warm_s, double(n) / warm_s / 1e6, double(n) / warm_s / 150e6, (unsigned long long)n, warm_mb_s,
              double(n) / warm_s / lz4_events_s);
  std::printf("figure: index.lz4_decompress_mb_per_s %.0f MB/s (%u threads, raw output; %.2f payload bytes a trace byte: "
              "at most %.0f MB/s of trace, %.0f M events/s)\n",
              lz4.raw_mb_per_s, cores, lz4.raw_per_stored, lz4_trace_mb_s, lz4_events_s / 1e6);
  const uint64_t index_bytes = ix->index_bytes();
  double ratio = double(index_bytes) / double(st.st_size);
  std::printf("figure: index.size_ratio %.4f ratio (index %.1f MB / trace %.1f MB; goal <= 0.05: %.2fx)\n", ratio,
              double(index_bytes) / 1e6, trace_mb, ratio / 0.05);
  ix.reset();

  disk = std::max(disk, disk_read_mb_per_s(trace, 4ull << 30));
  read_into_page_cache(trace);  // (for the queries below; the disk's reading evicted it)
  std::printf("figure: index.disk_read_mb_per_s %.0f MB/s\n", disk);
  // Where lz4 decodes slower than the disk reads, no indexer reaches the disk's
  // speed; nor where decoding the events alone (the walk and lz4, on every
  // core, before any stream is built) is slower than the disk.
  const double decode_mb_s = cores * 1e3 / (walk.walk_ns + walk.lz4_ns) * trace_mb / (double(n) / 1e6);
  std::printf("figure: index.cold_mb_per_s %.0f MB/s (%.2f of the disk's sequential read; goal >= 0.8; "
              "%.2f of the lower of the disk and lz4's %.0f MB/s of trace; decoding the events alone on %u cores "
              "allows %.0f MB/s, %.2f of the disk: this figure is %.2f of that)\n",
              trace_mb / cold_s, trace_mb / cold_s / disk, trace_mb / cold_s / std::min(disk, lz4_trace_mb_s),
              lz4_trace_mb_s, cores, decode_mb_s, decode_mb_s / disk, trace_mb / cold_s / decode_mb_s);

  // The open and query figures: index_bench.cpp's open_and_query(), in a
  // fresh process (the trace in the page cache; the pass on an index over
  // the warming budget evicts it).
  const double anon_query = queries_in_a_fresh_process(trace, quick);
  if (anon_query < 0) return 1;
  std::printf("figure: index.walk_ns_per_event %.2f ns (the walk alone, one core, %llu events of the trace in the cache, "
              "%llu items; %.1fx lz4's %.2f ns an event; both on %u cores: at most %.0f M events/s before any stream is "
              "built)\n",
              walk.walk_ns, (unsigned long long)walk.events, (unsigned long long)walk.items, walk.walk_ns / walk.lz4_ns,
              walk.lz4_ns, cores,
              cores * 1e3 / (walk.walk_ns + walk.lz4_ns));
  if (!spanning_figure(quick)) return 1;
  const UnpackFigure unpack = page_unpack();
  std::printf("figure: index.page_unpack_ns_per_node %.2f ns (interval pages of %u nodes, in the cache; %.1fx a memcpy "
              "of the node's %zu bytes, %.2f ns)\n",
              unpack.ns_per_node, index::kNodesPerPage, unpack.ns_per_node / unpack.copy_ns_per_node, sizeof(index::Node),
              unpack.copy_ns_per_node);
  double budget = 256 + 0.005 * trace_mb;
  std::printf("figure: index.anon_rss_mb %.0f MB (peak while indexing; while opening and querying %.0f MB; "
              "goal <= %.0f MB: %.2fx)\n",
              anon_indexing, anon_query, budget, std::max(anon_indexing, anon_query) / budget);
  if (generated && !keep) ::unlink(trace.c_str());
  if (!keep) ::unlink(idx.c_str());
  return 0;
}
