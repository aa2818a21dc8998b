// Flows as the index file keeps them: blocks of up to kFlowsPerBlock
// messages in the order of their first half, each field a column of
// bit-packed values less the column's minimum over the block (docs/INDEX.md
// has the bytes). About 9 bytes a flow instead of the 48 of a Flow, and a
// query reads only the blocks whose time range meets its window.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "table.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {

constexpr uint32_t kFlowsPerBlock = 128;

struct FlowBlock {  // 40 bytes, in the directory
  uint64_t offset = 0;  // in the index file
  uint64_t first = 0;   // earliest time of any half in the block
  uint64_t last = 0;    // latest time of any half in the block
  uint32_t bytes = 0;   // packed size
  uint16_t count = 0;   // flows
  uint16_t reserved = 0;
  uint32_t checksum = 0;  // low 32 bits of XXH3-64 of the packed bytes
  uint32_t reserved2 = 0;
};
static_assert(sizeof(FlowBlock) == 40);

// Packs flows [0, n) (n <= kFlowsPerBlock, sorted by first_half()) into out,
// which has room for max_packed_flows(n) bytes; returns the bytes written.
// Fills the block's times and count (not its offset or checksum).
constexpr size_t kFlowHeaderBytes = 90;  // the first time, the widths and minimums of 7 columns
constexpr size_t kMaxPackedFlow = 7 * 8 + 10;  // 7 columns of 64 bits, and an id kept whole
constexpr size_t max_packed_flows(size_t n) { return kFlowHeaderBytes + n * kMaxPackedFlow; }
size_t pack_flows(const Flow* flows, uint32_t n, uint8_t* out, FlowBlock& block);
// Unpacks a block's bytes; false if they do not hold exactly `count` flows.
bool unpack_flows(const uint8_t* p, size_t size, uint32_t count, std::vector<Flow>& out);

// Which blocks a window [t0, t1] needs, found without reading the blocks:
// reach[i] is the latest time in blocks 0..i, floor[i] the earliest in
// blocks i..end (both monotone, so both ends are binary searches).
// Kept in the index's directory beside the blocks.
struct FlowBlockIndex {
  Table<uint64_t> reach, floor;
  void build(std::span<const FlowBlock> blocks);
  // Blocks [from, to) may hold a half in [t0, t1]; each still needs its own first/last check.
  std::pair<size_t, size_t> range(uint64_t t0, uint64_t t1) const;
};

}  // namespace tinescope::index
