// `tinescope view TRACE...`: the desktop viewer.
#include <cstdio>
#include <cstdlib>

#include "commands.hpp"
#include "figure_options.hpp"
#include "viewer.hpp"

namespace tinescope::app {

namespace {

struct ViewArgs {
  std::vector<std::string> traces;
  std::string size = "1280x800";
  FigureOptions figure;
  int frames = 0;  // stop after this many frames (0: until closed)
};

int run_view(const ViewArgs& a) {
  ViewerOptions options;
  if (std::sscanf(a.size.c_str(), "%dx%d", &options.width, &options.height) != 2 || options.width < 320 ||
      options.height < 240) {
    std::fprintf(stderr, "tinescope view: --size wants WxH, not '%s'\n", a.size.c_str());
    return 2;
  }
  auto scene = std::make_shared<render::Scene>();
  render::FigureParams f;
  render::Marks marks;
  if (int status = open_figure("view", a.traces, a.figure, *scene, f, marks)) return status;
  std::string error;
  options.title = "tinescope - " + a.traces[0];
  auto viewer = Viewer::create(scene, f, marks, options, error);
  if (!viewer) {
    std::fprintf(stderr, "tinescope view: %s\n(with no display, `tinescope render` draws the same figures to PNG)\n",
                 error.c_str());
    return 1;
  }
  if (a.frames > 0) {
    for (int i = 0; i < a.frames && viewer->frame(); ++i) {
    }
  } else {
    viewer->run();
  }
  return 0;
}

}  // namespace

void add_view_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ViewArgs>();
  CLI::App* cmd = app.add_subcommand("view", "open the viewer on traces (indexed if needed)");
  cmd->add_option("traces", args->traces, "trace files")->required()->check(CLI::ExistingFile);
  cmd->add_option("--size", args->size, "window size WxH");
  cmd->add_option("--frames", args->frames, "close after this many frames (for scripts)");
  add_figure_options(*cmd, args->figure);
  cmd->callback([args, exit_code] { *exit_code = run_view(*args); });
}

}  // namespace tinescope::app
