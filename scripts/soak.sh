#!/usr/bin/env bash
# Runs the randomized tests again and again, each round under a new seed
# (TINESCOPE_TEST_SEED: tests/trace_helpers.hpp's test_seed()), for as long
# as asked. The suite's own runs keep their fixed seeds; a soak looks for
# the trace, the cut or the query that those seeds never drew.
#
#   scripts/soak.sh [-b BUILD_DIR] [-m MINUTES] [-s FIRST_SEED] [-R CTEST_REGEX]
#
# Builds the tests in BUILD_DIR (default build; an ASan build such as
# build-asan works too) and runs them with ctest. A failing round's output
# is kept in BUILD_DIR/soak/seed-N.log, with the command that repeats it;
# the exit status is 1 if any round failed.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build minutes=30 seed=1
# The tests whose traces, cuts, queries or bytes come from test_seed(), and
# (below) the programs that hold them: a test seeded anew goes in both.
default_regex='^(Oracle\.|Index\.|Synthetic\.|DurationHistogram\.|Live\.(CaptureInPieces|Garbage|FollowsATraceFile)|TraceDamage\.|TraceFormat\.Varints|Fault\.LiveSourceThatFloods)'
regex=$default_regex
while getopts "b:m:s:R:" opt; do
  case $opt in
    b) build=$OPTARG ;;
    m) minutes=$OPTARG ;;
    s) seed=$OPTARG ;;
    R) regex=$OPTARG ;;
    *) sed -n '7p' "$0"; exit 2 ;;
  esac
done
[ -f "$build/CMakeCache.txt" ] || { echo "soak.sh: $build is not a build directory (run scripts/test.sh first)"; exit 2; }
# The default tests' programs, or every one for a regex of your own.
targets=(--target oracle_test index_test analysis_test live_test trace_damage_test trace_format_test fault_test)
[ "$regex" = "$default_regex" ] || targets=()
cmake --build "$build" -j "$(nproc)" "${targets[@]}" >/dev/null
mkdir -p "$build/soak"
# As scripts/test.sh runs the sanitizers' builds (ignored by the others).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

end=$(($(date +%s) + minutes * 60))
rounds=0 failed=0
while [ "$(date +%s)" -lt "$end" ]; do
  log="$build/soak/seed-$seed.log"
  if TINESCOPE_TEST_SEED=$seed ctest --test-dir "$build" -j "$(nproc)" --timeout 600 --output-on-failure \
      -R "$regex" >"$log" 2>&1; then
    rm -f "$log"
  else
    failed=$((failed + 1))
    echo "seed $seed FAILED: $(sed -n '/tests FAILED:/,$p' "$log" | grep -cE '^\s+[0-9]+ - ') tests; $log"
    echo "repeat: TINESCOPE_TEST_SEED=$seed ctest --test-dir $build --output-on-failure -R '$regex'" >>"$log"
  fi
  rounds=$((rounds + 1)) seed=$((seed + 1))
done
echo "soak.sh: $rounds rounds (seeds up to $((seed - 1))), $failed failed"
[ "$failed" -eq 0 ]
