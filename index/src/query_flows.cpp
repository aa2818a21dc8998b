// Flows (message send -> receive links) of a window, from the flow blocks.
#include <algorithm>
#include <bit>
#include <optional>
#include <queue>
#include <span>
#include <tuple>

#include "depth_streams.hpp"
#include "parallel_tasks.hpp"
#include "query_walk.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {

std::vector<Flow> TraceIndex::flows(uint64_t t0, uint64_t t1, size_t limit, bool across) const {
  std::vector<Flow> out;
  flows(t0, t1, out, limit, across);
  return out;
}

bool TraceIndex::flows_unsorted() const {
  std::shared_lock lock(mu_);
  return s_->flows != nullptr;
}

void TraceIndex::flows(uint64_t t0, uint64_t t1, std::vector<Flow>& out, size_t limit, bool across) const {
  std::shared_lock lock(mu_);
  out.clear();
  if (limit < SIZE_MAX) ++limit;  // one more than asked tells the caller there are more
  // (A flow across the window has its block's times around it: the blocks
  // that meet the window hold it.)
  auto in = [&](const Flow& f) {
    return ((f.flags & kFlowSent) && f.send_ts >= t0 && f.send_ts <= t1) ||
           ((f.flags & kFlowReceived) && f.recv_ts >= t0 && f.recv_ts <= t1) ||
           (across && f.matched() && f.send_ts < t0 && f.recv_ts > t1);
  };
  if (!s_->flows) {
    // The index file's blocks, in order: only those whose times meet the window.
    auto [from, to] = s_->flow_index.range(t0, t1);
    std::vector<Flow> block;
    for (size_t i = from; i < to && out.size() < limit; ++i) {
      const FlowBlock& b = s_->flow_blocks[i];
      if (b.last < t0 || b.first > t1) continue;
      block.clear();
      s_->read_flows(b, block);  // a damaged block is counted and left out
      for (const Flow& f : block)
        if (in(f) && out.size() < limit) out.push_back(f);
    }
    return;
  }
  // While indexing (a growing trace): a scan of the builder's table, which
  // keeps flows in arrival order; what is returned is sorted here.
  for (const Flow& f : std::span<const Flow>(s_->flows, s_->flow_count)) {
    if (in(f)) out.push_back(f);
    if (out.size() >= limit) break;
  }
  std::stable_sort(out.begin(), out.end(), [](const Flow& a, const Flow& b) { return a.first_half() < b.first_half(); });
}

}  // namespace tinescope::index
