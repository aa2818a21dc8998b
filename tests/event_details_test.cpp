// Every event's own data (issue 51): each field type recorded from C and
// C++ comes back with its schema name and type through the index
// (analysis::read_event, item_events, message_events), `tinescope find
// --event` / `--message`, and as a field stream; an event of a type the
// schema lacks is shown as its bytes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <map>
#include <thread>

#include "tinescope/analysis/derived_stream.hpp"
#include "tinescope/analysis/event_details.hpp"
#include "tinescope/import/trace_import.hpp"
#include "tinescope/index/trace_index.hpp"
#include "tinescope/tinescope.hpp"
#include "trace_helpers.hpp"

extern "C" int tinescope_c_api_record(const char* path);

namespace tinescope::test {
namespace {

using analysis::EventView;
using analysis::FieldView;
using nlohmann::json;

// Every event of every data feedlet, read back one by one through the index.
std::vector<EventView> every_event(const index::TraceIndex& ix) {
  std::vector<EventView> out;
  for (const index::FeedletSummary& f : ix.feedlets())
    for (uint64_t k = 0; k < f.events; ++k) {
      EventView v;
      std::string why;
      EXPECT_TRUE(analysis::read_event(ix, f.id, k, v, why)) << why;
      EXPECT_EQ(v.data.position, k);
      out.push_back(std::move(v));
    }
  return out;
}

const EventView* of_type(const std::vector<EventView>& events, const std::string& type) {
  for (const EventView& v : events)
    if (v.type_name == type) return &v;
  return nullptr;
}

// find --event FEEDLET:SEQ's JSON for one event.
json find_event(const std::string& path, const index::EventData& d) {
  std::string out;
  const std::string cmd = bin("app/tinescope") + " find " + path + " --event " + std::to_string(d.feedlet) + ":" +
                          std::to_string(d.position);
  EXPECT_EQ(run(cmd, &out), 0) << cmd;
  return json::parse(out)["event"];
}

json field_json(const json& event, const std::string& name) {
  for (const json& f : event["fields"])
    if (f["name"] == name) return f;
  return json();
}

TEST(EventDetails, EveryFieldRecordedFromCComesBackByNameAndType) {
  const std::string path = temp_path("details-c");
  unlink(path.c_str());
  ASSERT_EQ(tinescope_c_api_record(path.c_str()), 0);
  std::string error;
  auto ix = index::TraceIndex::build(path, error);
  ASSERT_TRUE(ix) << error;
  const std::vector<EventView> events = every_event(*ix);

  // The user type "c.user" {bytes: u, ratio: f}: 4096 and 0.25.
  const EventView* user = of_type(events, "c.user");
  ASSERT_NE(user, nullptr);
  ASSERT_EQ(user->fields.size(), 2u);
  EXPECT_EQ(user->fields[0].name, "bytes");
  EXPECT_EQ(user->fields[0].type, 'u');
  EXPECT_EQ(user->fields[0].number, 4096);
  EXPECT_EQ(user->fields[1].name, "ratio");
  EXPECT_EQ(user->fields[1].type, 'f');
  EXPECT_EQ(user->fields[1].number, 0.25);
  EXPECT_EQ(user->thread, "c-thread");
  // A counter's signed value, a name, a message's payload bytes.
  const EventView* counter = of_type(events, "counter_int");
  ASSERT_NE(counter, nullptr);
  EXPECT_EQ(counter->field("name")->text, "c.count");
  EXPECT_EQ(counter->field("value")->type, 'i');
  EXPECT_EQ(counter->field("value")->number, 42);
  const EventView* send = of_type(events, "message_send");
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(send->field("payload")->type, 'b');
  EXPECT_EQ(send->field("payload")->bytes, "abc");
  EXPECT_EQ(send->field("channel")->number, 3);
  EXPECT_EQ(send->field("size")->number, 64);

  // The command line says the same, field by field.
  const json u = find_event(path, user->data);
  EXPECT_EQ(u["type"], "c.user");
  EXPECT_EQ(u["thread"], "c-thread");
  EXPECT_EQ(field_json(u, "bytes")["value"], 4096);
  EXPECT_EQ(field_json(u, "bytes")["type"], "u");
  EXPECT_EQ(field_json(u, "ratio")["value"], 0.25);
  EXPECT_EQ(u["chunk"]["offset"], user->data.chunk_offset);
  const json s = find_event(path, send->data);
  EXPECT_EQ(field_json(s, "payload")["hex"], "616263");
  EXPECT_EQ(field_json(s, "payload")["ascii"], "abc");
  EXPECT_EQ(field_json(s, "payload")["size"], 3);
  // --message ID: its send and receive.
  std::string out;
  ASSERT_EQ(run(bin("app/tinescope") + " find " + path + " --message " +
                    std::to_string(uint64_t(send->field("id")->number)), &out), 0);
  const json m = json::parse(out)["messages"][0];
  EXPECT_EQ(m["send"]["type"], "message_send");
  EXPECT_EQ(m["receive"]["type"], "message_recv");
  EXPECT_EQ(m["channel"], 3);
  // Past the feedlet's end: a clear error, not a crash.
  EXPECT_NE(run(bin("app/tinescope") + " find " + path + " --event 1:999999 2>&1", &out), 0);
  EXPECT_NE(out.find("has no event 999999"), std::string::npos) << out;
  unlink(path.c_str());
}

TEST(EventDetails, EveryFieldTypeFromCppAndAsAFieldStream) {
  const std::string path = temp_path("details-cpp");
  unlink(path.c_str());
  const ts_field fields[] = {{"id", TS_FIELD_U64}, {"delta", TS_FIELD_I64}, {"latency_ms", TS_FIELD_F64},
                             {"kind", TS_FIELD_STRING}};
  const uint32_t type = ts_define_event_type("cpp.txn", fields, 4);
  ASSERT_GE(type, 64u);
  ts_config cfg{};
  cfg.file_path = path.c_str();
  ASSERT_EQ(ts_start(&cfg), 0) << ts_last_error();
  std::string payload;
  for (int b = 0; b < 256; ++b) payload += char(b);
  std::thread([&] {
    ts::thread_name("cpp-thread");
    for (int i = 0; i < 100; ++i) {
      TS_SCOPE("cpp.handle");
      ts::event(type, uint64_t(1000 + i), int64_t(-i), 0.5 * i, i % 2 ? "read" : "write");
    }
    const uint64_t id = ts_message_id();
    ts_message_send(id, 7, uint32_t(payload.size()), payload.data(), uint32_t(payload.size()));
    ts_message_recv(id, 7, uint32_t(payload.size()), payload.data(), uint32_t(payload.size()));
  }).join();
  ts_stop();
  std::string error;
  auto ix = index::TraceIndex::build(path, error);
  ASSERT_TRUE(ix) << error;
  const std::vector<EventView> events = every_event(*ix);
  std::vector<const EventView*> txns;
  for (const EventView& v : events)
    if (v.type_name == "cpp.txn") txns.push_back(&v);
  ASSERT_EQ(txns.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    const EventView& v = *txns[size_t(i)];
    ASSERT_EQ(v.fields.size(), 4u);
    EXPECT_EQ(v.fields[0].number, 1000 + i);
    EXPECT_EQ(v.fields[1].type, 'i');
    EXPECT_EQ(v.fields[1].number, -i);
    EXPECT_EQ(v.fields[2].type, 'f');
    EXPECT_EQ(v.fields[2].number, 0.5 * i);
    EXPECT_EQ(v.fields[3].type, 's');
    EXPECT_EQ(v.fields[3].text, i % 2 ? "read" : "write");
  }
  // Every byte value of a payload, as hex and text side by side.
  const EventView* send = of_type(events, "message_send");
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(send->field("payload")->bytes, payload);
  const std::string dump = analysis::hex_ascii(send->field("payload")->bytes);
  EXPECT_NE(dump.find("0000  00 01 02 03"), std::string::npos) << dump;
  EXPECT_NE(dump.find("0040  40 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f  @ABCDEFGHIJKLMNO"), std::string::npos) << dump;
  const json s = find_event(path, send->data);
  EXPECT_EQ(field_json(s, "payload")["hex"].get<std::string>().substr(0, 8), "00010203");
  EXPECT_EQ(field_json(s, "payload")["size"], 256);

  // A handled interval's begin and end events, found from the drawn item.
  const int stream = ix->find_stream(index::StreamKind::Interval, txns[0]->data.feedlet, "cpp.handle");
  ASSERT_GE(stream, 0);
  const auto items = ix->items(stream, 0, UINT64_MAX);
  ASSERT_EQ(items.size(), 100u);
  std::vector<EventView> both;
  ASSERT_TRUE(analysis::item_events(*ix, txns[0]->data.feedlet, items[5], both, error)) << error;
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].type_name, "interval_begin");
  EXPECT_EQ(both[0].data.ts, items[5].start);
  EXPECT_EQ(both[1].type_name, "interval_end");
  EXPECT_EQ(both[1].data.ts, items[5].end);
  // ... within a few ticks of times that went to nanoseconds and back.
  index::Item off = items[5];
  off.start += 1, off.end -= 1;
  both.clear();
  ASSERT_TRUE(analysis::item_events(*ix, txns[0]->data.feedlet, off, both, error, 3)) << error;
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].data.ts, items[5].start);

  // The float field as a stream of samples, filtered by value.
  analysis::Expr e;
  ASSERT_TRUE(analysis::parse_stream("field(name=\"cpp.txn\", \"latency_ms\", value>=10)", e, error)) << error;
  EXPECT_EQ(analysis::format_stream(e), "field(name=\"cpp.txn\", \"latency_ms\", value>=10)");
  auto st = analysis::DerivedStream::evaluate(*ix, e, error);
  ASSERT_TRUE(st) << error;
  ASSERT_EQ(st->size(), 80u);  // 0.5 * i >= 10 for i >= 20
  for (size_t k = 0; k < st->size(); ++k) {
    EXPECT_EQ(st->records()[k].value, 0.5 * double(k + 20));
    EXPECT_EQ(st->records()[k].end, txns[k + 20]->data.ts);
  }
  // A search finds payload bytes by hex, and name fields of user events by text.
  analysis::FieldSearch fs;
  ASSERT_TRUE(analysis::FieldSearch::hex("0x4041424344", fs.bytes));
  EXPECT_EQ(fs.bytes, "@ABCD");
  std::vector<analysis::FieldHit> hits;
  EXPECT_EQ(analysis::search_fields(*ix, fs, 0, UINT64_MAX, 10, hits, error), 2u) << "its send and its receive";
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].event, "message_send");
  EXPECT_EQ(hits[0].field, "payload");
  EXPECT_EQ(hits[0].value.substr(0, 10), "0x00010203");
  EXPECT_FALSE(analysis::FieldSearch::hex("0x4g", fs.bytes));
  analysis::FieldSearch words;
  words.text = [](std::string_view v) { return v == "read"; };
  hits.clear();
  EXPECT_EQ(analysis::search_fields(*ix, words, 0, UINT64_MAX, 3, hits, error), 50u) << "every odd transaction's kind";
  ASSERT_EQ(hits.size(), 3u) << "the first `limit` listed";
  EXPECT_EQ(hits[0].event, "cpp.txn");
  EXPECT_EQ(hits[0].field, "kind");
  EXPECT_EQ(hits[0].ts, txns[1]->data.ts);
  // Messages by size (their flow's; no payload decoded).
  ASSERT_TRUE(analysis::parse_stream("messages(where=\"size >= 256 and channel = 7\")", e, error)) << error;
  st = analysis::DerivedStream::evaluate(*ix, e, error);
  ASSERT_TRUE(st) << error;
  EXPECT_EQ(st->size(), 1u);
  ASSERT_TRUE(analysis::parse_stream("messages(where=\"size > 256\")", e, error)) << error;
  st = analysis::DerivedStream::evaluate(*ix, e, error);
  ASSERT_TRUE(st) << error;
  EXPECT_EQ(st->size(), 0u);
  ASSERT_TRUE(analysis::parse_stream("messages(where=\"payload = x\")", e, error)) << error;
  EXPECT_FALSE(analysis::DerivedStream::evaluate(*ix, e, error));
  EXPECT_NE(error.find("not payload"), std::string::npos) << error;
  // A name field is no number: no samples; an unknown field, none either.
  ASSERT_TRUE(analysis::parse_stream("field(name=\"cpp.txn\", \"kind\")", e, error));
  st = analysis::DerivedStream::evaluate(*ix, e, error);
  ASSERT_TRUE(st) << error;
  EXPECT_EQ(st->size(), 0u);
  EXPECT_FALSE(analysis::parse_stream("field(name=\"cpp.txn\")", e, error)) << "the field's name is needed";
  unlink(path.c_str());
}

// The recorder's categories reach the trace: a begin or instant of a
// category other than the default keeps it as its field `cat` (named, or
// cat<bit>, several bits joined), found in the details, by where= and by
// the field search; the default category adds nothing.
TEST(EventDetails, TheRecordersCategoriesAreTheEventsCat) {
  const std::string path = temp_path("details-categories");
  unlink(path.c_str());
  constexpr uint64_t kIo = 2, kNet = 4, kUnnamed = uint64_t(1) << 40, kDisk = uint64_t(3) << 8;
  ts_category_name(kIo, "io");
  ts_category_name(kNet, "net");
  ts_category_name(kDisk, "disk");  // two bits, one name
  ts_config cfg{};
  cfg.file_path = path.c_str();
  ASSERT_EQ(ts_start(&cfg), 0) << ts_last_error();
  std::thread([] {
    for (int i = 0; i < 30; ++i) {
      const uint64_t cat = i % 3 == 0 ? kIo : i % 3 == 1 ? kIo | kNet : kUnnamed;
      ts_begin_c(cat, "op");
      ts_instant_c(cat, "mark");
      ts_end_c(cat, "op");
      TS_SCOPE("plain");  // category 1: no `cat`
    }
    ts_instant_c(kDisk, "disk.mark");   // "disk" once
    ts_instant_c(1 | kIo, "both.mark");  // the default bit with another: "default,io"
  }).join();
  ts_stop();
  std::string error;
  auto ix = index::TraceIndex::build(path, error);
  ASSERT_TRUE(ix) << error;
  std::map<std::string, int> cats;  // of "op" and "mark" events
  int plain = 0;
  for (const EventView& v : every_event(*ix)) {
    if (v.type_name != "interval_begin" && v.type_name != "instant") continue;
    const std::string name = v.field("name") ? v.field("name")->text : "";
    const FieldView* cat = v.field("cat");
    if (name == "plain") {
      ++plain;
      EXPECT_EQ(cat, nullptr) << "the default category is no field";
      continue;
    }
    ASSERT_NE(cat, nullptr) << name;
    ++cats[name + " " + cat->text];
  }
  EXPECT_EQ(plain, 30);
  EXPECT_EQ(cats["disk.mark disk"], 1);
  EXPECT_EQ(cats["both.mark default,io"], 1);
  cats.erase("disk.mark disk"), cats.erase("both.mark default,io");
  EXPECT_EQ(cats, (std::map<std::string, int>{{"mark cat40", 10}, {"mark io", 10}, {"mark io,net", 10},
                                                {"op cat40", 10}, {"op io", 10}, {"op io,net", 10}}));
  analysis::Expr e;
  for (const auto& [where, want] : std::vector<std::pair<std::string, uint64_t>>{{"cat = io", 10}, {"cat = io*", 20},
                                                                                   {"cat != io*", 10}}) {
    for (const char* kind : {"intervals", "instants"}) {
      ASSERT_TRUE(analysis::parse_stream(std::string(kind) + "(where=\"" + where + "\")", e, error)) << error;
      auto st = analysis::DerivedStream::evaluate(*ix, e, error);
      ASSERT_TRUE(st) << error;
      // (The instants "disk" and "default,io" are no io*.)
      const uint64_t extra = std::string(kind) == "instants" && where == "cat != io*" ? 2 : 0;
      EXPECT_EQ(st->size(), want + extra) << kind << " where " << where;
    }
  }
  analysis::FieldSearch words;
  words.text = [](std::string_view v) { return v == "io,net"; };
  std::vector<analysis::FieldHit> hits;
  EXPECT_EQ(analysis::search_fields(*ix, words, 0, UINT64_MAX, 100, hits, error), 20u) << "10 begins, 10 instants";
  unlink(path.c_str());
}

// A Chrome trace's cat, args (typed; nested objects as dotted keys, arrays
// as text) and thread times become the fields of argument events after the
// event they belong to: found from the drawn item, and streamed by name.
TEST(EventDetails, ChromeArgumentsAndCategoriesArriveTyped) {
  std::string more;
  for (int k = 0; k < 20; ++k) more += std::string(k ? "," : "") + "\"k" + std::to_string(k) + "\":" + std::to_string(k);
  const std::string json_text = R"({"traceEvents":[
    {"name":"read","cat":"io","ph":"X","ts":10,"dur":5,"pid":1,"tid":1,"tts":3.5,"tdur":2,
     "args":{"bytes":8192,"ratio":0.5,"path":"/tmp/x","ok":true,"none":null,"nested":{"a":1,"b":{"c":"d"}},"list":[1, 2,"x"]}},
    {"name":"read","cat":"io","ph":"X","ts":20,"dur":5,"pid":1,"tid":1,"args":{"bytes":100,"ratio":1.5,"path":"/y","ok":false,"none":null,"nested":{"a":2,"b":{"c":"e"}},"list":[]}},
    {"name":"step","ph":"B","ts":30,"pid":1,"tid":1,"args":{"n":1}},
    {"name":"step","ph":"E","ts":40,"pid":1,"tid":1,"args":{"result":-7}},
    {"name":"many","ph":"i","ts":50,"pid":1,"tid":1,"args":{)" + more + R"(}}]})";
  const std::string in = scratch_dir() + "/args.json", path = temp_path("details-args");
  write_file(in, json_text);
  unlink(path.c_str());
  import::ImportResult r;
  std::string error;
  ASSERT_TRUE(import::import_trace(in, path, r, error)) << error;
  EXPECT_EQ(r.events_with_args, 5u);
  EXPECT_EQ(r.args_past_fields, 5u) << "20 arguments: 15 fields, and 5 in the 16th as text";
  auto ix = index::TraceIndex::build(path, error);
  ASSERT_TRUE(ix) << error;
  const uint32_t lane = ix->feedlets()[0].id;
  const int reads = ix->find_stream(index::StreamKind::Interval, lane, "read");
  ASSERT_GE(reads, 0);
  const auto items = ix->items(reads, 0, UINT64_MAX);
  ASSERT_EQ(items.size(), 2u);
  std::vector<EventView> ev;
  ASSERT_TRUE(analysis::item_events(*ix, lane, items[0], ev, error)) << error;
  ASSERT_EQ(ev.size(), 2u) << "its begin and end (it nests nothing, nor overlaps: written as a pair)";
  EXPECT_EQ(ev[0].type_name, "interval_begin");
  EXPECT_TRUE(ev[1].args.empty()) << "its arguments are its begin's";
  const EventView& read = ev[0];
  auto arg = [&](const std::string& name) -> const FieldView& {
    static const FieldView none;
    const FieldView* f = read.field(name);
    EXPECT_NE(f, nullptr) << name;
    return f ? *f : none;
  };
  EXPECT_EQ(arg("cat").type, 's');
  EXPECT_EQ(arg("cat").text, "io");
  EXPECT_EQ(arg("tts_ns").number, 3500);
  EXPECT_EQ(arg("tdur_ns").number, 2000);
  EXPECT_EQ(arg("bytes").type, 'i');
  EXPECT_EQ(arg("bytes").number, 8192);
  EXPECT_EQ(arg("ratio").type, 'f');
  EXPECT_EQ(arg("ratio").number, 0.5);
  EXPECT_EQ(arg("path").text, "/tmp/x");
  EXPECT_EQ(arg("ok").text, "true");
  EXPECT_EQ(arg("none").text, "null");
  EXPECT_EQ(arg("nested.a").number, 1);
  EXPECT_EQ(arg("nested.b.c").text, "d");
  EXPECT_EQ(arg("list").text, "[1, 2,\"x\"]");
  // A begin's arguments and its end's, each after its own event.
  const int steps = ix->find_stream(index::StreamKind::Interval, lane, "step");
  ev.clear();
  ASSERT_TRUE(analysis::item_events(*ix, lane, ix->items(steps, 0, UINT64_MAX).at(0), ev, error)) << error;
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].field("n")->number, 1);
  EXPECT_EQ(ev[1].field("result")->number, -7);
  // 20 arguments: 15 typed, the rest as text in "more".
  const int many = ix->find_stream(index::StreamKind::Instant, lane, "many");
  ev.clear();
  ASSERT_TRUE(analysis::item_events(*ix, lane, ix->items(many, 0, UINT64_MAX).at(0), ev, error)) << error;
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].args.size(), 16u);
  EXPECT_EQ(ev[0].field("k14")->number, 14);
  EXPECT_EQ(ev[0].field("more")->text, "k15=15; k16=16; k17=17; k18=18; k19=19");
  // An argument as a stream: the reads' bytes.
  analysis::Expr e;
  ASSERT_TRUE(analysis::parse_stream("field(name=\"read\", \"bytes\")", e, error)) << error;
  auto st = analysis::DerivedStream::evaluate(*ix, e, error);
  ASSERT_TRUE(st) << error;
  ASSERT_EQ(st->size(), 2u);
  EXPECT_EQ(st->records()[0].value, 8192);
  EXPECT_EQ(st->records()[1].value, 100);
  EXPECT_EQ(st->records()[0].end, items[0].start) << "at the time of the event they follow: its begin";
  // A search over fields finds the categories and argument texts, and says which event they belong to.
  std::string out;
  ASSERT_EQ(run(bin("app/tinescope") + " find " + path + " --search '^/tmp/x$|^io$'", &out), 0);
  const json found = json::parse(out)["search"];
  EXPECT_EQ(found["field_count"], 3) << "two reads' cat, one path";
  ASSERT_EQ(found["fields"].size(), 3u);
  EXPECT_EQ(found["fields"][0]["event"], "read");
  EXPECT_EQ(found["fields"][0]["field"], "cat");
  EXPECT_EQ(found["fields"][1]["field"], "path");
  EXPECT_EQ(found["fields"][1]["value"], "/tmp/x");
  // Intervals and instants by their fields (where=), each against the arguments by hand.
  auto count = [&](const std::string& text) -> int64_t {
    analysis::Expr x;
    std::string why;
    if (!analysis::parse_stream(text, x, why)) return ADD_FAILURE() << text << ": " << why, -1;
    auto d = analysis::DerivedStream::evaluate(*ix, x, why);
    if (!d) return ADD_FAILURE() << text << ": " << why, -1;
    return int64_t(d->size());
  };
  EXPECT_EQ(count("intervals(name=\"read\", where=\"bytes > 4096\")"), 1);
  EXPECT_EQ(count("intervals(where=\"bytes <= 4096\")"), 1);
  EXPECT_EQ(count("intervals(where=\"bytes > 1 and ratio >= 1\")"), 1);
  EXPECT_EQ(count("intervals(where=\"path = '/tmp/*'\")"), 1);
  EXPECT_EQ(count("intervals(where=\"nested.b.c != d\")"), 1);
  EXPECT_EQ(count("intervals(where=\"cat = io\")"), 2);
  EXPECT_EQ(count("intervals(where=\"n = 1\")"), 1) << "a begin's own arguments";
  EXPECT_EQ(count("intervals(where=\"no_such_field = 1\")"), 0);
  EXPECT_EQ(count("instants(where=\"k3 = 3 and more = '*k19=19'\")"), 1);
  EXPECT_EQ(count("longer(intervals(where=\"cat = io\"), 1ns)"), 2) << "the pyramids' shortcut is not taken";
  ASSERT_TRUE(analysis::parse_stream("intervals(where=\"bytes>4096 and path='/tmp/*'\")", e, error)) << error;
  EXPECT_EQ(analysis::format_stream(e), "intervals(where=\"bytes > 4096 and path = '/tmp/*'\")");
  EXPECT_FALSE(analysis::parse_stream("intervals(where=\"path < x\")", e, error));
  EXPECT_NE(error.find("text compares with = or != only"), std::string::npos) << error;
  unlink(path.c_str());
  unlink(in.c_str());
}

// An event of a user type whose definition is not in the trace (its
// metadata chunk lost) is shown as its bytes, with its size; the events
// around it as they are.
TEST(EventDetails, AnEventOfATypeTheSchemaLacksIsShownAsItsBytes) {
  using namespace format;
  TraceBytes trace = named_trace({"t", "a"}, {1});
  ChunkBuilder cb;
  cb.feedlet = 1;
  put_named(cb, kInstant, 100, 2);
  uint8_t* p = cb.begin(77, 200);  // self-sized: varint length, then what a newer writer put there
  p = ChunkBuilder::put_u64(p, 5);
  std::memcpy(p, "\x01\x02zz\xff", 5);
  cb.end(p + 5);
  put_named(cb, kInstant, 300, 2);
  trace.flush(cb);
  const std::string path = temp_path("details-unknown");
  write_file(path, trace.out);
  std::string error;
  auto ix = index::TraceIndex::build(path, error);
  ASSERT_TRUE(ix) << error;
  const std::vector<EventView> events = every_event(*ix);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].type_name, "instant");
  EXPECT_TRUE(events[1].data.unknown);
  EXPECT_EQ(events[1].type_name, "type 77 (not in the schema)");
  ASSERT_EQ(events[1].fields.size(), 1u);
  EXPECT_EQ(events[1].fields[0].type, '?');
  EXPECT_EQ(events[1].fields[0].bytes, std::string("\x01\x02zz\xff", 5));
  EXPECT_EQ(events[1].data.ts, 200u);
  EXPECT_EQ(events[2].field("name")->text, "a");
  const json u = find_event(path, events[1].data);
  EXPECT_EQ(field_json(u, "bytes")["hex"], "01027a7aff");
  EXPECT_EQ(field_json(u, "bytes")["size"], 5);
  unlink(path.c_str());
}

}  // namespace
}  // namespace tinescope::test
