// `tinescope export`: a trace out to Chrome JSON and Perfetto protobuf.
// JSON is checked by importing it again (import_trace) and comparing the two
// traces event by event; Perfetto by decoding its packets (protowire).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <map>
#include <set>
#include <thread>

#include "perfetto_trace.pb.h"
#include "tinescope/import/protowire.hpp"
#include "tinescope/import/trace_export.hpp"
#include "tinescope/import/trace_import.hpp"
#include "tinescope/tinescope.h"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

std::string scratch(const std::string& name) { return scratch_dir() + "/" + name; }

// A Chrome JSON of two threads of process 7 ("Browser"): nested slices with
// categories and arguments of each kind, a complete slice, instants, a
// counter, and a flow from one thread to the other.
const char* kInput = R"({"traceEvents":[
{"ph":"M","name":"process_name","pid":7,"tid":71,"args":{"name":"Browser"}},
{"ph":"M","name":"thread_name","pid":7,"tid":71,"args":{"name":"main"}},
{"ph":"M","name":"thread_name","pid":7,"tid":72,"args":{"name":"worker"}},
{"ph":"B","name":"task","cat":"app","pid":7,"tid":71,"ts":100.001,"args":{"frame":1,"ratio":0.25,"who":"me","ok":true}},
{"ph":"B","name":"phase","pid":7,"tid":71,"ts":200.5},
{"ph":"s","name":"req","cat":"f","id":9,"pid":7,"tid":71,"ts":250},
{"ph":"i","name":"mark","s":"t","pid":7,"tid":71,"ts":260.25,"args":{"n":-3}},
{"ph":"E","pid":7,"tid":71,"ts":300.999},
{"ph":"E","pid":7,"tid":71,"ts":900,"args":{"result":"done"}},
{"ph":"X","name":"serve","cat":"io,net","pid":7,"tid":72,"ts":400,"dur":100.5},
{"ph":"f","name":"req","cat":"f","id":9,"bp":"e","pid":7,"tid":72,"ts":450},
{"ph":"C","name":"mem","pid":7,"ts":150,"args":{"value":1.5}},
{"ph":"C","name":"mem","pid":7,"ts":350,"args":{"value":2.75}}
]})";

// An imported copy of kInput: a .tine trace.
std::string imported_input(const std::string& name) {
  const std::string json = scratch(name + "_in.json"), tine = scratch(name + ".tine");
  write_file(json, kInput);
  import::ImportResult r;
  std::string error;
  EXPECT_TRUE(import::import_trace(json, tine, r, error)) << error;
  return tine;
}

// The events of a trace as text, per lane name, in each lane's order: kind,
// time (ns), name and every argument field ("task 100001 B cat=app frame=1");
// messages paired by id as "req: main 250000 -> worker 450000"; counters
// with their value. Names, times, nesting order and fields, whatever the
// feedlet numbers and string ids are.
struct Digest {
  std::map<std::string, std::vector<std::string>> lanes;
  std::multiset<std::string> messages;
  std::string lane_names;
};

std::string value_text(const Collected& c, const format::FieldDef& f, const OwnedEvent& o, size_t k) {
  switch (f.type) {
    case format::FieldType::I64: return std::to_string(o.e.i(k));
    case format::FieldType::F64: {
      char b[40];
      std::snprintf(b, sizeof b, "%.17g", o.e.f(k));
      return b;
    }
    case format::FieldType::String: return c.name(o.e.u[k]);
    case format::FieldType::Bytes: return o.bytes[k];
    default: return std::to_string(o.e.u[k]);
  }
}

Digest digest(const std::string& path, bool message_names_are_strings) {
  Collected c = read_trace(path);
  Digest d;
  std::map<uint64_t, std::string> sends;     // message id -> "name: lane ns"
  std::map<uint64_t, std::string> receives;  // message id -> "lane ns"
  std::string* last = nullptr;
  std::map<uint32_t, std::string> lane_name;
  for (auto& [id, f] : c.catalog.feedlets) lane_name[id] = f.name;
  for (const OwnedEvent& o : c.events) {
    const trace::Event& e = o.e;
    // (Names and metadata are the lanes' names and the catalog, not events of a lane.)
    if (e.feedlet == format::kMetadataFeedlet || (e.type >= format::kThreadName && e.type <= format::kMetadata) ||
        e.type == format::kFeedletEnd)
      continue;
    const format::EventTypeDef* def = c.catalog.schema.find(e.type);
    const std::string lane = lane_name[e.feedlet];
    if (def && format::is_argument_type(*def)) {
      // (Fields in name order: an import orders a shape's fields its own way.)
      std::vector<std::string> fields;
      for (size_t k = 0; k < def->fields.size(); ++k)
        fields.push_back(def->fields[k].name + "=" + value_text(c, def->fields[k], o, k));
      std::sort(fields.begin(), fields.end());
      if (last)
        for (const std::string& f : fields) *last += " " + f;
      continue;
    }
    const int64_t ns = c.catalog.clock.to_ns(e.ts);
    std::string text;
    last = nullptr;
    switch (e.type) {
      case format::kIntervalBegin: text = "B " + std::to_string(ns) + " " + c.name(e.u[0]); break;
      case format::kIntervalEnd: text = "E " + std::to_string(ns); break;
      case format::kIntervalComplete:
        text = "X " + std::to_string(c.catalog.clock.to_ns(e.ts - e.u[1])) + ".." + std::to_string(ns) + " " + c.name(e.u[0]);
        break;
      case format::kInstant: text = "i " + std::to_string(ns) + " " + c.name(e.u[0]); break;
      case format::kCounterInt: text = "C " + std::to_string(ns) + " " + c.name(e.u[0]) + "=" + std::to_string(e.i(1)); break;
      case format::kCounterFloat: {
        char b[40];
        std::snprintf(b, sizeof b, "%.17g", e.f(1));
        // (JSON's counters are doubles: an integer counter comes back as one.)
        text = "C " + std::to_string(ns) + " " + c.name(e.u[0]) + "=" + b;
        break;
      }
      case format::kMessageSend:
      case format::kMessageRecv: {
        const std::string name = message_names_are_strings ? c.name(e.u[1]) : c.catalog.channel_name(e.u[1]);
        const std::string end = lane + " " + std::to_string(ns);
        // (Paired by id, whichever lane's chunk the file holds first.)
        if (e.type == format::kMessageSend) sends[e.u[0]] = name + ": " + end;
        else receives[e.u[0]] = end;
        continue;
      }
      default: text = "type " + std::to_string(e.type); break;
    }
    auto& v = d.lanes[lane];
    v.push_back(text);
    last = &v.back();
  }
  for (auto& [id, s] : sends) d.messages.insert(s + " -> " + (receives.count(id) ? receives[id] : "(none)"));
  for (auto& [name, v] : d.lanes) d.lane_names += name + ";";
  return d;
}

void expect_same(const Digest& a, const Digest& b) {
  EXPECT_EQ(a.lane_names, b.lane_names);
  for (auto& [lane, events] : a.lanes) {
    ASSERT_TRUE(b.lanes.count(lane)) << lane;
    EXPECT_EQ(events, b.lanes.at(lane)) << lane;
  }
  EXPECT_EQ(a.messages, b.messages);
}

bool do_export(const std::string& in, const std::string& out, const import::ExportOptions& o = {},
               import::ExportResult* result = nullptr) {
  import::ExportResult r;
  std::string error;
  ::unlink(out.c_str());
  const bool ok = import::export_trace(in, out, o, r, error);
  EXPECT_TRUE(ok) << error;
  if (result) *result = r;
  return ok;
}

std::string reimport(const std::string& json, uint64_t unmatched_flow_ends = 0) {
  const std::string tine = json + ".tine";
  ::unlink(tine.c_str());
  import::ImportResult r;
  std::string error;
  EXPECT_TRUE(import::import_trace(json, tine, r, error)) << error;
  EXPECT_EQ(r.unmatched_ends, 0u);
  EXPECT_EQ(r.unmatched_flow_ends, unmatched_flow_ends);
  return tine;
}

TEST(Export, JsonImportedAgainIsTheSameTrace) {
  const std::string a = imported_input("roundtrip");
  const std::string json = scratch("roundtrip_out.json");
  import::ExportResult r;
  ASSERT_TRUE(do_export(a, json, {}, &r));
  EXPECT_EQ(r.unmatched_ends, 0u);
  EXPECT_TRUE(r.not_exported.empty());
  const std::string text = slurp(json);
  // Microseconds with the nanoseconds kept, and the thread and process names.
  EXPECT_NE(text.find("\"ts\":100.001"), std::string::npos) << text;
  EXPECT_NE(text.find("\"ts\":300.999"), std::string::npos) << text;
  EXPECT_NE(text.find("\"name\":\"process_name\",\"pid\":7,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"args\":{\"name\":\"Browser\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("\"name\":\"thread_name\",\"pid\":7,\"tid\":72,\"args\":{\"name\":\"worker\"}"), std::string::npos);
  const Digest da = digest(a, true), db = digest(reimport(json), true);
  expect_same(da, db);
  // And what was compared is what kInput holds.
  ASSERT_TRUE(da.lanes.count("main"));
  const std::vector<std::string> main = {"B 100001 task cat=app frame=1 ok=true ratio=0.25 who=me",
                                         "B 200500 phase",
                                         "i 260250 mark n=-3",
                                         "E 300999",
                                         "E 900000 result=done"};
  EXPECT_EQ(da.lanes.at("main"), main);
  ASSERT_TRUE(da.lanes.count("worker"));
  EXPECT_EQ(da.lanes.at("worker"), (std::vector<std::string>{"B 400000 serve cat=io,net", "E 500500"}));
  std::vector<std::string> counters;
  for (auto& [lane, v] : da.lanes)
    for (const std::string& e : v)
      if (e[0] == 'C') counters.push_back(e);
  EXPECT_EQ(counters, (std::vector<std::string>{"C 150000 mem=1.5", "C 350000 mem=2.75"}));
  EXPECT_EQ(da.messages, (std::multiset<std::string>{"req: main 250000 -> worker 450000"}));
}

// The counters of a digest taken out of their lanes ("time name=value",
// sorted): an import puts a process's counters on a lane of its own.
std::vector<std::string> counters(Digest& d) {
  std::vector<std::string> out;
  for (auto& [lane, v] : d.lanes)
    for (auto it = v.begin(); it != v.end();)
      if ((*it)[0] == 'C') out.push_back(it->substr(2)), it = v.erase(it);
      else ++it;
  for (auto it = d.lanes.begin(); it != d.lanes.end();) it = it->second.empty() ? d.lanes.erase(it) : std::next(it);
  d.lane_names.clear();
  for (auto& [name, v] : d.lanes) d.lane_names += name + ";";
  std::sort(out.begin(), out.end());
  return out;
}

// The same through Perfetto's protobuf: names, times to the ns, nesting,
// counters, messages and fields come back (the instants that carry the
// messages' flows are read back as the messages alone).
TEST(Export, PerfettoImportedAgainIsTheSameTrace) {
  const std::string a = imported_input("pf_roundtrip");
  const std::string out = scratch("pf_roundtrip_out.pftrace");
  import::ExportResult r;
  ASSERT_TRUE(do_export(a, out, {}, &r));
  EXPECT_TRUE(r.not_exported.empty());
  const Digest da = digest(a, true), db = digest(reimport(out), true);
  expect_same(da, db);
  ASSERT_TRUE(da.lanes.count("main"));
  EXPECT_EQ(da.lanes.at("main").size(), 5u);
  EXPECT_EQ(da.messages, (std::multiset<std::string>{"req: main 250000 -> worker 450000"}));
}

// A trace the recorder wrote (TSC ticks, integer counters, a named channel,
// a category): its times come out as its nanoseconds, exactly.
void recorded_round_trip(const std::string& ext) {
  const std::string a = scratch("recorded" + ext + ".tine");
  ::unlink(a.c_str());
  ts_config cfg{};
  cfg.file_path = a.c_str();
  ASSERT_EQ(ts_start(&cfg), 0) << ts_last_error();
  ts_category_name(2, "io");
  ts_channel_name(3, "jobs");
  ts_thread_name("producer");
  uint64_t ids[3];
  for (int i = 0; i < 3; ++i) {
    ts_begin("produce");
    ts_counter_i64("queue", i + 1);
    ids[i] = ts_message_id();
    ts_message_send(ids[i], 3, 64, nullptr, 0);
    ts_instant_c(2, "wrote");
    ts_end("produce");
  }
  std::thread consumer([&] {
    ts_thread_name("consumer");
    for (uint64_t id : ids) {
      ts_begin("consume");
      ts_message_recv(id, 3, 64, nullptr, 0);
      ts_counter_f64("load", 0.5);
      ts_end("consume");
    }
  });
  consumer.join();
  ts_stop();
  const std::string json = scratch("recorded_out" + ext);
  import::ExportResult r;
  ASSERT_TRUE(do_export(a, json, {}, &r));
  Digest da = digest(a, false), db = digest(reimport(json), true);
  // Imported counters are doubles: the recorder's integer ones come back so.
  for (auto& [lane, v] : da.lanes)
    for (std::string& e : v)
      if (e.find(" queue=") != std::string::npos) {
        const size_t eq = e.rfind('=');
        char b[40];
        std::snprintf(b, sizeof b, "%.17g", double(std::stoll(e.substr(eq + 1))));
        e = e.substr(0, eq + 1) + b;
      }
  // The counters come back on their process's lane of counters: compare them apart.
  const std::vector<std::string> ca = counters(da), cb = counters(db);
  EXPECT_EQ(ca.size(), 6u);
  EXPECT_EQ(ca, cb);
  expect_same(da, db);
  ASSERT_TRUE(da.lanes.count("producer"));
  EXPECT_EQ(da.lanes.at("producer").size(), 9u);  // 3 x (begin, instant, end)
  EXPECT_NE(da.lanes.at("producer")[1].find(" wrote cat=io"), std::string::npos) << da.lanes.at("producer")[1];
  EXPECT_EQ(da.messages.size(), 3u);
  for (const std::string& m : da.messages) EXPECT_EQ(m.rfind("jobs: producer ", 0), 0u) << m;
}

TEST(Export, ARecordedTraceRoundTripsThroughJson) { recorded_round_trip(".json"); }
TEST(Export, ARecordedTraceRoundTripsThroughPerfetto) { recorded_round_trip(".pftrace"); }

// Events of other types (a lock's, a program's own ts_user_event) go out
// as instants named by their type with their fields, in both formats, and
// an import reads them back so; an unnamed channel keeps its number.
TEST(Export, OtherTypesGoOutAsInstantsWithTheirFields) {
  const std::string a = scratch("typed.tine");
  ::unlink(a.c_str());
  ts_config cfg{};
  cfg.file_path = a.c_str();
  ASSERT_EQ(ts_start(&cfg), 0) << ts_last_error();
  const ts_field fields[] = {{"id", TS_FIELD_U64}, {"latency_ms", TS_FIELD_F64}, {"kind", TS_FIELD_STRING}};
  const uint32_t transaction = ts_define_event_type("transaction", fields, 3);
  ASSERT_NE(transaction, 0u);
  ts_thread_name("main");
  ts_begin("work");
  ts_lock(TS_LOCK_CONTEND, "queue.mutex", 7);
  const uint64_t slots[] = {42, ts_f64_slot(0.25), ts_str_slot("request")};
  ts_user_event(transaction, slots);
  const uint64_t id = ts_message_id();
  ts_message_send(id, 5, 0, nullptr, 0);
  ts_message_recv(id, 5, 0, nullptr, 0);
  ts_end("work");
  ts_stop();
  for (const std::string ext : {".json", ".pftrace"}) {
    const std::string out = scratch("typed_out" + ext);
    import::ExportResult r;
    ASSERT_TRUE(do_export(a, out, {}, &r));
    EXPECT_TRUE(r.not_exported.empty()) << ext << ": " << r.not_exported.begin()->first;
    const Digest d = digest(reimport(out), true);
    ASSERT_TRUE(d.lanes.count("main")) << ext;
    const auto& main = d.lanes.at("main");
    ASSERT_EQ(main.size(), 4u) << ext;  // work, lock_contend, transaction, the end of work
    EXPECT_EQ(main[1].substr(0, 2), "i ") << ext;
    EXPECT_NE(main[1].find(" lock_contend id=7 lock=queue.mutex"), std::string::npos) << ext << ": " << main[1];
    EXPECT_NE(main[2].find(" transaction id=42 kind=request latency_ms=0.25"), std::string::npos) << ext << ": " << main[2];
    ASSERT_EQ(d.messages.size(), 1u) << ext;
    EXPECT_EQ(d.messages.begin()->rfind("channel 5: main ", 0), 0u) << ext << ": " << *d.messages.begin();
  }
}

// Perfetto: the packets decoded here, with the schema's field numbers.
struct Track {
  std::string name;
  int64_t pid = -1, tid = -1;
  uint64_t parent = 0;
  bool counter = false;
  std::string process_name;
};
struct Slice {
  uint64_t ts, type, track;
  std::string name;
  std::vector<std::string> cats, annotations;
  int64_t int_value = 0;
  double double_value = 0;
  bool has_double = false, has_int = false;
  std::vector<uint64_t> flows, terminating;
};
struct Decoded {
  std::map<uint64_t, Track> tracks;
  std::vector<Slice> events;
  size_t packets = 0;
  bool all_on_sequence_1 = true;
  std::vector<uint64_t> flags;  // each packet's sequence_flags
};

Decoded decode_perfetto(const std::string& bytes) {
  using protowire::Field;
  using protowire::Reader;
  Decoded d;
  Reader trace(bytes);
  Field f;
  while (trace.next(f)) {
    EXPECT_EQ(f.number, 1u);
    ++d.packets;
    Reader packet(f.bytes);
    Field p;
    uint64_t ts = 0, seq = 0, flags = 0;
    while (packet.next(p)) {
      if (p.number == 8) ts = p.value;
      if (p.number == 13) flags = p.value;
      if (p.number == 10) seq = p.value;
      if (p.number == 60) {
        Reader td(p.bytes);
        Field t;
        Track track;
        uint64_t uuid = 0;
        while (td.next(t)) {
          if (t.number == 1) uuid = t.value;
          if (t.number == 2) track.name = t.bytes;
          if (t.number == 5) track.parent = t.value;
          if (t.number == 8) track.counter = true;
          if (t.number == 3 || t.number == 4) {
            Reader sub(t.bytes);
            Field s;
            while (sub.next(s)) {
              if (s.number == 1) track.pid = s.as_int();
              if (t.number == 4 && s.number == 2) track.tid = s.as_int();
              if (t.number == 4 && s.number == 5) track.name = s.bytes;
              if (t.number == 3 && s.number == 6) track.process_name = s.bytes;
            }
          }
        }
        d.tracks[uuid] = track;
      }
      if (p.number == 11) {
        Reader te(p.bytes);
        Field t;
        Slice s{};
        while (te.next(t)) {
          if (t.number == 9) s.type = t.value;
          if (t.number == 11) s.track = t.value;
          if (t.number == 23) s.name = t.bytes;
          if (t.number == 22) s.cats.emplace_back(t.bytes);
          if (t.number == 30) s.int_value = t.as_int(), s.has_int = true;
          if (t.number == 44) s.double_value = t.as_double(), s.has_double = true;
          if (t.number == 47) s.flows.push_back(t.value);
          if (t.number == 48) s.terminating.push_back(t.value);
          if (t.number == 4) {
            Reader da(t.bytes);
            Field a;
            std::string text;
            while (da.next(a)) {
              if (a.number == 10) text = std::string(a.bytes) + "=" + text;
              if (a.number == 2) text += a.value ? "true" : "false";
              if (a.number == 3) text += std::to_string(a.value);
              if (a.number == 4) text += std::to_string(a.as_int());
              if (a.number == 5) text += std::to_string(a.as_double());
              if (a.number == 6) text += std::string(a.bytes);
            }
            s.annotations.push_back(text);
          }
        }
        s.ts = ts;
        d.events.push_back(s);
      }
    }
    EXPECT_FALSE(packet.malformed());
    d.all_on_sequence_1 &= seq == 1;
    d.flags.push_back(flags);
  }
  EXPECT_FALSE(trace.malformed());
  return d;
}

TEST(Export, PerfettoHoldsTheTracksSlicesCountersAndFlows) {
  const std::string a = imported_input("perfetto");
  const std::string out = scratch("perfetto_out.pftrace");
  import::ExportResult r;
  ASSERT_TRUE(do_export(a, out, {}, &r));
  const std::string bytes = slurp(out);
  EXPECT_EQ(r.bytes_written, bytes.size());
  const Decoded d = decode_perfetto(bytes);
  EXPECT_TRUE(d.all_on_sequence_1);
  ASSERT_GT(d.flags.size(), 1u);
  EXPECT_EQ(d.flags[0], 1u);  // SEQ_INCREMENTAL_STATE_CLEARED, on the first packet alone
  EXPECT_EQ(std::count(d.flags.begin(), d.flags.end(), 0u), std::ptrdiff_t(d.flags.size() - 1));
  // libprotobuf's own parser reads it as Perfetto's Trace too (lengths padded as protowire writes them).
  perfetto::protos::Trace parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  ASSERT_EQ(size_t(parsed.packet_size()), d.packets);
  int slices = 0;
  for (const auto& packet : parsed.packet())
    slices += packet.has_track_event() && packet.track_event().type() == perfetto::protos::TrackEvent::TYPE_SLICE_BEGIN;
  EXPECT_EQ(slices, 3);  // task, phase, serve
  // Tracks: the process, its two threads, its lane of counters and the counter's track.
  uint64_t process = 0, main = 0, worker = 0, mem = 0;
  for (auto& [uuid, t] : d.tracks) {
    if (t.process_name == "Browser") {
      process = uuid;
      EXPECT_EQ(t.pid, 7);
    }
    if (t.name == "main" || t.name == "worker") {
      (t.name == "main" ? main : worker) = uuid;
      EXPECT_EQ(t.tid, t.name == "main" ? 71 : 72);
      EXPECT_EQ(t.pid, 7);
    }
    if (t.name == "mem") {
      mem = uuid;
      EXPECT_TRUE(t.counter);
    }
  }
  ASSERT_TRUE(process && main && worker && mem);
  const Track& counters_lane = d.tracks.at(d.tracks.at(mem).parent);  // a named track under its process
  EXPECT_EQ(counters_lane.parent, process);
  EXPECT_EQ(counters_lane.tid, -1);
  // Slices: begins and ends per track, with their names, categories and annotations.
  std::map<uint64_t, std::vector<std::string>> per_track;
  std::vector<double> mem_values;
  std::vector<uint64_t> mem_ts;
  for (const Slice& s : d.events) {
    std::string text = std::to_string(s.type) + " " + std::to_string(s.ts) + " " + s.name;
    for (auto& c : s.cats) text += " [" + c + "]";
    std::vector<std::string> ann = s.annotations;
    std::sort(ann.begin(), ann.end());
    for (auto& a : ann) text += " " + a;
    if (s.type == 4) {
      EXPECT_EQ(s.track, mem);
      EXPECT_TRUE(s.has_double);
      mem_values.push_back(s.double_value), mem_ts.push_back(s.ts);
      continue;
    }
    per_track[s.track].push_back(text);
  }
  EXPECT_EQ(mem_values, (std::vector<double>{1.5, 2.75}));
  EXPECT_EQ(mem_ts, (std::vector<uint64_t>{150000, 350000}));
  const std::vector<std::string> want_main = {
      "1 100001 task [app] frame=1 ok=true ratio=0.250000 who=me",
      "1 200500 phase",
      "3 250000 req [tinescope.message]",  // the flow's start: an instant named by the message
      "3 260250 mark n=-3",
      "2 300999 ",
      "2 900000  result=done"};
  EXPECT_EQ(per_track[main], want_main);
  const std::vector<std::string> want_worker = {"1 400000 serve [io] [net]", "3 450000 req [tinescope.message]", "2 500500 "};
  EXPECT_EQ(per_track[worker], want_worker);
  // The flow: the send's id ends at the receive.
  std::vector<uint64_t> flows, terminating;
  for (const Slice& s : d.events) {
    if (!s.flows.empty()) {
      EXPECT_EQ(s.track, main);
      flows.insert(flows.end(), s.flows.begin(), s.flows.end());
    }
    if (!s.terminating.empty()) {
      EXPECT_EQ(s.track, worker);
      terminating.insert(terminating.end(), s.terminating.begin(), s.terminating.end());
    }
  }
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_EQ(flows, terminating);
  EXPECT_NE(flows[0], 0u);
}

TEST(Export, TheWindowCutsACrossingSliceAtItsEdges) {
  const std::string a = imported_input("window");
  // [260 us, 400.2 us]: "task" and "phase" began before it, "task" ends after
  // it and "serve" (400 .. 500.5) crosses its end.
  import::ExportOptions o;
  o.from_ns = 260'000, o.to_ns = 400'200;
  const std::string json = scratch("window_out.json");
  import::ExportResult r;
  ASSERT_TRUE(do_export(a, json, o, &r));
  EXPECT_EQ(r.slices_cut, 4u);  // task's begin and end, phase's begin, serve's end
  const Digest d = digest(reimport(json), true);
  ASSERT_TRUE(d.lanes.count("main"));
  const std::vector<std::string> main = {"B 260000 task", "B 260000 phase", "i 260250 mark n=-3", "E 300999",
                                         "E 400200"};
  EXPECT_EQ(d.lanes.at("main"), main);
  ASSERT_TRUE(d.lanes.count("worker"));
  EXPECT_EQ(d.lanes.at("worker"), (std::vector<std::string>{"B 400000 serve cat=io,net", "E 400200"}));
  // The counter at 350 us is inside, the one at 150 us is not; the flow's send (250 us) is out.
  std::vector<std::string> counters;
  for (auto& [lane, v] : d.lanes)
    for (const std::string& e : v)
      if (e[0] == 'C') counters.push_back(e);
  EXPECT_EQ(counters, std::vector<std::string>{"C 350000 mem=2.75"});
  EXPECT_TRUE(d.messages.empty());
  // Perfetto's slices balance the same way.
  const std::string pf = scratch("window_out.pftrace");
  ASSERT_TRUE(do_export(a, pf, o));
  const Decoded p = decode_perfetto(slurp(pf));
  int depth = 0, begins = 0;
  for (const Slice& s : p.events) {
    if (s.type == 1) {
      ++depth, ++begins;
      EXPECT_GE(s.ts, 260'000u);
    }
    if (s.type == 2) {
      --depth;
      EXPECT_LE(s.ts, 400'200u);
    }
  }
  EXPECT_EQ(depth, 0);
  EXPECT_EQ(begins, 3);
}

TEST(Export, TheLaneSelectionKeepsOnlyItsLanes) {
  const std::string a = imported_input("lanes");
  Collected c = read_trace(a);
  uint32_t worker = 0;
  for (auto& [id, f] : c.catalog.feedlets)
    if (f.name == "worker") worker = id;
  ASSERT_NE(worker, 0u);
  import::ExportOptions o;
  o.feedlets.emplace({worker});
  const std::string json = scratch("lanes_out.json");
  ASSERT_TRUE(do_export(a, json, o));
  const std::string text = slurp(json);
  EXPECT_EQ(text.find("\"main\""), std::string::npos);
  EXPECT_EQ(text.find("\"mem\""), std::string::npos);
  const Digest d = digest(reimport(json, 1), true);
  EXPECT_EQ(d.lane_names, "worker;");
  EXPECT_EQ(d.lanes.at("worker"), (std::vector<std::string>{"B 400000 serve cat=io,net", "E 500500"}));
  // The flow's receive alone: an orphan end, not imported as an arrow.
  EXPECT_TRUE(d.messages.empty());
}

// A thread that ended after drops (feedlet_end): what it had open ends
// there, as readers cut it; an end with nothing open is left out, counted.
TEST(Export, ALanesEndClosesItsSlicesAndAStrayEndIsLeftOut) {
  TraceBytes trace = named_trace({"work", "inner", "t1"}, {3});
  format::ChunkBuilder cb;
  cb.feedlet = 1;
  put_named(cb, format::kIntervalEnd, 50, 1);  // nothing open
  put_named(cb, format::kIntervalBegin, 100, 1);
  put_named(cb, format::kIntervalBegin, 150, 2);
  cb.end(cb.begin(format::kFeedletEnd, 200));
  trace.flush(cb);
  const std::string a = scratch("ended.tine");
  write_file(a, trace.out);
  const std::string json = scratch("ended_out.json");
  import::ExportResult r;
  ASSERT_TRUE(do_export(a, json, {}, &r));
  EXPECT_EQ(r.unmatched_ends, 1u);
  const Digest d = digest(reimport(json), true);
  ASSERT_TRUE(d.lanes.count("t1"));
  EXPECT_EQ(d.lanes.at("t1"), (std::vector<std::string>{"B 100 work", "B 150 inner", "E 200", "E 200"}));
}

// The command: --from and --to from the trace's start (its first event, at
// 100.001 us), --lanes as render's, resolved to feedlets by the app.
TEST(Export, TheCommandReadsItsWindowAndLanesAsRenderDoes) {
  const std::string a = imported_input("command");
  const std::string json = scratch("command_out.json");
  ::unlink(json.c_str());
  std::string said;
  const std::string cmd = bin("app/tinescope") + " export " + a + " -o " + json;
  ASSERT_EQ(run(cmd + " --from 160us --to 300.2us --lanes main 2>&1", &said), 0) << said;
  EXPECT_NE(said.find("3 slices cut"), std::string::npos) << said;
  const Digest d = digest(reimport(json), true);
  EXPECT_EQ(d.lane_names, "main;");
  const std::vector<std::string> main = {"B 260001 task", "B 260001 phase", "i 260250 mark n=-3", "E 300999",
                                         "E 400201"};
  EXPECT_EQ(d.lanes.at("main"), main);
  // Refusals: the file there already (left as it was), a lane no trace has, a time that is none.
  const std::string before = slurp(json);
  EXPECT_EQ(run(cmd + " 2>&1", &said), 1);
  EXPECT_NE(said.find("exists already"), std::string::npos) << said;
  EXPECT_EQ(slurp(json), before);
  const std::string other = scratch("command_other.pftrace");
  ::unlink(other.c_str());
  EXPECT_EQ(run(bin("app/tinescope") + " export " + a + " -o " + other + " --lanes nosuch 2>&1", &said), 2);
  EXPECT_NE(said.find("no lane is 'nosuch'"), std::string::npos) << said;
  EXPECT_EQ(run(bin("app/tinescope") + " export " + a + " -o " + other + " --from soon 2>&1", &said), 2);
  EXPECT_NE(said.find("not a time"), std::string::npos) << said;
  EXPECT_NE(::access(other.c_str(), F_OK), 0);
}

TEST(Export, AnExistingFileIsRefusedAndLeftAsItWas) {
  const std::string a = imported_input("refused");
  for (const char* name : {"refused_out.json", "refused_out.pftrace"}) {
    const std::string out = scratch(name);
    write_file(out, "keep me");
    import::ExportResult r;
    std::string error;
    EXPECT_FALSE(import::export_trace(a, out, {}, r, error));
    EXPECT_NE(error.find("exists already"), std::string::npos) << error;
    EXPECT_EQ(slurp(out), "keep me");
  }
  const std::string odd = scratch("refused_out.txt");
  ::unlink(odd.c_str());
  import::ExportResult r;
  std::string error;
  EXPECT_FALSE(import::export_trace(a, odd, {}, r, error));
  EXPECT_NE(error.find("unknown output format"), std::string::npos) << error;
  EXPECT_NE(::access(odd.c_str(), F_OK), 0);  // nothing made
  EXPECT_FALSE(import::export_format_of("x.json.gz"));
  EXPECT_EQ(import::export_format_of("x.perfetto-trace"), import::ExportFormat::Perfetto);
  // A file that is no trace: refused, and the output it began removed.
  const std::string junk = scratch("junk.tine"), out = scratch("junk_out.json");
  write_file(junk, "not a trace at all");
  ::unlink(out.c_str());
  EXPECT_FALSE(import::export_trace(junk, out, {}, r, error));
  EXPECT_NE(error.find("not a tinescope trace"), std::string::npos) << error;
  EXPECT_NE(::access(out.c_str(), F_OK), 0);
}

}  // namespace
}  // namespace tinescope::test
