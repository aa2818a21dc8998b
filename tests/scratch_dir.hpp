// Where a test process keeps its files: one directory a process,
// /tmp/tinescope-<program>-XXXXXX, made on first use and removed with
// everything in it when the process ends, unless a test failed: then it is
// kept (its path printed) for the files to be looked at. Each run of the
// suite had left its traces, indexes and pictures behind (~1 200
// directories and 2.3 GB in /tmp after a day of runs).
#pragma once

#include <errno.h>  // program_invocation_short_name
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

namespace tinescope::test {

class ScratchDir {
 public:
  ScratchDir() : owner_(::getpid()) {
    std::string tmpl = "/tmp/tinescope-" + std::string(program_invocation_short_name) + "-XXXXXX";
    if (::mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~ScratchDir() {
    // (A child forked by a test that ends with exit() must not take the
    // parent's files with it.)
    if (path_.empty() || ::getpid() != owner_) return;
    if (::testing::UnitTest::GetInstance()->Failed()) {
      std::printf("a test failed: its files are kept in %s\n", path_.c_str());
      return;
    }
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  pid_t owner_;
  std::string path_;
};

// This process's scratch directory ("/tmp" if it could not be made).
// (Made after gtest's UnitTest, so removed before it is gone.)
inline std::string scratch_dir() {
  static const ScratchDir dir;
  return dir.path().empty() ? "/tmp" : dir.path();
}

// A fresh directory inside it, for a test that wants its own.
inline std::string fresh_scratch_dir() {
  static int made = 0;
  for (;;) {
    const std::string d = scratch_dir() + "/" + std::to_string(++made);
    if (std::filesystem::create_directory(d)) return d;
  }
}

}  // namespace tinescope::test
