// The subcommands of the `tinescope` tool, one file each.
#pragma once

#include <CLI/CLI.hpp>

namespace tinescope::app {

// Adds `dump` to the tool; the callback runs it and sets *exit_code.
void add_dump_command(CLI::App& app, int* exit_code);
// `index`, `info` and `stats`.
void add_index_commands(CLI::App& app, int* exit_code);
// `render`: a figure to a PNG, headless.
void add_render_command(CLI::App& app, int* exit_code);
// `view`: the desktop viewer.
void add_view_command(CLI::App& app, int* exit_code);

}  // namespace tinescope::app
