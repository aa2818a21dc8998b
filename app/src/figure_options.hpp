// Command-line options that choose what a figure shows, shared by
// `tinescope view` and `tinescope render` so both read them the same way.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "tinescope/analysis/categories.hpp"
#include "tinescope/analysis/protocol_rules.hpp"
#include "tinescope/analysis/stream_expr.hpp"
#include "tinescope/render/figure_params.hpp"

namespace tinescope::app {

struct FigureOptions {
  std::string figure = "timeline";
  std::string from, to, period, lanes, lane_order, cursor, select, hide_categories, rules, messages, spacing,
      lifelines, collapse, active, fold_mode;
  std::vector<std::string> clocks;  // --clock TRACE=auto|none|+OFFSET
  uint32_t fold = 1, strip_px = 8;
  double theta = 0;  // per microsecond on the command line
  float names_px = render::TimelineGeometry::kNamesPx;
};

// --clock TRACE=auto|none|+OFFSET, for commands that take several traces
// (open_aligned, commands.hpp).
void add_clock_option(CLI::App& cmd, std::vector<std::string>& clocks);
// `more_figures`: figures this command draws besides the timeline and scope.
// `several`: --figure takes a comma-separated list (render's stacked figures).
void add_figure_options(CLI::App& cmd, FigureOptions& o, const std::vector<std::string>& more_figures = {},
                        bool several = false);
// "1.5s", "300us", "45.3515us", "12ns", "7" (ns): nanoseconds (fractions kept).
bool parse_duration(const std::string& text, double& ns);
// FigureParams for the scene; false with a message for a bad value.
bool figure_params(const FigureOptions& o, const render::Scene& scene, render::FigureParams& f,
                   render::Marks& marks, std::string& error);

// The names each source hides where `hidden` categories are hidden
// ([source][string id]; analysis::hidden_names), from each source's
// categories (null: a source not scanned, nothing hidden there).
std::shared_ptr<const std::vector<std::vector<uint8_t>>> hidden_names(
    const std::vector<std::shared_ptr<const analysis::Categories>>& per_source, const std::vector<std::string>& hidden);

// What `view` and `render` both do first: index and open the traces (on
// the first one's clock: open_aligned), then read the figure options
// against them. Returns 0, or the exit status after
// printing "tinescope COMMAND: why" (1: a trace, 2: an option).
int open_figure(const char* command, const std::vector<std::string>& traces, const FigureOptions& o,
                render::Scene& scene, render::FigureParams& f, render::Marks& marks);

}  // namespace tinescope::app
