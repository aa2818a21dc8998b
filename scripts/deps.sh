#!/usr/bin/env bash
# Installs the Debian packages tinescope needs, and only those that are missing.
# Sourced by scripts/demo.sh and scripts/test.sh; safe to run on its own.
set -euo pipefail

TINESCOPE_PACKAGES=(
  build-essential cmake pkg-config git
  liblz4-dev libxxhash-dev zlib1g-dev
  libcli11-dev nlohmann-json3-dev libsimdjson-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  strace
  libglfw3-dev libimgui-dev libepoxy-dev libegl-dev libegl1-mesa-dev libgl1-mesa-dri libstb-dev
  libcairo2-dev fonts-dejavu-core poppler-utils libxml2-utils
  libtracefs-dev libtraceevent-dev libtracecmd-dev trace-cmd
  libelf-dev libdw-dev
  libprotobuf-dev protobuf-compiler
  xvfb xauth xdotool
  clang-14 libclang-rt-14-dev python3
)

tinescope_install_deps() {
  local missing=()
  for p in "${TINESCOPE_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "tinescope: installing missing packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  tinescope_install_deps "$@"
fi
