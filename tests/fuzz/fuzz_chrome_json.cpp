// Fuzz target: the trace importer (Chrome JSON, ftrace text, systrace HTML,
// Grasp traces).
// Any bytes either import or are refused with a message; an import always
// writes a trace that reads back without damage.
#include <cstdlib>

#include "fuzz_util.hpp"
#include "tinescope/import/trace_import.hpp"

using namespace tinescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in = fuzz::scratch() + "/in.json", out = fuzz::scratch() + "/out.tine";
  if (!fuzz::write_file(in, data, size)) return 0;
  ::unlink(out.c_str());
  import::ImportResult r;
  std::string error;
  if (!import::import_trace(in, out, r, error)) {
    if (error.empty()) std::abort();
    return 0;
  }
  fuzz::Touch t;
  if (!trace::read_file(out, t, error)) std::abort();
  return 0;
}
