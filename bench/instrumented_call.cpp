// A function compiled with -finstrument-functions for recorder_bench's
// function-call figures: each call is an entry and an exit event.
#include "instrumented_call.hpp"

__attribute__((noinline)) int bench_leaf(int x) { return x * 3 + 1; }
