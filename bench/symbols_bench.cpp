// recorder.symbols_ms: the names, files and lines of 100 000 distinct
// functions (-finstrument-functions' addresses) as the collector finds them
// (recorder/src/symbols.cpp), from a shared library of that many functions
// the bench writes and compiles with debug information (cc -g) once, in the
// working directory. Goal: ≤ 1 s, done once per trace (issue 54).
#include <dlfcn.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "../recorder/src/symbols.hpp"

namespace {

// A C file of n functions fn_0 … fn_{n-1} and a table of their addresses.
bool write_library_source(const std::string& path, size_t n) {
  std::ofstream f(path);
  for (size_t i = 0; i < n; ++i) f << "int fn_" << i << "(int x) { return x + " << i << "; }\n";
  f << "typedef int (*fn)(int);\nconst fn many_functions[] = {\n";
  for (size_t i = 0; i < n; ++i) f << "  fn_" << i << ",\n";
  f << "};\n";
  return bool(f);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"symbols_bench: names of many distinct functions, as the collector finds them"};
  size_t n = 100000;
  bool quick = false;
  app.add_option("-n,--functions", n, "distinct functions");
  std::string dir = ".";
  app.add_flag("--quick", quick, "10 000 functions: checks that the figure prints");
  app.add_option("--dir", dir, "where the library of functions is made (once) and kept");
  CLI11_PARSE(app, argc, argv);
  if (quick && !app.count("--functions")) n = 10000;

  const std::string base = "symbols_bench." + std::to_string(n), source = dir + "/" + base + ".c",
                    library = dir + "/lib" + base + ".so";
  if (::access(library.c_str(), R_OK) != 0) {
    if (!write_library_source(source, n)) return std::fprintf(stderr, "symbols_bench: cannot write %s\n", source.c_str()), 1;
    const std::string cc = "cc -O0 -g -shared -fPIC -o " + library + " " + source;
    if (std::system(cc.c_str()) != 0) return std::fprintf(stderr, "symbols_bench: %s failed\n", cc.c_str()), 1;
  }
  void* lib = ::dlopen((library[0] == '/' ? library : "./" + library).c_str(), RTLD_NOW);
  if (!lib) return std::fprintf(stderr, "symbols_bench: %s\n", ::dlerror()), 1;
  using Fn = int (*)(int);
  const Fn* fns = static_cast<const Fn*>(::dlsym(lib, "many_functions"));
  if (!fns) return std::fprintf(stderr, "symbols_bench: no many_functions in %s\n", library.c_str()), 1;

  // As the collector does: one Symbols, each address once (its first event).
  const auto t0 = std::chrono::steady_clock::now();
  tinescope::rec::Symbols symbols;
  size_t wrong = 0, with_line = 0;
  for (size_t i = 0; i < n; ++i) {
    const tinescope::rec::CodeName c = symbols.resolve(reinterpret_cast<uint64_t>(fns[i]));
    wrong += c.name != "fn_" + std::to_string(i);
    with_line += c.line == i + 1 && c.file.find(source) != std::string::npos;
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("figure: recorder.symbols_ms %.1f ms (goal <= 1000 ms for 100000: %.2fx; %zu distinct functions named, "
              "%zu wrongly, %zu with their file and line, from a %s built with -g)\n",
              ms, ms / 1000 * (100000.0 / double(n)), n, wrong, with_line, library.c_str());
  return wrong == 0 ? 0 : 1;
}
