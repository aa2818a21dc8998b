// `tinescope compare-png A B`: two pictures (renders of one figure, before
// and after a change) compared pixel by pixel, for regression tests of
// pictures (mission story 8). Exit 0: the same within the tolerance; 1: they
// differ, and a picture of where is written; 2: a picture could not be read.
#include <cstdio>

#include "commands.hpp"
#include "tinescope/render/headless.hpp"
#include "tinescope/render/picture_diff.hpp"

namespace tinescope::app {

namespace {

struct CompareArgs {
  std::string a, b, diff;
  int tolerance = 0;
  double max_differing = 0;  // percent of the pixels
};

int run_compare_png(const CompareArgs& o) {
  int aw = 0, ah = 0, bw = 0, bh = 0;
  std::vector<uint8_t> a, b;
  std::string error;
  if (!render::read_png(o.a, aw, ah, a, error) || !render::read_png(o.b, bw, bh, b, error)) {
    std::fprintf(stderr, "tinescope compare-png: %s\n", error.c_str());
    return 2;
  }
  const render::PictureDiff d = render::compare_pictures(aw, ah, a, bw, bh, b, o.tolerance);
  if (!d.same_size) {
    std::printf("%s (%dx%d) and %s (%dx%d) differ: not the same size\n", o.a.c_str(), aw, ah, o.b.c_str(), bw, bh);
    return 1;
  }
  const double share = d.pixels ? 100.0 * double(d.differing) / double(d.pixels) : 0;
  const bool same = share <= o.max_differing;
  std::printf("%s and %s (%dx%d): %llu pixels (%.3f %%) differ by more than %d; largest difference %d at (%d, %d); "
              "mean %.3f\n",
              o.a.c_str(), o.b.c_str(), aw, ah, (unsigned long long)d.differing, share, o.tolerance, d.largest,
              d.largest_x, d.largest_y, d.mean);
  if (same) {
    std::printf("the same%s\n", d.differing ? " within the tolerance" : "");
    return 0;
  }
  std::string diff = o.diff;
  if (diff.empty()) {
    const size_t dot = o.b.rfind('.');
    diff = (dot == std::string::npos || o.b.find('/', dot) != std::string::npos ? o.b : o.b.substr(0, dot)) + ".diff.png";
  }
  if (!render::write_png(diff, aw, ah, d.picture, error)) {
    std::fprintf(stderr, "tinescope compare-png: %s\n", error.c_str());
    return 1;
  }
  std::printf("they differ: %s shows where (red)\n", diff.c_str());
  return 1;
}

}  // namespace

void add_compare_png_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand("compare-png", "compare two pictures pixel by pixel (exit 1 and a picture of the differences)");
  cmd->add_option("a", args->a, "the expected picture (PNG)")->required()->check(CLI::ExistingFile);
  cmd->add_option("b", args->b, "the picture to check (PNG)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--tolerance", args->tolerance, "a pixel differs when a channel is off by more than this (0..255; default 0)")
      ->check(CLI::Range(0, 255));
  cmd->add_option("--max-differing", args->max_differing, "percent of the pixels that may differ (default 0)")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--diff", args->diff, "where the picture of the differences goes (default: B's name + .diff.png)");
  cmd->callback([args, exit_code] { *exit_code = run_compare_png(*args); });
}

}  // namespace tinescope::app
