// The fuzz targets of the importer: any bytes either import or are refused
// with a message; an import always writes a trace that reads back.
#pragma once

#include <cstdlib>

#include "fuzz_util.hpp"
#include "tinescope/import/trace_import.hpp"

namespace tinescope::fuzz {

// The bytes as a file named in.EXT, imported.
inline int import_one(const uint8_t* data, size_t size, const char* ext) {
  const std::string in = scratch() + "/in." + ext, out = scratch() + "/out.tine";
  if (!write_file(in, data, size)) return 0;
  ::unlink(out.c_str());
  import::ImportResult r;
  std::string error;
  if (!import::import_trace(in, out, r, error)) {
    if (error.empty()) std::abort();
    return 0;
  }
  Touch t;
  if (!trace::read_file(out, t, error)) std::abort();
  return 0;
}

}  // namespace tinescope::fuzz
