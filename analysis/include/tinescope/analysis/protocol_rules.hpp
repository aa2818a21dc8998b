// Protocol rules (issue 52, after MPROV's protocol conformance checking): a
// small text file of what the trace's messages must do, checked against the
// index's flow table. docs/ANALYSIS.md "Protocol rules" is the syntax:
//
//   # one rule a line; '#' begins a comment
//   received  channel=req within=5ms             # every send on req is received, within 5 ms
//   answered  channel=req reply=resp within=1ms  # each receive on req answered on resp by its receiver
//   forbidden from="producer*" to="q.13*"        # no message from those lanes to those
//   allowed   from="producer*" to="q.*"          # with an allowed rule, every message needs one
//   response  task="T*" within=2ms               # every job of those tasks responds within 2 ms (sched_check.hpp)
//   priority  task="T1" level=3                  # the task's priority, higher is more urgent (priority inversions)
//
// Lanes are matched by their label (Catalog::thread_labels: the thread's
// name, with its process and tid where names repeat), channels by name or
// number; both as globs or /regular expressions/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tinescope/index/trace_index.hpp"

namespace tinescope::analysis {

struct Rule {
  enum Kind { Received, Answered, Forbidden, Allowed, Response, Priority };
  Kind kind = Received;
  int line = 0;      // in its file, from 1
  std::string text;  // as written, without its comment
  std::string channel, reply;  // channel patterns ("": any)
  std::string from, to;        // lane patterns ("": any)
  std::string task;            // response: a task pattern ("": any)
  int64_t within_ns = -1;      // -1: no limit
  int32_t level = 0;           // priority: higher is more urgent
};

struct Rules {
  std::string file;
  std::vector<Rule> rules;
  bool has_allowed() const;
  bool has_message_rules() const;  // any rule but response and priority
};

// False with "FILE:LINE: what is wrong" at the first bad line.
bool parse_rules(std::string_view text, const std::string& file, Rules& out, std::string& error);
bool load_rules(const std::string& path, Rules& out, std::string& error);

constexpr size_t kNoAllowedRule = SIZE_MAX;  // Violation::rule of a message no allowed rule lets through

struct Violation {
  size_t rule = 0;  // its index in Rules::rules, or kNoAllowedRule
  index::Flow flow;
  std::string why;  // e.g. "received after 7.2ms (within 5ms)", "never received"
};

struct RuleCount {
  uint64_t checked = 0;   // messages the rule applies to (allowed: the ones it lets through)
  uint64_t violated = 0;
};

struct RuleReport {
  std::vector<RuleCount> per_rule;  // as Rules::rules
  uint64_t not_allowed = 0;         // messages no allowed rule lets through (when there is one)
  uint64_t messages = 0;            // flows read
  uint64_t violations_total = 0;
  std::vector<Violation> violations;  // the first `limit` in the time of the message's first half
  // Every message's verdict, for colouring (Verdict, keyed by flow_key()),
  // when asked for: only the messages some rule applies to.
  enum Verdict : uint8_t { Satisfied = 1, Violated = 2 };
  std::vector<std::pair<uint64_t, uint8_t>> verdicts;  // sorted by key
  uint8_t verdict(const index::Flow& f) const;  // 0: no rule applies
};

// A message's key: its id and the time of its first half (ids can repeat).
uint64_t flow_key(const index::Flow& f);

RuleReport check_rules(const index::TraceIndex& ix, const Rules& rules, size_t limit = SIZE_MAX,
                       bool verdicts = false);

}  // namespace tinescope::analysis
