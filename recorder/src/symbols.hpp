// The names of code addresses in this process, for -finstrument-functions:
// each function's symbol from the ELF symbol tables of the modules mapped
// into the process (.symtab where the file keeps it, so static functions of
// an executable built without -rdynamic have their names; .dynsym
// otherwise), C++ names demangled, and where the module has debug
// information the function's source file and line. Read through elfutils'
// libdwfl, on the collector's thread, never the application's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace tinescope::rec {

struct CodeName {
  std::string name;    // the function, demangled; "" where no symbol covers the address
  std::string module;  // the file it lies in ("" if none)
  std::string file;    // its source file ("" without debug information)
  uint32_t line = 0;
};

class Symbols {
 public:
  Symbols();
  ~Symbols();
  Symbols(const Symbols&) = delete;
  Symbols& operator=(const Symbols&) = delete;

  // What is known of `address`. A module mapped after the last look is
  // found by looking at the process's mappings again (once per address
  // outside every module known).
  CodeName resolve(uint64_t address);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A symbol's name as a reader wants it: C++ (Itanium ABI, "_Z…") names
// demangled, others as they are ("f" stays "f", not the type "float").
std::string demangled(const char* symbol);

}  // namespace tinescope::rec
