#include "tinescope/analysis/message_report.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "tinescope/analysis/duration_stats.hpp"

namespace tinescope::analysis {

namespace {

struct Tally {
  MessageCounts c;
  DurationHistogram latency;
  void add(const index::Flow& f, const index::TraceIndex& ix) {
    c.sent += (f.flags & index::kFlowSent) != 0;
    c.received += (f.flags & index::kFlowReceived) != 0;
    if (f.matched()) {
      ++c.matched;
      const int64_t ns = ix.to_ns(f.recv_ts) - ix.to_ns(f.send_ts);
      if (ns < 0) ++c.received_before_sent;
      latency.add(uint64_t(std::max<int64_t>(ns, 0)));
    } else if (f.flags == index::kFlowSent) {
      ++c.never_received;
    } else {
      ++c.never_sent;
    }
  }
  MessageCounts done() {
    if (latency.count()) {
      c.latency_p50 = latency.percentile(50), c.latency_p90 = latency.percentile(90);
      c.latency_p99 = latency.percentile(99), c.latency_max = double(latency.max());
    }
    return c;
  }
};

}  // namespace

MessageReport message_report(const index::TraceIndex& ix, size_t orphan_limit) {
  MessageReport r;
  if (ix.events() == 0) return r;
  Tally all;
  std::map<uint64_t, Tally> channels;
  std::map<uint32_t, Tally> senders;
  // Received again: a receive of its own (never sent) whose id had been
  // received before. Such receives are few: their ids are kept here, and a
  // second pass looks at the receives of those ids only.
  std::unordered_set<uint64_t> orphan_receive_ids;
  // Windows of about 4 M events, each flow taken in the window of its first
  // half (flows() answers those with either half in it).
  const uint64_t lo = ix.first_ts(), hi = ix.last_ts();
  const uint64_t windows = std::max<uint64_t>(1, ix.events() / (uint64_t(1) << 22));
  const uint64_t width = std::max<uint64_t>(1, (hi - lo) / windows + 1);
  std::vector<index::Flow> fs;
  for (uint64_t w0 = lo;; w0 += width) {
    const uint64_t w1 = hi - w0 < width - 1 ? hi : w0 + width - 1;
    ix.flows(w0, w1, fs);
    for (const index::Flow& f : fs) {
      const uint64_t first = f.first_half();
      if (first < w0 || first > w1) continue;
      ++r.flows;
      all.add(f, ix);
      channels[f.channel].add(f, ix);
      senders[(f.flags & index::kFlowSent) ? f.src : f.dst].add(f, ix);
      if (f.matched()) continue;
      ++r.orphans_total;
      if (r.orphans.size() < orphan_limit) r.orphans.push_back(f);
      if (f.flags == index::kFlowReceived) orphan_receive_ids.insert(f.id);
    }
    if (w1 == hi) break;
  }
  if (!orphan_receive_ids.empty()) {
    std::unordered_map<uint64_t, uint64_t> receives_of;  // id -> receives seen so far, in time order
    for (uint64_t w0 = lo;; w0 += width) {
      const uint64_t w1 = hi - w0 < width - 1 ? hi : w0 + width - 1;
      ix.flows(w0, w1, fs);
      // By the time of their receive, so "before" is in time.
      std::erase_if(fs, [&](const index::Flow& f) {
        return !(f.flags & index::kFlowReceived) || f.recv_ts < w0 || f.recv_ts > w1 || !orphan_receive_ids.count(f.id);
      });
      std::stable_sort(fs.begin(), fs.end(), [](const index::Flow& a, const index::Flow& b) { return a.recv_ts < b.recv_ts; });
      for (const index::Flow& f : fs) {
        if (receives_of[f.id]++ == 0 || f.matched()) continue;
        ++all.c.received_again;
        ++channels[f.channel].c.received_again;
        ++senders[f.dst].c.received_again;
      }
      if (w1 == hi) break;
    }
  }
  r.all = all.done();
  for (auto& [ch, t] : channels) r.by_channel[ch] = t.done();
  for (auto& [fe, t] : senders) r.by_sender[fe] = t.done();
  return r;
}

}  // namespace tinescope::analysis
