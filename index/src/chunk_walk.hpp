// Decoding a data chunk into what the index needs: every event's timestamp
// and type (for positions and the global order) and the stream items it
// completes (intervals by pairing begins with ends on a stack, samples,
// sends, job segments). The indexer and the queries below the finest stored
// level both walk chunks with this code, so they see the same items.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "prefault.hpp"
#include "tinescope/format.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {

// Field encodings per type code, taken from the trace's schema once, so the
// decoder does not look the schema up per event.
struct Layouts {
  struct Type {
    bool known = false;
    bool one_varint = false;  // one U64 or string field (begin, end, enter, exit, instant): decoded directly
    uint8_t count = 0;
    format::FieldType field[format::kMaxFields]{};
  };
  Type type[format::kMaxEventType + 1];
  explicit Layouts(const format::Schema& schema);
};

// What a feedlet's decoding carries from one chunk to the next.
struct WalkState {
  std::vector<OpenInterval> stack;  // open begin/enter, innermost last
  std::vector<RunningJob> running;  // job segments open, a CPU each
  WalkCounts counts;                // what did not fit (trace_index.hpp)
};

// Resume points: every kResumeEvery events of a chunk, the indexer records
// the walk's state before that event (`on_resume`), so that a query which
// starts inside a chunk walks at most that many events before its window
// instead of up to the whole chunk (~16 000 events: most of a fine zoom's
// query). lz4 still decodes the payload from the chunk's start (an lz4
// block cannot be entered in the middle). (kResumeEvery: trace_index.hpp.)

// Where a walk starts inside a chunk's payload (default: at its start).
struct WalkFrom {
  size_t offset = 0;        // in the raw payload
  uint64_t ts = 0;          // the previous event's timestamp (the next delta's base)
  uint64_t prev_delta = 0;  // the chunk's last DeltaU64 value so far
  uint64_t event = 0;       // events of the chunk before it
};

// No resume points to record (queries).
struct NoResume {
  void operator()(size_t, uint64_t, uint64_t, const WalkState&) const {}
};

// A lock the feedlet's thread holds rides with its running job segments
// (WalkState::running: kept across chunks, in resume points and in the
// pool as they are): task is the lock's name with kHoldBit (a string id
// never has it; a job's CPU, from its event, could be anything), cpu how
// many times it is held (a recursive acquire), job the lock's id.
constexpr uint32_t kHoldBit = 0x80000000u;
inline bool is_hold(const RunningJob& r) { return (r.task & kHoldBit) != 0; }

// What a running entry leaves when it ends at `end`: a job's segment on its
// CPU (a Sched item, its CPU's stream, and the same as a Task item, its
// task's), or a lock's hold (a Hold item).
template <class OnItem>
void end_running(const RunningJob& r, uint64_t end, bool truncated, OnItem&& on_item) {
  Item it;
  it.name = r.task & ~kHoldBit;
  it.start = r.start;
  it.end = end;
  it.truncated = truncated;
  if (is_hold(r)) {
    it.kind = StreamKind::Hold;
    on_item(it);
    return;
  }
  it.kind = StreamKind::Sched;
  it.cpu = r.cpu;
  on_item(it);
  it.kind = StreamKind::Task;
  on_item(it);
}

// ts_lock acquire and release of a lock (name, id) by this thread. A
// release of a lock it does not hold ends nothing (analysis::lock_stats and
// `check` count it).
inline void acquire_lock(WalkState& st, uint32_t lock, uint64_t id, uint64_t ts) {
  for (RunningJob& r : st.running)
    if (r.task == (lock | kHoldBit) && r.job == id) {
      if (r.cpu < 0x3fffffffu) ++r.cpu;  // (clear of the pool's bits, state.hpp)
      return;
    }
  st.running.push_back(RunningJob{1, lock | kHoldBit, ts, id});
}
template <class OnItem>
void release_lock(WalkState& st, uint32_t lock, uint64_t id, uint64_t ts, OnItem&& on_item) {
  for (size_t i = 0; i < st.running.size(); ++i) {
    RunningJob& r = st.running[i];
    if (r.task != (lock | kHoldBit) || r.job != id) continue;
    if (r.cpu > 1) {
      --r.cpu;
      return;
    }
    end_running(r, ts, false, on_item);
    st.running.erase(st.running.begin() + ptrdiff_t(i));
    return;
  }
}

// A job (task, job id) starts or resumes on a CPU. What the events leave
// out is closed, never deleted: the same job still running on another CPU
// (it moved, no preempt seen) ends there, and another job still running on
// this CPU ends where this one starts; each is counted.
template <class OnItem>
void start_job(WalkState& st, uint32_t task, uint64_t job, uint32_t cpu, uint64_t ts, OnItem&& on_item) {
  for (size_t i = 0; i < st.running.size();) {
    const RunningJob& r = st.running[i];
    const bool same = r.task == task && r.job == job;
    if (is_hold(r) || (!same && r.cpu != cpu)) {
      ++i;
      continue;
    }
    ++(r.cpu == cpu ? st.counts.cpu_taken : st.counts.job_moved);
    end_running(r, ts, false, on_item);
    st.running.erase(st.running.begin() + ptrdiff_t(i));
  }
  st.running.push_back(RunningJob{cpu, task, ts, job});
}

// A job is preempted, blocks or completes: its segment ends where it runs,
// whichever CPU the event names (one that names another is counted). An end
// of a job that is not running is counted, and ends nothing.
template <class OnItem>
void end_job(WalkState& st, uint32_t task, uint64_t job, uint32_t cpu, uint64_t ts, OnItem&& on_item) {
  for (size_t i = 0; i < st.running.size(); ++i) {
    const RunningJob& r = st.running[i];
    if (is_hold(r) || r.task != task || r.job != job) continue;
    if (r.cpu != cpu) ++st.counts.job_end_elsewhere;
    end_running(r, ts, false, on_item);
    st.running.erase(st.running.begin() + ptrdiff_t(i));
    return;
  }
  ++st.counts.job_end_unmatched;
}

// After a break (walk_chunk's after_break): every open interval and job
// segment is closed at `at`, counted as truncated.
template <class OnItem>
void cut_at_break(WalkState& st, uint64_t at, OnItem&& on_item) {
  for (size_t i = st.stack.size(); i-- > 0;) {
    Item it;
    it.kind = StreamKind::Interval;
    it.name = st.stack[i].name & ~kLockWaitBit;
    it.depth = st.stack[i].depth;
    it.start = st.stack[i].start;
    it.end = at;
    it.truncated = true;
    on_item(it);
  }
  for (const RunningJob& r : st.running) end_running(r, at, true, on_item);
  st.counts.truncated += st.stack.size() + st.running.size();
  st.stack.clear();
  st.running.clear();
}

struct MessageEvent {
  bool send = false;
  uint64_t id = 0, ts = 0, channel = 0, size = 0;
};

// Walks the events of one chunk's raw payload. on_event(ts, type) for each
// event, on_item(const Item&) for each completed item, on_message(const
// MessageEvent&) for sends and receives. Returns false with a reason if the
// payload is malformed; the caller then discards what it collected. A query
// stops at `until`, before the first event after it: nothing later can end
// in its window, and a chunk holds ~16 000 events (walking the rest was
// half of a fine zoom's query). `st` is then the state at that event, and
// *stopped (if given) is set: the walk did not run out of payload. A walk
// `from` a resume point starts there, with `st` the state it recorded.
// on_resume(offset, ts, prev_delta, st) is called before every
// kResumeEvery-th event (the indexer records resume points).
//
// `after_break`: events were dropped, or chunks lost (or damaged), between
// this chunk and the feedlet's previous one (follows_break()). What was
// open then is closed at this chunk's start, never matched with an end after
// the gap: an interval's end there is unmatched, counted. (A walk from a
// resume point starts after the cut.)
template <class OnEvent, class OnItem, class OnMessage, class OnResume = NoResume>
bool walk_chunk(const uint8_t* raw, size_t n, const format::ChunkHeader& h, const Layouts& layouts, WalkState& st,
                OnEvent&& on_event, OnItem&& on_item, OnMessage&& on_message, std::string& why,
                uint64_t until = UINT64_MAX, bool* stopped = nullptr, const WalkFrom* from = nullptr,
                OnResume&& on_resume = {}, bool after_break = false) {
  using namespace format;
  constexpr bool kRecordResume = !std::is_same_v<std::decay_t<OnResume>, NoResume>;
  const uint8_t* p = raw;
  const uint8_t* const end = raw + n;
  uint64_t ts = h.first_ts, prev_delta = 0;
  if (from) {
    if (from->offset > n) {
      why = "resume point past the payload";
      return false;
    }
    p = raw + from->offset, ts = from->ts, prev_delta = from->prev_delta;
  } else if (after_break) {
    cut_at_break(st, h.first_ts, on_item);
  }
  [[maybe_unused]] uint32_t to_resume = kResumeEvery + 1;  // (recording) the point goes before events kResumeEvery, 2 kResumeEvery, ...
  uint64_t u[kMaxFields];
  // (`at` passed, not p captured: a lambda holding p's address would keep p
  // in memory, not a register, for the whole walk.)
  auto fail = [&why, raw](const char* what, const uint8_t* at) {
    why = std::string(what) + " at payload offset " + std::to_string(at - raw);
    return false;
  };
  // `cut`: its end was not its own (a func_unwind): truncated, counted.
  auto close_interval = [&](uint32_t name, uint64_t at, bool cut = false) __attribute__((always_inline)) {  // forced: g++ made it a call
    for (size_t i = st.stack.size(); i-- > 0;) {
      if (st.stack[i].name != name) continue;
      Item it;
      it.kind = StreamKind::Interval;
      it.truncated = true;
      // Frames above it never ended: they end here, with it, as truncated
      // (dropped, they showed while open at a window's right edge and were
      // gone from a wider window). (Not resize(): it has a growing path, so
      // it was a call for every end, 5 % of a walk.)
      for (; st.stack.size() > i + 1; st.stack.pop_back()) {
        it.name = st.stack.back().name & ~kLockWaitBit, it.depth = st.stack.back().depth, it.start = st.stack.back().start,
        it.end = at;
        ++st.counts.truncated;
        on_item(it);
      }
      it.name = name;
      it.depth = st.stack[i].depth;
      it.start = st.stack[i].start;
      it.end = at;
      it.truncated = cut;
      st.counts.truncated += cut;
      st.stack.pop_back();
      on_item(it);
      return;
    }
    ++st.counts.unmatched_ends;
  };
  while (p < end) {
    if constexpr (kRecordResume) {
      if (--to_resume == 0) to_resume = kResumeEvery, on_resume(size_t(p - raw), ts, prev_delta, st);
    }
    uint64_t type, delta;
    if (!get_varint(p, end, type) || !get_varint(p, end, delta)) return fail("truncated event", p);
    if (type > kMaxEventType) return fail("event type out of range", p);
    ts += delta;
    if (ts > until) {
      if (stopped) *stopped = true;
      return true;
    }
    const Layouts::Type& lay = layouts.type[type];
    const uint8_t* fields_end = end;
    if (self_sized(uint32_t(type))) {
      uint64_t len;
      if (!get_varint(p, end, len) || len > uint64_t(end - p)) return fail("truncated event", p);
      fields_end = p + len;
      on_event(ts, uint16_t(type));
      p = fields_end;  // user types make no stream items: skip their fields
      continue;
    }
    if (!lay.known) return fail("event type not in the schema", p);
    if (lay.one_varint) {
      if (!get_varint(p, fields_end, u[0])) return fail("truncated field", p);
    } else {
      for (size_t k = 0; k < lay.count; ++k) {
        uint64_t v;
        switch (lay.field[k]) {
          case FieldType::U64:
          case FieldType::String:
          case FieldType::I64:
            if (!get_varint(p, fields_end, v)) return fail("truncated field", p);
            u[k] = lay.field[k] == FieldType::I64 ? uint64_t(unzigzag(v)) : v;
            break;
          case FieldType::DeltaU64:
            if (!get_varint(p, fields_end, v)) return fail("truncated field", p);
            prev_delta += uint64_t(unzigzag(v));
            u[k] = prev_delta;
            break;
          case FieldType::F64:
            if (fields_end - p < 8) return fail("truncated field", p);
            std::memcpy(&u[k], p, 8);
            p += 8;
            break;
          case FieldType::Bytes:
            if (!get_varint(p, fields_end, v) || v > uint64_t(fields_end - p)) return fail("truncated field", p);
            u[k] = v;
            p += v;
            break;
        }
      }
    }
    on_event(ts, uint16_t(type));
    // Ends and begins (nine events in ten) are tested before the switch: a
    // compare the branch predictor follows, where the jump table's indirect
    // branch mispredicted.
    if (type == kIntervalEnd || type == kFuncExit) {
      close_interval(uint32_t(u[0]), ts);
      continue;
    }
    if (type == kFuncUnwind) {
      close_interval(uint32_t(u[0]), ts, true);
      continue;
    }
    if (type == kIntervalBegin || type == kFuncEnter) {
      st.stack.push_back(OpenInterval{uint32_t(u[0]), uint32_t(st.stack.size()), ts});
      continue;
    }
    Item it;
    switch (type) {
      case kIntervalComplete:
        it.kind = StreamKind::Interval;
        it.name = uint32_t(u[0]);
        it.depth = uint32_t(st.stack.size());
        it.start = u[1] <= ts ? ts - u[1] : 0;
        it.end = ts;
        it.complete = true;
        on_item(it);
        break;
      case kInstant:
        it.kind = StreamKind::Instant;
        it.name = uint32_t(u[0]);
        it.start = it.end = ts;
        on_item(it);
        break;
      case kCounterInt:
      case kCounterFloat:
        it.kind = StreamKind::Counter;
        it.name = uint32_t(u[0]);
        it.start = it.end = ts;
        if (type == kCounterInt) {
          it.value = double(int64_t(u[1]));
        } else {
          std::memcpy(&it.value, &u[1], 8);
        }
        on_item(it);
        break;
      case kMessageSend:
      case kMessageRecv:
        if (type == kMessageSend) {
          it.kind = StreamKind::Send;
          it.name = uint32_t(u[1]);
          it.start = it.end = ts;
          it.value = double(u[2]);
          on_item(it);
        }
        on_message(MessageEvent{type == kMessageSend, u[0], ts, u[1], u[2]});
        break;
      case kJobStart:
      case kJobResume:
        start_job(st, uint32_t(u[0]), u[1], uint32_t(u[2]), ts, on_item);
        break;
      case kLockContend:  // a wait begins (kLockWaitBit)
        st.stack.push_back(OpenInterval{uint32_t(u[0]) | kLockWaitBit, uint32_t(st.stack.size()), ts});
        break;
      case kLockRelease: release_lock(st, uint32_t(u[0]), u[1], ts, on_item); break;
      case kLockAcquire:  // the wait for this lock, if one is the innermost open, ends; it is held
        acquire_lock(st, uint32_t(u[0]), u[1], ts);
        if (!st.stack.empty() && st.stack.back().name == (uint32_t(u[0]) | kLockWaitBit)) {
          it.kind = StreamKind::Interval;
          it.name = uint32_t(u[0]);
          it.depth = st.stack.back().depth;
          it.start = st.stack.back().start;
          it.end = ts;
          st.stack.pop_back();
          on_item(it);
        }
        break;
      case kJobPreempt:
      case kJobBlock:
      case kJobComplete:
        end_job(st, uint32_t(u[0]), u[1], uint32_t(u[2]), ts, on_item);
        break;
      default: break;
    }
  }
  if (p != end) return fail("event runs past the payload", p);
  return true;
}

// A chunk's items of one stream, gathered as a walk makes them so that they
// can be taken stream by stream: in the chunk's order, the items of a lane's
// ~20 interleaved streams mispredicted the change of stream and the
// bucket's branches on every item. The walk appends every item of a trace,
// so the append is forced inline (std::vector's push_back had become a
// call: an eighth of indexing).
struct ItemRun {
  std::vector<Item> v;
  Item* next = nullptr;  // where the next item goes
  Item* room = nullptr;  // the end of v
  // Moved, never copied: a copy's pointers would point into the original.
  ItemRun() = default;
  ItemRun(ItemRun&&) noexcept = default;
  ItemRun& operator=(ItemRun&&) noexcept = default;
  ItemRun(const ItemRun&) = delete;
  ItemRun& operator=(const ItemRun&) = delete;
  [[gnu::always_inline]] void add(const Item& it) {
    if (next == room) grow();
    *next++ = it;
  }
  size_t size() const { return size_t(next - v.data()); }
  const Item* data() const { return v.data(); }
  void clear() { next = v.data(); }
  [[gnu::noinline]] void grow() {
    const size_t n = size();
    resize_prefaulted(v, std::max<size_t>(64, v.size() * 2));
    next = v.data() + n, room = v.data() + v.size();
  }
};

// Each run keeps the room its stream needed most. Where chunk after chunk
// is one stream's (a feedlet of many names, each in its phase), that room
// would add up to a chunk's worth per name: past a few chunks' worth in all,
// the runs this chunk did not use let theirs go.
inline void trim_runs(std::vector<ItemRun>& runs, uint64_t chunk_events) {
  size_t held = 0;
  for (const ItemRun& r : runs) held += r.v.size();
  if (held > 4 * std::max<uint64_t>(chunk_events, 16384))
    for (ItemRun& r : runs)
      if (r.size() == 0) r = ItemRun{};
}

// The stream an item belongs to, as a key within its feedlet.
inline uint64_t stream_key(StreamKind kind, uint32_t key) { return uint64_t(kind) << 32 | key; }
inline uint64_t stream_key(const Item& it) {
  return stream_key(it.kind, it.kind == StreamKind::Sched ? it.cpu : it.name);
}

}  // namespace tinescope::index
