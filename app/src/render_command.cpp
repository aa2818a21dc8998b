// `tinescope render TRACE... -o out.png`: a figure drawn headless through
// EGL, exactly as the viewer draws it at the same size.
#include <cctype>
#include <cstdio>

#include "commands.hpp"
#include "figure_options.hpp"
#include "tinescope/render/headless.hpp"

namespace tinescope::app {

namespace {

struct RenderArgs {
  std::vector<std::string> traces;
  std::string size = "1280x800", out;
  FigureOptions figure;
};

int run_render(const RenderArgs& a) {
  int w = 0, h = 0;
  if (std::sscanf(a.size.c_str(), "%dx%d", &w, &h) != 2 || w < 64 || h < 64 || w > 16384 || h > 16384) {
    std::fprintf(stderr, "tinescope render: --size wants WxH (64..16384), not '%s'\n", a.size.c_str());
    return 2;
  }
  // PNG only, so far: a name that asks for another format is refused, not
  // answered with a PNG under that name.
  const size_t dot = a.out.rfind('.');
  std::string ext = dot == std::string::npos || a.out.find('/', dot) != std::string::npos ? "" : a.out.substr(dot + 1);
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (ext != "png") {
    std::fprintf(stderr, "tinescope render: %s: writes PNG pictures only; name the output .png\n", a.out.c_str());
    return 2;
  }
  render::Scene scene;
  render::FigureParams f;
  render::Marks marks;
  if (int status = open_figure("render", a.traces, a.figure, scene, f, marks)) return status;
  std::string error;
  auto r = render::HeadlessRenderer::create(w, h, error);
  if (!r) {
    std::fprintf(stderr, "tinescope render: %s\n", error.c_str());
    return 1;
  }
  const auto t = r->draw(scene, f, marks);
  if (!render::write_png(a.out, w, h, r->context().read_rgba(), error)) {
    std::fprintf(stderr, "tinescope render: %s\n", error.c_str());
    return 1;
  }
  std::printf("%s: %dx%d %s (build %.1f ms, draw %.1f ms, %llu primitives, %s)\n", a.out.c_str(), w, h,
              a.figure.figure.c_str(), t.build_ms, t.draw_ms, (unsigned long long)t.primitives,
              r->context().renderer().c_str());
  return 0;
}

}  // namespace

void add_render_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<RenderArgs>();
  CLI::App* cmd = app.add_subcommand("render", "draw a figure to a PNG, with no window (EGL)");
  cmd->add_option("traces", args->traces, "trace files (indexed if needed)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", args->out, "PNG to write")->required();
  cmd->add_option("--size", args->size, "WxH in pixels");
  add_figure_options(*cmd, args->figure);
  cmd->callback([args, exit_code] { *exit_code = run_render(*args); });
}

}  // namespace tinescope::app
