#pragma once
// Instrumented (-finstrument-functions, bench/CMakeLists.txt).
int bench_leaf(int x);
