#include <CLI/CLI.hpp>

#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tinescope: a GPU oscilloscope for huge event traces"};
  app.require_subcommand(1);
  int exit_code = 0;
  tinescope::app::add_dump_command(app, &exit_code);
  tinescope::app::add_index_commands(app, &exit_code);
  tinescope::app::add_analysis_commands(app, &exit_code);
  tinescope::app::add_check_command(app, &exit_code);
  tinescope::app::add_align_command(app, &exit_code);
  tinescope::app::add_render_command(app, &exit_code);
  tinescope::app::add_view_command(app, &exit_code);
  tinescope::app::add_record_command(app, &exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
