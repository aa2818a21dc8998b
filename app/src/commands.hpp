// The subcommands of the `tinescope` tool, one file each.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tinescope/analysis/clock_align.hpp"
#include "tinescope/analysis/message_across.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::app {

// The index of a trace, built first if need be (with a progress bar unless
// quiet); null after printing why.
std::unique_ptr<index::TraceIndex> open_index(const std::string& trace, bool quiet, bool force = false);

// The indexes of the traces, built first if need be, every one on the
// first's clock: fitted from their clock sync messages, or as --clock says
// (analysis/clock_align.hpp). The fit and its warnings go to `fit_to`
// (null: nowhere). With `across`, the messages between the traces are
// matched too (one trace alone: none). Empty after printing "tinescope COMMAND: why".
std::vector<std::shared_ptr<index::TraceIndex>> open_aligned(const char* command, const std::vector<std::string>& traces,
                                                             const std::vector<std::string>& clocks, bool quiet,
                                                             analysis::ClockAlignment* alignment = nullptr,
                                                             FILE* fit_to = stderr,
                                                             std::shared_ptr<const analysis::CrossMessages>* across = nullptr);
// --clock: add_clock_option (figure_options.hpp).
// `align`: prints how several traces' clocks fit onto the first's.
void add_align_command(CLI::App& app, int* exit_code);

// Adds `dump` to the tool; the callback runs it and sets *exit_code.
void add_dump_command(CLI::App& app, int* exit_code);
// `index`, `info` and `stats`.
void add_index_commands(CLI::App& app, int* exit_code);
// `render`: figures to a PNG, SVG or PDF, headless.
void add_render_command(CLI::App& app, int* exit_code);
// `compare-png`: two pictures pixel by pixel (exit 1 and a picture where they differ).
void add_compare_png_command(CLI::App& app, int* exit_code);
// `find`, `stream` and `compare`: analysis for scripts and CI; and the
// duration table of `stats`.
void add_analysis_commands(CLI::App& app, int* exit_code);
// Adds out["durations"]: count, total, min, mean, max and percentiles per
// name (and per thread) of an interval stream ("" : every interval).
bool add_duration_table(nlohmann::json& out, const index::TraceIndex& ix, const std::string& stream, bool by_thread,
                        std::string& error);
void print_duration_table(const nlohmann::json& table);
// Adds out["tasks"]: per task its jobs, response, execution and waiting
// times, deadlines missed, preemptions and migrations (analysis/jobs.hpp).
void add_task_table(nlohmann::json& out, const index::TraceIndex& ix);
void print_task_table(const nlohmann::json& j);
// Adds out["locks"]: per lock its acquires, contended ones, waits and holds (analysis/locks.hpp).
void add_lock_table(nlohmann::json& out, const index::TraceIndex& ix);
void print_lock_table(const nlohmann::json& j);
// `check`: the trace's messages against protocol rules (exit 1 on a violation).
void add_check_command(CLI::App& app, int* exit_code);
// `view`: the desktop viewer.
void add_view_command(CLI::App& app, int* exit_code);
// `record`: runs a program with the recorder on, and the kernel's scheduling.
void add_record_command(CLI::App& app, int* exit_code);

}  // namespace tinescope::app
