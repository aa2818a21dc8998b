#!/usr/bin/env bash
# Sets up what is missing, builds, and runs every test with ctest:
#   0. the layout check (no include against the folders' one-way flow), at
#      once, before any build (it runs in the suite too);
#   1. Release build, the whole suite;
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build, the whole suite;
#   3. ThreadSanitizer build, the tests where threads meet (recorder,
#      collector, live feeds, the demo workload);
#   4. libFuzzer build (clang), a short run of every fuzz target
#      (TINESCOPE_FUZZ_SECONDS each, default 40).
# TINESCOPE_SANITIZERS=0 skips 2, 3 and 4 (a quick local run).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
tinescope_install_deps

python3 scripts/check_layout.py

jobs=$(nproc)
run_suite() {  # build-dir cmake-args... -- ctest-args...
  local dir=$1; shift
  local cmake_args=() ctest_args=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do cmake_args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  ctest_args=("$@")
  echo "=== $dir: ${cmake_args[*]}"
  cmake -S . -B "$dir" "${cmake_args[@]}" >/dev/null
  cmake --build "$dir" -j "$jobs"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 600 "${ctest_args[@]}"
}

run_suite build -DCMAKE_BUILD_TYPE=Release

if [ "${TINESCOPE_SANITIZERS:-1}" != 0 ]; then
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_suite build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTINESCOPE_SANITIZE=address,undefined \
    -DTINESCOPE_BUILD_BENCH=OFF -- -E '^install\.'
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  # Less the two largest brute-force checks of the walk (147 of the stage's
  # ~390 test-seconds under TSan): their threads, the indexer's workers and
  # the lane queries' helpers, are the ones that AnyNumberOfWorkers...,
  # LaneQueryInParallel... and GrowingTrace... run here; the checks
  # themselves run in the two suites above.
  run_suite build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTINESCOPE_SANITIZE=thread \
    -DTINESCOPE_BUILD_BENCH=OFF -- -R 'Recorder|CApi|Instrument|TraceKill|DemoWorkload|SplitAnywhere|Index\.|Fault\.|Live\.|Operators\.|Synthetic\.DerivedPyramids' \
    -E '^Index\.(WalksFromResumePointsInsideChunksEqualBruteForce|VersionOneTracesAnswerAsSegmentedOnes)$'
  unset ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS
  echo "=== build-fuzz: clang, libFuzzer + ASan + UBSan"
  CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTINESCOPE_FUZZ=ON \
    -DTINESCOPE_BUILD_BENCH=OFF >/dev/null
  cmake --build build-fuzz -j "$jobs" --target fuzz_trace_reader fuzz_trace_index fuzz_index_file fuzz_chrome_json \
    fuzz_perfetto fuzz_live_ingest
  ctest --test-dir build-fuzz --output-on-failure -j "$jobs" --timeout 900 -R '^fuzz\.'
fi
echo "scripts/test.sh: all suites passed"
