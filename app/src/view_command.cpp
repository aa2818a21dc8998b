// `tinescope view TRACE...`: the desktop viewer.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "commands.hpp"
#include "figure_options.hpp"
#include "tinescope/render/headless.hpp"
#include "tinescope/app/viewer.hpp"

namespace tinescope::app {

namespace {

struct ViewArgs {
  std::vector<std::string> traces;
  std::vector<std::string> live, follow;
  std::string save_dir;
  std::string snapshot;  // with --frames: the last frame as PNG
  std::string size = "1280x800";
  FigureOptions figure;
  int frames = 0;  // stop after this many frames (0: until closed)
  std::string stream, bookmark;  // streams to evaluate in the analysis panel
  std::string panel;             // the analysis panel's tab to open
};

int run_view(const ViewArgs& a) {
  ViewerOptions options;
  if (std::sscanf(a.size.c_str(), "%dx%d", &options.width, &options.height) != 2 || options.width < 320 ||
      options.height < 240) {
    std::fprintf(stderr, "tinescope view: --size wants WxH, not '%s'\n", a.size.c_str());
    return 2;
  }
  if (a.traces.empty() && a.live.empty() && a.follow.empty()) {
    std::fprintf(stderr, "tinescope view: give traces, --live ADDRESS or --follow FILE\n");
    return 2;
  }
  // Live sources first: they wait for their source, and the window may take a while to open.
  std::vector<std::shared_ptr<index::LiveSource>> live;
  index::LiveOptions lo;
  lo.save_dir = a.save_dir;
  std::string error;
  for (const std::string& address : a.live) {
    auto src = index::LiveSource::start(address, lo, error);
    if (!src) {
      std::fprintf(stderr, "tinescope view: %s\n", error.c_str());
      return 2;
    }
    live.push_back(std::move(src));
  }
  for (const std::string& file : a.follow) {
    auto src = index::LiveSource::start("file:" + file, lo, error);
    if (!src) {
      std::fprintf(stderr, "tinescope view: %s\n", error.c_str());
      return 2;
    }
    live.push_back(std::move(src));
  }
  auto scene = std::make_shared<render::Scene>();
  render::FigureParams f;
  render::Marks marks;
  if (int status = open_figure("view", a.traces, a.figure, *scene, f, marks)) return status;
  options.title = "tinescope - " + (!a.traces.empty() ? a.traces[0] : !a.live.empty() ? a.live[0] : a.follow[0]);
  options.capture = !a.snapshot.empty();
  auto viewer = Viewer::create(scene, f, marks, options, error);
  if (!viewer) {
    std::fprintf(stderr, "tinescope view: %s\n(with no display, `tinescope render` draws the same figures to PNG)\n",
                 error.c_str());
    return 1;
  }
  for (auto& src : live) viewer->add_live(src);
  if (!a.bookmark.empty()) viewer->evaluate_stream(a.bookmark, true);
  else if (!a.stream.empty()) viewer->evaluate_stream(a.stream, false);
  if (!a.panel.empty()) viewer->show_analysis(true), viewer->analysis().show_tab(a.panel);
  if (a.frames > 0) {
    for (int i = 0; i < a.frames && viewer->frame(); ++i)
      if (!live.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(16));
  } else {
    viewer->run();
  }
  if (!a.snapshot.empty()) {
    if (!render::write_png(a.snapshot, viewer->fb_width(), viewer->fb_height(), viewer->pixels(), error)) {
      std::fprintf(stderr, "tinescope view: %s\n", error.c_str());
      return 1;
    }
    std::printf("wrote %s\n", a.snapshot.c_str());
  }
  viewer.reset();
  for (auto& src : live) src->stop();  // finishes the captures' indexes
  for (auto& src : live)
    if (src->status().connections) std::printf("%s: saved to %s\n", src->address().c_str(), src->status().saving_to.c_str());
  return 0;
}

}  // namespace

void add_view_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ViewArgs>();
  CLI::App* cmd = app.add_subcommand("view", "open the viewer on traces (indexed if needed)");
  cmd->add_option("traces", args->traces, "trace files")->check(CLI::ExistingFile);
  cmd->add_option("--live", args->live,
                  "watch a recorder's live feed (unix:PATH or tcp:HOST:PORT, as in TINESCOPE_LIVE); repeatable");
  cmd->add_option("--follow", args->follow, "watch a trace file that is still being written; repeatable");
  cmd->add_option("--save-dir", args->save_dir,
                  "where live feeds are saved (default $XDG_DATA_HOME/tinescope/live)");
  cmd->add_option("--snapshot", args->snapshot, "with --frames: write the last frame to this PNG");
  cmd->add_option("--size", args->size, "window size WxH");
  cmd->add_option("--frames", args->frames, "close after this many frames (for scripts)");
  cmd->add_option("--stream", args->stream, "open the analysis panel on this stream (docs/ANALYSIS.md)");
  cmd->add_option("--panel", args->panel, "open the analysis panel on this tab")
      ->check(CLI::IsMember({"streams", "statistics", "histogram", "pie", "search", "categories", "threads"}));
  cmd->add_option("--bookmark", args->bookmark, "bookmark the intervals of this stream, e.g. 'longer(\"gc.quantum\", 1ms)'");
  add_figure_options(*cmd, args->figure);
  cmd->callback([args, exit_code] { *exit_code = run_view(*args); });
}

}  // namespace tinescope::app
