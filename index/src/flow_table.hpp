// The flows of a trace being indexed: a growing array in an unlinked file,
// mapped in place, so that a trace with hundreds of millions of messages
// costs page cache, not the indexer's anonymous memory.
#pragma once

#include <cstddef>
#include <string>

#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {

class FlowTable {
 public:
  FlowTable() = default;
  FlowTable(const FlowTable&) = delete;
  FlowTable& operator=(const FlowTable&) = delete;
  ~FlowTable();

  // A file beside `near` (created and unlinked at once).
  bool open(const std::string& near, std::string& error);
  bool push(const Flow& f);  // false if the file cannot grow
  Flow& operator[](size_t i) { return data()[i]; }
  Flow* data() const { return reinterpret_cast<Flow*>(base_); }
  size_t size() const { return count_; }

 private:
  static constexpr size_t kReserve = size_t(256) << 30;  // address space: 5 billion flows
  static constexpr size_t kGrow = size_t(64) << 20;
  int fd_ = -1;
  uint8_t* base_ = nullptr;
  size_t mapped_ = 0, count_ = 0;
};

}  // namespace tinescope::index
