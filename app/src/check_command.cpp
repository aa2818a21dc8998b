// tinescope check TRACE --rules FILE [--limit N] [--json]
// The trace's messages against protocol rules (docs/ANALYSIS.md "Protocol
// rules"): each rule's count, then each violation. Exits 1 when a message
// violates a rule, 0 when none does, 2 on an error: a CI step.
#include <cstdio>

#include "commands.hpp"
#include "tinescope/analysis/protocol_rules.hpp"
#include "tinescope/analysis/stream_expr.hpp"

namespace tinescope::app {

void add_check_command(CLI::App& app, int* exit_code) {
  static std::string trace, rules_file;
  static size_t limit = 100;
  static bool as_json = false;
  auto* cmd = app.add_subcommand("check", "the trace's messages against protocol rules; exit 1 on a violation");
  cmd->add_option("trace", trace, "trace file")->required();
  cmd->add_option("--rules", rules_file, "the rules file (docs/ANALYSIS.md, \"Protocol rules\")")->required();
  cmd->add_option("--limit", limit, "at most this many violations listed (all are counted)");
  cmd->add_flag("--json", as_json, "JSON instead of text");
  cmd->callback([=] {
    auto fail = [&](const std::string& what) {
      std::fprintf(stderr, "tinescope: %s\n", what.c_str());
      *exit_code = 2;
    };
    analysis::Rules rules;
    std::string error;
    if (!analysis::load_rules(rules_file, rules, error)) return fail(error);
    auto ix = open_index(trace, true);
    if (!ix) return fail("cannot open " + trace);
    const analysis::RuleReport r = analysis::check_rules(*ix, rules, limit);
    const auto catalog = ix->catalog_snapshot();
    const auto labels = catalog->thread_labels();
    auto lane = [&](uint32_t feedlet) {
      auto l = labels.find(feedlet);
      return l == labels.end() ? "lane " + std::to_string(feedlet) : l->second;
    };
    const int64_t origin = ix->to_ns(ix->first_ts());
    auto where = [&](size_t rule) {
      return rule == analysis::kNoAllowedRule ? rules.file + ": no allowed rule"
                                               : rules.file + ":" + std::to_string(rules.rules[rule].line);
    };
    if (as_json) {
      nlohmann::json j{{"trace", trace}, {"rules", rules.file}, {"messages", r.messages},
                       {"violations_total", r.violations_total}};
      nlohmann::json& per = j["per_rule"] = nlohmann::json::array();
      for (size_t i = 0; i < rules.rules.size(); ++i)
        per.push_back({{"line", rules.rules[i].line}, {"rule", rules.rules[i].text},
                       {"checked", r.per_rule[i].checked}, {"violated", r.per_rule[i].violated}});
      if (rules.has_allowed()) j["not_allowed"] = r.not_allowed;
      nlohmann::json& list = j["violations"] = nlohmann::json::array();
      for (const analysis::Violation& v : r.violations) {
        const index::Flow& f = v.flow;
        nlohmann::json m{{"rule", where(v.rule)}, {"id", f.id}, {"channel", f.channel},
                         {"channel_name", catalog->channel_name(f.channel)}, {"why", v.why}};
        if (f.flags & index::kFlowSent) m["from"] = lane(f.src), m["send_ns"] = ix->to_ns(f.send_ts) - origin;
        if (f.flags & index::kFlowReceived) m["to"] = lane(f.dst), m["receive_ns"] = ix->to_ns(f.recv_ts) - origin;
        list.push_back(m);
      }
      std::printf("%s\n", j.dump(1).c_str());
    } else {
      for (size_t i = 0; i < rules.rules.size(); ++i)
        std::printf("%s  %s: %llu messages, %llu violate it%s\n", where(i).c_str(), rules.rules[i].text.c_str(),
                    (unsigned long long)r.per_rule[i].checked, (unsigned long long)r.per_rule[i].violated,
                    r.per_rule[i].checked ? "" : "  (it applies to no message: are its lanes and channels right?)");
      if (rules.has_allowed())
        std::printf("%s: %llu messages no allowed rule lets through\n", rules.file.c_str(),
                    (unsigned long long)r.not_allowed);
      if (!r.violations.empty())
        std::printf("violations (the first %zu of %llu, in time):\n", r.violations.size(),
                    (unsigned long long)r.violations_total);
      for (const analysis::Violation& v : r.violations) {
        const index::Flow& f = v.flow;
        const bool sent = f.flags & index::kFlowSent;
        std::string path = sent ? lane(f.src) : "?";
        path += " -> ";
        path += (f.flags & index::kFlowReceived) ? lane(f.dst) : "?";
        const int64_t at = ix->to_ns(sent ? f.send_ts : f.recv_ts) - origin;
        std::printf("  %s  message %llu on %s, %s, %s at %.6fs: %s\n", where(v.rule).c_str(), (unsigned long long)f.id,
                    catalog->channel_label(f.channel).c_str(), path.c_str(), sent ? "sent" : "received",
                    double(at) / 1e9, v.why.c_str());
      }
      std::printf("%s: %llu violations in %llu messages\n", r.violations_total ? "FAILED" : "passed",
                  (unsigned long long)r.violations_total, (unsigned long long)r.messages);
    }
    *exit_code = r.violations_total ? 1 : 0;
  });
}

}  // namespace tinescope::app
