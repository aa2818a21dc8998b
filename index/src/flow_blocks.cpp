#include "flow_blocks.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "bit_columns.hpp"

#include "tinescope/format.hpp"

namespace tinescope::index {

namespace {

// The columns of a flow, each stored less its minimum over the block:
constexpr int kFlowColumns = 7;
// 0 source feedlet << 2 | flags; 1 first-half time - the previous flow's (0
// for the first); 2 zigzag(id - the previous id of the same source in the
// block), 0 for a source's first (its id is kept whole, after the columns);
// 3 channel; 4 size; 5 destination feedlet (0 if not received); 6 receive -
// send, signed (its minimum where not both halves are there).
constexpr int kSpanColumn = 6;

// Ids are often a sequence per sender; the first id of each source in a
// block is kept whole, the others as the difference to the previous one.
struct LastIds {
  struct Last {
    uint32_t src;
    uint64_t id;
  } by_src[kFlowsPerBlock];  // (not zeroed: [0, n) are set)
  uint32_t n = 0;
  // Where src's last id is kept, and whether this is its first flow in the block.
  std::pair<uint64_t*, bool> of(uint32_t src) {
    for (uint32_t i = 0; i < n; ++i)
      if (by_src[i].src == src) return {&by_src[i].id, false};
    by_src[n] = {src, 0};
    return {&by_src[n++].id, true};
  }
};

}  // namespace

size_t pack_flows(const Flow* flows, uint32_t n, uint8_t* out, FlowBlock& block) {
  using format::put_varint;
  using format::zigzag;
  uint8_t* const start = out;
  n = std::min(n, kFlowsPerBlock);
  block.count = uint16_t(n);
  block.first = UINT64_MAX, block.last = 0;
  uint64_t v[kFlowColumns][kFlowsPerBlock];
  uint64_t whole[kFlowsPerBlock];  // each source's first id
  uint32_t wholes = 0;
  bool first_of_src[kFlowsPerBlock];
  int64_t min_span = INT64_MAX;
  LastIds ids;
  for (uint32_t i = 0; i < n; ++i) {
    const Flow& f = flows[i];
    const uint64_t t = f.first_half();
    v[0][i] = uint64_t(f.src) << 2 | (f.flags & 3);
    v[1][i] = i ? t - flows[i - 1].first_half() : 0;
    const auto [last_id, first] = ids.of(f.src);
    first_of_src[i] = first;
    v[2][i] = first ? (whole[wholes++] = f.id, 0) : zigzag(int64_t(f.id - *last_id));
    *last_id = f.id;
    v[3][i] = f.channel;
    v[4][i] = f.size;
    v[5][i] = (f.flags & kFlowReceived) ? f.dst : 0;
    if (f.matched()) min_span = std::min(min_span, int64_t(f.recv_ts - f.send_ts));
    auto cover = [&](uint64_t half) { block.first = std::min(block.first, half), block.last = std::max(block.last, half); };
    if (f.flags & kFlowSent) cover(f.send_ts);
    if (f.flags & kFlowReceived) cover(f.recv_ts);
  }
  if (block.first > block.last) block.first = block.last = 0;
  if (min_span == INT64_MAX) min_span = 0;
  // The first flow's time is whole, and a source's first id: their cells in
  // columns 1 and 2 (not read) take a value of the others, so as not to
  // widen the column.
  auto least_of_rest = [&](int c, auto&& rest) {
    uint64_t m = UINT64_MAX;
    for (uint32_t i = 0; i < n; ++i)
      if (rest(i)) m = std::min(m, v[c][i]);
    for (uint32_t i = 0; i < n && m != UINT64_MAX; ++i)
      if (!rest(i)) v[c][i] = m;
  };
  least_of_rest(1, [](uint32_t i) { return i > 0; });
  least_of_rest(2, [&](uint32_t i) { return !first_of_src[i]; });
  for (uint32_t i = 0; i < n; ++i)
    v[kSpanColumn][i] = flows[i].matched() ? flows[i].recv_ts - flows[i].send_ts - uint64_t(min_span) : 0;  // (mod 2^64)
  out = put_varint(out, n ? flows[0].first_half() : 0);
  uint64_t least[kFlowColumns];
  uint8_t* widths = out;
  out += kFlowColumns;
  for (int c = 0; c < kFlowColumns; ++c) {
    least[c] = c == kSpanColumn ? 0 : n ? *std::min_element(v[c], v[c] + n) : 0;
    uint64_t any = 0;
    for (uint32_t i = 0; i < n; ++i) any |= v[c][i] - least[c];
    widths[c] = uint8_t(std::bit_width(any));
    out = put_varint(out, c == kSpanColumn ? zigzag(min_span) : least[c]);
  }
  BitWriter w{out};
  for (int c = 0; c < kFlowColumns; ++c)
    for (uint32_t i = 0; i < n; ++i) w.put(v[c][i] - least[c], widths[c]);
  out = w.finish();
  for (uint32_t k = 0; k < wholes; ++k) out = put_varint(out, whole[k]);
  return size_t(out - start);
}

bool unpack_flows(const uint8_t* bytes, size_t size, uint32_t count, std::vector<Flow>& out) {
  // A copy with the padding unpack_column reads past the packed bits.
  if (count > kFlowsPerBlock || size > max_packed_flows(count)) return false;
  uint8_t local[kFlowHeaderBytes + kFlowsPerBlock * kMaxPackedFlow + 16];
  std::memcpy(local, bytes, size);
  std::memset(local + size, 0, 16);
  const uint8_t* p = local;
  const uint8_t* const end = local + size;
  uint64_t time = 0, least[kFlowColumns];
  if (!format::get_varint(p, end, time) || end - p < kFlowColumns) return false;
  unsigned width[kFlowColumns];
  uint64_t at[kFlowColumns], bits = 0;
  for (int c = 0; c < kFlowColumns; ++c) {
    if (p[c] > 64) return false;
    width[c] = p[c], at[c] = bits;
    bits += uint64_t(width[c]) * count;
  }
  p += kFlowColumns;
  for (uint64_t& x : least)
    if (!format::get_varint(p, end, x)) return false;
  const int64_t min_span = format::unzigzag(least[kSpanColumn]);
  if (uint64_t(end - p) < (bits + 7) / 8) return false;
  uint64_t v[kFlowColumns][kFlowsPerBlock];
  for (int c = 0; c < kFlowColumns; ++c) unpack_column(p, at[c], width[c], count, v[c]);
  p += (bits + 7) / 8;
  LastIds ids;
  for (uint32_t i = 0; i < count; ++i) {
    Flow f;
    const uint64_t head = v[0][i] + least[0];
    f.flags = uint32_t(head & 3);
    const uint64_t size_of = v[4][i] + least[4], dst = v[5][i] + least[5];
    if (f.flags == 0 || (head >> 2) > UINT32_MAX || size_of > UINT32_MAX || dst > UINT32_MAX) return false;
    f.src = uint32_t(head >> 2);
    if (i) time += v[1][i] + least[1];
    const auto [last_id, first] = ids.of(f.src);
    if (first) {
      if (!format::get_varint(p, end, f.id)) return false;
    } else {
      f.id = *last_id + uint64_t(format::unzigzag(v[2][i] + least[2]));
    }
    *last_id = f.id;
    f.channel = v[3][i] + least[3];
    f.size = uint32_t(size_of);
    if (f.flags & kFlowReceived) f.dst = uint32_t(dst);
    if (f.flags & kFlowSent) f.send_ts = time; else f.recv_ts = time;
    if (f.matched()) f.recv_ts = f.send_ts + v[kSpanColumn][i] + uint64_t(min_span);
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
