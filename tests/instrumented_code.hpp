#pragma once
namespace instrumented {
int leaf(int x);
int compile_time_excluded(int x);
int run_time_excluded(int x);
int fib(int n);
int entry();
}  // namespace instrumented
