// What a TraceIndex holds, shared by the builder, the queries and the file
// code. Readers take TraceIndex::mu_ shared; update() takes it exclusive.
#pragma once

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "chunk_walk.hpp"
#include "flow_blocks.hpp"
#include "pyramid.hpp"
#include "table.hpp"
#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {

// Entries of the open-interval pool with this bit in `depth` are running
// job segments (depth & ~bit = the CPU), not intervals.
constexpr uint32_t kRunningJobBit = 0x80000000u;
// A running job's entry is followed by one that holds its job id (start).
constexpr uint32_t kJobIdEntry = 0x40000000u;

// A walk's state as pool entries, and back.
template <class Out>  // a std::vector or the pool's GrowArray
void add_open_entries(const WalkState& w, Out& out) {
  for (const OpenInterval& o : w.stack) out.push_back(o);
  for (const RunningJob& r : w.running) {
    out.push_back(OpenInterval{r.task, kRunningJobBit | r.cpu, r.start});
    out.push_back(OpenInterval{0, kJobIdEntry, r.job});
  }
}
inline void add_to_state(WalkState& w, const OpenInterval& o) {
  if (o.depth == kJobIdEntry) {
    if (!w.running.empty()) w.running.back().job = o.start;
  } else if (o.depth & kRunningJobBit) {
    w.running.push_back(RunningJob{o.depth & ~kRunningJobBit, o.name, o.start, 0});
  } else {
    w.stack.push_back(o);
  }
}

// Whether a feedlet's chunk follows a break from the one before it among
// its chunks (`prev_sequence`): events dropped just before it, or chunks
// between them lost or damaged. Its walk then closes what was open
// (walk_chunk's after_break): the indexer and every query decide alike.
inline bool follows_break(uint64_t prev_sequence, uint64_t sequence, uint64_t dropped_before) {
  return dropped_before > 0 || sequence != prev_sequence + 1;
}

// A walk's buffers, kept from walk to walk: the chunk's bytes as read, its
// decompressed payload, and its resume points as read from the index file
// (those of `points_of`).
struct ChunkBuffers {
  std::vector<uint8_t> chunk, payload, points;
  const FeedletChunk* points_of = nullptr;
};

struct FeedletState {
  uint32_t id = 0;
  uint64_t events = 0, dropped = 0, first_ts = UINT64_MAX, last_ts = 0;
  Table<FeedletChunk> chunks;
  Table<OpenInterval> pool;  // open intervals at each chunk's start
  std::vector<Stream> streams;
  std::unordered_map<uint64_t, uint32_t> stream_of;  // stream_key -> index in streams
  // The same for small keys (string ids, CPUs), without hashing: the indexer
  // looks a stream up for every item. [kind][key] = index + 1, 0 for none.
  std::vector<uint32_t> dense[8];
  [[gnu::always_inline]] int find(uint64_t key) const {  // once an item: forced inline, as g++ had stopped
    uint32_t kind = uint32_t(key >> 32), k = uint32_t(key);
    if (kind < 8 && k < dense[kind].size()) return int(dense[kind][k]) - 1;
    auto it = stream_of.find(key);
    return it == stream_of.end() ? -1 : int(it->second);
  }
  void insert(uint64_t key, uint32_t index) {
    stream_of[key] = index;
    uint32_t kind = uint32_t(key >> 32), k = uint32_t(key);
    if (kind >= 8 || k >= (1u << 20)) return;
    if (dense[kind].size() <= k) dense[kind].resize(k + 1);
    dense[kind][k] = index + 1;
  }
  std::vector<uint64_t> type_counts = std::vector<uint64_t>(format::kMaxEventType + 1);

  // Carried from chunk to chunk while indexing.
  WalkState walk;
  uint64_t walked_sequence = 0;  // (the builder's) of the last chunk walked: follows_break()
  uint32_t grid_shift = 0;
  std::vector<std::pair<uint64_t, uint64_t>> grid_hits;  // (j, events before j << grid_shift)
  std::vector<OpenInterval> final_open;  // open after the last chunk (pool entries: running jobs too)
  WalkCounts counts;                     // the walk's, after the last chunk
};

using FlowRecord = Flow;

// The chunks a walk reads next, this one first: f's chunks [k, end).
struct ChunksAhead {
  const FeedletState* f = nullptr;
  size_t k = 0, end = 0;
};

struct State {
  Table<ChunkRecord> chunks;
  std::map<uint32_t, std::unique_ptr<FeedletState>> feedlets;
  std::vector<std::pair<uint32_t, uint32_t>> stream_ids;  // global id -> (feedlet, index)
  std::vector<trace::Damage> damage;
  std::vector<trace::Loss> losses;
  Table<Gap> gaps;  // drops and lost chunks, in trace order (damage: TraceIndex::gaps())
  uint64_t latest_last_ts = 0;  // of every chunk: where damage after the last one begins
  // Messages: the builder's table while indexing (`flows`, in arrival
  // order until complete, then sorted by the time of their first half);
  // once the index file is written, its packed blocks instead.
  const Flow* flows = nullptr;
  size_t flow_count = 0;
  Table<FlowBlock> flow_blocks;
  FlowBlockIndex flow_index;

  // Global merged-order checkpoints at T_j = (grid_first + j) << grid_shift.
  uint32_t grid_shift = 0;
  uint64_t grid_first = 0;
  Table<uint32_t> grid_feedlets;    // the columns of grid_positions
  Table<uint64_t> grid_before;      // events of all feedlets with ts < T_j
  Table<uint64_t> grid_positions;   // [j * feedlets + f]: events of feedlet f with ts < T_j
  std::vector<uint64_t> grid_events;  // a loaded index's: events of each column's feedlet

  // The trace, mapped for decoding chunks on demand.
  int trace_fd = -1;
  const uint8_t* trace_map = nullptr;
  size_t trace_map_size = 0;
  // The index file: pages are read from the mapping once loaded, else with pread.
  int index_fd = -1;
  const uint8_t* index_map = nullptr;
  size_t index_map_size = 0;
  uint64_t index_size = 0;
  std::unique_ptr<PageWriter> pages;
  // Level::verified of every level of a loaded index: from calloc, whose
  // large blocks are fresh zero pages that nothing touches until a page is
  // checked (zero-filling a byte a page, ~10^7 pages at 10^11 events, was
  // work on the opening thread).
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t[], Free> verified_pages;
  size_t verified_count = 0;                   // its length
  // A loaded index's tables are checked a block at a time as they are
  // first read (table.hpp): against these, with a mark a block.
  TableChecks table_checks;
  std::unique_ptr<uint8_t[], Free> table_marks;
  uint64_t tables_begin = 0, tables_end = 0;  // where they lie in the index file
  size_t table_blocks = 0;                    // marks used
  // Calls fn on every table checked a block at a time.
  template <class Fn>
  void for_each_table(Fn&& fn) const {
    fn(chunks);
    for (const auto& [id, f] : feedlets) {
      fn(f->chunks), fn(f->pool);
      for (const Stream& st : f->streams)
        for (const Level& lv : st.levels) fn(lv.pages);
    }
    fn(gaps), fn(flow_blocks), fn(flow_index.reach), fn(flow_index.floor), fn(grid_before), fn(grid_positions);
  }
  std::unique_ptr<Layouts> layouts;  // of the trace's schema, for decoding chunks
  mutable std::atomic<uint64_t> page_errors{0};
  mutable std::atomic<uint64_t> pages_asked{0};  // by queries, ahead of reading them (ask_for_pages)
  mutable std::atomic<uint64_t> chunks_asked{0};  // of the trace, by walks, ahead of reading them (ask_for_chunks)

  ~State();
  const Stream* stream(int id) const;
  FeedletState* feedlet(uint32_t id) const;
  // Reads a page's nodes into buf (checking its checksum); false if damaged.
  uint32_t read_page(const Stream& st, uint32_t level, size_t page, Node* out) const;
  // ask_for_pages() on this index's mapping, counted in pages_asked.
  void ask_for_pages(const Stream& st, uint64_t t0, uint64_t t1, uint32_t shift) const;
  // Appends a flow block's flows to out (checking its checksum); false if damaged.
  bool read_flows(const FlowBlock& b, std::vector<Flow>& out) const;
  // Chunk `c`'s bytes, read from the trace into `into` (sized for the whole
  // chunk), piecemeal: its head (trace::chunk_head_bytes) first, null with
  // why if it cannot be read or is not the chunk the record says; a chunk
  // whose payload is not in segments is read whole (*whole). Then
  // read_chunk_bytes puts bytes [begin, end) of the chunk in their place:
  // the blocks a walk decodes (trace::chunk_range_bytes). A fine zoom
  // decodes one segment (~8 KB) of a ~60 KB chunk, and copying the rest from
  // the page cache was a tenth of a decoded lane query. Queries read chunks
  // so, not through the trace's mapping: on this VM, mapping a chunk's pages
  // the first time (page faults, page-table updates) cost ~25 us a chunk, as
  // much as a fine zoom's whole walk; a copy from the page cache costs a few.
  // `ahead`: the chunks the walk reads next. Where the head is not in the
  // page cache (a trace larger than memory, or let go since it was read),
  // they are all asked of the disk at once before it is read (ask_for_chunks).
  const uint8_t* read_chunk_head(uint32_t c, std::vector<uint8_t>& into, bool* whole, std::string& why,
                                 const ChunksAhead& ahead = {}) const;
  bool read_chunk_bytes(uint32_t c, uint8_t* into, size_t begin, size_t end, std::string& why) const;
  // Asks the disk for the bytes of the chunks in `ahead` (at most
  // kAskChunks of them) with POSIX_FADV_WILLNEED, counted in chunks_asked:
  // a walk's reads then wait for the disk once, not once a read (a chunk's
  // head, then its segments) and a chunk, one after another.
  void ask_for_chunks(const ChunksAhead& ahead) const;
  // A chunk's resume points: in place in a loaded index's mapping, else read
  // from the index file into buf. None if they are not there or do not match
  // their check (a walk then starts at the chunk's start).
  std::span<const uint8_t> resume_points(const FeedletChunk& c, ChunkBuffers& buf) const;
  // The raw payload of a chunk's bytes (decompressed into buf). With `to`,
  // only bytes [from, *to) are sure to be decoded (the segments that hold
  // them; the first *to of a payload in one lz4 block), and *to says where
  // what was decoded ends (trace::chunk_payload_range).
  static const uint8_t* payload(const uint8_t* chunk, std::vector<uint8_t>& buf, std::string& why,
                                size_t* to = nullptr, size_t from = 0);
  // Rebuilds the derived tables (stream ids, checkpoints) after indexing.
  void publish(uint32_t grid_shift);
  // The first and last event's ticks over every feedlet ({0, 0} for none).
  std::pair<uint64_t, uint64_t> extent() const;
};


constexpr uint32_t kGridBudget = 4096;  // most checkpoints kept
// Most checkpoint positions kept (checkpoints x feedlets, 8 bytes each): a
// trace of many feedlets (an import's thousands of lanes, a program's
// thousands of short threads) gets fewer checkpoints (TraceIndex::publish).
constexpr uint64_t kGridEntries = uint64_t(1) << 21;
constexpr uint32_t kGridMinShift = 10;

}  // namespace tinescope::index
