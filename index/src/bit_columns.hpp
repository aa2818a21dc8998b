// Columns of bit-packed integers, as node pages and flow blocks store them
// (docs/INDEX.md has the bytes): each value in its column's width, the
// columns one after the other, packed from the low bit of the first byte up.
// Values of one column are alike, so the widest costs little more than a
// varint of each, and reading is a load, a shift and a mask a value with no
// branch on lengths.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

namespace tinescope::index {

struct BitWriter {
  uint8_t* out;
  uint64_t acc = 0;
  unsigned n = 0;  // bits in acc
  void put(uint64_t v, unsigned w) {  // v < 2^w, w <= 64
    if (w == 0) return;
    acc |= v << n;
    if (n + w >= 64) {
      std::memcpy(out, &acc, 8);
      out += 8;
      acc = n ? v >> (64 - n) : 0;
      n = n + w - 64;
    } else {
      n += w;
    }
  }
  uint8_t* finish() {
    for (; n > 0; n = n > 8 ? n - 8 : 0, acc >>= 8) *out++ = uint8_t(acc);
    return out;
  }
};

// Eight values of W bits are W bytes, so within every such group the values
// lie at the same byte offsets and shifts, known when compiling (but for the
// column's first bit r, the same for all): a load, a shift and a mask a
// value, where the loop below also tracks each value's bit position. With
// r + 7 + W <= 64, a value's bits lie within the 8 bytes loaded.
template <unsigned W>
inline uint32_t unpack_groups(const uint8_t* p, unsigned r, uint32_t count, uint64_t* out) {
  static_assert(W >= 1 && W <= 50);
  constexpr uint64_t mask = (uint64_t(1) << W) - 1;
  uint32_t i = 0;
  for (; i + 8 <= count; i += 8, p += W) {
#pragma GCC unroll 8
    for (unsigned j = 0; j < 8; ++j) {
      uint64_t v;
      std::memcpy(&v, p + (j * W >> 3), 8);
      out[i + j] = (v >> (r + (j * W & 7))) & mask;
    }
  }
  return i;  // values unpacked: whole groups
}

using UnpackGroups = uint32_t (*)(const uint8_t*, unsigned, uint32_t, uint64_t*);
template <size_t... W>
constexpr auto group_unpackers(std::index_sequence<W...>) {
  return std::array<UnpackGroups, sizeof...(W)>{&unpack_groups<unsigned(W + 1)>...};
}
inline constexpr auto kUnpackGroups = group_unpackers(std::make_index_sequence<50>());  // [w - 1]

// Unpacks `count` values of w bits from bit `pos` of p into out; the caller
// leaves 16 readable bytes past the packed bits (the page's padding).
inline void unpack_column(const uint8_t* p, uint64_t pos, unsigned w, uint32_t count, uint64_t* out) {
  if (w >= 1 && w <= kUnpackGroups.size()) {  // whole groups of eight, then the rest below
    const uint32_t done = kUnpackGroups[w - 1](p + (pos >> 3), unsigned(pos & 7), count, out);
    pos += uint64_t(done) * w, out += done, count -= done;
  }
  if (w == 0) {
    std::fill_n(out, count, 0);
  } else if (w <= 56) {  // one load a value: its bits lie within 8 bytes
    const uint64_t mask = (uint64_t(1) << w) - 1;
    for (uint32_t i = 0; i < count; ++i, pos += w) {
      uint64_t v;
      std::memcpy(&v, p + (pos >> 3), 8);
      out[i] = (v >> (pos & 7)) & mask;
    }
  } else {
    const uint64_t mask = w == 64 ? ~uint64_t(0) : (uint64_t(1) << w) - 1;
    for (uint32_t i = 0; i < count; ++i, pos += w) {
      uint64_t lo, hi;
      std::memcpy(&lo, p + (pos >> 3), 8);
      std::memcpy(&hi, p + (pos >> 3) + 8, 8);
      const unsigned r = unsigned(pos & 7);
      out[i] = ((lo >> r) | (r ? hi << (64 - r) : 0)) & mask;
    }
  }
}

}  // namespace tinescope::index
