#include "symbols.hpp"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace tinescope::rec {

std::string demangled(const char* symbol) {
  if (std::strncmp(symbol, "_Z", 2) != 0) return symbol;
  int status = -1;
  char* d = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : symbol;
  std::free(d);
  return out;
}

namespace {

// A module's functions, sorted by address: read once, then each name is a
// binary search (libdwfl's own lookup walks the whole table each time).
struct Function {
  uint64_t address, size;
  const char* name;  // owned by libelf, alive while the Dwfl is
  int rank;          // among names at one address, lower first: global, weak, local
};

struct ModuleFunctions {
  std::vector<Function> functions;
};

}  // namespace

struct Symbols::Impl {
  Dwfl_Callbacks callbacks{};
  Dwfl* dwfl = nullptr;
  std::unordered_map<Dwfl_Module*, ModuleFunctions> modules;
  uint64_t reports = 0;  // looks at the process's mappings

  Impl() {
    callbacks.find_elf = dwfl_linux_proc_find_elf;
    callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
    dwfl = dwfl_begin(&callbacks);
    report();
  }
  ~Impl() {
    if (dwfl) dwfl_end(dwfl);
  }

  // The process's modules as mapped now (those known stay known).
  void report() {
    if (!dwfl) return;
    ++reports;
    dwfl_report_begin_add(dwfl);
    dwfl_linux_proc_report(dwfl, getpid());
    dwfl_report_end(dwfl, nullptr, nullptr);
  }

  const ModuleFunctions& functions_of(Dwfl_Module* m) {
    auto [it, fresh] = modules.try_emplace(m);
    if (!fresh) return it->second;
    std::vector<Function>& out = it->second.functions;
    const int n = dwfl_module_getsymtab(m);
    for (int i = 1; i < n; ++i) {
      GElf_Sym sym;
      GElf_Addr address = 0;
      GElf_Word shndx = 0;
      const char* name = dwfl_module_getsym_info(m, i, &sym, &address, &shndx, nullptr, nullptr);
      const int type = GELF_ST_TYPE(sym.st_info);
      if (!name || !*name || (type != STT_FUNC && type != STT_GNU_IFUNC) || shndx == SHN_UNDEF) continue;
      const int bind = GELF_ST_BIND(sym.st_info);
      out.push_back(Function{address, sym.st_size, name, bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2});
    }
    // By address; at one address the global name before a local alias of
    // it ("fib(int) [clone .localalias]", which GCC makes for calls inside
    // its own file).
    std::stable_sort(out.begin(), out.end(), [](const Function& a, const Function& b) {
      return a.address != b.address ? a.address < b.address : a.rank < b.rank;
    });
    return it->second;
  }

  CodeName resolve(uint64_t address) {
    CodeName out;
    if (!dwfl) return out;
    Dwfl_Module* m = dwfl_addrmodule(dwfl, address);
    if (!m) {  // mapped since the last look (dlopen)?
      report();
      m = dwfl_addrmodule(dwfl, address);
      if (!m) return out;
    }
    const char* main_file = nullptr;
    const char* module_name = dwfl_module_info(m, nullptr, nullptr, nullptr, nullptr, nullptr, &main_file, nullptr);
    out.module = main_file ? main_file : module_name ? module_name : "";
    const std::vector<Function>& fs = functions_of(m).functions;
    auto it = std::upper_bound(fs.begin(), fs.end(), address, [](uint64_t a, const Function& f) { return a < f.address; });
    if (it != fs.begin()) {
      const Function& f = *std::prev(it);
      // (The first of the names at its address: several aliases share one.)
      auto first = std::lower_bound(fs.begin(), fs.end(), f.address,
                                    [](const Function& x, uint64_t a) { return x.address < a; });
      if (address < f.address + std::max<uint64_t>(f.size, 1)) out.name = demangled(first->name);
    }
    if (Dwfl_Line* line = dwfl_module_getsrc(m, address)) {
      int lineno = 0;
      if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
        out.file = file;
        out.line = uint32_t(std::max(lineno, 0));
      }
    }
    return out;
  }
};

Symbols::Symbols() : impl_(std::make_unique<Impl>()) {}
Symbols::~Symbols() = default;
CodeName Symbols::resolve(uint64_t address) { return impl_->resolve(address); }

}  // namespace tinescope::rec
