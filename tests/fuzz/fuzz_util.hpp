// Helpers shared by the fuzz targets: a private scratch directory and a
// visitor that touches every decoded field (so the sanitizers see them).
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "tinescope/trace_reader.hpp"

namespace tinescope::fuzz {

inline const std::string& scratch() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/tinescope-fuzz-XXXXXX";
    const char* d = mkdtemp(tmpl);
    return std::string(d ? d : "/tmp");
  }();
  return dir;
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
