// An event's own data as a user reads it: every field by its schema name and
// type, its arguments (the argument events written after it), its thread and
// process, and its place in the trace. What the details panel, the hover
// tooltip and `tinescope find --event` show; read from the trace on demand
// through the feedlet sub-index (index::TraceIndex::read_events).
//
// Arguments: an event of a user type whose name begins with '.' (an
// importer's `.args`) carries more fields of the event just before it in
// its feedlet, at its time (docs/FORMAT.md, "Arguments").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tinescope/index/trace_index.hpp"

namespace tinescope::analysis {

struct FieldView {
  std::string name;
  char type = 0;         // the schema's type character (format::FieldType), or '?' for an unknown type's bytes
  std::string text;      // the value as text (a name's text, a number; bytes that read as text, else their length)
  bool numeric = false;  // u, i, m, f: `number` holds it
  double number = 0;
  std::string bytes;     // b, '?': the bytes as they are
};

struct EventView {
  index::EventData data;
  std::string type_name;            // the schema's name of its type
  std::vector<FieldView> fields;    // its own, in schema order
  std::vector<FieldView> args;      // from the argument events after it (cat, Chrome args, ftrace fields)
  std::string thread, process;
  // The first field named `name` among fields, then args; null if none.
  const FieldView* field(std::string_view name) const;
};

// Whether a type is an argument type (its name begins with '.').
bool is_argument_type(const trace::Catalog& c, uint16_t type);

// The fields of one event as the catalog's schema and strings name them.
EventView describe(const trace::Catalog& c, const index::EventData& e);

// The event at position `position` of a feedlet, with the arguments after
// it. False with why if it is past the feedlet's end or cannot be read.
bool read_event(const index::TraceIndex& ix, uint32_t feedlet, uint64_t position, EventView& out,
                std::string& why);

// The events behind a drawn item of a feedlet (index::Item): an interval's
// begin and end events (or its one complete event), an instant's, a
// counter sample's, a job segment's start and end. Each with its
// arguments. An end that was not recorded (a truncated item) is left out.
// `slack`: its times may be this many ticks off (times that went to
// nanoseconds and back); the events nearest them are taken.
bool item_events(const index::TraceIndex& ix, uint32_t feedlet, const index::Item& it, std::vector<EventView>& out,
                 std::string& why, uint64_t slack = 0);

// A message's send and receive events (an orphan: the half there is).
bool message_events(const index::TraceIndex& ix, const index::Flow& f, std::vector<EventView>& out,
                    std::string& why, uint64_t slack = 0);
// The message with id `id` (its send, else its receive), found through the
// flow table. False if there is none.
bool find_message(const index::TraceIndex& ix, uint64_t id, index::Flow& out);

// Whether bytes read as text (no control characters but tab): an
// argument's string, not a binary payload.
bool is_text(std::string_view bytes);

// Bytes as hex and ASCII side by side, `per_line` bytes a line:
// "0000  48 65 6c 6c 6f                                    Hello".
std::string hex_ascii(std::string_view bytes, size_t per_line = 16);

}  // namespace tinescope::analysis
