// Protocol rules (issue 52, MPROV's conformance checking): the rules file's
// syntax and its errors, check_rules against a brute-force reading of the
// flow table for many random rules on the queue workload, and `tinescope
// check --rules` exiting 1 on a violation and 0 without.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "tinescope/analysis/protocol_rules.hpp"
#include "tinescope/analysis/stream_expr.hpp"
#include "tinescope/index/trace_index.hpp"
#include "tinescope/render/figure_params.hpp"
#include "tinescope/render/picture.hpp"
#include "tinescope/render/scene.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

using analysis::Rule;
using nlohmann::json;

TEST(ProtocolRules, TheFileReadsAsWrittenAndEveryMistakeIsNamedWithItsLine) {
  analysis::Rules r;
  std::string error;
  ASSERT_TRUE(analysis::parse_rules("# the protocol\n"
                                    "\n"
                                    "received channel=req within=5ms   # handled soon\n"
                                    "answered channel=req reply=\"resp #1\" within=250us\n"
                                    "  forbidden from=\"producer *\" to=/q\\.1[0-9]/\n"
                                    "allowed channel=7\n",
                                    "p.rules", r, error))
      << error;
  ASSERT_EQ(r.rules.size(), 4u);
  EXPECT_EQ(r.rules[0].kind, Rule::Received);
  EXPECT_EQ(r.rules[0].line, 3);
  EXPECT_EQ(r.rules[0].text, "received channel=req within=5ms");
  EXPECT_EQ(r.rules[0].within_ns, 5'000'000);
  EXPECT_EQ(r.rules[1].kind, Rule::Answered);
  EXPECT_EQ(r.rules[1].reply, "resp #1");
  EXPECT_EQ(r.rules[1].within_ns, 250'000);
  EXPECT_EQ(r.rules[2].kind, Rule::Forbidden);
  EXPECT_EQ(r.rules[2].from, "producer *");
  EXPECT_EQ(r.rules[2].to, "/q\\.1[0-9]/");
  EXPECT_EQ(r.rules[2].within_ns, -1);
  EXPECT_EQ(r.rules[3].kind, Rule::Allowed);
  EXPECT_EQ(r.rules[3].channel, "7");
  EXPECT_TRUE(r.has_allowed());

  const std::pair<const char*, const char*> bad[] = {
      {"recieved channel=a\n", "f:1: 'recieved' is not a rule"},
      {"received\nreceived chanel=a\n", "f:2: received takes no 'chanel'"},
      {"answered channel=a\n", "f:1: answered needs reply="},
      {"received within=5 parsecs\n", "f:1: 'parsecs' is not KEY=VALUE"},
      {"received within=soon\n", "f:1: within=soon is not a duration"},
      {"received channel=\"a\n", "f:1: a quote is not closed"},
      {"received channel=/(/\n", "f:1: channel=/(/:"},
      {"received channel=a channel=b\n", "f:1: 'channel' is given twice"},
      {"forbidden\n", "f:1: forbidden needs from=, to= or channel="},
      {"# nothing\n\n", "f: no rule in it"},
      {"answered channel=\"\" reply=b\n", "f:1: channel= is empty"},
  };
  for (auto [text, want] : bad) {
    EXPECT_FALSE(analysis::parse_rules(text, "f", r, error)) << text;
    EXPECT_EQ(error.rfind(want, 0), 0u) << text << " -> " << error;
  }
  EXPECT_TRUE(analysis::parse_rules("\xEF\xBB\xBFreceived channel=a\n", "bom", r, error)) << error;
  EXPECT_FALSE(analysis::load_rules("/tmp", r, error));
  EXPECT_NE(error.find("a directory"), std::string::npos) << error;
  EXPECT_FALSE(analysis::load_rules("/nonexistent/p.rules", r, error));
  EXPECT_NE(error.find("/nonexistent/p.rules: cannot read it"), std::string::npos);
}

// The brute force: every rule read straight off the flow table.
struct Want {
  std::vector<analysis::RuleCount> per_rule;
  std::set<std::pair<size_t, uint64_t>> violations;  // (rule, flow key)
  std::set<uint64_t> satisfied;                      // flow keys some rule passes and none violates
  uint64_t not_allowed = 0;
};

Want brute_force(const index::TraceIndex& ix, const analysis::Rules& rules) {
  const auto catalog = ix.catalog_snapshot();
  const auto labels = catalog->thread_labels();
  std::map<std::pair<std::string, uint64_t>, bool> lanes_seen, channels_seen;  // (a regex compiles once)
  auto lane_is = [&](const std::string& pattern, uint32_t f) {
    auto [it, fresh] = lanes_seen.try_emplace({pattern, f}, false);
    if (fresh) {
      const analysis::NameMatcher m(pattern);
      const auto info = catalog->feedlets.find(f);  // the label, or the thread's own name
      it->second = pattern.empty() || (labels.count(f) && m.matches(labels.at(f))) ||
                   (info != catalog->feedlets.end() && !info->second.name.empty() && m.matches(info->second.name));
    }
    return it->second;
  };
  auto channel_is = [&](const std::string& pattern, uint64_t c) {
    auto [it, fresh] = channels_seen.try_emplace({pattern, c}, false);
    if (fresh) {
      const analysis::NameMatcher m(pattern);
      const std::string name = catalog->channel_name(c);
      it->second = pattern.empty() || m.matches(std::to_string(c)) || (!name.empty() && m.matches(name));
    }
    return it->second;
  };
  const std::vector<index::Flow> flows = ix.flows(0, UINT64_MAX);
  Want w;
  w.per_rule.resize(rules.rules.size());
  std::set<uint64_t> passed;
  auto violate = [&](size_t i, const index::Flow& f) {
    if (i != analysis::kNoAllowedRule) ++w.per_rule[i].violated;
    w.violations.insert({i, analysis::flow_key(f)});
  };
  for (size_t i = 0; i < rules.rules.size(); ++i) {
    const Rule& r = rules.rules[i];
    if (r.kind == Rule::Answered) {
      // Each receive is answered by the earliest send of its lane on the
      // reply channel from it up to that lane's next receive on the
      // channel, in (time, id) order.
      std::vector<index::Flow> recvs;
      for (const index::Flow& f : flows)
        if ((f.flags & index::kFlowReceived) && channel_is(r.channel, f.channel)) recvs.push_back(f);
      std::sort(recvs.begin(), recvs.end(), [](auto& a, auto& b) { return std::tie(a.recv_ts, a.id) < std::tie(b.recv_ts, b.id); });
      std::vector<size_t> replies;  // the sends on the reply channel
      for (size_t k = 0; k < flows.size(); ++k)
        if ((flows[k].flags & index::kFlowSent) && channel_is(r.reply, flows[k].channel)) replies.push_back(k);
      for (size_t n = 0; n < recvs.size(); ++n) {
        const index::Flow& q = recvs[n];
        ++w.per_rule[i].checked;
        uint64_t until = UINT64_MAX;  // the lane's next receive
        for (size_t m = n + 1; m < recvs.size() && until == UINT64_MAX; ++m)
          if (recvs[m].dst == q.dst) until = recvs[m].recv_ts;
        size_t best = SIZE_MAX;
        for (size_t k : replies) {
          const index::Flow& s = flows[k];
          if (s.src != q.dst || s.send_ts < q.recv_ts || s.send_ts > until) continue;
          if (best == SIZE_MAX || s.send_ts < flows[best].send_ts) best = k;
        }
        if (best == SIZE_MAX) {
          violate(i, q);
          continue;
        }
        const int64_t ns = ix.to_ns(flows[best].send_ts) - ix.to_ns(q.recv_ts);
        if (r.within_ns >= 0 && ns > r.within_ns) violate(i, q);
        else passed.insert(analysis::flow_key(q));
      }
      continue;
    }
    for (const index::Flow& f : flows) {
      const bool sent = f.flags & index::kFlowSent, received = f.flags & index::kFlowReceived;
      if (r.kind == Rule::Received) {
        if (!sent || !channel_is(r.channel, f.channel) || !lane_is(r.from, f.src)) continue;
        ++w.per_rule[i].checked;
        if (!received || (r.within_ns >= 0 && ix.to_ns(f.recv_ts) - ix.to_ns(f.send_ts) > r.within_ns)) violate(i, f);
        else passed.insert(analysis::flow_key(f));
      } else if (f.matched() && channel_is(r.channel, f.channel) && lane_is(r.from, f.src) && lane_is(r.to, f.dst)) {
        ++w.per_rule[i].checked;
        if (r.kind == Rule::Forbidden) violate(i, f);
      }
    }
  }
  if (rules.has_allowed())
    for (const index::Flow& f : flows) {
      if (!f.matched()) continue;
      bool ok = false;
      for (const Rule& r : rules.rules)
        ok |= r.kind == Rule::Allowed && channel_is(r.channel, f.channel) && lane_is(r.from, f.src) && lane_is(r.to, f.dst);
      if (ok) passed.insert(analysis::flow_key(f));
      else ++w.not_allowed, violate(analysis::kNoAllowedRule, f);
    }
  std::set<uint64_t> bad;
  for (auto [rule, key] : w.violations) bad.insert(key);
  for (uint64_t k : passed)
    if (!bad.count(k)) w.satisfied.insert(k);
  return w;
}

TEST(ProtocolRules, EveryRuleCountsAndFlagsWhatTheFlowTableSays) {
  const std::string path = record_queues("rules", "--queues 12 --producers 3 --duration 0.3");
  ASSERT_FALSE(path.empty());
  std::string error;
  auto ix = index::TraceIndex::open(path, error);
  ASSERT_TRUE(ix) << error;
  ASSERT_GT(ix->flows(0, UINT64_MAX).size(), 1000u);
  const char* channels[] = {"", "q.0*", "q.1?", "/q\\.(03|07|11)/", "5", "q.13"};
  const char* lanes[] = {"", "producer*", "q.0*", "/q\\.1[01]/", "nobody"};
  const int64_t withins[] = {-1, 50'000, 1'000'000, 5'000'000};
  std::mt19937_64 rng(test_seed(5252));
  auto pick = [&](const auto& list) { return std::string(list[rng() % std::size(list)]); };
  uint64_t violations_seen = 0, satisfied_seen = 0;
  for (int round = 0; round < 40; ++round) {
    analysis::Rules rules;
    rules.file = "random";
    const int n = 1 + int(rng() % 4);
    for (int k = 0; k < n; ++k) {
      Rule r;
      r.kind = Rule::Kind(rng() % 4);
      r.line = k + 1;
      r.channel = pick(channels);
      if (r.kind == Rule::Answered) {
        r.channel = pick(channels), r.reply = pick(channels);
        if (r.reply.empty()) r.reply = "*";
      }
      if (r.kind != Rule::Answered) r.from = pick(lanes);
      if (r.kind == Rule::Forbidden || r.kind == Rule::Allowed) r.to = pick(lanes);
      if (r.kind == Rule::Received || r.kind == Rule::Answered) r.within_ns = withins[rng() % std::size(withins)];
      rules.rules.push_back(r);
    }
    const Want want = brute_force(*ix, rules);
    const analysis::RuleReport got = analysis::check_rules(*ix, rules, SIZE_MAX, true);
    ASSERT_EQ(got.per_rule.size(), rules.rules.size());
    for (size_t i = 0; i < rules.rules.size(); ++i) {
      EXPECT_EQ(got.per_rule[i].checked, want.per_rule[i].checked) << "round " << round << " rule " << i;
      EXPECT_EQ(got.per_rule[i].violated, want.per_rule[i].violated) << "round " << round << " rule " << i;
    }
    EXPECT_EQ(got.not_allowed, want.not_allowed) << round;
    EXPECT_EQ(got.violations_total, want.violations.size()) << round;
    std::set<std::pair<size_t, uint64_t>> listed;
    for (const analysis::Violation& v : got.violations) listed.insert({v.rule, analysis::flow_key(v.flow)});
    EXPECT_EQ(listed, want.violations) << round;
    for (size_t i = 1; i < got.violations.size(); ++i)
      EXPECT_LE(got.violations[i - 1].flow.first_half(), got.violations[i].flow.first_half());
    // Verdicts: violated where any rule is, satisfied where one passes and none is.
    std::set<uint64_t> got_satisfied, got_violated, want_violated;
    for (auto [key, v] : got.verdicts) (v == analysis::RuleReport::Satisfied ? got_satisfied : got_violated).insert(key);
    for (auto [rule, key] : want.violations) want_violated.insert(key);
    EXPECT_EQ(got_satisfied, want.satisfied) << round;
    EXPECT_EQ(got_violated, want_violated) << round;
    const size_t satisfied = got_satisfied.size();
    // A limit keeps the first in time.
    const analysis::RuleReport few = analysis::check_rules(*ix, rules, 3);
    EXPECT_EQ(few.violations_total, got.violations_total);
    ASSERT_EQ(few.violations.size(), std::min<size_t>(3, got.violations.size()));
    for (size_t i = 0; i < few.violations.size(); ++i)
      EXPECT_EQ(few.violations[i].flow.first_half(), got.violations[i].flow.first_half());
    violations_seen += got.violations_total, satisfied_seen += satisfied;
  }
  EXPECT_GT(violations_seen, 100u);
  EXPECT_GT(satisfied_seen, 100u);
}

TEST(ProtocolRules, CheckExitsOneOnAViolationAndZeroWithout) {
  const std::string dir = scratch_dir();
  const std::string path = record_queues("check", "--queues 12 --producers 2 --duration 0.2");
  ASSERT_FALSE(path.empty());
  const std::string cli = bin("app/tinescope") + " check " + path + " --rules ";
  auto rules_file = [&](const std::string& name, const std::string& text) {
    const std::string p = dir + "/" + name;
    std::ofstream(p) << text;
    return p;
  };
  // The slow queue (q.01 of 12: 3 ms a message) falls behind: its messages
  // wait longer than 1 ms.
  const std::string bad = rules_file("bad.rules", "received channel=q.01 within=1ms\nforbidden from=\"producer*\" to=q.01\n");
  std::string out;
  EXPECT_EQ(run(cli + bad + " --json --limit 5 2>&1", &out), 1) << out;
  const json j = json::parse(out);
  EXPECT_GT(j["violations_total"].get<uint64_t>(), 5u);
  ASSERT_EQ(j["violations"].size(), 5u);
  EXPECT_EQ(j["violations"][0]["channel_name"], "q.01");
  EXPECT_EQ(j["per_rule"][0]["line"], 1);
  EXPECT_EQ(run(cli + bad + " > /dev/null 2>&1"), 1);
  const std::string good = rules_file("good.rules", "allowed from=\"producer*\" # producers feed the queues\n"
                                                    "allowed from=q.* to=q.*\nforbidden from=q.05 to=producer.0\n");
  EXPECT_EQ(run(cli + good + " 2>&1", &out), 0) << out;
  EXPECT_NE(out.find("passed: 0 violations"), std::string::npos) << out;
  const std::string broken = rules_file("broken.rules", "received within=fast\n");
  EXPECT_EQ(run(cli + broken + " 2>&1", &out), 2);
  EXPECT_NE(out.find("broken.rules:1: within=fast is not a duration"), std::string::npos) << out;
}

// `--rules` on a figure: each arrow drawn is red where its message breaks a
// rule, green where it keeps them, its channel's colour where none applies.
TEST(ProtocolRules, ArrowsTakeTheColourOfTheirVerdict) {
  const std::string path = record_queues("colours", "--queues 12 --producers 2 --duration 0.2");
  ASSERT_FALSE(path.empty());
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(path, error)) << error;
  analysis::Rules rules;
  ASSERT_TRUE(analysis::parse_rules("received channel=q.01 within=1ms\nreceived channel=q.02 within=1s\n", "r", rules, error));
  auto verdicts = std::make_shared<std::vector<analysis::RuleReport>>();
  verdicts->push_back(analysis::check_rules(*scene.sources()[0].index, rules, 0, true));
  render::FigureParams f;
  f.rule_verdicts = verdicts;
  f.lanes = scene.select_lanes("producer.*,q.01,q.02,q.03", error);
  ASSERT_FALSE(f.lanes.empty()) << error;
  std::map<uint32_t, int> colours;  // colour -> arrows
  for (int64_t at = scene.first_ns() + 20'000'000; at < scene.last_ns() - 5'000'000; at += 20'000'000) {
    f.t0 = at, f.t1 = at + 2'000'000;
    const render::TimelinePicture p =
        render::build_timeline(scene, render::timeline_request(scene, f, render::TimelineGeometry::of(render::Rect{0, 0, 1150, 400})));
    for (const render::Arrow& a : p.arrows) {
      const uint8_t v = verdicts->at(0).verdict(a.flow);
      ++colours[a.colour];
      const bool q01 = a.flow.channel == 1, q02 = a.flow.channel == 2;
      EXPECT_EQ(v != 0, (q01 || q02) && (a.flow.flags & index::kFlowSent)) << a.flow.id;
      const std::string channel = scene.sources()[0].catalog->channel_name(a.flow.channel);
      const uint32_t want = v == analysis::RuleReport::Violated ? 0xff2828e6u
                            : v                                 ? 0xff3cb43cu
                                                                : render::name_colour(channel);  // its channel's
      EXPECT_EQ(a.colour, want) << a.flow.id;
    }
  }
  EXPECT_GT(colours[0xff2828e6u], 0) << "the slow queue's messages wait longer than 1 ms";
  EXPECT_GT(colours[0xff3cb43cu], 0);
}

}  // namespace
}  // namespace tinescope::test
