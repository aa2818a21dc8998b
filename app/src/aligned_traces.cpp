// Several traces on one clock, as `view`, `render` and `align` open them.
#include <cstdio>

#include "commands.hpp"
#include "figure_options.hpp"
#include "tinescope/analysis/clock_align.hpp"

namespace tinescope::app {

std::vector<std::shared_ptr<index::TraceIndex>> open_aligned(const char* command, const std::vector<std::string>& traces,
                                                             const std::vector<std::string>& clocks, bool quiet,
                                                             analysis::ClockAlignment* alignment, FILE* fit_to,
                                                             std::shared_ptr<const analysis::CrossMessages>* across) {
  std::vector<std::shared_ptr<index::TraceIndex>> out;
  auto failed = [&](const std::string& why) {
    std::fprintf(stderr, "tinescope %s: %s\n", command, why.c_str());
    out.clear();
    return out;
  };
  std::vector<analysis::ClockChoice> choices(traces.size());
  for (const std::string& c : clocks) {
    const size_t eq = c.rfind('=');
    if (eq == std::string::npos) return failed("--clock wants TRACE=auto|none|+OFFSET, not '" + c + "'");
    const std::string trace = c.substr(0, eq);
    size_t which = traces.size();
    for (size_t t = 0; t < traces.size() && which == traces.size(); ++t) {
      const std::string& p = traces[t];
      const size_t slash = p.rfind('/');
      if (p == trace || (slash != std::string::npos && p.substr(slash + 1) == trace)) which = t;
    }
    if (which == traces.size()) return failed("--clock " + c + ": '" + trace + "' is none of the traces given");
    std::string error;
    if (!analysis::parse_clock_choice(c.substr(eq + 1), choices[which], error)) return failed("--clock " + c + ": " + error);
  }
  for (size_t t = 0; t < traces.size(); ++t)
    for (size_t u = t + 1; u < traces.size(); ++u)
      if (traces[t] == traces[u]) return failed(traces[t] + " is given twice");
  for (const std::string& t : traces) {
    std::shared_ptr<index::TraceIndex> ix = open_index(t, quiet);
    if (!ix) return out.clear(), out;
    out.push_back(std::move(ix));
  }
  if (out.size() < 2 && clocks.empty()) return out;
  if (out.size() < 2) return failed("--clock puts a trace on another's clock: give two traces or more");
  std::vector<index::TraceIndex*> raw;
  for (auto& ix : out) raw.push_back(ix.get());
  analysis::ClockAlignment a;
  std::string error;
  if (!analysis::align_traces(raw, choices, a, error)) return failed(error);
  if (across) {
    std::vector<const index::TraceIndex*> traces_read(raw.begin(), raw.end());
    std::vector<uint32_t> clock_of;
    for (const analysis::TraceClock& c : a.clocks) clock_of.push_back(c.reference);
    auto m = std::make_shared<analysis::CrossMessages>(analysis::match_across(traces_read, clock_of));
    a.report.push_back(std::to_string(m->messages.size()) + " messages between the traces (matched by id and channel)");
    if (m->ambiguous)
      a.warn(std::to_string(m->ambiguous) + " message halves share their id and channel with another trace's: left unmatched");
    if (m->early)
      a.warn(std::to_string(m->early) + " messages between the traces arrive before they were sent once the clocks are aligned");
    *across = std::move(m);
  }
  if (fit_to)
    for (const std::string& line : a.report) std::fprintf(fit_to, "%s\n", line.c_str());
  if (alignment) *alignment = std::move(a);
  return out;
}

void add_align_command(CLI::App& app, int* exit_code) {
  auto traces = std::make_shared<std::vector<std::string>>();
  auto clocks = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "align", "how several traces' clocks fit onto the first's, from their clock sync messages, and the messages "
               "between them (exit 1 if a message then arrives before it was sent)");
  cmd->add_option("traces", *traces, "trace files, the first the reference")->required()->expected(2, -1);
  add_clock_option(*cmd, *clocks);
  cmd->add_flag("--json", *json, "the fit as JSON on stdout");
  cmd->callback([=] {
    analysis::ClockAlignment a;
    std::shared_ptr<const analysis::CrossMessages> across;
    const auto indexes = open_aligned("align", *traces, *clocks, true, &a, nullptr, &across);
    if (indexes.empty()) return void(*exit_code = 1);
    if (*json) {
      static const char* kHow[] = {"reference", "fitted", "offset only", "given", "own clock"};
      nlohmann::json j{{"unmatched_sync", a.unmatched},
                       {"reused_sync_ids", a.reused},
                       {"sync_before_sent", a.early},
                       {"messages_between", across->messages.size()},
                       {"messages_before_sent", across->early},
                       {"messages_ambiguous", across->ambiguous},
                       {"warnings", a.warnings}};
      for (size_t t = 0; t < indexes.size(); ++t) {
        const analysis::TraceClock& c = a.clocks[t];
        j["traces"].push_back({{"trace", (*traces)[t]},
                               {"how", kHow[c.how]},
                               {"offset_ns", c.line.offset},
                               {"rate", c.line.rate},
                               {"reference", (*traces)[c.reference]},
                               {"sync_to_peer", c.there},
                               {"sync_from_peer", c.back}});
      }
      std::printf("%s\n", j.dump(1).c_str());
    } else {
      for (const std::string& line : a.report) std::printf("%s\n", line.c_str());
    }
    if (a.early || across->early) *exit_code = 1;
  });
}

int open_figure(const char* command, const std::vector<std::string>& traces, const FigureOptions& o,
                render::Scene& scene, render::FigureParams& f, render::Marks& marks) {
  analysis::ClockAlignment alignment;
  const auto indexes = open_aligned(command, traces, o.clocks, false, &alignment, stderr, &scene.across);
  if (indexes.empty() && !traces.empty()) return 1;
  for (const auto& ix : indexes) scene.add_index(ix);
  scene.warnings = alignment.warnings;
  if (indexes.size() > 1) {
    std::vector<const index::TraceIndex*> raw;
    for (const auto& ix : indexes) raw.push_back(ix.get());
    scene.sync = std::make_shared<analysis::SyncArrows>(analysis::sync_arrows(raw, alignment));
  }
  std::string error;
  if (!figure_params(o, scene, f, marks, error)) {
    std::fprintf(stderr, "tinescope %s: %s\n", command, error.c_str());
    return 2;
  }
  return 0;
}

}  // namespace tinescope::app
