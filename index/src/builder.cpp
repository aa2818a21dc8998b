// Indexing: one pass over the trace. The calling thread frames and checks
// chunks (trace::Parser without decoding data) and decodes the metadata
// feedlet; worker threads decompress and walk data chunks in trace order,
// a feedlet's chunks one at a time and in order (Builder::Workers).
#include "builder.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <queue>
#include <span>
#include <thread>
#include <unordered_map>

#include "tinescope/import/bulk_array.hpp"
#include "resume_points.hpp"
#include "span_streams.hpp"
#include "trace_reads.hpp"
#include "sort_blocks.hpp"

namespace tinescope::index {

using format::ChunkHeader;

// A piece of the trace read into memory for the parser and the workers,
// reused once the workers have walked its chunks. Indexing reads the trace
// with pread, not through a mapping: on this VM, faulting in 735 MB of a
// trace just written (in the page cache in 4 KB pages) cost 350-540 ms of
// CPU, a copy with pread 65-90 ms, of ~3 s for the whole indexing; and a
// trace cut short under a mapping raises SIGBUS. The bytes are a BulkArray
// (huge pages, not zeroed): a std::vector's zeroing faulted its 4 KB pages
// in at ~11 us each on this VM. Its bytes start at `data`, a little into
// `bytes`: where what is read from the file starts aligned in memory, for
// TraceReads to read it past the page cache.
struct Slice {
  import::BulkArray<uint8_t> bytes;
  uint8_t* data = nullptr;  // the trace's bytes from offset `at`
  uint64_t at = 0;
  uint64_t size = 0;  // bytes read
  uint32_t jobs = 0;  // chunks in it not yet walked (under Workers::mu)
};

struct Job {
  uint32_t chunk;
  uint64_t offset, size;
  const uint8_t* bytes;
  FeedletState* feedlet;
  uint32_t grid_shift;
  Slice* slice;
};

size_t* PendingFlows::find(uint64_t id) {
  if (slots_.empty()) return nullptr;
  for (size_t i = home(id);; i = (i + 1) & (slots_.size() - 1)) {
    Slot& s = slots_[i];
    if (!s.used()) return nullptr;
    if (s.id == id) return &s.at;
  }
}

void PendingFlows::insert(uint64_t id, size_t at) {
  if ((used_ + 1) * 4 > slots_.size() * 3) grow();
  size_t i = home(id);
  while (slots_[i].used()) i = (i + 1) & (slots_.size() - 1);
  slots_[i] = Slot{id, at};
  ++used_;
}

void PendingFlows::erase(uint64_t id) {
  if (slots_.empty()) return;
  const size_t mask = slots_.size() - 1;
  size_t i = home(id);
  while (slots_[i].used() && slots_[i].id != id) i = (i + 1) & mask;
  if (!slots_[i].used()) return;
  // Backward shift: move up every later slot of the run that may live at i,
  // so that lookups never meet a hole inside a run.
  for (size_t j = (i + 1) & mask; slots_[j].used(); j = (j + 1) & mask) {
    const size_t h = home(slots_[j].id);
    if (((j - h) & mask) >= ((j - i) & mask)) {  // i lies between its home and j: it may move to i
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i] = Slot{};
  --used_;
}

void PendingFlows::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(std::max<size_t>(64, old.size() * 2), Slot{});
  used_ = 0;
  for (const Slot& s : old)
    if (s.used()) insert(s.id, s.at);
}

void FlowMatcher::add(uint32_t feedlet, std::span<const MessageEvent> messages) {
  std::lock_guard lock(mu);  // once a chunk
  constexpr size_t kAhead = 8;  // finds in flight, so that their misses overlap
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i + kAhead < messages.size()) pending.prefetch(messages[i + kAhead].id);
    add_locked(feedlet, messages[i]);
  }
}

void FlowMatcher::add_locked(uint32_t feedlet, const MessageEvent& m) {
  auto fill = [&](FlowRecord& f) {
    if (m.send) {  // the send's channel and size are the message's
      f.send_ts = m.ts, f.src = feedlet, f.flags |= kFlowSent;
      f.channel = m.channel, f.size = uint32_t(m.size);
    } else {
      f.recv_ts = m.ts, f.dst = feedlet, f.flags |= kFlowReceived;
    }
  };
  size_t* at = pending.find(m.id);
  if (at && !(log[*at].flags & (m.send ? kFlowSent : kFlowReceived))) {
    fill(log[*at]);
    pending.erase(m.id);
    return;
  }
  FlowRecord f;
  f.id = m.id;
  f.channel = m.channel;
  f.size = uint32_t(m.size);
  fill(f);
  if (!log.push(f)) {
    ++lost;
    return;
  }
  if (at) {
    *at = log.size() - 1;  // a repeated id replaces the older, which stays an orphan
  } else {
    pending.insert(m.id, log.size() - 1);
  }
}

// The workers take the chunks in trace order, any worker any feedlet, but a
// feedlet's chunks one at a time and in order (each carries its state to
// the next). A fixed share of the feedlets per worker had let one worker run
// far ahead of the other (this VM's two cores differ by ~1.5x in speed): the
// faster ran out of work early, and the messages whose first half it had
// seen waited for their other half in a table that grew to 48 MB at 2*10^9
// events, a tenth of indexing in cache misses.
struct Builder::Workers {
  struct Feedlet {
    std::deque<Job> jobs;  // not yet taken, in order
    bool busy = false;     // a worker walks one of its chunks
  };
  std::mutex mu;
  std::condition_variable cv;
  std::condition_variable walked;  // a slice's last chunk was walked
  std::unordered_map<FeedletState*, Feedlet> feedlets;
  // The feedlets with jobs and no worker, by their first job's chunk: earliest first.
  std::priority_queue<std::pair<uint32_t, FeedletState*>, std::vector<std::pair<uint32_t, FeedletState*>>,
                      std::greater<>>
      ready;
  bool stop = false;
  std::vector<std::thread> threads;
};

Builder::Builder(State& state, trace::Catalog& catalog, trace::Header& header)
    : s_(state), catalog_(catalog), header_(header), parser_(*this, {.decode_data = false}) {}

Builder::~Builder() = default;

void Builder::on_header(const trace::Header& h) {
  header_ = h;
  layouts_ = std::make_unique<Layouts>(h.schema);
}

void Builder::on_chunk(const trace::ChunkInfo& info) {
  const ChunkHeader& h = info.header;
  ChunkRecord r;
  r.offset = info.offset;
  r.size = uint32_t(info.size);
  r.feedlet = h.feedlet;
  r.sequence = h.sequence;
  r.first_ts = h.first_ts;
  r.last_ts = h.last_ts;
  r.event_count = h.event_count;
  r.flags = h.flags;
  r.dropped_before = h.dropped_before;
  r.latest_before = s_.latest_last_ts;
  s_.latest_last_ts = std::max(s_.latest_last_ts, h.last_ts);
  uint32_t index = uint32_t(s_.chunks.size());
  s_.chunks.vec().push_back(r);
  note_gaps(h);
  if (h.feedlet == format::kMetadataFeedlet || h.event_count == 0) return;

  min_ts_ = std::min(min_ts_, h.first_ts);
  max_ts_ = std::max(max_ts_, h.last_ts);
  auto& slot = s_.feedlets[h.feedlet];
  if (!slot) {
    slot = std::make_unique<FeedletState>();
    slot->id = h.feedlet;
    slot->grid_shift = grid_shift_;
  }
  // At most kGridBudget checkpoints, and fewer for many feedlets: each
  // feedlet keeps a position at each (kGridEntries in all).
  const uint64_t points = std::clamp<uint64_t>(kGridEntries / s_.feedlets.size(), 16, kGridBudget);
  while (((max_ts_ >> grid_shift_) - (min_ts_ >> grid_shift_)) > points) ++grid_shift_;
  slot->dropped += h.dropped_before;
  Job job{index, info.offset, info.size, slice_->data + (info.offset - slice_->at), slot.get(), grid_shift_,
          slice_};
  Workers& w = *workers_;
  {
    std::lock_guard lock(w.mu);
    ++slice_->jobs;
    Workers::Feedlet& f = w.feedlets[slot.get()];
    f.jobs.push_back(job);
    if (!f.busy && f.jobs.size() == 1) w.ready.push({index, slot.get()});
  }
  w.cv.notify_one();
}

void Builder::on_damage(const trace::Damage& d) {
  std::lock_guard lock(damage_mu_);
  s_.damage.push_back(d);
}

// Drops before a chunk span the time since its feedlet's previous chunk; the
// parser reports lost chunks just before the chunk after them, which ends them.
void Builder::note_gaps(const ChunkHeader& h) {
  auto last = last_ts_of_.find(h.feedlet);
  if (h.dropped_before) {
    s_.gaps.vec().push_back(Gap{h.feedlet, 0, last != last_ts_of_.end() ? last->second : h.first_ts, h.first_ts,
                                h.dropped_before});
  }
  if (auto w = loss_waiting_.find(h.feedlet); w != loss_waiting_.end()) {
    Gap& g = s_.gaps.vec()[w->second];
    g.t1 = h.first_ts, g.flags &= ~Gap::kToEnd;
    loss_waiting_.erase(w);
  }
  last_ts_of_[h.feedlet] = h.last_ts;
}

void Builder::on_loss(const trace::Loss& l) {
  s_.losses.push_back(l);
  auto last = last_ts_of_.find(l.feedlet);
  Gap g{l.feedlet, Gap::kToEnd, 0, 0, 0};
  if (last != last_ts_of_.end()) g.t0 = last->second;
  else g.flags |= Gap::kFromStart;
  loss_waiting_[l.feedlet] = s_.gaps.size();
  s_.gaps.vec().push_back(g);
}

void Builder::walk(const Job& job, Scratch& scratch) {
  FeedletState& f = *job.feedlet;
  std::string why;
  const uint8_t* raw = trace::chunk_payload(job.bytes, scratch.payload);
  if (!raw) why = "payload does not decompress";
  ChunkHeader h;
  std::memcpy(&h, job.bytes, sizeof h);

  // Walk into scratch first: a chunk that does not decode leaves no trace.
  WalkState walk = f.walk;
  // Items go to their stream's list as the walk makes them (they are added
  // to the pyramids stream by stream, below).
  std::vector<ItemRun>& items = scratch.items;
  ItemRun& fresh = scratch.fresh;
  for (ItemRun& r : items) r.clear();
  if (items.size() < f.streams.size()) items.resize(f.streams.size());
  fresh.clear();
  std::vector<MessageEvent>& messages = scratch.messages;
  std::vector<std::pair<uint64_t, uint64_t>>& hits = scratch.hits;
  messages.clear(), hits.clear();
  std::vector<uint8_t>& resume = scratch.resume;
  resume.clear();
  ResumeWriter points(h.first_ts);
  std::vector<Item>& spans = scratch.spans;
  spans.clear();
  SegmentFloor segment(h.first_ts);
  uint64_t type_counts[format::kMaxEventType + 1] = {};
  uint64_t position = f.events, prev_ts = f.last_ts;
  const bool first = f.events == 0;
  const uint32_t g = job.grid_shift;
  const bool after_break = !f.chunks.empty() && follows_break(f.walked_sequence, h.sequence, h.dropped_before);
  bool ok = raw && walk_chunk(
      raw, h.raw_size, h, *layouts_, walk,
      [&](uint64_t ts, uint16_t type) __attribute__((always_inline)) {  // once per event: no call
        ++type_counts[type];
        if (!(first && position == f.events)) {
          // Checkpoints T_j in (prev_ts, ts]: `position` events come before them.
          // A gap of more than 8192 grid points (a long idle feedlet, a clock
          // jump) records only the multiples of a power of two: the grid
          // will coarsen past that many points anyway (it keeps <= 4096),
          // and the points it keeps are among these.
          const uint64_t a = (prev_ts >> g) + 1, b = ts >> g;
          if (b >= a) {
            const uint64_t span = b - a + 1;
            const unsigned m = span > 8192 ? unsigned(std::bit_width(span)) - 13 : 0;
            const uint64_t step = uint64_t(1) << m;
            uint64_t j = a % step ? a + (step - a % step) : a;
            for (; j >= a && j <= b; j += step) {
              hits.emplace_back(j, position);
              if (b - j < step) break;
            }
          }
        }
        prev_ts = ts;
        ++position;
      },
      [&](const Item& it) __attribute__((always_inline)) {
        const int at = f.find(stream_key(it));
        (at >= 0 ? items[size_t(at)] : fresh).add(it);
        if (segment.is_long(it)) [[unlikely]] spans.push_back(span_item(it));
      },
      [&](const MessageEvent& m) { messages.push_back(m); }, why, UINT64_MAX, nullptr, nullptr,
      [&](size_t offset, uint64_t ts, uint64_t prev_delta, const WalkState& st) {
        points.add(offset, ts, prev_delta, st, resume);
        segment.resume_at(ts);
      },
      after_break);
  if (!ok || position - f.events != h.event_count) {
    if (ok) why = "event count differs from the chunk header";
    on_damage(trace::Damage{job.offset, job.size, "undecodable chunk: " + why});
    return;
  }

  FeedletChunk fc;
  fc.chunk = job.chunk;
  fc.first_event = f.events;
  fc.open_first = f.pool.size();
  add_open_entries(f.walk, f.pool.vec());
  fc.open_count = uint32_t(f.pool.size() - fc.open_first);
  // The resume points go to the index file with the pages (not kept in
  // memory: ~9 bytes a thousand events would grow with the trace).
  if (!resume.empty() && s_.pages->append(resume.data(), resume.size(), fc.resume_at)) {
    fc.resume_bytes = uint32_t(resume.size());
    fc.resume_check = uint32_t(format::checksum(resume.data(), resume.size()));
  }
  f.chunks.vec().push_back(fc);
  f.walk = std::move(walk);
  f.walked_sequence = h.sequence;
  f.events = position;
  f.first_ts = std::min(f.first_ts, h.first_ts);
  f.last_ts = std::max(f.last_ts, h.last_ts);
  for (size_t t = 0; t <= format::kMaxEventType; ++t) f.type_counts[t] += type_counts[t];

  if (g > f.grid_shift) {  // the grid coarsened: keep the checkpoints that remain on it
    uint32_t d = g - f.grid_shift;
    size_t w = 0;
    for (auto& [j, pos] : f.grid_hits)
      if ((j & ((uint64_t(1) << d) - 1)) == 0) f.grid_hits[w++] = {j >> d, pos};
    f.grid_hits.resize(w);
    f.grid_shift = g;
  }
  f.grid_hits.insert(f.grid_hits.end(), hits.begin(), hits.end());

  // Items to their streams' pyramids, one stream at a time: taken in the
  // chunk's order, the items of ~20 interleaved streams mispredicted the
  // change of stream and the node's branches on every item. A stream seen
  // for the first time gets its leaf width from its density in this chunk.
  const uint64_t span = h.last_ts - h.first_ts;
  for (size_t i = 0; i < fresh.size(); ++i) {
    const uint64_t key = stream_key(fresh.v[i]);
    int at = f.find(key);
    if (at < 0) {
      uint64_t count = 0;
      for (size_t j = i; j < fresh.size(); ++j) count += stream_key(fresh.v[j]) == key;
      Stream st;
      st.info.kind = fresh.v[i].kind;
      st.info.feedlet = f.id;
      st.info.key = uint32_t(key);
      st.info.leaf_shift = choose_leaf_shift(count, span);
      at = int(f.streams.size());
      f.insert(key, uint32_t(at));
      f.streams.push_back(std::move(st));
      if (items.size() < f.streams.size()) items.resize(f.streams.size());
    }
    items[size_t(at)].add(fresh.v[i]);
  }
  for (size_t k = 0; k < f.streams.size(); ++k) {
    const Item* run = items[k].v.data();
    f.streams[k].add_run(items[k].size(), [&](size_t j) -> const Item& { return run[j]; }, *s_.pages);
  }
  scratch.depths.add_chunk(f, items, h.first_ts, h.last_ts, *s_.pages);
  add_spans(f, spans, h.first_ts, h.last_ts, *s_.pages, scratch.span_nodes);
  trim_runs(items, h.event_count);
  if (!messages.empty()) flows_.add(f.id, messages);
}

void Builder::start_workers(unsigned n) {
  workers_ = std::make_unique<Workers>();
  for (unsigned i = 0; i < n; ++i) {
    workers_->threads.emplace_back([this, &w = *workers_] {
      Scratch scratch;
      std::unique_lock lock(w.mu);
      for (;;) {
        w.cv.wait(lock, [&] { return w.stop || !w.ready.empty(); });
        // Stopping with none ready: what is left belongs to feedlets that
        // other workers hold, and they go on with it.
        if (w.ready.empty()) return;
        FeedletState* id = w.ready.top().second;
        w.ready.pop();
        Workers::Feedlet& f = w.feedlets[id];
        const Job job = f.jobs.front();
        f.jobs.pop_front();
        f.busy = true;
        lock.unlock();
        walk(job, scratch);
        lock.lock();
        if (--job.slice->jobs == 0) w.walked.notify_one();
        f.busy = false;
        if (!f.jobs.empty()) {
          w.ready.push({f.jobs.front().chunk, id});
          w.cv.notify_one();
        }
      }
    });
  }
}

void Builder::stop_workers() {
  {
    std::lock_guard lock(workers_->mu);
    workers_->stop = true;
  }
  workers_->cv.notify_all();
  for (auto& t : workers_->threads) t.join();
  workers_.reset();
}

bool Builder::run(int fd, uint64_t size, bool eof, unsigned threads, uint64_t read_slice,
                  const std::function<void(const Progress&)>& progress) {
  start_workers(std::max(1u, threads));
  // Read in slices, so that progress shows and the workers start early; a
  // few slices in flight keep the workers busy while the next is read, and
  // bound the memory (a slice grows only for a chunk larger than it).
  const uint64_t first_slice = read_slice ? read_slice : 4u << 20;
  constexpr size_t kSlices = 6;
  if (slices_.empty())
    for (size_t i = 0; i < kSlices; ++i) slices_.push_back(std::make_unique<Slice>());
  TraceReads reads(fd, s_.trace_map && size <= s_.trace_map_size ? s_.trace_map : nullptr, consumed_, size);
  constexpr uint64_t kAlign = TraceReads::kAlign;
  read_error_.clear();
  uint64_t pos = consumed_, slice = first_slice;
  size_t next = 0;
  const Slice* prev = nullptr;  // the last slice read
  while (pos < size) {
    Slice* sl = slices_[next].get();
    {
      std::unique_lock lock(workers_->mu);
      workers_->walked.wait(lock, [&] { return sl->jobs == 0; });
    }
    uint64_t n = std::min(slice, size - pos);
    // Each read ends on an aligned offset (but the trace's last), so that
    // the next one starts on one.
    if (pos + n < size && n > 2 * kAlign) n -= (pos + n) % kAlign;
    sl->at = pos;
    // The start of a chunk that the last slice cut is copied from it, so the
    // file is read in order and once, as the kernel's read-ahead expects.
    uint64_t got = 0;
    if (prev && prev->at + prev->size > pos) got = std::min(prev->at + prev->size - pos, n);
    // Room for the alignment of what is read, and for a read past the page
    // cache to end on an aligned offset (TraceReads).
    sl->bytes.reserve(size_t(n + 2 * kAlign));
    const uintptr_t read_to = (reinterpret_cast<uintptr_t>(sl->bytes.begin()) + got + kAlign - 1) / kAlign * kAlign;
    sl->data = reinterpret_cast<uint8_t*>(read_to - got);
    if (got) std::memcpy(sl->data, prev->data + (pos - prev->at), size_t(got));
    while (got < n) {  // a trace cut short under us reads short: parse what there is
      ssize_t r = reads.read(sl->data + got, pos + got, size_t(n - got));
      if (r < 0) read_error_ = "cannot read at offset " + std::to_string(pos + got) + ": " + std::strerror(errno);
      if (r <= 0) break;
      got += uint64_t(r);
    }
    if (got < n) size = pos + got, n = got;
    sl->size = n, prev = sl;
    if (n == 0) break;
    bool last = pos + n == size;
    slice_ = sl;
    size_t used = parser_.parse(sl->data, size_t(n), pos, eof && last);
    next = (next + 1) % slices_.size();
    pos += used;
    if (progress) progress(Progress{pos, size});
    if (!parser_.error().empty()) break;
    if (used == 0) {
      if (last) break;
      slice *= 2;  // a chunk larger than the slice
      continue;
    }
    slice = first_slice;
    if (last && used < n) break;  // the rest waits for more bytes
  }
  consumed_ = pos;
  stop_workers();
  slice_ = nullptr;
  {
    // The parser's catalog is the host's; an alignment onto another trace's clock stays.
    const double offset = catalog_.clock.align_offset_ns(), rate = catalog_.clock.align_rate();
    const uint64_t version = catalog_.version;
    catalog_ = parser_.catalog();
    if (offset != 0 || rate != 1) {
      catalog_.clock.align(offset, rate);
      catalog_.version = std::max(catalog_.version, version) + 1;  // (snapshots must not go back to the host's clock)
    }
  }
  return parser_.error().empty() && read_error_.empty();
}

void Builder::finish() {
  for (auto& [id, f] : s_.feedlets)
    for (Stream& st : f->streams) st.finish(*s_.pages);
}

void Builder::publish_flows(bool eof) {
  std::lock_guard lock(flows_.mu);
  Flow* f = flows_.log.data();
  size_t n = flows_.log.size();
  if (eof) {
    // In place (the table may be larger than memory); the key is total, so
    // the order does not depend on which worker matched first.
    auto before = [](const Flow& a, const Flow& b) {
      return std::make_tuple(a.first_half(), a.id, a.flags, a.src, a.dst, a.recv_ts) <
             std::make_tuple(b.first_half(), b.id, b.flags, b.src, b.dst, b.recv_ts);
    };
    // The serial end of indexing: the log is in the order first halves
    // were seen, close to time order, so it is sorted in blocks on both
    // cores and merged. 7.2*10^6 flows (2*10^9 events): 0.26-0.29 s, where
    // a split at a sampled median, each half sorted on a core, took
    // 0.35-0.46 s.
    sort_blocks(f, n, before);
    flows_.pending.clear();
  }
  s_.flows = f;
  s_.flow_count = n;
}

}  // namespace tinescope::index
