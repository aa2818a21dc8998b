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
#include <functional>
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

// A field whose value a search matched: a name field of a user event, an
// argument (a category, a Chrome argument's text), a payload.
struct FieldHit {
  uint32_t feedlet = 0;
  uint64_t ts = 0;
  std::string event;  // the event's name (an argument's: of the event it follows), else its type's
  std::string field;  // its name
  std::string value;  // as text (bytes that are not text: as hex)
};
// What a search looks for in fields: text (a regular expression over name
// and text fields), or bytes ("0x" and hex digits: bytes fields holding them).
struct FieldSearch {
  std::function<bool(std::string_view)> text;  // null: bytes only
  std::string bytes;                           // non-empty: the bytes sought
  // "0x48656c6c6f" -> bytes "Hello"; false if `pattern` is not that form.
  static bool hex(std::string_view pattern, std::string& bytes);
};
// Every such field of the events in [t0, t1] (ticks), decoded from the
// chunks (every event: O(events)), in feedlet order; the first `limit` in
// out. Returns how many matched. The events' own names are not searched
// here (their streams are): a built-in event's name field is passed by.
uint64_t search_fields(const index::TraceIndex& ix, const FieldSearch& s, uint64_t t0, uint64_t t1, size_t limit,
                       std::vector<FieldHit>& out, std::string& why);

// Whether bytes read as text (no control characters but tab): an
// argument's string, not a binary payload.
bool is_text(std::string_view bytes);

// Bytes as hex digits, two a byte: "616263".
std::string hex(std::string_view bytes);

// Bytes as hex and ASCII side by side, `per_line` bytes a line:
// "0000  48 65 6c 6c 6f                                    Hello".
std::string hex_ascii(std::string_view bytes, size_t per_line = 16);

}  // namespace tinescope::analysis
