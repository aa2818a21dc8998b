#pragma once
namespace instrumented {
int leaf(int x);
int compile_time_excluded(int x);
int run_time_excluded(int x);
int fib(int n);
int entry();
}  // namespace instrumented

// C names, which are not mangled: "f" demangled as a type would be "float", "i" "int".
extern "C" int f(int x);
extern "C" int i(int x);
