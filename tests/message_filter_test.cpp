// Filtering messages (issue 52): the filter's words and their errors, and
// pictures whose arrows are exactly the window's messages that a plain
// reading of the filter passes, for many random filters and windows.
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <set>

#include "tinescope/analysis/message_filter.hpp"
#include "tinescope/render/figure_params.hpp"
#include "tinescope/render/picture.hpp"
#include "tinescope/render/scene.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {
namespace {

TEST(MessageFilter, ReadsItsWordsAndNamesWhatIsWrong) {
  analysis::MessageFilter f;
  std::string error;
  ASSERT_TRUE(analysis::parse_message_filter("channel=q.1* from=\"producer *\" to=/q\\.3./ size>=1024 size<4096 latency>2ms",
                                             f, error))
      << error;
  EXPECT_EQ(f.channel, "q.1*");
  EXPECT_EQ(f.from, "producer *");
  EXPECT_EQ(f.to, "/q\\.3./");
  EXPECT_EQ(f.size_min, 1024u);
  EXPECT_EQ(f.size_max, 4095u);
  EXPECT_EQ(f.latency_min, 2'000'001);
  EXPECT_EQ(f.latency_max, INT64_MAX);
  ASSERT_TRUE(analysis::parse_message_filter("  ", f, error));
  EXPECT_TRUE(f.any());
  ASSERT_TRUE(analysis::parse_message_filter("lanes=q.01,q.05 orphans rest=grey", f, error)) << error;
  EXPECT_EQ(f.lanes, "q.01,q.05");
  EXPECT_TRUE(f.orphans);
  EXPECT_TRUE(f.grey_rest);
  ASSERT_TRUE(analysis::parse_message_filter("latency=1ms", f, error));
  EXPECT_EQ(f.latency_min, 1'000'000);
  EXPECT_EQ(f.latency_max, 1'000'000);
  const std::pair<const char*, const char*> bad[] = {
      {"chanel=q", "'chanel' is not channel, from, to, lanes, size, latency or rest"},
      {"rest=pink", "rest= is grey or hide, not 'pink'"},
      {"lanes=a lanes=b", "'lanes' is given twice"},
      {"latency>soon", "latency>soon: not a duration"},
      {"size>=big", "size>=big: not a number of bytes"},
      {"from>q", "from takes =, not >"},
      {"q.13", "'q.13' is not KEY=VALUE"},
      {"channel=", "'channel=' has no value"},
      {"channel=/(/", "channel=/(/:"},
      {"from=\"x", "a quote is not closed"},
      {"channel==q", "'channel==q': one = between key and value"},
      {"from=a from=b", "'from' is given twice"},
      {"size=-5", "size=-5: not a number of bytes"},
      {"size=+5", "size=+5: not a number of bytes"},
      {"size=>5", "size=>5: not a number of bytes"},
  };
  for (auto [text, want] : bad) {
    EXPECT_FALSE(analysis::parse_message_filter(text, f, error)) << text;
    EXPECT_EQ(error.rfind(want, 0), 0u) << text << " -> " << error;
  }
  // Each operator's bounds, whole and fractional: [min, max] of whole units.
  struct Case {
    const char* text;
    int64_t lo, hi;
  };
  const Case cases[] = {
      {"latency=5ns", 5, 5},      {"latency<5ns", INT64_MIN, 4},    {"latency<=5ns", INT64_MIN, 5},
      {"latency>5ns", 6, INT64_MAX}, {"latency>=5ns", 5, INT64_MAX}, {"latency<1.4ns", INT64_MIN, 1},
      {"latency<=1.9996us", INT64_MIN, 1999}, {"latency>=1.4ns", 2, INT64_MAX}, {"latency>1.4ns", 2, INT64_MAX},
      {"latency=1.5ns", 2, 1},  // (empty: no whole latency is 1.5 ns)
  };
  for (const Case& c : cases) {
    ASSERT_TRUE(analysis::parse_message_filter(c.text, f, error)) << c.text << ": " << error;
    EXPECT_EQ(f.latency_min, c.lo) << c.text;
    EXPECT_EQ(f.latency_max, c.hi) << c.text;
  }
  ASSERT_TRUE(analysis::parse_message_filter("size>63 size<=64", f, error));
  EXPECT_EQ(f.size_min, 64u);
  EXPECT_EQ(f.size_max, 64u);
  ASSERT_TRUE(analysis::parse_message_filter("size<1", f, error));
  EXPECT_EQ(f.size_max, 0u);
}

TEST(MessageFilter, ThePictureDrawsExactlyTheMessagesItPasses) {
  const std::string path = record_queues("filter", "--queues 12 --producers 3 --duration 0.3");
  ASSERT_FALSE(path.empty());
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(path, error)) << error;
  const index::TraceIndex& ix = *scene.sources()[0].index;
  const auto catalog = scene.sources()[0].catalog;
  const auto labels = catalog->thread_labels();
  const char* channels[] = {"", "q.0*", "/q\\.1[0-2]/", "7"};
  const char* lanes[] = {"", "producer.*", "q.0?", "q.1*"};
  const char* sizes[] = {"", "size>=64", "size<64", "size=64"};
  const char* latencies[] = {"", "latency>1ms", "latency<=200us", "latency>=50us"};
  std::mt19937_64 rng(test_seed(5253));
  auto pick = [&](const auto& list) { return std::string(list[rng() % std::size(list)]); };
  int drawn = 0, rounds_with_arrows = 0;
  for (int round = 0; round < 60; ++round) {
    std::string text;
    auto add = [&](const std::string& w) {
      if (!w.empty()) text += (text.empty() ? "" : " ") + w;
    };
    const std::string ch = pick(channels), from = pick(lanes), to = pick(lanes);
    if (!ch.empty()) add("channel=" + ch);
    if (!from.empty()) add("from=" + from);
    if (!to.empty()) add("to=" + to);
    add(pick(sizes));
    add(pick(latencies));
    // MPROV's pick (either lane, a list) and orphans; and the rest greyed, not left out.
    const char* picks[] = {"", "", "q.01,q.05,producer.1", "/q\\.0[3-5]/"};
    const std::string either = pick(picks);
    if (!either.empty()) add("lanes=" + either);
    const bool orphans = rng() % 4 == 0, grey = rng() % 3 == 0;
    if (orphans) add("orphans");
    if (grey) add("rest=grey");
    auto filter = std::make_shared<analysis::MessageFilter>();
    ASSERT_TRUE(analysis::parse_message_filter(text, *filter, error)) << text << ": " << error;
    // The plain reading.
    auto label_is = [&](const std::string& pattern, uint32_t feedlet) {
      const analysis::NameMatcher m(pattern);
      const auto info = catalog->feedlets.find(feedlet);  // the label, or the thread's own name
      return pattern.empty() || (labels.count(feedlet) && m.matches(labels.at(feedlet))) ||
             (info != catalog->feedlets.end() && !info->second.name.empty() && m.matches(info->second.name));
    };
    auto passes = [&](const index::Flow& f) {
      const bool sent = f.flags & index::kFlowSent, received = f.flags & index::kFlowReceived;
      if (!ch.empty()) {
        const analysis::NameMatcher m(ch);
        if (!m.matches(std::to_string(f.channel)) && !m.matches(catalog->channel_name(f.channel))) return false;
      }
      if (!from.empty() && (!sent || !label_is(from, f.src))) return false;
      if (!to.empty() && (!received || !label_is(to, f.dst))) return false;
      if (text.find("size>=64") != std::string::npos && f.size < 64) return false;
      if (text.find("size<64") != std::string::npos && f.size >= 64) return false;
      if (text.find("size=64") != std::string::npos && f.size != 64) return false;
      const int64_t ns = f.matched() ? ix.to_ns(f.recv_ts) - ix.to_ns(f.send_ts) : 0;
      if (text.find("latency") != std::string::npos && !f.matched()) return false;
      if (text.find("latency>1ms") != std::string::npos && ns <= 1'000'000) return false;
      if (text.find("latency<=200us") != std::string::npos && ns > 200'000) return false;
      if (text.find("latency>=50us") != std::string::npos && ns < 50'000) return false;
      if (!either.empty()) {
        auto in_list = [&](uint32_t feedlet) {
          if (either[0] == '/') return label_is(either, feedlet);
          for (const char* item : {"q.01", "q.05", "producer.1"})
            if (label_is(item, feedlet)) return true;
          return false;
        };
        if (!((sent && in_list(f.src)) || (received && in_list(f.dst)))) return false;
      }
      if (orphans && f.matched()) return false;
      return true;
    };
    render::FigureParams fp;
    fp.message_filter = filter;
    const int64_t at = scene.first_ns() + int64_t(rng() % uint64_t(scene.last_ns() - scene.first_ns() - 5'000'000));
    fp.t0 = at, fp.t1 = at + 1'000'000 + int64_t(rng() % 4'000'000);
    render::TimelineRequest req = render::timeline_request(scene, fp, render::TimelineGeometry::of(render::Rect{0, 0, 1150, 900}));
    req.max_arrows = 100000;  // (every message an arrow: the set is compared)
    const render::TimelinePicture p = render::build_timeline(scene, req);
    std::multiset<uint64_t> got, want, got_grey, want_grey;
    for (const render::Arrow& a : p.arrows) (a.colour == 0xff505050u ? got_grey : got).insert(a.flow.id);
    const render::ClockWindow cw(catalog->clock, fp.t0, fp.t1);
    for (const index::Flow& f : ix.flows(cw.k0, cw.k1, SIZE_MAX, true))
      if (passes(f)) want.insert(f.id);
      else if (grey) want_grey.insert(f.id);  // (rest=grey: every other message, in grey)
    EXPECT_EQ(got, want) << "filter '" << text << "'";
    EXPECT_EQ(got_grey, want_grey) << "filter '" << text << "'";
    drawn += int(got.size());
    rounds_with_arrows += !got.empty();
  }
  EXPECT_GT(rounds_with_arrows, 10);
  EXPECT_GT(drawn, 200);
}

// The overview strip's message density: every send counted once, in its
// column or the one before (a bucket no wider than a column, counted where
// it starts).
TEST(MessageFilter, TheOverviewCountsEverySendInItsColumn) {
  const std::string path = record_queues("density", "--queues 12 --producers 2 --duration 0.2");
  ASSERT_FALSE(path.empty());
  render::Scene scene;
  std::string error;
  ASSERT_TRUE(scene.add_trace(path, error)) << error;
  for (float width : {1.f, 97.f, 1000.f}) {
    render::TimelineRequest req = render::overview_request(scene, width);
    const render::TimelinePicture p = render::build_timeline(scene, req);
    ASSERT_EQ(p.message_density.size(), p.columns);
    EXPECT_TRUE(p.arrows.empty());
    std::vector<uint64_t> want(p.columns, 0);
    const index::TraceIndex& ix = *scene.sources()[0].index;
    const render::ClockWindow cw(scene.sources()[0].catalog->clock, req.t0, req.t1);
    uint64_t sends = 0;
    for (const index::Flow& f : ix.flows(0, UINT64_MAX)) {
      if (!(f.flags & index::kFlowSent)) continue;
      ++sends;
      const int64_t c = int64_t(std::floor(p.axis.x(cw.ns(f.send_ts))));
      ++want[size_t(std::clamp<int64_t>(c, 0, p.columns - 1))];
    }
    uint64_t got_sum = 0, want_sum = 0;
    for (size_t c = 0; c < p.columns; ++c) {
      got_sum += p.message_density[c], want_sum += want[c];
      EXPECT_GE(got_sum, want_sum) << "column " << c << " of " << p.columns;
      EXPECT_LE(got_sum, want_sum + (c + 1 < p.columns ? want[c + 1] : 0)) << "column " << c;
    }
    EXPECT_EQ(got_sum, sends);
    EXPECT_GT(sends, 1000u);
  }
}

}  // namespace
}  // namespace tinescope::test
