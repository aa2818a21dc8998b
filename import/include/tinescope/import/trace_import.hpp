// Importing other tools' traces into a tinescope trace, by their contents
// (plain or gzipped):
//  - the Chrome Trace Event Format (what Chrome, Perfetto and many tools
//    write): the array form, or the object form with "traceEvents" (and its
//    "systemTraceEvents", ftrace text). Parsed as a stream (SAX), so memory
//    follows the number of events (about 40 bytes each), not the JSON's size;
//  - Linux ftrace text (`trace`, `trace_pipe`, Android's systrace/atrace),
//    read line by line;
//  - the trace viewer's HTML files (systrace's), which wrap either;
//  - Grasp traces (the Grasp player's Tcl scripts), told from ftrace text by
//    their first command.
//
// Mapping (docs/IMPORT.md):
//   (pid, tid)                  -> a feedlet named by thread_name metadata
//   B/E, X                      -> begin/end, nested per thread
//   i/I/R                       -> instants (process- and global-scoped on their own feedlets)
//   C                           -> float counters "name" (one arg) or "name.arg", "[id]" appended
//   b/e/n, S/T/F (async)        -> begin/end/instant paired by (cat, id), on feedlets per (pid,
//                                  name) packed by what runs at once
//   s/t/f (flows)               -> message send/receive, a link per step
//   bind_id + flow_out/flow_in  -> the same, from the slice that carries them (flow events v2)
//   P (samples)                 -> instants on the thread, named by their leaf stack frame
//   N/O/D (objects)             -> a lifetime per object, snapshots as instants, on feedlets per
//                                  (pid, type) packed as async ones are
//   M                           -> thread and process names (with process labels), sort indices and
//                                  num_cpus as metadata
// Anything else (c clock sync, ...) is counted by kind and reported, as are
// the top-level "samples" and a "stackFrames" list. An event that is not
// JSON is skipped, counted and named by its byte; the events after it are kept.
// A pid or tid given as a name names its process or thread.
// ftrace: a lane per CPU (sched_switch slices, named COMM-PID; wakeups as
// flows to the next slice; cpu_frequency, cpu_idle counters); atrace's
// tracing_mark_write B/E, C, S/F as for Chrome's B/E, C, b/e.
// Grasp: a lane per processor (its jobs' execution, named by task), per task
// (each job from arrival to completion), per mutex, buffer and server; the
// processors' clocks aligned by their sync messages first.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tinescope::import {

struct ImportResult {
  uint64_t events_read = 0;      // JSON trace events and ftrace lines
  uint64_t events_written = 0;   // tinescope events
  uint64_t feedlets = 0;
  std::map<std::string, uint64_t> unsupported;  // ph -> count, not imported
  uint64_t unmatched_ends = 0;   // E/e/F with no open begin
  uint64_t unmatched_flow_ends = 0;  // t/f of a flow id with no flow open: no arrow
  uint64_t malformed_events = 0;     // events that are not JSON: skipped, those after them kept
  std::vector<std::string> malformed;  // the first few, "FILE: JSON error at byte N: what"
  uint64_t events_with_args = 0;    // events whose cat, args or thread times were kept as fields
  uint64_t argument_events = 0;     // argument events written with them (not in events_written)
  uint64_t args_as_text = 0;        // ... of them past the schema's room for argument types: kept as one text field
  uint64_t args_past_fields = 0;    // arguments past a type's 16 fields: kept as text in its field "more"
  std::string display_time_unit;
  std::string warning;           // e.g. the JSON ended early; what was read is kept
  std::vector<std::string> notes;  // what an importer worked out (a Grasp trace's clock alignment)
};

// Writes `out` (which must not exist). False with a message naming the file
// and where in it on failure.
bool import_trace(const std::string& in, const std::string& out, ImportResult& result, std::string& error);

}  // namespace tinescope::import
