#include <CLI/CLI.hpp>

#include "commands.hpp"

#if defined(__SANITIZE_ADDRESS__)
// LeakSanitizer (the ASan suite): libtracefs keeps the tracing directory's
// path, and libtraceevent some strings of the event formats it parses, for
// the life of the process and never frees them: not this program's leaks.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libtracefs.so\nleak:libtraceevent.so\nleak:libtracecmd.so\n";
}
#endif

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
  tinescope::app::add_compare_png_command(app, &exit_code);
  tinescope::app::add_view_command(app, &exit_code);
  tinescope::app::add_record_command(app, &exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
