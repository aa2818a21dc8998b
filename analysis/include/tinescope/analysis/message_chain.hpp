// Cause and effect across queues (issue 52, part 3; Threadmill §5.3): a
// message received during an interval, and the messages sent from that same
// interval, form a chain. A received message's handler is the interval
// running on its receiver when it arrived; the messages that lane sends from
// then until the handler ends are its effects, and a sent message's causes
// are the receives whose handlers it was sent from (one relation, read both
// ways). From one message, its causes and theirs, hop by hop, and its
// effects and theirs, each hop with its queue's wait (send to receive) and
// the interval that handled it.
//
// The interval a message was sent from or received in is the innermost one
// running on that lane at that time (index::TraceIndex::running_across: it
// began at or before it and has not ended by it), so a thread's life-long
// outer interval is no handler while something runs inside it; a message
// sent or received outside any interval starts or ends its chain. Read from
// the index's flow table and the lanes' items, never a scan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinescope/index/trace_index.hpp"

namespace tinescope::analysis {

struct ChainHop {
  index::Flow flow;
  int level = 0;  // 0: the message asked about; -1, -2, ...: its causes; 1, 2, ...: its effects
  // Where it was handled: the innermost interval running on its receiver
  // when it arrived (found: has_handler).
  bool has_handler = false;
  index::Item handler;
  uint64_t parent_id = 0;  // the hop it came from (an effect: its cause; a cause: its effect); 0 for level 0
};

struct MessageChain {
  std::vector<ChainHop> hops;  // by send time (a receive never sent: by its receive)
  uint64_t first = 0, last = 0;  // ticks: the first send, the last receive or handling end
  bool cut = false;              // stopped at max_hops: there is more
};

// The chain of one message (a flow of the index: what was clicked).
MessageChain message_chain(const index::TraceIndex& ix, const index::Flow& message, size_t max_hops = 1000);
// The same by id (the first message of that id): false with why when none has it.
bool message_chain(const index::TraceIndex& ix, uint64_t id, MessageChain& out, std::string& why,
                   size_t max_hops = 1000);

}  // namespace tinescope::analysis
