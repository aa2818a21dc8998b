// Protocol Buffers' wire format, read in place and written by hand: what
// the Perfetto importer and exporter speak (docs/IMPORT.md, "Perfetto").
//
// A message is a run of fields, each a tag (varint: number << 3 | wire
// type) and a value: 0 varint, 1 fixed 8 bytes, 2 length-delimited (varint
// length, then the bytes: strings, nested messages, packed repeated
// numbers), 5 fixed 4 bytes. Groups (3, 4) are long deprecated and Perfetto
// writes none: a reader takes them as a malformed message.
//
// The reader allocates nothing: a Field's bytes are a view into the
// message. Generated classes (libprotobuf) parse the same messages about
// as fast but build an object of every field first; docs/IMPORT.md gives
// both speeds.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "tinescope/trace_decode.hpp"

namespace tinescope::protowire {

enum WireType : uint8_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

// A varint at p (before end): false where it runs past end or past 10 bytes.
bool read_long_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v);

// (Inlined where it is read: most varints are one byte, tags nearly all;
// one of two to eight bytes with eight to read comes from one load, the
// trace reader's get_varint_wide. Where that fails, the loop below says how
// far it got: a reader tells a message cut short by p == end.)
[[gnu::always_inline]] inline bool read_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  if (trace::get_varint_wide(p, end, v)) [[likely]]
    return true;
  return read_long_varint(p, end, v);
}

inline bool read_long_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 70 && p < end; shift += 7) {
    const uint8_t b = *p++;
    v |= uint64_t(b & 0x7f) << shift;
    if (b < 0x80) return true;
  }
  return false;
}

struct Field {
  uint32_t number = 0;
  WireType type = kVarint;
  uint64_t value = 0;     // varint and fixed values (fixed32 in the low half)
  std::string_view bytes;  // length-delimited

  int64_t as_int() const { return int64_t(value); }
  int64_t as_sint() const { return int64_t(value >> 1) ^ -int64_t(value & 1); }  // zigzag (sint32/64)
  double as_double() const {
    double d;
    std::memcpy(&d, &value, 8);
    return d;
  }
};

// The fields of one message, in order. next() is false at the end and where
// the message is malformed (malformed() then says so): a reader stops there
// and keeps what it took.
class Reader {
 public:
  Reader() = default;
  explicit Reader(std::string_view m)
      : p_(reinterpret_cast<const uint8_t*>(m.data())), end_(p_ + m.size()) {}

  [[gnu::always_inline]] bool next(Field& f) {
    if (p_ >= end_) return false;
    uint64_t tag;
    if (!read_varint(p_, end_, tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) return fail();
    f.number = uint32_t(tag >> 3);
    f.type = WireType(tag & 7);
    switch (f.type) {
      case kVarint:
        if (!read_varint(p_, end_, f.value)) return fail();
        return true;
      case kFixed64:
        if (end_ - p_ < 8) return fail();
        std::memcpy(&f.value, p_, 8), p_ += 8;
        return true;
      case kFixed32: {
        if (end_ - p_ < 4) return fail();
        uint32_t v;
        std::memcpy(&v, p_, 4), p_ += 4;
        f.value = v;
        return true;
      }
      case kBytes: {
        uint64_t n;
        if (!read_varint(p_, end_, n) || n > uint64_t(end_ - p_)) return fail();
        f.bytes = std::string_view(reinterpret_cast<const char*>(p_), size_t(n));
        p_ += n;
        return true;
      }
      default: return fail();
    }
  }
  bool malformed() const { return malformed_; }
  // Bytes not read yet (a malformed message: where it went wrong, from the end).
  size_t left() const { return size_t(end_ - p_); }

 private:
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  bool malformed_ = false;
  bool fail() {
    malformed_ = true;
    p_ = end_;
    return false;
  }
};

// The numbers of a repeated numeric field, packed (one length-delimited
// field) or not (one field each): calls take(value) for each.
template <class F>
bool each_number(const Field& f, F&& take) {
  if (f.type != kBytes) {
    take(f.value);
    return true;
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(f.bytes.data());
  const uint8_t* end = p + f.bytes.size();
  while (p < end) {
    uint64_t v;
    if (!read_varint(p, end, v)) return false;
    take(v);
  }
  return true;
}
// The same for fixed64 and double fields (packed: 8 bytes each).
template <class F>
bool each_fixed64(const Field& f, F&& take) {
  if (f.type != kBytes) {
    take(f.value);
    return true;
  }
  if (f.bytes.size() % 8) return false;
  for (size_t i = 0; i < f.bytes.size(); i += 8) {
    uint64_t v;
    std::memcpy(&v, f.bytes.data() + i, 8);
    take(v);
  }
  return true;
}

// Appends fields to a string. A nested message is written in place: begin()
// leaves room for its length (kLengthRoom bytes, padded: protobuf's readers
// accept a varint with redundant high bytes) and end() fills it in, so no
// message is built twice.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  static constexpr size_t kLengthRoom = 4;  // lengths below 2^28 (a nested message up to 256 MB)

  void varint(uint64_t v) {
    char b[10];
    size_t n = 0;
    while (v >= 0x80) b[n++] = char(v | 0x80), v >>= 7;
    b[n++] = char(v);
    out_.append(b, n);
  }
  void tag(uint32_t number, WireType t) { varint(uint64_t(number) << 3 | t); }
  void u64(uint32_t number, uint64_t v) { tag(number, kVarint), varint(v); }
  void i64(uint32_t number, int64_t v) { u64(number, uint64_t(v)); }
  void fixed64(uint32_t number, uint64_t v) {
    tag(number, kFixed64);
    out_.append(reinterpret_cast<const char*>(&v), 8);
  }
  void f64(uint32_t number, double d) {
    uint64_t v;
    std::memcpy(&v, &d, 8);
    fixed64(number, v);
  }
  void bytes(uint32_t number, std::string_view s) {
    tag(number, kBytes), varint(s.size());
    out_.append(s);
  }
  // A nested message: its fields follow, then end(the returned mark).
  size_t begin(uint32_t number) {
    tag(number, kBytes);
    out_.append(kLengthRoom, '\0');
    return out_.size();
  }
  void end(size_t mark) {
    uint64_t n = out_.size() - mark;
    char* p = out_.data() + mark - kLengthRoom;
    for (size_t i = 0; i < kLengthRoom; ++i, n >>= 7) p[i] = char((n & 0x7f) | (i + 1 < kLengthRoom ? 0x80 : 0));
  }

 private:
  std::string& out_;
};

}  // namespace tinescope::protowire
