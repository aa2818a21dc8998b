// Every sample trace (../shared/samples, else tests/data: chrome-json/ and
// ftrace/, listed when the test runs, so a new sample is checked too) is
// imported and indexed, and what the index holds is compared with counts a
// second, deliberately simple parser takes from the file itself: nlohmann-json
// for the JSON (gunzipped with zlib first where it is gzipped), a regular
// expression for ftrace lines, a plain search for the HTML's trace data.
// The counts follow the mapping in docs/IMPORT.md, not the importer's code:
//  - events: JSON objects in the events array and ftrace event lines ==
//    ImportResult::events_read + malformed_events (none is malformed where
//    nlohmann-json parsed the whole file);
//  - closed intervals by name (X; B/E paired per thread; async b/e and S/F
//    paired per category and id; object lifetimes N..D; ftrace CPU slices and
//    atrace B/E, S/F), instants by name (i/I/R, P, async steps and instants,
//    object snapshots), counter samples by counter name (C's numeric args,
//    atrace C, cpu_frequency and cpu_idle) == the index's Interval, Instant and
//    Counter streams' items by name;
//  - flows (s/t/f, flow_in/flow_out, ftrace wakeups): sends == the index's
//    flows and Send items, links received == its matched flows; ends with
//    nothing open == ImportResult::unmatched_ends / unmatched_flow_ends;
//  - ftrace: the slices on the CPU lanes == the sched_switch lines that start
//    one;
//  - ImportResult::unsupported == the kinds this parser counted as not in the
//    mapping, kind by kind.
// Why: the importers' own tests check chosen events of each sample; these
// counts check that none is lost or made up anywhere in a real file.
#include <nlohmann/json.hpp>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "scratch_dir.hpp"
#include "tinescope/import/trace_import.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::test {
namespace {

using Json = nlohmann::ordered_json;  // members in the file's order: the last of a repeated field wins, as it would
using Counts = std::map<std::string, uint64_t>;
using index::StreamKind;
namespace fs = std::filesystem;

// ---- the samples

// A sample directory as sample() in chrome_import_test.cpp finds its files:
// ../shared/samples where it is there, else the copies in tests/data.
std::string sample_dir(const std::string& dir) {
  const std::string src = TINESCOPE_SOURCE_DIR;
  const std::string shared = src + "/../shared/samples/" + dir;
  return ::access(shared.c_str(), R_OK) == 0 ? shared : src + "/tests/data/" + dir;
}

// Every file of the sample directories but their READMEs, as "dir/name".
std::vector<std::string> samples() {
  std::vector<std::string> out;
  for (const char* dir : {"chrome-json", "ftrace"}) {
    std::error_code ec;
    for (const auto& f : fs::directory_iterator(sample_dir(dir), ec))
      if (f.is_regular_file() && f.path().extension() != ".md")
        out.push_back(std::string(dir) + "/" + f.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string sample_path(const std::string& sample) {
  const size_t slash = sample.find('/');
  return sample_dir(sample.substr(0, slash)) + sample.substr(slash);
}

// The file's bytes, gunzipped where it starts with gzip's magic bytes.
std::string read_sample(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 2 || uint8_t(bytes[0]) != 0x1f || uint8_t(bytes[1]) != 0x8b) return bytes;
  std::string out;
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) return out;
  char buf[1 << 16];
  for (int n; (n = gzread(gz, buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  gzclose(gz);
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A whole string as a number (blanks around it allowed).
template <class T>
bool number_in(std::string_view s, T& v) {
  s = trim(s);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

// ---- what the file holds, counted by the second parser

struct Expected {
  uint64_t events = 0;  // JSON trace events and ftrace event lines
  Counts kinds;         // by ph ("ph X") and ftrace event ("ftrace sched_switch"): for the report
  Counts intervals, instants, counters;  // closed intervals, instants, counter samples, by name
  uint64_t sends = 0, received = 0;      // flow links sent, and received
  uint64_t unmatched_ends = 0, unmatched_flow_ends = 0;
  uint64_t cpu_slices = 0;
  uint64_t running_states = 0;  // ftrace: a thread's "Running", switch-in to switch-out (its lane of states)
  Counts unsupported;
  // Events that begin an interval or are one (B, X, async begins) or an
  // instant (i, I, R, P, async instants and steps) and carry a category,
  // arguments or thread times, and ftrace's CPU slices (their switch's
  // fields): by category ("" for none). The importer
  // keeps each one's as an argument event after its begin, complete or
  // instant event (issue 51).
  Counts with_args;
};

// What waits for the whole file before it can be counted: begins and ends
// pair in time order, per thread, async id, object or flow id.
struct Mark {
  double ts;
  char kind;
  std::string name;
};
using Groups = std::map<std::string, std::vector<Mark>>;

struct Collector {
  Expected x;
  Groups begin_end, async, objects, flows;

  void finish() {
    auto in_time_order = [](std::vector<Mark>& v) {
      std::stable_sort(v.begin(), v.end(), [](const Mark& a, const Mark& b) { return a.ts < b.ts; });
    };
    // B/E: an end closes its thread's latest open begin, whatever its name.
    for (auto& [thread, marks] : begin_end) {
      in_time_order(marks);
      std::vector<std::string> open;
      for (const Mark& m : marks) {
        if (m.kind == 'B') open.push_back(m.name);
        else if (open.empty()) ++x.unmatched_ends;
        else ++x.intervals[open.back()], open.pop_back();
      }
    }
    // Async: an end closes the innermost open begin of its name and those
    // open above it; steps and instants are instants.
    for (auto& [id, marks] : async) {
      in_time_order(marks);
      std::vector<std::string> open;
      for (const Mark& m : marks) {
        if (m.kind == 'b') {
          open.push_back(m.name);
        } else if (m.kind == 'n') {
          ++x.instants[m.name];
        } else {
          auto it = std::find(open.rbegin(), open.rend(), m.name);
          if (it == open.rend()) {
            ++x.unmatched_ends;
            continue;
          }
          const size_t from = size_t(open.rend() - it) - 1;
          for (size_t k = from; k < open.size(); ++k) ++x.intervals[open[k]];
          open.resize(from);
        }
      }
    }
    // Objects: N..D is a lifetime (a new N ends the one alive); a snapshot is
    // an instant named by the lifetime, and starts one where none is alive.
    for (auto& [id, marks] : objects) {
      in_time_order(marks);
      std::string alive;
      bool is_alive = false;
      for (const Mark& m : marks) {
        if (m.kind == 'N') {
          if (is_alive) ++x.intervals[alive];
          alive = m.name, is_alive = true;
        } else if (m.kind == 'O') {
          if (!is_alive) alive = m.name, is_alive = true;
          ++x.instants[alive];
        } else if (is_alive) {
          ++x.intervals[alive], is_alive = false;
        } else {
          ++x.unmatched_ends;
        }
      }
    }
    // Flows: s sends, t receives and sends the next link, f receives; a t or
    // f with no link of its id open is an unmatched end.
    for (auto& [id, marks] : flows) {
      in_time_order(marks);
      bool open = false;
      for (const Mark& m : marks) {
        if (m.kind != 's') {
          if (open) ++x.received;
          else ++x.unmatched_flow_ends;
        }
        open = m.kind != 'f';
        if (open) ++x.sends;
      }
    }
  }
};

// ftrace text, a line at a time: TASK-PID [(TGID)] [CPU] [FLAGS] SECONDS: EVENT: ARGS.
class FtraceText {
 public:
  explicit FtraceText(Collector& c) : c_(c) {}

  void line(std::string_view text) {
    static const std::regex kEvent(
        R"(^\s*(.*)-(\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(\d+)\]\s+(?:[^\s:]+\s+)?(\d+(?:\.\d+)?):\s*([^\s:]+):(.*)$)");
    text = trim(text);
    if (text.empty() || text.front() == '#') return;
    std::match_results<std::string_view::const_iterator> m;
    if (!std::regex_match(text.begin(), text.end(), m, kEvent)) return;
    int64_t tid = 0, cpu = 0;
    double seconds = 0;
    if (!number_in(m[2].str(), tid) || !number_in(m[3].str(), cpu) || !number_in(m[4].str(), seconds)) return;
    const double us = seconds * 1e6;
    const std::string event = m[5];
    const std::string args(trim(std::string_view(&*m[6].first, size_t(m[6].length()))));
    ++c_.x.events, ++c_.x.kinds["ftrace " + event];

    if (event == "sched_switch") {
      int64_t prev = 0, next = 0;
      if (!number_in(arg(args, "prev_pid="), prev) || !number_in(arg(args, "next_pid="), next)) {
        ++c_.x.unsupported["ftrace sched_switch without prev_pid= and next_pid="];
        return;
      }
      // The slice of the thread this switch stops: from the switch that started it.
      Running& run = running_[cpu];
      if (run.pid > 0 && run.pid == prev) slice(run.name);
      // Its state: Running since it was switched in, on whichever CPU.
      if (prev > 0 && switched_in_.erase(prev)) ++c_.x.running_states;
      if (next > 0) switched_in_.insert(next);
      run = Running{next, comm(args) + "-" + std::to_string(next)};
      // A thread woken since it last ran: the wakeup's flow ends here.
      if (next > 0 && woken_.erase(next)) ++c_.x.sends, ++c_.x.received;
      return;
    }
    if (event == "sched_wakeup" || event == "sched_waking" || event == "sched_wakeup_new") {
      int64_t pid = 0;
      if (number_in(arg(args, "pid="), pid) && pid > 0) woken_.insert(pid);
      return;
    }
    if (event == "cpu_frequency" || event == "cpu_idle") {
      int64_t state = 0, on = 0;
      if (number_in(arg(args, "state="), state) && number_in(arg(args, "cpu_id="), on) && on >= 0 && on <= 65535) {
        ++c_.x.counters[event == "cpu_idle" ? "idle state" : "frequency kHz"];
        return;
      }
    }
    const bool print = event == "tracing_mark_write" || event == "print" ||
                       event.find_first_not_of("0123456789abcdefx") == std::string::npos;
    if (print && atrace(tid, us, args)) return;
    ++c_.x.unsupported["ftrace " + (print ? std::string("print") : event)];
  }

  // The threads still running at the end stay open: no slice. A wakeup
  // never followed by its thread's switch makes no flow (docs/IMPORT.md: the
  // flow is made at the switch that runs the woken thread).
  void finish() {
    for (auto& [cpu, run] : running_)
      if (run.pid > 0) ++c_.x.with_args[""];  // (its begin carries its switch's fields all the same)
    running_.clear();
    woken_.clear();
    switched_in_.clear();
  }

 private:
  struct Running {
    int64_t pid = 0;
    std::string name;
  };
  Collector& c_;
  std::map<int64_t, Running> running_;  // per CPU
  std::set<int64_t> woken_;             // woken and not yet run since
  std::set<int64_t> switched_in_;       // threads on a CPU

  // (Each begins with its switch's next_pid and next_prio as arguments.)
  void slice(const std::string& name) { ++c_.x.intervals[name], ++c_.x.cpu_slices, ++c_.x.with_args[""]; }

  // The value of "key=" among "k1=v1 k2=v2" (a whole key: at the start or after a blank), up to the next blank.
  static std::string arg(const std::string& args, const std::string& key) {
    for (size_t at = args.find(key); at != std::string::npos; at = args.find(key, at + 1)) {
      if (at > 0 && args[at - 1] != ' ') continue;
      const size_t from = at + key.size(), to = args.find(' ', from);
      return args.substr(from, to == std::string::npos ? std::string::npos : to - from);
    }
    return {};
  }
  // next_comm= may hold blanks: up to " next_pid=".
  static std::string comm(const std::string& args) {
    const size_t at = args.find("next_comm=");
    if (at == std::string::npos) return {};
    const size_t from = at + 10, to = args.find(" next_pid=", from);
    return args.substr(from, to == std::string::npos ? std::string::npos : to - from);
  }

  // atrace's B|tgid|name, E[|tgid], C|tgid|name|value, S|tgid|name|cookie, F|tgid|name|cookie.
  bool atrace(int64_t tid, double us, const std::string& text) {
    if (text.empty() || std::string_view("BECSF").find(text[0]) == std::string_view::npos ||
        (text.size() > 1 && text[1] != '|'))
      return false;
    std::vector<std::string> part;
    std::stringstream split(text);
    for (std::string p; std::getline(split, p, '|');) part.push_back(p);
    if (text.back() == '|') part.push_back("");
    int64_t tgid = 0;
    if (part.size() > 1 && !number_in(part[1], tgid)) return false;
    const std::string thread = "ftrace thread " + std::to_string(tid);
    switch (text[0]) {
      case 'B':
        if (part.size() < 3) return false;
        c_.begin_end[thread].push_back(Mark{us, 'B', text.substr(part[0].size() + part[1].size() + 2)});
        break;
      case 'E': c_.begin_end[thread].push_back(Mark{us, 'E', ""}); break;
      case 'C': {
        double v;
        if (part.size() < 4 || !number_in(part[3], v)) return false;
        ++c_.x.counters[part[2]];
        break;
      }
      default:  // S, F: async, the cookie its process's own
        if (part.size() < 4) return false;
        c_.async[part[2] + " " + part[3] + " @" + std::to_string(tgid)].push_back(
            Mark{us, text[0] == 'S' ? 'b' : 'e', part[2]});
    }
    return true;
  }
};

// Chrome JSON: the array of events, or the object with "traceEvents".
class ChromeJson {
 public:
  explicit ChromeJson(Collector& c) : c_(c) {}

  // False where nlohmann-json does not parse it.
  bool read(const std::string& text) {
    const Json doc = Json::parse(text, nullptr, false);
    if (doc.is_discarded()) return false;
    const Json* events = &doc;
    if (doc.is_object()) {
      if (auto f = doc.find("stackFrames"); f != doc.end() && f->is_object()) {
        for (auto& [id, frame] : f->items())
          if (frame.is_object() && frame.contains("name") && frame["name"].is_string()) frames_[id] = frame["name"];
      } else if (f != doc.end() && f->is_array() && !f->empty()) {
        c_.x.unsupported["stackFrames given as an array"] += f->size();
      }
      if (auto s = doc.find("samples"); s != doc.end())
        c_.x.unsupported["samples (the top-level array of CPU samples)"] += s->is_array() ? s->size() : 1;
      if (auto s = doc.find("systemTraceEvents"); s != doc.end() && s->is_string()) {
        FtraceText ftrace(c_);
        std::istringstream lines(s->get<std::string>());
        for (std::string line; std::getline(lines, line);) ftrace.line(line);
        ftrace.finish();
      }
      auto e = doc.find("traceEvents");
      events = e != doc.end() ? &*e : nullptr;
    }
    if (events && events->is_array())
      for (const Json& e : *events)
        if (e.is_object()) event(e);
    return true;
  }

 private:
  Collector& c_;
  std::map<std::string, std::string> frames_;  // "stackFrames": id -> name

  static std::string text(const Json& e, const char* key) {
    auto it = e.find(key);
    if (it == e.end()) return {};
    if (it->is_string()) return it->get<std::string>();
    return it->is_number() ? it->dump() : std::string();
  }
  // A thread: its pid and tid (a number in a string is the number).
  static std::string who(const Json& e, const char* key) {
    auto it = e.find(key);
    if (it == e.end()) return "0";
    if (it->is_number()) return std::to_string(it->get<int64_t>());
    int64_t v;
    const std::string s = it->is_string() ? it->get<std::string>() : "";
    return number_in(s, v) && trim(s) == s ? std::to_string(v) : "name " + s;
  }
  // An id, and whether it is its process's own (id2's "local").
  static std::string id(const Json& e, bool& local) {
    local = false;
    if (auto id2 = e.find("id2"); id2 != e.end() && id2->is_object() && !id2->empty()) {
      auto last = std::prev(id2->end());
      local = last.key() == "local";
      return last.key() + ":" + (last->is_string() ? last->get<std::string>() : last->dump());
    }
    return text(e, "id");
  }
  // ts (and dur) as numbers, or numbers in strings: why an event is not taken, "" if it is.
  static std::string refused(const Json& e, const std::string& ph, double& ts) {
    auto number = [&](const char* key, double& v) -> int {  // 1 a number, 0 none, -1 not a number
      auto it = e.find(key);
      if (it == e.end()) return 0;
      if (it->is_number()) return v = it->get<double>(), 1;
      if (!it->is_string()) return 0;
      return number_in(it->get<std::string>(), v) ? 1 : -1;
    };
    double dur = 0;
    const int has_ts = number("ts", ts), has_dur = number("dur", dur);
    if (has_ts < 0) return ph + " with ts not a number";
    if (has_dur < 0) return ph + " with dur not a number";
    if (has_ts == 0) return ph + " without ts";
    if (ts < 0) return ph + " with negative ts";
    if (!(ts + std::max(0.0, dur) < 9.2e15)) return ph + " with ts or dur out of range";
    return {};
  }
  void event(const Json& e) {
    ++c_.x.events;
    const std::string ph = e.contains("ph") && e["ph"].is_string() ? e["ph"].get<std::string>() : "";
    ++c_.x.kinds["ph " + ph];
    if (ph.size() != 1) return void(++c_.x.unsupported[ph.empty() ? "(no ph)" : ph]);
    const std::string name = text(e, "name"), cat = text(e, "cat");
    const Json args = e.contains("args") && e["args"].is_object() ? e["args"] : Json::object();
    if (ph == "M") {
      static const std::set<std::string> kNames = {"process_name", "thread_name", "process_labels"};
      const bool sort = (name == "process_sort_index" || name == "thread_sort_index") && args.contains("sort_index") &&
                        args["sort_index"].is_number();
      const bool cpus = name == "num_cpus" && args.size() == 1 && args.begin()->is_number();
      if (!kNames.count(name) && !sort && !cpus) ++c_.x.unsupported["M " + name];
      return;
    }
    double ts = 0;
    if (const std::string why = refused(e, ph, ts); !why.empty()) return void(++c_.x.unsupported[why]);
    const std::string thread = who(e, "pid") + "/" + who(e, "tid");
    const bool has_args = !cat.empty() || !args.empty() || (e.contains("tts") && e["tts"].is_number()) ||
                          (e.contains("tdur") && e["tdur"].is_number());
    // (An object's N makes its lifetime and an O its snapshot: each keeps its event's arguments.)
    static const std::set<std::string> kKept = {"B", "X", "i", "I", "R", "P", "b", "S", "n", "T", "p", "N", "O"};
    if (has_args && kKept.count(ph)) ++c_.x.with_args[cat];
    bool local = false;
    const std::string ident = id(e, local);
    switch (ph[0]) {
      case 'B':
      case 'X':
        if (ph == "B") c_.begin_end[thread].push_back(Mark{ts, 'B', name});
        else ++c_.x.intervals[name];
        bound_flow(e, ts);
        break;
      case 'E': c_.begin_end[thread].push_back(Mark{ts, 'E', ""}); break;
      case 'i':
      case 'I':
      case 'R': ++c_.x.instants[name]; break;
      case 'C': {
        // A sample per numeric argument: "name" for one, "name.arg" for several; "[id]" after the name.
        std::vector<std::string> numeric;
        for (auto& [k, v] : args.items())
          if (v.is_number()) numeric.push_back(k);
        const std::string base = name + (ident.empty() ? "" : "[" + ident + "]");
        for (const std::string& k : numeric) ++c_.x.counters[numeric.size() == 1 ? base : base + "." + k];
        break;
      }
      case 'b':
      case 'S':
      case 'e':
      case 'F':
      case 'n':
      case 'T':
      case 'p': {
        const char kind = ph == "b" || ph == "S" ? 'b' : ph == "e" || ph == "F" ? 'e' : 'n';
        c_.async[cat + " " + ident + (local ? " @" + who(e, "pid") : "")].push_back(Mark{ts, kind, name});
        break;
      }
      case 'P': {
        auto frame = frames_.find(text(e, "sf"));
        ++c_.x.instants[frame != frames_.end() ? frame->second : name];
        break;
      }
      case 'N':
      case 'O':
      case 'D':
        c_.objects[text(e, "scope") + "/" + ident + " @" + who(e, "pid")].push_back(Mark{ts, ph[0], name});
        break;
      case 's':
      case 't':
      case 'f': c_.flows["flow " + cat + " / " + text(e, "id")].push_back(Mark{ts, ph[0], name}); break;
      default: ++c_.x.unsupported[ph];
    }
  }

  // flow_out / flow_in on a slice (flow events v2): a flow of its bind_id (else its id).
  void bound_flow(const Json& e, double ts) {
    auto flag = [&](const char* key) { return e.contains(key) && e[key].is_boolean() && e[key].get<bool>(); };
    const bool in = flag("flow_in"), out = flag("flow_out");
    if (!in && !out) return;
    const std::string bind = text(e, "bind_id");
    c_.flows["bind_id " + (bind.empty() ? text(e, "id") : bind)].push_back(
        Mark{ts, in && out ? 't' : in ? 'f' : 's', ""});
  }
};

// The trace viewer's HTML: ftrace text in `var linuxPerfData = "..."` (a
// JavaScript string), or <script class="trace-data"> blocks of JSON or text.
bool read_html(const std::string& page, Collector& c) {
  FtraceText ftrace(c);
  bool found = false;
  auto lines = [&](const std::string& text) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) ftrace.line(line);
  };
  static constexpr std::string_view kJs = "linuxPerfData = \"", kBlock = "<script class=\"trace-data\"";
  for (size_t at = page.find(kJs); at != std::string::npos; at = page.find(kJs, at)) {
    found = true;
    std::string text;
    for (at += kJs.size(); at < page.size() && page[at] != '"'; ++at) {
      if (page[at] != '\\') {
        text += page[at];
      } else if (++at < page.size()) {  // \n, \t, \" ...; a backslash before a newline continues the string
        const char e = page[at];
        if (e != '\n') text += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      }
    }
    lines(text);
  }
  for (size_t at = page.find(kBlock); at != std::string::npos; at = page.find(kBlock, at)) {
    found = true;
    const size_t gt = page.find('>', at);
    if (gt == std::string::npos) break;
    const size_t from = gt + 1, to = page.find("</script>", from);
    const std::string block = page.substr(from, to - from);
    const std::string_view body = trim(block);
    if (!body.empty() && (body[0] == '{' || body[0] == '[')) {
      if (!ChromeJson(c).read(std::string(body))) return false;
    } else {
      lines(block);
    }
    at = to;
  }
  ftrace.finish();
  return found;
}

// What a sample holds, by its contents as the importer tells them apart:
// JSON, an HTML page, else ftrace text.
::testing::AssertionResult count(const std::string& path, Expected& out) {
  std::string text = read_sample(path);
  if (text.empty()) return ::testing::AssertionFailure() << path << ": empty or unreadable";
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  const std::string_view body = trim(text);
  if (body.empty()) return ::testing::AssertionFailure() << path << ": only white space";
  Collector c;
  if (body[0] == '[' || body[0] == '{') {
    if (!ChromeJson(c).read(text)) return ::testing::AssertionFailure() << path << ": nlohmann-json cannot parse it";
  } else if (body[0] == '<') {
    if (!read_html(text, c)) return ::testing::AssertionFailure() << path << ": no trace data in the HTML";
  } else {
    FtraceText ftrace(c);
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) ftrace.line(line);
    ftrace.finish();
  }
  c.finish();
  out = std::move(c.x);
  return ::testing::AssertionSuccess();
}

// ---- what the importer made, read back through the index

struct Made {
  import::ImportResult result;
  Counts intervals, instants, counters;  // items by name
  uint64_t send_items = 0, flows = 0, matched_flows = 0, cpu_slices = 0, running_states = 0;
  Counts with_args;  // argument events after a begin, complete or instant event, by their cat field
};

// Reads every event of a trace and counts the argument events that follow
// a begin, complete or instant event, by their "cat" field.
struct ArgumentCount : trace::Visitor {
  const trace::Parser* parser = nullptr;
  Counts* out = nullptr;
  std::map<uint32_t, uint16_t> last_type;  // per feedlet
  void on_event(const trace::Event& e) override {
    const trace::Catalog& c = parser->catalog();
    const format::EventTypeDef* d = c.schema.find(e.type);
    if (d && e.type >= format::kFirstUserType && !d->name.empty() && d->name[0] == '.') {
      const uint16_t before = last_type[e.feedlet];
      if (before != format::kIntervalBegin && before != format::kIntervalComplete && before != format::kInstant) return;
      std::string cat;
      for (size_t k = 0; k < d->fields.size(); ++k)
        if (d->fields[k].name == "cat") cat = c.string(e.u[k]);
      ++(*out)[cat];
      return;
    }
    last_type[e.feedlet] = e.type;
  }
};

::testing::AssertionResult import_and_index(const std::string& in, const std::string& name, Made& made) {
  const std::string out = scratch_dir() + "/" + name + ".tine";
  ::unlink(out.c_str());
  ::unlink((out + ".idx").c_str());
  std::string error;
  if (!import::import_trace(in, out, made.result, error)) return ::testing::AssertionFailure() << error;
  auto ix = index::TraceIndex::build(out, error);
  if (!ix) return ::testing::AssertionFailure() << error;
  if (!ix->damage().empty()) return ::testing::AssertionFailure() << out << ": the index finds damage";
  const trace::Catalog& catalog = ix->catalog();
  std::set<uint32_t> cpu_lanes, state_lanes;  // ftrace's lanes "CPU N" of "CPUs", and of "thread states"
  for (const auto& f : ix->feedlets()) {
    auto process = catalog.metadata.find("feedlet." + std::to_string(f.id) + ".process");
    if (process != catalog.metadata.end() && process->second == "CPUs") cpu_lanes.insert(f.id);
    if (process != catalog.metadata.end() && process->second == "thread states") state_lanes.insert(f.id);
  }
  for (const auto& s : ix->streams()) {
    const std::string stream(catalog.string(s.key));
    switch (s.kind) {
      case StreamKind::Interval:
        if (state_lanes.count(s.feedlet)) {  // (the states are counted apart: their Running)
          if (stream == "Running") made.running_states += s.items;
          break;
        }
        made.intervals[stream] += s.items;
        if (cpu_lanes.count(s.feedlet)) made.cpu_slices += s.items;
        break;
      case StreamKind::Instant: made.instants[stream] += s.items; break;
      case StreamKind::Counter: made.counters[stream] += s.items; break;
      case StreamKind::Send: made.send_items += s.items; break;
      default: break;  // Depth and Span hold the intervals again; Sched is the recorder's
    }
  }
  for (const index::Flow& f : ix->flows(0, UINT64_MAX)) {
    ++made.flows;
    if (f.matched()) ++made.matched_flows;
  }
  ArgumentCount args;
  args.out = &made.with_args;
  trace::Parser parser(args);
  args.parser = &parser;
  if (!trace::read_file(out, parser, error)) return ::testing::AssertionFailure() << error;
  ix.reset();
  ::unlink(out.c_str());
  ::unlink((out + ".idx").c_str());
  return ::testing::AssertionSuccess();
}

uint64_t total(const Counts& c) {
  uint64_t n = 0;
  for (auto& [k, v] : c) n += v;
  return n;
}

// ---- the tests

class SampleCounts : public ::testing::TestWithParam<std::string> {};

TEST_P(SampleCounts, ImporterAgreesWithAnIndependentCount) {
  const std::string path = sample_path(GetParam());
  const auto t0 = std::chrono::steady_clock::now();
  Expected want;
  ASSERT_TRUE(count(path, want));
  std::string name = GetParam();
  std::replace(name.begin(), name.end(), '/', '_');
  Made got;
  ASSERT_TRUE(import_and_index(path, name, got));
  const import::ImportResult& r = got.result;

  // Every event is read (or skipped as malformed); nlohmann-json parsed the
  // whole file, so none is malformed.
  EXPECT_EQ(r.events_read + r.malformed_events, want.events);
  EXPECT_EQ(r.malformed_events, 0u);
  // Nothing lost and nothing made up, name by name.
  EXPECT_EQ(got.intervals, want.intervals);
  EXPECT_EQ(got.instants, want.instants);
  EXPECT_EQ(got.counters, want.counters);
  EXPECT_EQ(r.unmatched_ends, want.unmatched_ends);
  // A flow per link sent (received or not), matched where it was received.
  EXPECT_EQ(got.flows, want.sends);
  EXPECT_EQ(got.send_items, want.sends);
  EXPECT_EQ(got.matched_flows, want.received);
  EXPECT_EQ(r.unmatched_flow_ends, want.unmatched_flow_ends);
  EXPECT_EQ(got.cpu_slices, want.cpu_slices);
  EXPECT_EQ(got.running_states, want.running_states);
  // What it did not import is what this count found outside the mapping.
  EXPECT_EQ(r.unsupported, want.unsupported);
  // Every category and argument came through (issue 51).
  EXPECT_EQ(got.with_args, want.with_args);

  std::string kinds;
  for (auto& [k, v] : want.kinds) kinds += " " + k + "=" + std::to_string(v);
  std::printf("%-34s events %6llu  intervals %5llu  instants %4llu  counters %5llu  flows %3llu/%3llu  "
              "cpu slices %3llu  unmatched ends %2llu/%llu  unsupported %llu  (%.0f ms)\n   %s\n",
              GetParam().c_str(), (unsigned long long)want.events, (unsigned long long)total(want.intervals),
              (unsigned long long)total(want.instants), (unsigned long long)total(want.counters),
              (unsigned long long)want.received, (unsigned long long)want.sends,
              (unsigned long long)want.cpu_slices, (unsigned long long)want.unmatched_ends,
              (unsigned long long)want.unmatched_flow_ends, (unsigned long long)total(want.unsupported),
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
              kinds.c_str());
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Samples, SampleCounts, ::testing::ValuesIn(samples()), test_name);

// The samples are there: an empty listing would check nothing.
TEST(SampleCountsListing, FindsTheSamples) {
  const auto all = samples();
  EXPECT_TRUE(std::count_if(all.begin(), all.end(), [](auto& s) { return s.rfind("chrome-json/", 0) == 0; }) > 0);
  EXPECT_TRUE(std::count_if(all.begin(), all.end(), [](auto& s) { return s.rfind("ftrace/", 0) == 0; }) > 0);
}

}  // namespace
}  // namespace tinescope::test
