// TiVo mode as a person sees it: a real recording process (the demo workload)
// streams its live feed to the viewer in a real GLFW window under Xvfb; the
// controls are clicked with real X input events (xdotool) and the framebuffer
// is read back. Events appear while the process runs; pause, rewind, reverse
// play and return to live work while it keeps sending; a source killed
// mid-stream and a source of random bytes leave the viewer running with what
// it received.
#include <algorithm>
#include <filesystem>
#include <random>

#include <gtest/gtest.h>

#include "live_helpers.hpp"
#include "scratch_dir.hpp"
#include "tinescope/render/headless.hpp"
#include "tinescope/app/viewer.hpp"

namespace tinescope::test {
namespace {

using app::Viewer;

class LiveGui : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(std::getenv("DISPLAY"), nullptr) << "the GUI tests run under xvfb-run (ctest does that)";
    dir_ = fresh_scratch_dir();
    options_.save_dir = dir_ + "/saved";
    options_.retry_ms = 20;
  }
  void TearDown() override {
    if (HasFailure() && v_) {
      std::string error;
      render::write_png(dir_ + "/failure.png", v_->fb_width(), v_->fb_height(), v_->pixels(), error);
      std::printf("the window at the failure: %s/failure.png\n", dir_.c_str());
    }
    v_.reset();
    if (demo_ > 0) kill_and_reap(demo_);
  }

  void open() {
    auto scene = std::make_shared<render::Scene>();
    app::ViewerOptions o;
    o.vsync = false;
    o.capture = true;
    std::string error;
    v_ = Viewer::create(scene, {}, {}, o, error);
    ASSERT_TRUE(v_) << error;
    frames(3);
    v_->window_pos(wx_, wy_);
  }
  // Frames at about 60 a second for `seconds`.
  void frames(int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(v_->frame()) << "the viewer stopped";
      std::this_thread::sleep_for(std::chrono::milliseconds(16));
    }
  }
  void run_for(double seconds) { frames(int(seconds * 60)); }
  bool frames_until(const std::function<bool()>& done, double seconds) {
    return eventually(done, seconds, [&] { frames(1); });
  }
  void click(const std::string& control) {
    const render::Rect r = v_->control(control);
    ASSERT_GT(r.w, 0) << "no control " << control;
    const std::string cmd = "xdotool mousemove " + std::to_string(wx_ + int(r.x + r.w / 2)) + " " +
                            std::to_string(wy_ + int(r.y + r.h / 2)) + " click 1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    frames(4);
  }
  // Pixels in the upper half of the timeline's plot (the live panel sits at
  // the bottom) that are not background, in a range of its width.
  int ink(double from, double to) const {
    const render::Rect p = v_->plot_rect(0);
    int n = 0;
    for (int y = int(p.y) + 2; y < int(p.y + p.h / 2); ++y)
      for (int x = int(p.x + p.w * from); x < int(p.x + p.w * to); ++x) {
        const uint8_t* c = &v_->pixels()[(size_t(y) * v_->fb_width() + x) * 4];
        int d = 0;
        for (int k = 0; k < 3; ++k) d = std::max(d, std::abs(int(c[k]) - int(render::kBackground >> (8 * k) & 255)));
        n += d > 40;
      }
    return n;
  }
  bool said(const std::string& words) const { return mentions(v_->messages(), words); }
  uint64_t events(const index::LiveSource& s) const {
    uint64_t n = 0;
    for (auto& ix : s.indexes()) n += ix->events();
    return n;
  }

  std::string dir_;
  index::LiveOptions options_;
  std::unique_ptr<Viewer> v_;
  int wx_ = 0, wy_ = 0;
  pid_t demo_ = -1;
};

TEST_F(LiveGui, WatchPauseRewindReverseAndBackToLiveWhileTheSourceRuns) {
  const std::string address = "unix:" + dir_ + "/feed.sock";
  std::string error;
  std::shared_ptr<index::LiveSource> src = index::LiveSource::start(address, options_, error);
  ASSERT_TRUE(src) << error;
  ASSERT_NO_FATAL_FAILURE(open());
  v_->add_live(src);
  demo_ = start_demo(address, 120);
  ASSERT_TRUE(frames_until([&] { return v_->scene().lanes().size() >= 4 && v_->shown_until() > v_->scene().first_ns(); }, 30))
      << "the demo's lanes should appear";
  run_for(1.0);

  // Live: the window follows now, and new events keep appearing at its right edge.
  ASSERT_EQ(v_->play_mode(), Viewer::Play::Live);
  int edge_lit = 0;
  int64_t last_t1 = v_->window_t1(), last_shown = v_->shown_until();
  for (int i = 0; i < 10; ++i) {
    run_for(0.2);
    ASSERT_TRUE(running(demo_));
    edge_lit += ink(0.85, 1.0) > 50;
    EXPECT_GT(v_->window_t1(), last_t1) << "the live window moves with now";
    EXPECT_GT(v_->shown_until(), last_shown) << "newer events are on screen";
    last_t1 = v_->window_t1(), last_shown = v_->shown_until();
  }
  EXPECT_GE(edge_lit, 8) << "events appear at the live edge while the process runs";
  EXPECT_LT(v_->window_t1() - v_->shown_until(), int64_t(500e6)) << "within half a second of now";

  // Pause: the window holds still while recording and indexing go on.
  ASSERT_NO_FATAL_FAILURE(click("pause"));
  ASSERT_EQ(v_->play_mode(), Viewer::Play::Paused);
  const int64_t p0 = v_->window_t0(), p1 = v_->window_t1(), span = p1 - p0;
  const uint64_t indexed = events(*src);
  run_for(0.6);
  EXPECT_EQ(v_->window_t0(), p0);
  EXPECT_EQ(v_->window_t1(), p1);
  EXPECT_GT(events(*src), indexed) << "paused, the feed is still received and indexed";
  EXPECT_GT(v_->live_now(), p1) << "...and now runs on";

  // Rewind a step: the window before, with its events.
  ASSERT_NO_FATAL_FAILURE(click("step_back"));
  EXPECT_EQ(v_->window_t0(), p0 - span);
  EXPECT_EQ(v_->window_t1(), p1 - span);
  // (Its picture is built off the UI thread: under a sanitizer, a 2 s window
  // of the demo takes longer than the 18 frames that used to be waited.)
  EXPECT_TRUE(frames_until([&] { return ink(0, 1) > 2000; }, 10)) << "the rewound window shows what was recorded then";
  EXPECT_EQ(v_->window_t0(), p0 - span) << "paused: the rewound window stays";

  // Reverse play at 1x: time runs backwards at the wall clock's pace.
  ASSERT_NO_FATAL_FAILURE(click("reverse"));
  ASSERT_EQ(v_->play_mode(), Viewer::Play::Playing);
  EXPECT_TRUE(v_->reverse());
  const int64_t r0 = v_->window_t0();
  const auto wall0 = std::chrono::steady_clock::now();
  run_for(0.8);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count() * 1e9;
  const double moved = double(r0 - v_->window_t0());
  EXPECT_GT(moved, 0.6 * wall) << "reverse play moves back at about 1x";
  EXPECT_LT(moved, 1.2 * wall);
  EXPECT_GT(ink(0, 1), 2000);

  // Back to live: the window jumps to now and follows it again.
  ASSERT_NO_FATAL_FAILURE(click("live"));
  ASSERT_EQ(v_->play_mode(), Viewer::Play::Live);
  run_for(0.3);
  EXPECT_LT(std::llabs(v_->window_t1() - v_->live_now()), int64_t(50e6));
  const int64_t l1 = v_->window_t1();
  run_for(0.3);
  EXPECT_GT(v_->window_t1(), l1);
  EXPECT_TRUE(running(demo_)) << "all of this while the source kept sending";

  // The source dies mid-stream: the viewer runs on, with everything it got.
  const uint64_t before_kill = events(*src);
  kill_and_reap(demo_);
  demo_ = -1;
  ASSERT_TRUE(frames_until([&] { return said("the source closed the feed"); }, 10));
  ASSERT_TRUE(frames_until([&] { return said("saved "); }, 10));
  run_for(0.5);
  const int64_t last_data = v_->shown_until();
  run_for(1.0);
  EXPECT_EQ(v_->shown_until(), last_data) << "nothing new arrives after the kill";
  EXPECT_GT(v_->window_t1(), last_data) << "while now runs on";
  EXPECT_GE(events(*src), before_kill) << "what arrived is kept";
  ASSERT_NO_FATAL_FAILURE(click("pause"));
  ASSERT_NO_FATAL_FAILURE(click("fit"));
  run_for(0.5);
  EXPECT_GT(ink(0, 1), 4000) << "the whole recording is still drawn";

  // A source of random bytes: a clear message, and the viewer keeps going.
  FakeSource fake(dir_ + "/junk.sock", [] {
    std::mt19937_64 rng(9);
    std::string b(1 << 20, '\0');
    for (char& c : b) c = char(rng());
    return b;
  });
  ASSERT_TRUE(fake.ok());
  auto junk = index::LiveSource::start("unix:" + dir_ + "/junk.sock", options_, error);
  ASSERT_TRUE(junk) << error;
  v_->add_live(std::move(junk));
  ASSERT_TRUE(frames_until([&] { return said("not a tinescope live feed"); }, 10));
  v_->pause();
  ASSERT_NO_FATAL_FAILURE(click("fit"));
  run_for(0.5);
  EXPECT_GT(ink(0, 1), 4000) << "the data received before is intact";
  EXPECT_GE(events(*src), before_kill);
}

}  // namespace
}  // namespace tinescope::test
