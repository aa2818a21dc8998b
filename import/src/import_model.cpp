// Collecting another tool's events per lane, and writing them as a trace.
#include "import_model.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include "tinescope/trace_writer.hpp"

namespace tinescope::import {

using namespace format;

namespace {

bool before(const Point& a, const Point& b) { return a.ts != b.ts ? a.ts < b.ts : a.seq < b.seq; }

// A lane's points in time order, after its intervals' events at a time.
void sort_points(Feedlet& f) {
  for (Point& p : f.points) p.seq += kAfterIntervals;
  if (!std::is_sorted(f.points.begin(), f.points.end(), before))  // (flows' ends come in by flow)
    std::sort(f.points.begin(), f.points.end(), before);
}

// The lane's points merged in time into its intervals' events (`out`, in
// order but for completes, with room for the points).
BulkArray<Point> merge_points(BulkArray<Point>& out, Feedlet& f) {
  sort_points(f);
  size_t i = out.size(), j = f.points.size();
  if (!std::is_sorted(out.begin(), out.end(), before)) {
    // Completes out of place: all sorted (in place: (ts, seq) is unique,
    // and a stable sort's buffer is memory the size of the lane).
    out.append(f.points.begin(), f.points.end());
    std::sort(out.begin(), out.end(), before);
    return std::move(out);
  }
  // Both in order: merged from the back, in place (out has room).
  out.resize_for_overwrite(i + j);
  for (size_t k = i + j; j > 0; --k) {
    if (i > 0 && before(f.points[j - 1], out[i - 1])) out[k - 1] = out[--i];
    else out[k - 1] = f.points[--j];
  }
  return std::move(out);
}

// Turns a feedlet's spans and begin/end pairs into properly nested begins and
// ends (parents before children), plus completes for intervals that overlap
// without nesting, merged in time with the feedlet's other events: each
// given to emit(const Point&) in order.
template <class Emit>
void nest(Feedlet& f, uint64_t& unmatched, Emit&& emit) {
  // Pair begins with ends in time order (file order breaks ties). Most
  // lanes come in time order already: then no sort.
  // (Sorted in place: a stable sort's buffer is memory the size of the lane.)
  BulkArray<BeginEnd> sorted;  // a lane that came out of order (the rest are read as they are packed)
  if (!f.be.in_order()) {
    sorted.reserve(f.be.size());
    f.be.each([&](const BeginEnd& x) { sorted.push_back(x); });
    f.be.release();
    std::sort(sorted.begin(), sorted.end(),
              [](const BeginEnd& a, const BeginEnd& b) { return a.ts != b.ts ? a.ts < b.ts : a.seq < b.seq; });
  }
  auto each_be = [&](auto&& take) {
    if (!sorted.empty()) {
      for (const BeginEnd& x : sorted) take(x);
    } else {
      f.be.each(take);
    }
  };
  if (f.spans.empty()) {
    // Begins and ends alone (most lanes of a trace made of them): paired in
    // this order they nest already; what never ends is outermost and stays
    // open. Given out as they are, merged with the points: no copy of the lane.
    sort_points(f);
    std::vector<uint32_t> open;  // the names of the intervals open
    uint64_t seq = 0;
    size_t j = 0;
    each_be([&](const BeginEnd& x) {
      while (j < f.points.size() && f.points[j].ts < x.ts) emit(f.points[j++]);  // (intervals first at a time)
      if (x.begin) {
        open.push_back(x.name);
        emit(Point{x.ts, seq++, kIntervalBegin, x.name, x.args, 0});
      } else if (open.empty()) {
        ++unmatched;
      } else {
        emit(Point{x.ts, seq++, kIntervalEnd, open.back(), x.args, 0});
        open.pop_back();
      }
    });
    while (j < f.points.size()) emit(f.points[j++]);
    return;
  }
  BulkArray<Point> out;
  std::vector<BeginEnd> open;
  each_be([&](const BeginEnd& x) {
    if (x.begin) {
      open.push_back(x);
    } else if (open.empty()) {
      ++unmatched;
    } else {
      f.spans.push_back(Span{open.back().ts, x.ts, open.back().name, open.back().seq, open.back().args, x.args});
      open.pop_back();
    }
  });
  for (const BeginEnd& b : open) f.spans.push_back(Span{b.ts, UINT64_MAX, b.name, b.seq, b.args});  // never ended
  std::sort(f.spans.begin(), f.spans.end(), [](const Span& a, const Span& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.end != b.end) return a.end > b.end;  // the longer one is the parent
    return a.seq < b.seq;
  });
  // Its size is known: a begin and an end a span at most.
  out.reserve(2 * f.spans.size() + f.points.size());
  uint64_t seq = 0;
  std::vector<const Span*> stack;
  std::vector<size_t> begun_at;  // each stacked span's begin, in out
  auto pop = [&] {
    const Span* s = stack.back();
    stack.pop_back(), begun_at.pop_back();
    if (s->end != UINT64_MAX) out.push_back(Point{s->end, seq++, kIntervalEnd, s->name, s->end_args, 0});
  };
  for (const Span& s : f.spans) {
    while (!stack.empty() && !(stack.back()->start <= s.start && s.end <= stack.back()->end)) {
      if (stack.back()->end > s.start) break;  // overlaps without nesting
      pop();
    }
    if (s.end == UINT64_MAX) {
      // Never ended, begun inside spans that end: it cannot be a complete
      // event (it has no end), so they become complete events and it stays
      // open (as a complete it would end at 2^64 ns).
      for (; !stack.empty() && stack.back()->end != UINT64_MAX; stack.pop_back(), begun_at.pop_back()) {
        const Span* t = stack.back();
        Point& begin = out[begun_at.back()];
        begin = Point{t->end, begin.seq, kIntervalComplete, t->name, t->args, t->end - t->start};
      }
    } else if (!stack.empty() && s.end > stack.back()->end) {
      out.push_back(Point{s.end, seq++, kIntervalComplete, s.name, s.args, s.end - s.start});
      continue;
    }
    out.push_back(Point{s.start, seq++, kIntervalBegin, s.name, s.args, 0});
    stack.push_back(&s), begun_at.push_back(out.size() - 1);
  }
  while (!stack.empty()) pop();
  for (const Point& p : merge_points(out, f)) emit(p);
}

}  // namespace

uint32_t ImportModel::intern(const std::string& s) {
  auto [it, fresh] = string_ids_.emplace(s, uint32_t(strings_.size()));
  if (fresh) strings_.push_back(s);
  return it->second;
}

// The codes argument types take: the user types' (docs/FORMAT.md). The
// first is `.args` with one text field, for the shapes past the others.
constexpr uint16_t kTextArgsType = format::kFirstUserType;

void RawEvent::reset() {
  for (std::string* s : {&ph, &name, &cat, &id, &scope, &arg_name, &id_scope, &arg_labels, &sf, &bind_id, &not_a_number})
    s->clear();
  flow_in = flow_out = bind_enclosing = local_id = false;
  has_pid = has_tid = has_ts = has_dur = has_sort = has_tts = has_tdur = false;
  pid = tid = sort_index = 0;
  ts = dur = tts = tdur = 0;
  num_args.clear();
  arg_count = 0;
}

uint32_t ImportModel::keep_args(const RawEvent& e) {
  if (e.cat.empty() && e.arg_count == 0 && !e.has_tts && !e.has_tdur) return 0;
  // The fields: cat, thread time, then the arguments as they came; those
  // past the 16th go into its field "more" as text.
  shape_.clear();
  body_.clear();
  auto varint = [&](uint64_t v) {
    const size_t at = body_.size();
    body_.resize(at + format::kMaxVarint);
    body_.resize(size_t(format::put_varint(body_.data() + at, v) - body_.data()));
  };
  auto text = [&](std::string_view t) {
    varint(t.size());
    const size_t at = body_.size();
    body_.resize(at + t.size());
    if (!t.empty()) std::memcpy(body_.data() + at, t.data(), t.size());
  };
  auto field = [&](char type, std::string_view key) {
    shape_ += type;
    const size_t at = shape_.size();
    shape_.append(key);
    std::replace(shape_.begin() + long(at), shape_.end(), '\0', '?');  // (a NUL ends a key in the shape: "\u0000" in JSON)
    shape_ += '\0';
  };
  size_t fields = 0;
  if (!e.cat.empty()) {
    if (e.cat != last_cat_) last_cat_ = e.cat, last_cat_id_ = intern(e.cat);  // (most events repeat the last one's)
    field('s', "cat"), varint(last_cat_id_), ++fields;
  }
  auto micros_as_ns = [&](const char* key, double us) {
    field('u', key), varint(us > 0 && us < kMaxUs ? ticks(us) : 0), ++fields;
  };
  if (e.has_tts) micros_as_ns("tts_ns", e.tts);
  if (e.has_tdur) micros_as_ns("tdur_ns", e.tdur);
  std::string more;
  for (size_t k = 0; k < e.arg_count; ++k) {
    const Arg& a = e.args[k];
    if (fields == format::kMaxFields - 1 && k + 1 < e.arg_count) {
      for (; k < e.arg_count; ++k) {
        const Arg& x = e.args[k];
        more += (more.empty() ? "" : "; ") + x.key + "=" +
                (x.type == 'i' ? std::to_string(x.i) : x.type == 'f' ? std::to_string(x.f) : x.text);
        ++r.args_past_fields;
      }
      field('b', "more"), text(more);
      break;
    }
    field(a.type, a.key), ++fields;
    if (a.type == 'i') varint(format::zigzag(a.i));
    else if (a.type == 'f') {
      const size_t at = body_.size();
      body_.resize(at + 8);
      std::memcpy(body_.data() + at, &a.f, 8);
    } else text(a.text);
  }
  uint16_t type;
  auto known = shape_ == last_shape_ ? arg_types_.end() : arg_types_.find(shape_);
  if (shape_ == last_shape_) {
    type = last_type_;
  } else if (known != arg_types_.end()) {
    type = known->second;
  } else if (kTextArgsType + 1 + arg_defs_.size() <= format::kMaxEventType) {
    format::EventTypeDef def;
    def.code = type = uint16_t(kTextArgsType + 1 + arg_defs_.size());
    def.name = ".args";
    for (size_t at = 0; at < shape_.size();) {
      const size_t end = shape_.find('\0', at);
      def.fields.push_back({format::FieldType(shape_[at]), shape_.substr(at + 1, end - at - 1)});
      at = end + 1;
    }
    arg_defs_.push_back(std::move(def));
    arg_types_.emplace(shape_, type);
  } else {
    // No code left for its shape: its fields as one text, "key=value; ...".
    std::string all;
    const uint8_t* p = body_.data();
    const uint8_t* const end = body_.data() + body_.size();
    for (size_t at = 0; at < shape_.size() && p < end;) {
      const size_t stop = shape_.find('\0', at);
      const char t = shape_[at];
      all += (all.empty() ? "" : "; ") + shape_.substr(at + 1, stop - at - 1) + "=";
      uint64_t v = 0;
      if (t == 'f') {
        double d;
        std::memcpy(&d, p, 8), p += 8;
        all += std::to_string(d);
      } else {
        format::get_varint(p, end, v);
        if (t == 'b') all.append(reinterpret_cast<const char*>(p), v), p += v;
        else if (t == 'i') all += std::to_string(format::unzigzag(v));
        else if (t == 's') all += strings_[v];
        else all += std::to_string(v);
      }
      at = stop + 1;
    }
    body_.clear();
    text(all);
    type = kTextArgsType;
    ++r.args_as_text;
  }
  if (type != kTextArgsType) last_shape_ = shape_, last_type_ = type;
  ++r.events_with_args;
  // A category alone (with thread times at most), as most events have, is
  // kept once: events may share their argument event, written after each.
  std::string* repeated = nullptr;
  if (e.arg_count == 0 && body_.size() <= kSharedBody) {
    if (shared_.size() >= kMostShared) shared_.clear();
    repeated = &shared_key_;
    repeated->assign(reinterpret_cast<const char*>(&type), 2);
    repeated->append(reinterpret_cast<const char*>(body_.data()), body_.size());
    auto it = shared_.find(*repeated);
    if (it != shared_.end()) return it->second;
  }
  if (kept_.size() == UINT32_MAX) return 0;
  if (repeated) shared_.emplace(*repeated, uint32_t(kept_.size()));
  kept_.push_back(KeptArgs{args_bytes_.size(), uint32_t(body_.size()), type});
  args_bytes_.append(body_.data(), body_.data() + body_.size());
  return uint32_t(kept_.size() - 1);
}

void ImportModel::put_args(format::ChunkBuilder& cb, uint32_t id, uint64_t ts) {
  const KeptArgs& k = kept_[id];
  uint8_t* p = cb.begin(k.type, ts, k.size + format::kMaxVarint);
  cb.end(format::ChunkBuilder::put_bytes(p, args_bytes_.begin() + k.at, k.size));  // (a self-sized event: its length, its fields)
}

Feedlet& ImportModel::feedlet(int64_t pid, int64_t tid, const std::string& lane) {
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

void ImportModel::point(Feedlet& f, const RawEvent& e, uint16_t type, uint32_t name, uint64_t a) {
  f.points.push_back(Point{ticks(e.ts), seq_++, type, name, type == kCounterFloat ? 0 : keep_args(e), a});
}

void ImportModel::take(const RawEvent& e) {
  ++r.events_read;
  if (e.ph.size() != 1) {
    ++r.unsupported[e.ph.empty() ? "(no ph)" : e.ph];
    return;
  }
  const char ph = e.ph[0];
  if (ph == 'M') return metadata(e);
  if (!e.not_a_number.empty()) {
    ++r.unsupported[e.ph + " with " + e.not_a_number + " not a number"];
    return;
  }
  if (!e.has_ts) {
    ++r.unsupported[e.ph + " without ts"];
    return;
  }
  if (e.ts < 0) {  // ticks are unsigned
    ++r.unsupported[e.ph + " with negative ts"];
    return;
  }
  // Nanoseconds past 2^63, at its start or its end (NaN fails too): refused,
  // not wrapped into a trace of centuries.
  if (!(e.ts < kMaxUs) || !(e.dur < kMaxUs) || !(e.ts + (e.has_dur ? std::max(0.0, e.dur) : 0.0) < kMaxUs)) {
    ++r.unsupported[e.ph + " with ts or dur out of range"];
    return;
  }
  const uint32_t name = intern(e.name);
  switch (ph) {
    case 'B':
    case 'E': {
      Feedlet& f = feedlet(e.pid, e.tid, "");
      f.be.push_back(BeginEnd{ticks(e.ts), seq_++, ph == 'B', name, keep_args(e)});
      if (ph == 'B') bound_flow(e, f, name);
      return;
    }
    case 'X': {
      Feedlet& f = feedlet(e.pid, e.tid, "");
      uint64_t t = ticks(e.ts);
      f.spans.push_back(Span{t, t + (e.has_dur ? ticks(std::max(0.0, e.dur)) : 0), name, seq_++, keep_args(e)});
      bound_flow(e, f, name);
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
      // Async: paired by category and id across processes (by process too
      // for a process's own id), at the end (pair_async).
      const std::string id = e.cat + " " + e.id;
      const uint64_t scope = e.local_id ? uint64_t(e.pid) * 0x9e3779b97f4a7c15ull : 0;  // (a process's own id)
      const uint64_t key = checksum(id.data(), id.size()) ^ scope;
      const char kind = ph == 'b' || ph == 'S' ? 'b' : ph == 'e' || ph == 'F' ? 'e' : 'n';
      async_events.push_back(AsyncEvent{key, ticks(e.ts), seq_++, e.pid, name, kind, keep_args(e)});
      return;
    }
    case 'P': {
      // A sample: an instant on its thread, named by its leaf stack frame
      // when the file's "stackFrames" names it (read_chrome_json), else by its own name.
      Feedlet& f = feedlet(e.pid, e.tid, "");
      if (!e.sf.empty()) sample_frames.push_back(SampleFrame{f.id - 1, f.points.size(), e.sf});
      point(f, e, kInstant, name, 0);
      return;
    }
    case 'N':
    case 'O':
    case 'D': {
      // Objects: an id is unique within its process and scope (Catapult's
      // ObjectCollection); paired at the end (pair_objects).
      const std::string scoped = e.id_scope + "/" + e.id;
      const uint64_t key = checksum(scoped.data(), scoped.size()) ^ (uint64_t(e.pid) * 0x9e3779b97f4a7c15ull);
      object_events.push_back(ObjectEvent{key, ticks(e.ts), seq_++, e.pid, name, ph, keep_args(e)});
      return;
    }
    case 's':
    case 't':
    case 'f': {
      Feedlet& f = feedlet(e.pid, e.tid, "");
      // Keyed by (cat, id) as one text: XOR of their hashes made every flow
      // whose cat equals its id one key, and (a, b) the same as (b, a).
      const std::string key = e.cat + '\x1f' + e.id;
      flows.push_back(Flow{checksum(key.data(), key.size()), ticks(e.ts), seq_++, ph, ph == 'f' && !e.bind_enclosing,
                           f.id, name});
      return;
    }
    default: ++r.unsupported[e.ph];
  }
}

void ImportModel::bound_flow(const RawEvent& e, const Feedlet& f, uint32_t name) {
  if (!e.flow_in && !e.flow_out) return;
  // Apart from s/t/f's ids, which are (cat, id): a v2 flow's id is its own.
  const std::string id = "bind_id " + (e.bind_id.empty() ? e.id : e.bind_id);
  const char ph = e.flow_in && e.flow_out ? 't' : e.flow_in ? 'f' : 's';
  flows.push_back(Flow{checksum(id.data(), id.size()), ticks(e.ts), seq_++, ph, false, f.id, name});
}

void ImportModel::metadata(const RawEvent& e) {
  if (e.name == "process_name") {
    process_names[e.pid] = e.arg_name;
  } else if (e.name == "thread_name") {
    feedlet(e.pid, e.tid, "").name = e.arg_name;
  } else if (e.name == "process_labels") {
    process_labels[e.pid] = e.arg_labels;
  } else if (e.name == "num_cpus" && e.num_args.size() == 1) {
    const double n = e.num_args[0].second;
    num_cpus = n >= 0 && n < 1e9 && n == std::floor(n) ? std::to_string(int64_t(n)) : std::to_string(n);
  } else if (e.name == "process_sort_index" && e.has_sort) {
    process_sort[e.pid] = e.sort_index;
  } else if (e.name == "thread_sort_index" && e.has_sort) {
    thread_sort[{e.pid, e.tid}] = e.sort_index;
  } else {
    ++r.unsupported["M " + e.name];
  }
}

namespace {

// The lanes of one family of units, in order of their starts: each unit on
// the first lane free at its start (as many lanes as units run at once, as
// Perfetto packs async slices), at most kMostLanes; past that, on the lane
// that frees first, where nest() keeps the overlap.
class LanePacker {
 public:
  static constexpr size_t kMostLanes = 32;
  size_t place(uint64_t start, uint64_t end) {
    size_t at = busy_until_.size();
    for (size_t i = 0; i < busy_until_.size() && at == busy_until_.size(); ++i)
      if (busy_until_[i] <= start) at = i;
    if (at == busy_until_.size()) {
      if (busy_until_.size() < kMostLanes) busy_until_.push_back(0);
      else at = size_t(std::min_element(busy_until_.begin(), busy_until_.end()) - busy_until_.begin());
    }
    busy_until_[at] = std::max(busy_until_[at], end);
    return at;
  }

 private:
  std::vector<uint64_t> busy_until_;
};

}  // namespace

void ImportModel::place_units(std::vector<Unit>& units, const std::vector<Placed>& placed, const char* kind) {
  std::vector<uint32_t> order(units.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const Unit &x = units[a], &y = units[b];
    return std::tie(x.pid, x.family, x.start, a) < std::tie(y.pid, y.family, y.start, b);
  });
  LanePacker lanes;
  std::vector<uint32_t> feedlet_of_lane;  // the family's lanes: each looked up once, not once a unit
  for (size_t i = 0; i < order.size(); ++i) {
    Unit& u = units[order[i]];
    if (i > 0 && (units[order[i - 1]].pid != u.pid || units[order[i - 1]].family != u.family))
      lanes = LanePacker{}, feedlet_of_lane.clear();
    const size_t lane = lanes.place(u.start, u.end);
    if (lane == feedlet_of_lane.size()) {
      const std::string name =
          std::string(kind) + " " + strings_[u.family] + (lane ? " #" + std::to_string(lane + 1) : "");
      feedlet_of_lane.push_back(feedlet(u.pid, 0, name).id - 1);
    }
    u.feedlet = feedlet_of_lane[lane];
  }
  for (const Placed& x : placed) {
    Feedlet& f = feedlets[units[x.unit].feedlet];
    if (x.instant) f.points.push_back(Point{x.start, x.seq, kInstant, x.name, x.args, 0});
    else f.spans.push_back(Span{x.start, x.end, x.name, x.seq, x.args, x.end_args});
  }
}

void ImportModel::pair_async() {
  // Each key's events in time order (file order breaks ties). An end closes
  // the innermost open begin of its name (Catapult pairs S/F by name and id
  // across processes), and begins still open above it end with it, so that
  // the lane nests; an end with no open begin of its name is counted.
  // An episode of a key (from a begin on an empty stack until the stack is
  // empty again) is one unit a process: its intervals, and the steps and
  // instants made while it is open, go on one lane, named by the episode's
  // first begin (a step or instant outside any is a unit of its own).
  std::sort(async_events.begin(), async_events.end(), [](const AsyncEvent& a, const AsyncEvent& b) {
    return std::tie(a.key, a.ts, a.seq) < std::tie(b.key, b.ts, b.seq);
  });
  std::vector<Unit> units;
  std::vector<Placed> placed;
  std::vector<std::pair<const AsyncEvent*, uint32_t>> open;  // begin, its unit
  std::vector<std::pair<int64_t, uint32_t>> episode;         // the open episode's units: (pid, unit)
  uint32_t family = 0;
  auto unit_of = [&](int64_t pid) {
    for (auto [p, u] : episode)
      if (p == pid) return u;
    units.push_back(Unit{pid, family});
    episode.emplace_back(pid, uint32_t(units.size() - 1));
    return uint32_t(units.size() - 1);
  };
  auto add = [&](uint32_t u, uint64_t start, uint64_t end, uint64_t seq, uint32_t name, bool instant,
                 uint32_t args = 0, uint32_t end_args = 0) {
    placed.push_back(Placed{start, end, seq, name, u, instant, args, end_args});
    units[u].start = std::min(units[u].start, start), units[u].end = std::max(units[u].end, end);
  };
  auto close = [&](size_t k, uint64_t end, uint32_t end_args = 0) {
    const auto [b, u] = open[k];
    add(u, b->ts, end, b->seq, b->name, false, b->args, end_args);
  };
  for (size_t i = 0; i < async_events.size(); ++i) {
    const AsyncEvent& x = async_events[i];
    if (i > 0 && async_events[i - 1].key != x.key) {
      for (size_t k = 0; k < open.size(); ++k) close(k, UINT64_MAX);  // never ended
      open.clear();
    }
    if (open.empty()) episode.clear(), family = x.name;
    if (x.kind == 'b') {
      open.emplace_back(&x, unit_of(x.pid));
    } else if (x.kind == 'n') {
      add(open.empty() ? unit_of(x.pid) : open.back().second, x.ts, x.ts, x.seq, x.name, true, x.args);
    } else {
      size_t k = open.size();
      while (k > 0 && open[k - 1].first->name != x.name) --k;
      if (k == 0) {
        ++r.unmatched_ends;
        continue;
      }
      for (size_t j = open.size(); j-- > k - 1;) close(j, x.ts, j == k - 1 ? x.args : 0);
      open.resize(k - 1);
    }
  }
  for (size_t k = 0; k < open.size(); ++k) close(k, UINT64_MAX);
  async_events.release();
  place_units(units, placed, "async");
}

void ImportModel::pair_objects() {
  // Each object's events in time order (file order breaks ties). N starts a
  // lifetime and D ends it; an N while the object is alive ends the old one
  // there (ids are often addresses, reused after a deletion not traced). A
  // snapshot of an object not alive starts one (Catapult creates it
  // implicitly); a D of none is counted. A lifetime is a unit, named by its
  // type, with its snapshots as instants.
  std::sort(object_events.begin(), object_events.end(), [](const ObjectEvent& a, const ObjectEvent& b) {
    return std::tie(a.key, a.ts, a.seq) < std::tie(b.key, b.ts, b.seq);
  });
  std::vector<Unit> units;
  std::vector<Placed> placed;
  const ObjectEvent* alive = nullptr;
  auto begin = [&](const ObjectEvent& x) {
    alive = &x;
    units.push_back(Unit{x.pid, x.name, x.ts, x.ts});
  };
  // (A lifetime carries its N's arguments, or those of the snapshot that
  // began it, and its D's at its end.)
  auto end = [&](uint64_t at, uint32_t end_args = 0) {
    if (!alive) return;
    placed.push_back(
        Placed{alive->ts, at, alive->seq, alive->name, uint32_t(units.size() - 1), false, alive->args, end_args});
    units.back().end = std::max(units.back().end, at);
    alive = nullptr;
  };
  for (size_t i = 0; i < object_events.size(); ++i) {
    const ObjectEvent& x = object_events[i];
    if (i > 0 && object_events[i - 1].key != x.key) end(UINT64_MAX);  // never deleted
    if (x.kind == 'N') {
      end(x.ts);
      begin(x);
    } else if (x.kind == 'O') {
      if (!alive) begin(x);
      placed.push_back(Placed{x.ts, x.ts, x.seq, alive->name, uint32_t(units.size() - 1), true, x.args});
      units.back().end = std::max(units.back().end, x.ts);
    } else if (alive) {
      end(x.ts, x.args);
    } else {
      ++r.unmatched_ends;
    }
  }
  end(UINT64_MAX);
  object_events.release();
  place_units(units, placed, "objects");
}

bool ImportModel::write(const std::string& in, const std::string& out, const char* recorder, std::string& error) {
  pair_async();
  pair_objects();
  // Flows: per flow id in time order, each step ends one link and starts the next.
  std::stable_sort(flows.begin(), flows.end(), [](const Flow& a, const Flow& b) {
    return a.id_hash != b.id_hash ? a.id_hash < b.id_hash : a.ts < b.ts;
  });
  // A flow's end ('f') binds to the next slice that starts on its thread at
  // or after it, unless "bp" is "e" (the slice around it), as the Trace
  // Event Format says and Perfetto's importer binds it: the receive is
  // placed at that slice's start. (Starts and steps bind to the slice
  // around them: where they are.) With no slice after it, it stays. One
  // lane's slice starts at a time: a lane may hold millions.
  std::vector<size_t> ends;  // flows bound to their next slice, by lane
  for (size_t i = 0; i < flows.size(); ++i)
    if (flows[i].bind_next) ends.push_back(i);
  std::stable_sort(ends.begin(), ends.end(), [&](size_t a, size_t b) { return flows[a].feedlet < flows[b].feedlet; });
  std::vector<uint64_t> starts;
  for (size_t i = 0; i < ends.size();) {
    const Feedlet& f = feedlets[flows[ends[i]].feedlet - 1];
    starts.clear();
    for (const Span& s : f.spans) starts.push_back(s.start);
    f.be.each([&](const BeginEnd& b) {
      if (b.begin) starts.push_back(b.ts);
    });
    std::sort(starts.begin(), starts.end());
    for (; i < ends.size() && flows[ends[i]].feedlet == f.id; ++i) {
      Flow& x = flows[ends[i]];
      const auto next = std::lower_bound(starts.begin(), starts.end(), x.ts);
      if (next != starts.end()) x.ts = *next;
    }
  }
  std::vector<size_t>().swap(ends);
  std::vector<uint64_t>().swap(starts);
  // A step or an end receives the link its id has open; with none open (the
  // id's flow ended, or never began) it is an unmatched end, counted, not
  // an arrow from a send that was already received.
  uint64_t link = 1;
  bool open = false;
  std::set<uint32_t> channels;  // a message's channel is its flow's name (string id): named in the metadata
  for (size_t i = 0; i < flows.size(); ++i) {
    const Flow& x = flows[i];
    channels.insert(x.name);
    if (i == 0 || flows[i - 1].id_hash != x.id_hash) open = false;
    Feedlet& f = feedlets[x.feedlet - 1];
    if (x.ph != 's') {
      if (open) f.points.push_back(Point{x.ts, x.seq, kMessageRecv, x.name, 0, link});
      else ++r.unmatched_flow_ends;
    }
    open = x.ph != 'f';
    if (open) f.points.push_back(Point{x.ts, x.seq, kMessageSend, x.name, 0, ++link});
  }

  // Names of lanes.
  // A process's labels (process_labels) follow its name, as the trace viewer shows them.
  for (auto& [pid, labels] : process_labels) {
    if (labels.empty()) continue;
    std::string& name = process_names[pid];
    name = (name.empty() ? "pid " + std::to_string(pid) : name) + ": " + labels;
  }
  for (Feedlet& f : feedlets) {
    std::string process = process_names.count(f.pid) ? process_names[f.pid] : "pid " + std::to_string(f.pid);
    if (f.name.empty()) f.name = tid_names.count(f.tid) ? tid_names[f.tid] : "tid " + std::to_string(f.tid);
    else if (f.name == "process" || f.name == "counters" || f.name.rfind("async ", 0) == 0 ||
             f.name.rfind("objects ", 0) == 0)
      f.name = process + " " + f.name;
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
  // The trace's process: the first named one (not ftrace's CPU lanes), else the file.
  info.process_name = trace_process.empty() ? in : trace_process;
  for (auto& [pid, name] : process_names)
    if (pid != kCpuLanesPid && pid != kThreadStatesPid && trace_process.empty()) {
      info.process_name = name;
      break;
    }
  info.cmdline = {"tinescope", "import", in};
  info.recorder = recorder;
  std::string header = build_file_header(info);
  write(header.data(), header.size());

  // Ticks are nanoseconds of the JSON's own clock, as they were.
  std::vector<uint8_t> frame;  // (each writing thread has its own)
  std::mutex out_mutex;         // the file, `ok` and `error`
  ChunkBuilder meta;
  auto flush = [&](ChunkBuilder& cb, std::vector<uint8_t>& buf) {
    if (cb.empty()) return;
    cb.finish(0, buf);
    std::lock_guard lock(out_mutex);
    write(buf.data(), buf.size());
  };
  auto meta_string = [&](uint32_t id, const std::string& s) {
    uint8_t* p = meta.begin(kStringDef, 0, s.size());
    p = ChunkBuilder::put_u64(p, id);
    p = ChunkBuilder::put_bytes(p, s.data(), s.size());
    meta.end(p);
    if (meta.full()) flush(meta, frame);
  };
  auto meta_pair = [&](const std::string& k, const std::string& v) {
    uint32_t ki = intern(k), vi = intern(v);
    return std::make_pair(ki, vi);
  };
  std::vector<std::pair<uint32_t, uint32_t>> metadata;
  for (Feedlet& f : feedlets) {
    std::string n = "feedlet." + std::to_string(f.id);
    intern(f.name);
    metadata.push_back(meta_pair(n + ".pid", std::to_string(f.pid)));
    // Its process, named or not (the viewer's header), but for global instants.
    const bool global = f.pid == 0 && f.tid == 0 && f.name == "global";
    metadata.push_back(meta_pair(n + ".process", process_names.count(f.pid) ? process_names[f.pid]
                                                 : global                   ? ""
                                                                            : "pid " + std::to_string(f.pid)));
    if (thread_sort.count({f.pid, f.tid})) metadata.push_back(meta_pair(n + ".sort_index", std::to_string(thread_sort[{f.pid, f.tid}])));
  }
  for (auto& [pid, idx] : process_sort) metadata.push_back(meta_pair("process." + std::to_string(pid) + ".sort_index", std::to_string(idx)));
  if (!r.display_time_unit.empty()) metadata.push_back(meta_pair("displayTimeUnit", r.display_time_unit));
  if (!num_cpus.empty()) metadata.push_back(meta_pair("num_cpus", num_cpus));
  for (uint32_t c : channels)
    if (c) metadata.push_back(meta_pair("channel." + std::to_string(c), std::string(strings_[c])));
  for (uint32_t id = 1; id < strings_.size(); ++id) meta_string(id, strings_[id]);
  // The argument types, where any event has arguments.
  if (kept_.size() > 1) {
    format::EventTypeDef text{kTextArgsType, ".args", {{format::FieldType::Bytes, "text"}}};
    std::string entry;
    for (const format::EventTypeDef* d = &text; d; d = d == &text ? (arg_defs_.empty() ? nullptr : &arg_defs_[0])
                                                    : (d + 1 == arg_defs_.data() + arg_defs_.size() ? nullptr : d + 1)) {
      entry.clear();
      format::encode_schema_entry(*d, entry);
      uint8_t* p = meta.begin(kTypeDef, 0, entry.size());
      p = ChunkBuilder::put_u64(p, d->code);
      p = ChunkBuilder::put_bytes(p, entry.data(), entry.size());
      meta.end(p);
      if (meta.full()) flush(meta, frame);
    }
  }
  for (Feedlet& f : feedlets) {
    uint8_t* p = meta.begin(kFeedletInfo, 0);
    p = ChunkBuilder::put_u64(p, f.id);
    p = ChunkBuilder::put_u64(p, uint64_t(f.tid));
    p = ChunkBuilder::put_u64(p, intern(f.name));
    meta.end(p);
  }
  for (auto [k, v] : metadata) {
    uint8_t* p = meta.begin(kMetadata, 0);
    p = ChunkBuilder::put_u64(p, k);
    p = ChunkBuilder::put_u64(p, v);
    meta.end(p);
  }
  flush(meta, frame);

  // A lane's name goes at its first event. A lane with none (a thread named
  // by metadata that did nothing) is named at the trace's first event once
  // every lane is written: at 0, its name alone would start the trace there.
  std::vector<uint32_t> lane_names;
  for (const Feedlet& f : feedlets) lane_names.push_back(intern(f.name));
  auto name_lane = [&](ChunkBuilder& cb, const Feedlet& f, uint64_t ts) {
    cb.feedlet = f.id;
    uint8_t* p = cb.begin(kThreadName, ts);
    p = ChunkBuilder::put_u64(p, lane_names[f.id - 1]);
    cb.end(p);
  };
  // Lanes are independent: two threads nest, encode and compress them, the
  // largest first, each lane's chunks in its order (the file interleaves
  // lanes' chunks, as a recording does). What a lane counts is its thread's
  // until both are done.
  struct Tally {
    uint64_t unmatched = 0, written = 0, with_args = 0, first_event = UINT64_MAX;
    std::vector<uint8_t> frame;
  };
  std::vector<Feedlet*> order;
  for (Feedlet& f : feedlets) order.push_back(&f);
  auto events_of = [](const Feedlet* f) { return 2 * f->spans.size() + f->be.size() + f->points.size(); };
  std::stable_sort(order.begin(), order.end(), [&](const Feedlet* a, const Feedlet* b) { return events_of(a) > events_of(b); });
  std::vector<char> named(feedlets.size(), 0);
  std::atomic<size_t> next_lane{0};
  auto lanes = [&](Tally& t) {
    for (size_t i; (i = next_lane.fetch_add(1)) < order.size();) {
      Feedlet& f = *order[i];
      ChunkBuilder cb;
      bool has_events = false;
      nest(f, t.unmatched, [&](const Point& e) {
        if (!has_events) {
          t.first_event = std::min(t.first_event, e.ts);
          name_lane(cb, f, e.ts);
          ++t.written;
          has_events = true;
        }
        uint8_t* p = cb.begin(e.type, e.ts);
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
        ++t.written;
        if (e.args) put_args(cb, e.args, e.ts), ++t.with_args;
        if (cb.full()) flush(cb, t.frame);
      });
      f.spans.release(), f.be.release(), f.points.release();  // written: memory goes down lane by lane
      named[f.id - 1] = has_events;
      if (has_events) flush(cb, t.frame);
    }
  };
  Tally mine, its;
  std::exception_ptr failed;  // (under out_mutex) what one thread threw: the other stops, then it is thrown here
  auto lanes_or_stop = [&](Tally& t) {
    try {
      lanes(t);
    } catch (...) {
      std::lock_guard lock(out_mutex);
      if (!failed) failed = std::current_exception();
      next_lane = order.size();
    }
  };
  {
    // The second thread's arrays (a lane's nesting) spill as this one's do,
    // within the same budget of all arrays' memory: the import's memory
    // stays flat.
    const std::string spill_dir = SpillTo::directory();
    const size_t spill_budget = SpillTo::budget();
    std::thread second;
    if (std::thread::hardware_concurrency() > 1 && order.size() > 1) {
      try {
        second = std::thread([&] {
          SpillTo spill(spill_dir, spill_budget);
          lanes_or_stop(its);
        });
      } catch (const std::system_error&) {  // no thread to be had: this one writes every lane
      }
    }
    lanes_or_stop(mine);
    if (second.joinable()) second.join();
  }
  if (failed) {
    ::close(fd);
    std::rethrow_exception(failed);
  }
  const uint64_t first_event = std::min(mine.first_event, its.first_event);
  r.unmatched_ends += mine.unmatched + its.unmatched;
  r.events_written += mine.written + its.written;
  r.argument_events += mine.with_args + its.with_args;
  for (const Feedlet& f : feedlets) {
    if (named[f.id - 1]) continue;
    ChunkBuilder cb;
    name_lane(cb, f, first_event == UINT64_MAX ? 0 : first_event);
    ++r.events_written;
    flush(cb, frame);
  }
  r.feedlets = feedlets.size();
  if (::fsync(fd) != 0 && ok) ok = false, error = out + ": " + std::strerror(errno);
  ::close(fd);
  return ok;
}

}  // namespace tinescope::import
