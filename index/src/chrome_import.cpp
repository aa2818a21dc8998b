// The Chrome JSON importer: a SAX handler collects each trace event's fields
// (never the whole document), turns it into compact records per feedlet, and
// at the end sorts each feedlet by time, rebuilds interval nesting, and
// writes chunks.
#include "tinescope/chrome_import.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <istream>
#include <nlohmann/json.hpp>
#include <streambuf>
#include <unordered_map>
#include <vector>

#include "tinescope/trace_writer.hpp"

namespace tinescope::index {

using namespace format;

namespace {

// gzread reads gzip and plain files alike.
class GzBuf : public std::streambuf {
 public:
  explicit GzBuf(gzFile f) : f_(f) {}
  uint64_t consumed() const { return total_; }

 protected:
  int_type underflow() override {
    int n = gzread(f_, buf_, sizeof buf_);
    if (n <= 0) return traits_type::eof();
    total_ += uint64_t(n);
    setg(buf_, buf_, buf_ + n);
    return traits_type::to_int_type(buf_[0]);
  }

 private:
  gzFile f_;
  char buf_[1 << 16];
  uint64_t total_ = 0;
};

struct RawEvent {
  std::string ph, name, cat, id, scope, arg_name, pid_s, tid_s;
  bool has_pid = false, has_tid = false, has_ts = false, has_dur = false, has_sort = false;
  int64_t pid = 0, tid = 0, sort_index = 0;
  double ts = 0, dur = 0;
  std::vector<std::pair<std::string, double>> num_args;
};

struct Span {  // an interval of a feedlet, begin and end known
  uint64_t start, end;
  uint32_t name;
  uint64_t seq;
};

struct Point {  // anything else, in time order per feedlet
  uint64_t ts, seq;
  uint16_t type;
  uint32_t name;
  uint64_t a;  // counter: double bits; message: id
};

struct BeginEnd {
  uint64_t ts, seq;
  bool begin;
  uint32_t name;
};

struct Flow {
  uint64_t id_hash, ts, seq;
  char ph;
  uint32_t feedlet, name;
};

struct Feedlet {
  uint32_t id;
  int64_t pid, tid;
  std::string name;
  std::vector<Span> spans;
  std::vector<BeginEnd> be;
  std::vector<Point> points;
};

class Importer : public nlohmann::json_sax<nlohmann::json> {
 public:
  ImportResult& r;
  explicit Importer(ImportResult& result) : r(result) {}

  // ---- SAX
  bool null() override { return value(std::string()), true; }
  bool boolean(bool) override { return value(std::string()), true; }
  bool number_integer(number_integer_t v) override { return number(double(v), std::to_string(v)), true; }
  bool number_unsigned(number_unsigned_t v) override { return number(double(v), std::to_string(v)), true; }
  bool number_float(number_float_t v, const string_t& s) override { return number(v, s), true; }
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
    if (in_event_ && depth_ == events_depth_ + 1) in_event_ = false, take(ev_);
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
  std::vector<Feedlet> feedlets;
  std::unordered_map<std::string, uint32_t> string_ids;
  std::vector<std::string> strings{""};
  std::map<int64_t, std::string> process_names;
  std::map<int64_t, int64_t> process_sort;
  std::map<std::pair<int64_t, int64_t>, int64_t> thread_sort;
  std::vector<Flow> flows;
  size_t error_pos_ = 0;
  std::string error_;
  bool events_done_ = false;

  uint32_t intern(const std::string& s) {
    auto [it, fresh] = string_ids.emplace(s, uint32_t(strings.size()));
    if (fresh) strings.push_back(s);
    return it->second;
  }

 private:
  int depth_ = 0, events_depth_ = -1;
  bool top_object_ = false, in_event_ = false, in_args_ = false, in_id2_ = false;
  std::string key_;
  RawEvent ev_;
  uint64_t seq_ = 0;
  std::map<std::tuple<int64_t, int64_t, std::string>, uint32_t> feedlet_of_;
  std::unordered_map<std::string, int64_t> named_ids_;

  bool in_events() const { return events_depth_ > 0 && !events_done_; }

  void number(double v, const std::string& text) {
    if (in_event_ && depth_ == events_depth_ + 1) {
      if (key_ == "ts") ev_.ts = v, ev_.has_ts = true;
      else if (key_ == "dur") ev_.dur = v, ev_.has_dur = true;
      else if (key_ == "pid") ev_.pid = int64_t(v), ev_.has_pid = true;
      else if (key_ == "tid") ev_.tid = int64_t(v), ev_.has_tid = true;
      else if (key_ == "id") ev_.id = text;
    } else if (in_args_ && depth_ == events_depth_ + 2) {
      ev_.num_args.emplace_back(key_, v);
      if (key_ == "sort_index") ev_.sort_index = int64_t(v), ev_.has_sort = true;
    } else if (in_id2_ && depth_ == events_depth_ + 2) {
      ev_.id = key_ + ":" + text;
    }
  }
  void value(const std::string& s) {
    if (depth_ == 1 && top_object_ && key_ == "displayTimeUnit") r.display_time_unit = s;
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

  Feedlet& feedlet(int64_t pid, int64_t tid, const std::string& lane) {
    auto [it, fresh] = feedlet_of_.emplace(std::make_tuple(pid, tid, lane), uint32_t(feedlets.size()));
    if (fresh) {
      Feedlet f;
      f.id = uint32_t(feedlets.size()) + 1;
      f.pid = pid, f.tid = tid;
      f.name = lane;
      feedlets.push_back(std::move(f));
    }
    return feedlets[it->second];
  }

  uint64_t ticks(double us) const { return uint64_t(std::llround(us * 1000.0)); }

  void point(Feedlet& f, const RawEvent& e, uint16_t type, uint32_t name, uint64_t a) {
    f.points.push_back(Point{ticks(e.ts), seq_++, type, name, a});
  }

  void take(const RawEvent& e) {
    ++r.events_read;
    if (e.ph.size() != 1) {
      ++r.unsupported[e.ph.empty() ? "(no ph)" : e.ph];
      return;
    }
    const char ph = e.ph[0];
    if (ph == 'M') return metadata(e);
    if (!e.has_ts) {
      ++r.unsupported[e.ph + " without ts"];
      return;
    }
    if (e.ts < 0) {  // ticks are unsigned
      ++r.unsupported[e.ph + " with negative ts"];
      return;
    }
    const uint32_t name = intern(e.name);
    switch (ph) {
      case 'B':
      case 'E': {
        Feedlet& f = feedlet(e.pid, e.tid, "");
        f.be.push_back(BeginEnd{ticks(e.ts), seq_++, ph == 'B', name});
        return;
      }
      case 'X': {
        Feedlet& f = feedlet(e.pid, e.tid, "");
        uint64_t t = ticks(e.ts);
        f.spans.push_back(Span{t, t + (e.has_dur ? ticks(std::max(0.0, e.dur)) : 0), name, seq_++});
        return;
      }
      case 'i':
      case 'I':
      case 'R': {
        // Scope: thread (default), process or global: each on its own lane.
        Feedlet& f = e.scope == "g"   ? feedlet(0, 0, "global")
                     : e.scope == "p" ? feedlet(e.pid, 0, "process")
                                      : feedlet(e.pid, e.tid, "");
        point(f, e, kInstant, name, 0);
        return;
      }
      case 'C': {
        Feedlet& f = feedlet(e.pid, 0, "counters");
        std::string base = e.name + (e.id.empty() ? "" : "[" + e.id + "]");
        for (auto& [k, v] : e.num_args) {
          double d = v;
          uint64_t bits;
          std::memcpy(&bits, &d, 8);
          point(f, e, kCounterFloat, intern(e.num_args.size() == 1 ? base : base + "." + k), bits);
        }
        return;
      }
      case 'b':
      case 'e':
      case 'n':
      case 'S':
      case 'T':
      case 'p':
      case 'F': {
        // Async: a lane per (process, category, id), nested like a thread.
        Feedlet& f = feedlet(e.pid, 0, "async " + e.cat + " " + e.id);
        if (ph == 'n' || ph == 'T' || ph == 'p') {
          point(f, e, kInstant, name, 0);
        } else {
          f.be.push_back(BeginEnd{ticks(e.ts), seq_++, ph == 'b' || ph == 'S', name});
        }
        return;
      }
      case 's':
      case 't':
      case 'f': {
        Feedlet& f = feedlet(e.pid, e.tid, "");
        flows.push_back(Flow{checksum(e.id.data(), e.id.size()) ^ checksum(e.cat.data(), e.cat.size()), ticks(e.ts),
                             seq_++, ph, f.id, name});
        return;
      }
      default: ++r.unsupported[e.ph];
    }
  }

  void metadata(const RawEvent& e) {
    if (e.name == "process_name") {
      process_names[e.pid] = e.arg_name;
    } else if (e.name == "thread_name") {
      feedlet(e.pid, e.tid, "").name = e.arg_name;
    } else if (e.name == "process_sort_index" && e.has_sort) {
      process_sort[e.pid] = e.sort_index;
    } else if (e.name == "thread_sort_index" && e.has_sort) {
      thread_sort[{e.pid, e.tid}] = e.sort_index;
    } else {
      ++r.unsupported["M " + e.name];
    }
  }
};

// Turns a feedlet's spans and begin/end pairs into properly nested begins and
// ends (parents before children), plus completes for intervals that overlap
// without nesting, merged in time with the feedlet's other events.
std::vector<Point> nest(Feedlet& f, uint64_t& unmatched) {
  // Pair begins with ends in time order (file order breaks ties).
  std::stable_sort(f.be.begin(), f.be.end(), [](const BeginEnd& a, const BeginEnd& b) { return a.ts < b.ts; });
  std::vector<BeginEnd> open;
  for (const BeginEnd& x : f.be) {
    if (x.begin) {
      open.push_back(x);
    } else if (open.empty()) {
      ++unmatched;
    } else {
      f.spans.push_back(Span{open.back().ts, x.ts, open.back().name, open.back().seq});
      open.pop_back();
    }
  }
  for (const BeginEnd& b : open) f.spans.push_back(Span{b.ts, UINT64_MAX, b.name, b.seq});  // never ended
  std::sort(f.spans.begin(), f.spans.end(), [](const Span& a, const Span& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.end != b.end) return a.end > b.end;  // the longer one is the parent
    return a.seq < b.seq;
  });
  std::vector<Point> out;
  uint64_t seq = 0;
  std::vector<const Span*> stack;
  auto pop = [&] {
    const Span* s = stack.back();
    stack.pop_back();
    if (s->end != UINT64_MAX) out.push_back(Point{s->end, seq++, kIntervalEnd, s->name, 0});
  };
  for (const Span& s : f.spans) {
    while (!stack.empty() && !(stack.back()->start <= s.start && s.end <= stack.back()->end)) {
      if (stack.back()->end > s.start) break;  // overlaps without nesting
      pop();
    }
    if (!stack.empty() && s.end > stack.back()->end) {
      out.push_back(Point{s.end, seq++, kIntervalComplete, s.name, s.end - s.start});
      continue;
    }
    out.push_back(Point{s.start, seq++, kIntervalBegin, s.name, 0});
    stack.push_back(&s);
  }
  while (!stack.empty()) pop();
  for (Point& p : f.points) p.seq += uint64_t(1) << 62;  // after intervals at the same time
  out.insert(out.end(), f.points.begin(), f.points.end());
  std::stable_sort(out.begin(), out.end(), [](const Point& a, const Point& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.seq < b.seq;
  });
  return out;
}

}  // namespace

bool import_chrome_json(const std::string& in, const std::string& out, ImportResult& r, std::string& error) {
  gzFile gz = gzopen(in.c_str(), "rb");
  if (!gz) {
    error = in + ": cannot open: " + std::strerror(errno);
    return false;
  }
  gzbuffer(gz, 1 << 17);
  GzBuf buf(gz);
  std::istream stream(&buf);
  Importer im(r);
  bool parsed = nlohmann::json::sax_parse(stream, &im, nlohmann::json::input_format_t::json, true, true);
  gzclose(gz);
  if (!parsed) {
    std::string where = in + ": JSON error at byte " + std::to_string(im.error_pos_) + ": " + im.error_;
    if (r.events_read == 0) {
      error = where;
      return false;
    }
    // A trace cut short (a crashed browser): keep every complete event.
    r.warning = where + "; kept the " + std::to_string(r.events_read) + " events before it";
  }
  if (im.feedlets.empty() && r.events_read == 0 && parsed) {
    error = in + ": no trace events (neither an array of events nor an object with \"traceEvents\")";
    return false;
  }

  // Flows: per flow id in time order, each step ends one link and starts the next.
  std::stable_sort(im.flows.begin(), im.flows.end(), [](const Flow& a, const Flow& b) {
    return a.id_hash != b.id_hash ? a.id_hash < b.id_hash : a.ts < b.ts;
  });
  uint64_t link = 1;
  for (size_t i = 0; i < im.flows.size(); ++i) {
    const Flow& x = im.flows[i];
    bool first = i == 0 || im.flows[i - 1].id_hash != x.id_hash;
    if (first) ++link;
    Feedlet& f = im.feedlets[x.feedlet - 1];
    if (x.ph != 's' && !first) f.points.push_back(Point{x.ts, x.seq, kMessageRecv, x.name, link});
    if (x.ph != 'f') f.points.push_back(Point{x.ts, x.seq, kMessageSend, x.name, ++link});
  }

  // Names of lanes.
  for (Feedlet& f : im.feedlets) {
    std::string process = im.process_names.count(f.pid) ? im.process_names[f.pid] : "pid " + std::to_string(f.pid);
    if (f.name.empty()) f.name = "tid " + std::to_string(f.tid);
    else if (f.name == "process" || f.name == "counters" || f.name.rfind("async ", 0) == 0) f.name = process + " " + f.name;
  }

  int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = out + ": " + std::strerror(errno) + (errno == EEXIST ? " (tinescope never writes over a file)" : "");
    return false;
  }
  bool ok = true;
  auto write = [&](const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    while (ok && n) {
      ssize_t w = ::write(fd, c, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) ok = false, error = out + ": " + std::strerror(w < 0 ? errno : ENOSPC);
      else c += w, n -= size_t(w);
    }
  };
  HeaderInfo info;
  info.clock.source = uint8_t(ClockSource::Monotonic);
  info.clock.ticks_per_ns = 1.0;
  info.process_name = im.process_names.empty() ? in : im.process_names.begin()->second;
  info.cmdline = {"tinescope", "import", in};
  info.recorder = "tinescope import (Chrome JSON)";
  std::string header = build_file_header(info);
  write(header.data(), header.size());

  // Ticks are nanoseconds of the JSON's own clock, as they were.
  std::vector<uint8_t> frame;
  ChunkBuilder meta;
  auto flush = [&](ChunkBuilder& cb) {
    if (cb.empty()) return;
    cb.finish(0, frame);
    write(frame.data(), frame.size());
  };
  auto meta_string = [&](uint32_t id, const std::string& s) {
    uint8_t* p = meta.begin(kStringDef, 0, s.size());
    p = ChunkBuilder::put_u64(p, id);
    p = ChunkBuilder::put_bytes(p, s.data(), s.size());
    meta.end(p);
    if (meta.full()) flush(meta);
  };
  auto meta_pair = [&](const std::string& k, const std::string& v) {
    uint32_t ki = im.intern(k), vi = im.intern(v);
    return std::make_pair(ki, vi);
  };
  std::vector<std::pair<uint32_t, uint32_t>> metadata;
  for (Feedlet& f : im.feedlets) {
    std::string n = "feedlet." + std::to_string(f.id);
    im.intern(f.name);
    metadata.push_back(meta_pair(n + ".pid", std::to_string(f.pid)));
    metadata.push_back(meta_pair(n + ".process", im.process_names.count(f.pid) ? im.process_names[f.pid] : ""));
    if (im.thread_sort.count({f.pid, f.tid})) metadata.push_back(meta_pair(n + ".sort_index", std::to_string(im.thread_sort[{f.pid, f.tid}])));
  }
  for (auto& [pid, idx] : im.process_sort) metadata.push_back(meta_pair("process." + std::to_string(pid) + ".sort_index", std::to_string(idx)));
  if (!r.display_time_unit.empty()) metadata.push_back(meta_pair("displayTimeUnit", r.display_time_unit));
  for (uint32_t id = 1; id < im.strings.size(); ++id) meta_string(id, im.strings[id]);
  for (Feedlet& f : im.feedlets) {
    uint8_t* p = meta.begin(kFeedletInfo, 0);
    p = ChunkBuilder::put_u64(p, f.id);
    p = ChunkBuilder::put_u64(p, uint64_t(f.tid));
    p = ChunkBuilder::put_u64(p, im.intern(f.name));
    meta.end(p);
  }
  for (auto [k, v] : metadata) {
    uint8_t* p = meta.begin(kMetadata, 0);
    p = ChunkBuilder::put_u64(p, k);
    p = ChunkBuilder::put_u64(p, v);
    meta.end(p);
  }
  flush(meta);

  for (Feedlet& f : im.feedlets) {
    std::vector<Point> events = nest(f, r.unmatched_ends);
    ChunkBuilder cb;
    cb.feedlet = f.id;
    uint8_t* p = cb.begin(kThreadName, events.empty() ? 0 : events.front().ts);
    p = ChunkBuilder::put_u64(p, im.intern(f.name));
    cb.end(p);
    ++r.events_written;
    for (const Point& e : events) {
      p = cb.begin(e.type, e.ts);
      switch (e.type) {
        case kIntervalComplete: p = ChunkBuilder::put_u64(p, e.name), p = ChunkBuilder::put_u64(p, e.a); break;
        case kCounterFloat: {
          double d;
          std::memcpy(&d, &e.a, 8);
          p = ChunkBuilder::put_u64(p, e.name), p = ChunkBuilder::put_f64(p, d);
          break;
        }
        case kMessageSend:
        case kMessageRecv:
          p = cb.put_delta(p, e.a), p = ChunkBuilder::put_u64(p, e.name), p = ChunkBuilder::put_u64(p, 0);
          p = ChunkBuilder::put_bytes(p, nullptr, 0);
          break;
        default: p = ChunkBuilder::put_u64(p, e.name); break;
      }
      cb.end(p);
      ++r.events_written;
      if (cb.full()) flush(cb);
    }
    flush(cb);
  }
  r.feedlets = im.feedlets.size();
  if (::fsync(fd) != 0 && ok) ok = false, error = out + ": " + std::strerror(errno);
  ::close(fd);
  return ok;
}

}  // namespace tinescope::index
