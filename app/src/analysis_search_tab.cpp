// The analysis panel's Search tab: a regular expression over names,
// threads and message ids, and the needles (longest, outliers), as a hit
// list that zooms to a hit or becomes the bookmarks.
#include <imgui.h>

#include <algorithm>
#include <map>
#include <chrono>
#include <cmath>
#include <cstring>

#include "tinescope/app/analysis_panel.hpp"
#include <regex>

#include "tinescope/analysis/event_details.hpp"
#include "tinescope/analysis/sched_check.hpp"
#include "tinescope/analysis/message_across.hpp"
#include "tinescope/analysis/message_report.hpp"
#include "tinescope/analysis/needles.hpp"
#include "tinescope/render/figure_params.hpp"

namespace tinescope::app {

using analysis::Record;

namespace {

using Clock = std::chrono::steady_clock;

// `text` as a regular expression that matches exactly it.
std::string regex_escape(const std::string& text) {
  std::string re;
  for (char c : text) {
    if (std::strchr("\\^$.|?*+()[]{}/", c)) re += '\\';
    re += c;
  }
  return re;
}

}  // namespace

std::string exact_name_filter(const std::string& name) {
  if (name.find_first_of("*?/") == std::string::npos) return name;
  return "/^" + regex_escape(name) + "$/";
}

void AnalysisPanel::search(const SharedView& v, const std::string& pattern) {
  const render::Source* src = source(v);
  if (!src || search_job_.valid()) return;
  std::snprintf(pattern_, sizeof pattern_, "%s", pattern.c_str());
  hits_title_ = "hits for /" + pattern + "/";
  search_job_ = std::async(std::launch::async, [ix = src->index, cat = src->catalog, jobs = src->jobs, pattern] {
    std::vector<SearchHit> hits;
    std::regex re;
    try {
      re = std::regex(pattern, std::regex::ECMAScript | std::regex::icase);
    } catch (const std::regex_error& x) {
      return std::make_pair(hits, "not a regular expression: " + pattern + " (" + x.what() + ")");
    }
    const trace::ClockMap& clock = cat->clock;
    // Threads: their first event.
    for (const auto& [id, f] : cat->feedlets) {
      index::EventRef ev;
      if (!std::regex_search(f.name, re) || !ix->feedlet_event(id, 0, ev)) continue;
      const int64_t at = clock.to_ns(ev.ts);
      hits.push_back({SearchHit::Thread, at, at, "thread " + f.name});
    }
    // Intervals and instants by name, in time order (by their end), the first kMaxHits.
    std::vector<int> streams;
    const auto infos = ix->streams();
    for (size_t id = 0; id < infos.size(); ++id) {
      const auto k = infos[id].kind;
      if ((k == index::StreamKind::Interval || k == index::StreamKind::Instant) &&
          std::regex_search(std::string(cat->string(infos[id].key)), re))
        streams.push_back(int(id));
    }
    size_t total_events = 0;
    if (!streams.empty()) {
      // The names found, as one stream: an alternation of exact names.
      std::string alternation;
      std::vector<std::string> names;
      for (int id : streams) names.emplace_back(cat->string(infos[size_t(id)].key));
      std::sort(names.begin(), names.end());
      names.erase(std::unique(names.begin(), names.end()), names.end());
      for (const std::string& n : names) alternation += (alternation.empty() ? "" : "|") + regex_escape(n);
      for (analysis::Op op : {analysis::Op::Intervals, analysis::Op::Instants}) {
        analysis::Expr e;
        e.op = op;
        e.filter.name = "/^(" + alternation + ")$/";
        std::string error;
        auto c = analysis::open_cursor(*ix, e, {}, error);
        if (!c) continue;
        Record r;
        while (c->next(r)) {
          if (++total_events > kMaxHits) continue;  // counted, not listed
          hits.push_back({SearchHit::Event, clock.to_ns(r.start), clock.to_ns(r.end),
                          std::string(cat->string(r.name)) + "  (" + std::string(cat->thread_name(r.feedlet)) + ")",
                          op == analysis::Op::Intervals ? std::string(cat->string(r.name)) : std::string()});
        }
      }
    }
    // Message ids, and the names of their channels (ts_channel_name).
    size_t messages = 0;
    std::map<uint64_t, bool> channel_matches;
    for (const index::Flow& f : ix->flows(ix->first_ts(), ix->last_ts())) {
      auto [ch, fresh] = channel_matches.try_emplace(f.channel, false);
      if (fresh) {
        const std::string name = cat->channel_name(f.channel);
        ch->second = !name.empty() && std::regex_search(name, re);
      }
      if ((!ch->second && !std::regex_search(std::to_string(f.id), re)) || ++messages > kMaxHits) continue;
      const uint64_t a = f.first_half();
      const uint64_t b = (f.flags & index::kFlowReceived) ? f.recv_ts : a;
      hits.push_back({SearchHit::Message, clock.to_ns(std::min(a, b)), clock.to_ns(std::max(a, b)),
                      "message " + std::to_string(f.id) + " on " + cat->channel_label(f.channel) +
                          (f.matched() ? "" : "  (never received)")});
    }
    // Jobs (ts_sched), as "TASK job ID": each from its arrival to its completion.
    size_t jobs_found = 0;
    if (jobs)
      for (const analysis::JobMark& j : jobs->jobs) {
        const std::string text = std::string(cat->string(j.task)) + " job " + std::to_string(j.id);
        if (!std::regex_search(text, re) || ++jobs_found > kMaxHits) continue;
        hits.push_back({SearchHit::Job, clock.to_ns(j.start), clock.to_ns(j.end),
                        text + (j.missed ? "  (deadline missed)" : "") + (j.completed ? "" : "  (not completed)")});
      }
    // Field values: categories, arguments, user events' names, payloads
    // ("0x..." for bytes). Every event is decoded: O(trace).
    analysis::FieldSearch fs;
    if (!analysis::FieldSearch::hex(pattern, fs.bytes))
      fs.text = [&re](std::string_view v) { return std::regex_search(v.begin(), v.end(), re); };
    std::vector<analysis::FieldHit> field_hits;
    std::string why;
    const uint64_t fields = analysis::search_fields(*ix, fs, ix->first_ts(), ix->last_ts(), kMaxHits, field_hits, why);
    for (const analysis::FieldHit& h : field_hits) {
      const int64_t at = clock.to_ns(h.ts);
      hits.push_back({SearchHit::Event, at, at,
                      h.field + "=" + h.value.substr(0, 60) + " in " + h.event + "  (" +
                          std::string(cat->thread_name(h.feedlet)) + ")"});
    }
    std::stable_sort(hits.begin(), hits.end(), [](const SearchHit& x, const SearchHit& y) {
      // Threads first, then everything else in time order (a strict weak order).
      const bool xt = x.kind == SearchHit::Thread, yt = y.kind == SearchHit::Thread;
      return xt != yt ? xt : x.t0 < y.t0;
    });
    std::string note;
    if (total_events > kMaxHits || messages > kMaxHits || fields > kMaxHits || jobs_found > kMaxHits)
      note = "more hits than listed: " + std::to_string(total_events) + " events, " + std::to_string(messages) +
             " messages, " + std::to_string(jobs_found) + " jobs, " + std::to_string(fields) + " fields";
    if (!why.empty()) note += (note.empty() ? "" : "; ") + why;
    return std::make_pair(hits, note);
  });
}

void AnalysisPanel::find_needles(const SharedView& v, const std::string& text, bool outliers) {
  const render::Source* src = source(v);
  if (!src || search_job_.valid()) return;
  analysis::Expr e;
  std::string error;
  if (!analysis::parse_stream(text, e, error)) {
    status_ = "stream: " + error;
    return;
  }
  if (outliers && (!analysis::is_base(e.op) || e.op == analysis::Op::Messages)) {
    status_ = "outliers are found per name of a base stream, e.g. intervals(thread=\"gc\")";
    return;
  }
  char title[160];
  if (outliers) std::snprintf(title, sizeof title, "over %.3gx their name's mean", double(outlier_factor_));
  else std::snprintf(title, sizeof title, "the %d longest", needles_k_);
  hits_title_ = std::string(title) + " of " + analysis::format_stream(e);
  search_job_ = std::async(std::launch::async, [ix = src->index, cat = src->catalog, e, outliers,
                                                k = size_t(std::max(1, needles_k_)), factor = double(outlier_factor_)] {
    std::vector<SearchHit> hits;
    std::string error;
    std::vector<Record> found;
    if (outliers) {
      for (const analysis::Outlier& o : analysis::outliers(*ix, e, factor, 10)) found.push_back(o.r);
      std::sort(found.begin(), found.end(), [](const Record& a, const Record& b) { return a.duration() > b.duration(); });
    } else {
      analysis::NeedleQuery q;
      q.k = k;
      found = analysis::longest(*ix, e, q, error);
    }
    for (const Record& r : found) {
      auto f = cat->feedlets.find(r.feedlet);
      const int64_t t0 = cat->clock.to_ns(r.start), t1 = cat->clock.to_ns(r.end);
      hits.push_back({SearchHit::Event, t0, t1,
                      render::format_duration(t1 - t0) + "  " + std::string(r.name ? cat->string(r.name) : "") + "  (" +
                          (f == cat->feedlets.end() ? "" : f->second.name) + ")",
                      std::string(r.name ? cat->string(r.name) : "")});
    }
    return std::make_pair(hits, error);
  });
  show_tab("search");
}

void AnalysisPanel::find_orphans(const SharedView& v) {
  const render::Source* src = source(v);
  if (!src || search_job_.valid()) return;
  hits_title_ = "messages never received, and never sent";
  // With several traces, a half another trace sent or received is no orphan.
  const uint32_t which = uint32_t(src - v.scene->sources().data());
  search_job_ = std::async(std::launch::async, [ix = src->index, cat = src->catalog, across = v.scene->across, which] {
    const analysis::AcrossHalves halves = across ? analysis::across_halves(*across, which) : analysis::AcrossHalves{};
    const analysis::MessageReport r =
        analysis::message_report(*ix, kMaxHits + halves.sent_to_others + halves.received_from_others);
    std::vector<SearchHit> hits;
    for (const index::Flow& f : r.orphans) {
      if (across && across->find(which, f)) continue;
      if (hits.size() >= kMaxHits) break;
      const bool sent = f.flags & index::kFlowSent;
      const int64_t at = cat->clock.to_ns(sent ? f.send_ts : f.recv_ts);
      auto lane = cat->feedlets.find(sent ? f.src : f.dst);
      hits.push_back({SearchHit::Message, at, at,
                      std::string(sent ? "never received: " : "never sent: ") + "message " + std::to_string(f.id) +
                          " on channel " + cat->channel_label(f.channel) + (sent ? " from " : " to ") +
                          (lane == cat->feedlets.end() ? "?" : lane->second.name)});
    }
    const uint64_t never_received = r.all.never_received - halves.sent_to_others,
                   never_sent = r.all.never_sent - halves.received_from_others;
    std::string note = std::to_string(never_received) + " never received, " + std::to_string(never_sent) +
                       " received but never sent, of " + std::to_string(r.flows) + " messages";
    if (halves.sent_to_others + halves.received_from_others)
      note += " (" + std::to_string(halves.sent_to_others) + " sent to and " + std::to_string(halves.received_from_others) +
              " received from the other traces, not counted)";
    if (never_received + never_sent > hits.size()) note += "; the first " + std::to_string(hits.size()) + " listed";
    return std::make_pair(hits, note);
  });
}

void AnalysisPanel::find_violations(const SharedView& v) {
  const render::Source* src = source(v);
  if (!src || search_job_.valid()) return;
  hits_title_ = "scheduling checks: missed deadlines, lock misuse, priority inversions, budget overruns";
  search_job_ = std::async(std::launch::async, [ix = src->index, cat = src->catalog] {
    const analysis::SchedReport r = analysis::check_schedule(*ix, nullptr, kMaxHits);
    std::vector<SearchHit> hits;
    for (const analysis::SchedViolation& x : r.violations)
      hits.push_back({SearchHit::Event, cat->clock.to_ns(x.ts), cat->clock.to_ns(std::max(x.end, x.ts)),
                      std::string(analysis::kind_name(x.kind)) + ": " + analysis::subject(x, *cat) + ", " + x.why});
    std::string note = std::to_string(r.total) + " violations in " + std::to_string(r.jobs) + " jobs (" +
                       std::to_string(r.with_deadline) + " with a deadline) and " + std::to_string(r.locks) + " locks";
    if (r.total > hits.size()) note += "; the first " + std::to_string(hits.size()) + " listed";
    return std::make_pair(hits, note);
  });
}

void AnalysisPanel::bookmark_hits(SharedView& v) {
  std::vector<int64_t>& b = v.marks->bookmarks;
  v.marks->clear_bookmarks();
  for (const SearchHit& h : hits_) {
    b.push_back(h.t0);
    if (h.kind == SearchHit::Message) v.marks->bookmark_messages[h.t0] = h.t1;
  }
  std::sort(b.begin(), b.end());
  status_ = std::to_string(b.size()) + " bookmarks from the hit list";
}

void AnalysisPanel::go_to_hit(SharedView& v, size_t i) {
  if (i >= hits_.size()) return;
  const SearchHit& h = hits_[i];
  current_hit_ = int(i);
  const int64_t span = v.t1 - v.t0, len = h.t1 - h.t0;
  if (h.kind == SearchHit::Message) {  // at a zoom where its arrow is drawn
    const auto [t0, t1] = render::message_window(*v.scene, h.t0, h.t1, span);
    v.set_window(t0, t1);
  } else if (len * 10 > span * 8) {  // does not fit: zoom to it
    const int64_t pad = std::max<int64_t>(2, len / 10);
    v.set_window(h.t0 - pad, h.t1 + pad);
  } else {
    const int64_t mid = h.t0 + len / 2;
    v.set_window(mid - span / 2, mid - span / 2 + span);
  }
  v.marks->cursor = h.t0;
  if (h.t1 > h.t0) v.marks->sel0 = h.t0, v.marks->sel1 = h.t1;
}

void AnalysisPanel::search_tab(SharedView& v) {
  ImGui::TextWrapped("A regular expression over event names, threads, message ids, channel names, jobs (\"T1 job 4\") and fields.");
  ImGui::SetNextItemWidth(-80);
  const bool entered = ImGui::InputText("##pattern", pattern_, sizeof pattern_, ImGuiInputTextFlags_EnterReturnsTrue);
  v.record_control("search_text");
  ImGui::SameLine();
  ImGui::BeginDisabled(search_job_.valid());
  if (ImGui::Button("Search") || entered) search(v, pattern_);
  ImGui::EndDisabled();
  v.record_control("search_go");
  ImGui::BeginDisabled(search_job_.valid());
  if (ImGui::Button("Messages never received, or never sent")) find_orphans(v);
  v.record_control("search_orphans");
  if (ImGui::Button("Scheduling checks (deadlines, locks)")) find_violations(v);
  v.record_control("search_checks");
  ImGui::EndDisabled();
  ImGui::BeginDisabled(hits_.empty());
  if (ImGui::Button("< Previous hit")) go_to_hit(v, size_t(std::max(0, current_hit_ - 1)));
  v.record_control("hit_prev");
  ImGui::SameLine();
  if (ImGui::Button("Next hit >")) go_to_hit(v, size_t(std::min<int>(int(hits_.size()) - 1, current_hit_ + 1)));
  v.record_control("hit_next");
  ImGui::SameLine();
  if (ImGui::Button("Bookmark hits")) bookmark_hits(v);
  v.record_control("hit_bookmark");
  ImGui::EndDisabled();
  ImGui::TextWrapped("%s", status_.c_str());
  ImGui::BeginChild("hits");
  ImGuiListClipper clip;
  clip.Begin(int(hits_.size()));
  while (clip.Step())
    for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
      const SearchHit& h = hits_[size_t(i)];
      char label[320];
      std::snprintf(label, sizeof label, "%-14s %s##%d", render::format_time(h.t0 - v.scene->first_ns(), 1).c_str(),
                    h.text.c_str(), i);
      if (ImGui::Selectable(label, i == current_hit_)) go_to_hit(v, size_t(i));
      if (!h.name.empty() && ImGui::IsItemHovered() && v.point_at) v.point_at(h.name);  // activity markers
      if (i < 64) v.record_control(("hit_" + std::to_string(i)).c_str());
    }
  ImGui::EndChild();
}

}  // namespace tinescope::app
