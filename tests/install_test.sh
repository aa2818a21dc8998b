#!/usr/bin/env bash
# Installs the recorder into a temporary prefix and builds two programs
# against it, as a user would: C++ with find_package(tinescope), C99 with
# pkg-config. Both record a trace that `tinescope dump` reads back.
set -euo pipefail
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null

mkdir -p "$tmp/cpp"
cat > "$tmp/cpp/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(consumer CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(tinescope 0.1 REQUIRED)
add_executable(consumer main.cpp)
target_link_libraries(consumer PRIVATE tinescope::recorder)
CMAKE
cat > "$tmp/cpp/main.cpp" <<'CPP'
#include <tinescope/tinescope.hpp>
int main(int, char** argv) {
  ts::Session session(argv[1]);
  if (!session.ok()) return 1;
  for (int i = 0; i < 1000; ++i) { TS_SCOPE("consumer.work"); ts::counter("i", i); }
  return 0;
}
CPP
cmake -S "$tmp/cpp" -B "$tmp/cpp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cpp/build" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libtinescope.so' | head -1)")
LD_LIBRARY_PATH="$libdir" "$tmp/cpp/build/consumer" "$tmp/cpp.tine"
out=$("$build/app/tinescope" dump --summary "$tmp/cpp.tine")
echo "$out" | grep -q "interval_begin *1000" || { echo "C++ consumer trace wrong:"; echo "$out"; exit 1; }

cat > "$tmp/main.c" <<'C'
#include <tinescope/tinescope.h>
int main(int argc, char **argv) {
  ts_config c = {0};
  int i;
  (void)argc;
  c.file_path = argv[1];
  if (ts_start(&c) != 0) return 1;
  for (i = 0; i < 500; ++i) ts_instant("c.tick");
  ts_stop();
  return 0;
}
C
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c99 -pedantic-errors -Wall "$tmp/main.c" -o "$tmp/cconsumer" $(pkg-config --cflags --libs tinescope)
LD_LIBRARY_PATH="$libdir" "$tmp/cconsumer" "$tmp/c.tine"
out=$("$build/app/tinescope" dump --summary "$tmp/c.tine")
echo "$out" | grep -q "instant *500" || { echo "C consumer trace wrong:"; echo "$out"; exit 1; }

# The recorder stands alone: nothing of the viewer in its dependencies.
if ldd "$libdir/libtinescope.so" | grep -Eiq 'glfw|imgui|libGL|EGL|epoxy'; then
  echo "libtinescope.so depends on the viewer:"; ldd "$libdir/libtinescope.so"; exit 1
fi
echo "install test: find_package and pkg-config consumers recorded and read back"
