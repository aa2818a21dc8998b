// What a counter holds at a time: the nearest sample before or after it,
// found by descending the stream's pyramid. At each level the window narrows
// to the one bucket that holds the answer (a bucket's first and last sample
// times say which), read as about 2^kStepBits buckets of a finer level; at
// the leaf level, that bucket's items.
#include <algorithm>
#include <mutex>

#include "state.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {

namespace {

constexpr uint32_t kStepBits = 6;

// The last tick of bucket b at `shift` (saturating: the top buckets end at 2^64 - 1).
uint64_t bucket_last(uint64_t b, uint32_t shift) {
  return shift >= 64 || b >= (UINT64_MAX >> shift) ? UINT64_MAX : ((b + 1) << shift) - 1;
}

Item sample(uint64_t ts, double value) {
  Item it;
  it.kind = StreamKind::Counter;
  it.start = it.end = ts;
  it.value = value;
  return it;
}

}  // namespace

bool TraceIndex::sample_before(int id, uint64_t t, Item& out) const {
  return t > 0 && nearest_sample(id, 0, t - 1, true, out);
}

bool TraceIndex::sample_after(int id, uint64_t t, Item& out) const {
  return t < UINT64_MAX && nearest_sample(id, t + 1, UINT64_MAX, false, out);
}

bool TraceIndex::nearest_sample(int id, uint64_t lo, uint64_t hi, bool last, Item& out) const {
  uint32_t leaf = 0, shift = 0;
  {
    std::shared_lock lock(mu_);
    const Stream* st = s_->stream(id);
    if (!st || st->info.kind != StreamKind::Counter || st->levels.empty()) return false;
    leaf = st->info.leaf_shift;
    shift = leaf + uint32_t(st->levels.size()) - 1;
  }
  Buckets b;
  for (;;) {
    query_shift(id, lo, hi, shift, b);
    // The bucket that holds the answer: whole (its last, or first, sample
    // is in the window: the answer), or straddling an end of the window.
    const Node* straddles = nullptr;
    auto n = b.nodes.size();
    for (size_t k = 0; k < n; ++k) {
      const Node& node = b.nodes[last ? n - 1 - k : k];
      if (!node.count || node.s.first_ts > hi || node.s.last_ts < lo) continue;
      const bool whole = last ? node.s.last_ts <= hi : node.s.first_ts >= lo;
      if (whole) {
        out = last ? sample(node.s.last_ts, node.s.last) : sample(node.s.first_ts, node.s.first);
        return true;
      }
      straddles = &node;
      break;
    }
    if (!straddles) return false;
    const uint64_t b_lo = b.shift >= 64 ? 0 : straddles->bucket << b.shift;
    lo = std::max(lo, b_lo), hi = std::min(hi, bucket_last(straddles->bucket, b.shift));
    if (b.from_events || shift <= leaf) break;
    shift = std::max(leaf, shift > kStepBits ? shift - kStepBits : 0);
  }
  // One leaf bucket: its items.
  const std::vector<Item> items = this->items(id, lo, hi);
  if (items.empty()) return false;
  out = last ? items.back() : items.front();
  return true;
}

}  // namespace tinescope::index
