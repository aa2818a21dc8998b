// Which messages to show (issue 52, "filter arrows", and MPROV's filters):
// by channel, sending and receiving lane, either lane, size, latency and
// orphans, written as words:
//
//   channel=q.1* from="producer*" to=/q\.(3|4)./ size>=1024 latency>2ms
//   lanes=q.03,q.07,q.11 orphans rest=grey
//
// Channels match by name or number, lanes by their thread's name or label
// (Catalog::thread_labels: with process and tid where names repeat); both
// globs or /regular expressions/, and lanes also a comma-separated list of
// globs (a pick). lanes= passes a message either of whose lanes matches.
// Size is in bytes, latency a duration (receive - send); a latency test
// passes only messages both sent and received. `orphans` passes only
// messages never received or never sent. `rest=grey` draws the messages it
// does not pass in grey, for context, instead of leaving them out
// (`rest=hide`, the default).
#pragma once

#include <cstdint>
#include <string>

#include "tinescope/analysis/message_report.hpp"

namespace tinescope::analysis {

struct MessageFilter {
  std::string text;  // as written (empty: every message)
  std::string channel, from, to, lanes;
  bool orphans = false;    // only messages with one half
  bool grey_rest = false;  // rest=grey: what it does not pass is drawn grey, not left out
  uint64_t size_min = 0, size_max = UINT64_MAX;
  int64_t latency_min = INT64_MIN, latency_max = INT64_MAX;  // ns
  bool any() const { return text.empty(); }
};

// False with what is wrong ("latency>soon: not a duration").
bool parse_message_filter(const std::string& text, MessageFilter& out, std::string& error);

// A filter against one trace's messages (answers cached per channel and lane).
class MessageMatcher {
 public:
  MessageMatcher(const index::TraceIndex& ix, const MessageFilter& f);
  bool matches(const index::Flow& f);

 private:
  const index::TraceIndex& ix_;
  MessageFilter filter_;
  ChannelMatcher channel_;
  LaneMatcher from_, to_, lanes_;
};

}  // namespace tinescope::analysis
