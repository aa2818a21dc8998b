#include "pyramid.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "tinescope/format.hpp"

namespace tinescope::index {

bool PageWriter::write(const Node* nodes, uint32_t count, PageRef& ref) {
  // Pages are packed: the last, partly filled page of a level takes only its nodes.
  const size_t bytes = count * sizeof(Node);
  const uint8_t* page = reinterpret_cast<const uint8_t*>(nodes);
  uint64_t at = next_.fetch_add(bytes);
  for (size_t done = 0; done < bytes;) {
    ssize_t w = ::pwrite(fd_, page + done, bytes - done, off_t(at + done));
    if (w <= 0) {
      if (w < 0 && errno == EINTR) continue;
      error_ = std::string("cannot write the index: ") + std::strerror(w < 0 ? errno : ENOSPC);
      return false;
    }
    done += size_t(w);
  }
  ref.offset = at;
  ref.first_bucket = nodes[0].bucket;
  ref.count = count;
  ref.checksum = uint32_t(format::checksum(nodes, count * sizeof(Node)));
  return true;
}

bool interval_like(StreamKind kind) { return kind != StreamKind::Counter; }

Node leaf_node(const Item& it, uint64_t bucket) {
  Node n;
  n.bucket = bucket;
  n.count = 1;
  if (it.kind == StreamKind::Counter) {
    n.s.min = n.s.max = n.s.first = n.s.last = n.s.sum = it.value;
    n.s.first_ts = n.s.last_ts = it.end;
    return n;
  }
  uint64_t dur = it.end - it.start;
  n.max_depth = it.depth;
  n.iv.busy = it.kind == StreamKind::Send ? uint64_t(it.value) : dur;
  n.iv.min_dur = n.iv.max_dur = dur;
  n.iv.longest_end = it.end;
  n.iv.min_start = it.start;
  n.iv.max_end = it.end;
  return n;
}

void merge(StreamKind kind, Node& a, const Node& b) {
  if (b.count == 0) return;
  if (a.count == 0) {
    uint64_t bucket = a.bucket;
    a = b;
    a.bucket = bucket;
    return;
  }
  a.count += b.count;
  if (!interval_like(kind)) {
    a.s.min = std::min(a.s.min, b.s.min);
    a.s.max = std::max(a.s.max, b.s.max);
    a.s.last = b.s.last;
    a.s.sum += b.s.sum;
    a.s.last_ts = b.s.last_ts;
    return;
  }
  a.max_depth = std::max(a.max_depth, b.max_depth);
  a.iv.busy += b.iv.busy;
  a.iv.min_dur = std::min(a.iv.min_dur, b.iv.min_dur);
  if (b.iv.max_dur > a.iv.max_dur) a.iv.max_dur = b.iv.max_dur, a.iv.longest_end = b.iv.longest_end;
  a.iv.min_start = std::min(a.iv.min_start, b.iv.min_start);
  a.iv.max_end = std::max(a.iv.max_end, b.iv.max_end);
}

uint32_t choose_leaf_shift(uint64_t count, uint64_t span) {
  if (count == 0) count = 1;
  // Wide enough for kLeafItems items at this density, at least 1 tick.
  unsigned __int128 width = (unsigned __int128)(span + 1) * kLeafItems / count;
  if (width <= 1) return 0;
  uint64_t w = uint64_t(std::min<unsigned __int128>(width, UINT64_MAX));
  return std::min(uint32_t(std::bit_width(w)) - 1, 40u);
}

void Stream::add(const Item& it, PageWriter& pages) {
  ++info.items;
  if (levels.empty()) levels.emplace_back();
  Level& leaf = levels[0];
  uint64_t bucket = it.key() >> info.leaf_shift;
  if (leaf.has_open && leaf.open.bucket == bucket) {  // the common case, folded in place
    Node& n = leaf.open;
    ++n.count;
    if (info.kind == StreamKind::Counter) {
      n.s.min = std::min(n.s.min, it.value);
      n.s.max = std::max(n.s.max, it.value);
      n.s.last = it.value;
      n.s.sum += it.value;
      n.s.last_ts = it.end;
      return;
    }
    const uint64_t dur = it.end - it.start;
    n.max_depth = std::max(n.max_depth, it.depth);
    n.iv.busy += info.kind == StreamKind::Send ? uint64_t(it.value) : dur;
    n.iv.min_dur = std::min(n.iv.min_dur, dur);
    if (dur > n.iv.max_dur) n.iv.max_dur = dur, n.iv.longest_end = it.end;
    n.iv.min_start = std::min(n.iv.min_start, it.start);
    n.iv.max_end = std::max(n.iv.max_end, it.end);
    return;
  }
  if (leaf.has_open) complete(0, leaf.open, pages);
  // complete() may have grown `levels`: index again.
  levels[0].open = leaf_node(it, bucket);
  levels[0].has_open = true;
}

void Stream::complete(size_t level, Node node, PageWriter& pages) {
  Level& l = levels[level];
  l.tail.push_back(node);
  if (l.tail.size() == kNodesPerPage) {
    PageRef ref;
    if (pages.write(l.tail.data(), uint32_t(l.tail.size()), ref)) l.pages.push_back(ref);
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
      lv.tail.push_back(open);
    } else {
      complete(l, open, pages);
    }
  }
  for (Level& lv : levels) {
    if (lv.tail.empty()) continue;
    PageRef ref;
    if (pages.write(lv.tail.data(), uint32_t(lv.tail.size()), ref)) lv.pages.push_back(ref);
    lv.tail.clear();
  }
  info.levels = uint32_t(levels.size());
}

}  // namespace tinescope::index
