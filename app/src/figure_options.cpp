#include "figure_options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tinescope/render/time_axis.hpp"

namespace tinescope::app {

void add_figure_options(CLI::App& cmd, FigureOptions& o, const std::vector<std::string>& more_figures, bool several) {
  std::vector<std::string> figures = {"timeline", "scope", "sequence"};
  figures.insert(figures.end(), more_figures.begin(), more_figures.end());
  std::string help;
  for (const std::string& f : figures) help += (help.empty() ? "" : f == figures.back() ? " or " : ", ") + f;
  if (!several) {
    cmd.add_option("--figure", o.figure, help)->check(CLI::IsMember(figures));
  } else {
    // Several, comma separated: stacked top to bottom in one picture.
    cmd.add_option("--figure", o.figure, help + "; several, comma separated, are stacked in one picture")
        ->check([figures](const std::string& list) {
          for (const std::string& f : analysis::split_categories(list))
            if (std::find(figures.begin(), figures.end(), f) == figures.end()) return "not a figure: '" + f + "'";
          return std::string();
        });
  }
  cmd.add_option("--from", o.from, "start of the view, from the start of the trace (e.g. 1.5s, 300us)");
  cmd.add_option("--to", o.to, "end of the view (default: the end of the trace)");
  cmd.add_option("--period", o.period,
                 "scope: strip duration (e.g. 45.3515us), or auto: found from the folded lanes' starts (the default)");
  cmd.add_option("--fold-mode", o.fold_mode,
                 "scope: how folded periods combine: mean (the share of periods busy; the default), max (busy in any "
                 "period: rare events show) or min (busy in every period)")
      ->check(CLI::IsMember({"mean", "max", "min"}));
  cmd.add_option("--fold", o.fold, "scope: periods overlaid in each strip (1..65536)")->check(CLI::Range(1, 65536));
  cmd.add_option("--strip", o.strip_px, "scope: strip height in pixels (>= 1)")->check(CLI::Range(1, 1000));
  cmd.add_option("--theta", o.theta, "log-time warp: 0 is linear; larger opens up bursts (per microsecond)");
  cmd.add_option("--lanes", o.lanes,
                 "lanes by number (as info prints them), thread or process name, glob or /regex/, comma "
                 "separated; !X leaves the lanes X names out (alone: every other lane)");
  cmd.add_option("--lane-order", o.lane_order,
                 "timeline, sequence: first (as the lanes appeared; the default), name, process, or arrows (the order that makes "
                 "the message arrows shortest)")
      ->check(CLI::IsMember({"first", "name", "process", "arrows"}));
  cmd.add_option("--spacing", o.spacing,
                 "sequence: time (ends placed by real time; the default) or order (each send and receive one step)")
      ->check(CLI::IsMember({"time", "order"}));
  cmd.add_option("--lifelines", o.lifelines,
                 "sequence: threads (a lifeline a lane; the default) or queues (a lifeline a channel, under the lane "
                 "that receives most of it; a message leaves its sender's queue)")
      ->check(CLI::IsMember({"threads", "queues"}));
  cmd.add_option("--collapse", o.collapse,
                 "timeline, sequence: processes folded (a timeline: a header alone; a sequence diagram: one lifeline), "
                 "comma separated");
  cmd.add_option("--names-width", o.names_px, "timeline: the lane names' column, in pixels (long names; the viewer: drag its border)")
      ->check(CLI::Range(60, 4000));
  cmd.add_option("--hide-categories", o.hide_categories,
                 "timeline: leave out the intervals and instants of these categories, comma separated (the trace is "
                 "read once to find them)");
  cmd.add_option("--rules", o.rules,
                 "timeline, sequence: protocol rules (docs/ANALYSIS.md): arrows that break one red, those that keep them green");
  cmd.add_option("--messages", o.messages,
                 "timeline, sequence: only these messages' arrows, e.g. 'channel=q.1* from=producer* size>=1024 latency>2ms' "
                 "(docs/VIEWER.md)");
  add_clock_option(cmd, o.clocks);
  cmd.add_option("--cursor", o.cursor, "a cursor at this time");
  cmd.add_option("--select", o.select, "a selected range FROM:TO");
  cmd.add_option("--active", o.active,
                 "timeline: activity markers of this function (an interval name): where it runs, marked in every lane");
}

void add_clock_option(CLI::App& cmd, std::vector<std::string>& clocks) {
  cmd.add_option("--clock", clocks,
                 "with several traces, TRACE=auto (fitted from its clock sync messages; the default), TRACE=none (its "
                 "own clock) or TRACE=+5ms (that far after the first trace's clock); TRACE is its path or file name")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);  // (one value a --clock: trace paths after it stay traces)
}

bool parse_duration(const std::string& text, double& ns) { return analysis::parse_duration(text, ns); }

bool figure_params(const FigureOptions& o, const render::Scene& scene, render::FigureParams& f,
                   render::Marks& marks, std::string& error) {
  auto at = [&](const std::string& text, int64_t fallback, int64_t& out) {
    if (text.empty()) return out = fallback, true;
    double ns;
    if (!parse_duration(text, ns)) {
      error = "not a time: '" + text + "' (use e.g. 1.5s, 300us, 12ns)";
      return false;
    }
    out = scene.first_ns() + int64_t(std::llround(ns));
    return true;
  };
  f.type = o.figure == "scope"      ? render::FigureParams::Scope
           : o.figure == "sequence" ? render::FigureParams::Sequence
                                    : render::FigureParams::Timeline;
  const bool arrows = f.type != render::FigureParams::Scope;  // a figure that draws messages
  if (!at(o.from, scene.first_ns(), f.t0) || !at(o.to, scene.last_ns() + 1, f.t1)) return false;
  // A window that misses the trace draws nothing: say where the trace is.
  if (f.t0 > scene.last_ns() || (f.t1 < scene.first_ns() && f.t1 > f.t0)) {
    error = "the window (--from " + (o.from.empty() ? std::string("0") : o.from) + (o.to.empty() ? "" : " --to " + o.to) +
            ") lies outside the trace, which runs from 0 to " + render::format_duration(scene.last_ns() - scene.first_ns());
    return false;
  }
  if (f.t1 <= f.t0) {
    error = "--to must come after --from";
    return false;
  }
  if (!o.period.empty() && o.period != "auto" && (!parse_duration(o.period, f.period_ns) || f.period_ns <= 0)) {
    error = "not a period: '" + o.period + "'";
    return false;
  }
  f.fold = o.fold;
  if (!o.fold_mode.empty()) render::parse_fold_mode(o.fold_mode, f.fold_mode);
  f.strip_px = o.strip_px;
  f.names_px = o.names_px;
  f.theta = o.theta / 1e3;
  if (!o.lanes.empty()) {
    f.lanes = scene.select_lanes(o.lanes, error);
    if (f.lanes.empty()) return false;
  }
  if (!o.lane_order.empty() && !render::parse_lane_order(o.lane_order, f.lane_order))
    return error = "--lane-order: first, name, process or arrows", false;
  if (f.lane_order != render::LaneOrder::FirstAppearance) {
    if (!arrows) return error = "--lane-order applies to the timeline and the sequence diagram", false;
    f.lanes = render::order_lanes(scene, f.lanes, f.lane_order, &f.arrow_lengths);
  }
  if (!o.spacing.empty()) {
    if (f.type != render::FigureParams::Sequence) return error = "--spacing applies to the sequence diagram", false;
    render::parse_spacing(o.spacing, f.spacing);
  }
  if (!o.lifelines.empty()) {
    if (f.type != render::FigureParams::Sequence) return error = "--lifelines applies to the sequence diagram", false;
    render::parse_lifelines(o.lifelines, f.lifelines);
    if (f.lifelines == render::Lifelines::Queues) f.queue_map = std::make_shared<render::QueueMap>(render::queue_map(scene));
  }
  if (!o.collapse.empty()) {
    if (f.type == render::FigureParams::Scope) return error = "--collapse applies to the timeline and the sequence diagram", false;
    f.collapsed = analysis::split_categories(o.collapse);  // (a comma-separated list)
    std::vector<std::string> groups;
    for (const render::Lane& l : scene.lanes())
      if (std::find(groups.begin(), groups.end(), l.group) == groups.end()) groups.push_back(l.group);
    for (const std::string& c : f.collapsed)
      if (std::find(groups.begin(), groups.end(), c) == groups.end()) {
        std::string list;
        for (const std::string& g : groups) list += (list.empty() ? "'" : ", '") + g + "'";
        return error = "--collapse: no process is named '" + c + "' (the processes: " + list + ")", false;
      }
  }
  // A sequence diagram's lifelines: the lanes asked for that send or receive.
  if (f.type == render::FigureParams::Sequence) {
    const bool asked = !f.lanes.empty();
    f.lanes = render::message_lanes(scene, f.lanes);
    if (f.lanes.empty())
      return error = asked ? "--lanes: none of these lanes sends or receives a message" : "the trace holds no messages", false;
  }
  if (!o.hide_categories.empty() && f.type != render::FigureParams::Timeline) {
    error = "--hide-categories applies to the timeline";
    return false;
  }
  if (!o.hide_categories.empty() && analysis::split_categories(o.hide_categories).empty()) {
    error = "--hide-categories: name the categories, comma separated (tinescope stats TRACE --categories lists them)";
    return false;
  }
  if (!o.hide_categories.empty()) {
    // Every source read for its categories; a category none of them has is
    // a mistake (a typo hides nothing): say which there are.
    std::vector<std::shared_ptr<const analysis::Categories>> found;
    std::vector<std::string> known;
    for (const render::Source& src : scene.sources()) {
      auto c = std::make_shared<analysis::Categories>(analysis::scan_categories(*src.index));
      if (!c->error.empty()) {
        error = "reading " + src.path + " for its categories: " + c->error;
        return false;
      }
      for (const analysis::CategoryCount& k : c->categories)
        if (std::find(known.begin(), known.end(), k.name) == known.end()) known.push_back(k.name);
      found.push_back(std::move(c));
    }
    f.hidden_categories = analysis::split_categories(o.hide_categories);
    for (const std::string& h : f.hidden_categories)
      if (std::find(known.begin(), known.end(), h) == known.end()) {
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        error = "--hide-categories: no event is in category '" + h + "' (" +
                (known.empty() ? std::string("the trace has no intervals or instants") : "its categories: " + list) + ")";
        return false;
      }
    f.hidden_names = hidden_names(found, f.hidden_categories);
  }
  if (!o.messages.empty()) {
    if (!arrows) return error = "--messages applies to the timeline and the sequence diagram", false;
    auto filter = std::make_shared<analysis::MessageFilter>();
    if (!analysis::parse_message_filter(o.messages, *filter, error)) return error = "--messages: " + error, false;
    f.message_filter = std::move(filter);
  }
  if (!o.rules.empty()) {
    if (!arrows) return error = "--rules applies to the timeline and the sequence diagram", false;
    if (scene.sources().empty()) return error = "--rules needs the traces on the command line (not a live view)", false;
    analysis::Rules rules;
    if (!analysis::load_rules(o.rules, rules, error)) return false;
    auto verdicts = std::make_shared<std::vector<analysis::RuleReport>>();
    for (const render::Source& src : scene.sources()) verdicts->push_back(analysis::check_rules(*src.index, rules, 0, true));
    f.rules_file = o.rules;
    f.rule_verdicts = std::move(verdicts);
  }
  if (!o.cursor.empty() && !at(o.cursor, 0, marks.cursor)) return false;
  marks.active = o.active;
  if (!o.select.empty()) {
    const size_t colon = o.select.find(':');
    if (colon == std::string::npos) {
      error = "--select wants FROM:TO";
      return false;
    }
    if (!at(o.select.substr(0, colon), 0, marks.sel0) || !at(o.select.substr(colon + 1), 0, marks.sel1)) return false;
  }
  if (f.type == render::FigureParams::Scope) {
    if (f.period_ns <= 0) {
      f.period_candidates = render::find_scope_periods(scene, f);
      f.period_ns = f.period_candidates.empty() ? render::default_period_ns(scene, f) : f.period_candidates[0].period_ns;
    }
    f.follow = marks.cursor;  // (the scope keeps the cursor's strip on screen)
  }
  return true;
}

std::shared_ptr<const std::vector<std::vector<uint8_t>>> hidden_names(
    const std::vector<std::shared_ptr<const analysis::Categories>>& per_source, const std::vector<std::string>& hidden) {
  if (hidden.empty()) return nullptr;
  auto out = std::make_shared<std::vector<std::vector<uint8_t>>>(per_source.size());
  for (size_t s = 0; s < per_source.size(); ++s)
    if (per_source[s]) (*out)[s] = analysis::hidden_names(*per_source[s], hidden);
  return out;
}

}  // namespace tinescope::app
