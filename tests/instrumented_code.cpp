// Compiled with -finstrument-functions (see CMakeLists.txt): every function
// here reports its entry and exit to the recorder, except the excluded ones.
#include "instrumented_code.hpp"

namespace instrumented {

int leaf(int x) { return x * 3 + 1; }

int compile_time_excluded(int x) { return leaf(x) + 1; }  // -finstrument-functions-exclude-function-list

int run_time_excluded(int x) { return x - 1; }  // TINESCOPE_FUNC_EXCLUDE

int fib(int n) { return n < 2 ? leaf(n) : fib(n - 1) + fib(n - 2); }

int entry() { return fib(4) + compile_time_excluded(2) + run_time_excluded(5) + f(1) + i(1); }

}  // namespace instrumented

extern "C" int f(int x) { return x + 1; }
extern "C" int i(int x) { return x - 1; }
