// Raw records: what the application thread copies into its ring. Fixed
// layouts of 8-byte words, cheap to write; the collector turns them into the
// compact encoding of the trace format (format.hpp).
//
//   word 0   timestamp (ticks)
//   word 1   kind (bits 56..63) | size in words (bits 48..55) | low 48 bits
//   word 2.. per kind, below
//
// kind                         low 48 bits        words 2..
// interval begin/end, instant  name pointer       - (a begin or instant: its category mask, if not 1)
// func enter/exit              code address       -
// interval complete            name pointer       duration ticks
// counter int/float            name pointer       value (int64 or double bits)
// message send/recv            payload length     id, channel, size, payload bytes
// thread/process name          string length      bytes
// cpu name                     string length      cpu, bytes
// metadata                     key len | val<<16  key bytes (padded), value bytes
// sched (task/job ...)         task pointer       job, cpu
// lock acquire/contend/release name pointer       lock id
// clock sync send/recv         peer node          sync id
// user type (code 64..255)     0                  one slot per field
// kRawDrop                     0                  cumulative dropped count
#pragma once

#include <cstdint>
#include <cstring>

namespace tinescope::rec {

constexpr uint32_t kRawDrop = 60;  // not an event type of the format
constexpr uint32_t kMaxRecordWords = 255;
constexpr uint64_t kMaxRecordBytes = kMaxRecordWords * 8;
constexpr uint64_t kLow48 = (uint64_t(1) << 48) - 1;
constexpr uint32_t kMaxInlineString = 1016;

inline uint64_t raw_word1(uint32_t kind, uint32_t words, uint64_t low) {
  return (uint64_t(kind) << 56) | (uint64_t(words) << 48) | (low & kLow48);
}
inline uint32_t raw_kind(uint64_t w1) { return uint32_t(w1 >> 56); }
inline uint32_t raw_words(uint64_t w1) { return uint32_t(w1 >> 48) & 0xff; }
inline uint64_t raw_low(uint64_t w1) { return w1 & kLow48; }
inline uint32_t words_for_bytes(uint64_t n) { return uint32_t((n + 7) / 8); }

}  // namespace tinescope::rec
