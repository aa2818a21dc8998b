// perfetto_bench: `tinescope import` of a large Perfetto trace (1 GB by
// default; --quick for a smoke run) against libprotobuf parsing the same
// file into its generated classes alone, and its peak anonymous memory
// (the bar: 200 MB/s, 512 MB whatever the size). The trace is what
// the Perfetto SDK writes for 8 threads (a sequence each, chunks of them
// interleaved): interned names and categories, nested slices with debug
// annotations, flows between threads, a counter per process; plus the
// kernel's sched_switch bundles of 2 CPUs.
// Prints `figure: NAME VALUE UNIT` lines.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cinttypes>
#include <cstdio>

#include "bench_util.hpp"
#include "perfetto_trace.pb.h"
#include "tinescope/import/protowire.hpp"
#include "tinescope/import/trace_import.hpp"

using namespace tinescope;
using bench::Clock;
using bench::seconds_since;
using protowire::Writer;

namespace {

struct Made {
  uint64_t packets = 0, slices = 0, counters = 0, flows = 0, switches = 0;
};

constexpr int kThreads = 8;
constexpr uint64_t kStart = uint64_t(1) << 40;  // ns of BOOTTIME: some 12 days of uptime

// Packet fields (import/proto/perfetto_trace.proto).
enum : uint32_t { kTimestamp = 8, kSeq = 10, kFlags = 13, kTrackEvent = 11, kInterned = 12, kDefaults = 59,
                  kDescriptor = 60, kFtrace = 1 };

bool write_perfetto(const std::string& path, uint64_t bytes, Made& made) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  std::string buf;
  uint64_t written = 0;
  auto flush = [&] {
    if (::write(fd, buf.data(), buf.size()) != ssize_t(buf.size())) return false;
    written += buf.size(), buf.clear();
    return true;
  };
  Writer w(buf);
  auto packet = [&](uint32_t seq, uint64_t ts) {
    size_t p = w.begin(1);
    if (ts) w.u64(kTimestamp, ts);
    w.u64(kSeq, seq);
    ++made.packets;
    return p;
  };
  // Per sequence: its state, a thread track and its process.
  for (int t = 0; t < kThreads; ++t) {
    const uint32_t seq = 1 + uint32_t(t);
    const int pid = 1 + t / 4;
    size_t p = packet(seq, 0);
    w.u64(kFlags, 1);  // SEQ_INCREMENTAL_STATE_CLEARED
    size_t in = w.begin(kInterned);
    const char* names[] = {"task", "parse", "layout", "paint", "inner"};
    for (int i = 0; i < 5; ++i) {
      size_t e = w.begin(2);
      w.u64(1, uint64_t(i + 1)), w.bytes(2, names[i]);
      w.end(e);
    }
    for (int i = 0; i < 2; ++i) {
      size_t e = w.begin(1);
      w.u64(1, uint64_t(i + 1)), w.bytes(2, i ? "render" : "app");
      w.end(e);
    }
    size_t a = w.begin(3);
    w.u64(1, 1), w.bytes(2, "frame");
    w.end(a);
    w.end(in);
    size_t d = w.begin(kDefaults);
    size_t te = w.begin(11);
    w.u64(11, 100 + uint64_t(t));  // the thread's track
    w.end(te);
    w.end(d);
    w.end(p);
    p = packet(seq, 0);
    size_t td = w.begin(kDescriptor);
    w.u64(1, 100 + uint64_t(t));
    size_t th = w.begin(4);
    w.u64(1, uint64_t(pid)), w.u64(2, 1000 + uint64_t(t)), w.bytes(5, "worker " + std::to_string(t));
    w.end(th);
    w.end(td);
    w.end(p);
  }
  for (int pid = 1; pid <= kThreads / 4; ++pid) {
    size_t p = packet(100, 0);
    size_t td = w.begin(kDescriptor);
    w.u64(1, uint64_t(pid));
    size_t pr = w.begin(3);
    w.u64(1, uint64_t(pid)), w.bytes(6, "process " + std::to_string(pid));
    w.end(pr);
    w.end(td);
    w.end(p);
    p = packet(100, 0);
    td = w.begin(kDescriptor);
    w.u64(1, 10 + uint64_t(pid)), w.u64(5, uint64_t(pid)), w.bytes(2, "queue depth");
    size_t c = w.begin(8);
    w.u64(3, 2);  // UNIT_COUNT
    w.end(c);
    w.end(td);
    w.end(p);
  }
  uint64_t clock[kThreads], task[kThreads] = {};
  for (auto& c : clock) c = kStart;
  uint64_t flow = 0, round = 0;
  auto slice = [&](uint32_t seq, uint64_t ts, int type, uint64_t name, uint64_t cat, int64_t frame, uint64_t flow_out,
                   uint64_t flow_in) {
    size_t p = packet(seq, ts);
    w.u64(kFlags, 2);  // SEQ_NEEDS_INCREMENTAL_STATE
    size_t e = w.begin(kTrackEvent);
    w.u64(9, uint64_t(type));
    if (type == 1) w.u64(10, name), w.u64(3, cat);
    if (frame >= 0) {
      size_t a = w.begin(4);
      w.u64(1, 1), w.i64(4, frame);
      w.end(a);
    }
    if (flow_out) w.fixed64(47, flow_out);
    if (flow_in) w.fixed64(48, flow_in);
    w.end(e);
    w.end(p);
    made.slices += type != 3;
  };
  while (written + buf.size() < bytes) {
    // A chunk of each sequence in turn, as Perfetto's buffers hold them.
    for (int t = 0; t < kThreads; ++t) {
      const uint32_t seq = 1 + uint32_t(t);
      for (int k = 0; k < 16; ++k) {
        uint64_t& ts = clock[t];
        const uint64_t n = task[t]++;
        ts += 50000 + (n % 7) * 1125;
        const bool send = n % 4 == 0 && t + 1 < kThreads, receive = n % 4 == 2 && t > 0;
        slice(seq, ts, 1, 1, 1, int64_t(n), send ? (++flow, uint64_t(t + 1) << 40 | n) : 0,
              receive ? uint64_t(t) << 40 | (n - 2) : 0);
        made.flows += receive;
        for (uint64_t ph = 0; ph < 3; ++ph) {
          ts += 2000 + ph * 333;
          slice(seq, ts, 1, 2 + ph, 2, -1, 0, 0);
          if (ph == 1) {
            slice(seq, ts + 500, 1, 5, 2, -1, 0, 0);
            slice(seq, ts + 1500, 2, 0, 0, -1, 0, 0);
          }
          ts += 3000;
          slice(seq, ts, 2, 0, 0, -1, 0, 0);
        }
        ts += 1000;
        slice(seq, ts, 2, 0, 0, -1, 0, 0);
        if (n % 8 == 0) {  // the process's queue depth
          size_t p = packet(seq, ts);
          w.u64(kFlags, 2);
          size_t e = w.begin(kTrackEvent);
          w.u64(9, 4), w.u64(11, 10 + uint64_t(1 + t / 4)), w.i64(30, int64_t(n % 13));
          w.end(e);
          w.end(p);
          ++made.counters;
        }
      }
    }
    // The kernel: a bundle of 16 switches for one CPU.
    const uint32_t cpu = uint32_t(round++ % 2);
    size_t p = packet(200 + cpu, 0);
    size_t b = w.begin(kFtrace);
    w.u64(1, cpu);
    for (int k = 0; k < 16; ++k) {
      const int prev = 1000 + (k + int(cpu)) % kThreads, next = 1000 + (k + 1 + int(cpu)) % kThreads;
      size_t e = w.begin(2);
      w.u64(1, kStart + round * 16 * 60000 + uint64_t(k) * 60000 + cpu * 7), w.u64(2, uint64_t(prev));
      size_t s = w.begin(4);
      w.bytes(1, "worker"), w.u64(2, uint64_t(prev)), w.u64(3, 120), w.u64(4, k % 3 ? 1 : 0);
      w.bytes(5, "worker"), w.u64(6, uint64_t(next)), w.u64(7, 120);
      w.end(s);
      w.end(e);
      ++made.switches;
    }
    w.end(b);
    w.end(p);
    if (buf.size() > (size_t(1) << 20) && !flush()) return false;
  }
  const bool ok = flush();
  return ::close(fd) == 0 && ok;
}

// libprotobuf alone: every packet of the file parsed into a TracePacket
// (one object, reused), from the page cache.
double protobuf_parse_s(const std::string& path, uint64_t& packets) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0) return 0;
  void* map = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return 0;
  const auto* p = static_cast<const uint8_t*>(map);
  const auto* end = p + st.st_size;
  perfetto::protos::TracePacket packet;
  auto t0 = Clock::now();
  while (p < end) {
    uint64_t tag, n;
    if (!protowire::read_varint(p, end, tag) || !protowire::read_varint(p, end, n) || n > uint64_t(end - p)) break;
    if (!packet.ParseFromArray(p, int(n))) break;
    p += n, ++packets;
  }
  const double s = seconds_since(t0);
  ::munmap(map, size_t(st.st_size));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"perfetto_bench: import of a Perfetto trace"};
  double mb = 1000;
  bool quick = false, keep = false;
  std::string trace;
  app.add_option("--mb", mb, "size of the trace to make, MB");
  app.add_flag("--quick", quick, "a 16 MB trace");
  app.add_option("--trace", trace, "the trace (made if it does not exist)");
  app.add_flag("--keep", keep, "keep the trace that was made");
  CLI11_PARSE(app, argc, argv);
  if (quick) mb = 16;
  if (trace.empty()) trace = "perfetto_bench." + std::to_string(uint64_t(mb)) + "MB.pftrace";
  Made made;
  bool generated = false;
  if (::access(trace.c_str(), F_OK) != 0) {
    std::printf("perfetto_bench: writing a %.0f MB Perfetto trace to %s\n", mb, trace.c_str());
    if (!write_perfetto(trace, uint64_t(mb * 1e6), made)) {
      std::fprintf(stderr, "perfetto_bench: cannot write %s\n", trace.c_str());
      return 1;
    }
    generated = true;
  }
  struct stat st;
  ::stat(trace.c_str(), &st);
  const double trace_mb = double(st.st_size) / 1e6;

  uint64_t parsed = 0;
  const double parse_s = protobuf_parse_s(trace, parsed);
  const std::string out = trace + ".tine";
  ::unlink(out.c_str());
  bench::PeakAnon peak;
  const double anon_before = double(bench::anon_rss_kb()) / 1024;
  import::ImportResult r;
  std::string error;
  auto t0 = Clock::now();
  const bool ok = import::import_trace(trace, out, r, error);
  const double import_s = seconds_since(t0);
  const double anon = peak.finish_mb() - anon_before;
  ::unlink(out.c_str());
  if (!ok) {
    std::fprintf(stderr, "perfetto_bench: %s\n", error.c_str());
    return 1;
  }
  // What was made must come back whole, or the figures measure something else.
  const uint64_t want = made.slices + made.counters + made.switches;
  if (generated && (r.events_read != want || !r.unsupported.empty() || r.malformed_events || r.unmatched_ends)) {
    std::fprintf(stderr, "perfetto_bench: read %" PRIu64 " events of the %" PRIu64 " written (%zu kinds not read, %" PRIu64
                 " malformed, %" PRIu64 " unmatched ends)\n",
                 r.events_read, want, r.unsupported.size(), r.malformed_events, r.unmatched_ends);
    for (auto& [k, n] : r.unsupported) std::fprintf(stderr, "  %s: %" PRIu64 "\n", k.c_str(), n);
    return 1;
  }
  const double parse_mb_s = parse_s > 0 ? trace_mb / parse_s : 0, import_mb_s = trace_mb / import_s;
  std::printf("figure: import.protobuf_parse_mb_per_s %.1f MB/s (libprotobuf's generated TracePacket alone over the "
              "%.0f MB trace, %" PRIu64 " packets, from the page cache)\n",
              parse_mb_s, trace_mb, parsed);
  std::printf("figure: import.perfetto_mb_per_s %.1f MB/s (goal >= 200 MB/s: %.2fx; %.2fx libprotobuf's parse alone; "
              "%.1f s; %" PRIu64 " events)\n",
              import_mb_s, import_mb_s / 200, parse_mb_s > 0 ? import_mb_s / parse_mb_s : 0, import_s, r.events_read);
  std::printf("figure: import.perfetto_anon_rss_mb %.0f MB (peak while importing; goal <= 512 MB whatever the size: %.2fx)\n",
              anon, anon / 512);
  if (generated && !keep) ::unlink(trace.c_str());
  return 0;
}
