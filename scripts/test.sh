#!/usr/bin/env bash
# Sets up what is missing, builds, and runs every test with ctest.
#   scripts/test.sh            the suite (Release build in build/)
#   TINESCOPE_SANITIZERS=0     skip the sanitizer builds (ASan+UBSan, TSan)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
tinescope_install_deps

jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 600
