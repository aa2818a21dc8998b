#include "flow_blocks.hpp"

#include <algorithm>

#include "tinescope/format.hpp"

namespace tinescope::index {

namespace {

// Ids are often a sequence per sender: an id is stored as the difference to
// the previous id from the same source feedlet in the block (0 if none).
struct LastIds {
  std::vector<std::pair<uint32_t, uint64_t>> by_src;
  uint64_t& of(uint32_t src) {
    for (auto& [s, id] : by_src)
      if (s == src) return id;
    return by_src.emplace_back(src, 0).second;
  }
};

}  // namespace

// Per flow: varint (source feedlet << 2 | flags), varint first-half time -
// previous flow's (the first flow's whole), zigzag varint id - the previous
// id of the same source in the block (the first one's whole), varint
// channel, varint size; then varint destination feedlet if received, and
// zigzag varint receive - send if both halves are there. An absent half's
// fields are 0.
size_t pack_flows(const Flow* flows, uint32_t n, uint8_t* out, FlowBlock& block) {
  using format::put_varint;
  using format::zigzag;
  uint8_t* const start = out;
  block.count = uint16_t(n);
  block.first = UINT64_MAX, block.last = 0;
  uint64_t prev_time = 0;
  LastIds ids;
  for (uint32_t i = 0; i < n; ++i) {
    const Flow& f = flows[i];
    const uint64_t t = f.first_half();
    out = put_varint(out, uint64_t(f.src) << 2 | (f.flags & 3));
    out = put_varint(out, t - prev_time);
    uint64_t& prev_id = ids.of(f.src);
    out = put_varint(out, zigzag(int64_t(f.id - prev_id)));
    out = put_varint(out, f.channel);
    out = put_varint(out, f.size);
    if (f.flags & kFlowReceived) out = put_varint(out, f.dst);
    if (f.matched()) out = put_varint(out, zigzag(int64_t(f.recv_ts - f.send_ts)));
    prev_time = t, prev_id = f.id;
    auto cover = [&](uint64_t half) { block.first = std::min(block.first, half), block.last = std::max(block.last, half); };
    if (f.flags & kFlowSent) cover(f.send_ts);
    if (f.flags & kFlowReceived) cover(f.recv_ts);
  }
  if (block.first > block.last) block.first = block.last = 0;
  return size_t(out - start);
}

bool unpack_flows(const uint8_t* p, size_t size, uint32_t count, std::vector<Flow>& out) {
  const uint8_t* end = p + size;
  uint64_t time = 0, v[5];
  LastIds ids;
  auto get = [&](uint64_t& x) { return format::get_varint(p, end, x); };
  for (uint32_t i = 0; i < count; ++i) {
    for (uint64_t& x : v)
      if (!get(x)) return false;
    Flow f;
    f.flags = uint32_t(v[0] & 3);
    if (f.flags == 0 || (v[0] >> 2) > UINT32_MAX || v[4] > UINT32_MAX) return false;
    f.src = uint32_t(v[0] >> 2);
    time += v[1];
    uint64_t& id = ids.of(f.src);
    id += uint64_t(format::unzigzag(v[2]));
    f.id = id;
    f.channel = v[3];
    f.size = uint32_t(v[4]);
    uint64_t x = 0;
    if (f.flags & kFlowReceived) {
      if (!get(x) || x > UINT32_MAX) return false;
      f.dst = uint32_t(x);
    }
    if (f.flags & kFlowSent) f.send_ts = time; else f.recv_ts = time;
    if (f.matched()) {
      if (!get(x)) return false;
      f.recv_ts = f.send_ts + uint64_t(format::unzigzag(x));
    }
    out.push_back(f);
  }
  return p == end;
}

void FlowBlockIndex::build(std::span<const FlowBlock> blocks) {
  const size_t n = blocks.size();
  GrowArray<uint64_t>& r = reach.vec();
  GrowArray<uint64_t>& f = floor.vec();
  r.resize(n), f.resize(n);
  for (size_t i = 0; i < n; ++i) r[i] = std::max(i ? r[i - 1] : 0, blocks[i].last);
  for (size_t i = n; i-- > 0;) f[i] = std::min(i + 1 < n ? f[i + 1] : UINT64_MAX, blocks[i].first);
}

std::pair<size_t, size_t> FlowBlockIndex::range(uint64_t t0, uint64_t t1) const {
  size_t from = partition_index(reach, 0, reach.size(), [&](uint64_t r) { return r < t0; });
  size_t to = partition_index(floor, 0, floor.size(), [&](uint64_t f) { return f <= t1; });
  return {from, std::max(from, to)};
}

}  // namespace tinescope::index
