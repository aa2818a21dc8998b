#!/usr/bin/env bash
# Sets up what is missing, builds Release, records the demo workload and
# shows what the trace holds.
#   scripts/demo.sh [SECONDS]          (default 5)
#   scripts/demo.sh --live [SECONDS]   the demo streams live into the viewer
#                                      (TiVo mode; default 60 s)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
tinescope_install_deps

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"

if [ "${1:-}" = "--live" ]; then
  seconds=${2:-60}
  mkdir -p out/live
  sock=$(mktemp -u /tmp/tinescope-demo-XXXXXX.sock)
  build/recorder/tinescope-demo -o - --live "unix:$sock" --duration "$seconds" > /dev/null &
  demo=$!
  trap 'kill $demo 2>/dev/null || true' EXIT
  if [ -n "${DISPLAY:-}" ] && [ -z "${TINESCOPE_DEMO_NO_WINDOW:-}" ]; then
    echo "live: the demo streams into the viewer (Space pause/play, R reverse, , . step, [ ] speed, End live)"
    build/app/tinescope view --live "unix:$sock" --save-dir out/live
  else
    # No display: the same viewer in a virtual one, for a few seconds, then its last frame.
    xvfb-run -a -s "-screen 0 1280x800x24" build/app/tinescope view --live "unix:$sock" --save-dir out/live \
      --frames $((seconds * 45)) --snapshot out/demo-live.png
    echo "no display: the live viewer's last frame is out/demo-live.png; the feed was saved in out/live/"
  fi
  exit 0
fi

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
  echo "opening the viewer (wheel/W/S zoom, drag/A/D pan, shift-drag selects, F fits;"
  echo "  the GC quanta longer than 600 us are bookmarks: N / P step through them; T: the analysis panel)"
  build/app/tinescope view "$trace" --figure scope --lanes audio --period auto --fold 1024 --strip 4 \
    --bookmark 'longer(intervals(name="gc.quantum"), 600us)'
else
  build/app/tinescope render "$trace" -o out/demo-timeline.png
  build/app/tinescope render "$trace" -o out/demo-gc-sweep.png --from 0.2s --to 0.45s --lanes gc,audio
  # The audio task folded at the period found from its starts; in max mode its rare 300 us interruptions show.
  build/app/tinescope render "$trace" -o out/demo-audio-folded.png --figure scope --lanes audio \
    --period auto --fold 1024 --strip 4
  build/app/tinescope render "$trace" -o out/demo-audio-folded-max.png --figure scope --lanes audio \
    --period auto --fold 1024 --strip 4 --fold-mode max
  build/app/tinescope render "$trace" -o out/demo-audio-wrong-period.png --figure scope --lanes audio \
    --period 45.40us --fold 1024 --strip 4
  # The transactions' latencies over the GC phases (TuningFork's figure 5), and their histogram.
  build/app/tinescope render "$trace" -o out/demo-latency.png --figure stream --size 1400x420 \
    --stream 'field(name="transaction", "latency_ms")' --stream 'intervals(name="gc.*")'
  build/app/tinescope render "$trace" -o out/demo-latency-histogram.png --figure histogram --size 800x400 \
    --stream 'field(name="transaction", "latency_ms")'
  # Figure 5 itself: a second program's transactions, slowed while the first one's GC runs.
  build/recorder/tinescope-demo --transactions -o out/demo-fig5.tine --overwrite --duration 3 > /dev/null
  build/app/tinescope render out/demo-fig5.tine out/demo-fig5.txn.tine --clock out/demo-fig5.txn.tine=none \
    -o out/demo-fig5.pdf --figure stream --size 1400x480 --stream 'field(name="transaction", "latency_ms")' \
    --stream 'intervals(name="gc.mark")' --stream 'intervals(name="gc.sweep")'
  # Six figures on one page, as the viewer stacks them.
  build/app/tinescope render "$trace" -o out/demo-page.pdf --size 1200x1800 --lanes 'audio,gc,worker*' \
    --figure timeline,scope,series,histogram,pie --stream 'field(name="transaction", "latency_ms")'
  # The viewer itself on a virtual display, its analysis panel bookmarking the long GC quanta.
  xvfb-run -a -s "-screen 0 1400x900x24" build/app/tinescope view "$trace" --size 1400x900 --frames 200 \
    --bookmark 'longer(intervals(name="gc.quantum"), 600us)' --snapshot out/demo-analysis.png > /dev/null
  echo "no display: the viewer's figures are in out/demo-*.png and out/demo-*.pdf"
fi
