// Fuzz target: the trace importer seeded with Perfetto protobuf traces (the
// ones perfetto_import_test writes: every packet kind it reads, compressed
// packets, clocks, the kernel's bundles); import_one.hpp says what is checked.
#include "import_one.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tinescope::fuzz::import_one(data, size, "pftrace");
}
