// -finstrument-functions: every entry and exit is recorded, by name, and
// functions can be left out at compile time and at run time.
#include <thread>

#include "instrumented_code.hpp"
#include "tinescope/tinescope.h"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

using namespace format;

TEST(InstrumentFunctions, EntryAndExitOfEveryFunctionByName) {
  const std::string path = temp_path("instrumented");
  unlink(path.c_str());
  setenv("TINESCOPE_FUNC_EXCLUDE", "*run_time_excluded*", 1);
  ts_config cfg{};
  cfg.file_path = path.c_str();
  ASSERT_EQ(ts_start(&cfg), 0) << ts_last_error();
  unsetenv("TINESCOPE_FUNC_EXCLUDE");
  int result = 0;
  std::thread([&] { result = instrumented::entry(); }).join();
  ts_stop();
  EXPECT_EQ(result, instrumented::fib(4) + 8 + 4 + 2 + 0);

  Collected c = read_trace(path);
  std::vector<std::string> calls;
  int depth = 0, max_depth = 0;
  for (const OwnedEvent& o : c.events) {
    if (o.e.type != kFuncEnter && o.e.type != kFuncExit) continue;
    std::string name = c.name(o.e.u[0]);
    if (o.e.type == kFuncEnter) {
      calls.push_back(name);
      max_depth = std::max(max_depth, ++depth);
    } else {
      --depth;
    }
    EXPECT_GE(depth, 0);
  }
  EXPECT_EQ(depth, 0) << "every entry has its exit";
  // entry → fib(4): fib is called 9 times, leaf 5 times (once per fib(0|1)).
  auto count = [&](const std::string& n) { return std::count(calls.begin(), calls.end(), n); };
  EXPECT_EQ(count("instrumented::entry()"), 1);
  EXPECT_EQ(count("instrumented::fib(int)"), 9);
  EXPECT_EQ(count("instrumented::leaf(int)"), 5 + 1) << "5 from fib, 1 from the excluded function";
  EXPECT_EQ(count("instrumented::compile_time_excluded(int)"), 0);
  EXPECT_EQ(count("instrumented::run_time_excluded(int)"), 0);
  // C functions keep their names (trust, fault 15: "f" was recorded as "float").
  EXPECT_EQ(count("f"), 1);
  EXPECT_EQ(count("i"), 1);
  EXPECT_EQ(count("float"), 0);
  EXPECT_EQ(count("int"), 0);
  EXPECT_EQ(max_depth, 6);  // entry > fib(4) > fib(3) > fib(2) > fib(1) > leaf
  unlink(path.c_str());
}

}  // namespace
}  // namespace tinescope::test
