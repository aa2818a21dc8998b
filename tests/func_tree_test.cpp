// Zero-change function tracing (issue 54): a program built with
// -finstrument-functions and linked with the recorder, which never calls
// the recorder (func_tree_program.cpp), records itself when TINESCOPE_OUT
// is set, and under `tinescope record`. Every thread's call tree in the
// trace — who called whom, how often, by the names of static, anonymous-
// namespace and C functions and methods, from the ELF symbol table of an
// executable linked without -rdynamic — is the one the program counted.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tinescope/index/trace_index.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

using Edges = std::map<std::pair<std::string, std::string>, long>;  // (caller, callee) → calls

// The program's own counts, by thread id.
std::map<long, Edges> counted(const std::string& path) {
  std::map<long, Edges> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string tid, caller, callee, n;
    std::getline(f, tid, '\t'), std::getline(f, caller, '\t'), std::getline(f, callee, '\t'), std::getline(f, n);
    out[std::stol(tid)][{caller, callee}] += std::stol(n);
  }
  return out;
}

// The trace's call trees, by thread id: each feedlet's entries and exits
// followed on a stack of its own. A frame a longjmp skipped ends with a
// func_unwind (`skipped` counts them); an exit or unwind that is not the
// top frame's is `unmatched`.
std::map<long, Edges> recorded(const Collected& c, long* unmatched, long* skipped) {
  std::map<uint32_t, std::vector<std::string>> stacks;
  std::map<uint32_t, Edges> per_feedlet;
  *unmatched = *skipped = 0;
  for (const OwnedEvent& o : c.events) {
    if (o.e.feedlet == format::kMetadataFeedlet) continue;
    std::vector<std::string>& stack = stacks[o.e.feedlet];
    if (o.e.type == format::kFuncEnter) {
      const std::string name = c.name(o.e.u[0]);
      ++per_feedlet[o.e.feedlet][{stack.empty() ? std::string() : stack.back(), name}];
      stack.push_back(name);
    } else if (o.e.type == format::kFuncExit || o.e.type == format::kFuncUnwind) {
      if (stack.empty() || stack.back() != c.name(o.e.u[0])) {
        ++*unmatched;
        continue;
      }
      *skipped += o.e.type == format::kFuncUnwind;
      stack.pop_back();
    }
  }
  for (auto& [f, s] : stacks) *unmatched += long(s.size());
  std::map<long, Edges> out;
  for (auto& [f, edges] : per_feedlet) {
    auto info = c.catalog.feedlets.find(f);
    out[info == c.catalog.feedlets.end() ? -long(f) : long(info->second.tid)] = edges;
  }
  return out;
}

// The program's own count of the frames its longjmps skipped, from its output.
long skipped_by_longjmp(const std::string& out) {
  const std::string key = "frames skipped by longjmp: ";
  const size_t at = out.find(key);
  return at == std::string::npos ? -1 : std::stol(out.substr(at + key.size()));
}

// Every thread's calls as the program counted them, in the trace and in
// its index; exceptions' frames exited, longjmp's skipped ones closed and
// counted.
void expect_same_trees(const std::string& trace, const std::string& counts, const std::string& out) {
  const std::map<long, Edges> want = counted(counts);
  ASSERT_EQ(want.size(), 5u) << "main and four threads";
  Collected c = read_trace(trace);
  EXPECT_EQ(c.dropped, 0u);
  long unmatched = 0, skipped = 0;
  const std::map<long, Edges> got = recorded(c, &unmatched, &skipped);
  EXPECT_EQ(unmatched, 0) << "an exit with no entry of its own open";
  EXPECT_EQ(skipped, skipped_by_longjmp(out)) << out;
  EXPECT_EQ(skipped, 40) << "10 longjmps out of 4 frames";
  std::string error;
  auto ix = index::TraceIndex::build(trace, error);
  ASSERT_TRUE(ix) << error;
  uint64_t truncated = 0, unmatched_ends = 0;
  for (const index::FeedletSummary& f : ix->feedlets()) {
    truncated += f.counts.truncated, unmatched_ends += f.counts.unmatched_ends;
    EXPECT_TRUE(ix->open_at(f.id, ix->last_ts()).empty()) << "thread " << f.tid << " still open at the end";
  }
  EXPECT_EQ(truncated, uint64_t(skipped)) << "the frames a longjmp skipped, ended where the next call came, marked";
  EXPECT_EQ(unmatched_ends, 0u);
  EXPECT_EQ(got.size(), want.size()) << "threads with function events";
  for (const auto& [tid, edges] : want) {
    SCOPED_TRACE("thread " + std::to_string(tid));
    auto it = got.find(tid);
    ASSERT_NE(it, got.end());
    EXPECT_EQ(it->second, edges);
  }
  // Where each function's code begins, from the debug information.
  bool sq_source = false;
  for (const auto& [fn, src] : c.catalog.function_source) {
    if (c.name(fn) != "sq(int)") continue;
    const std::string file = c.name(src.file);
    sq_source = file.size() >= 21 && file.compare(file.size() - 21, 21, "func_tree_program.cpp") == 0 && src.line > 0;
  }
  EXPECT_TRUE(sq_source) << "sq(int)'s file and line";
}

TEST(FunctionTrees, AProgramThatNeverCallsTheRecorderRecordsItselfFromTheEnvironment) {
  const std::string trace = temp_path("func_tree_env"), counts = temp_path("func_tree_env.counts");
  ::unlink(trace.c_str());
  std::string out;
  ASSERT_EQ(run("TINESCOPE_OUT=" + trace + " " + bin("tests/func_tree_program") + " " + counts + " 2>&1", &out), 0) << out;
  expect_same_trees(trace, counts, out);
}

TEST(FunctionTrees, TinescopeRecordRecordsAProgramLinkedWithTheRecorder) {
  const std::string trace = temp_path("func_tree_record"), counts = temp_path("func_tree_record.counts");
  ::unlink(trace.c_str());
  std::string out;
  ASSERT_EQ(run(bin("app/tinescope") + " record -o " + trace + " -- " + bin("tests/func_tree_program") + " " + counts + " 2>&1", &out), 0)
      << out;
  expect_same_trees(trace, counts, out);
}

// Built with the standard library's templates instrumented too: by default
// they are left out at run time (their source is a system header), and the
// trees are the program's own; TINESCOPE_FUNC_EXCLUDE= (empty) keeps them,
// TINESCOPE_FUNC_INCLUDE keeps only what it names (here: a file's functions).
TEST(FunctionTrees, SystemHeadersAreLeftOutUnlessAsked) {
  const std::string trace = temp_path("func_tree_all"), counts = temp_path("func_tree_all.counts");
  ::unlink(trace.c_str());
  std::string out;
  ASSERT_EQ(run("TINESCOPE_OUT=" + trace + " " + bin("tests/func_tree_program_all") + " " + counts + " 2>&1", &out), 0) << out;
  expect_same_trees(trace, counts, out);

  auto names = [](const std::string& path) {
    Collected c = read_trace(path);
    std::set<std::string> out;
    for (const OwnedEvent* o : c.of_type(format::kFuncEnter)) out.insert(c.name(o->e.u[0]));
    return out;
  };
  ::unlink(trace.c_str());
  ASSERT_EQ(run("TINESCOPE_FUNC_EXCLUDE= TINESCOPE_OUT=" + trace + " " + bin("tests/func_tree_program_all") + " " + counts + " 2>&1", &out), 0)
      << out;
  const std::set<std::string> all = names(trace);
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const std::string& n) { return n.starts_with("std::"); }))
      << "the standard library's functions, asked for";
  EXPECT_TRUE(all.count("sq(int)"));

  ::unlink(trace.c_str());
  ASSERT_EQ(run("TINESCOPE_FUNC_INCLUDE='file=*func_tree_c.c' TINESCOPE_OUT=" + trace + " " + bin("tests/func_tree_program_all") + " " +
                    counts + " 2>&1",
                &out),
            0)
      << out;
  EXPECT_EQ(names(trace), (std::set<std::string>{"c_mix"}));
}

// An existing file is not written over: the program runs unrecorded and
// says why.
TEST(FunctionTrees, AnExistingFileIsNotWrittenOver) {
  const std::string trace = temp_path("func_tree_exists"), counts = temp_path("func_tree_exists.counts");
  { std::ofstream(trace) << "mine"; }
  std::string out;
  ASSERT_EQ(run("TINESCOPE_OUT=" + trace + " " + bin("tests/func_tree_program") + " " + counts + " 2>&1", &out), 0) << out;
  EXPECT_NE(out.find("not recording"), std::string::npos) << out;
  EXPECT_NE(out.find(trace), std::string::npos) << out;
  std::ifstream in(trace);
  std::string kept;
  std::getline(in, kept);
  EXPECT_EQ(kept, "mine");
}

// A buffer far too small for the calls: events are dropped, counted
// exactly (recorded + dropped = what the program made) and marked where
// they were; the frames open at a drop are cut there and marked truncated,
// and no frame is drawn inside one that did not call it.
TEST(FunctionTrees, ASmallBufferDropsCountsAndNestsNothingWrongly) {
  const std::string trace = temp_path("func_tree_small"), counts = temp_path("func_tree_small.counts");
  ::unlink(trace.c_str());
  std::string out;
  ASSERT_EQ(run("TINESCOPE_BUFFER=4096 TINESCOPE_OUT=" + trace + " " + bin("tests/func_tree_program") + " " + counts + " 2>&1", &out), 0)
      << out;
  const std::map<long, Edges> want = counted(counts);
  long calls = 0;
  for (const auto& [tid, edges] : want)
    for (const auto& [edge, n] : edges) calls += n;
  std::string error;
  auto ix = index::TraceIndex::build(trace, error);
  ASSERT_TRUE(ix) << error;
  uint64_t recorded = 0, dropped = 0, truncated = 0, nested = 0;
  for (const index::FeedletSummary& f : ix->feedlets()) {
    // (A frame a longjmp skipped ends with a func_unwind instead of its exit.)
    recorded += ix->feedlet_events_of_type(f.id, format::kFuncEnter) + ix->feedlet_events_of_type(f.id, format::kFuncExit) +
                ix->feedlet_events_of_type(f.id, format::kFuncUnwind);
    dropped += f.dropped;
    auto thread = want.find(long(f.tid));
    ASSERT_NE(thread, want.end()) << "a thread the program did not count: " << f.tid;
    // Every thread ended, its last events dropped or not: nothing is left
    // open to the trace's end (what was open at its last drops is cut where
    // it ended: the recorder's feedlet_end).
    EXPECT_TRUE(ix->open_at(f.id, ix->last_ts()).empty()) << "thread " << f.tid << " still open at the end";
    // Each frame below the top inside the frame one level up that covers it.
    std::map<uint32_t, std::vector<index::Item>> by_depth;
    ix->lane_items(f.id, 0, UINT64_MAX, [&](const index::Item& it) {
      if (it.kind == index::StreamKind::Interval) by_depth[it.depth].push_back(it);
    });
    for (auto& [d, items] : by_depth)
      std::sort(items.begin(), items.end(), [](const index::Item& a, const index::Item& b) { return a.start < b.start; });
    for (const auto& [d, items] : by_depth)
      for (const index::Item& it : items) {
        truncated += it.truncated;
        if (d == 0) continue;
        const auto& up = by_depth[d - 1];
        auto p = std::upper_bound(up.begin(), up.end(), it.start, [](uint64_t t, const index::Item& x) { return t < x.start; });
        ASSERT_NE(p, up.begin()) << "a frame at depth " << d << " with none above it";
        const index::Item& parent = *std::prev(p);
        EXPECT_LE(it.end, parent.end) << "a frame that outlives the one above it";
        const std::pair<std::string, std::string> edge{std::string(ix->catalog().string(parent.name)),
                                                       std::string(ix->catalog().string(it.name))};
        EXPECT_TRUE(thread->second.count(edge)) << edge.first << " never called " << edge.second;
        ++nested;
      }
  }
  EXPECT_GT(dropped, 0u) << "a 4 KiB buffer kept up with every call";
  EXPECT_EQ(recorded + dropped, uint64_t(2 * calls)) << "recorded and dropped are every entry and exit";
  EXPECT_GT(truncated, 0u) << "frames open at a drop are marked";
  EXPECT_GT(nested, 100u);
  std::string info;
  ASSERT_EQ(run(bin("app/tinescope") + " info " + trace + " 2>&1", &info), 0) << info;
  EXPECT_NE(info.find(std::to_string(dropped) + " dropped"), std::string::npos) << info;
}

// A real program's code from outside this project (issue 54, part 8):
// Debian's stb_image and stb_image_write, instrumented whole
// (stb_decode_program.c), run with only TINESCOPE_OUT set (and the system
// headers' code kept: TINESCOPE_FUNC_EXCLUDE empty; its bursts of 40 M
// calls a second on each of four threads sharing two cores fit a 16 MiB
// ring). Every stack balances; each decoding thread, doing the same work,
// made the same calls, among them the five decodes it counted; the
// library's static functions are named.
TEST(FunctionTrees, ARealLibrarysCodeFromDebianIsTracedWhole) {
  const std::string trace = temp_path("stb_decode");
  ::unlink(trace.c_str());
  std::string out;
  ASSERT_EQ(run("TINESCOPE_BUFFER=16777216 TINESCOPE_FUNC_EXCLUDE= TINESCOPE_OUT=" + trace + " " +
                    bin("tests/stb_decode_program") + " 2>&1",
                &out),
            0)
      << out;
  EXPECT_NE(out.find("decoded 20 of 20 whole"), std::string::npos) << out;
  Collected c = read_trace(trace);
  EXPECT_EQ(c.dropped, 0u);
  long unmatched = 0, skipped = 0;
  const std::map<long, Edges> got = recorded(c, &unmatched, &skipped);
  EXPECT_EQ(unmatched, 0);
  EXPECT_EQ(skipped, 0);
  ASSERT_EQ(got.size(), 5u) << "main and four decoding threads";
  std::vector<const Edges*> workers;
  for (const auto& [tid, edges] : got) {
    auto decodes = edges.find({"decode_rounds", "stbi_load_from_memory"});
    if (decodes == edges.end()) {
      EXPECT_EQ(edges.count({"main", "stbi_write_png_to_mem"}), 1u) << "the main thread encodes";
      continue;
    }
    EXPECT_EQ(decodes->second, 5) << "thread " << tid << ": the decodes it counted";
    workers.push_back(&edges);
  }
  ASSERT_EQ(workers.size(), 4u);
  for (size_t i = 1; i < workers.size(); ++i) EXPECT_EQ(*workers[i], *workers[0]) << "the same work, the same calls";
  std::set<std::string> callees;
  long calls = 0;
  for (const auto& [edge, n] : *workers[0]) callees.insert(edge.second), calls += n;
  EXPECT_GT(calls, 50000) << "a decode is tens of thousands of calls";
  for (const char* fn : {"stbi__parse_png_file", "stbi__zhuffman_decode", "stbi__paeth"})
    EXPECT_TRUE(callees.count(fn)) << fn << ", a static function of stb_image.h, by its name";
  for (const std::string& name : callees) EXPECT_EQ(name.find("0x"), std::string::npos) << name << ": named by address";
}

}  // namespace
}  // namespace tinescope::test
