// What became of a trace's messages (issue 52, "unreceived and unsent"),
// from the index's flow table (a send and a receive are matched by id
// while indexing; docs/INDEX.md "Flows"), never from a scan of the trace:
// per channel and per sender, how many were sent, received, matched, never
// received, received but never sent, and received again (a receive whose
// id had been received before: the index keeps it as a receive of its
// own), with the matched ones' latency percentiles; and the orphans
// themselves, in time order.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include "tinescope/analysis/stream_expr.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::analysis {

struct MessageCounts {
  uint64_t sent = 0, received = 0, matched = 0;
  uint64_t never_received = 0;  // sends with no receive
  uint64_t never_sent = 0;      // receives with no send (received_again among them)
  uint64_t received_again = 0;  // receives of an id that had been received before
  uint64_t received_before_sent = 0;  // matched, the receive's time before the send's (clocks apart)
  // Of the matched: latency (receive - send) in ns, within 1.1 % (max exact;
  // DurationHistogram); 0 where none matched.
  double latency_p50 = 0, latency_p90 = 0, latency_p99 = 0, latency_max = 0;
};

struct MessageReport {
  MessageCounts all;
  std::map<uint64_t, MessageCounts> by_channel;
  std::map<uint32_t, MessageCounts> by_sender;  // by the sending lane (a receive never sent: its receiver's)
  // The sends never received and the receives never sent, in time order;
  // at most `orphan_limit` (orphans_total counts them all).
  std::vector<index::Flow> orphans;
  uint64_t orphans_total = 0;
  uint64_t flows = 0;  // read from the index
};

// Of the messages whose first half (the send; an orphan receive's receive)
// lies in [t0, t1] (ticks).
MessageReport message_report(const index::TraceIndex& ix, size_t orphan_limit = SIZE_MAX, uint64_t t0 = 0,
                             uint64_t t1 = UINT64_MAX);

// Every flow whose first half lies in [t0, t1], in time order, window by
// window (memory follows a window of about 4 M events, not the trace).
void for_each_flow(const index::TraceIndex& ix, uint64_t t0, uint64_t t1,
                   const std::function<void(const index::Flow&)>& fn);

// channel=: a channel's number, or its name (ts_channel_name), as a glob
// or /regex/; "" matches every channel. Remembers each channel's answer.
class ChannelMatcher {
 public:
  ChannelMatcher(const index::TraceIndex& ix, const std::string& pattern);
  bool matches(uint64_t channel);
  bool any() const { return match_.any(); }

 private:
  NameMatcher match_;
  std::shared_ptr<const trace::Catalog> catalog_;
  std::unordered_map<uint64_t, bool> known_;
};

// from=, to=: a lane by its thread's name or its label (Catalog::
// thread_labels: with process and tid where names repeat), as a glob or
// /regex/; "" matches every lane. Remembers each lane's answer.
class LaneMatcher {
 public:
  // `pattern`: a glob, a /regex/, or a comma-separated list of globs (MPROV's pick).
  LaneMatcher(const index::TraceIndex& ix, const std::string& pattern);
  bool matches(uint32_t feedlet);
  bool any() const { return match_.empty(); }

 private:
  bool matches(std::string_view text) const;
  std::vector<NameMatcher> match_;  // any of them
  std::shared_ptr<const trace::Catalog> catalog_;
  std::unordered_map<uint32_t, std::string> labels_;
  std::unordered_map<uint32_t, bool> known_;
};

}  // namespace tinescope::analysis
