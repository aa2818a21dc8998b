// A tinescope trace out to other tools' formats (`tinescope export`):
//  - Perfetto's protobuf trace (OUT.pftrace, OUT.perfetto-trace): a Trace of
//    TracePackets on one sequence (1), names inline, no interning;
//  - Chrome's Trace Event Format JSON (OUT.json), the object form.
//
// Mapping (docs/IMPORT.md, "Export"):
//   process (feedlet.N.pid)        -> ProcessDescriptor track / "M" process_name
//   lane (feedlet) with a tid      -> ThreadDescriptor track / "M" thread_name
//   lane without one (tid 0)       -> a named track under its process / a thread
//                                     of its own (tid 1000000000 + feedlet)
//   interval_begin/end, func_*     -> SLICE_BEGIN / SLICE_END, "B" / "E"
//   interval_complete              -> SLICE_BEGIN + SLICE_END, "X"
//   instant                        -> INSTANT, "i" ("s":"t")
//   counter_int / counter_float    -> a counter track per name per lane, "C"
//   message_send / message_recv    -> an instant named by the message, of category
//                                     kMessageCategory, that carries flow_ids /
//                                     terminating_flow_ids; "s" / "f" ("bp":"e")
//   argument events (".cat", ...)  -> categories + debug_annotations; "cat" + "args"
//   any other type (scheduling, locks,  -> an instant named by its type, its fields as
//   a program's own)                      arguments
// Clock syncs are counted, not exported.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>

namespace tinescope::import {

enum class ExportFormat { Perfetto, Json };

// The category of the instants that carry a message's flow in a Perfetto
// export; tinescope's importer reads such an instant as the message alone.
constexpr const char* kMessageCategory = "tinescope.message";

// The format OUT's extension asks for; nullopt for any other.
std::optional<ExportFormat> export_format_of(const std::string& out);

struct ExportOptions {
  // The window, in the trace's nanoseconds (trace::ClockMap::to_ns): events
  // in [from_ns, to_ns] are kept; a slice that crosses an edge is cut there.
  int64_t from_ns = INT64_MIN, to_ns = INT64_MAX;
  // The feedlets (lanes) to keep; nullopt: every one.
  std::optional<std::unordered_set<uint32_t>> feedlets;
};

struct ExportResult {
  uint64_t events_read = 0;     // data events of the trace (argument events included)
  uint64_t events_written = 0;  // JSON events / TrackEvents written
  uint64_t bytes_written = 0;
  uint64_t lanes = 0;           // lanes that had an event written
  uint64_t slices_cut = 0;      // slices cut at the window's edges
  uint64_t unmatched_ends = 0;  // ends with no open begin on their lane: left out (nesting stays balanced)
  std::map<std::string, uint64_t> not_exported;  // event type name -> count
  uint64_t damaged_ranges = 0;  // damage the reader reported (the rest is exported)
};

// Writes `out` (which must not exist: created with O_EXCL) in the format
// its extension names. False with a message naming the file on failure
// (an unknown extension, an existing file, a trace that cannot be read).
bool export_trace(const std::string& trace, const std::string& out, const ExportOptions& options, ExportResult& result,
                  std::string& error);

}  // namespace tinescope::import
