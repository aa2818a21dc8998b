// The command line as a user meets it: one zero for times in every command,
// clear refusals of what a command cannot do (an output format it does not
// write, a window outside the trace), never a silent wrong answer.
#include <unistd.h>

#include <cstdio>
#include <string>

#include <map>

#include <nlohmann/json.hpp>

#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

using nlohmann::json;

std::string tinescope(const std::string& args) { return bin("app/tinescope") + " " + args + " 2>&1"; }

// A Chrome JSON trace imported to `trace`: events from 5 s to 15 s.
void import_ten_seconds(const std::string& trace) {
  const std::string in = temp_path("ten_seconds.json");
  write_file(in, R"([{"ph":"X","name":"w","pid":1,"tid":1,"ts":5000000,"dur":100},)"
                 R"({"ph":"X","name":"v","pid":1,"tid":1,"ts":14999000,"dur":1000}])");
  ::unlink(trace.c_str());
  ::unlink((trace + ".idx").c_str());
  std::string said;
  ASSERT_EQ(run(tinescope("import " + in + " -o " + trace), &said), 0) << said;
  ::unlink(in.c_str());
}

// Trust, fault 10: one zero everywhere. `dump` counted from the recording's
// start, `find`, `stream`, `render` and the viewer from the trace's first
// event; an imported trace whose events begin at 5 s showed 5.0 in one and 0
// in the others.
TEST(Cli, DumpAndFindCountTimeFromTheSameZero) {
  const std::string in = temp_path("zero.json"), trace = temp_path("zero");
  write_file(in, R"([{"ph":"X","name":"w","pid":1,"tid":1,"ts":5000000,"dur":100},)"
                 R"({"ph":"X","name":"v","pid":1,"tid":1,"ts":5000250,"dur":50}])");
  ::unlink(trace.c_str());
  std::string said;
  ASSERT_EQ(run(bin("app/tinescope") + " import " + in + " -o " + trace + " 2>&1", &said), 0) << said;
  ASSERT_EQ(run(bin("app/tinescope") + " find " + trace + " --longest 2 2>&1", &said), 0) << said;
  EXPECT_NE(said.find("\"start_ns\": 0,"), std::string::npos) << said;
  EXPECT_NE(said.find("\"start_ns\": 250000,"), std::string::npos) << said;
  ASSERT_EQ(run(bin("app/tinescope") + " dump " + trace + " 2>&1", &said), 0) << said;
  EXPECT_NE(said.find("     0.000000000  f1   interval_begin     name=\"w\""), std::string::npos) << said;
  EXPECT_NE(said.find("     0.000250000  f1   interval_begin     name=\"v\""), std::string::npos) << said;
  // Without an index, the same zero, and dump neither builds nor writes one.
  ::unlink((trace + ".idx").c_str());
  ASSERT_EQ(run(bin("app/tinescope") + " dump " + trace + " 2>&1", &said), 0) << said;
  EXPECT_NE(said.find("     0.000250000  f1   interval_begin     name=\"v\""), std::string::npos) << said;
  EXPECT_NE(::access((trace + ".idx").c_str(), F_OK), 0) << "dump wrote an index";
  ::unlink(in.c_str());
  ::unlink(trace.c_str());
  ::unlink((trace + ".idx").c_str());
}

// Trust, fault 18: `render -o x.svg` wrote a PNG under that name, and a
// window past the trace's end was "--to must come after --from". Now SVG
// and PDF are written as such (issue 56); another name is refused.
TEST(Cli, RenderRefusesWhatItCannotDrawAndSaysWhereTheTraceIs) {
  const std::string trace = temp_path("render_refusals");
  import_ten_seconds(trace);
  std::string said;
  for (const std::string out : {"x.jpg", "x", "x.png.txt"}) {
    const std::string path = scratch_dir() + "/" + out;
    EXPECT_EQ(run(tinescope("render " + trace + " -o " + path), &said), 2) << out << ": " << said;
    EXPECT_NE(said.find("a picture is written as .png, .svg or .pdf; name the output so"), std::string::npos) << said;
    EXPECT_NE(::access(path.c_str(), F_OK), 0) << out << " was written";
  }
  for (const std::string out : {"x.svg", "x.pdf"}) {
    const std::string path = scratch_dir() + "/" + out;
    EXPECT_EQ(run(tinescope("render " + trace + " -o " + path), &said), 0) << out << ": " << said;
    EXPECT_EQ(slurp(path).substr(0, 5), out == "x.svg" ? "<?xml" : "%PDF-") << out;
  }
  const std::string png = scratch_dir() + "/x.PNG";
  EXPECT_EQ(run(tinescope("render " + trace + " -o " + png + " --size 200x100"), &said), 0) << said;
  EXPECT_EQ(::access(png.c_str(), F_OK), 0);
  EXPECT_EQ(run(tinescope("render " + trace + " -o " + png + " --from 20s"), &said), 2) << said;
  EXPECT_NE(said.find("lies outside the trace, which runs from 0 to 10.000 s"), std::string::npos) << said;
  EXPECT_EQ(said.find("--to must come after --from"), std::string::npos) << said;
  EXPECT_EQ(run(tinescope("render " + trace + " -o " + png + " --from 2s --to 1s"), &said), 2) << said;
  EXPECT_NE(said.find("--to must come after --from"), std::string::npos) << said;
  ::unlink(png.c_str());
  ::unlink(trace.c_str());
  ::unlink((trace + ".idx").c_str());
}

// Trust, fault 17: --lanes took 0-based scene positions while `info`
// prints feedlet numbers, no globs, ignored an unknown lane, and aborted on
// a number past 2^64.
TEST(Cli, LanesAreChosenByInfosNumbersNamesAndGlobsAndAnUnknownOneIsAnError) {
  const std::string in = temp_path("lanes.json"), trace = temp_path("lanes");
  std::string json = "[";
  for (int q = 1; q <= 12; ++q) {
    char name[16];
    std::snprintf(name, sizeof name, "q.%02d", q);
    json += std::string(q > 1 ? "," : "") + R"({"ph":"M","name":"thread_name","pid":1,"tid":)" + std::to_string(q) +
            R"(,"args":{"name":")" + name + R"("}},{"ph":"X","name":"w","pid":1,"tid":)" + std::to_string(q) +
            R"(,"ts":)" + std::to_string(q * 10) + R"(,"dur":5})";
  }
  write_file(in, json + "]");
  ::unlink(trace.c_str());
  ::unlink((trace + ".idx").c_str());
  std::string said;
  ASSERT_EQ(run(tinescope("import " + in + " -o " + trace), &said), 0) << said;
  ASSERT_EQ(run(tinescope("info " + trace), &said), 0) << said;
  // info's numbering of the lane q.04.
  const size_t at = said.find("q.04");
  ASSERT_NE(at, std::string::npos) << said;
  const size_t line = said.rfind('\n', at) + 1;
  const std::string number = std::to_string(std::stoul(said.substr(line, at - line)));
  const std::string png = scratch_dir() + "/lanes.png";
  auto lanes_drawn = [&](const std::string& spec, std::string& out) {
    return run(tinescope("render " + trace + " -o " + png + " --size 300x200 --lanes '" + spec + "'"), &out);
  };
  for (const std::string& spec : {number, std::string("q.04"), std::string("q.0[4]"), std::string("q.04*"),
                                 std::string("q.1*"), number + ",q.1*"})
    EXPECT_EQ(lanes_drawn(spec, said), 0) << spec << ": " << said;
  for (const std::string& spec : {std::string("13"), number + ",99", std::string("99999999999999999999999"),
                                 std::string("q.4*"), std::string("nothing")}) {
    EXPECT_EQ(lanes_drawn(spec, said), 2) << spec << ": " << said;
    EXPECT_NE(said.find("no lane is '"), std::string::npos) << spec << ": " << said;
  }
  ::unlink(in.c_str());
  ::unlink(png.c_str());
  ::unlink(trace.c_str());
  ::unlink((trace + ".idx").c_str());
}

// Trust, fault 14: a time past the clock's range (2^63 ns), at an event's
// start or its end, is refused and counted, not wrapped into nonsense
// ("duration 2562047h47m8589934608.854s", a negative last time); a long
// trace's duration prints in whole numbers.
TEST(Cli, TimesPastTheClocksRangeAreRefusedAndCounted) {
  const std::string in = temp_path("huge_ts.json"), trace = temp_path("huge_ts");
  write_file(in, R"([{"ph":"X","name":"a","pid":1,"tid":1,"ts":1000,"dur":10},)"
                 R"({"ph":"X","name":"b","pid":1,"tid":1,"ts":1e30,"dur":10},)"
                 R"({"ph":"X","name":"c","pid":1,"tid":1,"ts":9.1e15,"dur":1e15},)"
                 R"({"ph":"X","name":"d","pid":1,"tid":1,"ts":9e15,"dur":10}])");
  ::unlink(trace.c_str());
  ::unlink((trace + ".idx").c_str());
  std::string said;
  ASSERT_EQ(run(tinescope("import " + in + " -o " + trace), &said), 0) << said;
  EXPECT_NE(said.find("not imported: 2 \"X with ts or dur out of range\" events"), std::string::npos) << said;
  ASSERT_EQ(run(tinescope("info " + trace), &said), 0) << said;
  // From 1 ms to 9e18 ns + 10 us: 8 999 999 999 s and 999 010 us.
  EXPECT_NE(said.find("duration  2499999h59m59.999010s\n"), std::string::npos) << said;
  ASSERT_EQ(run(tinescope("find " + trace + " --longest 1"), &said), 0) << said;
  EXPECT_NE(said.find("\"duration_ns\": 10000,"), std::string::npos) << said;
  ::unlink(in.c_str());
  ::unlink(trace.c_str());
  ::unlink((trace + ".idx").c_str());
}

// Trust, fault 9: `stats --by-thread` and `find` label a thread whose name
// others share with its process and tid: five "IOThread" rows from five
// processes could not be told apart.
TEST(Cli, ThreadsThatShareANameAreToldApartByProcessAndTid) {
  const std::string in = temp_path("twins.json"), trace = temp_path("twins");
  write_file(in, R"([{"ph":"M","pid":1,"tid":1,"name":"process_name","args":{"name":"Browser"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"IOThread"}},
{"ph":"M","pid":4,"tid":5,"name":"thread_name","args":{"name":"IOThread"}},
{"ph":"M","pid":4,"tid":6,"name":"thread_name","args":{"name":"Main"}},
{"ph":"X","pid":1,"tid":2,"ts":1,"dur":5,"name":"read"},
{"ph":"X","pid":4,"tid":5,"ts":1,"dur":7,"name":"read"},
{"ph":"X","pid":4,"tid":6,"ts":1,"dur":2,"name":"read"}])");
  ::unlink(trace.c_str());
  ::unlink((trace + ".idx").c_str());
  std::string said;
  ASSERT_EQ(run(tinescope("import " + in + " -o " + trace), &said), 0) << said;
  ASSERT_EQ(run(tinescope("stats " + trace + " --by-thread --json"), &said), 0) << said;
  for (const char* want : {"\"thread\": \"IOThread (Browser, tid 2)\"", "\"thread\": \"IOThread (pid 4, tid 5)\"",
                           "\"thread\": \"Main\""})
    EXPECT_NE(said.find(want), std::string::npos) << want << " in " << said;
  ASSERT_EQ(run(tinescope("find " + trace + " --longest 1"), &said), 0) << said;
  EXPECT_NE(said.find("\"thread\": \"IOThread (pid 4, tid 5)\""), std::string::npos) << said;
  ::unlink(in.c_str());
  ::unlink(trace.c_str());
  ::unlink((trace + ".idx").c_str());
}


// Trust, fault 5: intervals whose end was not recorded (cut at dropped
// events, or never ended and closed with the outer frame) are flagged where
// a user reads durations: `find` marks each, `stats` counts them per name.
TEST(Cli, IntervalsWhoseEndWasNotRecordedAreFlaggedInFindAndStats) {
  using namespace format;
  TraceBytes trace = named_trace({"outer", "mid", "work"});
  ChunkBuilder cb;
  cb.feedlet = 1;
  put_named(cb, kIntervalBegin, 1'000, 1), put_named(cb, kIntervalBegin, 2'000, 2);
  trace.flush(cb);
  cb.pending_drops = 3;  // outer and mid are cut at 50 us
  put_named(cb, kIntervalBegin, 50'000, 3), put_named(cb, kIntervalEnd, 51'000, 3);
  put_named(cb, kIntervalBegin, 60'000, 1), put_named(cb, kIntervalBegin, 61'000, 2);
  put_named(cb, kIntervalEnd, 90'000, 1);  // mid never ended: cut with outer, which is not
  for (uint16_t type : {kMessageSend, kMessageRecv}) {  // a message of 1 byte: never "truncated"
    uint8_t* p = cb.begin(type, type == kMessageSend ? 91'000 : 92'000);
    p = cb.put_delta(p, 7), p = ChunkBuilder::put_u64(p, 1), p = ChunkBuilder::put_u64(p, 1);
    cb.end(ChunkBuilder::put_bytes(p, "x", 1));
  }
  trace.flush(cb);
  const std::string path = temp_path("cut");
  write_file(path, trace.out);
  std::string said;
  ASSERT_EQ(run(tinescope("find " + path + " --longest 5"), &said), 0) << said;
  // Longest first: outer 49 us (cut), mid 48 us (cut), outer 30 us, mid 29 us (cut), work 1 us.
  const json j = json::parse(said.substr(said.find('{')));
  ASSERT_EQ(j["longest"].size(), 5u) << said;
  const bool cut[] = {true, true, false, true, false};
  for (size_t i = 0; i < 5; ++i)
    EXPECT_EQ(j["longest"][i].value("truncated", false), cut[i]) << j["longest"][i].dump();
  ASSERT_EQ(run(tinescope("stream " + path + " 'intervals(name=\"mid\")' --csv"), &said), 0) << said;
  EXPECT_NE(said.find("start_ns,end_ns,duration_ns,name,thread,truncated\n"), std::string::npos) << said;
  EXPECT_NE(said.find(",mid,,1\n"), std::string::npos) << said;
  ASSERT_EQ(run(tinescope("stream " + path + " 'messages()' --csv"), &said), 0) << said;
  EXPECT_NE(said.find(",0\n"), std::string::npos) << said;
  EXPECT_EQ(said.find(",1\n"), std::string::npos) << said;
  ASSERT_EQ(run(tinescope("stats " + path + " --durations --json"), &said), 0) << said;
  const json s = json::parse(said.substr(said.find('{')));
  std::map<std::string, uint64_t> truncated;
  for (const json& r : s["durations"]) truncated[r["name"]] = r.value("truncated", uint64_t(0));
  EXPECT_EQ(truncated, (std::map<std::string, uint64_t>{{"mid", 2}, {"outer", 1}, {"work", 0}})) << said;
  ASSERT_EQ(run(tinescope("stats " + path + " --durations"), &said), 0) << said;
  EXPECT_NE(said.find("truncated: intervals whose end was not recorded"), std::string::npos) << said;
  ::unlink(path.c_str());
  ::unlink((path + ".idx").c_str());
}

}  // namespace
}  // namespace tinescope::test
