// What an importer collects from another tool's trace before writing it as a
// tinescope trace: per lane (feedlet) its intervals (spans and begin/end
// pairs), points and flows, and the names of threads and processes. The
// Chrome JSON reader and the ftrace text reader fill one; write() rebuilds
// the nesting per lane and writes the chunks (docs/IMPORT.md).
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <istream>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "tinescope/import/bulk_array.hpp"
#include "tinescope/import/kernel_sched.hpp"
#include "tinescope/trace_writer.hpp"
#include "tinescope/import/trace_import.hpp"

namespace tinescope::import {

// A double's bits, as a counter point's value holds them (Point::a).
inline uint64_t bits_of(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}

// A text line's field without the blanks around it (and a line's CR).
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A whole field as a number, blanks around it allowed (from_chars: no copy, no locale).
template <class T>
bool to_number(std::string_view s, T& v) {
  s = trim(s);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

// One event in the Chrome Trace Event Format's terms; the ftrace reader
// speaks it too where the meaning is the same (B/E, C, S/F).
// An argument of an event ("args"), typed as JSON has it: 'i' integer, 'f'
// other numbers, 'b' text (strings; true, false and null as their words;
// arrays as their JSON). Nested objects are flattened into dotted keys.
struct Arg {
  std::string key;
  char type = 'b';
  int64_t i = 0;
  double f = 0;
  std::string text;
};

struct RawEvent {
  std::string ph, name, cat, id, scope, arg_name;
  std::string id_scope;    // "scope": an object's id is unique within its process and scope
  std::string arg_labels;  // args.labels (process_labels)
  std::string sf;          // a sample's leaf stack frame, an id into the file's "stackFrames"
  std::string bind_id;     // a slice's flow id ("flow_in"/"flow_out", flow events v2)
  std::string not_a_number;  // "ts" or "dur" given as a string that is no number
  bool flow_in = false, flow_out = false;  // the slice ends / starts the flow bind_id (or id)
  bool bind_enclosing = false;  // "bp": "e": a flow's end binds to the slice around it, not the next one
  bool local_id = false;        // "id2": {"local": ...} (or atrace's cookie): the id is the process's own
  bool has_pid = false, has_tid = false, has_ts = false, has_dur = false, has_sort = false;
  int64_t pid = 0, tid = 0, sort_index = 0;
  double ts = 0, dur = 0;
  std::vector<std::pair<std::string, double>> num_args;
  std::vector<Arg> args;  // every argument, typed (num_args: the numbers again, for counters)
  size_t arg_count = 0;   // of args in use (the rest keep their memory for the next event)
  bool has_tts = false, has_tdur = false;
  double tts = 0, tdur = 0;  // thread time, us
  // Empty again for the next event, keeping the memory of its texts.
  void reset();
};

// Events may carry arguments (cat, args, thread time): `args` names them
// in ImportModel's argument store (0: none).
struct Span {  // an interval of a feedlet, begin and end known
  uint64_t start, end;
  uint32_t name;
  uint64_t seq;
  uint32_t args = 0, end_args = 0;  // of its begin (or complete event), of its end
};

struct Point {  // anything else, in time order per feedlet (32 bytes: a lane may hold millions)
  uint64_t ts;
  uint64_t seq : 48, type : 16;
  uint32_t name;
  uint32_t args = 0;
  uint64_t a;  // counter: double bits; message: id
};
constexpr uint64_t kAfterIntervals = uint64_t(1) << 46;  // Point::seq: after the intervals at its time

struct BeginEnd {
  uint64_t ts;
  uint64_t seq : 63, begin : 1;
  uint32_t name;
  uint32_t args = 0;
};

// A lane's begins and ends as they came, packed: a few bytes each where a
// BeginEnd takes 24. They are most of what an import holds (36 M of the
// 37 M events of perfetto_bench's 1 GB trace), and every fresh page an
// import fills costs its zeroing (docs/PERFORMANCE.md). Each is four
// varints: zigzag(ts - the previous ts), zigzag(seq - the previous seq)
// << 1 | begin, name, args.
class BeginEndLog {
 public:
  [[gnu::always_inline]] void push_back(const BeginEnd& e) {
    using format::put_varint, format::zigzag;
    uint8_t* p = bytes_.grow_by(kLongest);
    uint8_t* const start = p;
    p = put_varint(p, zigzag(int64_t(e.ts - ts_)));
    p = put_varint(p, zigzag(int64_t(uint64_t(e.seq) - seq_)) << 1 | e.begin);
    p = put_varint(p, e.name);
    p = put_varint(p, e.args);
    bytes_.shrink_by(kLongest - size_t(p - start));
    if (n_ && (e.ts < ts_ || (e.ts == ts_ && e.seq <= seq_))) in_order_ = false;
    ts_ = e.ts, seq_ = e.seq, ++n_;
  }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  // By time, file order breaking ties (as they came, or not).
  bool in_order() const { return in_order_; }
  void release() { bytes_.release(), n_ = 0, ts_ = seq_ = 0, in_order_ = true; }
  // Calls f(const BeginEnd&) for each, in the order they came.
  template <class F>
  void each(F&& f) const {
    const uint8_t* p = bytes_.begin();
    const uint8_t* const end = bytes_.end();
    BeginEnd e{0, 0, 0, 0, 0};
    uint64_t ts = 0, seq = 0;
    for (size_t i = 0; i < n_; ++i) {
      // (Written by push_back: whole. Four variables, not an array: one
      // stored a field at a time and read whole waits for the stores.)
      uint64_t dt = 0, ds = 0, name = 0, args = 0;
      format::get_varint(p, end, dt), format::get_varint(p, end, ds);
      format::get_varint(p, end, name), format::get_varint(p, end, args);
      ts += uint64_t(format::unzigzag(dt));
      seq += uint64_t(format::unzigzag(ds >> 1));
      e.ts = ts, e.seq = seq & (~uint64_t(0) >> 1), e.begin = ds & 1;
      e.name = uint32_t(name), e.args = uint32_t(args);
      f(static_cast<const BeginEnd&>(e));
    }
  }

 private:
  static constexpr size_t kLongest = 2 * format::kMaxVarint + 2 * 5;
  BulkArray<uint8_t> bytes_;
  size_t n_ = 0;
  uint64_t ts_ = 0, seq_ = 0;  // the last's
  bool in_order_ = true;
};

// An async event (b/e/n, S/T/p/F): paired by its key (category and id,
// and process for a process's own id) across processes, in time order.
struct AsyncEvent {
  uint64_t key, ts, seq;
  int64_t pid;
  uint32_t name;
  char kind;  // 'b' begin, 'e' end, 'n' instant
  uint32_t args = 0;
};

// An object event (N created, O snapshot, D deleted): paired by its key
// (process, scope and id) in time order into the object's lifetime.
struct ObjectEvent {
  uint64_t key, ts, seq;
  int64_t pid;
  uint32_t name;  // its type
  char kind;      // 'N', 'O' or 'D'
  uint32_t args = 0;  // its cat and args (keep_args)
};

// What pairing makes of async events and objects, before they have lanes:
// intervals and instants, each of a unit (an async id's episode in one
// process, an object's lifetime) that goes on one lane whole (place_units).
struct Unit {
  int64_t pid;
  uint32_t family;  // the lanes it may go on: its first begin's name, its object's type
  uint64_t start = UINT64_MAX, end = 0;
  uint32_t feedlet = 0;  // index in feedlets, once placed
};
struct Placed {
  uint64_t start, end, seq;  // an instant's start and end are its time
  uint32_t name, unit;
  bool instant;
  uint32_t args = 0, end_args = 0;
};

// A sample (P) whose name waits for the file's "stackFrames".
struct SampleFrame {
  uint32_t feedlet;  // index in feedlets
  size_t point;      // index in its points
  std::string sf;
};

struct Flow {
  uint64_t id_hash, ts, seq;
  char ph;
  bool bind_next;  // an 'f' bound to the next slice of its thread (Chrome's default), not the one around it
  uint32_t feedlet, name;
};

struct Feedlet {
  uint32_t id;
  int64_t pid, tid;
  std::string name;
  BulkArray<Span> spans;
  BeginEndLog be;
  BulkArray<Point> points;
};

class ImportModel {
 public:
  explicit ImportModel(ImportResult& result) : r(result) {}

  ImportResult& r;
  std::vector<Feedlet> feedlets;
  std::map<int64_t, std::string> process_names;
  std::map<int64_t, int64_t> process_sort;
  std::map<std::pair<int64_t, int64_t>, int64_t> thread_sort;
  BulkArray<Flow> flows;
  BulkArray<AsyncEvent> async_events;
  BulkArray<ObjectEvent> object_events;
  std::vector<SampleFrame> sample_frames;  // samples of the file being read that name a stack frame
  std::map<int64_t, std::string> process_labels;
  std::string num_cpus;
  std::string trace_process;  // the trace's process name where no lane's process is it (Grasp's groups)
  std::map<int64_t, std::string> tid_names;  // tids given as names ("tid": "main"), if no thread_name

  uint32_t intern(const std::string& s);
  // Keeps an event's cat, args and thread times as the fields of an
  // argument event (docs/FORMAT.md, "Arguments"): its id, 0 if it has none.
  uint32_t keep_args(const RawEvent& e);
  // Writes argument event `id` after the event it belongs to.
  void put_args(format::ChunkBuilder& cb, uint32_t id, uint64_t ts);
  // The lane of a thread (lane "") or a named lane of a process.
  Feedlet& feedlet(int64_t pid, int64_t tid, const std::string& lane);
  uint64_t next_seq() { return seq_++; }
  // Microseconds to ticks (ns); readers keep `us` below kMaxUs.
  static constexpr double kMaxUs = 9.2e15;
  static uint64_t ticks(double us) { return uint64_t(std::llround(us * 1000.0)); }
  // One Chrome trace event (counted in r.events_read).
  void take(const RawEvent& e);

  // Writes what was collected to `out`, which must not exist (O_EXCL): a
  // metadata chunk of names, then each lane's events in time order.
  bool write(const std::string& in, const std::string& out, const char* recorder, std::string& error);

 private:
  std::unordered_map<std::string, uint32_t> string_ids_;
  std::vector<std::string> strings_{""};
  // Argument events, encoded as they are written (self-sized fields), back to back.
  struct KeptArgs {
    uint64_t at;
    uint32_t size;
    uint16_t type;
  };
  BulkArray<KeptArgs> kept_ = none_kept();  // [0]: none
  static BulkArray<KeptArgs> none_kept() {
    BulkArray<KeptArgs> k;
    k.push_back(KeptArgs{});
    return k;
  }
  BulkArray<uint8_t> args_bytes_;
  // Small argument events already kept, by type and bytes (keep_args).
  static constexpr size_t kSharedBody = 16, kMostShared = 1 << 16;
  std::unordered_map<std::string, uint32_t> shared_;
  std::string shared_key_;
  // An argument type per shape (each argument's type and key, in order);
  // past the codes a trace has, the shapes share `.args` with one text field.
  std::unordered_map<std::string, uint16_t> arg_types_;
  std::vector<format::EventTypeDef> arg_defs_;
  std::string shape_, last_shape_;  // last_shape_: the last one kept, of type last_type_
  uint16_t last_type_ = 0;
  std::string last_cat_;  // and its string id
  uint32_t last_cat_id_ = 0;
  std::vector<uint8_t> body_;
  uint64_t seq_ = 0;
  std::map<std::tuple<int64_t, int64_t, std::string>, uint32_t> feedlet_of_;

  void point(Feedlet& f, const RawEvent& e, uint16_t type, uint32_t name, uint64_t a);
  // A slice's flow_in / flow_out (flow events v2): it receives / sends on its flow.
  void bound_flow(const RawEvent& e, const Feedlet& f, uint32_t name);
  // Pairs the async events into intervals on their lanes (write()).
  void pair_async();
  // Makes each object's lifetime an interval, its snapshots instants (write()).
  void pair_objects();
  // Puts each unit on a lane "PROCESS KIND FAMILY" (#2, #3... for those
  // that overlap), and its intervals and instants there.
  void place_units(std::vector<Unit>& units, const std::vector<Placed>& placed, const char* kind);
  void metadata(const RawEvent& e);
};

// The readers that fill a model. Each returns false with `error` (naming
// the file and where) when it read nothing it could use; a reader that
// stops early after reading events keeps them and sets r.warning.
bool read_chrome_json(std::istream& in, const std::string& name, ImportModel& m, std::string& error);

// The "process" of ftrace's CPU lanes.
constexpr int64_t kCpuLanesPid = -1;
constexpr int64_t kThreadStatesPid = -2;  // ftrace: each thread's lane of states

// Linux ftrace text, line by line: sched_switch as CPU lanes, sched_wakeup
// as flows to the woken thread's next slice, atrace's tracing_mark_write
// (B/E, C, S/F) as intervals and counters; cpu_frequency and cpu_idle as
// counters of the CPU lanes. Everything else is counted by event name.

class FtraceReader : ThreadStates::Sink {
 public:
  explicit FtraceReader(ImportModel& m) : m_(m), states_(*this) {}
  // One line of text; comments (#) and lines that are not events are passed over.
  void line(std::string_view text);
  // Ends the slices still running at the last timestamp (a thread switched
  // in by the last line gets an empty slice: it is what runs at the end).
  void finish();
  uint64_t events() const { return events_; }  // lines read as events

  // The kernel's events by their fields, whatever format they came in (the
  // text above; Perfetto's ftrace bundles). Times are ticks (ns).
  struct Switch {
    int64_t prev_pid = 0, next_pid = 0;
    std::string_view prev_comm, next_comm;
    std::string_view prev_state;  // as ftrace text prints it: "R", "R+", "S", "D", ...
    int64_t prev_prio = 0, next_prio = 0;
    bool has_prev_prio = false, has_next_prio = false;
  };
  void sched_switch(uint32_t cpu, uint64_t ts, const Switch& s);
  void sched_wakeup(uint32_t cpu, uint64_t ts, int64_t pid, std::string_view comm);  // and waking, wakeup_new
  bool migrate(uint64_t ts, int64_t from_cpu, int64_t to_cpu);                        // false: no such CPUs
  void exited(int64_t pid, uint64_t ts) { states_.exited(int32_t(pid), ts); }
  bool cpu_counter(uint64_t ts, int64_t cpu, bool idle, int64_t state);  // cpu_idle or cpu_frequency
  // atrace's text (B|pid|name, E, C|pid|name|value, S/F|pid|name|cookie)
  // written by thread `tid` (named comm); false where it is none of them.
  bool atrace(int64_t tid, std::string_view comm, double us, std::string_view text);

 private:
  static constexpr uint64_t kWakeupFlowIds = uint64_t(0x77) << 56;  // apart from hashed Chrome ids
  static constexpr uint64_t kMigrationFlowIds = uint64_t(0x6d) << 56;
  struct Running {
    int64_t pid = -1;
    uint32_t name = 0;
    uint64_t start = 0;
    uint32_t args = 0;  // the switch's that began it: next_pid, next_prio
  };
  struct Wakeup {
    uint64_t ts = 0, seq = 0;
    uint32_t from = 0;  // the waker's CPU lane
  };
  ImportModel& m_;
  uint64_t events_ = 0, last_ts_ = 0, wakeups_ = 0, migrations_ = 0;
  std::map<uint32_t, Running> running_;                 // per CPU
  std::unordered_map<int64_t, Wakeup> woken_;           // pid -> its first wakeup since it last ran
  std::unordered_map<int64_t, int64_t> tgid_of_;        // thread -> process
  Feedlet& cpu_lane(uint32_t cpu);
  // A switch's fields of the task that leaves ("prev_") or comes ("next_"):
  // pid, prio and (leaving) state, as an argument event (ImportModel::keep_args).
  uint32_t switch_args(const Switch& s, bool prev);
  RawEvent switch_event_;
  // Each thread's states (kernel_sched.hpp), on a lane "COMM-PID states" of the group "thread states".
  ThreadStates states_;
  std::unordered_map<int32_t, std::string> state_lane_;  // tid -> its lane's name
  void begin(int32_t tid, uint64_t ts, const char* name) override { state_event(tid, ts, name, true); }
  void end(int32_t tid, uint64_t ts, const char* name) override { state_event(tid, ts, name, false); }
  void state_event(int32_t tid, uint64_t ts, const char* name, bool begin);
  void name_state_lane(int64_t tid, std::string_view comm);
};

// Grasp traces (the Grasp player's Tcl script of `newProcessor`, `newTask`,
// `plot TIME EVENT ARGS` and `bufferplot` commands, docs/IMPORT.md), read
// whole and then replayed in time order: the processors' clocks are aligned
// first from their sync messages (offset and drift), so per-processor
// traces simply concatenated come out on one timeline.
class GraspReader {
 public:
  explicit GraspReader(ImportModel& m) : m_(m) {}
  // Whether a line's first word is a Grasp command (how a text is told from ftrace).
  static bool is_grasp(std::string_view line);
  // One line of the script (# comments and blank lines are passed over).
  void line(std::string_view text);
  // Aligns the clocks and replays the events into the model.
  void finish();
  uint64_t events() const { return events_.size(); }

 private:
  enum Kind : uint8_t {
    JobArrived, JobStarted, JobResumed, JobPreempted, JobBlocked, JobCompleted, MutexAcquired, MutexReleased,
    ServerReplenished, ServerDepleted, ServerResumed, ServerPreempted, SyncSent, SyncReceived, BufferWrite,
    BufferRead
  };
  struct Event {
    double t;         // as written, on the clock of `clock`
    uint64_t seq;     // file order, for ties
    Kind kind;
    uint32_t a, b, c;  // job, task or mutex; processor pairs and sync id; buffer and message ...
    uint32_t processor;  // named with -processor, else 0
    uint32_t clock;      // the processor whose clock wrote `t` (0: none named)
    double value;        // a server's budget
  };
  struct Object {  // a processor, task, mutex, buffer or server, as declared
    std::string name;
    uint32_t processor = 0;  // a task's
    uint32_t order = 0;      // declaration order (processors: the first of a cluster is its reference clock)
  };
  ImportModel& m_;
  std::vector<Event> events_;
  std::unordered_map<std::string, uint32_t> ids_;  // a script's identifiers, interned
  std::vector<std::string> words_{""};
  std::map<uint32_t, Object> processors_, tasks_, mutexes_, buffers_, servers_;
  std::unordered_map<uint32_t, uint32_t> job_processor_;  // while reading: where each job runs
  uint32_t id(std::string_view word);
  Object& declare(std::map<uint32_t, Object>& table, uint32_t id);
  const std::string& name_of(const std::map<uint32_t, Object>& table, uint32_t id) const;
  void plot(const std::vector<std::string>& w, size_t at, double t, bool buffer);
  // Per processor, its clock as the reference clock of its cluster: t' = offset + drift * t.
  struct ClockMap {
    double offset = 0, drift = 1;
  };
  std::map<uint32_t, ClockMap> align_clocks();
  // Each sync message's two ends (source, target, id): sent on the source's clock, received on the target's.
  struct SyncEnds {
    bool sent = false, received = false;
    double s = 0, r = 0;
  };
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, SyncEnds> sync_messages() const;
  void replay();
};

// Perfetto's protobuf trace (perfetto_import.cpp): whether a file's first
// bytes (up to its first packet) are one, and the reader.
bool looks_like_perfetto(std::string_view head);
bool read_perfetto(std::istream& in, const std::string& name, ImportModel& m, std::string& error);
// The same over a file in memory (mapped): no byte of it copied.
bool read_perfetto(const char* data, size_t size, const std::string& name, ImportModel& m, std::string& error);

// The trace viewer's HTML (systrace): the ftrace text in a JavaScript
// string (`var linuxPerfData = "..."`, older) or in <script
// class="trace-data"> blocks (newer; a JSON block goes to read_chrome_json).
bool read_trace_html(std::istream& in, const std::string& name, ImportModel& m, std::string& error);

}  // namespace tinescope::import
