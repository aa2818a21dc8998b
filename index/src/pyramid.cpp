#include "pyramid.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "tinescope/format.hpp"

namespace tinescope::index {

bool PageWriter::write(StreamKind kind, uint32_t shift, const Node* nodes, uint32_t count, PageRef& ref) {
  uint8_t p[kNodesPerPage * kMaxPackedNode];
  count = std::min(count, kNodesPerPage);  // callers write at most a page
  const size_t size = pack_nodes(kind, shift, nodes, count, p);
  uint64_t at = next_.fetch_add(size);
  for (size_t done = 0; done < size;) {
    ssize_t w = ::pwrite(fd_, p + done, size - done, off_t(at + done));
    if (w <= 0) {
      if (w < 0 && errno == EINTR) continue;
      error_ = std::string("cannot write the index: ") + std::strerror(w < 0 ? errno : ENOSPC);
      return false;
    }
    done += size_t(w);
  }
  ref.offset = at;
  ref.first_bucket = nodes[0].bucket;
  ref.count = uint16_t(count);
  ref.bytes = uint16_t(size);
  ref.checksum = uint32_t(format::checksum(p, size));
  return true;
}

namespace {

// Counter values are often integers: those (exactly representable, not -0)
// go as zigzag varints, the rest as their 8 bytes; a mask byte says which.
bool small_integer(double v) {
  return v >= -9007199254740992.0 && v <= 9007199254740992.0 && v == double(int64_t(v)) && !(v == 0 && std::signbit(v));
}

uint8_t* pack_doubles(const double* v, int n, uint8_t* out) {
  uint8_t mask = 0;
  for (int k = 0; k < n; ++k) mask |= uint8_t(small_integer(v[k]) << k);
  *out++ = mask;
  for (int k = 0; k < n; ++k) {
    if (mask >> k & 1) {
      out = format::put_varint(out, format::zigzag(int64_t(v[k])));
    } else {
      std::memcpy(out, &v[k], sizeof(double));
      out += sizeof(double);
    }
  }
  return out;
}

bool unpack_doubles(const uint8_t*& p, const uint8_t* end, double* v, int n) {
  if (p == end) return false;
  const uint8_t mask = *p++;
  for (int k = 0; k < n; ++k) {
    if (mask >> k & 1) {
      uint64_t z;
      if (!format::get_varint(p, end, z)) return false;
      v[k] = double(format::unzigzag(z));
    } else {
      if (end - p < 8) return false;
      std::memcpy(&v[k], p, 8);
      p += 8;
    }
  }
  return true;
}

// A varint the caller knows lies in the buffer (a node never takes more
// than kMaxPackedNode bytes): unrolled, since node fields are mostly one to
// four bytes, each field about the same length from node to node.
inline uint64_t read_varint_in(const uint8_t*& p) {
  uint64_t v = p[0];
  if (v < 0x80) return p += 1, v;
  v = (v & 0x7f) | uint64_t(p[1]) << 7;
  if (p[1] < 0x80) return p += 2, v;
  v = (v & 0x3fff) | uint64_t(p[2]) << 14;
  if (p[2] < 0x80) return p += 3, v;
  v = (v & 0x1fffff) | uint64_t(p[3]) << 21;
  if (p[3] < 0x80) return p += 4, v;
  v &= 0xfffffff;
  for (int shift = 28, i = 4; i < int(format::kMaxVarint); ++i, shift += 7) {
    v |= uint64_t(p[i] & 0x7f) << shift;
    if (p[i] < 0x80) return p += i + 1, v;
  }
  return p += format::kMaxVarint, v;  // malformed; the page's size check catches it
}

}  // namespace

size_t pack_nodes(StreamKind kind, uint32_t shift, const Node* nodes, uint32_t count, uint8_t* out) {
  using format::put_varint;
  using format::zigzag;
  uint8_t* const start = out;
  uint64_t prev = nodes[0].bucket;
  for (uint32_t i = 0; i < count; ++i) {
    const Node& n = nodes[i];
    const uint64_t base = n.bucket << shift, last = base + ((uint64_t(1) << shift) - 1);
    out = put_varint(out, n.bucket - prev);
    prev = n.bucket;
    out = put_varint(out, n.count);
    if (!interval_like(kind)) {
      const double v[5] = {n.s.min, n.s.max, n.s.first, n.s.last, n.s.sum};
      out = pack_doubles(v, 5, out);
      out = put_varint(out, n.s.first_ts - base);
      out = put_varint(out, n.s.last_ts - base);
      continue;
    }
    out = put_varint(out, n.max_depth);
    out = put_varint(out, n.iv.busy);
    out = put_varint(out, n.iv.min_dur);
    out = put_varint(out, n.iv.max_dur - n.iv.min_dur);
    out = put_varint(out, n.iv.longest_end - base);
    out = put_varint(out, zigzag(int64_t(n.iv.min_start - base)));
    out = put_varint(out, last - n.iv.max_end);  // keys are ends: the latest is near the bucket's end
  }
  return size_t(out - start);
}

bool unpack_nodes(StreamKind kind, uint32_t shift, uint64_t first_bucket, const uint8_t* p, size_t size,
                  uint32_t count, Node* out) {
  using format::get_varint;
  const uint8_t* end = p + size;
  uint64_t bucket = first_bucket, v[7];
  auto get = [&](uint64_t& x) { return get_varint(p, end, x); };
  for (uint32_t i = 0; i < count; ++i) {
    Node& n = out[i];  // every field is set below (the reserved one to 0)
    const bool whole = end - p >= ptrdiff_t(kMaxPackedNode);  // the whole node is in the page: no checks
    if (whole) {
      v[0] = read_varint_in(p), v[1] = read_varint_in(p);
    } else if (!get(v[0]) || !get(v[1])) {
      return false;
    }
    bucket += v[0];
    n.bucket = bucket;
    n.count = uint32_t(v[1]);
    const uint64_t base = bucket << shift, last = base + ((uint64_t(1) << shift) - 1);
    if (!interval_like(kind)) {
      double d[5];
      if (!unpack_doubles(p, end, d, 5)) return false;
      n.max_depth = 0;
      n.s.min = d[0], n.s.max = d[1], n.s.first = d[2], n.s.last = d[3], n.s.sum = d[4];
      if (!get(v[2]) || !get(v[3])) return false;
      n.s.first_ts = base + v[2];
      n.s.last_ts = base + v[3];
      continue;
    }
    if (whole) {
      for (int k = 0; k < 7; ++k) v[k] = read_varint_in(p);
    } else {
      for (int k = 0; k < 7; ++k)
        if (!get(v[k])) return false;
    }
    n.max_depth = uint32_t(v[0]);
    n.iv.busy = v[1];
    n.iv.min_dur = v[2];
    n.iv.max_dur = v[2] + v[3];
    n.iv.longest_end = base + v[4];
    n.iv.min_start = base + uint64_t(format::unzigzag(v[5]));
    n.iv.max_end = last - v[6];
    n.iv.reserved = 0;
  }
  return p == end;
}

bool read_page(const Stream& st, uint32_t level, const PageRef& ref, const uint8_t* map, size_t map_size, int fd,
               std::vector<Node>& buf) {
  if (ref.count == 0 || ref.count > kNodesPerPage) return false;
  uint8_t local[kNodesPerPage * kMaxPackedNode];
  const uint8_t* bytes = local;
  if (ref.bytes > sizeof local) return false;
  if (map && fits_in(ref.offset, ref.bytes, map_size)) {
    bytes = map + ref.offset;
  } else if (::pread(fd, local, ref.bytes, off_t(ref.offset)) != ssize_t(ref.bytes)) {
    return false;
  }
  if (!format::checksum_matches(uint32_t(format::checksum(bytes, ref.bytes)), ref.checksum)) return false;
  const size_t had = buf.size();
  buf.resize(had + ref.count);
  if (unpack_nodes(st.info.kind, st.info.leaf_shift + level, ref.first_bucket, bytes, ref.bytes, ref.count,
                   buf.data() + had))
    return true;
  buf.resize(had);
  return false;
}

uint32_t choose_leaf_shift(uint64_t count, uint64_t span) {
  if (count == 0) count = 1;
  // Wide enough for kLeafItems items at this density, at least 1 tick.
  unsigned __int128 width = (unsigned __int128)(span + 1) * kLeafItems / count;
  if (width <= 1) return 0;
  uint64_t w = uint64_t(std::min<unsigned __int128>(width, UINT64_MAX));
  return std::min(uint32_t(std::bit_width(w)) - 1, 40u);
}

void Stream::add_new_bucket(const Item& it, PageWriter& pages) {
  if (levels.empty()) levels.emplace_back();
  Level& leaf = levels[0];
  uint64_t bucket = it.key() >> info.leaf_shift;
  if (leaf.has_open) complete(0, leaf.open, pages);
  // complete() may have grown `levels`: index again.
  levels[0].open = leaf_node(it, bucket);
  levels[0].has_open = true;
}

void Stream::complete(size_t level, Node node, PageWriter& pages) {
  Level& l = levels[level];
  // Only even levels are stored; a query makes an odd level from the one
  // below (two buckets a bucket), which saves a third of the index.
  if (level % 2 == 0) l.tail.push_back(node);
  if (l.tail.size() == kNodesPerPage) {
    PageRef ref;
    if (pages.write(info.kind, info.leaf_shift + uint32_t(level), l.tail.data(), uint32_t(l.tail.size()), ref))
      l.pages.push_back(ref);
    l.tail.clear();
  }
  if (info.leaf_shift + level + 1 > kMaxShift) return;
  if (levels.size() == level + 1) levels.emplace_back();
  info.levels = uint32_t(levels.size());
  Level& up = levels[level + 1];
  uint64_t bucket = node.bucket >> 1;
  if (up.has_open && up.open.bucket == bucket) {
    merge(info.kind, up.open, node);
    return;
  }
  Node moved = node;
  moved.bucket = bucket;
  if (up.has_open) {
    Node done = up.open;
    up.open = moved;
    complete(level + 1, done, pages);
  } else {
    up.open = moved;
    up.has_open = true;
  }
}

void Stream::finish(PageWriter& pages) {
  for (size_t l = 0; l < levels.size(); ++l) {
    Level& lv = levels[l];
    if (!lv.has_open) continue;
    bool top = l + 1 == levels.size() && lv.pages.empty() && lv.tail.empty();
    Node open = lv.open;
    lv.has_open = false;
    if (top || info.leaf_shift + l + 1 > kMaxShift) {
      if (l % 2 == 0) lv.tail.push_back(open);
    } else {
      complete(l, open, pages);
    }
  }
  for (size_t l = 0; l < levels.size(); ++l) {
    Level& lv = levels[l];
    if (lv.tail.empty()) continue;
    PageRef ref;
    if (pages.write(info.kind, info.leaf_shift + uint32_t(l), lv.tail.data(), uint32_t(lv.tail.size()), ref))
      lv.pages.push_back(ref);
    lv.tail.clear();
  }
  info.levels = uint32_t(levels.size());
}

}  // namespace tinescope::index
