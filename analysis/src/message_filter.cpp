#include "tinescope/analysis/message_filter.hpp"

#include <cmath>
#include <cstdlib>

namespace tinescope::analysis {

bool parse_message_filter(const std::string& text, MessageFilter& out, std::string& error) {
  out = MessageFilter{};
  // Words: bare, or with a "quoted" value.
  std::vector<std::string> words;
  std::string cur;
  bool quoted = false, in_word = false;
  for (char c : text) {
    if (c == '"') {
      quoted = !quoted, in_word = true;
      continue;
    }
    if (!quoted && (c == ' ' || c == '\t')) {
      if (in_word) words.push_back(cur), cur.clear(), in_word = false;
      continue;
    }
    cur += c, in_word = true;
  }
  if (quoted) return error = "a quote is not closed: " + text, false;
  if (in_word) words.push_back(cur);
  for (const std::string& w : words) {
    if (w == "orphans") {
      out.orphans = true;
      continue;
    }
    if (w == "rest=grey" || w == "rest=hide") {
      out.grey_rest = w == "rest=grey";
      continue;
    }
    const size_t op_at = w.find_first_of("=<>");
    if (op_at == std::string::npos || op_at == 0)
      return error = "'" + w + "' is not KEY=VALUE, size>=N, latency>D or orphans", false;
    const std::string key = w.substr(0, op_at);
    std::string op(1, w[op_at]);
    if (op_at + 1 < w.size() && w[op_at + 1] == '=' && op != "=") op += '=';
    const std::string value = w.substr(op_at + op.size());
    if (value.empty()) return error = "'" + w + "' has no value", false;
    if (key == "rest") return error = "rest= is grey or hide, not '" + value + "'", false;
    if (key == "channel" || key == "from" || key == "to" || key == "lanes") {
      if (op != "=") return error = key + " takes =, not " + op, false;
      if (value[0] == '=' || value[0] == '<' || value[0] == '>') return error = "'" + w + "': one = between key and value", false;
      std::string& slot = key == "channel" ? out.channel : key == "from" ? out.from : key == "to" ? out.to : out.lanes;
      if (!slot.empty()) return error = "'" + key + "' is given twice", false;
      if (value.size() > 1000) return error = key + "= is longer than 1000 characters", false;
      std::string why;
      if (!valid_pattern(value, why)) return error = key + "=" + value + ": " + why, false;
      slot = value;
      continue;
    }
    if (key != "size" && key != "latency")
      return error = "'" + key + "' is not channel, from, to, lanes, size, latency or rest", false;
    double v = 0;  // (a fraction of a nanosecond is kept: the bounds round the right way)
    if (key == "size") {
      if (value.find_first_not_of("0123456789") != std::string::npos || value.size() > 18)
        return error = "size" + op + value + ": not a number of bytes", false;
      v = double(std::stoll(value));
    } else if (!parse_duration(value, v) || !std::isfinite(v) || std::abs(v) > 9e18) {
      return error = "latency" + op + value + ": not a duration (e.g. 2ms, 150us)", false;
    }
    // Both kept as closed ranges [min, max] of whole units.
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    if (op == "=") {
      lo = int64_t(std::ceil(v)), hi = int64_t(std::floor(v));  // (a fraction: empty)
    } else if (op == ">=") {
      lo = int64_t(std::ceil(v));
    } else if (op == ">") {
      lo = int64_t(std::floor(v)) + 1;
    } else if (op == "<=") {
      hi = int64_t(std::floor(v));
    } else {
      hi = int64_t(std::ceil(v)) - 1;
    }
    if (key == "size") {
      out.size_min = std::max<uint64_t>(out.size_min, uint64_t(std::max<int64_t>(lo, 0)));
      if (hi < 0) out.size_max = 0, out.size_min = 1;  // (nothing passes)
      else out.size_max = std::min<uint64_t>(out.size_max, uint64_t(hi));
    } else {
      out.latency_min = std::max(out.latency_min, lo), out.latency_max = std::min(out.latency_max, hi);
    }
  }
  out.text = text;
  if (words.empty()) out.text.clear();
  return true;
}

MessageMatcher::MessageMatcher(const index::TraceIndex& ix, const MessageFilter& f)
    : ix_(ix), filter_(f), channel_(ix, f.channel), from_(ix, f.from), to_(ix, f.to), lanes_(ix, f.lanes) {}

bool MessageMatcher::matches(const index::Flow& f) {
  if (filter_.any()) return true;
  const bool sent = f.flags & index::kFlowSent, received = f.flags & index::kFlowReceived;
  if (f.size < filter_.size_min || f.size > filter_.size_max) return false;
  if (!channel_.matches(f.channel)) return false;
  // A lane test needs its half: a message never received has no receiver.
  if (!from_.any() && (!sent || !from_.matches(f.src))) return false;
  if (!to_.any() && (!received || !to_.matches(f.dst))) return false;
  if (!lanes_.any() && !((sent && lanes_.matches(f.src)) || (received && lanes_.matches(f.dst)))) return false;
  if (filter_.orphans && f.matched()) return false;
  if (filter_.latency_min != INT64_MIN || filter_.latency_max != INT64_MAX) {
    if (!f.matched()) return false;
    const int64_t ns = ix_.to_ns(f.recv_ts) - ix_.to_ns(f.send_ts);
    if (ns < filter_.latency_min || ns > filter_.latency_max) return false;
  }
  return true;
}

}  // namespace tinescope::analysis
