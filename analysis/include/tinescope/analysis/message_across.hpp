// Messages between traces: a message sent by one machine and received by
// another is, in each machine's trace, an orphan (a send never received
// there, a receive never sent there). Put side by side on one clock
// (clock_align.hpp), the orphans of several traces are matched by message
// id and channel, as one trace's halves are matched while it is indexed.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tinescope/index/trace_index.hpp"

namespace tinescope::analysis {

struct CrossMessage {
  uint32_t send_trace = 0, recv_trace = 0;
  index::Flow send, recv;  // each half as its own trace holds it (an orphan there)
};

struct CrossMessages {
  std::vector<CrossMessage> messages;  // by send time of the first trace's clock
  uint64_t ambiguous = 0;  // orphan halves whose id and channel more than one trace's send (or receive) share: unmatched
  uint64_t early = 0;      // matched, but received before they were sent once the clocks are aligned
  // The message one of its halves belongs to (the half as `trace` holds it), or null.
  const CrossMessage* find(uint32_t trace, const index::Flow& half) const;

  // (trace, id, channel, which half) -> index in messages
  std::unordered_map<uint64_t, uint32_t> by_half;
};

// Matches the orphans of the traces (each already on the first's clock:
// TraceIndex::align_clock). Reads each trace's flow table once. With
// `clock_of` (a trace's clock reference, ClockAlignment's), only traces on
// one clock are matched: a trace left on its own clock shares no message
// with the others, since where its arrows would go is not known.
CrossMessages match_across(const std::vector<const index::TraceIndex*>& traces,
                           const std::vector<uint32_t>& clock_of = {});

// The halves of trace `trace`'s messages matched in another trace: its
// sends received there, its receives sent there (orphans in the trace
// alone, but not in the traces together); those whose time (in the trace's
// ticks) is in [t0, t1], as message_report() counts orphans.
struct AcrossHalves {
  uint64_t sent_to_others = 0, received_from_others = 0;
};
AcrossHalves across_halves(const CrossMessages& m, uint32_t trace, uint64_t t0 = 0, uint64_t t1 = UINT64_MAX);

}  // namespace tinescope::analysis
