// Stream evaluation: base cursors that decode the trace window by window,
// and the operators' cursors over them (derived_stream.cpp stores the result).
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <tuple>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "tinescope/analysis/derived_stream.hpp"
#include "tinescope/analysis/jobs.hpp"
#include "tinescope/analysis/message_report.hpp"

namespace tinescope::analysis {

using index::Buckets;
using index::Item;
using index::Node;
using index::StreamInfo;
using index::StreamKind;
using index::TraceIndex;

namespace {

double ticks_per_ns(const TraceIndex& ix) { return ix.catalog_snapshot()->clock.ticks_per_ns(); }

StreamKind base_kind(Op op) {
  return op == Op::Samples || op == Op::Field ? StreamKind::Counter : op == Op::Instants ? StreamKind::Instant : StreamKind::Interval;
}

// Durations an interval must have to pass: [lo, hi] in ticks, inclusive.
// longer(x, D) and shorter(x, D) over a base stream are applied while its
// chunks are decoded, on every core, and let the pyramid skip whole windows.
struct Durations {
  uint64_t lo = 0, hi = UINT64_MAX;
  bool holds(uint64_t d) const { return d >= lo && d <= hi; }
  bool empty() const { return lo > hi; }
  Durations longer(uint64_t t) const { return {std::max(lo, t == UINT64_MAX ? t : t + 1), t == UINT64_MAX ? 0 : hi}; }
  Durations shorter(uint64_t t) const { return {t == 0 ? UINT64_MAX : lo, t == 0 ? 0 : std::min(hi, t - 1)}; }
};

// The order of a stream: by key, then by feedlet; within a feedlet, as it came.
bool by_key(const Record& a, const Record& b) { return a.end != b.end ? a.end < b.end : a.feedlet < b.feedlet; }

// ---------------------------------------------------------------- base streams

// Decodes the selected streams of a trace in windows of about a million
// events, each window's feedlets on every core, the next window while the
// caller reads this one; merges the feedlets' records into key order.
class BaseCursor : public Cursor {
 public:
  BaseCursor(const TraceIndex& ix, const Expr& e, const EvalOptions& opt, Durations keep)
      : ix_(ix), filter_(e.filter), kind_(base_kind(e.op)), keep_(keep) {
    threads_ = opt.threads ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
    if (e.op == Op::Field) select_fields();
    if (!filter_.where.empty()) catalog_ = ix.catalog_snapshot();  // (read by every decoding thread: set before them)
    auto streams = e.op == Op::Field ? std::vector<StreamInfo>{} : ix.streams();
    for (int id : select_streams(ix, e)) {
      const StreamInfo& s = streams[size_t(id)];
      auto it = std::find_if(lanes_.begin(), lanes_.end(), [&](const Lane& l) { return l.feedlet == s.feedlet; });
      if (it == lanes_.end()) {
        lanes_.push_back(Lane{s.feedlet, {}, {}, {}});
        it = lanes_.end() - 1;
      }
      it->streams.push_back(id);
      it->leaf_shifts.push_back(s.leaf_shift);
      if (it->names.size() <= s.key) it->names.resize(s.key + 1);
      it->names[s.key] = 1;
      // The longest item, from the top of the pyramid.
      uint32_t top = s.leaf_shift + std::max(s.levels, 1u) - 1;
      for (const Node& n : ix.query_shift(id, ix.first_ts(), ix.last_ts(), top).nodes)
        if (kind_ != StreamKind::Counter) max_dur_ = std::max(max_dur_, n.iv.max_dur);
    }
    if (keep_.empty()) return;  // nothing can pass
    max_dur_ = std::min(max_dur_, keep_.hi);
    std::sort(lanes_.begin(), lanes_.end(), [](const Lane& x, const Lane& y) { return x.feedlet < y.feedlet; });
    lo_ = std::max(opt.t0, ix.first_ts());
    hi_ = std::min(opt.t1, ix.last_ts());
    if (lanes_.empty() || lo_ > hi_) return;  // nothing to read
    done_ = false;
    // Windows of about kWindowEvents events of the lanes read (a chunk
    // across a window's edge is decoded twice: windows of many chunks).
    uint64_t events = 0;
    for (const Lane& l : lanes_)
      events += ix.feedlet_position_at(l.feedlet, hi_ == UINT64_MAX ? hi_ : hi_ + 1) - ix.feedlet_position_at(l.feedlet, lo_);
    const uint64_t windows = std::max<uint64_t>(1, events / kWindowEvents);
    window_ = std::max<uint64_t>(1, (hi_ - lo_) / windows + 1);
    next_window_ = lo_;
    prefetch();
  }
  ~BaseCursor() override {
    for (auto& p : pending_)
      if (p.valid()) p.wait();
  }

  bool next(Record& r) override { return next_batch(std::span<Record>(&r, 1)) == 1; }
  // The window's lanes merged straight into `out` (a stored stream's write
  // buffer): merged into a buffer of their own first, every record was
  // written once more and copied once more.
  size_t next_batch(std::span<Record> out) override {
    if (!refill()) return 0;
    size_t n = 0;
    if (heap_.empty()) {  // one lane left: its records as they are
      std::vector<Record>& v = window_lanes_[only_];
      n = std::min(out.size(), v.size() - pos_[only_]);
      std::memcpy(out.data(), v.data() + pos_[only_], n * sizeof(Record));
      pos_[only_] += n, left_ -= n;
      return n;
    }
    // The lanes' next keys in a heap, inline; lanes are in feedlet order,
    // so ties go by feedlet, as by_key says.
    while (n < out.size() && !heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      Head& h = heap_.back();
      const std::vector<Record>& v = window_lanes_[h.second];
      out[n++] = v[pos_[h.second]];
      if (++pos_[h.second] < v.size()) {
        h.first = v[pos_[h.second]].end;
        std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
      } else {
        heap_.pop_back();
      }
    }
    left_ -= n;
    if (heap_.size() == 1) only_ = heap_[0].second, heap_.clear();
    return n;
  }
  uint64_t max_duration() const override { return max_dur_; }
  uint64_t events_read() const override { return events_read_.load(); }
  std::string error() const override {
    std::lock_guard lock(error_mu_);
    return error_;
  }

 private:
  static constexpr uint64_t kWindowEvents = 4 << 20;
  struct Lane {
    uint32_t feedlet;
    std::vector<int> streams;
    std::vector<uint32_t> leaf_shifts;
    std::vector<uint8_t> names;  // [string id] = selected
  };

  // field(): which field of each event type gives the samples. A user type
  // of the stream's name gives its own field; an argument type gives its
  // field where the event it follows has the stream's name.
  struct FieldPick {
    int8_t field = -1;  // -1: no sample from this type
    bool argument = false;
    bool named = false;  // its first field is its name (a string): what argument events after it carry on
    format::FieldType type{};
  };
  std::vector<FieldPick> picks_;  // [type code]
  std::shared_ptr<const trace::Catalog> catalog_;

  void select_fields() {
    field_ = true;
    catalog_ = ix_.catalog_snapshot();
    picks_.assign(format::kMaxEventType + 1, FieldPick{});
    for (uint32_t code = 0; code < format::kFirstUserType; ++code) {
      const format::EventTypeDef* d = catalog_->schema.find(uint16_t(code));
      picks_[code].named = d && !d->fields.empty() && d->fields[0].type == format::FieldType::String;
    }
    NameMatcher name(filter_.name), field(filter_.field), thread(filter_.thread), process(filter_.process);
    for (uint32_t code = format::kFirstUserType; code <= format::kMaxEventType; ++code) {
      const format::EventTypeDef* d = catalog_->schema.find(uint16_t(code));
      if (!d) continue;
      const bool argument = format::is_argument_type(*d);
      if (!argument && !name.matches(d->name)) continue;
      for (size_t k = 0; k < d->fields.size(); ++k) {
        const format::FieldType t = d->fields[k].type;
        const bool numeric = t == format::FieldType::U64 || t == format::FieldType::I64 ||
                             t == format::FieldType::F64 || t == format::FieldType::DeltaU64;
        if (numeric && field.matches(d->fields[k].name)) {
          picks_[code] = FieldPick{int8_t(k), argument, false, t};
          break;
        }
      }
    }
    auto labels = catalog_->thread_labels();
    for (const index::FeedletSummary& f : ix_.feedlets()) {
      if (!thread.any() && !thread.matches(f.name)) continue;
      if (!process.any() && !process.matches(catalog_->process_of(f.id))) continue;
      lanes_.push_back(Lane{f.id, {}, {}, {}});
    }
  }

  // where=: keeps the records of lane l (intervals or instants of the
  // window) whose begin, end, complete or instant event passes the tests
  // (every test on one event), its fields and arguments read from the
  // chunks from the earliest start on.
  void apply_where(const Lane& l, uint64_t w1, std::vector<Record>& out) {
    if (out.empty()) return;
    const trace::Catalog& c = *catalog_;
    uint64_t lo = UINT64_MAX;
    for (const Record& r : out) lo = std::min(lo, r.start);
    using Key = std::tuple<uint64_t, uint32_t, bool>;  // (time, name, complete: keyed by its end)
    std::vector<Key> passed;
    const size_t n = filter_.where.size();
    std::vector<int8_t> result(n, 0);
    bool pending = false;
    Key key{};
    std::vector<Key> open;  // the begins not yet ended, innermost last
    auto test_field = [&](const format::FieldDef& d, const trace::Event& e, size_t k) {
      for (size_t t = 0; t < n; ++t) {
        const FieldTest& ft = filter_.where[t];
        if (ft.field != d.name) continue;
        double num = 0;
        std::string text;
        bool numeric = true;
        switch (d.type) {
          case format::FieldType::F64: num = e.f(k); break;
          case format::FieldType::I64: num = double(e.i(k)); break;
          case format::FieldType::String: numeric = false, text = c.string(e.u[k]); break;
          case format::FieldType::Bytes: numeric = false, text = e.bytes[k]; break;
          default: num = double(e.u[k]);
        }
        if (ft.number) {
          char* end = nullptr;
          if (!numeric) num = std::strtod(text.c_str(), &end), numeric = end && end != text.c_str() && *end == 0;
          result[t] = numeric && ft.test.passes(num);
        } else {
          if (numeric) {
            char buf[40];
            std::snprintf(buf, sizeof buf, "%.17g", num);
            text = buf;
          }
          const bool eq = NameMatcher(ft.text).matches(text);
          result[t] = ft.test.cmp == ValueTest::Eq ? eq : !eq;
        }
      }
    };
    auto finish = [&] {
      if (pending && std::all_of(result.begin(), result.end(), [](int8_t r) { return r == 1; })) passed.push_back(key);
      pending = false;
    };
    std::string why;
    ix_.decode_events(l.feedlet, lo, w1, [&](const trace::Event& e) {
      const format::EventTypeDef* d = c.schema.find(e.type);
      if (!d) return;
      const bool argument = format::is_argument_type(*d);
      if (!argument) {
        finish();
        const bool begin = e.type == format::kIntervalBegin || e.type == format::kFuncEnter || e.type == format::kInstant;
        if (e.type == format::kIntervalBegin) open.push_back(Key{e.ts, uint32_t(e.u[0]), false});
        if (e.type == format::kIntervalEnd && kind_ == StreamKind::Interval) {
          // An end's fields (ftrace's prev_state, Grasp's ended) test the
          // interval it closes, keyed as its begin is (an end before the
          // first begin read closes none of the window's).
          if (open.empty()) return;
          pending = true, key = open.back();
          open.pop_back();
        } else {
          if (!begin && e.type != format::kIntervalComplete) return;
          pending = true, key = Key{e.ts, uint32_t(e.u[0]), !begin};
        }
        std::fill(result.begin(), result.end(), 0);
      }
      if (!pending) return;
      for (size_t k = 0; k < d->fields.size() && k < e.field_count; ++k) test_field(d->fields[k], e, k);
    }, why);
    finish();
    if (!why.empty()) {
      std::lock_guard lock(error_mu_);
      error_ = why;
    }
    std::sort(passed.begin(), passed.end());
    auto has = [&](const Key& k) { return std::binary_search(passed.begin(), passed.end(), k); };
    std::erase_if(out, [&](const Record& r) {
      return !has(Key{r.start, r.name, false}) && !(kind_ == StreamKind::Interval && has(Key{r.end, r.name, true}));
    });
  }

  // The samples of lane l's fields in [w0, w1], from its chunks.
  uint64_t decode_fields(const Lane& l, uint64_t w0, uint64_t w1, std::vector<Record>& out) {
    std::vector<int8_t> named(catalog_->strings.size(), -1);  // [string id]: matches the stream's name
    NameMatcher name(filter_.name);
    uint64_t seen = 0;
    uint32_t last_name = 0;  // of the last event not an argument event (0: none, or it has none)
    std::string why;
    ix_.decode_events(l.feedlet, w0, w1, [&](const trace::Event& e) {
      ++seen;
      const FieldPick p = picks_[e.type];
      if (p.field < 0) {
        if (!p.argument) last_name = p.named ? uint32_t(e.u[0]) : 0;
        return;
      }
      uint32_t nm = 0;
      if (p.argument) {
        if (last_name == 0 || last_name >= named.size()) return;
        if (named[last_name] < 0) named[last_name] = name.matches(catalog_->string(last_name));
        if (!named[last_name]) return;
        nm = last_name;
      } else {
        last_name = 0;
      }
      const size_t k = size_t(p.field);
      const double v = p.type == format::FieldType::F64 ? e.f(k)
                       : p.type == format::FieldType::I64 ? double(e.i(k))
                                                          : double(e.u[k]);
      for (const ValueTest& t : filter_.values)
        if (!t.passes(v)) return;
      out.push_back(Record{e.ts, e.ts, v, nm, l.feedlet});
    }, why);
    if (!why.empty()) {
      std::lock_guard lock(error_mu_);
      error_ = why;
    }
    return seen;
  }

  // Records left to read (false at the end): the next decoded window when
  // this one is read, its lanes' heads in the heap.
  bool refill() {
    while (left_ == 0) {
      if (pending_.empty()) return false;
      spare_lanes_.push_back(std::move(window_lanes_));
      std::future<Lanes> next = std::move(pending_.front());
      pending_.pop_front();  // (first: a decode that threw leaves no dead future behind)
      window_lanes_ = next.get();
      pos_.assign(window_lanes_.size(), 0);
      heap_.clear();
      left_ = 0;
      for (uint32_t i = 0; i < window_lanes_.size(); ++i) {
        left_ += window_lanes_[i].size();
        if (!window_lanes_[i].empty()) heap_.emplace_back(window_lanes_[i][0].end, i);
      }
      std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
      if (heap_.size() == 1) only_ = heap_[0].second, heap_.clear();
      prefetch();
    }
    return true;
  }

  // Windows are decoded kAhead ahead of the one read: with one, the
  // decoding threads waited while the reader merged and stored, and two
  // cores were busy three quarters of the time.
  void prefetch() {
    while (!done_ && pending_.size() < kAhead) {
      uint64_t w0 = next_window_, w1 = hi_ - w0 < window_ - 1 ? hi_ : w0 + window_ - 1;
      Lanes buffers;
      if (!spare_lanes_.empty()) buffers = std::move(spare_lanes_.back()), spare_lanes_.pop_back();
      pending_.push_back(std::async(std::launch::async, [this, w0, w1, b = std::move(buffers)]() mutable {
        return decode(w0, w1, std::move(b));
      }));
      done_ = w1 == hi_;  // (only once its task is started)
      next_window_ = w1 + 1;
    }
  }

  // Whether lane l may hold a wanted item in [w0, w1], from its pyramids.
  bool worth_decoding(const Lane& l, uint64_t w0, uint64_t w1) const {
    const uint32_t shift = uint32_t(std::bit_width(w1 - w0));
    for (size_t i = 0; i < l.streams.size(); ++i) {
      Buckets b = ix_.query_shift(l.streams[i], w0, w1, std::max(shift, l.leaf_shifts[i]));
      for (const Node& n : b.nodes)
        if (n.count && (kind_ == StreamKind::Counter || (n.iv.max_dur >= keep_.lo && n.iv.min_dur <= keep_.hi)))
          return true;
    }
    return false;
  }

  // Each lane's records of [w0, w1], in key order (next_batch merges them).
  // `per_lane`: buffers kept from window to window (fresh memory costs a
  // page fault a page).
  using Lanes = std::vector<std::vector<Record>>;
  Lanes decode(uint64_t w0, uint64_t w1, Lanes per_lane) {
    per_lane.resize(lanes_.size());
    for (auto& v : per_lane) v.clear();
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next++) < lanes_.size();) {
        const Lane& l = lanes_[i];
        if (field_) {
          events_read_ += decode_fields(l, w0, w1, per_lane[i]);
          continue;
        }
        if (!worth_decoding(l, w0, w1)) continue;
        std::vector<Record>& out = per_lane[i];
        uint64_t seen = 0;
        ix_.lane_items(l.feedlet, w0, w1, [&](const Item& it) {
          ++seen;
          if (it.kind != kind_ || it.name >= l.names.size() || !l.names[it.name]) return;
          if (filter_.depth >= 0 && it.depth != uint32_t(filter_.depth)) return;
          if (!keep_.holds(it.end - it.start)) return;
          for (const ValueTest& t : filter_.values)
            if (!t.passes(it.value)) return;
          out.push_back(Record{it.start, it.end, it.truncated ? Record::interval_value(it) : it.value, it.name, l.feedlet});
        });
        if (!filter_.where.empty()) apply_where(l, w1, out);
        events_read_ += seen;
      }
    };
    std::vector<std::thread> helpers;
    for (unsigned t = 1; t < std::min<size_t>(threads_, lanes_.size()); ++t) helpers.emplace_back(work);
    work();
    for (auto& h : helpers) h.join();
    return per_lane;
  }

  const TraceIndex& ix_;
  Filter filter_;
  StreamKind kind_;
  bool field_ = false;  // field(): samples of event fields (picks_), from every selected lane's chunks
  mutable std::mutex error_mu_;
  std::string error_;   // a chunk a field stream could not read
  Durations keep_;  // longer() and shorter() over this stream, pushed down
  unsigned threads_ = 1;
  std::vector<Lane> lanes_;
  uint64_t max_dur_ = 0;
  uint64_t lo_ = 0, hi_ = 0, window_ = 1, next_window_ = 0;
  bool done_ = true;
  static constexpr size_t kAhead = 2;
  std::deque<std::future<Lanes>> pending_;  // the windows being decoded, in order
  // The window being read, a vector a lane, merged as it is read: where
  // each lane is, the heap of the lanes' next keys (empty when one lane is
  // left: only_), the records left. Windows read before, for reuse.
  Lanes window_lanes_;
  std::vector<Lanes> spare_lanes_;
  std::vector<size_t> pos_;
  using Head = std::pair<uint64_t, uint32_t>;  // (key, lane)
  std::vector<Head> heap_;
  uint32_t only_ = 0;
  size_t left_ = 0;
  std::atomic<uint64_t> events_read_{0};
};

// queue(channel=...): how many messages wait on the channels, as samples,
// from the flow table: +1 at each send, -1 at its receive (a receive never
// sent came from outside the trace: it leaves the count alone), a sample at
// every tick where it changes in the window (none for the count held into
// it). The flow table is walked from the trace's start, window by window
// (the count at the window's start needs every send before it): memory
// follows a window, not the trace. A receive timed before its send (clocks
// apart) may take it below zero for that while.
class QueueCursor : public Cursor {
 public:
  QueueCursor(const TraceIndex& ix, const Expr& e, const EvalOptions& opt)
      : ix_(ix), channel_(ix, e.filter.channel), values_(e.filter.values) {
    lo_ = ix.first_ts(), hi_ = std::min(opt.t1, ix.last_ts()), t0_ = opt.t0;
    const uint64_t windows = std::max<uint64_t>(1, ix.events() / (1 << 22));
    window_ = lo_ <= hi_ ? std::max<uint64_t>(1, (hi_ - lo_) / windows + 1) : 1;
    next_window_ = lo_;
    done_ = lo_ > hi_;
  }
  bool next(Record& r) override {
    while (at_ == out_.size()) {
      if (done_) return false;
      const uint64_t w0 = next_window_, w1 = hi_ - w0 < window_ - 1 ? hi_ : w0 + window_ - 1;
      done_ = w1 == hi_;
      next_window_ = w1 + 1;
      // The halves in [w0, w1]: a send's at its send, a matched receive's at its receive.
      steps_.clear(), out_.clear(), at_ = 0;
      for (const index::Flow& f : ix_.flows(w0, w1)) {
        ++read_;
        if (!(f.flags & index::kFlowSent) || !channel_.matches(f.channel)) continue;
        if (f.send_ts >= w0 && f.send_ts <= w1) steps_.emplace_back(f.send_ts, +1);
        if (f.matched() && f.recv_ts >= w0 && f.recv_ts <= w1) steps_.emplace_back(f.recv_ts, -1);
      }
      // (At one tick, sends first: a message taken as it comes is never below zero.)
      std::sort(steps_.begin(), steps_.end(),
                [](auto& a, auto& b) { return a.first < b.first || (a.first == b.first && a.second > b.second); });
      for (size_t i = 0; i < steps_.size(); ++i) {
        depth_ += steps_[i].second;
        if (i + 1 < steps_.size() && steps_[i + 1].first == steps_[i].first) continue;  // a sample a tick
        const uint64_t t = steps_[i].first;
        if (t < t0_) continue;
        bool ok = true;
        for (const ValueTest& v : values_) ok = ok && v.passes(double(depth_));
        if (ok) out_.push_back(Record{t, t, double(depth_), 0, kNoFeedlet});
      }
    }
    r = out_[at_++];
    return true;
  }
  uint64_t max_duration() const override { return 0; }
  uint64_t events_read() const override { return read_; }

 private:
  const TraceIndex& ix_;
  ChannelMatcher channel_;
  std::vector<ValueTest> values_;
  uint64_t lo_ = 0, hi_ = 0, t0_ = 0, window_ = 1, next_window_ = 0, read_ = 0;
  bool done_ = true;
  int64_t depth_ = 0;
  std::vector<std::pair<uint64_t, int>> steps_;
  std::vector<Record> out_;
  size_t at_ = 0;
};

// jobs(task=...) and response(task=...), from a JobScan: in the order the
// jobs complete, each as an interval from its arrival to its completion
// (named by its task), or its response time in ns as a sample there. A job
// not completed in the trace runs to its end, and one whose arrival was not
// recorded from its first start: both truncated (Record::truncated), and
// neither has a response.
class JobCursor : public Cursor {
 public:
  JobCursor(const TraceIndex& ix, const Expr& e, const EvalOptions& opt)
      : ix_(ix), scan_(ix, opt.t1), task_(e.filter.task), values_(e.filter.values), t0_(opt.t0), t1_(opt.t1),
        response_(e.op == Op::Response), catalog_(ix.catalog_snapshot()) {}
  bool next(Record& r) override {
    while (const Job* next = scan_.next()) {
      const Job& j = *next;
      if (!task_matches(j.task)) continue;
      if (response_) {
        if (!j.has_response()) continue;
        r = Record{j.completion, j.completion, double(ns_between(ix_, j.arrival, j.completion)), j.task, j.completed_by};
        bool ok = true;
        for (const ValueTest& v : values_) ok = ok && v.passes(r.value);
        if (!ok) continue;
      } else {
        const uint64_t start = j.arrival != kNoTime ? j.arrival : j.first_start;
        if (start == kNoTime) continue;  // only a deadline was recorded
        const bool whole = j.has_response();
        // (A job not completed runs to the end of what was scanned: its key
        // then follows every completion, as a stream's keys must.)
        const uint64_t end = j.completed() ? j.completion : std::max(start, scan_.end());
        r = Record{start, end, whole ? 0.0 : -1.0, j.task, j.completed() ? j.completed_by : kNoFeedlet};
      }
      if (r.end < t0_) continue;
      return true;
    }
    return false;
  }
  uint64_t max_duration() const override { return UINT64_MAX; }
  uint64_t events_read() const override { return scan_.counts().events; }
  std::string error() const override {
    const auto& bad = scan_.counts().unreadable;
    return bad.empty() ? std::string() : "jobs: " + bad.front();
  }
  // A job a completion (or an arrival, where more arrived), spread evenly
  // over the trace's time: every task's, the filter not known until read.
  bool estimate(uint64_t& count, uint64_t& key_span) const override {
    const std::vector<uint64_t> n = ix_.events_per_type();
    auto of = [&n](uint16_t t) { return t < n.size() ? n[t] : 0; };
    using format::kJobArrive, format::kJobComplete;
    const uint64_t jobs = response_ ? of(kJobComplete) : std::max(of(kJobArrive), of(kJobComplete));
    const uint64_t lo = ix_.first_ts(), hi = ix_.last_ts();
    const uint64_t a = std::max(lo, t0_), b = std::min(hi, t1_);
    if (hi < lo || b < a) return false;
    key_span = b - a;
    count = uint64_t(double(jobs) * (double(key_span) + 1) / (double(hi - lo) + 1));
    return true;
  }

 private:
  bool task_matches(uint32_t task) {
    if (task_.any()) return true;
    auto [it, fresh] = task_ok_.try_emplace(task, false);
    if (fresh) it->second = task_.matches(catalog_->string(task));
    return it->second;
  }
  const TraceIndex& ix_;
  JobScan scan_;
  NameMatcher task_;
  std::vector<ValueTest> values_;
  uint64_t t0_ = 0, t1_ = UINT64_MAX;
  bool response_ = false;
  std::shared_ptr<const trace::Catalog> catalog_;
  std::unordered_map<uint32_t, bool> task_ok_;
};

// Messages from send to receive, matched by id, keyed by the receive.
class MessageCursor : public Cursor {
 public:
  MessageCursor(const TraceIndex& ix, const Expr& e, const EvalOptions& opt) : ix_(ix), channel_(ix, e.filter.channel) {
    lo_ = std::max(opt.t0, ix.first_ts());
    hi_ = std::min(opt.t1, ix.last_ts());
    const uint64_t windows = std::max<uint64_t>(1, ix.events() / (1 << 22));
    window_ = lo_ <= hi_ ? std::max<uint64_t>(1, (hi_ - lo_) / windows + 1) : 1;
    next_window_ = lo_;
    done_ = lo_ > hi_;
    values_ = e.filter.values;
    where_ = e.filter.where;
    // Which halves the messages have: both (matched), or the one an
    // orphan has (received=false: a send; sent=false: a receive).
    flags_ = (e.filter.sent != 0 ? index::kFlowSent : 0) | (e.filter.received != 0 ? index::kFlowReceived : 0);
    // thread= and process=: messages with either end on such a lane.
    NameMatcher thread(e.filter.thread), process(e.filter.process);
    if (!thread.any() || !process.any()) {
      const auto catalog = ix.catalog_snapshot();
      for (const index::FeedletSummary& f : ix.feedlets())
        if ((thread.any() || thread.matches(f.name)) && (process.any() || process.matches(catalog->process_of(f.id))))
          lanes_.insert(f.id);
      by_lane_ = true;
    }
  }
  // The fields a message's where= tests (the flow table's: no payload decoded).
  static bool known_field(const std::string& f) {
    return f == "size" || f == "channel" || f == "id" || f == "latency_ns";
  }
  bool next(Record& r) override {
    while (at_ == buf_.size()) {
      if (done_) return false;
      uint64_t w0 = next_window_, w1 = hi_ - w0 < window_ - 1 ? hi_ : w0 + window_ - 1;
      done_ = w1 == hi_;
      next_window_ = w1 + 1;
      buf_.clear();
      at_ = 0;
      for (const index::Flow& f : ix_.flows(w0, w1)) {
        ++read_;
        // Keyed by the receive, or an orphan's one half.
        const uint64_t key = flags_ == index::kFlowSent ? f.send_ts : f.recv_ts;
        if (f.flags != flags_ || key < w0 || key > w1 || !channel_.matches(f.channel)) continue;
        if (by_lane_ && !(((f.flags & index::kFlowSent) && lanes_.count(f.src)) ||
                          ((f.flags & index::kFlowReceived) && lanes_.count(f.dst))))
          continue;
        bool ok = true;
        for (const ValueTest& t : values_) ok = ok && t.passes(double(f.size));
        for (const FieldTest& t : where_) {
          const double v = t.field == "size"      ? double(f.size)
                           : t.field == "channel" ? double(f.channel)
                           : t.field == "id"      ? double(f.id)
                           : f.matched()          ? double(ix_.to_ns(f.recv_ts) - ix_.to_ns(f.send_ts))
                                                  : 0;
          if (t.field == "latency_ns" && !f.matched()) ok = false;  // an orphan has no latency
          if (t.number) {
            ok = ok && t.test.passes(v);
          } else {
            char buf[40];
            std::snprintf(buf, sizeof buf, "%.17g", v);
            const bool eq = NameMatcher(t.text).matches(buf);
            ok = ok && (t.test.cmp == ValueTest::Eq ? eq : !eq);
          }
        }
        if (!ok) continue;
        if (f.matched()) buf_.push_back(Record{std::min(f.send_ts, f.recv_ts), f.recv_ts, double(f.size), 0, f.dst});
        else buf_.push_back(Record{key, key, double(f.size), 0, flags_ == index::kFlowSent ? f.src : f.dst});
      }
      std::stable_sort(buf_.begin(), buf_.end(), by_key);
    }
    r = buf_[at_++];
    return true;
  }
  uint64_t max_duration() const override { return UINT64_MAX; }
  uint64_t events_read() const override { return read_; }

 private:
  const TraceIndex& ix_;
  ChannelMatcher channel_;
  std::vector<ValueTest> values_;
  std::vector<FieldTest> where_;
  uint32_t flags_ = 3;
  bool by_lane_ = false;          // thread= or process= given:
  std::unordered_set<uint32_t> lanes_;  // the lanes one end must be on
  uint64_t lo_ = 0, hi_ = 0, window_ = 1, next_window_ = 0, read_ = 0;
  bool done_ = true;
  std::vector<Record> buf_;
  size_t at_ = 0;
};

// ---------------------------------------------------------------- operators

// A cursor with one or more inputs.
class OpCursor : public Cursor {
 public:
  explicit OpCursor(std::vector<std::unique_ptr<Cursor>> in) : in_(std::move(in)) {}
  explicit OpCursor(std::unique_ptr<Cursor> in) { in_.push_back(std::move(in)); }
  uint64_t events_read() const override {
    uint64_t n = 0;
    for (auto& c : in_) n += c->events_read();
    return n;
  }
  std::string error() const override {
    for (auto& c : in_)
      if (auto e = c->error(); !e.empty()) return e;
    return {};
  }

 protected:
  std::vector<std::unique_ptr<Cursor>> in_;
};

// longer / shorter over anything but a base stream (which applies them itself).
class DurationFilter : public OpCursor {
 public:
  DurationFilter(std::unique_ptr<Cursor> in, Durations keep) : OpCursor(std::move(in)), keep_(keep) {}
  bool next(Record& r) override {
    while (in_[0]->next(r))
      if (keep_.holds(r.duration())) return true;
    return false;
  }
  uint64_t max_duration() const override { return std::min(in_[0]->max_duration(), keep_.hi); }
  bool flat() const override { return in_[0]->flat(); }

 private:
  Durations keep_;
};

// The inputs merged into one key order.
class MergeCursor : public OpCursor {
 public:
  explicit MergeCursor(std::vector<std::unique_ptr<Cursor>> in) : OpCursor(std::move(in)), head_(in_.size()), has_(in_.size()) {
    for (size_t i = 0; i < in_.size(); ++i) has_[i] = in_[i]->next(head_[i]);
  }
  bool next(Record& r) override {
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < in_.size(); ++i)
      if (has_[i] && (best == SIZE_MAX || by_key(head_[i], head_[best]))) best = i;
    if (best == SIZE_MAX) return false;
    r = head_[best];
    has_[best] = in_[best]->next(head_[best]);
    return true;
  }
  uint64_t max_duration() const override {
    uint64_t m = 0;
    for (auto& c : in_) m = std::max(m, c->max_duration());
    return m;
  }

 private:
  std::vector<Record> head_;
  std::vector<bool> has_;
};

// The time an interval stream covers, as disjoint intervals in order. An
// interval that arrives (by end) may still join intervals ending after its
// start, so a merged interval is final once the input has passed its end by
// more than the input's longest interval.
class Flatten : public OpCursor {
 public:
  explicit Flatten(std::unique_ptr<Cursor> in) : OpCursor(std::move(in)) {}
  bool next(Record& r) override {
    for (;;) {
      if (!open_.empty() && (done_ || open_.front().end < horizon())) {
        r = open_.front();
        open_.pop_front();
        return true;
      }
      if (done_) return false;
      Record x;
      if (!in_[0]->next(x)) {
        done_ = true;
        continue;
      }
      last_key_ = x.end;
      Record seg{x.start, x.end, 0, 0, kNoFeedlet};
      while (!open_.empty() && open_.back().end >= seg.start) {
        seg.start = std::min(seg.start, open_.back().start);
        seg.end = std::max(seg.end, open_.back().end);
        open_.pop_back();
      }
      open_.push_back(seg);
    }
  }
  uint64_t max_duration() const override { return UINT64_MAX; }
  bool flat() const override { return true; }

 private:
  uint64_t horizon() const {
    uint64_t m = in_[0]->max_duration();
    return last_key_ > m ? last_key_ - m : 0;
  }
  std::deque<Record> open_;
  uint64_t last_key_ = 0;
  bool done_ = false;
};

// The time both of two flat streams cover.
class IntersectTwo : public OpCursor {
 public:
  IntersectTwo(std::vector<std::unique_ptr<Cursor>> in) : OpCursor(std::move(in)) {
    has_a_ = in_[0]->next(a_);
    has_b_ = in_[1]->next(b_);
  }
  bool next(Record& r) override {
    while (has_a_ && has_b_) {
      uint64_t lo = std::max(a_.start, b_.start), hi = std::min(a_.end, b_.end);
      // Zero-length inputs (instants) intersect where they lie inside the other.
      bool overlap = lo < hi || (lo == hi && (a_.start == a_.end || b_.start == b_.end));
      if (a_.end < b_.end) {
        has_a_ = in_[0]->next(a_);
      } else {
        has_b_ = in_[1]->next(b_);
      }
      if (overlap) {
        r = Record{lo, hi, 0, 0, kNoFeedlet};
        return true;
      }
    }
    return false;
  }
  uint64_t max_duration() const override { return std::min(in_[0]->max_duration(), in_[1]->max_duration()); }
  bool flat() const override { return true; }

 private:
  Record a_, b_;
  bool has_a_ = false, has_b_ = false;
};

// From each start (first input) to the end of the first unused end (second
// input) that ends at or after it: first in, first out.
class Span : public OpCursor {
 public:
  explicit Span(std::vector<std::unique_ptr<Cursor>> in) : OpCursor(std::move(in)) {
    has_a_ = in_[0]->next(a_);
    has_b_ = in_[1]->next(b_);
  }
  bool next(Record& r) override {
    for (;;) {
      if (has_a_ && (!has_b_ || a_.end <= b_.end)) {  // a start comes first (ties: before the end)
        waiting_.push_back(a_);
        has_a_ = in_[0]->next(a_);
        continue;
      }
      if (!has_b_) return false;
      Record end = b_;
      has_b_ = in_[1]->next(b_);
      if (waiting_.empty()) continue;
      Record start = waiting_.front();
      waiting_.pop_front();
      r = Record{start.start, end.end, 0, start.name, start.feedlet};
      return true;
    }
  }
  uint64_t max_duration() const override { return UINT64_MAX; }

 private:
  Record a_, b_;
  bool has_a_ = false, has_b_ = false;
  std::deque<Record> waiting_;
};

// Samples: a running total. Intervals: the running total of their time, in ns.
class Sum : public OpCursor {
 public:
  Sum(std::unique_ptr<Cursor> in, bool intervals, double ticks_per_ns)
      : OpCursor(std::move(in)), intervals_(intervals), tpn_(ticks_per_ns) {}
  bool next(Record& r) override {
    if (!in_[0]->next(r)) return false;
    if (intervals_) {
      total_ += double(r.duration()) / tpn_;
      r.start = r.end;
    } else {
      total_ += r.value;
    }
    r.value = total_;
    return true;
  }
  uint64_t max_duration() const override { return 0; }

 private:
  bool intervals_;
  double tpn_, total_ = 0;
};

// The change per second of virtual time between consecutive samples.
class Rate : public OpCursor {
 public:
  Rate(std::unique_ptr<Cursor> in, double ticks_per_ns) : OpCursor(std::move(in)), tpn_(ticks_per_ns) {}
  bool next(Record& r) override {
    while (in_[0]->next(r)) {
      Record prev = prev_;
      bool had = has_prev_;
      if (had && r.start <= prev.start) {  // no virtual time passed: the newer value holds
        prev_.value = r.value;
        continue;
      }
      prev_ = r;
      has_prev_ = true;
      if (!had) continue;
      double seconds = double(r.start - prev.start) / tpn_ / 1e9;
      r.value = (r.value - prev.value) / seconds;
      return true;
    }
    return false;
  }
  uint64_t max_duration() const override { return 0; }

 private:
  double tpn_;
  Record prev_;
  bool has_prev_ = false;
};

// Samples outside the intervals of a flat stream, their virtual time less
// the time those intervals took before them.
class Exclude : public OpCursor {
 public:
  explicit Exclude(std::vector<std::unique_ptr<Cursor>> in) : OpCursor(std::move(in)) { has_seg_ = in_[1]->next(seg_); }
  bool next(Record& r) override {
    while (in_[0]->next(r)) {
      while (has_seg_ && seg_.end <= r.end) {
        excluded_ += seg_.duration();
        has_seg_ = in_[1]->next(seg_);
      }
      if (has_seg_ && seg_.start <= r.end) continue;  // inside [start, end): excluded
      r.start = r.start > excluded_ ? r.start - excluded_ : 0;
      return true;
    }
    return false;
  }
  uint64_t max_duration() const override { return 0; }

 private:
  Record seg_;
  bool has_seg_ = false;
  uint64_t excluded_ = 0;
};

// The mean of the samples in the trailing window (t - w, t].
class Smooth : public OpCursor {
 public:
  Smooth(std::unique_ptr<Cursor> in, uint64_t window) : OpCursor(std::move(in)), window_(window) {}
  bool next(Record& r) override {
    if (!in_[0]->next(r)) return false;
    recent_.emplace_back(r.end, r.value);
    sum_ += r.value;
    while (r.end - recent_.front().first >= window_ && recent_.size() > 1) {
      sum_ -= recent_.front().second;
      recent_.pop_front();
    }
    // A running sum drifts as values come and go; start again now and then.
    if (++since_exact_ >= 4096) {
      sum_ = 0;
      for (auto& p : recent_) sum_ += p.second;
      since_exact_ = 0;
    }
    r.value = sum_ / double(recent_.size());
    return true;
  }
  uint64_t max_duration() const override { return 0; }

 private:
  uint64_t window_;
  std::deque<std::pair<uint64_t, double>> recent_;
  double sum_ = 0;
  int since_exact_ = 0;
};

// A stored stream read back.
class StoredCursor : public Cursor {
 public:
  explicit StoredCursor(std::unique_ptr<DerivedStream> s) : s_(std::move(s)) {
    if (s_->intervals())
      for (const Node& n : s_->query_shift(0, UINT64_MAX, s_->top_shift()).nodes) max_ = std::max(max_, n.iv.max_dur);
  }
  bool next(Record& r) override {
    if (at_ == s_->size()) return false;
    r = s_->records()[at_++];
    return true;
  }
  uint64_t max_duration() const override { return max_; }
  uint64_t events_read() const override { return s_->events_read(); }

 private:
  std::unique_ptr<DerivedStream> s_;
  uint64_t at_ = 0, max_ = 0;
};

class FailedCursor : public Cursor {
 public:
  explicit FailedCursor(std::string e) : e_(std::move(e)) {}
  bool next(Record&) override { return false; }
  uint64_t max_duration() const override { return 0; }
  uint64_t events_read() const override { return 0; }
  std::string error() const override { return e_; }

 private:
  std::string e_;
};

std::unique_ptr<Cursor> build(const TraceIndex& ix, const Expr& e, const EvalOptions& opt, Durations keep = {});

// An input whose longest interval is not known is stored first, which
// tells it (union and flattening need the bound).
std::unique_ptr<Cursor> bounded(std::unique_ptr<Cursor> c, const EvalOptions& opt) {
  if (c->max_duration() != UINT64_MAX) return c;
  std::string error;
  auto stored = DerivedStream::store(*c, true, error, opt.temp_dir);
  if (!stored) return std::make_unique<FailedCursor>(error);
  return std::make_unique<StoredCursor>(std::move(stored));
}

// An input of intersect / exclude, as a flat stream.
std::unique_ptr<Cursor> flat_input(const TraceIndex& ix, const Expr& e, const EvalOptions& opt) {
  auto c = build(ix, e, opt);
  if (c->flat()) return c;
  return std::make_unique<Flatten>(bounded(std::move(c), opt));
}

// Union's inputs, with nested unions taken in (they are flat, which a merge
// with other inputs would not keep).
void union_inputs(const TraceIndex& ix, const Expr& e, const EvalOptions& opt, std::vector<std::unique_ptr<Cursor>>& out) {
  for (const Expr& a : e.args) {
    if (a.op == Op::Union) {
      union_inputs(ix, a, opt, out);
    } else {
      out.push_back(bounded(build(ix, a, opt), opt));
    }
  }
}

// `keep`: duration bounds from longer()/shorter() above e, which a base
// stream applies itself (anything else gets them as filters).
std::unique_ptr<Cursor> build(const TraceIndex& ix, const Expr& e, const EvalOptions& opt, Durations keep) {
  std::vector<std::unique_ptr<Cursor>> in;
  if (!e.filter.task.empty() && e.op != Op::Jobs && e.op != Op::Response)
    return std::make_unique<FailedCursor>(std::string("task= is for jobs() and response(), not ") + op_name(e.op) + "()");
  switch (e.op) {
    case Op::Intervals:
    case Op::Instants:
    case Op::Samples:
    case Op::Field: return std::make_unique<BaseCursor>(ix, e, opt, keep);
    case Op::Messages:
      if (e.filter.received == 0 && e.filter.sent == 0)
        return std::make_unique<FailedCursor>("messages(received=false, sent=false): a message is sent or received");
      for (const FieldTest& t : e.filter.where)
        if (!MessageCursor::known_field(t.field))
          return std::make_unique<FailedCursor>("messages(where=...) tests size, channel, id or latency_ns, not " + t.field);
      return std::make_unique<MessageCursor>(ix, e, opt);
    case Op::Queue:
      if (!e.filter.name.empty() || !e.filter.thread.empty() || !e.filter.process.empty() || e.filter.depth >= 0 ||
          !e.filter.where.empty() || !e.filter.field.empty() || e.filter.received >= 0 || e.filter.sent >= 0)
        return std::make_unique<FailedCursor>("queue() takes channel= and value tests only");
      return std::make_unique<QueueCursor>(ix, e, opt);
    case Op::Jobs:
    case Op::Response:
      if (!e.filter.name.empty() || !e.filter.thread.empty() || !e.filter.process.empty() || e.filter.depth >= 0 ||
          !e.filter.where.empty() || !e.filter.field.empty() || !e.filter.channel.empty() || e.filter.received >= 0 ||
          e.filter.sent >= 0 || (e.op == Op::Jobs && !e.filter.values.empty()))
        return std::make_unique<FailedCursor>(std::string(op_name(e.op)) +
                                              (e.op == Op::Jobs ? "() takes task= only" : "() takes task= and value tests only"));
      return std::make_unique<JobCursor>(ix, e, opt);
    case Op::Longer:
    case Op::Shorter: {
      const uint64_t t = duration_ticks(ix, e.ns);
      keep = e.op == Op::Longer ? keep.longer(t) : keep.shorter(t);
      const Expr& arg = e.args[0];
      if (arg.op != Op::Messages && (is_base(arg.op) || arg.op == Op::Longer || arg.op == Op::Shorter))
        return build(ix, arg, opt, keep);
      return std::make_unique<DurationFilter>(build(ix, arg, opt), keep);
    }
    case Op::Union: {
      union_inputs(ix, e, opt, in);
      return std::make_unique<Flatten>(std::make_unique<MergeCursor>(std::move(in)));
    }
    case Op::Intersect: {
      auto acc = flat_input(ix, e.args[0], opt);
      for (size_t i = 1; i < e.args.size(); ++i) {
        std::vector<std::unique_ptr<Cursor>> two;
        two.push_back(std::move(acc));
        two.push_back(flat_input(ix, e.args[i], opt));
        acc = std::make_unique<IntersectTwo>(std::move(two));
      }
      return acc;
    }
    case Op::Span:
      in.push_back(build(ix, e.args[0], opt));
      in.push_back(build(ix, e.args[1], opt));
      return std::make_unique<Span>(std::move(in));
    case Op::Sum: return std::make_unique<Sum>(build(ix, e.args[0], opt), yields_intervals(e.args[0]), ticks_per_ns(ix));
    case Op::Rate: return std::make_unique<Rate>(build(ix, e.args[0], opt), ticks_per_ns(ix));
    case Op::Exclude:
      in.push_back(build(ix, e.args[0], opt));
      in.push_back(flat_input(ix, e.args[1], opt));
      return std::make_unique<Exclude>(std::move(in));
    case Op::Smooth: return std::make_unique<Smooth>(build(ix, e.args[0], opt), std::max<uint64_t>(1, duration_ticks(ix, e.ns)));
  }
  return std::make_unique<FailedCursor>("unknown operator");
}

}  // namespace

uint64_t duration_ticks(const TraceIndex& ix, int64_t ns) {
  double t = double(std::max<int64_t>(ns, 0)) * ticks_per_ns(ix);
  return t >= 1.8e19 ? UINT64_MAX : uint64_t(t + 0.5);
}

std::vector<int> select_streams(const TraceIndex& ix, const Expr& base) {
  std::vector<int> out;
  if (!is_base(base.op) || base.op == Op::Messages) return out;
  auto catalog = ix.catalog_snapshot();
  NameMatcher name(base.filter.name), thread(base.filter.thread), process(base.filter.process);
  if (!process.matches(catalog->process_name)) return out;
  const StreamKind kind = base_kind(base.op);
  auto streams = ix.streams();
  std::vector<int8_t> name_ok(catalog->strings.size(), -1);  // matched once per name
  for (size_t id = 0; id < streams.size(); ++id) {
    const StreamInfo& s = streams[id];
    if (s.kind != kind) continue;
    if (!thread.any()) {
      auto f = catalog->feedlets.find(s.feedlet);
      if (!thread.matches(f == catalog->feedlets.end() ? std::string_view() : std::string_view(f->second.name))) continue;
    }
    if (s.key < name_ok.size()) {
      if (name_ok[s.key] < 0) name_ok[s.key] = name.matches(catalog->string(s.key));
      if (!name_ok[s.key]) continue;
    } else if (!name.matches(catalog->string(s.key))) {
      continue;
    }
    out.push_back(int(id));
  }
  return out;
}

std::unique_ptr<Cursor> open_cursor(const TraceIndex& ix, const Expr& e, const EvalOptions& options, std::string& error) {
  auto c = build(ix, e, options);
  error = c->error();
  if (!error.empty()) return nullptr;
  return c;
}

}  // namespace tinescope::analysis
