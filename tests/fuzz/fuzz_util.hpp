// Helpers shared by the fuzz targets: a private scratch directory and a
// visitor that touches every decoded field (so the sanitizers see them).
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include "tinescope/trace_reader.hpp"

namespace tinescope::fuzz {

// This process's scratch directory, removed with its files when the fuzzer
// ends (every run had left one behind). A crash leaves it, with the input
// that libFuzzer saved.
inline const std::string& scratch() {
  struct Dir {
    std::string path = "/tmp";
    Dir() {
      char tmpl[] = "/tmp/tinescope-fuzz-XXXXXX";
      if (mkdtemp(tmpl)) path = tmpl;
    }
    ~Dir() {
      std::error_code ec;
      if (path != "/tmp") std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

inline bool write_file(const std::string& path, const uint8_t* data, size_t n) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = n == 0 || std::fwrite(data, 1, n, f) == n;
  return std::fclose(f) == 0 && ok;
}

struct Touch : trace::Visitor {
  uint64_t sum = 0;
  void on_chunk(const trace::ChunkInfo& c) override { sum += c.header.event_count + c.offset; }
  void on_event(const trace::Event& e) override {
    sum += e.type + e.ts + e.feedlet;
    for (size_t k = 0; k < e.field_count; ++k) {
      sum += e.u[k];
      for (char ch : e.bytes[k]) sum += uint8_t(ch);
    }
  }
  void on_damage(const trace::Damage& d) override { sum += d.offset + d.length + d.reason.size(); }
  void on_loss(const trace::Loss& l) override { sum += l.first_sequence + l.count; }
};

}  // namespace tinescope::fuzz
