#include "pyramid.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <utility>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "bit_columns.hpp"
#include "tinescope/format.hpp"

namespace tinescope::index {

bool PageWriter::write(StreamKind kind, uint32_t shift, const Node* nodes, uint32_t count, PageRef& ref) {
  uint8_t p[kNodesPerPage * kMaxPackedNode];
  count = std::min(count, kNodesPerPage);  // callers write at most a page
  const size_t size = pack_nodes(kind, shift, nodes, count, p);
  ref.first_bucket = nodes[0].bucket;
  ref.count = uint16_t(count);
  ref.bytes = uint16_t(size);
  ref.checksum = uint32_t(format::checksum(p, size));
  std::lock_guard lock(mu_);
  if (!error_.empty()) return false;
  ref.offset = next_;
  next_ += size;
  gathered_.insert(gathered_.end(), p, p + size);
  return gathered_.size() < kGather || flush_locked();
}

bool PageWriter::append(const uint8_t* p, size_t n, uint64_t& offset) {
  std::lock_guard lock(mu_);
  if (!error_.empty()) return false;
  offset = next_;
  next_ += n;
  gathered_.insert(gathered_.end(), p, p + n);
  return gathered_.size() < kGather || flush_locked();
}

bool PageWriter::flush() {
  std::lock_guard lock(mu_);
  return error_.empty() && flush_locked();
}

bool PageWriter::flush_locked() {
  for (size_t done = 0; done < gathered_.size();) {
    ssize_t w = ::pwrite(fd_, gathered_.data() + done, gathered_.size() - done, off_t(gathered_at_ + done));
    if (w <= 0) {
      if (w < 0 && errno == EINTR) continue;
      error_ = std::string("cannot write the index: ") + std::strerror(w < 0 ? errno : ENOSPC);
      return false;
    }
    done += size_t(w);
  }
  gathered_at_ += gathered_.size();
  gathered_.clear();
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

// Interval-like pages are stored column by column: a byte per field gives
// its bit width over the page, then each field's values for every node,
// bit-packed from the low bit up, one column after the other. Fields of one
// stream and level are alike from node to node, so the widest value of a
// page costs little more than a varint of each, and reading is a load, a
// shift and a mask per field with no branch on lengths (varints made a
// coarse query's nodes wait on mispredicted branches). The tenth column, the
// longest item's name, is used by depth streams only: elsewhere it is all
// zeros, a width of 0 and one byte a page. Its high 32 bits hold the
// truncated items (Node::iv.truncated), zero in nearly every page.
constexpr int kColumns = 10;

// The columns of an interval-like node.
inline void node_columns(const Node& n, uint64_t prev, uint32_t shift, uint64_t v[kColumns]) {
  const uint64_t base = n.bucket << shift, last = base + ((uint64_t(1) << shift) - 1);
  v[0] = n.bucket - prev;
  v[1] = n.count;
  v[2] = n.max_depth;
  v[3] = n.iv.busy;
  v[4] = n.iv.min_dur;
  v[5] = n.iv.max_dur - n.iv.min_dur;
  v[6] = n.iv.longest_end - base;
  v[7] = format::zigzag(int64_t(n.iv.min_start - base));
  v[8] = last - n.iv.max_end;  // keys are ends: the latest is near the bucket's end
  v[9] = uint64_t(n.iv.truncated) << 32 | n.iv.longest_name;
}

size_t pack_columns(uint32_t shift, const Node* nodes, uint32_t count, uint8_t* out) {
  uint64_t v[kNodesPerPage][kColumns], any[kColumns] = {};
  for (uint32_t i = 0; i < count; ++i) {
    node_columns(nodes[i], i ? nodes[i - 1].bucket : nodes[0].bucket, shift, v[i]);
    for (int f = 0; f < kColumns; ++f) any[f] |= v[i][f];
  }
  uint8_t width[kColumns];
  for (int f = 0; f < kColumns; ++f) out[f] = width[f] = uint8_t(std::bit_width(any[f]));
  BitWriter w{out + kColumns};
  for (int f = 0; f < kColumns; ++f)
    for (uint32_t i = 0; i < count; ++i) w.put(v[i][f], width[f]);
  return size_t(w.finish() - out);
}

bool unpack_columns(uint32_t shift, uint64_t first_bucket, const uint8_t* p, size_t size, uint32_t count,
                    Node* out) {
  if (size < kColumns || count > kNodesPerPage) return false;
  uint64_t at[kColumns], bits = 0;  // where each column starts, in bits
  unsigned width[kColumns];
  for (int f = 0; f < kColumns; ++f) {
    if (p[f] > 64) return false;
    width[f] = p[f];
    at[f] = bits;
    bits += uint64_t(width[f]) * count;
  }
  if (size != kColumns + (bits + 7) / 8) return false;
  // Column by column (a tight loop per width), then node by node.
  uint64_t v[kColumns][kNodesPerPage];
  for (int f = 0; f < kColumns; ++f) unpack_column(p + kColumns, at[f], width[f], count, v[f]);
  uint64_t bucket = first_bucket;
  for (uint32_t i = 0; i < count; ++i) {
    Node& n = out[i];
    bucket += v[0][i];
    const uint64_t base = bucket << shift, last = base + ((uint64_t(1) << shift) - 1);
    n.bucket = bucket;
    n.count = uint32_t(v[1][i]);
    n.max_depth = uint32_t(v[2][i]);
    n.iv.busy = v[3][i];
    n.iv.min_dur = v[4][i];
    n.iv.max_dur = v[4][i] + v[5][i];
    n.iv.longest_end = base + v[6][i];
    n.iv.min_start = base + uint64_t(format::unzigzag(v[7][i]));
    n.iv.max_end = last - v[8][i];
    n.iv.longest_name = uint32_t(v[9][i]), n.iv.truncated = uint32_t(v[9][i] >> 32);
  }
  return true;
}

}  // namespace

size_t pack_nodes(StreamKind kind, uint32_t shift, const Node* nodes, uint32_t count, uint8_t* out) {
  using format::put_varint;
  if (interval_like(kind)) return pack_columns(shift, nodes, count, out);
  uint8_t* const start = out;
  uint64_t prev = nodes[0].bucket;
  for (uint32_t i = 0; i < count; ++i) {
    const Node& n = nodes[i];
    const uint64_t base = n.bucket << shift;
    out = put_varint(out, n.bucket - prev);
    prev = n.bucket;
    out = put_varint(out, n.count);
    const double v[5] = {n.s.min, n.s.max, n.s.first, n.s.last, n.s.sum};
    out = pack_doubles(v, 5, out);
    out = put_varint(out, n.s.first_ts - base);
    out = put_varint(out, n.s.last_ts - base);
  }
  return size_t(out - start);
}

bool unpack_nodes(StreamKind kind, uint32_t shift, uint64_t first_bucket, const uint8_t* p, size_t size,
                  uint32_t count, Node* out) {
  if (interval_like(kind)) return unpack_columns(shift, first_bucket, p, size, count, out);
  using format::get_varint;
  const uint8_t* end = p + size;
  uint64_t bucket = first_bucket, v[4];
  auto get = [&](uint64_t& x) { return get_varint(p, end, x); };
  for (uint32_t i = 0; i < count; ++i) {
    Node& n = out[i];
    if (!get(v[0]) || !get(v[1])) return false;
    bucket += v[0];
    n.bucket = bucket;
    n.count = uint32_t(v[1]);
    const uint64_t base = bucket << shift;
    double d[5];
    if (!unpack_doubles(p, end, d, 5)) return false;
    n.max_depth = 0;
    n.s.min = d[0], n.s.max = d[1], n.s.first = d[2], n.s.last = d[3], n.s.sum = d[4];
    if (!get(v[2]) || !get(v[3])) return false;
    n.s.first_ts = base + v[2];
    n.s.last_ts = base + v[3];
  }
  return p == end;
}

namespace {

// A loaded index's mark (a byte a page, Level::verified) that a page has
// matched its checksum; an index built here has none. Relaxed: queries and
// the warmer may check the same page at once; each finds it good on its
// own, so no order between them matters.
bool marked_checked(const Level& lv, size_t page) {
  return lv.verified && std::atomic_ref<uint8_t>(lv.verified[page]).load(std::memory_order_relaxed);
}
void mark_checked(const Level& lv, size_t page) {
  if (lv.verified) std::atomic_ref<uint8_t>(lv.verified[page]).store(1, std::memory_order_relaxed);
}
bool checksum_ok(const PageRef& ref, const uint8_t* bytes) {
  return format::checksum_matches(uint32_t(format::checksum(bytes, ref.bytes)), ref.checksum);
}

}  // namespace

bool verify_page(const Stream& st, uint32_t level, size_t page, const uint8_t* map, size_t map_size) {
  const Level& lv = st.levels[level];
  const PageRef& ref = lv.pages[page];
  if (!lv.verified || !map || !fits_in(ref.offset, ref.bytes, map_size)) return false;
  if (marked_checked(lv, page)) return true;
  if (!checksum_ok(ref, map + ref.offset)) return false;
  mark_checked(lv, page);
  return true;
}

LevelWindow level_window(const Stream& st, uint64_t t0, uint64_t t1, uint32_t shift) {
  LevelWindow w;
  const size_t L = std::min<size_t>(shift - st.info.leaf_shift, st.levels.size() - 1);
  w.answer_shift = st.info.leaf_shift + uint32_t(L);
  // Odd levels are not stored: pairs of buckets of the level below make them.
  w.stored = L & ~size_t(1);
  w.up = uint32_t(L - w.stored);
  w.b0 = (t0 >> w.answer_shift) << w.up;
  w.b1 = ((t1 >> w.answer_shift) << w.up) | ((uint64_t(1) << w.up) - 1);
  // (Through the checked reads: a loaded index's page lists are checked a
  // block at a time as they are first read, table.hpp.)
  const Table<PageRef>& pages = st.levels[w.stored].pages;
  w.first = partition_index(pages, 0, pages.size(), [&](const PageRef& p) { return p.first_bucket <= w.b0; });
  if (w.first > 0) --w.first;
  return w;
}

size_t ask_for_pages(const Stream& st, uint64_t t0, uint64_t t1, uint32_t shift, const uint8_t* map,
                     size_t map_size) {
  if (!map || st.levels.empty() || !st.levels[0].verified) return 0;  // (not a loaded index)
  const LevelWindow w = level_window(st, t0, t1, shift);
  const Level& lv = st.levels[w.stored];
  uint64_t from = 0, to = 0;  // the bytes being gathered into one request
  size_t asked = 0;
  for (size_t page = w.first; page < lv.pages.size() && asked < kAskPages; ++page) {
    const PageRef& ref = lv.pages[page];
    if (ref.first_bucket > w.b1) break;
    if (marked_checked(lv, page) || !fits_in(ref.offset, ref.bytes, map_size)) continue;
    // (Pages lie in file order within a level, each stream's as they filled.)
    const bool apart = to == 0 || ref.offset / 4096 > (to - 1) / 4096 + 1;  // (not in the OS page after the last)
    if (apart) ask_for_read(map + from, to - from), from = ref.offset;
    to = std::max<uint64_t>(to, ref.offset + ref.bytes);
    ++asked;
  }
  ask_for_read(map + from, to - from);
  return asked;
}

uint32_t read_page(const Stream& st, uint32_t level, size_t page, const uint8_t* map, size_t map_size, int fd,
                   Node* out) {
  const Level& lv = st.levels[level];
  const PageRef& ref = lv.pages[page];
  if (ref.count == 0 || ref.count > kNodesPerPage) return 0;
  uint8_t local[kNodesPerPage * kMaxPackedNode + kPagePadding];
  const uint8_t* bytes = local;
  if (ref.bytes > sizeof local - kPagePadding) return 0;
  if (map && fits_in(ref.offset, ref.bytes + kPagePadding, map_size)) {
    bytes = map + ref.offset;  // what follows the page is in the mapping: read in place
  } else {
    if (map && fits_in(ref.offset, ref.bytes, map_size)) {
      std::memcpy(local, map + ref.offset, ref.bytes);
    } else if (::pread(fd, local, ref.bytes, off_t(ref.offset)) != ssize_t(ref.bytes)) {
      return 0;
    }
    std::memset(local + ref.bytes, 0, kPagePadding);
  }
  // A level's pages lie scattered through the file (every stream's pages
  // are written as they fill), so each is a fresh trip to memory: ask for
  // the next one while this one is unpacked.
  if (page + 1 < lv.pages.size() && map) {
    const PageRef& next = lv.pages[page + 1];
    if (fits_in(next.offset, next.bytes, map_size))
      for (uint32_t b = 0; b < next.bytes; b += 64) __builtin_prefetch(map + next.offset + b);
  }
  const bool checked = marked_checked(lv, page);
  if (!checked && !checksum_ok(ref, bytes)) return 0;
  if (!unpack_nodes(st.info.kind, st.info.leaf_shift + level, ref.first_bucket, bytes, ref.bytes, ref.count, out))
    return 0;
  if (!checked) mark_checked(lv, page);
  return ref.count;
}

uint32_t choose_leaf_shift(uint64_t count, uint64_t span, uint64_t leaf_items) {
  if (count == 0) count = 1;
  // Wide enough for leaf_items items at this density, at least 1 tick.
  unsigned __int128 width = (unsigned __int128)(span + 1) * leaf_items / count;
  if (width <= 1) return 0;
  uint64_t w = uint64_t(std::min<unsigned __int128>(width, UINT64_MAX));
  return std::min(uint32_t(std::bit_width(w)) - 1, 40u);
}

void Stream::add_new_bucket(const Item& it, PageWriter& pages) {
  open_leaf(leaf_node(it, it.key() >> info.leaf_shift), pages);
}

void Stream::add_node(const Node& n, PageWriter& pages) {
  info.items += n.count;
  if (!levels.empty() && levels[0].has_open && levels[0].open.bucket == n.bucket) {
    merge(info.kind, levels[0].open, n);
    return;
  }
  open_leaf(n, pages);
}

void Stream::open_leaf(const Node& n, PageWriter& pages) {
  if (levels.empty()) levels.emplace_back();
  if (levels[0].has_open) complete(0, levels[0].open, pages);
  // complete() may have grown `levels`: index again.
  levels[0].open = n;
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
      l.pages.vec().push_back(ref);
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
      lv.pages.vec().push_back(ref);
    lv.tail.clear();
  }
  info.levels = uint32_t(levels.size());
}

}  // namespace tinescope::index
