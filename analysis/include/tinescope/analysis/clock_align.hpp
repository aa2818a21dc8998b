// Several traces on one clock: the traces of several machines (or of
// processes whose clocks differ) are put onto the first trace's clock from
// the clock sync messages between them (ts_clock_sync_send/recv), each
// trace's offset and drift fitted as the Grasp importer fits its processors'
// (import/clock_fit.hpp), or as the user says (--clock TRACE=+5ms|auto|none).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tinescope/import/clock_fit.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::analysis {

// One end of a sync message, on its trace's own clock.
struct SyncEvent {
  uint64_t sync_id = 0;
  uint32_t peer = 0;  // the other node, as the recording program numbered it
  int64_t ns = 0;
  bool sent = false;
  uint32_t feedlet = 0;  // its lane
  uint64_t ts = 0;       // its ticks
};

// A sync message matched between two traces: each end's trace, lane and ticks.
struct SyncMessage {
  uint32_t send_trace = 0, send_feedlet = 0;
  uint64_t send_ts = 0;
  uint32_t recv_trace = 0, recv_feedlet = 0;
  uint64_t recv_ts = 0;
};

// Every sync event of a trace, read from the chunks (they are not indexed:
// a trace holds few). False with why where a chunk could not be read; those
// read before it are in out.
bool read_sync_events(const index::TraceIndex& ix, std::vector<SyncEvent>& out, std::string& why);

// What to do with one trace's clock: fit it (auto), leave it (none), or put
// it a given offset from the first trace's ("+5ms": its times move 5 ms later).
struct ClockChoice {
  enum Kind { Auto, None, Shift } kind = Auto;
  int64_t shift_ns = 0;
};
// "auto", "none" or a signed duration ("+5ms", "-1.5s", "250us").
bool parse_clock_choice(std::string_view text, ClockChoice& out, std::string& error);

struct TraceClock {
  import::ClockLine line;  // its own nanoseconds onto the reference's
  uint32_t reference = 0;  // 0, or itself where nothing joins it to the first trace
  enum How { Reference, Fitted, OffsetOnly, Given, Own } how = Reference;
  // The sync messages with the trace it was fitted to (`peer`), each way.
  uint32_t peer = 0;
  uint64_t there = 0, back = 0;
};

struct ClockAlignment {
  std::vector<TraceClock> clocks;  // one per trace
  uint64_t unmatched = 0;  // sync events whose other end is in none of the traces
  uint64_t reused = 0;     // sync events whose other end cannot be told (an id a trace sends or receives
                           // twice, or received in several other traces): left out. Each node may
                           // count its own ids: A -> B and B -> A under one id pair up.
  uint64_t early = 0;      // sync messages that arrive before they left, once aligned
  std::vector<SyncMessage> messages;  // those matched (the fit's points)
  // What was fitted and what is wrong, a line each, for the terminal and the figures.
  std::vector<std::string> report;
  std::vector<std::string> warnings;
  // A warning: in the report (marked so) and among the warnings.
  void warn(std::string w) {
    report.push_back("warning: " + w);
    warnings.push_back(std::move(w));
  }
};

// Fits each trace's clock onto the first's from the sync events of each
// (sync[i]: trace i's). `names` name the traces in the report; `first_ns`
// is each trace's first event on its own clock (for "5 s ahead").
ClockAlignment align_clocks(const std::vector<std::vector<SyncEvent>>& sync, const std::vector<ClockChoice>& choices,
                            const std::vector<std::string>& names, const std::vector<int64_t>& first_ns);

// Reads the sync events of each trace, fits, and puts every trace but the
// first on the first's clock (TraceIndex::align_clock). False with why
// where a trace could not be read.
bool align_traces(const std::vector<index::TraceIndex*>& traces, const std::vector<ClockChoice>& choices,
                  ClockAlignment& out, std::string& why);

// The sync messages between traces on one clock (a trace left on its own
// shares none), each end's time on it (the traces as align_traces left
// them), by send: what the figures draw.
struct SyncArrow {
  uint32_t send_trace = 0, send_feedlet = 0, recv_trace = 0, recv_feedlet = 0;
  int64_t send_ns = 0, recv_ns = 0;
};
struct SyncArrows {
  std::vector<SyncArrow> arrows;  // by send
  int64_t longest_flight = 0;     // the largest |receive - send|: a window's look starts that far before it
};
SyncArrows sync_arrows(const std::vector<const index::TraceIndex*>& traces, const ClockAlignment& a);

}  // namespace tinescope::analysis
