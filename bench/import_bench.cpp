// import_bench: `tinescope import` of a large Chrome JSON trace (1 GB by
// default; --quick for a smoke run), plain and gzipped, against the JSON
// parser's own speed over the same file (simdjson's On Demand reading every field, keeping
// nothing: the most an importer built on it can do), and its peak memory
// against the JSON's size (a 1 GB JSON must not need 10 GB of RAM).
// Then `tinescope export` of a synthetic trace (bench/synthetic_trace.hpp)
// to Perfetto and to Chrome JSON, in MB written a second (goal: 100 MB/s).
// Prints `figure: NAME VALUE UNIT` lines.
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <CLI/CLI.hpp>
#include <cinttypes>
#include <cstdio>
#include <simdjson.h>
#include <vector>

#include "bench_util.hpp"
#include "synthetic_trace.hpp"
#include "tinescope/import/trace_export.hpp"
#include "tinescope/import/trace_import.hpp"

using namespace tinescope;
using bench::Clock;
using bench::seconds_since;

namespace {

struct Written {
  uint64_t events = 0, objects = 0;  // objects: each created, snapshot and deleted in one task
  uint64_t bytes = 0;
};

// A Chrome trace of about `bytes` bytes, in the object form, as a browser
// writes it: per thread a periodic task (B/E) with three complete phases
// (X), one holding a nested B/E; process counters (C), thread instants (i),
// flows from thread to thread (s/f), thread names (M) and now and then an
// object snapshot (O). Times are microseconds with nanosecond decimals.
bool write_chrome_json(const std::string& path, uint64_t bytes, Written& w) {
  FILE* f = std::fopen(path.c_str(), "wx");
  if (!f) return false;
  std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
  constexpr int kThreads = 8;
  auto put = [&](const char* fmt, auto... args) {
    int n = std::fprintf(f, fmt, args...);
    if (n > 0) w.bytes += uint64_t(n);
    ++w.events;
  };
  std::fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", f);
  w.bytes += 40;
  for (int t = 0; t < kThreads; ++t)
    put("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"worker %d\"}},\n", 1 + t / 4,
        100 + t, t);
  uint64_t task = 0, flow = 0;
  double clock_us[kThreads] = {};
  while (w.bytes < bytes) {
    const int t = int(task % kThreads);
    const int pid = 1 + t / 4, tid = 100 + t;
    double& us = clock_us[t];
    us += 50.0 + double(task % 7) * 1.125;
    const double phase = 10.0 + double(task % 5) * 0.333;
    put("{\"name\":\"task\",\"cat\":\"app\",\"ph\":\"B\",\"ts\":%.3f,\"pid\":%d,\"tid\":%d,\"args\":{\"frame\":%" PRIu64
        "}},\n",
        us, pid, tid, task);
    for (int p = 0; p < 3; ++p) {
      const double at = us + 1.0 + p * (phase + 1.0);
      put("{\"name\":\"phase.%d\",\"cat\":\"app\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d,"
          "\"args\":{}},\n",
          p, at, phase, pid, tid);
      if (p == 1)
        put("{\"name\":\"inner\",\"ph\":\"B\",\"ts\":%.3f,\"pid\":%d,\"tid\":%d},\n"
            "{\"ph\":\"E\",\"ts\":%.3f,\"pid\":%d,\"tid\":%d},\n",
            at + 1.0, pid, tid, at + 2.5, pid, tid),
            ++w.events;
    }
    const double end = us + 3 * (phase + 1.0) + 1.0;
    put("{\"name\":\"queue\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":%d,\"args\":{\"depth\":%" PRIu64 "}},\n", end, pid,
        task % 17);
    put("{\"name\":\"tick\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,\"pid\":%d,\"tid\":%d},\n", end, pid, tid);
    if (task % 4 == 0) {  // a message to the next thread, received a little later
      const int to = (t + 1) % kThreads;
      put("{\"name\":\"msg\",\"cat\":\"ipc\",\"ph\":\"s\",\"id\":%" PRIu64 ",\"ts\":%.3f,\"pid\":%d,\"tid\":%d},\n",
          flow, end, pid, tid);
      put("{\"name\":\"msg\",\"cat\":\"ipc\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%" PRIu64
          ",\"ts\":%.3f,\"pid\":%d,\"tid\":%d},\n",
          flow, std::max(end + 0.5, clock_us[to]), 1 + to / 4, 100 + to);
      ++flow;
    }
    if (task % 500 == 0) {
      for (const char* ph : {"N", "O", "D"})
        put("{\"name\":\"Obj\",\"ph\":\"%s\",\"id\":\"0x%" PRIx64 "\",\"ts\":%.3f,\"pid\":%d,\"tid\":%d,\"args\":{"
            "\"snapshot\":{}}},\n",
            ph, task, *ph == 'N' ? us : *ph == 'O' ? end : end + 0.25, pid, tid);
      ++w.objects;
    }
    put("{\"ph\":\"E\",\"ts\":%.3f,\"pid\":%d,\"tid\":%d},\n", end + 0.5, pid, tid);
    us = end + 0.5;
    ++task;
  }
  put("{\"name\":\"done\",\"ph\":\"i\",\"s\":\"g\",\"ts\":%.3f,\"pid\":1,\"tid\":100}\n]}\n", clock_us[0] + 1);
  return std::fclose(f) == 0;
}

// Writes `from` gzipped (level 1) to `to`.
bool gzip_copy(const std::string& from, const std::string& to) {
  FILE* in = std::fopen(from.c_str(), "rb");
  gzFile out = gzopen(to.c_str(), "wb1");
  bool ok = in && out;
  std::vector<char> buf(1 << 20);
  for (size_t n; ok && (n = std::fread(buf.data(), 1, buf.size(), in)) > 0;) ok = gzwrite(out, buf.data(), unsigned(n)) == int(n);
  if (in) std::fclose(in);
  if (out && gzclose(out) != Z_OK) ok = false;
  return ok;
}

// The parser alone: simdjson's On Demand over the events, a megabyte at a
// time, as the importer parses them, every field of every event read and
// dropped. The JSON this bench writes has one event a line, so the lines
// frame the runs (the importer finds the events' ends itself). Seconds, or
// a negative number if the file is not one event a line.
double parse_alone_s(const std::string& path, uint64_t& fields) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return -1;
  std::string text, run;
  run.reserve((2 << 20) + simdjson::SIMDJSON_PADDING);
  simdjson::ondemand::parser parser;
  std::vector<char> buf(1 << 20);
  bool ok = true;
  auto t0 = Clock::now();
  // Each run: the whole lines read so far that start with '{', as an array.
  auto parse = [&](std::string_view lines) {
    run.assign("[");
    for (size_t at = 0; at < lines.size();) {
      size_t nl = lines.find('\n', at);
      if (nl == std::string_view::npos) nl = lines.size();
      std::string_view line = lines.substr(at, nl - at);
      at = nl + 1;
      if (!line.empty() && line.back() == ',') line.remove_suffix(1);
      if (line.empty() || line.front() != '{' || line.back() != '}') continue;  // not an event: the array's ends
      if (run.size() > 1) run.push_back(',');
      run.append(line);
    }
    run.push_back(']');
    simdjson::ondemand::document doc;
    if (parser.iterate(run.data(), run.size(), run.capacity()).get(doc)) return false;
    for (auto event : doc.get_array()) {
      simdjson::ondemand::object o;
      if (event.get_object().get(o)) return false;
      for (auto field : o) {
        std::string_view key;
        if (field.unescaped_key().get(key)) return false;
        simdjson::ondemand::value v;
        simdjson::ondemand::json_type type;
        if (field.value().get(v) || v.type().get(type)) return false;
        if (type != simdjson::ondemand::json_type::object && v.raw_json_token().empty()) return false;
        ++fields;
      }
    }
    return true;
  };
  for (size_t n; ok && (n = std::fread(buf.data(), 1, buf.size(), f)) > 0;) {
    text.append(buf.data(), n);
    const size_t cut = text.rfind('\n');
    if (cut == std::string::npos) continue;
    ok = parse(std::string_view(text).substr(0, cut + 1));
    text.erase(0, cut + 1);
  }
  if (ok && !text.empty()) ok = parse(text);
  std::fclose(f);
  return ok ? seconds_since(t0) : -1;
}

// `tinescope export` of a synthetic trace of `events` events to each format:
// the figures are MB written a second against the goal of 100 MB/s.
bool export_figures(uint64_t events) {
  const std::string trace = "import_bench.export." + std::to_string(events) + ".tine";
  ::unlink(trace.c_str());
  bench::SyntheticOptions so;
  so.events = events;
  bench::SyntheticResult made;
  std::string error;
  if (!bench::write_synthetic_trace(trace, so, made, error)) {
    std::fprintf(stderr, "import_bench: %s\n", error.c_str());
    return false;
  }
  bool ok = true;
  for (const char* ext : {"pftrace", "json"}) {
    const std::string out = trace + "." + ext;
    ::unlink(out.c_str());
    import::ExportResult r;
    const auto t0 = Clock::now();
    ok = import::export_trace(trace, out, {}, r, error);
    const double s = seconds_since(t0);
    ::unlink(out.c_str());
    if (!ok || r.events_written == 0) {
      std::fprintf(stderr, "import_bench: export to %s: %s\n", out.c_str(), ok ? "nothing written" : error.c_str());
      ok = false;
      break;
    }
    const double mb_s = double(r.bytes_written) / 1e6 / s;
    std::printf("figure: export.%s_mb_per_s %.1f MB/s (%" PRIu64 " events of a %.0f MB trace -> %" PRIu64
                " events, %.0f MB, in %.2f s; %.2fx the goal of 100 MB/s)\n",
                ext[0] == 'p' ? "perfetto" : "json", mb_s, r.events_read, double(made.bytes) / 1e6, r.events_written,
                double(r.bytes_written) / 1e6, s, mb_s / 100);
  }
  ::unlink(trace.c_str());
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"import_bench: Chrome JSON import speed and memory"};
  std::string json;
  double mb = 1024;
  bool quick = false, keep = false;
  app.add_option("--json", json, "Chrome JSON to import (made here if missing)");
  app.add_option("--mb", mb, "size of the JSON to make, in MB");
  app.add_flag("--quick", quick, "a small JSON: checks that every figure prints");
  app.add_flag("--keep", keep, "keep the JSON that was made");
  double export_events = 4e6;
  app.add_option("--export-events", export_events, "events of the synthetic trace that export's figures write out");
  CLI11_PARSE(app, argc, argv);
  if (quick) mb = 16, export_events = 2e5;
  if (json.empty()) json = "import_bench." + std::to_string(uint64_t(mb)) + "MB.json";
  Written made;
  bool generated = false;
  if (::access(json.c_str(), F_OK) != 0) {
    std::printf("import_bench: writing a %.0f MB Chrome JSON to %s\n", mb, json.c_str());
    if (!write_chrome_json(json, uint64_t(mb * 1e6), made)) {
      std::fprintf(stderr, "import_bench: cannot write %s\n", json.c_str());
      return 1;
    }
    generated = true;
  }
  struct stat st;
  ::stat(json.c_str(), &st);
  const double json_mb = double(st.st_size) / 1e6;

  // The limit: the parser alone over the same file, warm in the page cache.
  uint64_t fields = 0;
  const double parse_s = parse_alone_s(json, fields);
  const std::string out = json + ".tine";
  ::unlink(out.c_str());
  bench::PeakAnon peak;
  const double anon_before = double(bench::anon_rss_kb()) / 1024;
  import::ImportResult r;
  std::string error;
  auto t0 = Clock::now();
  const bool ok = import::import_trace(json, out, r, error);
  const double import_s = seconds_since(t0);
  const double anon = peak.finish_mb() - anon_before;
  if (!ok) {
    std::fprintf(stderr, "import_bench: %s\n", error.c_str());
    return 1;
  }
  // What was made must come back whole, or the figures measure something else.
  if (generated && (r.events_read != made.events || !r.unsupported.empty() || r.unmatched_ends)) {
    std::fprintf(stderr, "import_bench: read %" PRIu64 " events (%zu kinds not imported, %" PRIu64
                 " unmatched ends) of the %" PRIu64 " written (%" PRIu64 " objects)\n",
                 r.events_read, r.unsupported.size(), r.unmatched_ends, made.events, made.objects);
    return 1;
  }
  ::stat(out.c_str(), &st);
  const double out_mb = double(st.st_size) / 1e6;
  const double parse_mb_s = json_mb / parse_s, import_mb_s = json_mb / import_s;
  if (parse_s > 0)
    std::printf("figure: import.json_parse_mb_per_s %.1f MB/s (simdjson On Demand alone over the %.0f MB JSON, a "
                "megabyte at a time, %" PRIu64 " fields read: the limit)\n",
                parse_mb_s, json_mb, fields);
  else
    std::printf("figure: import.json_parse_mb_per_s 0 MB/s (no limit: %s is not one event a line)\n", json.c_str());
  std::printf("figure: import.mb_per_s %.1f MB/s (of JSON; %.2fx the parser alone; %.1f s)\n", import_mb_s,
              import_mb_s / parse_mb_s, import_s);
  std::printf("figure: import.events_per_s %.2f M/s (%" PRIu64 " JSON events in, %" PRIu64
              " tinescope events out, %.1f MB trace)\n",
              double(r.events_read) / import_s / 1e6, r.events_read, r.events_written, out_mb);
  std::printf("figure: import.anon_rss_mb %.0f MB (peak while importing: %.0f bytes a JSON event)\n", anon,
              anon * 1e6 / double(std::max<uint64_t>(r.events_read, 1)));
  std::printf("figure: import.anon_to_json %.3f x (peak memory over the JSON's size; goal <= 10: a 1 GB JSON must not "
              "need 10 GB)\n",
              anon / json_mb);
  ::unlink(out.c_str());

  // The same JSON gzipped (as Chrome saves its traces): inflating runs on a
  // thread beside the parser, so this is the plain import's speed at best.
  const std::string gz = json + ".gz";
  if (!gzip_copy(json, gz)) {
    std::fprintf(stderr, "import_bench: cannot write %s\n", gz.c_str());
    return 1;
  }
  ::stat(gz.c_str(), &st);
  const double gz_mb = double(st.st_size) / 1e6;
  import::ImportResult rz;
  t0 = Clock::now();
  const bool gz_ok = import::import_trace(gz, out, rz, error);
  const double gz_s = seconds_since(t0);
  ::unlink(out.c_str());
  ::unlink(gz.c_str());
  if (!gz_ok || rz.events_read != r.events_read) {
    std::fprintf(stderr, "import_bench: %s: %s\n", gz.c_str(), gz_ok ? "not the same events" : error.c_str());
    return 1;
  }
  std::printf("figure: import.gz_mb_per_s %.1f MB/s (of JSON, from its %.0f MB gzip; %.2fx the plain import)\n",
              json_mb / gz_s, gz_mb, import_s / gz_s);
  if (generated && !keep) ::unlink(json.c_str());
  return export_figures(uint64_t(export_events)) ? 0 : 1;
}
