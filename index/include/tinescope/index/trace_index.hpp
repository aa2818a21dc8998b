// The index of a trace: what lets tinescope open a trace larger than RAM at
// once and answer "what is in this window, at this many pixels" in time that
// follows the pixels, not the events. docs/INDEX.md describes the layout.
//
//  - chunk index: every valid chunk's place, feedlet, sequence, time range,
//    event count and drops; damaged byte ranges and lost chunks beside it.
//  - feedlet sub-index: a feedlet's chunks in order with the position of
//    their first event, so its k-th event or its first event at time t is
//    one binary search and one chunk decode away.
//  - global merged-order checkpoints: at grid times T_j, how many events of
//    each feedlet come before T_j, so global event k is found by starting the
//    merge at the nearest checkpoint (TuningFork §3.2.1).
//  - streams with summary pyramids: per feedlet, intervals and instants per
//    name, samples per counter, message sends, job segments per CPU,
//    intervals per nesting depth, and its long complete intervals (for
//    spanning()); each stream has levels of time buckets, each twice as wide
//    as the one below. Below the finest stored level a query decodes the chunks.
//
// All times are in ticks of the trace's clock (exact and monotone per
// feedlet); clock() converts to nanoseconds.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "tinescope/trace_reader.hpp"

namespace tinescope::index {

enum class StreamKind : uint8_t {
  Interval = 1,  // begin/end pairs, complete events and function calls of one name; key: end time
  Instant = 2,   // instants of one name; key: time
  Counter = 3,   // samples of one counter; key: time
  Send = 4,      // messages sent by the feedlet; key: send time; busy = bytes
  Sched = 5,     // job segments (start/resume .. preempt/block/complete) on one CPU; key: end time
  // The intervals of every name at one nesting depth (key: the depth; the
  // last, kDepthStreams - 1, holds that depth and all deeper), each bucket
  // naming its longest item: what a lane draws at coarse zooms, where its
  // interval streams, one a name, would cost as many answers as it has names.
  // Stored levels only: finer than its leaf, a query answers at the leaf.
  Depth = 6,
  // The feedlet's long complete intervals (key 0; key: end time): those that
  // began before the segment their end is in (kResumeEvery events of a
  // chunk). What spanning() searches for intervals that run on past a time t
  // and are on no stack; each bucket names its longest item, as a depth's.
  // Stored levels only, as Depth; the views do not draw it as a lane's row.
  Span = 7,
  // Job segments of one task, on any CPU (key: the task's string id; key:
  // end time): a Sched item again, by task, each bucket naming the CPU of
  // its longest segment. What a per-task row draws. Not in query_lane()'s
  // answers (a lane's CPU rows draw its Sched streams).
  Task = 8,
  // A lock held by the feedlet's thread, from its acquire to its release
  // (ts_lock; a recursive acquire holds it until as many releases). Key:
  // the lock's name; key: end time. What a lock's row draws (who held it);
  // not in query_lane()'s answers.
  Hold = 9,
};
constexpr uint32_t kDepthStreams = 16;
const char* kind_name(StreamKind k);

// One time bucket of a stream at one level: what the views need to draw it
// without the events. 72 bytes.
struct Node {
  uint64_t bucket = 0;     // key >> shift
  uint32_t count = 0;      // items whose key falls in the bucket
  uint32_t max_depth = 0;  // intervals: deepest nesting (0 = outermost)
  union {
    struct {                 // Interval, Instant, Send, Sched
      uint64_t busy;         // sum of durations (Send: of message bytes)
      uint64_t min_dur, max_dur;
      uint64_t longest_end;  // end of the longest item (its start: longest_end - max_dur)
      uint64_t min_start;    // earliest start
      uint64_t max_end;      // latest end
      uint32_t longest_name; // Depth, Span: the longest item's name; Sched: its task (0 in other kinds)
      uint32_t truncated;    // items cut (Item::truncated), up to 2^31 - 1; | kLongestTruncated: the longest is one
    } iv;
    struct {                 // Counter
      double min, max, first, last, sum;
      uint64_t first_ts, last_ts;
    } s;
  };
  Node() : iv{} {}
};
static_assert(sizeof(Node) == 72);

// Node::iv.truncated's high bit: the bucket's longest item is truncated.
constexpr uint32_t kLongestTruncated = 1u << 31;
inline uint32_t truncated_items(const Node& n) { return n.iv.truncated & ~kLongestTruncated; }

// An item of a stream, decoded from the trace: an interval, an instant
// (start = end), a sample (start = end, value), a send (value = bytes).
struct Item {
  StreamKind kind{};
  bool complete = false;  // an Interval from one complete event (not a begin/end pair): on no stack
  bool truncated = false; // an Interval or job segment whose end was not recorded: cut at a drop or a lost
                          // chunk, or never ended and closed with an outer frame (WalkCounts::truncated)
  uint32_t name = 0;   // string id; Sched, Task: the task; Send: the channel
  uint32_t depth = 0;  // nesting depth of an interval, 0 outermost
  uint32_t cpu = 0;    // Sched, Task
  uint64_t start = 0, end = 0;
  double value = 0;    // Counter: the sample; Send: bytes
  uint64_t key() const { return end; }
};

// An interval still open at some time.
struct OpenInterval {
  uint32_t name = 0;
  uint32_t depth = 0;
  uint64_t start = 0;
};

// A thread waiting for a lock (ts_lock contend, until its acquire) is an
// interval named by the lock at its depth: the thread is blocked, so the
// wait nests inside whatever it had open. On a walk's stack (and in the
// index's stored stacks) it is the lock's name with this bit, so that an
// acquire ends a wait and never a frame that happens to share the lock's
// name; what the index gives (items, open_at) has the bit cleared.
constexpr uint32_t kLockWaitBit = 0x80000000u;

// A job segment running on a CPU at some time: begun by a job's start or
// resume there, not yet ended by its preempt, block or complete.
struct RunningJob {
  uint32_t cpu = 0, task = 0;  // task: string id
  uint64_t start = 0;
  uint64_t job = 0;  // the job's id (its task's jobs are told apart by it)
};

// What a feedlet's events did not fit, counted while indexing (`info`):
// each is drawn as the events allow, never made up.
struct WalkCounts {
  uint64_t unmatched_ends = 0;     // an interval's end with no begin of its name open
  uint64_t truncated = 0;          // intervals and job segments open at a drop or a lost chunk, closed there;
                                   // intervals never ended, closed with an outer one that ended
  uint64_t job_moved = 0;          // a job started on a CPU while running on another: its segment there ended
  uint64_t cpu_taken = 0;          // a job started on a CPU while another ran there: that one's segment ended
  uint64_t job_end_elsewhere = 0;  // a preempt/block/complete named a CPU the job did not run on
  uint64_t job_end_unmatched = 0;  // ... of a job that was not running
  uint64_t total() const {
    return unmatched_ends + truncated + job_moved + cpu_taken + job_end_elsewhere + job_end_unmatched;
  }
};

// Everything of a feedlet that runs across a time t: what a picture draws
// on past its right edge, since its streams are keyed by the items' ends.
// A lock a thread holds at some time (acquired, not yet released).
struct HeldLock {
  uint32_t lock = 0;  // its name's string id
  uint64_t id = 0;    // ts_lock's lock id
  uint64_t start = 0; // acquired then
};

struct RunningAcross {
  std::vector<OpenInterval> open;  // begun by t, not ended by it: outermost first (open_at())
  std::vector<RunningJob> jobs;    // job segments running at t, by CPU (running_at())
  std::vector<HeldLock> holds;     // locks held at t, by acquire (held_at())
  std::vector<Item> spans;         // complete intervals with start <= t < end (spanning())
};

struct StreamInfo {
  StreamKind kind{};
  uint32_t feedlet = 0;
  uint32_t key = 0;        // name string id (Sched: cpu; Task: the task)
  uint32_t leaf_shift = 0; // finest stored level: buckets of 2^leaf_shift ticks
  uint32_t levels = 0;
  uint64_t items = 0;
};

struct ChunkRecord {      // 64 bytes, in trace order
  uint64_t offset = 0;
  uint32_t size = 0;
  uint32_t feedlet = 0;
  uint64_t sequence = 0;
  uint64_t first_ts = 0, last_ts = 0;
  uint32_t event_count = 0;
  uint16_t flags = 0;
  uint16_t reserved = 0;
  uint64_t dropped_before = 0;
  uint64_t latest_before = 0;  // latest last_ts of the chunks before it in the trace (where damage begins)
};
static_assert(sizeof(ChunkRecord) == 64);

// A stretch where a lane's events are missing (every lane's, for damaged
// bytes), in ticks: events the recorder dropped under overload (counted),
// chunks lost (a gap in a feedlet's sequence numbers), or damaged bytes.
struct Gap {  // 32 bytes, in the index file
  static constexpr uint32_t kAllFeedlets = UINT32_MAX;
  // In the file, t0 or t1 may stand for the trace's first or last event,
  // which move while it grows; gaps() gives them resolved (flags 0).
  static constexpr uint32_t kFromStart = 1, kToEnd = 2;
  uint32_t feedlet = kAllFeedlets;
  uint32_t flags = 0;
  uint64_t t0 = 0, t1 = 0;
  uint64_t dropped = 0;  // events dropped; 0 for lost chunks and damage (not known)
};

// Events between a chunk's resume points: where a walk may start inside it.
// Each point starts a segment of the payload, which decodes on its own.
constexpr uint32_t kResumeEvery = format::kSegmentEvents;

// A chunk in its feedlet's order: where its first event is in the feedlet,
// the intervals open when it starts (so decoding may begin there), and its
// resume points (so decoding may begin inside it).
struct FeedletChunk {         // 40 bytes
  uint32_t chunk = 0;          // index into chunks()
  uint32_t open_count = 0;
  uint64_t first_event = 0;    // position in the feedlet
  uint64_t open_first = 0;     // into the open-interval pool
  uint64_t resume_at = 0;      // where its resume points lie in the index file
  uint32_t resume_bytes = 0;   // (0: none)
  uint32_t resume_check = 0;   // low 32 bits of their XXH3-64
};

struct FeedletSummary {
  uint32_t id = 0;
  uint64_t tid = 0;
  std::string name;
  uint64_t events = 0, chunks = 0, dropped = 0;
  uint64_t first_ts = 0, last_ts = 0;
  WalkCounts counts;
};

// The answer to a window query: buckets of 2^shift ticks, in order.
struct Buckets {
  uint32_t shift = 0;
  bool from_events = false;  // below the finest stored level: computed from the chunks
  // Coarser than the columns asked for because the window held more of the
  // lane's events than the decode budget: a larger budget would decode it.
  bool over_budget = false;
  std::vector<Node> nodes;
  // A decoded counter's last sample before the answer's first bucket, where
  // the walk (from the resume point before the window) passed one: the
  // value it holds into the window, which sample_before() would search for.
  bool has_before = false;
  Item before;
};

// Below a stream's finest stored level a query decodes the lane's chunks in
// the window, while it holds at most this many of the lane's events a
// column: what a picture drawn while the user zooms affords (docs/INDEX.md, "Queries":
// decoding costs). A caller that can wait longer (a viewer that has come
// to rest, a headless render) passes a larger budget.
constexpr uint32_t kDecodeEventsPerColumn = 16;

// Global event k in the merged order of all data feedlets (ties: by feedlet
// id, then by position).
struct EventRef {
  uint32_t feedlet = 0;
  uint64_t position = 0;  // in the feedlet
  uint64_t ts = 0;
  uint16_t type = 0;
};

// A message from send to receive, matched by id. An orphan has only one half
// (its flags say which).
constexpr uint32_t kFlowSent = 1, kFlowReceived = 2;
struct Flow {  // 48 bytes
  uint64_t send_ts = 0, recv_ts = 0, id = 0;
  uint32_t src = 0, dst = 0;  // feedlets
  uint64_t channel = 0;
  uint32_t size = 0;
  uint32_t flags = 0;  // kFlowSent | kFlowReceived
  bool matched() const { return flags == 3; }
  // The time flows are ordered by: the send, or the receive of an orphan receive.
  uint64_t first_half() const { return (flags & kFlowSent) ? send_ts : recv_ts; }
};

// One event as the trace holds it, with every field: what a details view
// and `find --event` show. Read from its chunk when asked (the index keeps
// no fields: they stay in the trace).
struct EventData {
  uint32_t feedlet = 0;
  uint64_t position = 0;        // in the feedlet (FEEDLET:SEQ names it)
  uint64_t chunk_offset = 0;    // of its chunk's begin marker in the trace file
  uint64_t chunk_sequence = 0;  // its chunk's sequence number in the feedlet
  uint32_t payload_offset = 0;  // of its first byte in that chunk's raw (decompressed) payload
  uint16_t type = 0;
  uint64_t ts = 0;
  bool unknown = false;  // its type is not in the schema: bytes[0] holds its fields undecoded
  // Per field of its type, as trace::Event's: integers and string ids as
  // they are, signed as int64 bits, doubles as their bits; bytes fields'
  // bytes in `bytes` (their length in `values`).
  std::vector<uint64_t> values;
  std::vector<std::string> bytes;
};

struct Progress {
  uint64_t bytes_done = 0, bytes_total = 0;
};

struct BuildOptions {
  unsigned threads = 0;                                     // 0: one per core
  std::function<void(const Progress&)> progress;            // called now and then
  std::string index_path;                                   // "" : beside the trace, else the cache dir
  uint64_t warm_bytes = 0;  // of a loaded index paged in after opening; 0: up to an eighth of the memory
  uint64_t read_slice = 0;  // indexing reads the trace this many bytes at a time, 6 slices ahead; 0: 4 MB
};

struct Builder;
struct State;
struct Stream;
class ParallelTasks;
class IndexWarmer;

class TraceIndex {
 public:
  ~TraceIndex();

  // The index file for a trace: beside it (TRACE.idx), or in the cache
  // directory ($XDG_CACHE_HOME/tinescope or ~/.cache/tinescope) when the
  // trace's directory is not writable.
  static std::string default_index_path(const std::string& trace);

  // Opens the index of `trace` if it is current, else builds it (and says
  // why in *rebuilt_because). Null with a message naming the file on failure.
  static std::unique_ptr<TraceIndex> open(const std::string& trace, std::string& error,
                                          const BuildOptions& options = {},
                                          std::string* rebuilt_because = nullptr);
  // Only loads an existing index; null with the reason if it is missing,
  // stale or damaged. warm_bytes as in BuildOptions.
  static std::unique_ptr<TraceIndex> load(const std::string& trace, const std::string& index_path,
                                          std::string& error, uint64_t warm_bytes = 0);
  // Builds the index and writes it to options.index_path (or the default).
  static std::unique_ptr<TraceIndex> build(const std::string& trace, std::string& error,
                                           const BuildOptions& options = {});

  // A trace that is still growing: index what is there, then call update()
  // again whenever the file has grown; queries in between see a consistent
  // snapshot. finish() writes the index file once the trace is complete.
  static std::unique_ptr<TraceIndex> follow(const std::string& trace, std::string& error,
                                            const BuildOptions& options = {});
  bool update(std::string& error);
  bool finish(std::string& error);

  // ---- what is in the trace
  const std::string& trace_path() const { return trace_path_; }
  const std::string& index_path() const { return index_path_; }
  // The names, schema and clock. While update() may run on another thread,
  // use catalog_snapshot() instead: update() changes this one in place.
  const trace::Catalog& catalog() const { return catalog_; }
  // A copy that stays as it is, shared until the catalog changes again.
  std::shared_ptr<const trace::Catalog> catalog_snapshot() const;
  const trace::Header& header() const { return header_; }
  uint64_t trace_bytes() const { return covered_.load(std::memory_order_relaxed); }
  uint64_t index_bytes() const;
  // What the index file holds (tinescope stats --json): the bytes of node
  // pages by stream kind, of flow blocks and of resume points; the rest of
  // index_bytes() is the tables, the directory, the header page and the
  // footer (docs/INDEX.md). Counts every page: O(pages), for tools.
  struct Parts {
    uint64_t node_pages[9] = {};  // [StreamKind]
    uint64_t flow_blocks = 0;
    uint64_t resume_points = 0;
  };
  Parts index_parts() const;
  // A loaded index file is paged in on a background thread after opening
  // (docs/INDEX.md); true once that is done, and for an index built here.
  bool warm() const;
  // Node pages of a loaded index whose checksums have matched so far, and
  // all its node pages. A page is checked before its first use: by the
  // warmer ahead of the queries, or else by the query that first reads it.
  // The same for the blocks of its tables (chunks, page lists...; docs/INDEX.md,
  // "Trust"): checked before first use, by the warmer or the query; never
  // when opening. (An index built here has none to check: all zero.)
  // `asked`: node pages that queries asked for ahead of reading them, all of
  // a query's at once, while the index was not yet read in whole (docs/INDEX.md).
  // `chunks_asked`: the same for the trace's chunks that walks (decoded
  // queries) read, asked for where the first one read was not in the page cache.
  struct PageChecks {
    uint64_t checked = 0, pages = 0;
    uint64_t table_blocks_checked = 0, table_blocks = 0;
    uint64_t asked = 0;
    uint64_t chunks_asked = 0;
  };
  PageChecks page_checks() const;
  uint64_t events() const;  // data events (not the metadata feedlet)
  uint64_t dropped() const;
  uint64_t first_ts() const;
  uint64_t last_ts() const;
  std::vector<uint64_t> events_per_type() const;  // indexed by type code
  // A feedlet's events of one type (0 for a feedlet it does not know).
  uint64_t feedlet_events_of_type(uint32_t feedlet, uint16_t type) const;
  std::vector<ChunkRecord> chunks() const;  // a copy of the whole table: O(trace)
  size_t chunk_count() const;
  std::vector<trace::Damage> damage() const;
  std::vector<trace::Loss> losses() const;
  // Every gap, in O(gaps), not O(chunks): drops and lost chunks as the trace
  // has them, then damaged ranges (from the chunks around each).
  std::vector<Gap> gaps() const;
  std::vector<FeedletSummary> feedlets() const;
  int64_t to_ns(uint64_t ticks) const { return catalog_.clock.to_ns(ticks); }
  // Puts the trace on another trace's clock (trace::ClockMap::align): every
  // time read from the catalog from then on. Not while update() runs.
  void align_clock(double offset_ns, double rate);

  // ---- streams
  std::vector<StreamInfo> streams() const;
  // -1 if there is no such stream.
  int find_stream(StreamKind kind, uint32_t feedlet, uint32_t key) const;
  int find_stream(StreamKind kind, uint32_t feedlet, std::string_view name) const;

  // Buckets of `stream` whose key lies in [t0, t1], at the coarsest level
  // whose buckets are at most (t1 - t0 + 1) / columns ticks wide: at most
  // about two per column. Empty buckets are left out.
  // Below the finest level, the chunks are decoded while the lane holds at
  // most `decode_per_column` events a column there (kDecodeEventsPerColumn).
  Buckets query(int stream, uint64_t t0, uint64_t t1, uint32_t columns,
                uint32_t decode_per_column = kDecodeEventsPerColumn) const;
  // The same at an explicit shift (buckets of 2^shift ticks).
  Buckets query_shift(int stream, uint64_t t0, uint64_t t1, uint32_t shift) const;
  void query_shift(int stream, uint64_t t0, uint64_t t1, uint32_t shift, Buckets& out) const;  // into out
  // What a lane draws: query() for every stream of a feedlet, in stream id
  // order, decoding the chunks once for all streams that need them.
  std::vector<std::pair<int, Buckets>> query_lane(uint32_t feedlet, uint64_t t0, uint64_t t1, uint32_t columns,
                                                  uint32_t decode_per_column = kDecodeEventsPerColumn) const;
  // The same into `out`, whose node vectors keep their memory from the last
  // answer: a viewer asks again for every picture, and fresh memory for each
  // answer (megabytes for a busy lane) cost a third of a query in page faults.
  // `hidden`, if given ([string id]: non-zero to leave out): the interval
  // and instant streams of those names are not answered, and the lane's
  // intervals come by name (its depth streams merge every name).
  void query_lane(uint32_t feedlet, uint64_t t0, uint64_t t1, uint32_t columns,
                  std::vector<std::pair<int, Buckets>>& out,
                  uint32_t decode_per_column = kDecodeEventsPerColumn,
                  const std::vector<uint8_t>* hidden = nullptr) const;
  // Every item of the stream with its key in [t0, t1], decoded from the chunks.
  std::vector<Item> items(int stream, uint64_t t0, uint64_t t1) const;
  // Every item of every stream of a feedlet with its key in [t0, t1], in
  // the feedlet's order, decoding each chunk once.
  void lane_items(uint32_t feedlet, uint64_t t0, uint64_t t1, const std::function<void(const Item&)>& fn) const {
    walk_items(feedlet, t0, t1, fn);
  }
  // Intervals of a feedlet open at time t (started at or before t, not ended by t).
  std::vector<OpenInterval> open_at(uint32_t feedlet, uint64_t t) const;
  // The job segments a feedlet's scheduling events have running at time t
  // (begun at or before t, not ended by t), by CPU: what a CPU's Sched
  // stream, keyed by the segments' ends, does not hold yet. As open_at().
  std::vector<RunningJob> running_at(uint32_t feedlet, uint64_t t) const;
  // The locks a feedlet's thread holds at time t (acquired at or before t,
  // not released by t), by acquire: what its Hold streams do not hold yet.
  std::vector<HeldLock> held_at(uint32_t feedlet, uint64_t t) const;
  // The complete intervals of a feedlet that run across time t (start <= t <
  // end), sorted by (start, end, depth, name): what open_at() cannot know,
  // since a complete event is written at its end. With open_at(), every
  // interval running at t. Costs one segment's walk, the Span stream's
  // levels times what it finds, and a walk of a leaf's time where a leaf
  // holds more than one of them (docs/INDEX.md, "Spanning intervals").
  std::vector<Item> spanning(uint32_t feedlet, uint64_t t) const;
  // What a counter holds around a window: the last sample of counter
  // stream `stream` before t (key < t), and the first after t (key > t).
  // False where there is none. A window that falls between two samples
  // shows the value held across it. Each descends the stream's pyramid, a
  // few dozen buckets a level, to one leaf bucket's items.
  bool sample_before(int stream, uint64_t t, Item& out) const;
  bool sample_after(int stream, uint64_t t, Item& out) const;
  // The three above at once, with one walk where each would make its own:
  // a lane that begins intervals, writes complete ones and runs jobs asks
  // this once for every picture.
  RunningAcross running_across(uint32_t feedlet, uint64_t t) const;

  // Messages with their send or receive in [t0, t1], by time. With a limit,
  // at most limit + 1 of them (which ones is unspecified): more than the
  // caller can use.
  // With `across`, also those in flight across the whole window (sent before
  // t0, received after t1), among them by their send.
  std::vector<Flow> flows(uint64_t t0, uint64_t t1, size_t limit = SIZE_MAX, bool across = false) const;
  // The same into `out`, which keeps its memory: a caller that walks every
  // window of a trace (the message report) faulted fresh pages in for each.
  void flows(uint64_t t0, uint64_t t1, std::vector<Flow>& out, size_t limit = SIZE_MAX, bool across = false) const;
  // True while the trace is followed (growing): flows() then scans every
  // flow for any window, so a reader of all of them asks once.
  bool flows_unsorted() const;

  // ---- feedlet sub-index and global order
  std::vector<FeedletChunk> feedlet_chunks(uint32_t feedlet) const;
  // The k-th event of a feedlet (false past its end).
  bool feedlet_event(uint32_t feedlet, uint64_t k, EventRef& out) const;
  // Position of the first event of the feedlet with ts >= t (its event count if none).
  uint64_t feedlet_position_at(uint32_t feedlet, uint64_t t) const;
  // Events [k, k + count) of a feedlet with every field, decoded from their
  // chunks (fewer past its end). False with why where a chunk they are in
  // cannot be read; the events before it are in out.
  bool read_events(uint32_t feedlet, uint64_t k, uint64_t count, std::vector<EventData>& out,
                   std::string& why) const;
  // Every event of a feedlet with its timestamp in [t0, t1] (at most
  // `limit`), with every field: where a drawn item's events are (an
  // interval's begin at its start, its end or complete event at its end;
  // arguments follow their event at its time).
  bool events_at(uint32_t feedlet, uint64_t t0, uint64_t t1, std::vector<EventData>& out, std::string& why,
                 size_t limit = 4096) const;
  // Calls fn for every event of a feedlet with its time in [t0, t1], in
  // order, with every field (what a field stream reads; bytes fields valid
  // during the call). False with why where a chunk cannot be read: the
  // events of the chunks before it were given.
  bool decode_events(uint32_t feedlet, uint64_t t0, uint64_t t1, const std::function<void(const trace::Event&)>& fn,
                     std::string& why) const;
  // The same chunks, a call each with its whole raw payload and the schema
  // (for trace::decode_each: a scan of millions of events with its own
  // decoding inlined); fn returns false with a reason where the payload is
  // not what it should be, and then this returns false with why.
  using PayloadFn = std::function<bool(const uint8_t* raw, const format::ChunkHeader& h, const format::Schema& schema,
                                       std::string& reason)>;
  bool each_payload(uint32_t feedlet, uint64_t t0, uint64_t t1, const PayloadFn& fn, std::string& why) const;
  // The k-th event of the whole trace in merged order (false past the end).
  bool global_event(uint64_t k, EventRef& out) const;
  // Number of checkpoints and their grid (for tools and tests).
  uint64_t checkpoint_count() const;
  // Index pages found damaged (bad checksum) by queries so far; their nodes are left out.
  uint64_t page_errors() const;

 private:
  TraceIndex();
  bool run_builder(bool eof, std::string& error);
  // Walks the chunks of a feedlet, calling fn for each item with its key in [t0, t1].
  void walk_items(uint32_t feedlet, uint64_t t0, uint64_t t1, const std::function<void(const Item&)>& fn) const;
  // A stream's buckets from its stored levels (shift >= its leaf shift). The caller holds mu_.
  void stored_answer(const Stream& st, uint64_t t0, uint64_t t1, uint32_t shift, Buckets& out) const;
  // The last (or first) sample of a counter stream with its key in [lo, hi].
  bool nearest_sample(int stream, uint64_t lo, uint64_t hi, bool last, Item& out) const;
  // Whether every page of the index is known to be in (the warmer has read
  // the whole file); until then, queries ask for their pages ahead (ask_for_pages).
  bool pages_all_in() const;
  std::string trace_path_, index_path_, temp_path_;
  BuildOptions options_;
  std::unique_ptr<Builder> builder_;
  trace::Catalog catalog_;
  trace::Header header_;
  std::atomic<uint64_t> covered_{0};
  std::unique_ptr<State> s_;
  std::unique_ptr<ParallelTasks> tasks_;  // helper threads for large queries
  std::unique_ptr<IndexWarmer> warmer_;   // pages a loaded index in (after s_: stops before it goes)
  mutable std::shared_mutex mu_;  // update() is exclusive, queries are shared
  mutable std::mutex snapshot_mu_;
  mutable std::shared_ptr<const trace::Catalog> snapshot_;
  friend struct IndexFile;
};

}  // namespace tinescope::index
