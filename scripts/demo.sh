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

# The viewer: a window when there is a display, else the same figures as PNGs.
if [ -n "${DISPLAY:-}" ] && [ -z "${TINESCOPE_DEMO_NO_WINDOW:-}" ]; then
  echo "opening the viewer (wheel/W/S zoom, drag/A/D pan, shift-drag selects, F fits)"
  build/app/tinescope view "$trace" --figure scope --lanes audio --period 45.351474us --fold 1024 --strip 4
else
  build/app/tinescope render "$trace" -o out/demo-timeline.png
  build/app/tinescope render "$trace" -o out/demo-gc-sweep.png --from 0.2s --to 0.45s --lanes gc,audio
  build/app/tinescope render "$trace" -o out/demo-audio-folded.png --figure scope --lanes audio \
    --period 45.351474us --fold 1024 --strip 4
  build/app/tinescope render "$trace" -o out/demo-audio-wrong-period.png --figure scope --lanes audio \
    --period 45.40us --fold 1024 --strip 4
  echo "no display: the viewer's figures are in out/demo-*.png"
fi
