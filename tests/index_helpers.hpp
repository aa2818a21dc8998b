// Traces written and indexed for a test, and removed after it.
#pragma once

#include <unistd.h>

#include <memory>
#include <string>

#include "tinescope/index/trace_index.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {

// Removes a trace and the index beside it.
inline void remove_trace(const std::string& path) {
  ::unlink(path.c_str());
  ::unlink((path + ".idx").c_str());
}

// `bytes` written to a fresh temporary trace and indexed; both gone at the end.
struct IndexedTrace {
  std::string path;
  std::unique_ptr<index::TraceIndex> ix;
  IndexedTrace(const std::string& name, const std::string& bytes) : path(temp_path(name)) {
    remove_trace(path);
    write_file(path, bytes);
    std::string error;
    ix = index::TraceIndex::build(path, error);
    EXPECT_TRUE(ix) << error;
  }
  ~IndexedTrace() { remove_trace(path); }
};

}  // namespace tinescope::test
