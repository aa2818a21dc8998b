// The index file: pages of pyramid nodes, then a directory, then a footer.
// docs/INDEX.md has the layout byte by byte.
#pragma once

#include <string>

#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {

constexpr uint8_t kIndexMagic[8] = {'T', 'I', 'N', 'E', 'I', 'D', 'X', 0};
// 2: flows packed in blocks; 3: interval pages in bit-packed columns; 4: tables aligned, read in place;
// 5: resume points inside chunks; 6: tables that grow with the trace outside the directory, checked a block at a time;
// 7: depth streams, and interval pages with a tenth column (the longest item's name);
// 8: flow blocks; 9: span streams (long complete intervals, for spanning());
// 10: Sched nodes name their longest segment's task, and the open entries after
// the last chunk hold its running jobs (running_at()); 11: open job entries and
// resume points hold job ids, frames open at a drop or lost chunk are closed
// there, per-feedlet WalkCounts; 12: frames above a matched end close with it;
// 13: the tenth column's high half counts truncated items (Node::iv.truncated)
// 14: Task streams; 15: lock waits are intervals (kLockWaitBit on stacks),
// locks held are Hold streams (kHoldBit entries with the running jobs)
constexpr uint32_t kIndexVersion = 15;

struct IndexFile {
  // Writes the directory and footer after the pages already in `path`.
  static bool save(TraceIndex& ix, const std::string& path, std::string& error);
  // Reads the index at ix.index_path_; fails (with why) if it is missing,
  // damaged, of another version, or stale for the trace.
  static bool load(TraceIndex& ix, std::string& error);
  // Maps the finished index file for reading pages.
  static bool map_pages(TraceIndex& ix, std::string& error);
};

// Identifies the indexed bytes of a trace: a hash of its first and last 64 KiB.
uint64_t trace_fingerprint(const uint8_t* data, uint64_t size);

}  // namespace tinescope::index
