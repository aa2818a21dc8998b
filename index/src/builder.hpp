// The indexing pass (see builder.cpp). Owned by a TraceIndex while it is
// being built or follows a growing trace.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>

#include "depth_streams.hpp"
#include "flow_table.hpp"
#include "state.hpp"

namespace tinescope::index {

// Message id -> index in the flow log, for halves waiting for their other
// half: open addressing with linear probing and backward-shift deletion (no
// allocation per message; std::unordered_map's nodes were most of matching).
class PendingFlows {
 public:
  size_t* find(uint64_t id);           // nullptr if absent
  void insert(uint64_t id, size_t at);  // an id not in the table
  void erase(uint64_t id);
  void clear() { slots_.clear(), used_ = 0; }
  // The slot where a find of `id` starts, to the cache ahead of it (the
  // table is larger than the core's cache: a find was a miss).
  void prefetch(uint64_t id) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[home(id)]);
  }

 private:
  static constexpr size_t kFree = SIZE_MAX;  // `at` of an unused slot
  struct Slot {  // 16 bytes: four to a cache line
    uint64_t id = 0;
    size_t at = kFree;
    bool used() const { return at != kFree; }
  };
  size_t home(uint64_t id) const {
    uint64_t h = id * 0x9e3779b97f4a7c15ull;  // Fibonacci hashing: sequences spread over the table
    return size_t(h >> 32 ^ h) & (slots_.size() - 1);
  }
  void grow();
  std::vector<Slot> slots_;  // a power of two, at most 3/4 full
  size_t used_ = 0;
};

// Matches sends with receives by message id, across all feedlets.
struct FlowMatcher {
  std::mutex mu;
  FlowTable log;                                 // in the order halves were first seen
  PendingFlows pending;                          // id -> index in log, waiting for its other half
  uint64_t lost = 0;                             // not kept: the flow file could not grow
  void add(uint32_t feedlet, std::span<const MessageEvent> messages);  // a chunk's

 private:
  void add_locked(uint32_t feedlet, const MessageEvent& m);
};

struct Job;
struct Slice;

struct Builder : trace::Visitor {
  Builder(State& state, trace::Catalog& catalog, trace::Header& header);
  bool open_flows(const std::string& near, std::string& error) { return flows_.log.open(near, error); }
  ~Builder() override;

  // Indexes the bytes [consumed(), size) of the trace open as `fd`, read
  // `read_slice` bytes at a time (0: 4 MB). eof: the trace is complete (a
  // partial chunk at its end is damage).
  bool run(int fd, uint64_t size, bool eof, unsigned threads, uint64_t read_slice,
           const std::function<void(const Progress&)>& progress);
  uint64_t consumed() const { return consumed_; }
  uint32_t grid_shift() const { return grid_shift_; }
  const std::string& error() const { return parser_.error().empty() ? read_error_ : parser_.error(); }
  // Closes every stream's open buckets (the trace is complete).
  void finish();
  // Points the state at the flows seen so far; sorted by time once eof.
  void publish_flows(bool eof);
  const trace::Parser& parser() const { return parser_; }

  void on_header(const trace::Header& h) override;
  void on_chunk(const trace::ChunkInfo& info) override;
  void on_damage(const trace::Damage& d) override;
  void on_loss(const trace::Loss& l) override;

 private:
  struct Workers;
  // A worker's buffers, kept from chunk to chunk (a fresh allocation per
  // chunk showed as 4 % of indexing in malloc).
  struct Scratch {
    std::vector<uint8_t> payload;
    std::vector<ItemRun> items;  // [stream index in the feedlet]: this chunk's items
    ItemRun fresh;               // items of streams the feedlet did not have yet
    std::vector<MessageEvent> messages;
    std::vector<std::pair<uint64_t, uint64_t>> hits;
    std::vector<uint8_t> resume;  // this chunk's resume points
    DepthFold depths;
    std::vector<Item> spans;  // this chunk's long completes (span_streams.hpp)
    std::vector<Node> span_nodes;
  };
  void walk(const Job& job, Scratch& scratch);
  void note_gaps(const format::ChunkHeader& h);
  void start_workers(unsigned n);
  void stop_workers();

  State& s_;
  trace::Catalog& catalog_;
  trace::Header& header_;
  trace::Parser parser_;
  std::unique_ptr<Layouts> layouts_;
  std::unique_ptr<Workers> workers_;
  FlowMatcher flows_;
  std::mutex damage_mu_;
  std::vector<std::unique_ptr<Slice>> slices_;  // the trace as read, in turn
  Slice* slice_ = nullptr;                       // the one being parsed
  std::string read_error_;
  uint64_t consumed_ = 0;
  uint64_t min_ts_ = UINT64_MAX, max_ts_ = 0;
  uint32_t grid_shift_ = kGridMinShift;
  // For the gaps, on the parsing thread in trace order: each feedlet's last
  // chunk's last tick, and the lost chunks that wait for the chunk after.
  std::unordered_map<uint32_t, uint64_t> last_ts_of_;
  std::unordered_map<uint32_t, size_t> loss_waiting_;  // feedlet -> in s_.gaps
};

}  // namespace tinescope::index
