// `tinescope index TRACE` (with a progress bar), `tinescope info TRACE` and
// `tinescope stats TRACE [--json]`: building the index and what it knows.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "figure_options.hpp"
#include "tinescope/analysis/categories.hpp"
#include "tinescope/analysis/message_report.hpp"
#include "tinescope/import/trace_export.hpp"
#include "tinescope/import/trace_import.hpp"
#include "tinescope/index/trace_index.hpp"
#include "tinescope/render/scene.hpp"
#include "tinescope/render/time_axis.hpp"

namespace tinescope::app {
namespace {

using index::TraceIndex;

struct ProgressBar {
  bool tty = isatty(2);
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), last{};
  void operator()(const index::Progress& p) {
    auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::milliseconds(tty ? 100 : 2000) && p.bytes_done < p.bytes_total) return;
    last = now;
    double f = p.bytes_total ? double(p.bytes_done) / double(p.bytes_total) : 1;
    double s = std::chrono::duration<double>(now - start).count();
    int w = int(f * 30);
    std::fprintf(stderr, "%sindexing [%.*s%*s] %3.0f%%  %.0f MB/s", tty ? "\r" : "", w,
                 "##############################", 30 - w, "", f * 100,
                 s > 0 ? double(p.bytes_done) / s / 1e6 : 0.0);
    if (!tty) std::fputc('\n', stderr);
  }
};

}  // namespace

std::unique_ptr<TraceIndex> open_index(const std::string& trace, bool quiet, bool force) {
  std::string error, why;
  index::BuildOptions o;
  ProgressBar bar;
  if (!quiet) o.progress = [&](const index::Progress& p) { bar(p); };
  auto ix = force ? TraceIndex::build(trace, error, o) : TraceIndex::open(trace, error, o, &why);
  if (!quiet && bar.last != std::chrono::steady_clock::time_point{}) std::fputc('\n', stderr);
  if (!ix) std::fprintf(stderr, "tinescope: %s\n", error.c_str());
  return ix;
}

namespace {

std::string type_name(const TraceIndex& ix, size_t code) { return std::string(ix.catalog().type_name(uint16_t(code))); }

// Metadata that describes a lane (an import's feedlet.N.pid, .process,
// .sort_index; process.P.sort_index): info shows it as the lanes themselves.
bool describes_a_lane(const std::string& key) {
  for (const char* prefix : {"feedlet.", "process."}) {
    const size_t n = std::strlen(prefix);
    if (key.compare(0, n, prefix) != 0) continue;
    size_t at = n + (key.size() > n && key[n] == '-');
    const size_t digits = at;
    while (at < key.size() && std::isdigit(static_cast<unsigned char>(key[at]))) ++at;
    if (at > digits && at < key.size() && key[at] == '.') return true;
  }
  return false;
}

nlohmann::json messages_json(const TraceIndex& ix);

nlohmann::json stats_json(const TraceIndex& ix) {
  using nlohmann::json;
  json j;
  j["trace"] = ix.trace_path();
  j["index"] = ix.index_path();
  j["trace_bytes"] = ix.trace_bytes();
  j["index_bytes"] = ix.index_bytes();
  j["events"] = ix.events();
  j["dropped"] = ix.dropped();
  uint64_t t0 = ix.first_ts(), t1 = ix.last_ts();
  j["first_ns"] = ix.to_ns(t0);
  j["last_ns"] = ix.to_ns(t1);
  j["duration_ns"] = ix.to_ns(t1) - ix.to_ns(t0);
  // Who recorded it: the file header, and the trace's metadata (ts_metadata).
  const trace::Header& h = ix.header();
  j["process"] = h.process_name;
  j["pid"] = h.pid;
  j["host"] = h.host;
  j["command"] = h.cmdline;
  j["recorder"] = h.recorder;
  json metadata = json::object();
  for (const auto& [k, v] : ix.catalog().metadata) metadata[k] = v;
  j["metadata"] = metadata;
  json types = json::object();
  auto per_type = ix.events_per_type();
  for (size_t t = 0; t < per_type.size(); ++t)
    if (per_type[t]) {  // (types may share a name: an import's argument types are all ".args")
      json& n = types[type_name(ix, t)];
      n = (n.is_null() ? uint64_t(0) : n.get<uint64_t>()) + per_type[t];
    }
  j["events_per_kind"] = types;
  json feedlets = json::array();
  for (const auto& f : ix.feedlets()) {
    const index::WalkCounts& w = f.counts;
    feedlets.push_back({{"id", f.id}, {"tid", f.tid}, {"name", f.name}, {"events", f.events}, {"chunks", f.chunks},
                        {"dropped", f.dropped}, {"first_ns", ix.to_ns(f.first_ts)}, {"last_ns", ix.to_ns(f.last_ts)},
                        {"not_as_recorded", {{"unmatched_ends", w.unmatched_ends},
                                             {"truncated", w.truncated},
                                             {"job_moved", w.job_moved},
                                             {"cpu_taken", w.cpu_taken},
                                             {"job_end_elsewhere", w.job_end_elsewhere},
                                             {"job_end_unmatched", w.job_end_unmatched}}}});
  }
  j["feedlets"] = feedlets;
  json damage = json::array();
  for (const auto& d : ix.damage()) damage.push_back({{"offset", d.offset}, {"length", d.length}, {"reason", d.reason}});
  j["damaged"] = damage;
  json losses = json::array();
  for (const auto& l : ix.losses())
    losses.push_back({{"feedlet", l.feedlet}, {"first_sequence", l.first_sequence}, {"chunks", l.count}});
  j["lost_chunks"] = losses;
  auto streams = ix.streams();
  // The CPUs that scheduling events ran jobs on (a Sched stream per lane and
  // CPU), with the names the trace gives them.
  std::map<uint32_t, std::pair<uint64_t, std::vector<uint32_t>>> cpus;  // cpu -> (segments, feedlets)
  for (const auto& s : streams)
    if (s.kind == index::StreamKind::Sched) cpus[s.key].first += s.items, cpus[s.key].second.push_back(s.feedlet);
  json cpu_list = json::array();
  for (const auto& [cpu, seen] : cpus) {
    const auto named = ix.catalog().cpu_names.find(cpu);
    cpu_list.push_back({{"cpu", cpu},
                        {"name", named != ix.catalog().cpu_names.end() ? named->second : ""},
                        {"segments", seen.first},
                        {"feedlets", seen.second}});
  }
  j["cpus"] = cpu_list;
  json kinds = json::object();
  for (const auto& s : streams) kinds[index::kind_name(s.kind)] = kinds.value(index::kind_name(s.kind), 0) + 1;
  j["streams"] = kinds;
  // What the index is made of, in bytes; "other": tables, directory, header and footer.
  const TraceIndex::Parts parts = ix.index_parts();
  json pages = json::object();
  uint64_t known = parts.flow_blocks + parts.resume_points;
  for (size_t k = 0; k < std::size(parts.node_pages); ++k) {
    if (parts.node_pages[k] == 0) continue;
    pages[index::kind_name(index::StreamKind(k))] = parts.node_pages[k];
    known += parts.node_pages[k];
  }
  const uint64_t total = ix.index_bytes();
  j["index_parts"] = {{"node_pages", pages},
                      {"flow_blocks", parts.flow_blocks},
                      {"resume_points", parts.resume_points},
                      {"other", total > known ? total - known : 0}};
  j["chunks"] = ix.chunk_count();
  j["messages"] = messages_json(ix);
  return j;
}

// What became of the messages (analysis/message_report.hpp): all, per
// channel, per sending lane; null if the trace has none.
nlohmann::json messages_json(const TraceIndex& ix) {
  using nlohmann::json;
  const analysis::MessageReport r = analysis::message_report(ix, 0);
  if (!r.flows) return nullptr;
  auto counts = [](const analysis::MessageCounts& c) {
    return json{{"sent", c.sent},
                {"received", c.received},
                {"matched", c.matched},
                {"never_received", c.never_received},
                {"never_sent", c.never_sent},
                {"received_again", c.received_again},
                {"received_before_sent", c.received_before_sent},
                {"latency_ns", {{"p50", c.latency_p50}, {"p90", c.latency_p90}, {"p99", c.latency_p99}, {"max", c.latency_max}}}};
  };
  json m = counts(r.all);
  json channels = json::array(), senders = json::array();
  const auto catalog = ix.catalog_snapshot();
  for (const auto& [ch, c] : r.by_channel) {
    json row = counts(c);
    row["channel"] = ch;
    row["name"] = catalog->channel_name(ch);  // (ts_channel_name; "" if none)
    channels.push_back(row);
  }
  std::map<uint32_t, std::string> lanes;
  for (const auto& f : ix.feedlets()) lanes[f.id] = f.name;
  for (const auto& [fe, c] : r.by_sender) {
    json row = counts(c);
    row["feedlet"] = fe, row["lane"] = lanes[fe];
    senders.push_back(row);
  }
  m["by_channel"] = channels;
  m["by_sender"] = senders;
  return m;
}

// With several traces: the halves of trace t's messages matched in another
// trace are no orphans. Takes them off `never_received` (its sends received
// there) and `never_sent` (its receives sent there), in the totals and the
// rows of their channel and lane, and says how many in `to_other_traces`
// and `from_other_traces`.
void count_across(nlohmann::json& m, const analysis::CrossMessages& across, uint32_t t) {
  if (m.is_null()) return;
  auto take = [](nlohmann::json* row, const char* what, const char* moved) {
    if (!row) return;
    (*row)[what] = (*row)[what].get<uint64_t>() - 1;
    (*row)[moved] = (*row)[moved].get<uint64_t>() + 1;
  };
  std::map<uint64_t, nlohmann::json*> channel;
  std::map<uint64_t, nlohmann::json*> lane;
  m["to_other_traces"] = uint64_t(0), m["from_other_traces"] = uint64_t(0);
  for (auto& r : m["by_channel"]) channel[r["channel"].get<uint64_t>()] = &r;
  for (auto& r : m["by_sender"]) lane[r["feedlet"].get<uint64_t>()] = &r;
  for (auto* rows : {&channel, &lane})
    for (auto& [key, row] : *rows) (*row)["to_other_traces"] = uint64_t(0), (*row)["from_other_traces"] = uint64_t(0);
  auto row = [](std::map<uint64_t, nlohmann::json*>& rows, uint64_t key) {
    auto it = rows.find(key);
    return it == rows.end() ? nullptr : it->second;
  };
  for (const analysis::CrossMessage& x : across.messages) {
    if (x.send_trace == t) {
      take(&m, "never_received", "to_other_traces");
      take(row(channel, x.send.channel), "never_received", "to_other_traces");
      take(row(lane, x.send.src), "never_received", "to_other_traces");
    }
    if (x.recv_trace == t) {
      take(&m, "never_sent", "from_other_traces");
      take(row(channel, x.recv.channel), "never_sent", "from_other_traces");
      take(row(lane, x.recv.dst), "never_sent", "from_other_traces");
    }
  }
}

// The messages part of info and stats, as text: the totals, then a line per
// channel and per lane (the messages it sent, and the receives on it never
// sent; at most `rows` of each, those with orphans first).
void print_messages(const nlohmann::json& m, size_t rows) {
  if (m.is_null()) return;
  auto line = [](const char* what, const std::string& who, const nlohmann::json& c) {
    std::printf("  %-10s %-24s %10" PRIu64 " sent %10" PRIu64 " received %8" PRIu64 " never received %6" PRIu64
                " never sent %6" PRIu64 " again  latency p50 %s p99 %s\n",
                what, who.c_str(), c["sent"].get<uint64_t>(), c["received"].get<uint64_t>(),
                c["never_received"].get<uint64_t>(), c["never_sent"].get<uint64_t>(), c["received_again"].get<uint64_t>(),
                render::format_duration(int64_t(c["latency_ns"]["p50"].get<double>())).c_str(),
                render::format_duration(int64_t(c["latency_ns"]["p99"].get<double>())).c_str());
  };
  std::printf("messages  %" PRIu64 " sent, %" PRIu64 " received: %" PRIu64 " matched, %" PRIu64 " never received, %" PRIu64
              " received but never sent (%" PRIu64 " of an id received before)\n",
              m["sent"].get<uint64_t>(), m["received"].get<uint64_t>(), m["matched"].get<uint64_t>(),
              m["never_received"].get<uint64_t>(), m["never_sent"].get<uint64_t>(), m["received_again"].get<uint64_t>());
  if (const uint64_t n = m["received_before_sent"].get<uint64_t>())
    std::printf("  %" PRIu64 " received before they were sent (the clocks of sender and receiver disagree)\n", n);
  for (const char* part : {"by_channel", "by_sender"}) {
    std::vector<const nlohmann::json*> list;
    for (const auto& c : m[part]) list.push_back(&c);
    auto orphans = [](const nlohmann::json& c) {
      return c["never_received"].get<uint64_t>() + c["never_sent"].get<uint64_t>();
    };
    std::stable_sort(list.begin(), list.end(),
                     [&](const nlohmann::json* a, const nlohmann::json* b) { return orphans(*a) > orphans(*b); });
    for (size_t i = 0; i < list.size() && i < rows; ++i) {
      const auto& c = *list[i];
      if (part[3] == 'c') {
        const std::string name = c["name"].get<std::string>(), number = std::to_string(c["channel"].get<uint64_t>());
        line("channel", name.empty() ? number : name + " (" + number + ")", c);
      }
      else line("lane", c["lane"].get<std::string>(), c);  // (its sends; its receives never sent)
    }
    if (list.size() > rows)
      std::printf("  ... %zu more %s (stats --json lists them all)\n", list.size() - rows,
                  part[3] == 'c' ? "channels" : "lanes");
  }
}

// A trace's duration: "1h02m03.456789s", "2m03.456789s", "3.456789s" (in
// integers: a duration of centuries prints as one).
std::string duration(int64_t ns) {
  char b[64];
  const uint64_t v = ns < 0 ? 0 : uint64_t(ns), s = v / 1000000000, micros = v % 1000000000 / 1000;
  if (s >= 3600)
    std::snprintf(b, sizeof b, "%lluh%02llum%02llu.%06llus", (unsigned long long)(s / 3600),
                  (unsigned long long)(s / 60 % 60), (unsigned long long)(s % 60), (unsigned long long)micros);
  else if (s >= 60)
    std::snprintf(b, sizeof b, "%llum%02llu.%06llus", (unsigned long long)(s / 60), (unsigned long long)(s % 60),
                  (unsigned long long)micros);
  else
    std::snprintf(b, sizeof b, "%llu.%06llus", (unsigned long long)s, (unsigned long long)micros);
  return b;
}

}  // namespace

void add_index_commands(CLI::App& app, int* exit_code) {
  static std::string trace;
  static bool force = false, json_out = false;

  auto* idx = app.add_subcommand("index", "build the index of a trace (beside it, or in the cache directory)");
  idx->add_option("trace", trace, "trace file")->required();
  idx->add_flag("--force", force, "rebuild even if the index is current");
  idx->callback([=] {
    auto t0 = std::chrono::steady_clock::now();
    auto ix = open_index(trace, false, force);
    if (!ix) {
      *exit_code = 1;
      return;
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: %" PRIu64 " events in %zu chunks, %zu streams; index %s (%.1f MB, %.3f of the trace); %.2f s\n",
                trace.c_str(), ix->events(), ix->chunk_count(), ix->streams().size(), ix->index_path().c_str(),
                double(ix->index_bytes()) / 1e6, double(ix->index_bytes()) / double(std::max<uint64_t>(1, ix->trace_bytes())), s);
  });

  auto* info = app.add_subcommand("info", "duration, feedlets, CPUs, event counts per kind, drops and damage");
  info->add_option("trace", trace, "trace file")->required();
  info->callback([=] {
    auto ix = open_index(trace, true);
    if (!ix) {
      *exit_code = 1;
      return;
    }
    auto j = stats_json(*ix);
    std::printf("trace     %s (%" PRIu64 " bytes)\n", trace.c_str(), ix->trace_bytes());
    const trace::Header& h = ix->header();
    std::printf("process   %s", h.process_name.c_str());
    if (h.pid) std::printf(" (pid %u%s%s)", h.pid, h.host.empty() ? "" : " on ", h.host.c_str());
    std::printf("\n");
    std::string command;
    for (const std::string& arg : h.cmdline) command += (command.empty() ? "" : " ") + arg;
    if (!command.empty()) std::printf("command   %s\n", command.c_str());
    if (!h.recorder.empty()) std::printf("recorder  %s\n", h.recorder.c_str());
    std::printf("duration  %s\n", duration(j["duration_ns"].get<int64_t>()).c_str());
    std::printf("events    %" PRIu64 " (%" PRIu64 " dropped by the recorder)\n", ix->events(), ix->dropped());
    std::printf("feedlets  %zu\n", j["feedlets"].size());
    int name_width = 24;  // as wide as the longest name (an imported lane's can be long), up to 60
    for (auto& f : j["feedlets"]) name_width = std::max(name_width, std::min(60, int(f["name"].get<std::string>().size())));
    for (auto& f : j["feedlets"])
      std::printf("  %4u  %-*s tid %-8" PRIu64 " %12" PRIu64 " events %8" PRIu64 " dropped\n", f["id"].get<uint32_t>(),
                  name_width, f["name"].get<std::string>().c_str(), f["tid"].get<uint64_t>(), f["events"].get<uint64_t>(),
                  f["dropped"].get<uint64_t>());
    if (!j["cpus"].empty()) {
      std::printf("cpus      %zu\n", j["cpus"].size());
      std::map<uint32_t, std::string> lane_names;
      for (auto& f : j["feedlets"]) lane_names[f["id"].get<uint32_t>()] = f["name"].get<std::string>();
      for (auto& c : j["cpus"]) {
        std::string lanes;
        for (auto& f : c["feedlets"]) lanes += (lanes.empty() ? "" : ", ") + lane_names[f.get<uint32_t>()];
        std::printf("  %4u  %-*s %12" PRIu64 " job segments, from %s\n", c["cpu"].get<uint32_t>(), name_width,
                    c["name"].get<std::string>().c_str(), c["segments"].get<uint64_t>(), lanes.c_str());
      }
    }
    std::vector<std::pair<std::string, std::string>> metadata;  // what the trace says of itself, by key
    for (auto& [k, v] : j["metadata"].items())
      if (!describes_a_lane(k)) metadata.emplace_back(k, v.get<std::string>());
    if (!metadata.empty()) {
      std::printf("metadata  %zu\n", metadata.size());
      for (const auto& [k, v] : metadata) std::printf("  %-22s %s\n", k.c_str(), v.c_str());
    }
    std::printf("kinds\n");
    for (auto& [k, v] : j["events_per_kind"].items()) std::printf("  %-22s %12" PRIu64 "\n", k.c_str(), v.get<uint64_t>());
    // What the events did not fit (index::WalkCounts): drawn as the events
    // allow, never made up; said here, lane by lane.
    static const std::pair<const char*, const char*> kNotes[] = {
        {"truncated", "intervals or job segments open at a drop or lost chunk, ended there"},
        {"unmatched_ends", "interval ends with no begin of their name open"},
        {"job_moved", "job starts while the job ran on another CPU (no preempt seen): ended there"},
        {"cpu_taken", "job starts on a CPU another job still ran on: that one ended there"},
        {"job_end_elsewhere", "job preempts, blocks or completes naming a CPU it did not run on"},
        {"job_end_unmatched", "job preempts, blocks or completes of a job not running"}};
    bool said_warnings = false;
    for (auto& f : j["feedlets"])
      for (auto [key, what] : kNotes) {
        const uint64_t n = f["not_as_recorded"][key].get<uint64_t>();
        if (!n) continue;
        if (!said_warnings) std::printf("warnings  (what the events did not fit)\n"), said_warnings = true;
        std::printf("  %4u  %-*s %12" PRIu64 " %s\n", f["id"].get<uint32_t>(), name_width,
                    f["name"].get<std::string>().c_str(), n, what);
      }
    print_messages(j["messages"], 20);
    std::printf("damaged   %zu ranges\n", j["damaged"].size());
    for (auto& d : j["damaged"])
      std::printf("  offset %" PRIu64 ", %" PRIu64 " bytes: %s\n", d["offset"].get<uint64_t>(), d["length"].get<uint64_t>(),
                  d["reason"].get<std::string>().c_str());
    std::printf("lost      %zu chunk ranges\n", j["lost_chunks"].size());
    for (auto& l : j["lost_chunks"])
      std::printf("  feedlet %u: %" PRIu64 " chunks from sequence %" PRIu64 "\n", l["feedlet"].get<uint32_t>(),
                  l["chunks"].get<uint64_t>(), l["first_sequence"].get<uint64_t>());
  });

  static std::string out;
  auto* imp = app.add_subcommand("import", "convert another tool's trace to a tinescope trace: Perfetto protobuf, Chrome JSON, ftrace text, systrace HTML, a Grasp trace (plain or .gz) or trace-cmd's trace.dat");
  imp->add_option("file", trace, "Chrome JSON (.json, .json.gz), ftrace text, systrace HTML or a Grasp trace")->required();
  imp->add_option("-o,--output", out, "trace file to write (must not exist)")->required();
  imp->callback([=] {
    import::ImportResult r;
    std::string error;
    if (!import::import_trace(trace, out, r, error)) {
      std::fprintf(stderr, "tinescope: %s\n", error.c_str());
      *exit_code = 1;
      return;
    }
    std::printf("%s: %" PRIu64 " events read -> %" PRIu64 " events on %" PRIu64 " lane%s in %s\n", trace.c_str(),
                r.events_read, r.events_written, r.feedlets, r.feedlets == 1 ? "" : "s", out.c_str());
    if (r.argument_events)
      std::printf("  %" PRIu64 " of them carry the fields of the event before them (its arguments: find --event shows them)\n",
                  r.argument_events);
    if (r.args_as_text)
      std::printf("  %" PRIu64 " events' arguments kept as one text field: more argument shapes than the format's %d types\n",
                  r.args_as_text, format::kMaxEventType - format::kFirstUserType);
    if (r.args_past_fields)
      std::printf("  %" PRIu64 " arguments past an event's %zu fields kept as text in its field \"more\"\n", r.args_past_fields,
                  format::kMaxFields);
    for (auto& [ph, n] : r.unsupported) std::printf("  not imported: %" PRIu64 " \"%s\" events\n", n, ph.c_str());
    if (r.unmatched_ends) std::printf("  %" PRIu64 " ends without a begin\n", r.unmatched_ends);
    if (r.unmatched_flow_ends)
      std::printf("  %" PRIu64 " flow steps or ends with no flow of their id open (no arrow)\n", r.unmatched_flow_ends);
    for (const std::string& n : r.notes) std::printf("  %s\n", n.c_str());
    if (r.malformed_events) {
      std::fprintf(stderr, "tinescope: warning: %" PRIu64 " event%s not JSON, skipped (the events after %s kept):\n",
                   r.malformed_events, r.malformed_events == 1 ? "" : "s", r.malformed_events == 1 ? "it" : "them");
      for (const std::string& m : r.malformed) std::fprintf(stderr, "  %s\n", m.c_str());
      if (r.malformed_events > r.malformed.size())
        std::fprintf(stderr, "  and %" PRIu64 " more\n", r.malformed_events - r.malformed.size());
    }
    if (!r.warning.empty()) std::fprintf(stderr, "tinescope: warning: %s\n", r.warning.c_str());
  });

  static std::string export_in, export_out, export_from, export_to, export_lanes;
  auto* exp = app.add_subcommand("export", "write a trace for other tools: Perfetto's protobuf (.pftrace, .perfetto-trace) or Chrome JSON (.json)");
  exp->add_option("trace", export_in, "tinescope trace")->required();
  exp->add_option("-o,--output", export_out, "file to write (must not exist): .pftrace or .perfetto-trace (Perfetto), .json (Chrome JSON)")
      ->required();
  exp->add_option("--from", export_from, "keep events from this time on, from the start of the trace (e.g. 1.5s, 300us); slices open there begin there");
  exp->add_option("--to", export_to, "keep events up to this time; slices open there end there");
  exp->add_option("--lanes", export_lanes,
                  "lanes by number (as info prints them), thread or process name, glob or /regex/, comma separated; !X "
                  "leaves the lanes X names out (as render --lanes)");
  exp->callback([=] {
    auto fail = [&](int status, const std::string& why) {
      std::fprintf(stderr, "tinescope export: %s\n", why.c_str());
      *exit_code = status;
    };
    if (!import::export_format_of(export_out))
      return fail(2, export_out + ": unknown output format: name it .pftrace or .perfetto-trace (Perfetto) or .json (Chrome JSON)");
    import::ExportOptions o;
    if (!export_from.empty() || !export_to.empty() || !export_lanes.empty()) {
      // The window and lanes as render reads them: times from the trace's
      // start, lanes through the scene (its index built first if need be).
      std::shared_ptr<TraceIndex> ix = open_index(export_in, false);
      if (!ix) return void(*exit_code = 1);
      render::Scene scene;
      scene.add_index(ix);
      auto at = [&](const std::string& text, int64_t& out) {
        double ns;
        if (text.empty()) return true;
        if (!parse_duration(text, ns) || ns < 0) return false;
        out = scene.first_ns() + int64_t(std::llround(ns));
        return true;
      };
      if (!at(export_from, o.from_ns)) return fail(2, "--from: not a time: '" + export_from + "' (use e.g. 1.5s, 300us, 12ns)");
      if (!at(export_to, o.to_ns)) return fail(2, "--to: not a time: '" + export_to + "' (use e.g. 1.5s, 300us, 12ns)");
      if (o.to_ns < o.from_ns) return fail(2, "--to must not come before --from");
      if (!export_lanes.empty()) {
        std::string error;
        const std::vector<uint32_t> picked = scene.select_lanes(export_lanes, error);
        if (picked.empty()) return fail(2, "--lanes: " + error);
        o.feedlets.emplace();
        for (uint32_t i : picked)  // (the scene's own lanes of tasks and locks are no feedlet)
          if (!scene.lanes()[i].is_tasks() && !scene.lanes()[i].is_locks()) o.feedlets->insert(scene.lanes()[i].feedlet);
        if (o.feedlets->empty()) return fail(2, "--lanes: '" + export_lanes + "' names no thread's lane");
      }
    }
    import::ExportResult r;
    std::string error;
    if (!import::export_trace(export_in, export_out, o, r, error)) return fail(1, error);
    std::printf("%s: %" PRIu64 " events read -> %" PRIu64 " events on %" PRIu64 " lane%s in %s (%.1f MB)\n", export_in.c_str(),
                r.events_read, r.events_written, r.lanes, r.lanes == 1 ? "" : "s", export_out.c_str(), double(r.bytes_written) / 1e6);
    if (r.slices_cut) std::printf("  %" PRIu64 " slices cut at the window's edges\n", r.slices_cut);
    if (r.unmatched_ends) std::printf("  %" PRIu64 " ends without a begin left out\n", r.unmatched_ends);
    for (auto& [type, n] : r.not_exported) std::printf("  not exported: %" PRIu64 " %s events\n", n, type.c_str());
    if (r.damaged_ranges)
      std::fprintf(stderr, "tinescope export: warning: %" PRIu64 " damaged byte ranges of the trace skipped (tinescope info lists them)\n",
                   r.damaged_ranges);
  });

  static bool durations = false, by_thread = false, by_task = false, locks = false, categories = false;
  static std::string stream;
  static std::vector<std::string> stats_traces, clocks;
  auto* stats = app.add_subcommand("stats", "counts, time range, feedlets, drops and damage of a trace; durations per name");
  stats->add_option("traces", stats_traces,
                    "trace files (several: each one's, on the first's clock from their clock sync messages; messages "
                    "between them are matched, not orphans)")
      ->required()
      ->expected(1, -1);
  add_clock_option(*stats, clocks);
  stats->add_flag("--json", json_out, "print stable JSON");
  stats->add_flag("--durations", durations, "count, total, min, mean, max, p50/p90/p99/p99.9 per name (a pass over the trace)");
  stats->add_flag("--by-thread", by_thread, "--durations per name and per thread");
  stats->add_flag("--by-task", by_task,
                  "per task: jobs, response and execution times, deadlines missed, preemptions, migrations (ts_sched)");
  stats->add_flag("--locks", locks, "per lock: acquires, contended ones, wait and hold times (ts_lock)");
  stats->add_option("--stream", stream, "--durations of this interval stream (docs/ANALYSIS.md)");
  stats->add_flag("--categories", categories,
                  "the categories of the intervals and instants, with their events and names (a pass over the trace)");
  stats->callback([=] {
    std::vector<std::shared_ptr<TraceIndex>> indexes;
    analysis::ClockAlignment alignment;
    std::shared_ptr<const analysis::CrossMessages> across;
    if (stats_traces.size() == 1 && clocks.empty()) {
      if (auto ix = open_index(stats_traces[0], true)) indexes.push_back(std::move(ix));
    } else {
      indexes = open_aligned("stats", stats_traces, clocks, true, &alignment, stderr, &across);
    }
    if (indexes.empty()) {
      *exit_code = 1;
      return;
    }
    std::vector<nlohmann::json> each;
    for (uint32_t t = 0; t < indexes.size(); ++t) {
      const TraceIndex& ix = *indexes[t];
      auto j = stats_json(ix);
      std::string error;
      if ((durations || by_thread || !stream.empty()) && !add_duration_table(j, ix, stream, by_thread, error)) {
        std::fprintf(stderr, "tinescope: %s\n", error.c_str());
        *exit_code = 2;
        return;
      }
      if (by_task) add_task_table(j, ix);
      if (locks) add_lock_table(j, ix);
      if (categories) {
        const analysis::Categories c = analysis::scan_categories(ix);
        if (!c.error.empty()) std::fprintf(stderr, "tinescope: warning: categories: %s (events there not counted)\n", c.error.c_str());
        auto& list = j["categories"] = nlohmann::json::array();
        for (const analysis::CategoryCount& k : c.categories)
          list.push_back({{"category", k.name}, {"events", k.events}, {"names", k.names}});
        j["names_in_several_categories"] = c.mixed_names;
      }
      if (across) count_across(j["messages"], *across, t);
      each.push_back(std::move(j));
    }
    // The latency of the messages between the traces, on the first's clock.
    std::vector<int64_t> latency;
    if (across)
      for (const analysis::CrossMessage& x : across->messages)
        latency.push_back(indexes[x.recv_trace]->to_ns(x.recv.recv_ts) - indexes[x.send_trace]->to_ns(x.send.send_ts));
    std::sort(latency.begin(), latency.end());
    auto pct = [&](double p) { return latency.empty() ? 0 : latency[size_t(p * double(latency.size() - 1) + 0.5)]; };
    if (json_out) {
      if (!across) return void(std::printf("%s\n", each[0].dump(2).c_str()));
      nlohmann::json out{{"traces", each},
                         {"between_traces", {{"messages", across->messages.size()}, {"ambiguous", across->ambiguous},
                                             {"received_before_sent", across->early},
                                             {"latency_ns", {{"p50", pct(0.5)}, {"p99", pct(0.99)}, {"max", pct(1)}}}}},
                         {"clock_warnings", alignment.warnings}};
      std::printf("%s\n", out.dump(2).c_str());
      return;
    }
    for (size_t t = 0; t < each.size(); ++t) {
      nlohmann::json& j = each[t];
      if (across) std::printf("%s== %s\n", t ? "\n" : "", stats_traces[t].c_str());
      for (auto& [k, v] : j.items())
        if (!v.is_array() && !v.is_object() && !v.is_null()) std::printf("%-14s %s\n", k.c_str(), v.dump().c_str());
      print_messages(j["messages"], SIZE_MAX);
      if (j.contains("categories")) {
        std::printf("categories     (intervals and instants, by the category recorded with them)\n");
        for (const auto& k : j["categories"])
          std::printf("  %-24s %10llu events  %6llu names\n", k["category"].get<std::string>().c_str(),
                      (unsigned long long)k["events"].get<uint64_t>(), (unsigned long long)k["names"].get<uint64_t>());
      }
      if (j.contains("durations")) print_duration_table(j["durations"]);
      if (j.contains("tasks")) print_task_table(j);
      if (j.contains("locks")) print_lock_table(j);
    }
    if (across)
      std::printf("\nbetween the traces: %zu messages (not counted as never received or never sent above), latency "
                  "p50 %s p99 %s max %s%s\n",
                  across->messages.size(), render::format_duration(pct(0.5)).c_str(),
                  render::format_duration(pct(0.99)).c_str(), render::format_duration(pct(1)).c_str(),
                  across->ambiguous ? (", " + std::to_string(across->ambiguous) + " halves ambiguous, left unmatched").c_str() : "");
  });
}

}  // namespace tinescope::app
