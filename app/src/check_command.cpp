// tinescope check TRACE [--rules FILE] [--limit N] [--json]
// The trace's jobs and locks (docs/ANALYSIS.md "Scheduling checks": every
// deadline, lock misuse, priority inversions, servers' budgets, the rules
// file's response bounds and priorities) and its
// messages against the rules file's protocol rules ("Protocol rules"):
// each rule's count, then each violation. Exits 1 on a violation, 0 when
// there is none, 2 on an error: a CI step.
#include <cstdio>

#include "commands.hpp"
#include "tinescope/analysis/protocol_rules.hpp"
#include "tinescope/analysis/sched_check.hpp"
#include "tinescope/analysis/stream_expr.hpp"

namespace tinescope::app {

void add_check_command(CLI::App& app, int* exit_code) {
  static std::string trace, rules_file;
  static size_t limit = 100;
  static bool as_json = false;
  auto* cmd = app.add_subcommand(
      "check",
      "deadlines, lock use, priority inversions, budgets, response bounds and protocol rules of a trace; exit 1 on a "
      "violation");
  cmd->add_option("trace", trace, "trace file")->required();
  cmd->add_option("--rules", rules_file,
                  "a rules file: protocol rules, response bounds and task priorities (docs/ANALYSIS.md)");
  cmd->add_option("--limit", limit, "at most this many violations listed (all are counted)");
  cmd->add_flag("--json", as_json, "JSON instead of text");
  cmd->callback([=] {
    auto fail = [&](const std::string& what) {
      std::fprintf(stderr, "tinescope: %s\n", what.c_str());
      *exit_code = 2;
    };
    analysis::Rules rules;
    std::string error;
    if (!rules_file.empty() && !analysis::load_rules(rules_file, rules, error)) return fail(error);
    auto ix = open_index(trace, true);
    if (!ix) return fail("cannot open " + trace);
    const bool message_rules = rules.has_message_rules();
    analysis::RuleReport r;
    if (message_rules) r = analysis::check_rules(*ix, rules, limit);
    r.per_rule.resize(rules.rules.size());
    const analysis::SchedReport sr = analysis::check_schedule(*ix, rules_file.empty() ? nullptr : &rules, limit);
    const uint64_t total = r.violations_total + sr.total;
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
    auto count_of = [&](size_t i) {
      return rules.rules[i].kind == analysis::Rule::Response || rules.rules[i].kind == analysis::Rule::Priority
                 ? sr.per_rule[i]
                 : r.per_rule[i];
    };
    if (as_json) {
      nlohmann::json j{{"trace", trace}, {"violations_total", total}};
      if (!rules_file.empty()) j["rules"] = rules.file;
      nlohmann::json& per = j["per_rule"] = nlohmann::json::array();
      for (size_t i = 0; i < rules.rules.size(); ++i)
        per.push_back({{"line", rules.rules[i].line}, {"rule", rules.rules[i].text},
                       {"checked", count_of(i).checked}, {"violated", count_of(i).violated}});
      if (message_rules) j["messages"] = r.messages;
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
      nlohmann::json& sched = j["schedule"];
      sched = {{"jobs", sr.jobs}, {"with_deadline", sr.with_deadline}, {"locks", sr.locks},
               {"lock_events", sr.lock_events}, {"violations_total", sr.total},
               {"prioritised_tasks", sr.prioritised_tasks}, {"lock_waits", sr.lock_waits},
               {"budget_samples", sr.budget_samples}};
      for (int k = 0; k < analysis::SchedViolation::kKinds; ++k)
        sched["per_kind"][analysis::kind_name(analysis::SchedViolation::Kind(k))] = sr.per_kind[k];
      const analysis::JobCounts& c = sr.counts;
      sched["not_fitting"] = {{"no_arrival", c.no_arrival}, {"arrived_again", c.arrived_again},
                              {"start_while_running", c.start_while_running}, {"cpu_taken", c.cpu_taken},
                              {"end_not_running", c.end_not_running}, {"after_completion", c.after_completion},
                              {"unreadable", c.unreadable}};
      nlohmann::json& sl = sched["violations"] = nlohmann::json::array();
      for (const analysis::SchedViolation& v : sr.violations) {
        nlohmann::json m{{"kind", analysis::kind_name(v.kind)}, {"at_ns", ix->to_ns(v.ts) - origin},
                         {"end_ns", ix->to_ns(v.end) - origin}, {"by_ns", v.by_ns}, {"why", v.why}};
        const bool of_lock = v.kind == analysis::SchedViolation::LockTaken ||
                             v.kind == analysis::SchedViolation::ReleaseNotHeld ||
                             v.kind == analysis::SchedViolation::PriorityInversion;
        if (of_lock) m["lock"] = catalog->string(v.lock), m["lock_id"] = v.lock_id, m["thread"] = lane(v.feedlet);
        if (v.kind == analysis::SchedViolation::PriorityInversion) {
          if (v.task) m["task"] = catalog->string(v.task);
          if (v.holder) m["holder"] = catalog->string(v.holder);
          if (v.middle) m["middle"] = catalog->string(v.middle);
        } else if (v.kind == analysis::SchedViolation::BudgetOverrun) {
          m["lane"] = lane(v.feedlet);
        } else if (!of_lock) {
          m["task"] = catalog->string(v.task), m["job"] = v.job;
          if (v.cpu != analysis::kNoCpu) m["cpu"] = v.cpu;
          if (v.rule != SIZE_MAX) m["rule"] = where(v.rule);
        }
        sl.push_back(m);
      }
      std::printf("%s\n", j.dump(1).c_str());
    } else {
      for (size_t i = 0; i < rules.rules.size(); ++i) {
        if (rules.rules[i].kind == analysis::Rule::Priority) {
          std::printf("%s  %s: gives %llu tasks their level%s\n", where(i).c_str(), rules.rules[i].text.c_str(),
                      (unsigned long long)count_of(i).checked,
                      count_of(i).checked ? "" : "  (it applies to no task the trace has no level for: is its task right?)");
          continue;
        }
        const bool jobs = rules.rules[i].kind == analysis::Rule::Response;
        std::printf("%s  %s: %llu %s, %llu violate it%s\n", where(i).c_str(), rules.rules[i].text.c_str(),
                    (unsigned long long)count_of(i).checked, jobs ? "jobs" : "messages",
                    (unsigned long long)count_of(i).violated,
                    count_of(i).checked ? ""
                    : jobs              ? "  (it applies to no job: is its task right?)"
                                        : "  (it applies to no message: are its lanes and channels right?)");
      }
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
      if (sr.jobs || sr.lock_events) {
        std::printf("schedule: %llu jobs (%llu with a deadline), %llu locks (%llu acquires and releases)\n",
                    (unsigned long long)sr.jobs, (unsigned long long)sr.with_deadline, (unsigned long long)sr.locks,
                    (unsigned long long)sr.lock_events);
        if (sr.prioritised_tasks)
          std::printf("  priority inversions looked for in %llu lock waits, %llu tasks with a priority\n",
                      (unsigned long long)sr.lock_waits, (unsigned long long)sr.prioritised_tasks);
        else if (sr.jobs && sr.lock_events)
          std::printf("  priority inversions not looked for: no task has a priority (ts_task_priority, the kernel's "
                      "switches, or a rules file's `priority task=T level=N`)\n");
        for (int k = 0; k < analysis::SchedViolation::kKinds; ++k)
          if (sr.per_kind[k])
            std::printf("  %s: %llu\n", analysis::kind_name(analysis::SchedViolation::Kind(k)),
                        (unsigned long long)sr.per_kind[k]);
        if (!sr.violations.empty())
          std::printf("violations (the first %zu of %llu, in time):\n", sr.violations.size(), (unsigned long long)sr.total);
        for (const analysis::SchedViolation& v : sr.violations)
          std::printf("  %.6fs  %s: %s%s%s\n", double(ix->to_ns(v.ts) - origin) / 1e9, analysis::kind_name(v.kind),
                      analysis::subject(v, *catalog).c_str(), v.why.empty() ? "" : ", ", v.why.c_str());
      }
      std::printf("%s: %llu violations in %llu messages and %llu jobs\n", total ? "FAILED" : "passed",
                  (unsigned long long)total, (unsigned long long)r.messages, (unsigned long long)sr.jobs);
    }
    *exit_code = total ? 1 : 0;
  });
}

}  // namespace tinescope::app
