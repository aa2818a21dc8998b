#include "tinescope/analysis/protocol_rules.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "tinescope/analysis/message_report.hpp"
#include "tinescope/analysis/stream_expr.hpp"
#include "first_n.hpp"

namespace tinescope::analysis {

bool Rules::has_allowed() const {
  return std::any_of(rules.begin(), rules.end(), [](const Rule& r) { return r.kind == Rule::Allowed; });
}
bool Rules::has_message_rules() const {
  return std::any_of(rules.begin(), rules.end(), [](const Rule& r) { return r.kind != Rule::Response && r.kind != Rule::Priority; });
}

// ------------------------------------------------------------------ parsing

namespace {

struct KindSyntax {
  const char* name;
  Rule::Kind kind;
  const char* keys;      // the keys it takes, space-separated
  const char* required;  // of those, the ones it needs
};
constexpr KindSyntax kKinds[] = {
    {"received", Rule::Received, "channel from within", ""},
    {"answered", Rule::Answered, "channel reply within", "channel reply"},
    {"forbidden", Rule::Forbidden, "channel from to", ""},
    {"allowed", Rule::Allowed, "channel from to", ""},
    {"response", Rule::Response, "task within", "within"},
    {"priority", Rule::Priority, "task level", "task level"},
};

bool has_word(const char* list, const std::string& w) {
  std::istringstream in(list);
  for (std::string x; in >> x;)
    if (x == w) return true;
  return false;
}

// A line's words: bare, or "quoted" (a value with spaces or '#'); the
// comment cut (`used`: where it begins). False with why on an unterminated quote.
bool split_words(std::string_view line, std::vector<std::string>& words, size_t& used, std::string& why) {
  words.clear();
  used = line.size();
  std::string cur;
  bool in_word = false, quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') quoted = false;
      else cur += c;
      continue;
    }
    if (c == '#') {
      used = i;
      break;
    }
    if (c == '"') {
      quoted = in_word = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      if (in_word) words.push_back(cur), cur.clear(), in_word = false;
      continue;
    }
    cur += c, in_word = true;
  }
  if (quoted) return why = "a quote is not closed", false;
  if (in_word) words.push_back(cur);
  return true;
}

std::string trimmed(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return std::string(s);
}

}  // namespace

bool parse_rules(std::string_view text, const std::string& file, Rules& out, std::string& error) {
  out = Rules{};
  out.file = file;
  std::vector<std::string> words;
  int line_no = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte order mark
  for (size_t at = 0; at <= text.size();) {
    const size_t nl = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, nl - at);
    at = nl + 1;
    ++line_no;
    auto bad = [&](const std::string& what) {
      error = file + ":" + std::to_string(line_no) + ": " + what;
      return false;
    };
    std::string why;
    size_t used = 0;
    if (!split_words(line, words, used, why)) return bad(why);
    if (words.empty()) continue;
    const KindSyntax* k = nullptr;
    for (const KindSyntax& s : kKinds)
      if (words[0] == s.name) k = &s;
    if (!k) return bad("'" + words[0] + "' is not a rule (received, answered, forbidden, allowed, response or priority)");
    Rule r;
    r.kind = k->kind, r.line = line_no, r.text = trimmed(line.substr(0, used));
    std::vector<std::string> seen;
    for (size_t i = 1; i < words.size(); ++i) {
      const size_t eq = words[i].find('=');
      if (eq == std::string::npos) return bad("'" + words[i] + "' is not KEY=VALUE");
      const std::string key = words[i].substr(0, eq), value = words[i].substr(eq + 1);
      if (!has_word(k->keys, key))
        return bad(std::string(k->name) + " takes no '" + key + "' (it takes: " + k->keys + ")");
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) return bad("'" + key + "' is given twice");
      seen.push_back(key);
      if (key == "within") {
        if (!parse_duration_ns(value, r.within_ns) || r.within_ns < 0)
          return bad("within=" + value + " is not a duration (e.g. 5ms, 250us)");
        continue;
      }
      if (key == "level") {
        char* end = nullptr;
        errno = 0;
        const long level = std::strtol(value.c_str(), &end, 10);
        if (value.empty() || *end || errno || level < INT32_MIN || level > INT32_MAX)
          return bad("level=" + value + " is not a whole number (higher is more urgent)");
        r.level = int32_t(level);
        continue;
      }
      if (value.empty()) return bad(key + "= is empty (leave the key out to match everything)");
      if (value.size() > 1000) return bad(key + "= is longer than 1000 characters");
      if (!valid_pattern(value, why)) return bad(key + "=" + value + ": " + why);
      (key == "channel" ? r.channel : key == "reply" ? r.reply : key == "from" ? r.from : key == "task" ? r.task : r.to) = value;
    }
    std::istringstream need(k->required);
    for (std::string key; need >> key;)
      if (std::find(seen.begin(), seen.end(), key) == seen.end()) return bad(std::string(k->name) + " needs " + key + "=");
    if (r.kind == Rule::Forbidden && r.from.empty() && r.to.empty() && r.channel.empty())
      return bad("forbidden needs from=, to= or channel= (else it forbids every message)");
    out.rules.push_back(std::move(r));
  }
  if (out.rules.empty()) return error = file + ": no rule in it", false;
  return true;
}

bool load_rules(const std::string& path, Rules& out, std::string& error) {
  if (std::error_code ec; std::filesystem::is_directory(path, ec)) return error = path + ": a directory, not a rules file", false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return error = path + ": cannot read it", false;
  std::ostringstream text;
  text << in.rdbuf();
  return parse_rules(text.str(), path, out, error);
}

// ----------------------------------------------------------------- checking

uint64_t flow_key(const index::Flow& f) {
  auto mix = [](uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h ^= h >> 31, h *= 0xBF58476D1CE4E5B9ull, h ^= h >> 29;
    return h;
  };
  // (Ids are unique within a process only: the lanes and channel too.)
  return mix(mix(mix(mix(mix(0, f.id), f.first_half()), f.channel), f.src), uint64_t(f.dst) << 32 | f.flags);
}

uint8_t RuleReport::verdict(const index::Flow& f) const {
  const uint64_t k = flow_key(f);
  auto it = std::lower_bound(verdicts.begin(), verdicts.end(), std::pair<uint64_t, uint8_t>(k, 0));
  return it != verdicts.end() && it->first == k ? it->second : 0;
}

namespace {

struct RuleState {
  LaneMatcher from, to;
  ChannelMatcher channel, reply;
  // answered: per lane, its receives on the channel and its sends on the reply channel.
  std::unordered_map<uint32_t, std::vector<index::Flow>> receives;
  std::unordered_map<uint32_t, std::vector<uint64_t>> sends;
};

// Keeps the `limit` first violations in time (a vector trimmed as it grows).
struct ByFirstHalf {
  bool operator()(const Violation& a, const Violation& b) const { return a.flow.first_half() < b.flow.first_half(); }
};
using FirstViolations = FirstN<Violation, ByFirstHalf>;

}  // namespace

RuleReport check_rules(const index::TraceIndex& ix, const Rules& rules, size_t limit, bool want_verdicts) {
  RuleReport rep;
  rep.per_rule.resize(rules.rules.size());
  const auto catalog = ix.catalog_snapshot();
  const auto labels = catalog->thread_labels();
  auto label = [&](uint32_t feedlet) {
    auto l = labels.find(feedlet);
    return l == labels.end() ? "lane " + std::to_string(feedlet) : l->second;
  };
  std::vector<RuleState> st;
  st.reserve(rules.rules.size());
  for (const Rule& r : rules.rules)
    st.push_back(RuleState{LaneMatcher(ix, r.from), LaneMatcher(ix, r.to), ChannelMatcher(ix, r.channel),
                           ChannelMatcher(ix, r.reply), {}, {}});
  const bool allowed_rules = rules.has_allowed();
  std::unordered_map<uint64_t, uint8_t> verdicts;
  auto mark = [&](const index::Flow& f, uint8_t v) {
    if (want_verdicts) verdicts[flow_key(f)] |= v;
  };
  FirstViolations found{limit, {}};
  auto violate = [&](size_t rule, const index::Flow& f, std::string why) {
    if (rule != kNoAllowedRule) ++rep.per_rule[rule].violated;
    ++rep.violations_total;
    mark(f, RuleReport::Violated);
    found.add(Violation{rule, f, std::move(why)});
  };
  auto took = [&](int64_t ns, int64_t within) {
    return readable_duration(ns) + " (within " + readable_duration(within) + ")";
  };

  for_each_flow(ix, ix.first_ts(), ix.last_ts(), [&](const index::Flow& f) {
    ++rep.messages;
    const bool sent = f.flags & index::kFlowSent, received = f.flags & index::kFlowReceived;
    bool allowed = false;
    for (size_t i = 0; i < rules.rules.size(); ++i) {
      const Rule& r = rules.rules[i];
      RuleState& s = st[i];
      switch (r.kind) {
        case Rule::Received: {
          if (!sent || !s.channel.matches(f.channel) || !s.from.matches(f.src)) break;
          ++rep.per_rule[i].checked;
          const int64_t ns = received ? ix.to_ns(f.recv_ts) - ix.to_ns(f.send_ts) : 0;
          if (!received) violate(i, f, "never received");
          else if (r.within_ns >= 0 && ns > r.within_ns) violate(i, f, "received after " + took(ns, r.within_ns));
          else mark(f, RuleReport::Satisfied);
          break;
        }
        case Rule::Answered:
          if (received && s.channel.matches(f.channel)) s.receives[f.dst].push_back(f);
          if (sent && s.reply.matches(f.channel)) s.sends[f.src].push_back(f.send_ts);
          break;
        case Rule::Forbidden:
          if (!f.matched() || !s.channel.matches(f.channel) || !s.from.matches(f.src) || !s.to.matches(f.dst)) break;
          ++rep.per_rule[i].checked;
          violate(i, f, "from " + label(f.src) + " to " + label(f.dst) + " on " + catalog->channel_label(f.channel));
          break;
        case Rule::Response:
        case Rule::Priority: break;  // jobs, not messages: check_schedule()
        case Rule::Allowed:
          if (!f.matched() || !s.channel.matches(f.channel) || !s.from.matches(f.src) || !s.to.matches(f.dst)) break;
          ++rep.per_rule[i].checked;
          allowed = true;
          break;
      }
    }
    if (allowed_rules && f.matched()) {
      if (allowed) {
        mark(f, RuleReport::Satisfied);
      } else {
        ++rep.not_allowed;
        violate(kNoAllowedRule, f,
                "no allowed rule lets " + label(f.src) + " send to " + label(f.dst) + " on " +
                    catalog->channel_label(f.channel));
      }
    }
  });

  // answered: a lane handles its requests one after another; a receive on
  // the channel is answered by the lane's first send on the reply channel
  // at or after it and up to the lane's next receive on the channel
  // (receives at one tick in the order of their ids; a reply at the tick of
  // the next receive answers the one before: coarse clocks tie). A request
  // never answered leaves the next one's answer to it.
  for (size_t i = 0; i < rules.rules.size(); ++i) {
    if (rules.rules[i].kind != Rule::Answered) continue;
    const Rule& r = rules.rules[i];
    for (auto& [lane, recvs] : st[i].receives) {
      std::sort(recvs.begin(), recvs.end(),
                [](const index::Flow& a, const index::Flow& b) { return std::tie(a.recv_ts, a.id) < std::tie(b.recv_ts, b.id); });
      std::vector<uint64_t>& sends = st[i].sends[lane];
      std::sort(sends.begin(), sends.end());
      size_t j = 0;
      for (size_t k = 0; k < recvs.size(); ++k) {
        const index::Flow& f = recvs[k];
        ++rep.per_rule[i].checked;
        while (j < sends.size() && sends[j] < f.recv_ts) ++j;
        if (j == sends.size() || (k + 1 < recvs.size() && sends[j] > recvs[k + 1].recv_ts)) {
          violate(i, f, "never answered on " + r.reply + " by " + label(lane) + " before its next request");
          continue;
        }
        const int64_t ns = ix.to_ns(sends[j++]) - ix.to_ns(f.recv_ts);
        if (r.within_ns >= 0 && ns > r.within_ns) violate(i, f, "answered after " + took(ns, r.within_ns));
        else mark(f, RuleReport::Satisfied);
      }
    }
  }
  found.trim();
  rep.violations = std::move(found.list);
  if (want_verdicts) {
    rep.verdicts.reserve(verdicts.size());
    for (auto [k, v] : verdicts) rep.verdicts.emplace_back(k, (v & RuleReport::Violated) ? uint8_t(RuleReport::Violated) : v);
    std::sort(rep.verdicts.begin(), rep.verdicts.end());
  }
  return rep;
}

}  // namespace tinescope::analysis
