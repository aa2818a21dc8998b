// func_tree_program's own count of its calls (func_tree_shadow.h), built
// without -finstrument-functions: what it does is not in the trace.
#include "func_tree_shadow.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {
struct Counts {
  long tid = 0;
  std::vector<std::string> stack;
  std::map<std::pair<std::string, std::string>, long> edges;  // (caller, callee) → calls
};
thread_local Counts* tl = nullptr;
std::mutex all_mu;
std::vector<std::unique_ptr<Counts>> all;  // every thread's, kept to the end
}  // namespace

extern "C" void shadow_enter(const char* name) {
  if (!tl) {
    auto mine = std::make_unique<Counts>();
    mine->tid = long(syscall(SYS_gettid));
    tl = mine.get();
    std::lock_guard<std::mutex> lock(all_mu);
    all.push_back(std::move(mine));
  }
  ++tl->edges[{tl->stack.empty() ? std::string() : tl->stack.back(), name}];
  tl->stack.push_back(name);
}

extern "C" void shadow_exit(void) { tl->stack.pop_back(); }

extern "C" size_t shadow_depth(void) { return tl ? tl->stack.size() : 0; }

extern "C" size_t shadow_unwind_to(size_t depth) {
  const size_t skipped = tl->stack.size() - depth;
  tl->stack.resize(depth);
  return skipped;
}

extern "C" int shadow_write(const char* path) {
  FILE* f = std::fopen(path, "w");
  if (!f) return -1;
  std::lock_guard<std::mutex> lock(all_mu);
  for (const auto& c : all)
    for (const auto& [edge, n] : c->edges)
      std::fprintf(f, "%ld\t%s\t%s\t%ld\n", c->tid, edge.first.c_str(), edge.second.c_str(), n);
  return std::fclose(f);
}
