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
  // `ns`: a matched flow's latency (computed once for its three tallies).
  void add(const index::Flow& f, int64_t ns) {
    c.sent += (f.flags & index::kFlowSent) != 0;
    c.received += (f.flags & index::kFlowReceived) != 0;
    if (f.matched()) {
      ++c.matched;
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

void for_each_flow(const index::TraceIndex& ix, uint64_t t0, uint64_t t1,
                   const std::function<void(const index::Flow&)>& fn) {
  if (t0 > t1) return;
  // Windows of about 4 M events, each flow taken in the window of its first
  // half (flows() answers those with either half in it). A trace still
  // followed scans every flow for any window: one window then.
  const uint64_t windows = ix.flows_unsorted() ? 1 : std::max<uint64_t>(1, ix.events() / (uint64_t(1) << 22));
  uint64_t width = (t1 - t0) / windows;
  if (width < UINT64_MAX) ++width;  // (the whole range of ticks, in one window, is one short)
  std::vector<index::Flow> fs;
  for (uint64_t w0 = t0;; w0 += width) {
    const uint64_t w1 = t1 - w0 < width - 1 ? t1 : w0 + width - 1;
    ix.flows(w0, w1, fs);
    for (const index::Flow& f : fs)
      if (f.first_half() >= w0 && f.first_half() <= w1) fn(f);
    if (w1 == t1) break;
  }
}

ChannelMatcher::ChannelMatcher(const index::TraceIndex& ix, const std::string& pattern)
    : match_(pattern), catalog_(pattern.empty() ? nullptr : ix.catalog_snapshot()) {}

bool ChannelMatcher::matches(uint64_t channel) {
  if (match_.any()) return true;
  auto [it, fresh] = known_.try_emplace(channel, false);
  if (fresh) {
    const std::string name = catalog_->channel_name(channel);
    it->second = match_.matches(std::to_string(channel)) || (!name.empty() && match_.matches(name));
  }
  return it->second;
}

LaneMatcher::LaneMatcher(const index::TraceIndex& ix, const std::string& pattern) {
  if (pattern.empty()) return;
  // A /regex/ is one pattern (its commas are its own); else each item of the list.
  if (pattern.size() >= 2 && pattern.front() == '/' && pattern.back() == '/') {
    match_.emplace_back(pattern);
  } else {
    for (size_t at = 0; at <= pattern.size();) {
      const size_t comma = std::min(pattern.find(',', at), pattern.size());
      if (comma > at) match_.emplace_back(pattern.substr(at, comma - at));
      at = comma + 1;
    }
  }
  catalog_ = ix.catalog_snapshot();
  labels_ = catalog_->thread_labels();
}

bool LaneMatcher::matches(std::string_view text) const {
  for (const NameMatcher& m : match_)
    if (m.matches(text)) return true;
  return false;
}

bool LaneMatcher::matches(uint32_t feedlet) {
  if (match_.empty()) return true;
  auto [it, fresh] = known_.try_emplace(feedlet, false);
  if (fresh) {
    auto l = labels_.find(feedlet);
    auto f = catalog_->feedlets.find(feedlet);
    it->second = (l != labels_.end() && matches(l->second)) ||
                 (f != catalog_->feedlets.end() && !f->second.name.empty() && matches(f->second.name));
  }
  return it->second;
}

MessageReport message_report(const index::TraceIndex& ix, size_t orphan_limit, uint64_t t0, uint64_t t1) {
  MessageReport r;
  const uint64_t lo = std::max(t0, ix.first_ts()), hi = std::min(t1, ix.last_ts());
  if (ix.events() == 0 || lo > hi) return r;
  Tally all;
  std::map<uint64_t, Tally> channels;
  std::map<uint32_t, Tally> senders;
  // Received again: a receive never sent whose id has another receive. Such
  // receives are few: their ids are kept here, and a second pass looks at
  // the receives of those ids only.
  std::unordered_set<uint64_t> orphan_receive_ids;
  for_each_flow(ix, lo, hi, [&](const index::Flow& f) {
    ++r.flows;
    const int64_t ns = f.matched() ? ix.to_ns(f.recv_ts) - ix.to_ns(f.send_ts) : 0;
    all.add(f, ns);
    channels[f.channel].add(f, ns);
    senders[(f.flags & index::kFlowSent) ? f.src : f.dst].add(f, ns);
    if (f.matched()) return;
    ++r.orphans_total;
    if (r.orphans.size() < orphan_limit) r.orphans.push_back(f);
    if (f.flags == index::kFlowReceived) orphan_receive_ids.insert(f.id);
  });
  if (!orphan_receive_ids.empty()) {
    // Which receive the index matched with the send depends on the order
    // chunks reached it, not on time: every receive of an id but one is
    // "again" — all of those never sent where one was matched, else all
    // but the first in time.
    struct Receives {
      bool matched = false;
      std::vector<std::pair<uint64_t, const index::Flow*>> orphans;  // (time, flow) (flows kept below)
    };
    std::unordered_map<uint64_t, Receives> of;
    std::vector<index::Flow> kept;  // the orphan receives of those ids (few)
    for_each_flow(ix, ix.first_ts(), ix.last_ts(), [&](const index::Flow& f) {  // (the other receives may lie anywhere)
      if (!(f.flags & index::kFlowReceived) || !orphan_receive_ids.count(f.id)) return;
      if (f.matched()) of[f.id].matched = true;
      else kept.push_back(f);
    });
    for (const index::Flow& f : kept) of[f.id].orphans.emplace_back(f.recv_ts, &f);
    for (auto& [id, rec] : of) {
      std::stable_sort(rec.orphans.begin(), rec.orphans.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (size_t i = rec.matched ? 0 : 1; i < rec.orphans.size(); ++i) {
        const index::Flow& f = *rec.orphans[i].second;
        ++all.c.received_again;
        ++channels[f.channel].c.received_again;
        ++senders[f.dst].c.received_again;
      }
    }
  }
  r.all = all.done();
  for (auto& [ch, t] : channels) r.by_channel[ch] = t.done();
  for (auto& [fe, t] : senders) r.by_sender[fe] = t.done();
  return r;
}

}  // namespace tinescope::analysis
