// The sequence diagram (issue 52, part 5): its arrows are exactly the
// window's messages between its lifelines, each end at its time (real
// time) or on its own step (event order), compared with a plain reading of
// every message of the trace over many random windows, lifelines and
// spacings; past the arrow budget its bundles hold every message; the
// command line draws it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "tinescope/render/figure_params.hpp"
#include "tinescope/render/headless.hpp"
#include "tinescope/render/lane_order.hpp"
#include "tinescope/render/sequence.hpp"
#include "index_helpers.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

struct Workload {
  render::Scene scene;
  std::vector<index::Flow> all;  // every message of the trace
};

const Workload& workload() {
  static Workload* w = [] {
    auto* w = new Workload;
    const std::string path = record_queues("sequence", "--queues 12 --producers 3 --duration 0.3");
    EXPECT_FALSE(path.empty());
    std::string error;
    EXPECT_TRUE(w->scene.add_trace(path, error)) << error;
    const index::TraceIndex& ix = *w->scene.sources()[0].index;
    w->all = ix.flows(0, UINT64_MAX);
    return w;
  }();
  return *w;
}

// The messages a window [k0, k1] (ticks) shows between these lifelines
// (feedlet -> lifeline): a half in it, or in flight across it.
std::map<uint64_t, uint8_t> plain_reading(const std::vector<index::Flow>& all, uint64_t k0, uint64_t k1,
                                          const std::map<uint32_t, size_t>& lifeline) {
  std::map<uint64_t, uint8_t> want;  // id -> Arrow::orphan
  for (const index::Flow& f : all) {
    const bool sent = f.flags & index::kFlowSent, received = f.flags & index::kFlowReceived;
    const bool in = (sent && f.send_ts >= k0 && f.send_ts <= k1) || (received && f.recv_ts >= k0 && f.recv_ts <= k1) ||
                    (f.matched() && f.send_ts < k0 && f.recv_ts > k1);
    if (!in) continue;
    if (f.matched() && lifeline.count(f.src) && lifeline.count(f.dst)) want[f.id] = 0;
    if (!received && lifeline.count(f.src)) want[f.id] = 1;
    if (!sent && lifeline.count(f.dst)) want[f.id] = 2;
  }
  return want;
}

TEST(Sequence, ItsArrowsAreTheWindowsMessagesEachEndAtItsTimeOrOnItsStep) {
  const Workload& w = workload();
  const render::Scene& scene = w.scene;
  const std::vector<uint32_t> talk = render::message_lanes(scene, {});
  ASSERT_GE(talk.size(), 15u) << "12 queues and 3 producers";
  // Every lane that sends or receives, and no other.
  std::set<uint32_t> senders;
  for (const index::Flow& f : w.all) {
    if (f.flags & index::kFlowSent) senders.insert(f.src);
    if (f.flags & index::kFlowReceived) senders.insert(f.dst);
  }
  EXPECT_EQ(talk.size(), senders.size());
  for (uint32_t l : talk) EXPECT_TRUE(senders.count(scene.lanes()[l].feedlet));

  // The queues as a plain count says: each channel's owner (the lane that
  // received most of it), each lane's home (the channel it received most on).
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> received;
  for (const index::Flow& f : w.all)
    if (f.flags & index::kFlowReceived) ++received[{f.channel, f.dst}];
  std::map<uint64_t, uint32_t> owner;  // channel -> feedlet
  std::map<uint32_t, uint64_t> home;   // feedlet -> channel
  {
    std::map<uint64_t, uint64_t> most_of;
    std::map<uint32_t, uint64_t> most_on;
    for (const auto& [key, n] : received) {
      if (n > most_of[key.first]) most_of[key.first] = n, owner[key.first] = key.second;
      if (n > most_on[key.second]) most_on[key.second] = n, home[key.second] = key.first;
    }
  }
  const render::QueueMap qm = render::queue_map(scene);
  ASSERT_EQ(qm.queues.size(), owner.size());
  for (const render::QueueMap::Queue& q : qm.queues) EXPECT_EQ(scene.lanes()[q.owner].feedlet, owner.at(q.channel));
  for (const auto& [key, channel] : qm.home) EXPECT_EQ(home.at(key.second), channel);
  auto queues = std::make_shared<const render::QueueMap>(qm);

  std::mt19937_64 rng(test_seed(5205));
  int drawn = 0, ordered = 0, orphans = 0, by_queue = 0, folded = 0;
  for (int round = 0; round < 80; ++round) {
    render::FigureParams f;
    f.type = render::FigureParams::Sequence;
    // Some of the lifelines, shuffled: any order the user picked.
    f.lanes = talk;
    std::shuffle(f.lanes.begin(), f.lanes.end(), rng);
    f.lanes.resize(2 + rng() % (talk.size() - 1));
    f.spacing = rng() % 2 ? render::Spacing::Order : render::Spacing::Time;
    if (rng() % 3 == 0) f.lifelines = render::Lifelines::Queues, f.queue_map = queues, ++by_queue;
    if (rng() % 6 == 0) f.collapsed = {scene.lanes()[talk[0]].group}, ++folded;  // (one process: one lifeline)
    const int64_t span = 20'000 + int64_t(rng() % 3'000'000);
    f.t0 = scene.first_ns() + int64_t(rng() % uint64_t(scene.last_ns() - scene.first_ns()));
    f.t1 = f.t0 + span;
    const render::SequenceGeometry g = render::SequenceGeometry::of({0, 0, 1100, 700});
    render::SequenceRequest req = render::sequence_request(scene, f, g);
    req.max_arrows = 100000;  // (every message an arrow: the set is compared)
    const render::SequencePicture p = render::build_sequence(scene, req);
    // The lifelines a plain reading gives, by name: a lane's, a queue's
    // (shown where its owner is), or the process's, folded.
    std::map<uint32_t, size_t> lifeline;  // feedlet of a lane shown -> its place in f.lanes
    for (size_t i = 0; i < f.lanes.size(); ++i) lifeline[scene.lanes()[f.lanes[i]].feedlet] = i;
    std::vector<std::string> want_lines;
    std::map<uint32_t, std::string> from_of;                    // feedlet -> lifeline its sends leave
    std::map<std::pair<uint32_t, uint64_t>, std::string> to_of;  // (receiver, channel) -> lifeline it arrives on
    const auto catalog = scene.sources()[0].catalog;
    for (uint32_t lane : f.lanes) {
      const render::Lane& l = scene.lanes()[lane];
      if (!f.collapsed.empty()) {
        if (want_lines.empty()) want_lines.push_back("[" + l.group + "]");
        continue;
      }
      bool owns = false;
      if (f.lifelines == render::Lifelines::Queues)
        for (const auto& [channel, who] : owner)
          if (who == l.feedlet) want_lines.push_back(catalog->channel_label(channel)), owns = true;
      if (!owns) want_lines.push_back(l.label());
    }
    std::vector<std::string> got_lines;
    for (const auto& line : p.lifelines) got_lines.push_back(line.lane < 0 ? "[" + line.label + "]" : line.label);
    ASSERT_EQ(got_lines, want_lines);
    auto x_of = [&](const std::string& name) {
      const size_t i = size_t(std::find(want_lines.begin(), want_lines.end(), name) - want_lines.begin());
      return i < p.lifelines.size() ? p.lifelines[i].x : -1e9f;
    };
    auto own_line = [&](uint32_t feedlet) {  // a lane's lifeline: its own, or its first queue's
      if (f.lifelines == render::Lifelines::Queues)
        for (const auto& [channel, who] : owner)
          if (who == feedlet) return catalog->channel_label(channel);
      return scene.lanes()[f.lanes[lifeline.at(feedlet)]].label();
    };
    auto from_x = [&](uint32_t src) {
      if (!f.collapsed.empty()) return x_of(want_lines[0]);
      if (f.lifelines == render::Lifelines::Queues && home.count(src) && lifeline.count(owner.at(home.at(src))))
        return x_of(catalog->channel_label(home.at(src)));
      return x_of(own_line(src));
    };
    auto to_x = [&](uint32_t dst, uint64_t channel) {
      if (!f.collapsed.empty()) return x_of(want_lines[0]);
      if (f.lifelines == render::Lifelines::Queues && lifeline.count(owner.at(channel))) return x_of(catalog->channel_label(channel));
      return x_of(own_line(dst));
    };
    const render::ClockWindow cw(scene.sources()[0].catalog->clock, f.t0, f.t1);
    const std::map<uint64_t, uint8_t> want = plain_reading(w.all, cw.k0, cw.k1, lifeline);
    std::map<uint64_t, uint8_t> got;
    for (const render::Arrow& a : p.arrows) EXPECT_TRUE(got.emplace(a.flow.id, a.orphan).second) << "drawn twice";
    ASSERT_EQ(got, want) << "window " << f.t0 << ".." << f.t1;
    drawn += int(got.size());

    // Each end: on its lifeline, at its place in time.
    std::multiset<int64_t> ends;
    for (const render::Arrow& a : p.arrows) {
      const index::Flow& fl = a.flow;
      if (a.orphan != 2) { EXPECT_FLOAT_EQ(a.x0, from_x(fl.src)) << "message " << fl.id; }
      if (a.orphan != 1) { EXPECT_FLOAT_EQ(a.x1, to_x(fl.dst, fl.channel)) << "message " << fl.id; }
      if (a.orphan != 2 && a.send >= f.t0 && a.send <= f.t1) ends.insert(a.send);
      if (a.orphan != 1 && a.recv >= f.t0 && a.recv <= f.t1) ends.insert(a.recv);
      orphans += a.orphan != 0;
    }
    if (p.spacing == render::Spacing::Order) {
      ++ordered;
      // A step each end, in time order, each step one end's time.
      ASSERT_EQ(p.steps.size(), ends.size());
      EXPECT_EQ(std::multiset<int64_t>(p.steps.begin(), p.steps.end()), ends);
      EXPECT_TRUE(std::is_sorted(p.steps.begin(), p.steps.end()));
      EXPECT_NEAR(p.step_px, req.height / float(ends.size() + 1), 1e-3);
      std::set<long> used;
      for (const render::Arrow& a : p.arrows) {
        auto on_step = [&](float y, int64_t t) {
          const long k = std::lround(y / p.step_px) - 1;
          ASSERT_GE(k, 0);
          ASSERT_LT(size_t(k), p.steps.size());
          EXPECT_EQ(p.steps[size_t(k)], t);
          EXPECT_NEAR(y, float(k + 1) * p.step_px, 1e-2);
          EXPECT_TRUE(used.insert(k).second) << "two ends on one step";
        };
        if (a.orphan == 0 || a.orphan == 1) {
          if (a.send >= f.t0 && a.send <= f.t1) on_step(a.y0, a.send);
          else EXPECT_EQ(a.y0, 0.f) << "sent before the window: on its top edge";
        }
        if (a.orphan == 0 || a.orphan == 2) {
          if (a.recv >= f.t0 && a.recv <= f.t1) on_step(a.y1, a.recv);
          else EXPECT_EQ(a.y1, req.height) << "received after the window: on its foot";
        }
      }
      // The cursor's place: between the steps around it.
      for (int64_t t : {f.t0, (f.t0 + f.t1) / 2, f.t1}) {
        const float y = p.y(t);
        const size_t below = size_t(std::lower_bound(p.steps.begin(), p.steps.end(), t) - p.steps.begin());
        EXPECT_GE(y, float(below) * p.step_px - 1e-3);
        EXPECT_LE(y, float(below + 1) * p.step_px + 1e-3);
      }
    } else {
      EXPECT_EQ(p.order_events, f.spacing == render::Spacing::Order ? ends.size() : 0u)
          << "event order falls back to real time only where its steps do not fit";
      auto at = [&](int64_t t) {
        return std::clamp(float(double(t - f.t0) / double(f.t1 - f.t0) * req.height), 0.f, req.height);
      };
      for (const render::Arrow& a : p.arrows) {
        if (a.orphan != 2) { EXPECT_NEAR(a.y0, at(a.send), 1e-2); }
        if (a.orphan == 0) { EXPECT_NEAR(a.y1, at(a.recv), 1e-2); }
        if (a.orphan == 2) { EXPECT_NEAR(a.y1, at(a.recv), 1e-2); }
      }
    }
    // time() undoes y() within the window.
    for (int64_t t : {f.t0 + span / 7, f.t0 + span / 2}) {
      if (p.spacing == render::Spacing::Time) { EXPECT_NEAR(double(p.time(p.y(t))), double(t), double(span) / req.height); }
    }
  }
  EXPECT_GT(drawn, 500);
  EXPECT_GT(ordered, 10);
  EXPECT_GT(orphans, 0);
  EXPECT_GT(by_queue, 10);
  EXPECT_GT(folded, 5);
}

TEST(Sequence, PastTheBudgetEveryMessageIsInABundleAndEventOrderSaysItDoesNotFit) {
  const Workload& w = workload();
  const render::Scene& scene = w.scene;
  render::FigureParams f;
  f.type = render::FigureParams::Sequence;
  f.lanes = render::message_lanes(scene, {});
  f.t0 = scene.first_ns(), f.t1 = scene.last_ns() + 1;
  const render::SequenceGeometry g = render::SequenceGeometry::of({0, 0, 1100, 700});
  render::SequenceRequest req = render::sequence_request(scene, f, g);
  req.max_arrows = 100;
  render::SequencePicture p = render::build_sequence(scene, req);
  EXPECT_TRUE(p.arrows.empty());
  EXPECT_GT(p.arrows_left_out, 100u);
  std::map<uint32_t, size_t> lifeline;
  for (size_t i = 0; i < f.lanes.size(); ++i) lifeline[scene.lanes()[f.lanes[i]].feedlet] = i;
  uint64_t matched = 0;
  for (const index::Flow& fl : w.all) matched += fl.matched();
  EXPECT_EQ(p.bundled, matched) << "every message sent and received, in a bundle";
  // The bundles a plain count makes: per pair of lifelines and stretch of
  // the window (as many as keep them to half the budget), the busiest
  // quarter of the budget kept.
  std::map<std::pair<size_t, size_t>, std::map<int, uint32_t>> want;  // (from, to) -> stretch -> messages
  for (const index::Flow& fl : w.all)
    if (fl.matched()) want[{lifeline.at(fl.src), lifeline.at(fl.dst)}];
  const int bins = int(std::clamp<size_t>(req.max_arrows / 2 / want.size(), 1, render::kBundleBins));
  const render::ClockWindow cw(scene.sources()[0].catalog->clock, f.t0, f.t1);
  for (const index::Flow& fl : w.all) {
    if (!fl.matched()) continue;
    const double y = std::clamp(double(cw.ns(fl.send_ts) - f.t0) / double(f.t1 - f.t0) * req.height, 0.0, double(req.height));
    ++want[{lifeline.at(fl.src), lifeline.at(fl.dst)}][std::clamp(int(y / req.height * bins), 0, bins - 1)];
  }
  std::vector<uint32_t> want_counts, got_counts;
  for (const auto& [pair, stretches] : want)
    for (const auto& [bin, n] : stretches) want_counts.push_back(n);
  std::sort(want_counts.rbegin(), want_counts.rend());
  const size_t kept = std::min<size_t>(want_counts.size(), req.max_arrows / 4);
  EXPECT_EQ(p.bundles.size(), kept) << "a quarter of the arrow budget";
  EXPECT_EQ(p.bundles_left_out, want_counts.size() - kept);
  want_counts.resize(kept);
  for (const render::Bundle& b : p.bundles) got_counts.push_back(b.count);
  std::sort(got_counts.rbegin(), got_counts.rend());
  EXPECT_EQ(got_counts, want_counts) << "the busiest kept";
  for (const render::Bundle& b : p.bundles) {
    EXPECT_GE(b.y0, 0.f);
    EXPECT_LE(b.y1, req.height);
  }
  // Event order with more ends than fit 4 px each: drawn in real time, and said.
  req.max_arrows = 1'000'000, req.spacing = render::Spacing::Order;
  p = render::build_sequence(scene, req);
  EXPECT_EQ(p.spacing, render::Spacing::Time);
  EXPECT_GT(p.order_events, uint64_t(req.height / 4));
}

// Ends at one time, in event order: a handler takes a message before it
// sends what it causes (a receive first), but a message sent and received
// in the same nanosecond still goes down, never up.
TEST(Sequence, AtOneTimeAReceiveComesBeforeTheSendItCausesButNeverBeforeItsOwnSend) {
  test::TraceBytes t = test::named_trace({"a", "b", "c"}, {1, 2, 3});
  format::ChunkBuilder lanes[3];  // (a chunk a lane: a feedlet's chunks are numbered)
  for (uint32_t k = 0; k < 3; ++k) lanes[k].feedlet = k + 1;
  auto message = [&](uint32_t feedlet, uint16_t type, uint64_t ts, uint64_t id) {
    format::ChunkBuilder& cb = lanes[feedlet - 1];
    uint8_t* p = cb.begin(type, ts);
    p = cb.put_delta(p, id), p = format::ChunkBuilder::put_u64(p, 7), p = format::ChunkBuilder::put_u64(p, 16);
    p = format::ChunkBuilder::put_bytes(p, nullptr, 0);
    cb.end(p);
  };
  message(1, format::kMessageSend, 100, 1);  // a -> b, taken at 200 ...
  message(2, format::kMessageRecv, 200, 1);
  message(2, format::kMessageSend, 200, 2);  // ... and forwarded to c in the same ns, arriving then too
  message(3, format::kMessageRecv, 200, 2);
  message(1, format::kMessageSend, 300, 3);  // a -> b in no time
  message(2, format::kMessageRecv, 300, 3);
  message(1, format::kMessageSend, 400, 4);  // a -> b in no time, and b forwards it to c then
  message(2, format::kMessageRecv, 400, 4);
  message(2, format::kMessageSend, 400, 5);
  message(3, format::kMessageRecv, 500, 5);
  message(1, format::kMessageSend, 600, 6);  // a and b send each other a message in one ns
  message(2, format::kMessageSend, 600, 7);
  message(1, format::kMessageRecv, 600, 7);
  message(2, format::kMessageRecv, 600, 6);
  for (format::ChunkBuilder& cb : lanes) t.flush(cb);
  const std::string path = test::temp_path("sequence_ties");
  test::remove_trace(path);
  test::write_file(path, t.out);
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(path, error)) << error;
  std::vector<uint32_t> order = render::message_lanes(scene, {});
  ASSERT_EQ(order.size(), 3u);
  // Left to right and right to left: the order of the lifelines changes nothing.
  for (int mirrored = 0; mirrored < 2; ++mirrored) {
    render::FigureParams f;
    f.type = render::FigureParams::Sequence;
    f.spacing = render::Spacing::Order;
    f.lanes = order;
    if (mirrored) std::reverse(f.lanes.begin(), f.lanes.end());
    f.t0 = scene.first_ns(), f.t1 = scene.last_ns() + 1;
    const render::SequencePicture p =
        render::build_sequence(scene, render::sequence_request(scene, f, render::SequenceGeometry::of({0, 0, 800, 600})));
    ASSERT_EQ(p.spacing, render::Spacing::Order);
    ASSERT_EQ(p.arrows.size(), 7u);
    std::map<uint64_t, const render::Arrow*> by_id;
    for (const render::Arrow& a : p.arrows) by_id[a.flow.id] = &a;
    ASSERT_EQ(by_id.size(), 7u);
    for (const auto& [id, a] : by_id) EXPECT_LT(a->y0, a->y1) << "message " << id << " leaves before it arrives";
    EXPECT_LT(by_id[1]->y1, by_id[2]->y0) << "b takes message 1, then sends message 2";
    EXPECT_LT(by_id[4]->y1, by_id[5]->y0) << "b takes message 4, then sends message 5";
    std::vector<float> ys;
    for (const render::Arrow& a : p.arrows) ys.push_back(a.y0), ys.push_back(a.y1);
    std::sort(ys.begin(), ys.end());
    for (size_t k = 0; k < ys.size(); ++k) EXPECT_NEAR(ys[k], float(k + 1) * p.step_px, 1e-3) << "a step each";
  }
  test::remove_trace(path);
}

TEST(Sequence, TheCommandLineDrawsIt) {
  const std::string path = record_queues("sequence_cli", "--queues 6 --producers 2 --duration 0.1");
  ASSERT_FALSE(path.empty());
  const std::string png = scratch_dir() + "/sequence.png";
  std::string out;
  ASSERT_EQ(run(bin("app/tinescope") + " render " + path + " --figure sequence --spacing order --from 50ms --to 50.2ms -o " +
                    png + " 2>&1",
                &out),
            0)
      << out;
  EXPECT_NE(out.find("8 lifelines (threads), order spacing"), std::string::npos) << out;
  int w = 0, h = 0;
  std::vector<uint8_t> rgba;
  std::string error;
  ASSERT_TRUE(render::read_png(png, w, h, rgba, error)) << error;
  EXPECT_EQ(w, 1280);
  EXPECT_EQ(run(bin("app/tinescope") + " render " + path + " --spacing order -o " + png + " 2>&1", &out), 2);
  EXPECT_NE(out.find("--spacing applies to the sequence diagram"), std::string::npos) << out;
  EXPECT_EQ(run(bin("app/tinescope") + " render " + path + " --figure sequence --lanes producer.0 -o " + png + " 2>&1", &out),
            0)
      << out;
  EXPECT_NE(out.find("1 lifeline (threads),"), std::string::npos) << out;
  // Queues: the 6 queues and the 2 producers' own lifelines; folded, one.
  EXPECT_EQ(run(bin("app/tinescope") + " render " + path + " --figure sequence --lifelines queues -o " + png + " 2>&1", &out), 0)
      << out;
  EXPECT_NE(out.find("8 lifelines (queues)"), std::string::npos) << out;
  EXPECT_EQ(run(bin("app/tinescope") + " render " + path + " --figure sequence --collapse tinescope-queues -o " + png + " 2>&1",
                &out),
            0)
      << out;
  EXPECT_NE(out.find("1 lifeline (threads)"), std::string::npos) << out;
  EXPECT_EQ(run(bin("app/tinescope") + " render " + path + " --figure sequence --collapse nosuch -o " + png + " 2>&1", &out), 2);
  EXPECT_NE(out.find("--collapse: no process is named 'nosuch'"), std::string::npos) << out;
}

}  // namespace
}  // namespace tinescope::test
