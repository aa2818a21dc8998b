// The Chrome JSON reader. The text is read a megabyte at a time; a scan that
// follows only strings and brackets cuts the events array into runs of whole
// events (about a megabyte each), and simdjson's On Demand API parses each
// run, whose events' fields go to the import model. Memory follows a run,
// never the file. simdjson does the parsing and all the checking of the JSON;
// the scan only finds where events end (Debian's simdjson 3.0.1 cannot
// stream a comma-separated array itself). The object form's members other
// than "traceEvents" are scanned past, and parsed only where they are read
// ("displayTimeUnit", "systemTraceEvents").
#include <simdjson.h>

#include <cctype>
#include <cmath>

#include "import_model.hpp"

namespace tinescope::import {

namespace {

namespace od = simdjson::ondemand;

constexpr size_t kReadBytes = 1 << 20;  // read from the stream at a time
constexpr size_t kRunBytes = 1 << 20;   // events parsed at a time: about this many bytes
constexpr size_t kMalformedNamed = 5;   // malformed events named (all are counted)

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)); }

class ChromeReader {
 public:
  ChromeReader(std::istream& in, ImportModel& model) : in_(in), m_(model), r_(model.r) {
    // Room for the usual text and run once: a buffer of a megabyte or more
    // that grows is a fresh mapping, every page of it faulted and zeroed.
    text_.reserve(3 * kReadBytes);
    run_.reserve(2 * kRunBytes + simdjson::SIMDJSON_PADDING);
    [[maybe_unused]] const simdjson::error_code sized = parser_.allocate(2 * kRunBytes);  // grows if a run needs more
  }

  // Reads the document; false at the first error (error_at, error_what).
  bool read() {
    skip_space();
    if (!fill(1)) return fail("empty JSON");
    const char c = text_[pos_++];
    if (c == '[') return events() && end_of_document();
    if (c == '{') return members();
    return fail("not a JSON array or object");
  }

  uint64_t error_at = 0;
  std::string error_what;
  std::string system_trace;  // the object form's "systemTraceEvents": ftrace text
  std::unordered_map<std::string, std::string> frames;  // the object form's "stackFrames": id -> name
  std::vector<std::pair<uint64_t, std::string>> malformed;  // the first events that are not JSON: byte, what

 private:
  std::istream& in_;
  ImportModel& m_;
  ImportResult& r_;
  std::string text_;  // read and not yet let go: file offsets base_ + index
  uint64_t base_ = 0;
  size_t pos_ = 0;
  std::string run_;  // a run of events as one JSON array, padded for simdjson
  od::parser parser_;
  std::unordered_map<std::string, int64_t> named_ids_;

  bool fail(const char* what, uint64_t at) {
    error_at = at, error_what = what;
    return false;
  }
  bool fail(const char* what) { return fail(what, base_ + pos_); }

  // At least n bytes from pos_ (false at the end of the stream). Lets go of
  // the text before `keep` (an index, which moves to 0).
  bool fill(size_t n, size_t* keep = nullptr) {
    while (text_.size() - pos_ < n) {
      if (!in_) return false;
      const size_t from = keep ? *keep : pos_;
      text_.erase(0, from), base_ += from, pos_ -= from;
      if (keep) *keep = 0;
      const size_t had = text_.size();
      text_.resize(had + kReadBytes);
      in_.read(text_.data() + had, std::streamsize(kReadBytes));
      text_.resize(had + size_t(in_.gcount()));
      if (in_.gcount() == 0) return false;
    }
    return true;
  }
  void skip_space() {
    while (fill(1) && is_space(text_[pos_])) ++pos_;
  }
  bool expect(char c, const char* what) {
    skip_space();
    if (!fill(1) || text_[pos_] != c) return fail(what);
    ++pos_;
    return true;
  }

  // The events array, from after its '['. Runs of whole events are cut
  // where the depth comes back to the array's after a '}' or ']'; the '}' or
  // ']' that leaves the array ends it, and the events since the last run
  // are parsed then (a comma after the last event is an error).
  bool events() {
    size_t run = pos_, last_end = 0;  // last_end: after the run's last whole event (0: none yet)
    bool first = true, in_string = false, escaped = false;
    int depth = 0;
    for (;;) {
      if (pos_ == text_.size()) {
        const size_t before = run;
        const bool more = fill(1, &run);
        if (last_end) last_end -= before - run;  // the text before the run was let go
        if (!more) {
          // Cut short (a crashed browser): keep every whole event.
          if (last_end && !parse_run(run, last_end, first)) return false;
          return fail("the events array does not end (the text is cut short)");
        }
      }
      if (in_string) {
        in_string = !skip_string(escaped);
        continue;
      }
      // To the next string, in locals (this loop reads every byte).
      const char* const begin = text_.data();
      const char* p = begin + pos_;
      const char* const end = begin + text_.size();
      for (; p < end; ++p) {
        const char c = *p;
        if (c == '"') {
          in_string = true, ++p;
          break;
        }
        if (c == '{' || c == '[') {
          ++depth;
        } else if (c == '}' || c == ']') {
          if (depth == 0) {  // the array's end: its events first, then its bracket
            pos_ = size_t(p + 1 - begin);
            return parse_run(run, pos_ - 1, first) &&
                   (c == ']' || fail("'}' where the events array should end", base_ + pos_ - 1));
          }
          if (--depth == 0) {
            last_end = size_t(p + 1 - begin);
            if (last_end - run >= kRunBytes) {
              if (!parse_run(run, last_end, first)) return false;
              run = last_end, last_end = 0, first = false;
            }
          }
        }
      }
      pos_ = size_t(p - begin);
    }
  }

  // Moves pos_ past the quote that ends the string it is in (true), or to
  // the end of the text read (false; `escaped`: it ends in a backslash that
  // escapes what follows).
  bool skip_string(bool& escaped) {
    const char* const begin = text_.data();
    const char* p = begin + pos_;
    const char* const end = begin + text_.size();
    if (escaped) ++p, escaped = false;
    for (; p < end; ++p) {
      if (*p == '"') {
        pos_ = size_t(p + 1 - begin);
        return true;
      }
      if (*p == '\\' && ++p == end) {
        escaped = true;
        break;
      }
    }
    pos_ = text_.size();
    return false;
  }

  // The events in text [from, to): after the first run, it starts with the
  // comma that follows the run before. One event that is not JSON costs
  // itself only: the events before it are taken, then each after it is
  // parsed alone (parse_each).
  bool parse_run(size_t from, size_t to, bool first) {
    size_t k = past_space(from, to);
    if (!first && k < to) {
      if (text_[k] != ',') return fail("expected ',' between events", base_ + k);
      const size_t comma = k;
      k = past_space(k + 1, to);
      if (k == to) return fail("a comma after the last event", base_ + comma);
    }
    size_t done = 0;
    return parse_events(k, to, done) || parse_each(k, to, done);
  }

  size_t past_space(size_t k, size_t to) const {
    while (k < to && is_space(text_[k])) ++k;
    return k;
  }

  // Parses text [k, to), events separated by commas, as one array; `done`
  // counts the elements taken. False at the first error (error_at, error_what).
  bool parse_events(size_t k, size_t to, size_t& done) {
    const uint64_t at = base_ + k - 1;  // the file offset of run_[1] is at + 1
    run_.reserve(to - k + 2 + simdjson::SIMDJSON_PADDING);
    run_.assign(1, '[');
    run_.append(text_, k, to - k);
    run_.push_back(']');
    od::document doc;
    auto located = [&](simdjson::error_code e) {
      const char* p = nullptr;
      const uint64_t in_run = doc.current_location().get(p) ? run_.size() - 1 : uint64_t(p - run_.data());
      return fail(simdjson::error_message(e), at + std::max<uint64_t>(in_run, 1));
    };
    if (auto e = parser_.iterate(run_.data(), run_.size(), run_.capacity()).get(doc))
      return fail(simdjson::error_message(e), at + 1);
    od::array events;
    if (auto e = doc.get_array().get(events)) return located(e);
    RawEvent ev;  // (its memory kept from event to event)
    for (auto element : events) {
      od::value v;
      od::json_type type;
      if (auto e = element.get(v)) return located(e);
      if (auto e = v.type().get(type)) return located(e);
      if (type == od::json_type::object) {  // (anything else is not an event: skipped)
        ev.reset();
        if (auto e = event(v, ev)) return located(e);
        m_.take(ev);
      }
      ++done;
    }
    return true;
  }

  // Text [k, to) element by element, each parsed alone, from the element
  // `skip` on: one that does not parse is counted and named, and skipped.
  // Elements end where their brackets close (the scan in events() found
  // them balanced), or at a comma outside any.
  bool parse_each(size_t k, size_t to, size_t skip) {
    for (size_t n = 0; (k = past_space(k, to)) < to; ++n) {
      size_t end = k;
      int depth = 0;
      for (bool in_string = false; end < to; ++end) {
        const char c = text_[end];
        if (in_string) {
          if (c == '\\') ++end;
          else if (c == '"') in_string = false;
        } else if (c == '"') {
          in_string = true;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if (c == '}' || c == ']') {
          if (--depth <= 0) {
            ++end;
            break;
          }
        } else if (c == ',' && depth == 0) {
          break;
        }
      }
      size_t one = 0;
      if (n >= skip && !parse_events(k, end, one)) {
        ++r_.malformed_events;
        if (malformed.size() < kMalformedNamed) malformed.push_back({error_at, error_what});
      }
      k = past_space(end, to);
      if (k < to && text_[k] == ',') ++k;
    }
    error_at = 0, error_what.clear();
    return true;
  }

  // fn(name, value, type) for each member of the object `v`, in turn.
  template <class Fn>
  static simdjson::error_code each_member(od::value& v, Fn&& fn) {
    od::object o;
    if (auto e = v.get_object().get(o)) return e;
    for (auto member : o) {
      std::string_view name;
      od::value value;
      od::json_type type;
      if (auto e = member.unescaped_key().get(name)) return e;
      if (auto e = member.value().get(value)) return e;
      if (auto e = value.type().get(type)) return e;
      if (auto e = fn(name, value, type)) return e;
    }
    return simdjson::SUCCESS;
  }

  // One event's fields. Values of other fields are skipped: checked for
  // their structure (brackets, strings), not parsed.
  simdjson::error_code event(od::value& v, RawEvent& ev) {
    return each_member(v, [&](std::string_view key, od::value& value, od::json_type type) -> simdjson::error_code {
      if (type == od::json_type::object) {
        if (key != "args" && key != "id2") return simdjson::SUCCESS;
        return each_member(value, [&, args = key == "args"](std::string_view name, od::value& x, od::json_type t) {
          return inner_member(args, name, x, t, ev);
        });
      }
      if (type == od::json_type::array) return simdjson::SUCCESS;
      // Numbers; strings; booleans (null reads as "" and false).
      double d = 0;
      std::string_view s;
      bool b = false;
      if (type == od::json_type::number) {
        if (auto e = value.get_double().get(d)) return e;
      } else if (type == od::json_type::string) {
        if (auto e = value.get_string().get(s)) return e;
      } else if (type == od::json_type::boolean) {
        if (auto e = value.get_bool().get(b)) return e;
      }
      const bool number = type == od::json_type::number;
      if (key == "pid") {
        ev.pid = number ? as_int(d) : named_id(s), ev.has_pid = true;
        if (!number && named(s)) m_.process_names.emplace(ev.pid, s);  // (metadata names it over this)
      } else if (key == "tid") {
        ev.tid = number ? as_int(d) : named_id(s), ev.has_tid = true;
        if (!number && named(s)) m_.tid_names.emplace(ev.tid, s);
      } else if (key == "tts" || key == "tdur") {
        if (number) (key == "tts" ? (ev.tts = d, ev.has_tts = true) : (ev.tdur = d, ev.has_tdur = true));
      } else if (key == "ts" || key == "dur") {
        // A number, or a number in a string ("ts": "3000"); another string is reported.
        const bool text = type == od::json_type::string, text_number = text && to_number(s, d);
        if (text && !text_number) ev.not_a_number = key;
        else if (number || text_number) {
          if (key == "ts") ev.ts = d, ev.has_ts = true;
          else ev.dur = d, ev.has_dur = true;
        }
      }
      else if (key == "id") ev.id = number ? number_text(value) : std::string(s);
      else if (key == "bind_id") ev.bind_id = number ? number_text(value) : std::string(s);
      else if (key == "sf") ev.sf = number ? number_text(value) : std::string(s);
      else if (key == "flow_in") ev.flow_in = b;
      else if (key == "flow_out") ev.flow_out = b;
      else if (number) return simdjson::SUCCESS;
      else if (key == "ph") ev.ph = s;
      else if (key == "name") ev.name = s;
      else if (key == "cat") ev.cat = s;
      else if (key == "s") ev.scope = s;
      else if (key == "bp") ev.bind_enclosing = s == "e";
      else if (key == "scope") ev.id_scope = s;
      return simdjson::SUCCESS;
    });
  }

  // A member of an event's "args" or "id2" (its id). Every argument is
  // kept, typed (Arg); a few are read for the model too: numbers (counters'
  // values, sort_index), "name" and "labels" (metadata).
  static constexpr int kDeepestArgs = 32;  // levels of nested args kept as dotted keys (deeper: "{...}")
  simdjson::error_code inner_member(bool args, std::string_view name, od::value& x, od::json_type t, RawEvent& ev,
                                    const std::string& prefix = {}, int depth = 0) {
    if (args && t == od::json_type::object && depth < kDeepestArgs) {  // nested: dotted keys
      const std::string dotted = prefix + std::string(name) + ".";
      return each_member(x, [&](std::string_view k, od::value& v, od::json_type tk) {
        return inner_member(true, k, v, tk, ev, dotted, depth + 1);
      });
    }
    Arg* a = nullptr;
    if (args) {
      if (ev.arg_count == ev.args.size()) ev.args.emplace_back();
      a = &ev.args[ev.arg_count++];
      a->key = prefix;
      a->key += name;
      a->type = 'b', a->text.clear();
    }
    std::string text;
    if (t == od::json_type::number) {
      od::number n;
      if (auto e = x.get_number().get(n)) return e;
      const double d = n.as_double();
      if (args) {
        if (n.is_int64()) a->type = 'i', a->i = n.get_int64();
        else a->type = 'f', a->f = d;
        if (!prefix.empty()) return simdjson::SUCCESS;
        ev.num_args.emplace_back(std::string(name), d);
        if (name == "sort_index") ev.sort_index = as_int(d), ev.has_sort = true;
        return simdjson::SUCCESS;
      }
      text = number_text(x);
    } else if (t == od::json_type::string) {
      std::string_view s;
      if (auto e = x.get_string().get(s)) return e;
      text = s;
    } else if (t == od::json_type::boolean) {
      bool b;
      if (auto e = x.get_bool().get(b)) return e;
      text = b ? "true" : "false";
      if (args) a->text = text;
      return simdjson::SUCCESS;
    } else if (t == od::json_type::null) {
      if (args) a->text = "null";
      return simdjson::SUCCESS;
    } else if (t == od::json_type::object) {  // nested deeper than kDeepestArgs (or id2's): its contents not kept
      if (args) a->text = "{...}";
      return simdjson::SUCCESS;
    } else {  // an array: kept as its JSON text
      if (!args) return simdjson::SUCCESS;
      od::array arr;
      std::string_view raw;
      if (auto e = x.get_array().get(arr)) return e;
      if (auto e = arr.raw_json().get(raw)) return e;
      while (!raw.empty() && is_space(raw.back())) raw.remove_suffix(1);
      a->text = raw;
      return simdjson::SUCCESS;
    }
    if (!args) {
      ev.id = std::string(name) + ":" + text, ev.local_id = name == "local";
      return simdjson::SUCCESS;
    }
    if (prefix.empty() && name == "name") ev.arg_name = text;
    else if (prefix.empty() && name == "labels") ev.arg_labels = text;
    a->text = std::move(text);
    return simdjson::SUCCESS;
  }

  // The object form, from after its '{': "traceEvents" is read as events,
  // the other members are scanned past (and parsed where they are read).
  bool members() {
    skip_space();
    if (fill(1) && text_[pos_] == '}') return ++pos_, end_of_document();
    for (;;) {
      skip_space();
      size_t from = pos_;
      if (!fill(1) || text_[pos_] != '"' || !skip_value(from)) return fail("expected a member's name");
      const std::string key = text_.substr(from + 1, pos_ - from - 2);  // names with escapes match none below
      if (!expect(':', "expected ':'")) return false;
      skip_space();
      if (key == "traceEvents" && fill(1) && text_[pos_] == '[') {
        ++pos_;
        if (!events()) return false;
      } else {
        from = pos_;
        if (!skip_value(from)) return fail("a member's value does not end");
        if (key == "displayTimeUnit" || key == "systemTraceEvents") {
          std::string& into = key == "displayTimeUnit" ? r_.display_time_unit : system_trace;
          if (!string_value(from, into, key)) return false;
        } else if (key == "stackFrames") {
          if (!frames_value(from)) return false;
        } else if (key == "samples") {  // CPU samples beside the events (with "stackFrames"): not read
          if (!count_unread(from, "samples (the top-level array of CPU samples)")) return false;
        }
      }
      skip_space();
      if (!fill(1)) return fail("the top object does not end (the text is cut short)");
      const char c = text_[pos_++];
      if (c == '}') return end_of_document();
      if (c != ',') return fail("expected ',' or '}'", base_ + pos_ - 1);
    }
  }

  // Moves past one value starting at pos_; `from` (an index) stays valid.
  bool skip_value(size_t& from) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (bool started = false;; started = true) {
      if (!fill(1, &from)) return false;
      if (in_string) {
        in_string = !skip_string(escaped);
        if (!in_string && depth == 0) return true;  // a string value
        continue;
      }
      const char c = text_[pos_];
      if (started && depth == 0 && (c == ',' || c == '}' || c == ']' || is_space(c)))
        return true;  // the end of a number, true, false or null
      ++pos_;
      if (c == '"') in_string = true;
      else if (c == '{' || c == '[') ++depth;
      else if ((c == '}' || c == ']') && --depth <= 0) return depth == 0;
    }
  }

  // Parses the member's value in text [from, pos_) on its own, and read(doc)
  // takes what it needs. A parser and a copy of its own: "systemTraceEvents"
  // may be tens of megabytes, and a parser holds ~5 bytes a byte of its
  // largest text until it goes.
  template <class Read>
  bool parse_value(size_t from, Read&& read) {
    std::string text;
    text.reserve(pos_ - from + simdjson::SIMDJSON_PADDING);
    text.assign(text_, from, pos_ - from);
    od::parser parser;
    od::document doc;
    simdjson::error_code e = parser.iterate(text.data(), text.size(), text.capacity()).get(doc);
    if (!e) e = read(doc);
    return e ? fail(simdjson::error_message(e), base_ + from) : true;
  }

  // A string value, unescaped (null and booleans: ""); a number, an object
  // or an array is counted as not read (named by `key`), `into` left as it was.
  bool string_value(size_t from, std::string& into, const std::string& key) {
    return parse_value(from, [&](od::document& doc) {
      std::string_view s;
      od::json_type type;
      simdjson::error_code e = doc.type().get(type);
      if (!e && type == od::json_type::string) e = doc.get_string().get(s);
      if (!e && (type == od::json_type::string || type == od::json_type::null || type == od::json_type::boolean))
        into = s;
      else if (!e)
        ++r_.unsupported[key + (type == od::json_type::object ? " given as an object" : " not a string")];
      return e;
    });
  }

  // A member not read: its array's elements (or 1 for another value) counted as `what`.
  bool count_unread(size_t from, const std::string& what) {
    return parse_value(from, [&](od::document& doc) {
      od::json_type type;
      simdjson::error_code e = doc.type().get(type);
      size_t n = 1;
      if (!e && type == od::json_type::array) e = doc.count_elements().get(n);
      if (!e && n) r_.unsupported[what] += n;
      return e;
    });
  }

  // "stackFrames": each frame's id and name ({"ID": {"name": ..., "parent":
  // ...}, ...}), for the samples. Anything but an object names none.
  bool frames_value(size_t from) {
    return parse_value(from, [&](od::document& doc) -> simdjson::error_code {
      od::json_type type;
      od::value v;
      if (auto e = doc.type().get(type)) return e;
      if (type == od::json_type::array) {  // (another tool's frames, as a list: not read)
        size_t n = 0;
        if (auto e = doc.count_elements().get(n)) return e;
        if (n) r_.unsupported["stackFrames given as an array"] += n;
      }
      if (type != od::json_type::object) return simdjson::SUCCESS;
      if (auto e = doc.get_value().get(v)) return e;
      return each_member(v, [&](std::string_view id, od::value& frame, od::json_type t) {
        if (t != od::json_type::object) return simdjson::SUCCESS;
        return each_member(frame, [&](std::string_view field, od::value& x, od::json_type ft) {
          std::string_view name;
          if (field != "name" || ft != od::json_type::string) return simdjson::SUCCESS;
          if (auto err = x.get_string().get(name)) return err;
          frames[std::string(id)] = std::string(name);
          return simdjson::SUCCESS;
        });
      });
    });
  }

  bool end_of_document() {
    skip_space();
    return fill(1) ? fail("text after the end of the JSON") : true;
  }

  // A JSON number as a pid, tid or index: one out of int64's range is not one.
  static int64_t as_int(double v) { return std::fabs(v) < 9.2e18 ? int64_t(v) : 0; }
  static std::string number_text(od::value& v) {
    std::string_view t = v.raw_json_token();
    while (!t.empty() && is_space(t.back())) t.remove_suffix(1);
    return std::string(t);
  }
  // Whether a pid/tid string is a name rather than a number in a string.
  static bool named(std::string_view s) {
    int64_t v;
    return !to_number(s, v);
  }
  // Some tools write pid/tid as strings: a number as it, a name gets its own number.
  int64_t named_id(std::string_view s) {
    const std::string text(s);
    char* end = nullptr;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (end && *end == 0 && !text.empty()) return v;
    auto [it, fresh] = named_ids_.emplace(text, -1000000 - int64_t(named_ids_.size()));
    return it->second;
  }
};

}  // namespace

bool read_chrome_json(std::istream& in, const std::string& name, ImportModel& m, std::string& error) {
  ImportResult& r = m.r;
  ChromeReader reader(in, m);
  const uint64_t before = r.events_read;
  const bool parsed = reader.read();
  if (!parsed) {
    std::string where = name + ": JSON error at byte " + std::to_string(reader.error_at) + ": " + reader.error_what;
    if (r.events_read == before) {
      error = where;
      return false;
    }
    // A trace cut short (a crashed browser): keep every complete event.
    r.warning = where + "; kept the " + std::to_string(r.events_read - before) + " events before it";
  }
  for (auto& [at, what] : reader.malformed)
    r.malformed.push_back(name + ": JSON error at byte " + std::to_string(at) + ": " + what);
  // Samples are named by their leaf frame where "stackFrames" (read after
  // the events, or before) names it.
  for (const SampleFrame& s : m.sample_frames) {
    auto frame = reader.frames.find(s.sf);
    if (frame != reader.frames.end()) m.feedlets[s.feedlet].points[s.point].name = m.intern(frame->second);
  }
  m.sample_frames.clear();
  const std::string& system_trace = reader.system_trace;
  if (!system_trace.empty()) {
    FtraceReader ftrace(m);
    size_t at = 0;
    while (at < system_trace.size()) {
      size_t nl = system_trace.find('\n', at);
      if (nl == std::string::npos) nl = system_trace.size();
      ftrace.line(std::string_view(system_trace).substr(at, nl - at));
      at = nl + 1;
    }
    ftrace.finish();
  }
  if (parsed && r.events_read == before && system_trace.empty()) {
    if (!r.malformed.empty()) {
      error = r.malformed[0] + " (and no event that is JSON)";
      return false;
    }
    error = name + ": no trace events (neither an array of events nor an object with \"traceEvents\")";
    return false;
  }
  return true;
}

}  // namespace tinescope::import
