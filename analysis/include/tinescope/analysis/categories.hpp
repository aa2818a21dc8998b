// The categories of a trace's intervals and instants, and the names the
// viewer hides when the user hides some of them.
//
// A category is a field `cat` of the argument event after an event (a
// Chrome event's `cat`, the recorder's `ts_begin_c`/`ts_instant_c`;
// docs/FORMAT.md "Arguments"; an importer's arguments kept as one text
// begin "cat=..."); the index keeps none, so finding them reads every event
// of the trace once (scan_categories). A category text may list several,
// comma separated ("io,net"): such an event belongs to each. Items are
// interval begins, complete events, instants and function entries; an item
// with no category (a plain ts_begin, a function) is in kNoCategory.
//
// The timeline draws an interval or instant lane by name (index streams), so
// a name is what can be hidden: a name is hidden when none of its events
// belongs to a shown category (an event with no category belongs to
// kNoCategory). A name recorded in several categories is shown while any of
// them is: never a hidden event's name drawn for a shown one.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "tinescope/index/trace_index.hpp"

namespace tinescope::analysis {

inline constexpr const char* kNoCategory = "(no category)";

struct CategoryCount {
  std::string name;     // a category; kNoCategory for events with none
  uint64_t events = 0;  // intervals (begin or complete events) and instants in it
  uint32_t names = 0;   // event names with an event in it
};

struct Categories {
  std::vector<CategoryCount> categories;  // by name; kNoCategory last
  // [string id of an event name]: the categories its events were in, indices
  // into `categories`, sorted; empty for a string no event is named.
  std::vector<std::vector<uint32_t>> of_name;
  uint32_t mixed_names = 0;  // names recorded in more than one category
  uint64_t events = 0;       // events read
  std::string error;         // a chunk that could not be read (the rest were)
  int find(const std::string& category) const;  // index into categories, -1 if none
};

// Whether the trace's schema has any argument type with a field `cat`: if
// not, scan_categories would find only kNoCategory (no scan needed).
bool records_categories(const trace::Catalog& c);

// Reads every event of every feedlet. `stop`, when set, ends it early (the
// answer so far, error "stopped"); `done`, if given, counts events read.
Categories scan_categories(const index::TraceIndex& ix, const std::atomic<bool>* stop = nullptr,
                           std::atomic<uint64_t>* done = nullptr);

// "io, net" -> {"io", "net"}: a category text's parts, trimmed, each once.
std::vector<std::string> split_categories(const std::string& text);

// [string id]: 1 where every category of the name is in `hidden`.
std::vector<uint8_t> hidden_names(const Categories& c, const std::vector<std::string>& hidden);

}  // namespace tinescope::analysis
