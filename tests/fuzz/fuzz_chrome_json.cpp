// Fuzz target: the trace importer (Chrome JSON, ftrace text, systrace HTML,
// Grasp traces), seeded with those (import_one.hpp says what is checked).
#include "import_one.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tinescope::fuzz::import_one(data, size, "json");
}
