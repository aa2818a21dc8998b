// The Chrome JSON reader: a SAX handler collects each trace event's fields
// (never the whole document) and hands it to the import model.
#include <cmath>
#include <nlohmann/json.hpp>

#include "import_model.hpp"

namespace tinescope::index {

namespace {

class JsonEvents : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit JsonEvents(ImportModel& model) : m(model), r(model.r) {}
  ImportModel& m;
  ImportResult& r;

  // ---- SAX
  bool null() override { return value(std::string()), true; }
  bool boolean(bool) override { return value(std::string()), true; }
  // A number's text is needed only for an id: not made for every pid, tid
  // and argument (~2 % of an import's instructions).
  bool number_integer(number_integer_t v) override {
    return number(double(v), [v] { return std::to_string(v); }), true;
  }
  bool number_unsigned(number_unsigned_t v) override {
    return number(double(v), [v] { return std::to_string(v); }), true;
  }
  bool number_float(number_float_t v, const string_t& s) override {
    return number(v, [&s] { return s; }), true;
  }
  bool string(string_t& s) override { return value(s), true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    ++depth_;
    if (in_events() && depth_ == events_depth_ + 1) ev_ = RawEvent{}, in_event_ = true;
    if (in_event_ && depth_ == events_depth_ + 2 && key_ == "args") in_args_ = true;
    if (in_event_ && depth_ == events_depth_ + 2 && key_ == "id2") in_id2_ = true;
    return true;
  }
  bool end_object() override {
    if (in_event_ && depth_ == events_depth_ + 2) in_args_ = in_id2_ = false;
    if (in_event_ && depth_ == events_depth_ + 1) in_event_ = false, m.take(ev_);
    --depth_;
    key_.clear();
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    if (depth_ == 1 && events_depth_ < 0) events_depth_ = 1;                     // the array form
    if (depth_ == 2 && key_ == "traceEvents" && top_object_) events_depth_ = 2;  // the object form
    return true;
  }
  bool end_array() override {
    if (depth_ == events_depth_) events_done_ = true;
    --depth_;
    key_.clear();
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 1) top_object_ = true;
    key_ = k;
    return true;
  }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& ex) override {
    error_pos_ = pos;
    error_ = ex.what();
    return false;
  }

  // ---- results
  size_t error_pos_ = 0;
  std::string error_;
  bool events_done_ = false;
  std::string system_trace;  // the object form's "systemTraceEvents": ftrace text

 private:
  int depth_ = 0, events_depth_ = -1;
  bool top_object_ = false, in_event_ = false, in_args_ = false, in_id2_ = false;
  std::string key_;
  RawEvent ev_;
  std::unordered_map<std::string, int64_t> named_ids_;

  bool in_events() const { return events_depth_ > 0 && !events_done_; }

  // A JSON number as a pid, tid or index: one out of int64's range is not one.
  static int64_t as_int(double v) { return std::fabs(v) < 9.2e18 ? int64_t(v) : 0; }
  template <class Text>
  void number(double v, Text&& text) {
    if (in_event_ && depth_ == events_depth_ + 1) {
      if (key_ == "ts") ev_.ts = v, ev_.has_ts = true;
      else if (key_ == "dur") ev_.dur = v, ev_.has_dur = true;
      else if (key_ == "pid") ev_.pid = as_int(v), ev_.has_pid = true;
      else if (key_ == "tid") ev_.tid = as_int(v), ev_.has_tid = true;
      else if (key_ == "id") ev_.id = text();
    } else if (in_args_ && depth_ == events_depth_ + 2) {
      ev_.num_args.emplace_back(key_, v);
      if (key_ == "sort_index") ev_.sort_index = as_int(v), ev_.has_sort = true;
    } else if (in_id2_ && depth_ == events_depth_ + 2) {
      ev_.id = key_ + ":" + text();
    }
  }
  void value(const std::string& s) {
    if (depth_ == 1 && top_object_ && key_ == "displayTimeUnit") r.display_time_unit = s;
    if (depth_ == 1 && top_object_ && key_ == "systemTraceEvents") system_trace = s;
    if (in_event_ && depth_ == events_depth_ + 1) {
      if (key_ == "ph") ev_.ph = s;
      else if (key_ == "name") ev_.name = s;
      else if (key_ == "cat") ev_.cat = s;
      else if (key_ == "id") ev_.id = s;
      else if (key_ == "s") ev_.scope = s;
      else if (key_ == "pid") ev_.pid = named_id(s), ev_.has_pid = true;
      else if (key_ == "tid") ev_.tid = named_id(s), ev_.has_tid = true;
    } else if (in_args_ && depth_ == events_depth_ + 2 && key_ == "name") {
      ev_.arg_name = s;
    } else if (in_id2_ && depth_ == events_depth_ + 2) {
      ev_.id = key_ + ":" + s;
    }
  }
  // Some tools write pid/tid as strings: give each its own number.
  int64_t named_id(const std::string& s) {
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (end && *end == 0 && !s.empty()) return v;
    auto [it, fresh] = named_ids_.emplace(s, -1000000 - int64_t(named_ids_.size()));
    return it->second;
  }
};

}  // namespace

bool read_chrome_json(std::istream& in, const std::string& name, ImportModel& m, std::string& error) {
  ImportResult& r = m.r;
  JsonEvents h(m);
  const uint64_t before = r.events_read;
  bool parsed = nlohmann::json::sax_parse(in, &h, nlohmann::json::input_format_t::json, true, true);
  if (!parsed) {
    std::string where = name + ": JSON error at byte " + std::to_string(h.error_pos_) + ": " + h.error_;
    if (r.events_read == before) {
      error = where;
      return false;
    }
    // A trace cut short (a crashed browser): keep every complete event.
    r.warning = where + "; kept the " + std::to_string(r.events_read - before) + " events before it";
  }
  if (!h.system_trace.empty()) {
    FtraceReader ftrace(m);
    size_t at = 0;
    while (at < h.system_trace.size()) {
      size_t nl = h.system_trace.find('\n', at);
      if (nl == std::string::npos) nl = h.system_trace.size();
      ftrace.line(std::string_view(h.system_trace).substr(at, nl - at));
      at = nl + 1;
    }
    ftrace.finish();
  }
  if (parsed && r.events_read == before && h.system_trace.empty()) {
    error = name + ": no trace events (neither an array of events nor an object with \"traceEvents\")";
    return false;
  }
  return true;
}

}  // namespace tinescope::index
