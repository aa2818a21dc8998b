// The stream syntax: a small recursive-descent parser and its printer.
#include "tinescope/analysis/stream_expr.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>

namespace tinescope::analysis {

namespace {

struct OpInfo {
  Op op;
  const char* name;
  int min_args, max_args;  // stream arguments (-1: any number)
  bool takes_duration;
};
constexpr OpInfo kOps[] = {
    {Op::Intervals, "intervals", 0, 0, false}, {Op::Instants, "instants", 0, 0, false},
    {Op::Samples, "samples", 0, 0, false},     {Op::Messages, "messages", 0, 0, false},
    {Op::Longer, "longer", 1, 1, true},        {Op::Shorter, "shorter", 1, 1, true},
    {Op::Union, "union", 1, -1, false},        {Op::Intersect, "intersect", 1, -1, false},
    {Op::Span, "span", 2, 2, false},           {Op::Sum, "sum", 1, 1, false},
    {Op::Rate, "rate", 1, 1, false},           {Op::Exclude, "exclude", 2, 2, false},
    {Op::Smooth, "smooth", 1, 1, true},        {Op::Field, "field", 0, 0, false},
    {Op::Queue, "queue", 0, 0, false},         {Op::Jobs, "jobs", 0, 0, false},
    {Op::Response, "response", 0, 0, false},
};

const OpInfo& info(Op op) {
  for (const OpInfo& o : kOps)
    if (o.op == op) return o;
  return kOps[0];
}

const char* kCmpText[] = {"=", "!=", "<", "<=", ">", ">="};

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  bool parse(Expr& out, std::string& error) {
    bool ok = expr(out, 0);
    if (ok && (skip(), pos_ != s_.size())) ok = fail("unexpected '" + std::string(1, s_[pos_]) + "'");
    if (!ok) {
      error = "column " + std::to_string(error_at_ + 1) + ": " + error_;
      return false;
    }
    return true;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0, error_at_ = 0;
  std::string error_;

  bool fail(const std::string& what) {
    if (error_.empty()) error_ = what, error_at_ = pos_;
    return false;
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(uint8_t(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  std::string word() {
    skip();
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(uint8_t(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '.')) ++pos_;
    return std::string(s_.substr(b, pos_ - b));
  }
  bool quoted(std::string& out) {
    skip();
    if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) return false;
    char q = s_[pos_++];
    out.clear();
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out += s_[pos_++];
    }
    if (pos_ >= s_.size()) return fail("a string without its closing quote");
    ++pos_;
    return true;
  }
  // A value after "key=": a quoted string, or a bare word / number.
  bool value(std::string& out) {
    skip();
    if (pos_ < s_.size() && (s_[pos_] == '"' || s_[pos_] == '\'')) return quoted(out);
    size_t b = pos_;
    while (pos_ < s_.size() && !std::isspace(uint8_t(s_[pos_])) && s_[pos_] != ',' && s_[pos_] != ')') ++pos_;
    out = std::string(s_.substr(b, pos_ - b));
    return !out.empty() || fail("a value");
  }

  bool expr(Expr& e, int depth) {
    if (depth > 64) return fail("streams nested too deep");
    skip();
    std::string name;
    if (pos_ < s_.size() && (s_[pos_] == '"' || s_[pos_] == '\'')) {  // "x" = intervals(name="x")
      if (!quoted(name)) return false;
      e = Expr{};
      e.filter.name = name;
      return true;
    }
    size_t at = pos_;
    name = word();
    const OpInfo* op = nullptr;
    for (const OpInfo& o : kOps)
      if (name == o.name) op = &o;
    if (!op) {
      pos_ = at;
      std::string known;
      for (const OpInfo& o : kOps) known += std::string(known.empty() ? "" : ", ") + o.name;
      return fail(name.empty() ? "a stream (" + known + ")" : "unknown stream '" + name + "' (known: " + known + ")");
    }
    e = Expr{};
    e.op = op->op;
    if (!eat('(')) return fail("'(' after " + name);
    bool duration_seen = false;
    if (!eat(')')) {
      do {
        if (!argument(e, *op, depth, duration_seen)) return false;
      } while (eat(','));
      if (!eat(')')) return fail("',' or ')'");
    }
    int n = int(e.args.size());
    if (n < op->min_args || (op->max_args >= 0 && n > op->max_args))
      return fail(name + " takes " + std::to_string(op->min_args) +
                  (op->max_args == op->min_args ? "" : op->max_args < 0 ? " or more" : "-" + std::to_string(op->max_args)) +
                  " stream(s), not " + std::to_string(n));
    if (op->takes_duration && !duration_seen) return fail(name + " needs a duration (e.g. 250us)");
    if (op->op == Op::Field && e.filter.field.empty()) return fail("field needs the field's name: field(name=\"T\", \"F\")");
    return check_types(e);
  }

  bool argument(Expr& e, const OpInfo& op, int depth, bool& duration_seen) {
    skip();
    size_t at = pos_;
    if (op.op == Op::Field && pos_ < s_.size() && (s_[pos_] == '"' || s_[pos_] == '\'')) {  // its field, by name
      if (!quoted(e.filter.field)) return false;
      std::string why;
      return valid_pattern(e.filter.field, why) || (pos_ = at, fail(why));
    }
    if (takes_filter(op.op)) return field(e.filter);
    // A duration (starts with a digit) or a stream.
    if (pos_ < s_.size() && (std::isdigit(uint8_t(s_[pos_])) || s_[pos_] == '.')) {
      std::string text;
      value(text);
      if (!op.takes_duration) return pos_ = at, fail(std::string(op.name) + " takes no duration");
      if (duration_seen) return pos_ = at, fail("a second duration");
      if (!parse_duration_ns(text, e.ns) || e.ns < 0) return pos_ = at, fail("not a duration: '" + text + "' (e.g. 250us)");
      duration_seen = true;
      return true;
    }
    e.args.emplace_back();
    return expr(e.args.back(), depth + 1);
  }

  bool field(Filter& f) {
    size_t at = pos_;
    std::string key = word();
    skip();
    int cmp = -1;
    for (int c : {1, 3, 5, 0, 2, 4})  // two-character operators first
      if (s_.substr(pos_, std::strlen(kCmpText[c])) == kCmpText[c]) {
        cmp = c;
        break;
      }
    if (key.empty() || cmp < 0) return pos_ = at, fail("a field: name=, thread=, process=, channel=, task=, depth= or value<op>");
    pos_ += std::strlen(kCmpText[cmp]);
    std::string v;
    if (!value(v)) return false;
    if (key == "value") {
      ValueTest t;
      t.cmp = ValueTest::Cmp(cmp);
      char* end = nullptr;
      t.value = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end) return pos_ = at, fail("value needs a number, not '" + v + "'");
      f.values.push_back(t);
      return true;
    }
    if (cmp != ValueTest::Eq) return pos_ = at, fail(key + " takes '=', not '" + kCmpText[cmp] + "'");
    if (key == "received" || key == "sent") {
      if (v != "true" && v != "false") return pos_ = at, fail(key + " takes true or false, not '" + v + "'");
      (key == "received" ? f.received : f.sent) = v == "true";
      return true;
    }
    std::string why;
    if (!valid_pattern(v, why)) return pos_ = at, fail(why);
    if (key == "name") return f.name = v, true;
    if (key == "thread") return f.thread = v, true;
    if (key == "process") return f.process = v, true;
    if (key == "channel") return f.channel = v, true;
    if (key == "task") return f.task = v, true;
    if (key == "field") return f.field = v, true;
    if (key == "where") {
      std::string why;
      return parse_where(v, f.where, why) || (pos_ = at, fail("where: " + why));
    }
    if (key == "depth") {
      char* end = nullptr;
      long d = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end || d < 0) return pos_ = at, fail("depth needs a number >= 0");
      f.depth = int(d);
      return true;
    }
    return pos_ = at, fail("unknown field '" + key + "' (name, thread, process, channel, depth, field, where, received, sent, value)");
  }

  bool check_types(const Expr& e) {
    auto need = [&](size_t i, bool intervals) {
      if (yields_intervals(e.args[i]) == intervals) return true;
      return fail(std::string(op_name(e.op)) + ": argument " + std::to_string(i + 1) + " must be " +
                  (intervals ? "intervals" : "samples") + ", not " + op_name(e.args[i].op));
    };
    switch (e.op) {
      case Op::Longer:
      case Op::Shorter:
      case Op::Union:
      case Op::Intersect:
      case Op::Span:
        for (size_t i = 0; i < e.args.size(); ++i)
          if (!need(i, true)) return false;
        return true;
      case Op::Rate:
      case Op::Smooth: return need(0, false);
      case Op::Exclude: return need(0, false) && need(1, true);
      default: return true;
    }
  }
};

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

bool ValueTest::passes(double v) const {
  switch (cmp) {
    case Eq: return v == value;
    case Ne: return v != value;
    case Lt: return v < value;
    case Le: return v <= value;
    case Gt: return v > value;
    case Ge: return v >= value;
  }
  return false;
}

bool is_base(Op op) { return op <= Op::Messages; }
bool takes_filter(Op op) {
  return is_base(op) || op == Op::Field || op == Op::Queue || op == Op::Jobs || op == Op::Response;
}
const char* op_name(Op op) { return info(op).name; }

bool yields_intervals(const Expr& e) {
  switch (e.op) {
    case Op::Samples:
    case Op::Field:
    case Op::Queue:
    case Op::Response:
    case Op::Sum:
    case Op::Rate:
    case Op::Smooth:
    case Op::Exclude: return false;
    default: return true;
  }
}

bool parse_stream(std::string_view text, Expr& out, std::string& error) { return Parser(text).parse(out, error); }

bool parse_where(std::string_view text, std::vector<FieldTest>& out, std::string& why) {
  out.clear();
  auto trim = [](std::string_view s) {
    while (!s.empty() && std::isspace(uint8_t(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(uint8_t(s.back()))) s.remove_suffix(1);
    return s;
  };
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find(" and ", at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view part = trim(text.substr(at, end - at));
    at = end + 5;
    // FIELD OP VALUE: the first operator character ends the field's name.
    const size_t op = part.find_first_of("=!<>");
    if (op == std::string_view::npos || op == 0)
      return why = "'" + std::string(part) + "' is not FIELD OP VALUE (e.g. bytes > 4096)", false;
    FieldTest t;
    t.field = std::string(trim(part.substr(0, op)));
    int cmp = -1;
    for (int c : {1, 3, 5, 0, 2, 4})
      if (part.substr(op, std::strlen(kCmpText[c])) == kCmpText[c]) {
        cmp = c;
        break;
      }
    if (cmp < 0) return why = "no comparison in '" + std::string(part) + "'", false;
    std::string_view value = trim(part.substr(op + std::strlen(kCmpText[cmp])));
    t.test.cmp = ValueTest::Cmp(cmp);
    const bool quoted = value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front();
    char* num_end = nullptr;
    const std::string v(quoted ? value.substr(1, value.size() - 2) : value);
    t.test.value = std::strtod(v.c_str(), &num_end);
    t.number = !quoted && !v.empty() && num_end && *num_end == 0;
    if (!t.number) {
      if (cmp != ValueTest::Eq && cmp != ValueTest::Ne)
        return why = "'" + std::string(part) + "': text compares with = or != only", false;
      t.text = v;
      if (!valid_pattern(t.text, why)) return false;
    }
    out.push_back(std::move(t));
    if (end == text.size()) break;
  }
  return !out.empty() || (why = "no test", false);
}

std::string format_where(const std::vector<FieldTest>& tests) {
  std::string out;
  for (const FieldTest& t : tests) {
    if (!out.empty()) out += " and ";
    out += t.field + " " + kCmpText[t.test.cmp] + " ";
    if (t.number) {
      char num[64];
      std::snprintf(num, sizeof num, "%.17g", t.test.value);
      out += num;
    } else {
      out += "'" + t.text + "'";
    }
  }
  return out;
}

std::string format_stream(const Expr& e) {
  std::string out = std::string(op_name(e.op)) + "(";
  std::string sep;
  auto add = [&](const std::string& part) {
    out += sep + part;
    sep = ", ";
  };
  if (takes_filter(e.op)) {
    const Filter& f = e.filter;
    if (!f.name.empty()) add("name=" + quote(f.name));
    if (!f.thread.empty()) add("thread=" + quote(f.thread));
    if (!f.process.empty()) add("process=" + quote(f.process));
    if (!f.channel.empty()) add("channel=" + quote(f.channel));
    if (!f.task.empty()) add("task=" + quote(f.task));
    if (f.depth >= 0) add("depth=" + std::to_string(f.depth));
    if (!f.field.empty()) add(quote(f.field));
    if (!f.where.empty()) add("where=" + quote(format_where(f.where)));
    if (f.received >= 0) add(f.received ? "received=true" : "received=false");
    if (f.sent >= 0) add(f.sent ? "sent=true" : "sent=false");
    for (const ValueTest& t : f.values) {
      char num[64];
      std::snprintf(num, sizeof num, "%.17g", t.value);
      add(std::string("value") + kCmpText[t.cmp] + num);
    }
  }
  for (const Expr& a : e.args) add(format_stream(a));
  if (info(e.op).takes_duration) add(format_duration_ns(e.ns));
  return out + ")";
}

struct NameMatcher::Regex {
  std::regex re;
};

NameMatcher::NameMatcher(const std::string& pattern) : pattern_(pattern) {
  if (pattern.size() >= 2 && pattern.front() == '/' && pattern.back() == '/') {
    regex_ = true;
    auto r = std::make_shared<Regex>();
    try {
      r->re = std::regex(pattern.substr(1, pattern.size() - 2), std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error&) {
      // A bad expression matches its own text literally (the parser refuses
      // it first; a search box just finds nothing).
      regex_ = false;
      pattern_ = pattern.substr(1, pattern.size() - 2);
      return;
    }
    re_ = std::move(r);
  }
}

bool valid_pattern(const std::string& pattern, std::string& why) {
  if (pattern.size() < 2 || pattern.front() != '/' || pattern.back() != '/') return true;
  try {
    std::regex re(pattern.substr(1, pattern.size() - 2), std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    why = "not a regular expression: " + pattern + " (" + e.what() + ")";
    return false;
  }
  return true;
}

bool NameMatcher::matches(std::string_view text) const {
  if (pattern_.empty()) return true;
  if (regex_) return std::regex_search(text.begin(), text.end(), re_->re);
  // Glob: '*' any run, '?' one character; the classic backtracking on the last star.
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern_.size() && (pattern_[p] == '?' || pattern_[p] == text[t])) {
      ++p, ++t;
    } else if (p < pattern_.size() && pattern_[p] == '*') {
      star = p++, mark = t;
    } else if (star != std::string::npos) {
      p = star + 1, t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern_.size() && pattern_[p] == '*') ++p;
  return p == pattern_.size();
}

bool parse_duration(std::string_view text, double& ns) {
  std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) return false;
  const std::string unit(end);
  double scale;
  if (unit.empty() || unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else if (unit == "min") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else return false;
  ns = v * scale;
  return std::isfinite(ns);
}

bool parse_duration_ns(std::string_view text, int64_t& ns) {
  double d;
  if (!parse_duration(text, d) || std::abs(d) > 9e18) return false;
  ns = int64_t(std::llround(d));
  return true;
}

std::string format_duration_ns(int64_t ns) {
  const char* unit = "ns";
  int64_t div = 1;
  if (ns != 0 && ns % 1'000'000'000 == 0) unit = "s", div = 1'000'000'000;
  else if (ns != 0 && ns % 1'000'000 == 0) unit = "ms", div = 1'000'000;
  else if (ns != 0 && ns % 1'000 == 0) unit = "us", div = 1'000;
  return std::to_string(ns / div) + unit;
}

std::string readable_duration(int64_t ns) {
  const double a = std::abs(double(ns));
  const char* unit = "ns";
  double v = double(ns);
  if (a >= 1e9) unit = "s", v /= 1e9;
  else if (a >= 1e6) unit = "ms", v /= 1e6;
  else if (a >= 1e3) unit = "us", v /= 1e3;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.4g%s", v, unit);
  return buf;
}

}  // namespace tinescope::analysis
