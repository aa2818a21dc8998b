// Zero-change function tracing (issue 54): a program built with
// -finstrument-functions and linked with the recorder, which never calls
// the recorder (func_tree_program.cpp), records itself when TINESCOPE_OUT
// is set, and under `tinescope record`. Every thread's call tree in the
// trace — who called whom, how often, by the names of static, anonymous-
// namespace and C functions and methods, from the ELF symbol table of an
// executable linked without -rdynamic — is the one the program counted.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

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
// followed on a stack of its own.
std::map<long, Edges> recorded(const Collected& c, long* unmatched) {
  std::map<uint32_t, std::vector<std::string>> stacks;
  std::map<uint32_t, Edges> per_feedlet;
  *unmatched = 0;
  for (const OwnedEvent& o : c.events) {
    if (o.e.feedlet == format::kMetadataFeedlet) continue;
    std::vector<std::string>& stack = stacks[o.e.feedlet];
    if (o.e.type == format::kFuncEnter) {
      const std::string name = c.name(o.e.u[0]);
      ++per_feedlet[o.e.feedlet][{stack.empty() ? std::string() : stack.back(), name}];
      stack.push_back(name);
    } else if (o.e.type == format::kFuncExit) {
      if (stack.empty() || stack.back() != c.name(o.e.u[0])) ++*unmatched;
      if (!stack.empty()) stack.pop_back();
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

void expect_same_trees(const std::string& trace, const std::string& counts) {
  const std::map<long, Edges> want = counted(counts);
  ASSERT_EQ(want.size(), 5u) << "main and four threads";
  Collected c = read_trace(trace);
  EXPECT_EQ(c.dropped, 0u);
  long unmatched = 0;
  const std::map<long, Edges> got = recorded(c, &unmatched);
  EXPECT_EQ(unmatched, 0) << "an exit that is not its entry's, or an entry never left";
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
  expect_same_trees(trace, counts);
}

TEST(FunctionTrees, TinescopeRecordRecordsAProgramLinkedWithTheRecorder) {
  const std::string trace = temp_path("func_tree_record"), counts = temp_path("func_tree_record.counts");
  ::unlink(trace.c_str());
  std::string out;
  ASSERT_EQ(run(bin("app/tinescope") + " record -o " + trace + " -- " + bin("tests/func_tree_program") + " " + counts + " 2>&1", &out), 0)
      << out;
  expect_same_trees(trace, counts);
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

}  // namespace
}  // namespace tinescope::test
