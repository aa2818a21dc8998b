// Messages never received and never sent (issue 52): a recording of
// producers sending on channels to queues, most received, some never, a
// receive never sent and an id received twice. The report per channel and
// per sender, `find --orphans`, `info` and the streams messages(received=
// false) and messages(sent=false) against the workload's own record.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "tinescope/analysis/derived_stream.hpp"
#include "tinescope/analysis/stream_expr.hpp"
#include "tinescope/analysis/message_chain.hpp"
#include "tinescope/analysis/message_report.hpp"
#include "tinescope/index/trace_index.hpp"
#include "tinescope/render/picture.hpp"
#include "tinescope/render/scene.hpp"
#include "tinescope/tinescope.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

using nlohmann::json;

struct Expected {
  std::map<uint64_t, analysis::MessageCounts> by_channel;
  std::map<std::string, analysis::MessageCounts> by_sender;  // by lane name
  std::set<uint64_t> never_received, never_sent;             // ids
  uint64_t received_again = 0;
};

TEST(MessageReport, UnreceivedAndUnsentPerChannelAndSenderEqualTheWorkloadsRecord) {
  const std::string path = temp_path("message_report");
  unlink(path.c_str());
  ts_config cfg{};
  cfg.file_path = path.c_str();
  ASSERT_EQ(ts_start(&cfg), 0) << ts_last_error();
  Expected want;
  struct Sent {
    uint64_t id, channel;
  };
  std::vector<Sent> sent;
  std::mt19937_64 rng(test_seed(52));
  // Four producers, each its lane, sending on 5 channels.
  for (int p = 0; p < 4; ++p) {
    std::vector<Sent> mine;
    const std::string lane = "producer." + std::to_string(p);
    for (int i = 0; i < 500; ++i) mine.push_back({uint64_t(p) << 32 | uint64_t(i + 1), rng() % 5});
    std::thread([&] {
      ts::thread_name(lane.c_str());
      for (const Sent& s : mine) ts_message_send(s.id, s.channel, 64, nullptr, 0);
    }).join();
    for (const Sent& s : mine) {
      ++want.by_channel[s.channel].sent, ++want.by_sender[lane].sent;
      sent.push_back(s);
    }
  }
  // Ten queues receive them, all but every 37th; one receive of an id
  // never sent; one id received twice.
  std::map<uint64_t, std::string> sender_of;
  for (const Sent& s : sent) sender_of[s.id] = "producer." + std::to_string(s.id >> 32);
  for (int q = 0; q < 10; ++q) {
    std::vector<Sent> mine;
    for (size_t i = size_t(q); i < sent.size(); i += 10)
      if (i % 37 != 5) mine.push_back(sent[i]);
    const bool extra = q == 3, twice = q == 7;
    std::thread([&] {
      ts::thread_name(("queue." + std::to_string(q)).c_str());
      for (const Sent& s : mine) ts_message_recv(s.id, s.channel, 64, nullptr, 0);
      if (extra) ts_message_recv(999999, 2, 8, nullptr, 0);
      if (twice) ts_message_recv(mine[0].id, mine[0].channel, 64, nullptr, 0);
    }).join();
    for (const Sent& s : mine) {
      ++want.by_channel[s.channel].received, ++want.by_channel[s.channel].matched;
      ++want.by_sender[sender_of[s.id]].received, ++want.by_sender[sender_of[s.id]].matched;
    }
    if (extra) {
      ++want.by_channel[2].received, ++want.by_channel[2].never_sent;
      ++want.by_sender["queue.3"].received, ++want.by_sender["queue.3"].never_sent;
      want.never_sent.insert(999999);
    }
    if (twice) {
      const Sent& s = mine[0];
      ++want.by_channel[s.channel].received, ++want.by_channel[s.channel].never_sent, ++want.by_channel[s.channel].received_again;
      ++want.by_sender["queue.7"].received, ++want.by_sender["queue.7"].never_sent, ++want.by_sender["queue.7"].received_again;
      want.never_sent.insert(s.id);
      ++want.received_again;
    }
  }
  for (size_t i = 0; i < sent.size(); ++i)
    if (i % 37 == 5) {
      ++want.by_channel[sent[i].channel].never_received, ++want.by_sender[sender_of[sent[i].id]].never_received;
      want.never_received.insert(sent[i].id);
    }
  ts_stop();

  std::string error;
  auto ix = index::TraceIndex::build(path, error);
  ASSERT_TRUE(ix) << error;
  const analysis::MessageReport r = analysis::message_report(*ix);
  std::map<uint32_t, std::string> lanes;
  for (const auto& f : ix->feedlets()) lanes[f.id] = f.name;
  auto same = [](const analysis::MessageCounts& got, const analysis::MessageCounts& w, const std::string& what) {
    EXPECT_EQ(got.sent, w.sent) << what;
    EXPECT_EQ(got.received, w.received) << what;
    EXPECT_EQ(got.matched, w.matched) << what;
    EXPECT_EQ(got.never_received, w.never_received) << what;
    EXPECT_EQ(got.never_sent, w.never_sent) << what;
    EXPECT_EQ(got.received_again, w.received_again) << what;
  };
  ASSERT_EQ(r.by_channel.size(), want.by_channel.size());
  for (const auto& [ch, w] : want.by_channel) same(r.by_channel.at(ch), w, "channel " + std::to_string(ch));
  ASSERT_EQ(r.by_sender.size(), want.by_sender.size());
  for (const auto& [fe, c] : r.by_sender) same(c, want.by_sender.at(lanes[fe]), "sender " + lanes[fe]);
  EXPECT_EQ(r.all.never_received, want.never_received.size());
  EXPECT_EQ(r.all.never_sent, want.never_sent.size());
  EXPECT_EQ(r.all.received_again, want.received_again);
  EXPECT_GT(r.all.latency_p50, 0);
  EXPECT_LE(r.all.latency_p50, r.all.latency_p99);
  EXPECT_LE(r.all.latency_p99, r.all.latency_max);

  // find --orphans lists exactly them, in time order.
  std::string out;
  ASSERT_EQ(run(bin("app/tinescope") + " find " + path + " --orphans --limit 1000", &out), 0) << out;
  const json o = json::parse(out)["orphans"];
  EXPECT_EQ(o["count"], want.never_received.size() + want.never_sent.size());
  std::set<uint64_t> listed_unreceived, listed_unsent;
  int64_t last = INT64_MIN;
  for (const json& m : o["list"]) {
    (m["what"] == "never received" ? listed_unreceived : listed_unsent).insert(m["id"].get<uint64_t>());
    EXPECT_GE(m["time_ns"].get<int64_t>(), last);
    last = m["time_ns"].get<int64_t>();
  }
  EXPECT_EQ(listed_unreceived, want.never_received);
  EXPECT_EQ(listed_unsent, want.never_sent);
  // --from/--to: the orphans of a window only (their one half in it).
  // (Half way between two orphans: the trace's clock is the TSC's, and a
  // time in ns maps back to ticks within one tick.)
  const size_t half = o["list"].size() / 2;
  const int64_t mid = (o["list"][half - 1]["time_ns"].get<int64_t>() + o["list"][half]["time_ns"].get<int64_t>()) / 2;
  size_t before_mid = 0;
  for (const json& m : o["list"]) before_mid += m["time_ns"].get<int64_t>() <= mid;
  EXPECT_EQ(before_mid, half);
  ASSERT_EQ(run(bin("app/tinescope") + " find " + path + " --orphans --limit 1000 --to " + std::to_string(mid) + "ns", &out), 0)
      << out;
  EXPECT_EQ(json::parse(out)["orphans"]["count"].get<size_t>(), before_mid);
  EXPECT_LT(before_mid, o["list"].size());
  // info says it in a line.
  ASSERT_EQ(run(bin("app/tinescope") + " info " + path, &out), 0) << out;
  EXPECT_NE(out.find("2000 sent, " + std::to_string(2000 - want.never_received.size() + 2) + " received"), std::string::npos)
      << out;
  EXPECT_NE(out.find(std::to_string(want.never_received.size()) + " never received, 2 received but never sent (1 of an id "
                     "received before)"),
            std::string::npos)
      << out;
  // The streams: each orphan at the time of its one half, on its lane.
  for (const auto& [text, ids] : {std::pair{"messages(received=false)", &want.never_received},
                                  std::pair{"messages(sent=false)", &want.never_sent}}) {
    analysis::Expr e;
    ASSERT_TRUE(analysis::parse_stream(text, e, error)) << error;
    EXPECT_EQ(analysis::format_stream(e), text);
    auto s = analysis::DerivedStream::evaluate(*ix, e, error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->size(), ids->size()) << text;
    for (const analysis::Record& rec : s->records()) {
      EXPECT_EQ(rec.start, rec.end);
      const std::string& lane = lanes[rec.feedlet];
      EXPECT_EQ(lane.rfind(text[9] == 'r' ? "producer." : "queue.", 0), 0u) << text << " on " << lane;
    }
  }
  analysis::Expr e;
  ASSERT_TRUE(analysis::parse_stream("messages(received=false, channel=\"2\")", e, error)) << error;
  auto s = analysis::DerivedStream::evaluate(*ix, e, error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->size(), want.by_channel[2].never_received);
  // By lane: either end on it.
  ASSERT_TRUE(analysis::parse_stream("messages(received=false, thread=\"producer.1\")", e, error)) << error;
  s = analysis::DerivedStream::evaluate(*ix, e, error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->size(), want.by_sender["producer.1"].never_received);
  ASSERT_TRUE(analysis::parse_stream("messages(thread=\"queue.7\")", e, error)) << error;
  s = analysis::DerivedStream::evaluate(*ix, e, error);
  ASSERT_TRUE(s) << error;
  size_t to_queue7 = 0;
  for (size_t i = 7; i < sent.size(); i += 10) to_queue7 += i % 37 != 5;
  EXPECT_EQ(s->size(), to_queue7) << "the matched messages queue.7 received";
  EXPECT_FALSE(analysis::parse_stream("messages(received=maybe)", e, error));
  EXPECT_NE(error.find("true or false"), std::string::npos) << error;
  ASSERT_TRUE(analysis::parse_stream("messages(received=false, sent=false)", e, error)) << error;
  EXPECT_FALSE(analysis::DerivedStream::evaluate(*ix, e, error));
  unlink(path.c_str());
}

// Issue 52's acceptance: the 100-queue workload (tinescope-queues: 4
// producers, 100 queue threads forwarding half of what they handle, one slow
// queue) — the tool alone says how many messages were never received, on
// which channels (by the names ts_channel_name gave them), and lists them;
// every count equals the workload's own record.
TEST(MessageReport, TheHundredQueueWorkloadsOrphansEqualItsOwnRecord) {
  const std::string dir = scratch_dir();
  const std::string path = dir + "/queues.tine", record = dir + "/queues.json";
  unlink(path.c_str()), unlink((path + ".idx").c_str());
  ASSERT_EQ(run(bin("recorder/tinescope-queues") + " -o " + path + " --record " + record +
                " --queues 100 --producers 4 --duration 0.6 > /dev/null"),
            0);
  const json want = json::parse(slurp(record));
  ASSERT_EQ(want["events_dropped"], 0u) << "a drop would make the counts differ for a reason of its own";
  ASSERT_GT(want["never_received"].get<uint64_t>(), 0u) << "q.13 falls behind";
  ASSERT_EQ(want["never_sent"], 1u);
  std::string out;
  ASSERT_EQ(run(bin("app/tinescope") + " stats " + path + " --json", &out), 0);
  const json got = json::parse(out)["messages"];
  for (const char* k : {"sent", "received", "never_received", "never_sent"}) EXPECT_EQ(got[k], want[k]) << k;
  std::map<uint64_t, json> by_channel;
  for (const json& c : got["by_channel"]) by_channel[c["channel"].get<uint64_t>()] = c;
  ASSERT_EQ(want["by_channel"].size(), 100u);
  for (const json& w : want["by_channel"]) {
    const uint64_t ch = w["channel"].get<uint64_t>();
    if (w["sent"] == 0u && w["received"] == 0u) continue;
    ASSERT_TRUE(by_channel.count(ch)) << ch;
    const json& g = by_channel[ch];
    EXPECT_EQ(g["name"], w["name"]) << ch;
    for (const char* k : {"sent", "received", "never_received", "never_sent"}) EXPECT_EQ(g[k], w[k]) << w["name"] << " " << k;
  }
  // The list: every orphan, each on its channel's name.
  ASSERT_EQ(run(bin("app/tinescope") + " find " + path + " --orphans --limit 100000", &out), 0);
  const json orphans = json::parse(out)["orphans"];
  ASSERT_EQ(orphans["list"].size(), want["never_received"].get<uint64_t>() + 1);
  std::map<std::string, uint64_t> per_name;
  for (const json& o : orphans["list"])
    if (o["what"] == "never received") ++per_name[o["channel_name"].get<std::string>()];
  std::map<std::string, uint64_t> want_per_name;
  for (const json& w : want["by_channel"])
    if (w["never_received"] != 0u) want_per_name[w["name"].get<std::string>()] = w["never_received"].get<uint64_t>();
  EXPECT_EQ(per_name, want_per_name);
  // The text of `info` names the channel with the most.
  ASSERT_EQ(run(bin("app/tinescope") + " info " + path, &out), 0);
  EXPECT_NE(out.find(std::to_string(want["never_received"].get<uint64_t>()) + " never received"), std::string::npos) << out;
  EXPECT_NE(out.find("channel    q.13 (13)"), std::string::npos) << out;
  // The queue's depth from its sends and receives (no counter recorded):
  // q.13's last value is what was left in it; a stream by the channel's
  // name and by its number are one; messages(channel=NAME) its matched ones.
  {
    std::string error;
    auto ix = index::TraceIndex::open(path, error);
    ASSERT_TRUE(ix) << error;
    analysis::Expr e;
    for (const std::string ch : {"q.13", "13"}) {
      ASSERT_TRUE(analysis::parse_stream("queue(channel=\"" + ch + "\")", e, error)) << error;
      auto depth = analysis::DerivedStream::evaluate(*ix, e, error);
      ASSERT_TRUE(depth) << error;
      ASSERT_GT(depth->size(), 0u);
      EXPECT_EQ(depth->records().back().value, double(by_channel[13]["never_received"].get<uint64_t>())) << ch;
      double most = 0;
      for (const analysis::Record& r : depth->records()) {
        most = std::max(most, r.value);
        EXPECT_GE(r.value, 0);
      }
      EXPECT_GT(most, 10) << "q.13 falls behind";
    }
    ASSERT_TRUE(analysis::parse_stream("queue()", e, error));
    auto all = analysis::DerivedStream::evaluate(*ix, e, error);
    ASSERT_TRUE(all) << error;
    EXPECT_EQ(all->records().back().value, double(want["never_received"].get<uint64_t>())) << "every queue's leftovers";
    // From the middle on: the same samples (the count before it is carried in).
    analysis::EvalOptions o;
    o.t0 = all->records()[all->size() / 2].end;
    auto half = analysis::DerivedStream::evaluate(*ix, e, error, o);
    ASSERT_TRUE(half) << error;
    ASSERT_EQ(half->size(), all->size() - all->size() / 2);
    for (size_t i = 0; i < half->size(); ++i) EXPECT_EQ(half->records()[i].value, all->records()[all->size() / 2 + i].value);
    ASSERT_TRUE(analysis::parse_stream("messages(channel=\"q.13\")", e, error));
    auto matched = analysis::DerivedStream::evaluate(*ix, e, error);
    ASSERT_TRUE(matched) << error;
    EXPECT_EQ(matched->size(), by_channel[13]["matched"].get<uint64_t>());
    ASSERT_TRUE(analysis::parse_stream("queue(thread=\"q.13\")", e, error));
    EXPECT_FALSE(analysis::DerivedStream::evaluate(*ix, e, error));
    EXPECT_NE(error.find("queue() takes channel="), std::string::npos) << error;
  }
  // A channel's name finds its messages.
  ASSERT_EQ(run(bin("app/tinescope") + " find " + path + " --search '^q\\.13$' --limit 100000", &out), 0);
  const json found = json::parse(out)["search"]["messages"];
  EXPECT_EQ(found.size(), by_channel[13]["sent"].get<uint64_t>() + by_channel[13]["never_sent"].get<uint64_t>());
  for (const json& m : found) EXPECT_EQ(m["channel_name"], "q.13");
  unlink(path.c_str()), unlink((path + ".idx").c_str());
}

// Cause and effect (issue 52, part 3): the chain of a message, against a
// brute-force one built from every flow and every lane's intervals (a
// derived stream, not the index's running_across; the innermost running at
// a time t: start <= t < end): hop by hop the same messages at the same
// levels, each handled in the same interval. Messages never received too.
TEST(MessageReport, AChainIsItsMessagesCausesAndEffectsHopByHop) {
  const std::string dir = scratch_dir();
  const std::string path = dir + "/chains.tine";
  unlink(path.c_str()), unlink((path + ".idx").c_str());
  ASSERT_EQ(run(bin("recorder/tinescope-queues") + " -o " + path + " --queues 12 --producers 2 --duration 0.3 > /dev/null"), 0);
  std::string error;
  auto ix = index::TraceIndex::open(path, error);
  ASSERT_TRUE(ix) << error;
  analysis::Expr e;
  ASSERT_TRUE(analysis::parse_stream("intervals()", e, error));
  auto every = analysis::DerivedStream::evaluate(*ix, e, error);
  ASSERT_TRUE(every) << error;
  std::map<uint32_t, std::vector<analysis::Record>> by_lane;
  for (const analysis::Record& r : every->records()) by_lane[r.feedlet].push_back(r);
  auto around = [&](uint32_t lane, uint64_t t, analysis::Record& out) {
    bool found = false;  // the innermost: the latest start of those running
    for (const analysis::Record& r : by_lane[lane])
      if (r.start <= t && t < r.end && (!found || r.start > out.start)) out = r, found = true;
    return found;
  };
  const std::vector<index::Flow> flows = ix->flows(0, UINT64_MAX);
  ASSERT_GT(flows.size(), 1000u);
  std::mt19937_64 rng(52);
  int long_chains = 0;
  for (int round = 0; round < 30; ++round) {
    const index::Flow& m = flows[rng() % flows.size()];
    // The brute force: (id -> level), and the handler's start of each.
    std::map<uint64_t, int> want;
    std::map<uint64_t, uint64_t> handler;
    std::vector<index::Flow> todo{m};
    want[m.id] = 0;
    for (size_t i = 0; i < todo.size(); ++i) {  // effects
      const index::Flow f = todo[i];
      analysis::Record h;
      if (!(f.flags & index::kFlowReceived) || !around(f.dst, f.recv_ts, h)) continue;
      handler[f.id] = h.start;
      for (const index::Flow& g : flows)
        if ((g.flags & index::kFlowSent) && g.src == f.dst && g.send_ts >= f.recv_ts && g.send_ts < h.end &&
            !want.count(g.id))
          want[g.id] = want[f.id] + 1, todo.push_back(g);
    }
    todo = {m};
    for (size_t i = 0; i < todo.size(); ++i) {  // causes: receives whose handler runs at the send
      const index::Flow f = todo[i];
      if (!(f.flags & index::kFlowSent)) continue;
      for (const index::Flow& g : flows) {
        analysis::Record h;
        if ((g.flags & index::kFlowReceived) && g.dst == f.src && g.recv_ts <= f.send_ts && !want.count(g.id) &&
            around(f.src, g.recv_ts, h) && f.send_ts < h.end)
          want[g.id] = want[f.id] - 1, handler[g.id] = h.start, todo.push_back(g);
      }
    }
    const analysis::MessageChain c = analysis::message_chain(*ix, m);
    EXPECT_FALSE(c.cut);
    EXPECT_GE(c.last, c.first);
    std::map<uint64_t, int> got;
    for (const analysis::ChainHop& h : c.hops) {
      got[h.flow.id] = h.level;
      if (handler.count(h.flow.id)) {
        EXPECT_TRUE(h.has_handler) << h.flow.id;
        EXPECT_EQ(h.handler.start, handler[h.flow.id]) << h.flow.id;
      }
    }
    EXPECT_EQ(got, want) << "message " << m.id;
    long_chains += want.size() >= 3;
    for (size_t i = 1; i < c.hops.size(); ++i) EXPECT_LE(c.hops[i - 1].flow.first_half(), c.hops[i].flow.first_half());
  }
  EXPECT_GE(long_chains, 5) << "half of what a queue handles goes on to another";
  EXPECT_FALSE(analysis::message_chain(*ix, 12345, *std::make_unique<analysis::MessageChain>(), error));
  EXPECT_NE(error.find("no message has id 12345"), std::string::npos);
  // The command line prints the same hops.
  const index::Flow& m = flows[flows.size() / 2];
  analysis::MessageChain c;
  ASSERT_TRUE(analysis::message_chain(*ix, m.id, c, error));
  std::string out;
  ASSERT_EQ(run(bin("app/tinescope") + " find " + path + " --chain " + std::to_string(m.id), &out), 0);
  const json j = json::parse(out)["chains"][0];
  ASSERT_EQ(j["hops"].size(), c.hops.size());
  for (size_t i = 0; i < c.hops.size(); ++i) {
    EXPECT_EQ(j["hops"][i]["id"], c.hops[i].flow.id);
    EXPECT_EQ(j["hops"][i]["level"], c.hops[i].level);
  }
  EXPECT_GE(j["end_to_end_ns"].get<int64_t>(), 0);
  unlink(path.c_str()), unlink((path + ".idx").c_str());
}

// The chain's rule at its edges, on an imported trace whose times tie: a
// thread's life-long outer interval is no handler while an inner one runs;
// a message sent at the tick its handler ends is not its effect (an
// interval does not run at its end), and read backwards neither is it a
// cause; a message never received ends its chain, and `last` is never
// before `first`.
TEST(MessageReport, AChainsEdgesAreTheSameReadForwardAndBackward) {
  const std::string dir = scratch_dir();
  const std::string json_path = dir + "/chain-edges.json", path = dir + "/chain-edges.tine";
  write_file(json_path, R"({"traceEvents":[
    {"name":"run","ph":"X","ts":0,"dur":1000,"pid":1,"tid":1},
    {"name":"work","ph":"X","ts":100,"dur":100,"pid":1,"tid":1},
    {"name":"m1","cat":"c","ph":"s","id":"1","ts":150,"pid":1,"tid":1},
    {"name":"run","ph":"X","ts":0,"dur":1000,"pid":1,"tid":2},
    {"name":"handle","ph":"X","ts":250,"dur":150,"pid":1,"tid":2},
    {"name":"m1","cat":"c","ph":"f","bp":"e","id":"1","ts":300,"pid":1,"tid":2},
    {"name":"m3","cat":"c","ph":"s","id":"3","ts":350,"pid":1,"tid":2},
    {"name":"m2","cat":"c","ph":"s","id":"2","ts":400,"pid":1,"tid":2},
    {"name":"m3","cat":"c","ph":"f","bp":"e","id":"3","ts":600,"pid":1,"tid":3},
    {"name":"m4","cat":"c","ph":"s","id":"4","ts":380,"pid":1,"tid":2},
    {"name":"m2","cat":"c","ph":"f","bp":"e","id":"2","ts":500,"pid":1,"tid":3},
    {"name":"i","ph":"i","s":"t","ts":700,"pid":1,"tid":3}]})");
  unlink(path.c_str()), unlink((path + ".idx").c_str());
  ASSERT_EQ(run(bin("app/tinescope") + " import " + json_path + " -o " + path + " > /dev/null"), 0);
  std::string error;
  auto ix = index::TraceIndex::open(path, error);
  ASSERT_TRUE(ix) << error;
  std::map<int64_t, index::Flow> by_send;  // us from the start -> its flow
  for (const index::Flow& f : ix->flows(0, UINT64_MAX)) by_send[(ix->to_ns(f.first_half()) - ix->to_ns(ix->first_ts())) / 1000] = f;
  ASSERT_EQ(by_send.size(), 4u);
  const index::Flow m1 = by_send[150], m3 = by_send[350], m4 = by_send[380], m2 = by_send[400];
  auto levels = [&](const index::Flow& f) {
    std::map<int64_t, int> out;  // send time (us) -> level
    const analysis::MessageChain c = analysis::message_chain(*ix, f);
    EXPECT_GE(c.last, c.first);
    for (const analysis::ChainHop& h : c.hops) out[(ix->to_ns(h.flow.first_half()) - ix->to_ns(ix->first_ts())) / 1000] = h.level;
    return out;
  };
  // m1 arrives in "handle" (not "run"): m3 and m4 are its effects, m2 (sent as it ends) is not.
  EXPECT_EQ(levels(m1), (std::map<int64_t, int>{{150, 0}, {350, 1}, {380, 1}}));
  EXPECT_EQ(levels(m3), (std::map<int64_t, int>{{150, -1}, {350, 0}}));
  EXPECT_EQ(levels(m2), (std::map<int64_t, int>{{400, 0}})) << "sent as its handler ended: no cause";
  EXPECT_EQ(levels(m4), (std::map<int64_t, int>{{150, -1}, {380, 0}})) << "never received: its chain ends there";
  const analysis::MessageChain c = analysis::message_chain(*ix, m1);
  for (const analysis::ChainHop& h : c.hops)
    if (h.level == 0) {
      ASSERT_TRUE(h.has_handler);
      EXPECT_EQ(ix->catalog_snapshot()->string(h.handler.name), "handle");
    }
  EXPECT_EQ(analysis::message_chain(*ix, m1, 2).cut, true) << "a chain of 3 hops, at most 2";
  unlink(path.c_str()), unlink((path + ".idx").c_str());
}

// Arrows at scale (issue 52, part 4): past the arrow budget, the picture
// draws bundles, never nothing: their counts add up to the matched messages
// between the lanes shown in the window (or in flight across it), each bundle from its sender's row
// to its receiver's; and zoomed in, arrows again, each in its channel's
// colour, the same in every picture.
TEST(MessageReport, PastTheArrowBudgetBundlesCarryEveryMessage) {
  const std::string dir = scratch_dir();
  const std::string path = dir + "/bundles.tine";
  unlink(path.c_str()), unlink((path + ".idx").c_str());
  ASSERT_EQ(run(bin("recorder/tinescope-queues") + " -o " + path + " --queues 10 --producers 2 --duration 0.3 > /dev/null"), 0);
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(path, error)) << error;
  const index::TraceIndex& ix = *scene.sources()[0].index;
  render::LayoutOptions lo;
  lo.lanes = scene.select_lanes("producer.*,q.0*", error);
  ASSERT_FALSE(lo.lanes.empty()) << error;
  std::set<uint32_t> shown;
  for (uint32_t l : lo.lanes) shown.insert(scene.lanes()[l].feedlet);
  render::TimelineRequest r;
  r.layout = render::layout_lanes(scene, lo);
  r.width = 1000;
  r.decode_per_column = render::kAtRestDecodePerColumn;  // (bundles: pictures at rest)
  for (const auto& [t0, t1] : {std::pair{scene.first_ns(), scene.last_ns() + 1},
                               std::pair{scene.first_ns() + 50'000'000, scene.first_ns() + 150'000'000}}) {
    r.t0 = t0, r.t1 = t1;
    const render::TimelinePicture p = render::build_timeline(scene, r);
    uint64_t want = 0;
    const render::ClockWindow cw(scene.sources()[0].catalog->clock, t0, t1);
    // (With those in flight across the whole window: drawn too.)
    for (const index::Flow& f : ix.flows(cw.k0, cw.k1, SIZE_MAX, true))
      want += f.matched() && shown.count(f.src) && shown.count(f.dst);
    ASSERT_GT(want, r.max_arrows) << "enough to bundle";
    EXPECT_TRUE(p.arrows.empty());
    uint64_t got = 0;
    for (const render::Bundle& b : p.bundles) got += b.count;
    EXPECT_EQ(p.bundled, want);
    if (p.bundles_left_out == 0) EXPECT_EQ(got, want);
    else EXPECT_LT(got, want);
    EXPECT_LE(p.bundles.size(), r.max_arrows / 4) << "no wall of lines";
  }
  // While the view moves (the interactive budget), no bundles: the note only.
  {
    render::TimelineRequest moving = r;
    moving.decode_per_column = index::kDecodeEventsPerColumn;
    moving.t0 = scene.first_ns(), moving.t1 = scene.last_ns() + 1;
    const render::TimelinePicture p = render::build_timeline(scene, moving);
    EXPECT_TRUE(p.bundles.empty());
    EXPECT_TRUE(p.arrows.empty());
    EXPECT_GT(p.arrows_left_out, 0u);
  }
  // Zoomed in: arrows, coloured by channel.
  r.t0 = scene.first_ns() + 100'000'000, r.t1 = r.t0 + 5'000'000;
  const render::TimelinePicture p = render::build_timeline(scene, r);
  EXPECT_TRUE(p.bundles.empty());
  ASSERT_FALSE(p.arrows.empty());
  std::map<uint64_t, uint32_t> colour;
  for (const render::Arrow& a : p.arrows) {
    auto [it, fresh] = colour.try_emplace(a.flow.channel, a.colour);
    EXPECT_EQ(it->second, a.colour) << "one colour a channel";
    EXPECT_EQ(a.colour, render::name_colour(scene.sources()[0].catalog->channel_name(a.flow.channel)));
  }
  unlink(path.c_str()), unlink((path + ".idx").c_str());
}

}  // namespace
}  // namespace tinescope::test
