// The desktop viewer: a GLFW window with Dear ImGui controls around figures
// drawn by the GL renderer. Figures (timelines and oscilloscopes) share one
// view window, one cursor, one selection and one set of bookmarks, and move
// together. Pictures are built on a worker thread; the UI draws the last
// picture re-projected until the new one arrives, so it never waits on disk.
#pragma once

#define GLFW_INCLUDE_NONE  // epoxy provides the GL declarations
#include <GLFW/glfw3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tinescope/analysis/event_details.hpp"
#include "tinescope/analysis/message_chain.hpp"
#include "tinescope/app/analysis_panel.hpp"
#include "tinescope/render/figure_params.hpp"
#include "tinescope/render/gl_renderer.hpp"
#include "tinescope/index/live_source.hpp"

namespace tinescope::app {

struct ViewerOptions {
  int width = 1280, height = 800;
  bool vsync = true;
  bool capture = false;  // keep every frame's pixels (tests)
  int max_fps = 60;      // while playing or live (llvmpipe would otherwise draw as fast as it can)
  std::string title = "tinescope";
};

class Viewer {
 public:
  // Opens the window (needs a display). `first` is the first figure; a scope
  // figure comes with a timeline above it.
  static std::unique_ptr<Viewer> create(std::shared_ptr<render::Scene> scene, const render::FigureParams& first,
                                        const render::Marks& marks, const ViewerOptions& options, std::string& error);
  ~Viewer();

  // Watches a live source: its captures join the scene as they arrive and
  // the view follows "now" (play mode Live) until told otherwise.
  void add_live(std::shared_ptr<index::LiveSource> source);

  // TiVo controls, for every figure at once (buttons and keys call these).
  enum class Play { Paused, Playing, Live };
  void pause() { play_ = Play::Paused; }
  void play(bool reverse);  // at speed()
  void go_live();
  void set_speed(double s) { speed_ = std::clamp(s, kMinSpeed, kMaxSpeed); }
  void step(int direction);  // by one window span, back (-1) or forward (+1)
  void jump_bookmark(int direction);
  // Orders every timeline's lanes (the "lanes:" buttons; render::order_lanes).
  void set_lane_order(render::LaneOrder order);
  // Draws only the messages `text` passes in every timeline (the top bar's
  // "messages" field; analysis::parse_message_filter): false, with the
  // error shown beside the field, if it does not parse.
  bool set_message_filter(const std::string& text);
  Play play_mode() const { return play_; }
  bool reverse() const { return reverse_; }
  double speed() const { return speed_; }
  static constexpr double kMinSpeed = 0.01, kMaxSpeed = 1000;
  // "Now" of the live sources: the newest data, advanced smoothly by the
  // wall clock since it arrived.
  int64_t live_now() const { return live_now_; }
  int64_t window_t0() const { return t0_; }
  int64_t window_t1() const { return t1_; }
  // Everything the live sources said so far, oldest first.
  const std::vector<index::LiveMessage>& messages() const { return messages_; }
  // The newest data time shown by every figure's picture (INT64_MIN if none
  // yet): an event with a time at or before it is on screen.
  int64_t shown_until() const;

  // The details panel: the selected item's (or message's) events with every
  // field, as read from the trace, and the lines the panel showed last frame.
  const std::vector<analysis::EventView>& selected_events() const { return selected_events_; }
  const std::vector<std::string>& details_lines() const { return details_lines_; }

  // One frame: events, controls, figures, swap. False once the window is closed.
  bool frame();
  void run();

  // ---- for tests and tools (all on the UI thread)
  // The last frame's pixels, top row first, RGBA8 (captured before the swap).
  const std::vector<uint8_t>& pixels() const { return pixels_; }
  int fb_width() const { return fb_w_; }
  int fb_height() const { return fb_h_; }
  void window_pos(int& x, int& y) const { glfwGetWindowPos(window_, &x, &y); }
  // Frames until every figure shows the picture for its current state.
  bool settle(int max_frames = 400);
  // Screen rectangle (window coordinates) of a named control of the last frame.
  render::Rect control(const std::string& id) const;
  struct Figure;
  size_t figure_count() const { return figures_.size(); }
  const render::FigureParams& figure_params(size_t i) const;
  render::Rect figure_rect(size_t i) const;
  render::Rect plot_rect(size_t i) const;
  const render::TimeAxis& figure_axis(size_t i) const;  // timeline: the mapping on screen
  // The timeline picture figure i shows (null for a scope or none yet).
  const render::TimelinePicture* figure_timeline(size_t i) const;
  // The scope picture figure i shows (null for another figure or none yet).
  const render::ScopePicture* figure_scope(size_t i) const;
  // The sequence diagram figure i shows (null for another figure or none yet).
  const render::SequencePicture* figure_sequence(size_t i) const;
  // Adds a figure below the others (the "+ Timeline", "+ Scope" and "+ Sequence" buttons).
  void add_figure(render::FigureParams::Type type);
  // The spacing of every sequence diagram (its "spacing" control).
  void set_spacing(render::Spacing spacing);
  // A lifeline per lane, or per queue, in every sequence diagram (its "lifelines" control).
  void set_lifelines(render::Lifelines lifelines);
  const render::Marks& marks() const { return marks_; }
  const render::Scene& scene() const { return *scene_; }
  // The analysis panel (right): streams, statistics, histogram, search.
  AnalysisPanel& analysis() { return analysis_; }
  void show_analysis(bool open) { analysis_open_ = open; }
  // Opens the panel and evaluates a stream (its text as on the command
  // line); with bookmark, its intervals become the bookmarks.
  void evaluate_stream(const std::string& text, bool bookmark) {
    analysis_open_ = true;
    analysis_.evaluate(shared_view(), text, bookmark);
  }
  bool analysis_shown() const { return analysis_open_; }
  // The evaluated stream's figure, under the others (empty if none).
  render::Rect stream_figure_rect() const { return stream_figure_rect_; }

 private:
  Viewer() = default;
  void controls();
  void layout_figures(float top);
  // Figure f shows a timeline that the worker is to draw again at rest.
  bool awaits_rest(const Figure& f) const;
  void handle_input();
  // A key press (or repeat) as GLFW reports it, queued: a quick tap goes
  // down and up within one frame, where ImGui 1.86's key state never shows it.
  static void on_key(GLFWwindow* window, int key, int scancode, int action, int mods);
  void apply_key(int key, double at);  // one queued key, in order
  std::vector<int> keys_;               // pressed since the last frame
  void handle_timeline_input(Figure& f, size_t index);
  void handle_scope_input(Figure& f);
  void handle_sequence_input(Figure& f, size_t index);
  void sequence_tooltip(const Figure& f);
  int lifeline_at(const Figure& f, float x) const;  // the sequence diagram's lifeline at x, or -1
  // What is under (x, y) in a timeline figure: the row, the picture's
  // column, and the interval drawn there when it is wide enough to be a box.
  struct Hit {
    int row = -1;
    float column = 0;
    const render::Box* box = nullptr;
    const render::Arrow* arrow = nullptr;  // no box there: a message's arrow within a few pixels
  };
  // Selects what a click hit: its events are read from the trace for the details panel.
  void select(const Figure& f, const Hit& h);
  // A box's events with every field, from the trace (false with why).
  // A task row's box: its job's arrival, deadline, response, miss (the hover tooltip).
  static void job_tooltip(const render::Scene& scene, const render::Box& b);
  // The job a segment in a task's or a CPU's row is of (null if none is
  // known), and what the details panel and the tooltip say of it.
  static const analysis::JobMark* job_of(const render::Scene& scene, const render::Box& b);
  static std::vector<std::string> job_lines(const render::Scene& scene, uint32_t source, const analysis::JobMark& j);
  static bool box_events(const render::Scene& scene, const render::Lane& lane, const render::Row& row,
                         const render::Box& b, std::vector<analysis::EventView>& out, std::string& why);
  std::tuple<uint32_t, uint32_t, int64_t, int64_t, uint32_t> hover_key_{};  // the box the tooltip's events are of
  std::vector<analysis::EventView> hover_events_;
  void event_fields(const analysis::EventView& v);
  Hit hit(const Figure& f, float x, float y) const;
  void tooltip(Figure& f);
  void details();
  // The messages in flight at the cursor (sent, not yet received), per
  // trace and channel: what each queue or buffer holds then (Grasp §3.3).
  // Read again when the cursor moves.
  void in_flight_lines(std::vector<std::string>& out);
  static constexpr size_t kMaxInFlight = 1000;  // listed per trace
  void request_pictures();
  void worker_loop();
  void zoom(double factor, double at_x);
  void zoom_about(double factor, int64_t at);  // the time `at` stays put
  void fit();
  void set_window(int64_t t0, int64_t t1);
  void record_control(const char* id);  // the last ImGui item's rectangle, for control()
  void play_controls();
  void timeline_controls();
  void advance_play();
  void live_panel();
  SharedView shared_view();
  // Activity markers (render/activity.hpp): marks_.active is the function
  // pointed at this frame (a box under the mouse, a row of the statistics
  // table or of a thread overview), else the selected interval's, else
  // pinned_active_ (`view --active`); where it
  // runs in the window is found off the UI thread, one search at a time.
  void update_activity();
  std::string pointed_, pinned_active_;
  std::tuple<std::string, int64_t, int64_t, uint64_t, uint32_t> activity_asked_;
  std::future<std::pair<std::string, std::vector<render::ActiveSpan>>> activity_job_;
  // Worker: a new scene when the live sources have grown (at most every few ms).
  void refresh_live(const std::vector<std::shared_ptr<index::LiveSource>>& live,
                    std::shared_ptr<render::Scene>& scene);

  std::shared_ptr<render::Scene> scene_;
  GLFWwindow* window_ = nullptr;
  ViewerOptions options_;
  render::GlRenderer gl_;
  std::vector<std::unique_ptr<Figure>> figures_;
  render::Marks marks_;
  int fb_w_ = 0, fb_h_ = 0;
  std::vector<uint8_t> pixels_;
  std::vector<std::pair<std::string, render::Rect>> controls_;
  std::vector<analysis::PeriodCandidate> period_candidates_;  // the scope's, from "Find period"
  std::string period_found_;                                  // what it found, where it found nothing
  char message_filter_text_[256] = {};
  std::string message_filter_error_;
  AnalysisPanel analysis_;
  bool analysis_open_ = false;
  render::Rect stream_figure_rect_;

  // Shared view: every figure shows [t0, t1) (a scope starts its strips at t0).
  int64_t t0_ = 0, t1_ = 1;
  double theta_us_ = 0;  // the warp, per microsecond, as the slider shows it

  // Overview of the whole scene.
  std::shared_ptr<render::TimelinePicture> overview_;
  render::TextureSlot overview_slot_;
  render::Rect overview_rect_;

  // Mouse gestures.
  enum class Drag { None, Pan, Select, Overview, ScopePan, SequencePan, Names } drag_ = Drag::None;
  double drag_x_ = 0, drag_y_ = 0;
  int64_t drag_t0_ = 0, drag_t1_ = 0, drag_anchor_ = 0;
  bool drag_moved_ = false;
  size_t drag_figure_ = 0;

  // The selected interval or message, for the details panel.
  bool has_selected_ = false;
  bool selected_message_ = false;  // an arrow: selected_flow_, not selected_
  render::Box selected_{};
  index::Flow selected_flow_{};
  uint32_t selected_source_ = 0;
  std::string selected_name_, selected_thread_, selected_process_;
  std::string selected_running_;  // a message: the interval running on its receiver when it arrived
  std::vector<std::string> selected_job_;  // a job's segment: its record (job_lines)
  bool selected_lock_ = false;             // a lock's hold (selected_.depth: the feedlet that held it)
  int64_t selected_job_span_[2] = {0, 0};   // ns: its arrival and completion (or last event)
  static constexpr size_t kMaxChainHops = 200;
  analysis::MessageChain selected_chain_;  // a message: its causes and effects (marks_.chain draws them)
  std::vector<analysis::EventView> selected_events_;
  std::string selected_error_;  // why its events could not be read
  std::vector<std::string> details_lines_;
  int64_t in_flight_cursor_ = INT64_MIN;  // the cursor in_flight_ was read at, and the traces' events then
  uint64_t in_flight_events_ = 0;
  std::vector<std::string> in_flight_;

  // Playing and live sources.
  Play play_ = Play::Paused;
  bool reverse_ = false;
  double speed_ = 1;
  double play_carry_ns_ = 0;             // fractions of a ns between frames
  std::chrono::steady_clock::time_point last_frame_{};
  int64_t live_now_ = INT64_MIN, data_end_ = INT64_MIN;
  std::chrono::steady_clock::time_point data_end_at_{};
  std::vector<std::shared_ptr<index::LiveSource>> live_;
  std::vector<index::LiveMessage> messages_;
  std::vector<size_t> messages_seen_;   // per live source
  uint64_t scene_serial_ = 0;           // of scene_
  std::shared_ptr<render::Scene> pending_scene_;  // from the worker
  uint64_t pending_serial_ = 0;
  std::shared_ptr<render::TimelinePicture> pending_overview_;
  // The worker's own (see refresh_live).
  uint64_t live_generation_ = 0;
  std::chrono::steady_clock::time_point live_refreshed_{}, overview_built_{};
  float overview_width_ = 1280;

  // Picture building off the UI thread: latest request per figure wins.
  struct Job;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> jobs_;
  std::atomic<bool> jobs_waiting_{false};  // jobs_ is not empty: a picture at rest stops for them
  std::vector<std::shared_ptr<Job>> done_;
  bool stop_ = false;
  std::thread worker_;
  uint64_t frames_ = 0;
};

}  // namespace tinescope::app
