// Analysis for scripts and CI (docs/ANALYSIS.md):
//   tinescope stream TRACE EXPR [--csv] [--from T --to T] [--limit N]
//   tinescope find TRACE [--stream EXPR | --name GLOB] [--longest K] [--longer D] [--outliers F] [--search RE]
//                        [--event FEEDLET:SEQ] [--message ID]
//   tinescope compare A B [--percentile P] [--threshold X] [--min-delta D] [--stream EXPR]
// Output is stable JSON (or CSV for stream); times are ns from the start of
// the trace. compare exits 1 when a name regressed, 2 on an error.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>

#include "commands.hpp"
#include "figure_options.hpp"
#include "tinescope/analysis/derived_stream.hpp"
#include "tinescope/analysis/duration_stats.hpp"
#include "tinescope/analysis/event_details.hpp"
#include "tinescope/analysis/jobs.hpp"
#include "tinescope/analysis/locks.hpp"
#include "tinescope/analysis/message_chain.hpp"
#include "tinescope/analysis/message_report.hpp"
#include "tinescope/analysis/needles.hpp"

namespace tinescope::app {
namespace {

using analysis::Record;
using index::TraceIndex;
using nlohmann::json;

struct Window {
  std::string from, to;
};

// The stream text of --stream, or intervals(name=GLOB) for --name.
bool stream_expr(const std::string& text, const std::string& name, analysis::Expr& e, std::string& error) {
  if (text.empty()) {
    e = analysis::Expr{};
    e.filter.name = name;
    return true;
  }
  return analysis::parse_stream(text, e, error);
}

// --from and --to, from `origin` (ns; default: the trace's start).
bool eval_options(const TraceIndex& ix, const Window& w, analysis::EvalOptions& o, std::string& error,
                  int64_t origin = INT64_MIN) {
  if (origin == INT64_MIN) origin = ix.to_ns(ix.first_ts());
  auto at = [&](const std::string& text, uint64_t fallback, uint64_t& out) {
    if (text.empty()) return out = fallback, true;
    double ns;
    if (!parse_duration(text, ns) || ns < 0) {
      error = "not a time: '" + text + "' (use e.g. 1.5s, 300us, 12ns)";
      return false;
    }
    out = ix.catalog().clock.to_ticks(origin + int64_t(std::llround(ns)));
    return true;
  };
  return at(w.from, 0, o.t0) && at(w.to, UINT64_MAX, o.t1);
}

struct Names {
  const TraceIndex& ix;
  std::shared_ptr<const trace::Catalog> catalog = ix.catalog_snapshot();
  int64_t origin = ix.to_ns(ix.first_ts());
  int64_t ns(uint64_t ticks) const { return ix.to_ns(ticks) - origin; }
  std::string name(uint32_t id) const { return id ? std::string(catalog->string(id)) : std::string(); }
  std::unordered_map<uint32_t, std::string> threads = catalog->thread_labels();
  std::string thread(uint32_t feedlet) const {
    auto f = threads.find(feedlet);
    return f == threads.end() ? std::string() : f->second;
  }
  json interval(const Record& r) const {
    json j{{"start_ns", ns(r.start)}, {"end_ns", ns(r.end)}, {"duration_ns", ns(r.end) - ns(r.start)},
           {"name", name(r.name)}, {"thread", thread(r.feedlet)}};
    if (r.truncated()) j["truncated"] = true;  // its end was not recorded: as long as the trace saw it
    return j;
  }
  json sample(const Record& r) const {
    return json{{"time_ns", ns(r.end)}, {"virtual_ns", ns(r.start)}, {"value", r.value}};
  }
  // An event with every field (find --event, --message): each field's name,
  // schema type and value; bytes as hex and their printable text.
  json event(const analysis::EventView& v) const {
    auto fields = [](const std::vector<analysis::FieldView>& list) {
      json a = json::array();
      for (const analysis::FieldView& f : list) {
        json j{{"name", f.name}, {"type", std::string(1, f.type)}};
        if (f.type == 'b' && analysis::is_text(f.bytes) && f.name != "payload") {
          j["value"] = f.bytes;  // an argument's string; a payload is bytes whatever they hold
        } else if (f.type == 'b' || f.type == '?') {
          std::string text;
          for (unsigned char c : f.bytes) text += c >= 0x20 && c < 0x7f ? char(c) : '.';
          j["size"] = f.bytes.size(), j["hex"] = analysis::hex(f.bytes), j["ascii"] = text;
        } else if (f.numeric && f.type == 'f') {
          j["value"] = std::isfinite(f.number) ? json(f.number) : json(f.text);
        } else if (f.numeric) {
          j["value"] = f.type == 'i' ? json(int64_t(std::stoll(f.text))) : json(uint64_t(std::stoull(f.text)));
        } else {
          j["value"] = f.text;
        }
        a.push_back(j);
      }
      return a;
    };
    const index::EventData& d = v.data;
    json j{{"feedlet", d.feedlet}, {"sequence", d.position}, {"type", v.type_name}, {"type_code", d.type},
           {"time_ns", ns(d.ts)}, {"thread", v.thread}, {"process", v.process}, {"fields", fields(v.fields)},
           {"chunk", {{"offset", d.chunk_offset}, {"sequence", d.chunk_sequence}, {"payload_offset", d.payload_offset}}}};
    if (!v.args.empty()) j["args"] = fields(v.args);
    return j;
  }
};

void fail(int* exit_code, const std::string& what, int status = 2) {
  std::fprintf(stderr, "tinescope: %s\n", what.c_str());
  *exit_code = status;
}

json stats_row(const analysis::DurationStats& s) {
  const auto& h = s.h;
  json j{{"name", s.name}, {"count", h.count()}, {"total_ns", h.total()}, {"min_ns", h.min()},
         {"mean_ns", h.mean()}, {"max_ns", h.max()}, {"p50_ns", h.percentile(50)}, {"p90_ns", h.percentile(90)},
         {"p99_ns", h.percentile(99)}, {"p99_9_ns", h.percentile(99.9)}};
  if (!s.thread.empty()) j["thread"] = s.thread;
  if (s.truncated) j["truncated"] = s.truncated;  // ends not recorded: their durations are as far as the trace saw
  return j;
}

}  // namespace

bool add_duration_table(json& out, const TraceIndex& ix, const std::string& stream, bool by_thread, std::string& error) {
  analysis::Expr e;
  if (!stream_expr(stream, "", e, error)) return false;
  auto rows = analysis::duration_stats(ix, e, by_thread, error);
  if (!error.empty()) return false;
  json& table = out["durations"] = json::array();
  for (const auto& r : rows) table.push_back(stats_row(r));
  return true;
}

void print_duration_table(const json& table) {
  // A last column, where some were cut: how many ends were not recorded.
  bool cut = false;
  for (const json& r : table) cut |= r.contains("truncated");
  std::printf("%-28s %-14s %10s %12s %10s %10s %10s %10s %10s %10s %10s%s\n", "name", "thread", "count", "total ms",
              "min us", "mean us", "p50 us", "p90 us", "p99 us", "p99.9 us", "max us", cut ? "  truncated" : "");
  for (const json& r : table) {
    std::printf("%-28s %-14s %10" PRIu64 " %12.3f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f",
                r["name"].get<std::string>().c_str(), r.value("thread", "").c_str(), r["count"].get<uint64_t>(),
                r["total_ns"].get<double>() / 1e6, r["min_ns"].get<double>() / 1e3, r["mean_ns"].get<double>() / 1e3,
                r["p50_ns"].get<double>() / 1e3, r["p90_ns"].get<double>() / 1e3, r["p99_ns"].get<double>() / 1e3,
                r["p99_9_ns"].get<double>() / 1e3, r["max_ns"].get<double>() / 1e3);
    if (cut) std::printf(" %10" PRIu64, r.value("truncated", uint64_t(0)));
    std::printf("\n");
  }
  if (cut) std::printf("truncated: intervals whose end was not recorded (cut where events were lost, or never ended); "
                       "counted with the durations the trace saw\n");
}

void add_task_table(json& out, const TraceIndex& ix) {
  analysis::JobCounts counts;
  const std::vector<analysis::TaskStats> tasks = analysis::task_stats(ix, &counts);
  const int64_t origin = ix.to_ns(ix.first_ts());
  auto at = [&](uint64_t t) { return t == analysis::kNoTime ? json(nullptr) : json(ix.to_ns(t) - origin); };
  auto spread = [](const analysis::DurationHistogram& h) {
    return json{{"min", h.min()}, {"mean", h.mean()}, {"p50", h.percentile(50)}, {"p90", h.percentile(90)},
                {"p99", h.percentile(99)}, {"max", h.max()}};
  };
  json& table = out["tasks"] = json::array();
  for (const analysis::TaskStats& t : tasks) {
    json r{{"task", t.task}, {"jobs", t.jobs}, {"completed", t.completed}, {"with_deadline", t.with_deadline},
           {"missed", t.missed}, {"preemptions", t.preemptions}, {"migrations", t.migrations}, {"blocks", t.blocks},
           {"executed_ns", spread(t.executed)}};
    if (t.response.count()) {
      r["response_ns"] = spread(t.response);
      r["waiting_ns"] = spread(t.waiting);
      r["longest"] = {{"job", t.longest.id}, {"arrival_ns", at(t.longest.arrival)},
                      {"response_ns", analysis::ns_between(ix, t.longest.arrival, t.longest.completion)}};
    }
    if (t.missed)
      r["most_late"] = {{"job", t.latest.id}, {"deadline_ns", at(t.latest.deadline)}, {"late_ns", t.worst_lateness_ns},
                        {"completed", t.latest.completed()}};
    table.push_back(r);
  }
  out["jobs_not_fitting"] = {{"no_arrival", counts.no_arrival}, {"arrived_again", counts.arrived_again},
                             {"start_while_running", counts.start_while_running}, {"cpu_taken", counts.cpu_taken},
                             {"end_not_running", counts.end_not_running}, {"after_completion", counts.after_completion},
                             {"unreadable", counts.unreadable}};
}

void print_task_table(const json& j) {
  std::printf("%-20s %7s %7s %7s %12s %12s %12s %12s %12s %8s %8s\n", "task", "jobs", "done", "missed", "resp mean us",
              "resp p99 us", "resp max us", "exec max us", "late max us", "preempt", "migrate");
  for (const json& r : j["tasks"]) {
    const bool resp = r.contains("response_ns");
    auto us = [&](const char* part, const char* what) {
      return resp || std::string(part) == "executed_ns" ? r[part][what].get<double>() / 1e3 : 0.0;
    };
    std::printf("%-20s %7llu %7llu %7llu %12.2f %12.2f %12.2f %12.2f %12.2f %8llu %8llu\n",
                r["task"].get<std::string>().c_str(), (unsigned long long)r["jobs"].get<uint64_t>(),
                (unsigned long long)r["completed"].get<uint64_t>(), (unsigned long long)r["missed"].get<uint64_t>(),
                us("response_ns", "mean"), us("response_ns", "p99"), us("response_ns", "max"), us("executed_ns", "max"),
                r.contains("most_late") ? r["most_late"]["late_ns"].get<double>() / 1e3 : 0.0,
                (unsigned long long)r["preemptions"].get<uint64_t>(), (unsigned long long)r["migrations"].get<uint64_t>());
  }
  const json& c = j["jobs_not_fitting"];
  uint64_t odd = 0;
  for (const char* k : {"no_arrival", "arrived_again", "start_while_running", "cpu_taken", "end_not_running", "after_completion"})
    odd += c[k].get<uint64_t>();
  if (odd || !c["unreadable"].empty()) std::printf("events that did not fit a job's course: %s\n", c.dump().c_str());
}

void add_lock_table(json& out, const TraceIndex& ix) {
  json& table = out["locks"] = json::array();
  const int64_t origin = ix.to_ns(ix.first_ts());
  const auto labels = ix.catalog_snapshot()->thread_labels();
  auto lane = [&](uint32_t f) {
    auto l = labels.find(f);
    return l == labels.end() ? "lane " + std::to_string(f) : l->second;
  };
  auto spread = [](const analysis::DurationHistogram& h) {
    return json{{"count", h.count()}, {"total", h.total()}, {"mean", h.mean()}, {"p50", h.percentile(50)},
                {"p99", h.percentile(99)}, {"max", h.max()}};
  };
  for (const analysis::LockStats& l : analysis::lock_stats(ix)) {
    json r{{"lock", l.name}, {"id", l.id}, {"acquires", l.acquires}, {"contended", l.contended},
           {"threads", l.threads}, {"wait_ns", spread(l.wait)}, {"hold_ns", spread(l.hold)}};
    if (l.contended)
      r["longest_wait"] = {{"acquired_ns", ix.to_ns(l.longest_wait_at) - origin}, {"thread", lane(l.longest_wait_feedlet)}};
    if (l.hold.count())
      r["longest_hold"] = {{"acquired_ns", ix.to_ns(l.longest_hold_at) - origin}, {"thread", lane(l.longest_hold_feedlet)}};
    if (l.unmatched) r["unmatched"] = l.unmatched;
    if (l.held_at_end) r["held_at_end"] = true;
    table.push_back(r);
  }
}

void print_lock_table(const json& j) {
  std::printf("%-24s %6s %9s %9s %7s %12s %12s %12s %12s %12s\n", "lock", "id", "acquires", "contended", "threads",
              "wait p50 us", "wait p99 us", "wait max us", "hold mean us", "hold max us");
  for (const json& r : j["locks"])
    std::printf("%-24s %6llu %9llu %9llu %7llu %12.2f %12.2f %12.2f %12.2f %12.2f\n", r["lock"].get<std::string>().c_str(),
                (unsigned long long)r["id"].get<uint64_t>(), (unsigned long long)r["acquires"].get<uint64_t>(),
                (unsigned long long)r["contended"].get<uint64_t>(), (unsigned long long)r["threads"].get<uint64_t>(),
                r["wait_ns"]["p50"].get<double>() / 1e3, r["wait_ns"]["p99"].get<double>() / 1e3,
                r["wait_ns"]["max"].get<double>() / 1e3, r["hold_ns"]["mean"].get<double>() / 1e3,
                r["hold_ns"]["max"].get<double>() / 1e3);
}

void add_analysis_commands(CLI::App& app, int* exit_code) {
  // ---- stream
  {
    static std::string trace, text;
    static Window w;
    static bool csv = false;
    static uint64_t limit = UINT64_MAX;
    auto* cmd = app.add_subcommand("stream", "evaluate a stream (e.g. 'longer(intervals(name=\"gc.*\"), 1ms)') to JSON or CSV");
    cmd->add_option("trace", trace, "trace file")->required();
    cmd->add_option("stream", text, "the stream, in the syntax of docs/ANALYSIS.md")->required();
    cmd->add_option("--from", w.from, "only from this time (from the start of the trace)");
    cmd->add_option("--to", w.to, "only up to this time");
    cmd->add_option("--limit", limit, "print at most this many records (the count is of all)");
    cmd->add_flag("--csv", csv, "CSV instead of JSON");
    cmd->callback([=] {
      std::string error;
      analysis::Expr e;
      if (!analysis::parse_stream(text, e, error)) return fail(exit_code, "stream '" + text + "': " + error);
      auto ix = open_index(trace, true);
      if (!ix) return fail(exit_code, "cannot open " + trace);
      analysis::EvalOptions o;
      if (!eval_options(*ix, w, o, error)) return fail(exit_code, error);
      auto s = analysis::DerivedStream::evaluate(*ix, e, error, o);
      if (!s) return fail(exit_code, error);
      Names n{*ix};
      const bool iv = s->intervals();
      uint64_t shown = 0;
      if (csv) {
        std::printf(iv ? "start_ns,end_ns,duration_ns,name,thread,truncated\n" : "time_ns,virtual_ns,value\n");
        for (const Record& r : s->records()) {
          if (shown++ == limit) break;
          if (iv) {
            std::printf("%" PRId64 ",%" PRId64 ",%" PRId64 ",%s,%s,%d\n", n.ns(r.start), n.ns(r.end), n.ns(r.end) - n.ns(r.start),
                        n.name(r.name).c_str(), n.thread(r.feedlet).c_str(), r.truncated() ? 1 : 0);
          } else {
            std::printf("%" PRId64 ",%" PRId64 ",%.17g\n", n.ns(r.end), n.ns(r.start), r.value);
          }
        }
        return;
      }
      json j{{"stream", analysis::format_stream(e)}, {"kind", iv ? "intervals" : "samples"}, {"count", s->size()}};
      json& rec = j["records"] = json::array();
      for (const Record& r : s->records()) {
        if (shown++ == limit) break;
        rec.push_back(iv ? n.interval(r) : n.sample(r));
      }
      std::printf("%s\n", j.dump(1).c_str());
    });
  }

  // ---- find
  {
    static std::string text, name, longer, search, event;
    static std::vector<std::string> traces, clocks;
    static Window w;
    static size_t longest = 0, per_name = 10, limit = 100;
    static std::vector<uint64_t> message_ids, chain_ids;
    static double outlier_factor = 0;
    static bool orphans = false;
    auto* cmd = app.add_subcommand("find", "needles: the longest intervals, intervals longer than D, outliers per name, search");
    cmd->add_option("traces", traces,
                    "trace files (several: each one's answers, all on the first's clock, from their clock sync messages)")
        ->required()
        ->expected(1, -1);
    add_clock_option(*cmd, clocks);
    cmd->add_option("--stream", text, "an interval stream (docs/ANALYSIS.md); default: every interval");
    cmd->add_option("--name", name, "intervals of this name (glob or /regex/), instead of --stream");
    cmd->add_option("--longest", longest, "the K longest intervals of the stream over the whole trace");
    cmd->add_option("--longer", longer, "every interval longer than this (e.g. 250us)");
    cmd->add_option("--outliers", outlier_factor, "intervals longer than F times their name's mean");
    cmd->add_option("--per-name", per_name, "--outliers: at most this many per name");
    cmd->add_option("--search", search, "names, threads, message ids and channel names matching this regular expression");
    cmd->add_option("--limit", limit, "at most this many hits listed");
    cmd->add_option("--event", event, "FEEDLET:SEQ: that event with every field (the details panel's \"place\")");
    cmd->add_option("--message", message_ids, "the message with this id: send, receive and their payloads");
    cmd->add_option("--chain", chain_ids,
                    "the message with this id, its causes and its effects, hop by hop: each queue's wait, the interval "
                    "that handled it, and the end-to-end latency");
    cmd->add_flag("--orphans", orphans,
                  "the messages never received and those received but never sent (--limit of them; --from/--to: sent, or an "
                  "orphan receive received, then)");
    cmd->add_option("--from", w.from, "only from this time");
    cmd->add_option("--to", w.to, "only up to this time");
    // One trace's answers into j; times from `origin` (several traces: the
    // earliest start on the first's clock). `across`: the messages between
    // the traces, of which this is trace `which`.
    auto find_in = [=](const TraceIndex& ix, const analysis::Expr& e, int64_t origin,
                       const analysis::CrossMessages* across, uint32_t which, json& j, std::string& error) {
      auto failed = [&](const std::string& why) { return error = why, false; };
      analysis::EvalOptions o;
      if (!eval_options(ix, w, o, error, origin)) return false;
      Names n{ix};
      n.origin = origin;
      const std::string& trace = j["trace"].get_ref<const std::string&>();
      if (!search.empty()) {
        std::regex re;
        try {
          re = std::regex(search, std::regex::ECMAScript | std::regex::icase);
        } catch (const std::regex_error& x) {
          return failed("--search: not a regular expression: " + search + " (" + x.what() + ")");
        }
        json names = json::array(), threads = json::array(), messages = json::array();
        std::map<std::string, std::pair<std::string, uint64_t>> by_name;  // name -> (kind, items)
        for (const auto& s : ix.streams()) {
          // (A depth's names, and the span stream's, have their own streams.)
          if (s.kind == index::StreamKind::Depth || s.kind == index::StreamKind::Span) continue;
          std::string nm = s.kind == index::StreamKind::Send ? std::string() : n.name(s.key);
          if (s.kind == index::StreamKind::Sched) nm = "cpu " + std::to_string(s.key);
          if (nm.empty() || !std::regex_search(nm, re)) continue;
          auto& [kind, items] = by_name[nm];
          kind = index::kind_name(s.kind);
          items += s.items;
        }
        for (auto& [nm, v] : by_name) names.push_back(json{{"name", nm}, {"kind", v.first}, {"count", v.second}});
        for (const auto& f : ix.feedlets())
          if (std::regex_search(f.name, re)) threads.push_back(json{{"id", f.id}, {"name", f.name}, {"events", f.events}});
        // Messages by id, or by the name of their channel (ts_channel_name).
        const auto catalog = ix.catalog_snapshot();
        std::map<uint64_t, bool> channel_matches;
        for (const index::Flow& f : ix.flows(o.t0, o.t1)) {
          if (messages.size() >= limit) break;
          auto [ch, fresh] = channel_matches.try_emplace(f.channel, false);
          if (fresh) {
            const std::string name = catalog->channel_name(f.channel);
            ch->second = !name.empty() && std::regex_search(name, re);
          }
          if (!ch->second && !std::regex_search(std::to_string(f.id), re)) continue;
          json m{{"id", f.id}, {"channel", f.channel}, {"channel_name", catalog->channel_name(f.channel)},
                 {"size", f.size}, {"from", n.thread(f.src)}, {"to", n.thread(f.dst)}};
          if (f.flags & index::kFlowSent) m["send_ns"] = n.ns(f.send_ts);
          if (f.flags & index::kFlowReceived) m["receive_ns"] = n.ns(f.recv_ts);
          messages.push_back(m);
        }
        // Fields: name and text fields of user events, arguments (categories,
        // Chrome args), payloads; "0x..." finds those bytes in bytes fields.
        analysis::FieldSearch fs;
        if (!analysis::FieldSearch::hex(search, fs.bytes)) fs.text = [&re](std::string_view v) {
          return std::regex_search(v.begin(), v.end(), re);
        };
        std::vector<analysis::FieldHit> field_hits;
        const uint64_t field_count = analysis::search_fields(ix, fs, o.t0, o.t1, limit, field_hits, error);
        if (!error.empty()) return failed(trace + ": " + error);
        json fields = json::array();
        for (const analysis::FieldHit& h : field_hits)
          fields.push_back(json{{"time_ns", n.ns(h.ts)}, {"thread", n.thread(h.feedlet)}, {"event", h.event},
                                {"field", h.field}, {"value", h.value}});
        j["search"] = json{{"pattern", search}, {"names", names}, {"threads", threads}, {"messages", messages},
                           {"fields", fields}, {"field_count", field_count}};
      }
      if (orphans) {
        // The sends never received and the receives never sent, in time
        // order (the index's flow table, analysis/message_report.hpp).
        // With several traces, the halves of messages between them are not
        // orphans: they are left out of the list and the counts, and counted.
        const analysis::AcrossHalves halves =
            across ? analysis::across_halves(*across, which, o.t0, o.t1) : analysis::AcrossHalves{};
        const analysis::MessageReport r =
            analysis::message_report(ix, limit + halves.sent_to_others + halves.received_from_others, o.t0, o.t1);
        const auto catalog = ix.catalog_snapshot();
        json list = json::array();
        for (const index::Flow& f : r.orphans) {
          if (across && across->find(which, f)) continue;
          if (list.size() >= limit) break;
          const bool sent = f.flags & index::kFlowSent;
          list.push_back(json{{"what", sent ? "never received" : "never sent"},
                              {"lane", n.thread(sent ? f.src : f.dst)},
                              {"channel", f.channel},
                              {"channel_name", catalog->channel_name(f.channel)},
                              {"id", f.id},
                              {"size", f.size},
                              {"time_ns", n.ns(sent ? f.send_ts : f.recv_ts)}});
        }
        j["orphans"] = json{{"never_received", r.all.never_received - halves.sent_to_others},
                            {"never_sent", r.all.never_sent - halves.received_from_others},
                            {"received_again", r.all.received_again},
                            {"count", r.orphans_total - halves.sent_to_others - halves.received_from_others},
                            {"list", list}};
        if (across)
          j["orphans"]["between_traces"] = json{{"sent_to_others", halves.sent_to_others},
                                                {"received_from_others", halves.received_from_others}};
      }
      if (longest) {
        analysis::NeedleQuery q;
        q.k = longest;
        auto hits = analysis::longest(ix, e, q, error, o);
        if (!error.empty()) return failed(error);
        json& list = j["longest"] = json::array();
        for (const Record& r : hits) list.push_back(n.interval(r));
      }
      if (!longer.empty()) {
        int64_t ns;
        if (!analysis::parse_duration_ns(longer, ns) || ns < 0) return failed("--longer: not a duration: " + longer);
        analysis::Expr f;
        f.op = analysis::Op::Longer;
        f.ns = ns;
        f.args.push_back(e);
        auto s = analysis::DerivedStream::evaluate(ix, f, error, o);
        if (!s) return failed(error);
        json& list = j["longer"] = json::array();
        for (const Record& r : s->records()) {
          if (list.size() >= limit) break;
          list.push_back(n.interval(r));
        }
        j["longer_count"] = s->size();
        j["stream"] = analysis::format_stream(f);
      }
      if (outlier_factor > 0) {
        if (!is_base(e.op) || e.op == analysis::Op::Messages) return failed("--outliers needs a base stream of intervals");
        json& list = j["outliers"] = json::array();
        for (const auto& x : analysis::outliers(ix, e, outlier_factor, per_name)) {
          json r = n.interval(x.r);
          r["mean_ns"] = x.mean_ns;
          r["ratio"] = x.ratio;
          list.push_back(r);
        }
      }
      if (!event.empty()) {
        unsigned long long feedlet = 0, seq = 0;
        char tail = 0;
        if (std::sscanf(event.c_str(), "%llu:%llu%c", &feedlet, &seq, &tail) != 2 || feedlet > UINT32_MAX)
          return failed("--event: say FEEDLET:SEQ (e.g. 3:1200), not " + event);
        analysis::EventView v;
        if (!analysis::read_event(ix, uint32_t(feedlet), seq, v, error)) {
          if (!across) return failed(trace + ": " + error);
          j["not_here"].push_back("event " + event + ": " + error);  // (several traces: another may have it)
          error.clear();
        } else {
          j["event"] = n.event(v);
        }
      }
      for (uint64_t id : chain_ids) {
        analysis::MessageChain c;
        if (!analysis::message_chain(ix, id, c, error)) {
          if (!across) return failed(trace + ": " + error);
          j["not_here"].push_back("chain " + std::to_string(id) + ": " + error);
          error.clear();
          continue;
        }
        const auto catalog = ix.catalog_snapshot();
        json hops = json::array();
        for (const analysis::ChainHop& h : c.hops) {
          const index::Flow& f = h.flow;
          json hop{{"level", h.level}, {"id", f.id}, {"channel", f.channel},
                   {"channel_name", catalog->channel_name(f.channel)}, {"size", f.size}};
          if (h.parent_id) hop[h.level > 0 ? "after" : "before"] = h.parent_id;
          if (f.flags & index::kFlowSent) hop["from"] = n.thread(f.src), hop["send_ns"] = n.ns(f.send_ts);
          if (f.flags & index::kFlowReceived) hop["to"] = n.thread(f.dst), hop["receive_ns"] = n.ns(f.recv_ts);
          if (f.matched()) hop["wait_ns"] = n.ns(f.recv_ts) - n.ns(f.send_ts);
          if (h.has_handler)
            hop["handled_in"] = json{{"name", std::string(catalog->string(h.handler.name))},
                                     {"start_ns", n.ns(h.handler.start)},
                                     {"end_ns", n.ns(h.handler.end)},
                                     {"duration_ns", n.ns(h.handler.end) - n.ns(h.handler.start)},
                                     {"still_open", h.handler.truncated}};
          hops.push_back(hop);
        }
        j["chains"].push_back(json{{"message", id},
                                   {"hops", hops},
                                   {"first_ns", n.ns(c.first)},
                                   {"last_ns", n.ns(c.last)},
                                   {"end_to_end_ns", n.ns(c.last) - n.ns(c.first)},
                                   {"cut", c.cut}});
      }
      for (uint64_t id : message_ids) {
        index::Flow f;
        if (!analysis::find_message(ix, id, f)) {
          if (!across) return failed(trace + ": no message has id " + std::to_string(id));
          j["not_here"].push_back("message " + std::to_string(id));
          continue;
        }
        std::vector<analysis::EventView> halves;
        if (!analysis::message_events(ix, f, halves, error)) return failed(trace + ": " + error);
        json m{{"id", f.id}, {"channel", f.channel}, {"channel_name", ix.catalog_snapshot()->channel_name(f.channel)},
               {"size", f.size}};
        if (f.flags & index::kFlowSent) m["from"] = n.thread(f.src), m["send_ns"] = n.ns(f.send_ts);
        if (f.flags & index::kFlowReceived) m["to"] = n.thread(f.dst), m["receive_ns"] = n.ns(f.recv_ts);
        if (f.matched()) m["latency_ns"] = n.ns(f.recv_ts) - n.ns(f.send_ts);
        for (const analysis::EventView& v : halves)
          m[v.data.type == format::kMessageSend ? "send" : "receive"] = n.event(v);
        j["messages"].push_back(m);
      }
      return true;
    };
    cmd->callback([=] {
      std::string error;
      analysis::Expr e;
      if (!stream_expr(text, name, e, error)) return fail(exit_code, "stream '" + text + "': " + error);
      if (search.empty() && !longest && longer.empty() && outlier_factor <= 0 && event.empty() && message_ids.empty() &&
          chain_ids.empty() && !orphans)
        return fail(exit_code, "find: say what to find: --longest K, --longer D, --outliers F, --search RE, --event F:SEQ, "
                               "--message ID, --chain ID or --orphans");
      if (traces.size() == 1 && clocks.empty()) {
        auto ix = open_index(traces[0], true);
        if (!ix) return fail(exit_code, "cannot open " + traces[0]);
        json j{{"trace", traces[0]}, {"stream", analysis::format_stream(e)}};
        if (!find_in(*ix, e, ix->to_ns(ix->first_ts()), nullptr, 0, j, error)) return fail(exit_code, error);
        std::printf("%s\n", j.dump(1).c_str());
        return;
      }
      // Several traces, on the first's clock: each one's answers, times from the earliest start.
      analysis::ClockAlignment alignment;
      std::shared_ptr<const analysis::CrossMessages> across;
      const auto indexes = open_aligned("find", traces, clocks, true, &alignment, stderr, &across);
      if (indexes.empty()) return void(*exit_code = 1);
      int64_t origin = INT64_MAX;
      for (const auto& ix : indexes) origin = std::min(origin, ix->to_ns(ix->first_ts()));
      json out{{"stream", analysis::format_stream(e)},
               {"between_traces", {{"messages", across->messages.size()}, {"ambiguous", across->ambiguous},
                                   {"received_before_sent", across->early}}},
               {"clock_warnings", alignment.warnings}};
      for (uint32_t t = 0; t < indexes.size(); ++t) {
        json j{{"trace", traces[t]}};
        if (!find_in(*indexes[t], e, origin, across.get(), t, j, error)) return fail(exit_code, error);
        out["traces"].push_back(std::move(j));
      }
      // A message, chain or event asked for is in one trace or another: none is an error.
      auto found = [&](const char* key, const std::function<bool(const json&)>& is) {
        for (const json& j : out["traces"])
          if (j.contains(key))
            for (const json& x : j[key].is_array() ? j[key] : json::array({j[key]}))
              if (is(x)) return true;
        return false;
      };
      for (uint64_t id : message_ids)
        if (!found("messages", [&](const json& m) { return m["id"] == id; }))
          return fail(exit_code, "no message has id " + std::to_string(id) + " in any of the traces");
      for (uint64_t id : chain_ids)
        if (!found("chains", [&](const json& c) { return c["message"] == id; }))
          return fail(exit_code, "no message has id " + std::to_string(id) + " in any of the traces (--chain)");
      if (!event.empty() && !found("event", [](const json&) { return true; })) {
        std::string why;  // (each trace's: not there, or not read)
        for (const json& j : out["traces"])
          for (const json& w : j.value("not_here", json::array())) why += "; " + j["trace"].get<std::string>() + ": " + w.get<std::string>();
        return fail(exit_code, "event " + event + " is in none of the traces" + why);
      }
      std::printf("%s\n", out.dump(1).c_str());
    });
  }

  // ---- compare
  {
    static std::string a, b, text, min_delta = "50us";
    static analysis::CompareOptions co;
    static bool json_out = false;
    auto* cmd = app.add_subcommand("compare", "per-name duration distributions of two runs; exit 1 if B regressed");
    cmd->add_option("a", a, "the reference run")->required();
    cmd->add_option("b", b, "the run to judge")->required();
    cmd->add_option("--stream", text, "an interval stream (default: every interval)");
    cmd->add_option("--percentile", co.percentile, "the percentile compared (default 90)")->check(CLI::Range(0.0, 100.0));
    cmd->add_option("--threshold", co.threshold, "a regression: B's percentile above A's by more than this fraction (default 0.25)");
    cmd->add_option("--min-delta", min_delta, "... and by at least this much (default 50us)");
    cmd->add_option("--min-count", co.min_count, "names with fewer intervals in either run are listed, not judged");
    cmd->add_flag("--json", json_out, "print stable JSON");
    cmd->callback([=] {
      std::string error;
      analysis::Expr e;
      if (!stream_expr(text, "", e, error)) return fail(exit_code, "stream '" + text + "': " + error);
      analysis::CompareOptions opt = co;
      if (!analysis::parse_duration(min_delta, opt.min_delta_ns)) return fail(exit_code, "--min-delta: not a duration: " + min_delta);
      std::vector<analysis::DurationStats> runs[2];
      const std::string* paths[2] = {&a, &b};
      for (int i = 0; i < 2; ++i) {
        auto ix = open_index(*paths[i], true);
        if (!ix) return fail(exit_code, "cannot open " + *paths[i]);
        runs[i] = analysis::duration_stats(*ix, e, false, error);
        if (!error.empty()) return fail(exit_code, *paths[i] + ": " + error);
      }
      auto rows = analysis::compare(runs[0], runs[1], opt);
      size_t regressed = 0;
      json list = json::array();
      for (const auto& c : rows) {
        regressed += c.regressed;
        list.push_back(json{{"name", c.name}, {"count_a", c.count_a}, {"count_b", c.count_b}, {"a_ns", c.a_ns},
                            {"b_ns", c.b_ns}, {"change", std::isfinite(c.change) ? json(c.change) : json(nullptr)},
                            {"judged", c.judged}, {"regressed", c.regressed}});
      }
      if (json_out) {
        json j{{"a", a}, {"b", b}, {"stream", analysis::format_stream(e)}, {"percentile", opt.percentile},
               {"threshold", opt.threshold}, {"min_delta_ns", opt.min_delta_ns}, {"regressions", regressed}, {"names", list}};
        std::printf("%s\n", j.dump(1).c_str());
      } else {
        std::printf("p%g of each name's durations, %s -> %s\n", opt.percentile, a.c_str(), b.c_str());
        for (const auto& c : rows)
          std::printf("%-10s %-28s %12.2f us -> %12.2f us  %+8.1f %%  (%" PRIu64 " / %" PRIu64 ")\n",
                      c.regressed ? "REGRESSED" : c.judged ? "ok" : "few", c.name.c_str(), c.a_ns / 1e3, c.b_ns / 1e3,
                      c.change * 100, c.count_a, c.count_b);
        std::printf("%zu regression%s (threshold +%.0f %% and %s)\n", regressed, regressed == 1 ? "" : "s",
                    opt.threshold * 100, min_delta.c_str());
      }
      if (regressed) *exit_code = 1;
    });
  }
}

}  // namespace tinescope::app
