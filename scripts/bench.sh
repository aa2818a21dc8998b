#!/usr/bin/env bash
# Builds Release, measures this machine's limits, runs every benchmark in
# bench/ and writes one JSON report with each figure, its unit, its goal and
# its ratio to the limit it names (docs/BENCH.md).
#   scripts/bench.sh [--quick] [-o REPORT.json] [--trace BIG.tine]
#   scripts/bench.sh --compare A.json B.json
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--compare" ]; then
  exec python3 scripts/bench_report.py compare "$2" "$3"
fi
source scripts/deps.sh
tinescope_install_deps

quick=() out="bench-report.json" trace=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=(--quick) ;;
    -o) out=$2; shift ;;
    --trace) trace=(--trace "$2"); shift ;;
    *) echo "usage: scripts/bench.sh [--quick] [-o REPORT.json] [--trace BIG.tine] | --compare A.json B.json"; exit 2 ;;
  esac
  shift
done

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTINESCOPE_BUILD_BENCH=ON >/dev/null
cmake --build build -j "$(nproc)"
logs=$(mktemp -d)
work=$(mktemp -d -p "${TMPDIR:-/tmp}" tinescope-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
run() {  # name command...
  local name=$1; shift
  echo "=== $name"
  "$@" | tee "$logs/$name.txt"
}
run machine build/bench/machine_bench "${quick[@]}" --dir "$work"
run recorder build/bench/recorder_bench "${quick[@]}" --demo build/recorder/tinescope-demo
run symbols build/bench/symbols_bench "${quick[@]}" --dir "$work"
if [ ${#trace[@]} -eq 0 ]; then
  run index build/bench/index_bench "${quick[@]}" --trace "$work/index.tine"
  run analysis build/bench/analysis_bench "${quick[@]}" --trace "$work/index.tine"
  run render build/bench/render_bench "${quick[@]}" --trace "$work/render.tine"
else
  run index build/bench/index_bench "${quick[@]}" "${trace[@]}"
  run analysis build/bench/analysis_bench "${quick[@]}" "${trace[@]}"
  run render build/bench/render_bench "${quick[@]}" "${trace[@]}"
fi
run import build/bench/import_bench "${quick[@]}" --json "$work/import.json"
run perfetto build/bench/perfetto_bench "${quick[@]}" --trace "$work/import.pftrace"
# The live viewer needs a window: a virtual display where there is none.
if [ -n "${DISPLAY:-}" ]; then
  run live build/bench/live_bench "${quick[@]}"
else
  run live xvfb-run -a -s "-screen 0 1600x1000x24" build/bench/live_bench "${quick[@]}"
fi
echo
python3 scripts/bench_report.py report "$out" "$logs"/*.txt
