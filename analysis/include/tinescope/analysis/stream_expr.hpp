// The text syntax of streams, shared by the viewer and the command line
// (docs/ANALYSIS.md). A stream is a base stream, a filter over the events of
// a trace, or an operator applied to streams:
//
//   intervals(name="gc.*", thread="gc", depth=0)   intervals (begin/end, complete, calls)
//   instants(name="audio.underrun")                instants, as intervals of no length
//   samples(name="heap.*", value>=0)               counter samples
//   messages(channel="*")                          message send -> receive (matched ones)
//   field(name="transaction", "latency_ms")        a numeric field of events as samples: of a user
//                                                  type of that name, or the arguments of events of it
//   longer(S, 250us)   shorter(S, 1ms)             intervals by duration (strictly)
//   union(A, B, ...)   intersect(A, B, ...)        time covered by any / by every input
//   span(A, B)                                     from each A's start to the end of the first B ending after it
//   sum(S)                                         running total of samples (or of interval time)
//   rate(S)                                        derivative, per second (of virtual time)
//   exclude(S, I)                                  S without the time inside I's intervals (virtual time)
//   smooth(S, 100ms)                               mean of the samples in a trailing window
//   jobs(task="T1")                                each job from its arrival to its completion (jobs.hpp)
//   response(task="T1")                            each job's response time in ns, a sample at its completion
//
// A quoted name alone, "interrupt", is intervals(name="interrupt"). Names
// and threads are globs (* and ?), or /regular expressions/. Durations take
// ns, us, ms or s.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tinescope::analysis {

enum class Op : uint8_t {
  Intervals, Instants, Samples, Messages,                       // base streams
  Longer, Shorter, Union, Intersect, Span, Sum, Rate, Exclude, Smooth,  // operators
  Field,  // a field of events as samples: read from the trace's chunks (filtered as a base stream is)
  Queue,  // messages waiting on their channels, as samples: +1 at a send, -1 at its receive (the flow table)
  Jobs,      // jobs from arrival to completion, as intervals named by their task (analysis/jobs.hpp)
  Response,  // jobs' response times (ns) as samples at their completions
};

// A comparison of an event's value (a sample's value, a message's size).
struct ValueTest {
  enum Cmp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge } cmp = Eq;
  double value = 0;
  bool passes(double v) const;
};

// A test of a field of an event, or of one of its arguments (docs/FORMAT.md,
// "Arguments"): `bytes > 4096`, `path = "/tmp/*"`. A number is compared as
// a number; text (quoted, or anything that is no number) as a glob, with =
// or != only.
struct FieldTest {
  std::string field;
  ValueTest test;         // a number: test.cmp and test.value
  bool number = true;
  std::string text;       // text: the glob
};

struct Filter {
  std::string name;     // glob or /regex/; "" matches every name
  std::string thread;   // the feedlet's name, likewise
  std::string process;  // the trace's process name, likewise
  std::string channel;  // messages: the channel's name or number, likewise
  std::string task;     // jobs, response: the task's name, likewise
  int depth = -1;       // intervals: nesting depth (0 outermost); -1 any
  std::string field;    // field(): the field's name (glob or /regex/)
  std::vector<ValueTest> values;
  // where="bytes > 4096 and cat = io": intervals and instants whose begin,
  // complete or instant event has such fields; messages by size, channel, id.
  std::vector<FieldTest> where;
  // messages: received=false is the sends never received, sent=false the
  // receives never sent; -1 (either unsaid): received and sent, matched.
  int8_t received = -1, sent = -1;
};
// Parses where= text into tests (false with why).
bool parse_where(std::string_view text, std::vector<FieldTest>& out, std::string& why);
std::string format_where(const std::vector<FieldTest>& tests);

struct Expr {
  Op op = Op::Intervals;
  Filter filter;            // base streams
  std::vector<Expr> args;   // operators: their input streams
  int64_t ns = 0;           // longer/shorter: the threshold; smooth: the window
};

// Parses `text`. False with an error that names the column and what was
// expected there.
bool parse_stream(std::string_view text, Expr& out, std::string& error);
// The canonical text of a stream: parse_stream(format_stream(e)) gives e back.
std::string format_stream(const Expr& e);

bool is_base(Op op);
// Whether the operator takes a filter's fields (base streams, field, queue, jobs, response).
bool takes_filter(Op op);
const char* op_name(Op op);
// True if the stream is made of intervals (else of samples).
bool yields_intervals(const Expr& e);

// Whether `text` matches a glob ("*", "?") or a /regular expression/; ""
// matches everything.
class NameMatcher {
 public:
  explicit NameMatcher(const std::string& pattern);
  bool matches(std::string_view text) const;
  bool any() const { return pattern_.empty(); }

 private:
  std::string pattern_;
  bool regex_ = false;
  struct Regex;
  std::shared_ptr<const Regex> re_;
};

// False with the reason if `pattern` is a /regular expression/ that does not compile.
bool valid_pattern(const std::string& pattern, std::string& why);

// "1.5ms" -> 1500000; "45.3515us", "12ns", "7" (ns), "2min", "1h"; fractions
// kept. False if it is not a duration.
bool parse_duration(std::string_view text, double& ns);
// The same, rounded to whole nanoseconds.
bool parse_duration_ns(std::string_view text, int64_t& ns);
std::string format_duration_ns(int64_t ns);
// For people: four significant digits in the largest unit under it ("5.827ms").
std::string readable_duration(int64_t ns);

}  // namespace tinescope::analysis
