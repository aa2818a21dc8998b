// `tinescope export`: a trace read once, front to back, and written as it is
// read (trace_export.hpp has the mapping, docs/IMPORT.md "Export" the why).
// Memory follows the lanes, not the events: per lane its open slices and
// the one event whose argument events may still follow.
#include "tinescope/import/trace_export.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "tinescope/format.hpp"
#include "tinescope/import/protowire.hpp"
#include "tinescope/trace_reader.hpp"

namespace tinescope::import {

std::optional<ExportFormat> export_format_of(const std::string& out) {
  auto ends = [&](std::string_view ext) {
    return out.size() > ext.size() && std::string_view(out).substr(out.size() - ext.size()) == ext;
  };
  if (ends(".pftrace") || ends(".perfetto-trace")) return ExportFormat::Perfetto;
  if (ends(".json")) return ExportFormat::Json;
  return std::nullopt;
}

namespace {

using namespace format;

// Lanes that are no thread (an import's counters, async and global lanes)
// get a tid of their own in JSON, apart from every real one.
constexpr uint64_t kLaneTidBase = 1'000'000'000;
// Perfetto track uuids: processes, lanes and counter tracks apart.
constexpr uint64_t kProcessUuid = 0x5000'0000'0000'0000ull, kLaneUuid = 0x4000'0000'0000'0000ull,
                   kCounterUuid = 0x6000'0000'0000'0000ull;
constexpr size_t kFlushAt = 1 << 20;  // output written a megabyte at a time

// What a lane's held-back event is (its argument events may follow it).
enum class Kind : uint8_t { None, Begin, End, Complete, Instant, CounterInt, CounterFloat, Send, Recv };

struct Pending {
  Kind kind = Kind::None;
  int64_t ns = 0, start_ns = 0;  // start_ns: a complete slice's (cut at the window)
  uint32_t name = 0;             // string id (a message, an event of another type: its name is in `text`)
  uint64_t value = 0;            // counter value bits, message id
  std::string text;              // a message's name, another type's name
  bool named_by_text = false;    // an instant of another type, named by it
  std::string cat;               // the 'cat' field of its arguments
  std::string args;              // the other fields, in the output's own encoding
};

struct Lane {
  uint32_t feedlet = 0;
  bool known = false, selected = true, described = false, entered = false;
  bool unnamed = false;  // JSON: a lane that is no thread, not yet named (named at its first event that is no counter)
  int64_t pid = 0;
  uint64_t tid = 0, uuid = 0;
  std::vector<uint32_t> open;  // names of the slices open, innermost last
  Pending pending;
  std::unordered_map<uint32_t, uint64_t> counter_tracks;  // counter name id -> track uuid (Perfetto)
};

void json_escape(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: out += "\\u00", out += hex[c >> 4], out += hex[c & 15];
    }
  }
  out.append(s.data() + run, s.size() - run);
}

void json_string(std::string& out, std::string_view s) {
  out += '"';
  json_escape(out, s);
  out += '"';
}

template <class T>
void put_number(std::string& out, T v) {
  char b[32];
  auto r = std::to_chars(b, b + sizeof b, v);
  out.append(b, r.ptr);
}

// Nanoseconds as microseconds with three decimals: the ns kept exactly.
void put_us(std::string& out, int64_t ns) {
  uint64_t m = ns < 0 ? uint64_t(0) - uint64_t(ns) : uint64_t(ns);
  if (ns < 0) out += '-';
  put_number(out, m / 1000);
  const unsigned r = unsigned(m % 1000);
  const char frac[4] = {'.', char('0' + r / 100), char('0' + r / 10 % 10), char('0' + r % 10)};
  out.append(frac, 4);
}

class Exporter : public trace::Visitor {
 public:
  Exporter(ExportFormat format, const ExportOptions& options, ExportResult& result, int fd)
      : format_(format), opt_(options), r_(result), fd_(fd), w_(buf_) {
    buf_.reserve(kFlushAt + (64 << 10));
    if (format_ == ExportFormat::Json) buf_ += "{\"traceEvents\":[";
  }
  // What the trace's metadata feedlet says in the end, read first: the
  // calibration at stop, channel names and thread names come after the
  // events they describe, and every event is converted with the same clock
  // a reader of the whole trace uses.
  const trace::Catalog* cat_ = nullptr;
  trace::Header header_;
  void on_damage(const trace::Damage&) override { ++r_.damaged_ranges; }

  void on_event(const trace::Event& e) override {
    if (e.feedlet == kMetadataFeedlet || !ok_) return;
    ++r_.events_read;
    const trace::Catalog& cat = *cat_;
    Lane& lane = lane_of(e.feedlet);
    if (!lane.selected) return;
    const EventTypeDef* def = cat.schema.find(e.type);
    if (def && is_argument_type(*def)) {
      if (lane.pending.kind != Kind::None) add_args(lane.pending, *def, e, cat);
      return;
    }
    flush_pending(lane);
    const int64_t ns = cat.clock.to_ns(e.ts);
    last_ns_ = std::max(last_ns_, ns);
    const bool begin = e.type == kIntervalBegin || e.type == kFuncEnter;
    const bool end = e.type == kIntervalEnd || e.type == kFuncExit || e.type == kFuncUnwind;
    int64_t start_ns = ns;  // a complete slice's start: it is written at its end
    if (e.type == kIntervalComplete) start_ns = cat.clock.to_ns(e.u[1] < e.ts ? e.ts - e.u[1] : 0);
    if (start_ns > opt_.to_ns) return;  // (what is open at --to stays open: cut there at the end)
    if (ns < opt_.from_ns) {  // before the window: only what is open at --from counts
      if (begin) lane.open.push_back(uint32_t(e.u[0]));
      else if (end && !lane.open.empty()) lane.open.pop_back();
      return;
    }
    enter(lane);
    Pending& p = lane.pending;
    p.ns = ns, p.name = uint32_t(e.u[0]);
    p.cat.clear(), p.args.clear(), p.named_by_text = false;
    if (begin) {
      lane.open.push_back(p.name);
      p.kind = Kind::Begin;
    } else if (end) {
      if (lane.open.empty()) {
        ++r_.unmatched_ends;
        return;
      }
      p.name = lane.open.back();  // (the begin's name: an end's own may be empty)
      lane.open.pop_back();
      p.kind = Kind::End;
    } else {
      switch (e.type) {
        case kIntervalComplete:
          p.start_ns = start_ns;
          if (p.start_ns < opt_.from_ns) p.start_ns = opt_.from_ns, ++r_.slices_cut;
          if (p.ns > opt_.to_ns) p.ns = opt_.to_ns, ++r_.slices_cut;
          p.kind = Kind::Complete;
          break;
        case kInstant: p.kind = Kind::Instant; break;
        case kCounterInt: p.kind = Kind::CounterInt, p.value = e.u[1]; break;
        case kCounterFloat: p.kind = Kind::CounterFloat, p.value = e.u[1]; break;
        case kMessageSend:
        case kMessageRecv:
          p.kind = e.type == kMessageSend ? Kind::Send : Kind::Recv;
          p.value = e.u[0];
          p.text = message_name(cat, e.u[1]);
          break;
        case kFeedletEnd:  // its thread ended after events were dropped: what it had open ends here, as readers cut it
          while (!lane.open.empty()) {
            Pending cut;
            cut.kind = Kind::End, cut.ns = ns, cut.name = lane.open.back();
            lane.open.pop_back();
            write_event(lane, cut);
          }
          break;
        case kThreadName:
        case kProcessName:
        case kCpuName:
        case kMetadata: break;  // (names are in the tracks and "M" events)
        default:
          // Any other type (scheduling, locks, a program's own): an instant
          // named by its type, with its own fields as the instant's.
          if (!def || e.type == kClockSyncSend || e.type == kClockSyncRecv || e.type == kPadding) {
            ++r_.not_exported[std::string(cat.type_name(e.type))];
            break;
          }
          p.kind = Kind::Instant, p.named_by_text = true, p.text = def->name;
          add_args(p, *def, e, cat);
      }
    }
  }

  // After the last event: what is held back is written, and slices open
  // at --to (with events past it) are cut there. False on a write error.
  bool finish(std::string& error) {
    for (auto& [id, lane] : lanes_) {
      if (!lane.selected) continue;
      flush_pending(lane);
      if (!lane.entered && !lane.open.empty() && opt_.from_ns != INT64_MIN && last_ns_ >= opt_.from_ns) enter(lane);
      if (lane.entered && opt_.to_ns != INT64_MAX && last_ns_ > opt_.to_ns)
        while (!lane.open.empty()) {
          Pending p;
          p.kind = Kind::End, p.ns = opt_.to_ns, p.name = lane.open.back();
          lane.open.pop_back();
          write_event(lane, p);
          ++r_.slices_cut;
        }
    }
    if (format_ == ExportFormat::Json) {
      buf_ += "\n]";
      auto unit = cat_->metadata.find("displayTimeUnit");
      if (unit != cat_->metadata.end()) buf_ += ",\"displayTimeUnit\":", json_string(buf_, unit->second);
      buf_ += "}\n";
    }
    flush();
    for (auto& [id, lane] : lanes_) r_.lanes += lane.described;
    if (!ok_) error = write_error_;
    return ok_;
  }

 private:
  ExportFormat format_;
  const ExportOptions& opt_;
  ExportResult& r_;
  int fd_;
  std::string buf_;
  protowire::Writer w_;
  bool ok_ = true;
  std::string write_error_;
  std::unordered_map<uint32_t, Lane> lanes_;
  Lane* last_lane_ = nullptr;  // (a chunk's events are all of one lane)
  std::unordered_map<int64_t, bool> processes_described_;
  int64_t last_ns_ = INT64_MIN;
  uint64_t counter_tracks_ = 0;
  bool first_json_ = true, first_packet_ = true;

  Lane& lane_of(uint32_t feedlet) {
    if (last_lane_ && last_lane_->feedlet == feedlet) return *last_lane_;
    Lane& l = lanes_[feedlet];
    if (!l.known) {
      l.known = true, l.feedlet = feedlet;
      l.selected = !opt_.feedlets || opt_.feedlets->count(feedlet);
    }
    return *(last_lane_ = &l);
  }

  // A message's name: its channel's (ts_channel_name); an import keeps a
  // flow's name as the channel, a string id.
  std::string message_name(const trace::Catalog& cat, uint64_t channel) const {
    std::string n = cat.channel_name(channel);
    if (!n.empty()) return n;
    if (header_.recorder.starts_with("tinescope import") && channel && channel < cat.strings.size())
      return std::string(cat.string(channel));
    return "channel " + std::to_string(channel);  // (an unnamed channel stays apart from the others)
  }

  // The lane's first event in the window: slices open at --from begin there.
  void enter(Lane& lane) {
    if (lane.entered) return;
    lane.entered = true;
    for (uint32_t name : lane.open) {
      Pending p;
      p.kind = Kind::Begin, p.ns = opt_.from_ns, p.name = name;
      write_event(lane, p);
      ++r_.slices_cut;
    }
  }

  void add_args(Pending& p, const EventTypeDef& def, const trace::Event& e, const trace::Catalog& cat) {
    for (size_t k = 0; k < def.fields.size() && k < e.field_count; ++k) {
      const FieldDef& f = def.fields[k];
      std::string_view text;
      const bool is_text = f.type == FieldType::String || f.type == FieldType::Bytes;
      if (is_text) text = f.type == FieldType::String ? cat.string(e.u[k]) : e.bytes[k];
      if (f.name == "cat" && is_text) {
        p.cat = text;
        continue;
      }
      if (format_ == ExportFormat::Json) {
        if (!p.args.empty()) p.args += ',';
        json_string(p.args, f.name);
        p.args += ':';
        switch (f.type) {
          case FieldType::U64:
          case FieldType::DeltaU64: put_number(p.args, e.u[k]); break;
          case FieldType::I64: put_number(p.args, e.i(k)); break;
          case FieldType::F64:
            if (std::isfinite(e.f(k))) put_number(p.args, e.f(k));
            else p.args += "null";
            break;
          default:
            // (An import keeps JSON's true and false as those words.)
            if (text == "true" || text == "false") p.args += text;
            else json_string(p.args, text);
        }
      } else {
        protowire::Writer w(p.args);
        const size_t m = w.begin(4);  // TrackEvent.debug_annotations
        w.bytes(10, f.name);
        switch (f.type) {
          case FieldType::U64:
          case FieldType::DeltaU64: w.u64(3, e.u[k]); break;
          case FieldType::I64: w.i64(4, e.i(k)); break;
          case FieldType::F64: w.f64(5, e.f(k)); break;
          default:
            if (text == "true" || text == "false") w.u64(2, text == "true");
            else w.bytes(6, text);
        }
        w.end(m);
      }
    }
  }

  void flush_pending(Lane& lane) {
    if (lane.pending.kind == Kind::None) return;
    write_event(lane, lane.pending);
    lane.pending.kind = Kind::None;
  }

  void flush() {
    if (!ok_ || buf_.empty()) return;
    const char* p = buf_.data();
    size_t n = buf_.size();
    while (n) {
      const ssize_t k = ::write(fd_, p, n);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        ok_ = false, write_error_ = std::strerror(k < 0 ? errno : ENOSPC);
        break;
      }
      p += k, n -= size_t(k);
    }
    r_.bytes_written += buf_.size() - n;
    buf_.clear();
  }

  // A TracePacket of sequence 1; the first one says the sequence starts
  // clean (SEQ_INCREMENTAL_STATE_CLEARED), as Perfetto's own writers do,
  // though nothing is interned: a reader then trusts every packet after it.
  size_t packet_begin() {
    const size_t pk = w_.begin(1);
    w_.u64(10, 1);
    if (first_packet_) w_.u64(13, 1), first_packet_ = false;
    return pk;
  }

  // ---------------------------------------------------------------- lanes

  void describe(Lane& lane) {
    lane.described = true;
    const trace::Catalog& cat = *cat_;
    auto pid = cat.metadata.find("feedlet." + std::to_string(lane.feedlet) + ".pid");
    lane.pid = header_.pid;
    if (pid != cat.metadata.end()) std::from_chars(pid->second.data(), pid->second.data() + pid->second.size(), lane.pid);
    auto info = cat.feedlets.find(lane.feedlet);
    lane.tid = info != cat.feedlets.end() ? info->second.tid : 0;
    std::string process = cat.process_of(lane.feedlet);
    if (process.empty() && lane.pid == int64_t(header_.pid)) process = header_.process_name;
    const std::string_view thread = cat.thread_name(lane.feedlet);
    const bool new_process = !processes_described_[lane.pid];
    processes_described_[lane.pid] = true;
    if (format_ == ExportFormat::Json) {
      if (new_process && !process.empty()) json_meta(lane, "process_name", process);
      // A lane that is no thread gets a tid of its own; a lane of counters
      // alone needs no name (JSON's counters belong to the process).
      if (lane.tid == 0) lane.tid = kLaneTidBase + lane.feedlet, lane.unnamed = true;
      else json_meta(lane, "thread_name", thread);
      return;
    }
    lane.uuid = kLaneUuid | lane.feedlet;
    const uint64_t process_uuid = kProcessUuid | uint32_t(lane.pid);
    if (new_process) {
      const size_t pk = packet_begin();
      const size_t td = w_.begin(60);
      w_.u64(1, process_uuid);
      const size_t pd = w_.begin(3);
      w_.i64(1, lane.pid);
      if (!process.empty()) w_.bytes(6, process);
      w_.end(pd);
      w_.end(td);
      w_.end(pk);
    }
    const size_t pk = packet_begin();
    const size_t td = w_.begin(60);
    w_.u64(1, lane.uuid);
    if (lane.tid != 0) {
      const size_t t = w_.begin(4);
      w_.i64(1, lane.pid), w_.i64(2, int64_t(lane.tid)), w_.bytes(5, thread);
      w_.end(t);
    } else {
      w_.u64(5, process_uuid);
      w_.bytes(2, thread);
    }
    w_.end(td);
    w_.end(pk);
  }

  void json_meta(const Lane& lane, const char* what, std::string_view name) {
    buf_ += first_json_ ? "\n" : ",\n";
    first_json_ = false;
    buf_ += "{\"ph\":\"M\",\"name\":\"";
    buf_ += what;
    buf_ += "\",\"pid\":";
    put_number(buf_, lane.pid);
    buf_ += ",\"tid\":";
    put_number(buf_, lane.tid);
    buf_ += ",\"args\":{\"name\":";
    json_string(buf_, name);
    buf_ += "}}";
  }

  uint64_t counter_track(Lane& lane, uint32_t name) {
    auto [it, added] = lane.counter_tracks.try_emplace(name, 0);
    if (!added) return it->second;
    it->second = kCounterUuid | ++counter_tracks_;
    const size_t pk = packet_begin();
    const size_t td = w_.begin(60);
    w_.u64(1, it->second);
    w_.u64(5, lane.uuid);
    w_.bytes(2, cat_->string(name));
    w_.end(w_.begin(8));  // CounterDescriptor: a counter track
    w_.end(td);
    w_.end(pk);
    return it->second;
  }

  // ---------------------------------------------------------------- events

  void write_event(Lane& lane, const Pending& p) {
    if (!lane.described) describe(lane);
    if (format_ == ExportFormat::Json) json_event(lane, p);
    else perfetto_event(lane, p);
    ++r_.events_written;
    if (buf_.size() >= kFlushAt) flush();
  }

  void json_event(Lane& lane, const Pending& p) {
    const trace::Catalog& cat = *cat_;
    if (lane.unnamed && p.kind != Kind::CounterInt && p.kind != Kind::CounterFloat) {
      json_meta(lane, "thread_name", cat.thread_name(lane.feedlet));
      lane.unnamed = false;
    }
    buf_ += first_json_ ? "\n{\"ph\":\"" : ",\n{\"ph\":\"";
    first_json_ = false;
    bool args = !p.args.empty();
    switch (p.kind) {
      case Kind::Begin: buf_ += 'B'; break;
      case Kind::End: buf_ += 'E'; break;
      case Kind::Complete: buf_ += 'X'; break;
      case Kind::Instant: buf_ += 'i'; break;
      case Kind::CounterInt:
      case Kind::CounterFloat: buf_ += 'C', args = true; break;
      case Kind::Send: buf_ += 's'; break;
      case Kind::Recv: buf_ += 'f'; break;
      case Kind::None: break;
    }
    buf_ += "\",\"name\":";
    json_string(buf_, p.kind == Kind::Send || p.kind == Kind::Recv || p.named_by_text ? std::string_view(p.text)
                                                                                       : cat.string(p.name));
    if (!p.cat.empty()) buf_ += ",\"cat\":", json_string(buf_, p.cat);
    buf_ += ",\"pid\":";
    put_number(buf_, lane.pid);
    buf_ += ",\"tid\":";
    put_number(buf_, lane.tid);
    buf_ += ",\"ts\":";
    put_us(buf_, p.kind == Kind::Complete ? p.start_ns : p.ns);
    if (p.kind == Kind::Complete) buf_ += ",\"dur\":", put_us(buf_, p.ns - p.start_ns);
    if (p.kind == Kind::Instant) buf_ += ",\"s\":\"t\"";
    if (p.kind == Kind::Send || p.kind == Kind::Recv) {
      char id[24];
      auto r = std::to_chars(id, id + sizeof id, p.value, 16);
      buf_ += ",\"id\":\"0x", buf_.append(id, r.ptr), buf_ += '"';
      if (p.kind == Kind::Recv) buf_ += ",\"bp\":\"e\"";
    }
    if (args) {
      buf_ += ",\"args\":{";
      if (p.kind == Kind::CounterInt) buf_ += "\"value\":", put_number(buf_, int64_t(p.value));
      else if (p.kind == Kind::CounterFloat) {
        double d;
        std::memcpy(&d, &p.value, 8);
        buf_ += "\"value\":";
        if (std::isfinite(d)) put_number(buf_, d);
        else buf_ += "null";
      } else buf_ += p.args;  // (a counter's argument events would be more counters in JSON: left out)
      buf_ += '}';
    }
    buf_ += '}';
  }

  void perfetto_event(Lane& lane, const Pending& p) {
    const trace::Catalog& cat = *cat_;
    const uint64_t track = p.kind == Kind::CounterInt || p.kind == Kind::CounterFloat ? counter_track(lane, p.name) : lane.uuid;
    auto packet = [&](int64_t ns, uint64_t type) {
      const size_t pk = packet_begin();
      w_.u64(8, uint64_t(std::max<int64_t>(ns, 0)));
      const size_t te = w_.begin(11);
      w_.u64(9, type);
      w_.u64(11, track);
      return std::make_pair(pk, te);
    };
    auto named = [&](std::string_view name) {
      w_.bytes(23, name);
      for (size_t at = 0; at < p.cat.size();) {  // "a,b": one category each, as Chrome's importer splits them
        size_t comma = std::min(p.cat.find(',', at), p.cat.size());
        if (comma > at) w_.bytes(22, std::string_view(p.cat).substr(at, comma - at));
        at = comma + 1;
      }
      buf_ += p.args;
    };
    auto done = [&](std::pair<size_t, size_t> m) { w_.end(m.second), w_.end(m.first); };
    switch (p.kind) {
      case Kind::Begin: {
        auto m = packet(p.ns, 1);
        named(cat.string(p.name));
        done(m);
        break;
      }
      case Kind::End: {
        auto m = packet(p.ns, 2);
        buf_ += p.args;
        done(m);
        break;
      }
      case Kind::Complete: {
        auto m = packet(p.start_ns, 1);
        named(cat.string(p.name));
        done(m);
        done(packet(p.ns, 2));
        break;
      }
      case Kind::Instant: {
        auto m = packet(p.ns, 3);
        named(p.named_by_text ? std::string_view(p.text) : cat.string(p.name));
        done(m);
        break;
      }
      case Kind::CounterInt:
      case Kind::CounterFloat: {
        auto m = packet(p.ns, 4);
        if (p.kind == Kind::CounterInt) w_.i64(30, int64_t(p.value));
        else w_.fixed64(44, p.value);  // (a double's bits, as fixed64 writes them)
        done(m);
        break;
      }
      case Kind::Send:
      case Kind::Recv: {
        // An instant at the send (receive) that carries the flow: the slice
        // around it may end before the other side's does. Its category says
        // so: tinescope's importer takes it back as the message alone.
        auto m = packet(p.ns, 3);
        named(p.text);
        w_.bytes(22, kMessageCategory);
        w_.fixed64(p.kind == Kind::Send ? 47 : 48, p.value + 1);  // (+1: flow id 0 means none)
        done(m);
        break;
      }
      case Kind::None: break;
    }
  }
};

}  // namespace

bool export_trace(const std::string& trace, const std::string& out, const ExportOptions& options, ExportResult& result,
                  std::string& error) {
  result = ExportResult{};
  const std::optional<ExportFormat> format = export_format_of(out);
  if (!format) {
    error = out + ": unknown output format: name it .pftrace or .perfetto-trace (Perfetto) or .json (Chrome JSON)";
    return false;
  }
  if (options.from_ns > options.to_ns) {
    error = "the window's end comes before its start";
    return false;
  }
  const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = errno == EEXIST ? out + " exists already: tinescope never writes over a file (remove it, or name another)"
                            : out + ": " + std::strerror(errno);
    return false;
  }
  // Two passes: the metadata chunks alone (a small part of a trace), then
  // every chunk, written as it is read.
  trace::Visitor names;
  trace::Parser meta(names, trace::ReaderOptions{.decode_data = false});
  std::string why;
  bool ok = trace::read_file(trace, meta, why);
  if (ok && !meta.error().empty()) ok = false, why = trace + ": " + meta.error();
  if (ok && !meta.found_trace()) ok = false, why = trace + ": not a tinescope trace";
  Exporter exporter(*format, options, result, fd);
  exporter.cat_ = &meta.catalog();
  exporter.header_ = meta.header();
  trace::Parser parser(exporter);
  if (ok) ok = trace::read_file(trace, parser, why);
  if (ok && !parser.error().empty()) ok = false, why = trace + ": " + parser.error();
  if (ok && !exporter.finish(why)) ok = false, why = out + ": " + why;
  if (ok && ::fsync(fd) != 0) ok = false, why = out + ": " + std::strerror(errno);
  ::close(fd);
  if (!ok) {
    ::unlink(out.c_str());  // (ours: created above, O_EXCL)
    error = why;
  }
  return ok;
}

}  // namespace tinescope::import
