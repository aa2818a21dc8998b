#!/usr/bin/env bash
# Sets up what is missing, builds Release, records the demo workload and
# shows what the trace holds.
#   scripts/demo.sh [SECONDS]     (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
tinescope_install_deps

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"

mkdir -p out
trace=out/demo.tine
build/recorder/tinescope-demo -o "$trace" --overwrite --duration "${1:-5}"
build/app/tinescope dump --summary "$trace"
build/app/tinescope index "$trace"
build/app/tinescope info "$trace"
echo
echo "trace: $trace   (all events: build/app/tinescope dump $trace | less)"
