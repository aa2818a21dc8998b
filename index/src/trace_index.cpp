// TraceIndex: building, following, opening, and what the index knows about
// the trace as a whole. Queries are in query_*.cpp, the file in index_file.cpp.
#include "tinescope/index/trace_index.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "builder.hpp"
#include "index_file.hpp"
#include "index_warmer.hpp"
#include "parallel_tasks.hpp"
#include "state.hpp"

namespace tinescope::index {

// ------------------------------------------------------------------ State

State::~State() {
  if (trace_map) ::munmap(const_cast<uint8_t*>(trace_map), trace_map_size);
  if (index_map) ::munmap(const_cast<uint8_t*>(index_map), index_map_size);
  if (trace_fd >= 0) ::close(trace_fd);
  if (index_fd >= 0) ::close(index_fd);
}

const Stream* State::stream(int id) const {
  if (id < 0 || size_t(id) >= stream_ids.size()) return nullptr;
  auto [f, i] = stream_ids[size_t(id)];
  return &feedlets.at(f)->streams[i];
}

FeedletState* State::feedlet(uint32_t id) const {
  auto it = feedlets.find(id);
  return it == feedlets.end() ? nullptr : it->second.get();
}

uint32_t State::read_page(const Stream& st, uint32_t level, size_t page, Node* out) const {
  if (const uint32_t n = index::read_page(st, level, page, index_map, index_map_size, index_fd, out)) return n;
  ++page_errors;
  return 0;
}

void State::ask_for_pages(const Stream& st, uint64_t t0, uint64_t t1, uint32_t shift) const {
  if (const size_t n = index::ask_for_pages(st, t0, t1, shift, index_map, index_map_size))
    pages_asked.fetch_add(n, std::memory_order_relaxed);
}

bool State::read_flows(const FlowBlock& b, std::vector<Flow>& out) const {
  const size_t had = out.size();
  if (index_map && fits_in(b.offset, b.bytes, index_map_size) &&
      format::checksum_matches(uint32_t(format::checksum(index_map + b.offset, b.bytes)), b.checksum) &&
      unpack_flows(index_map + b.offset, b.bytes, b.count, out))
    return true;
  out.resize(had);
  ++page_errors;
  return false;
}

std::span<const uint8_t> State::resume_points(const FeedletChunk& c, ChunkBuffers& buf) const {
  if (c.resume_bytes == 0) return {};
  const uint8_t* p = nullptr;
  if (index_map) {
    if (fits_in(c.resume_at, c.resume_bytes, index_map_size)) p = index_map + c.resume_at;
  } else if (buf.points_of == &c) {
    p = buf.points.data();
  } else {
    buf.points.resize(c.resume_bytes);
    buf.points_of = nullptr;
    if (::pread(index_fd, buf.points.data(), c.resume_bytes, off_t(c.resume_at)) == ssize_t(c.resume_bytes))
      p = buf.points.data(), buf.points_of = &c;
  }
  if (!p || uint32_t(format::checksum(p, c.resume_bytes)) != c.resume_check) return {};
  return {p, c.resume_bytes};
}

bool State::read_chunk_bytes(uint32_t c, uint8_t* into, size_t begin, size_t end, std::string& why) const {
  const ChunkRecord& r = chunks[c];
  for (size_t done = begin; done < end;) {
    const ssize_t n = ::pread(trace_fd, into + done, end - done, off_t(r.offset + done));
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      why = "cannot read the chunk at offset " + std::to_string(r.offset) + (n < 0 ? ": " + std::string(std::strerror(errno)) : ": the trace is shorter");
      return false;
    }
    done += size_t(n);
  }
  return true;
}

namespace {
// read_chunk_head's checks: the chunk lies within the trace (before
// reading), and what is there is a chunk of the size its record says (after
// reading its header), whose payload the walk then reads within it. (Only a
// damaged index, or a fuzzer's, points elsewhere.)
bool chunk_in_trace(const State& s, const ChunkRecord& r, std::string& why) {
  if (s.trace_fd >= 0 && fits_in(r.offset, r.size, s.trace_map_size) && r.size >= sizeof(format::ChunkHeader))
    return true;
  why = "chunk beyond the end of the trace";
  return false;
}
bool chunk_as_recorded(const ChunkRecord& r, const uint8_t* bytes, format::ChunkHeader& h, std::string& why) {
  std::memcpy(&h, bytes, sizeof h);
  if (format::chunk_sizes_possible(h) && format::chunk_bytes(h) == r.size) return true;
  why = "no chunk of " + std::to_string(r.size) + " bytes at offset " + std::to_string(r.offset);
  return false;
}
}  // namespace

// A walk over a long window asks again at the next chunk it finds out of the page cache.
constexpr size_t kAskChunks = 16;

void State::ask_for_chunks(const ChunksAhead& ahead) const {
  uint64_t asked = 0;
  std::string why;  // (not said: a chunk that is not there is not asked for)
  for (size_t k = ahead.k; k < ahead.end && k < ahead.k + kAskChunks; ++k) {
    if (!ahead.f->chunks.readable(k) || !chunks.readable(ahead.f->chunks[k].chunk)) continue;
    const ChunkRecord& r = chunks[ahead.f->chunks[k].chunk];
    if (!chunk_in_trace(*this, r, why)) continue;  // (as read_chunk_head reads it)
    ::posix_fadvise(trace_fd, off_t(r.offset), off_t(r.size), POSIX_FADV_WILLNEED);
    ++asked;
  }
  chunks_asked.fetch_add(asked, std::memory_order_relaxed);
}

const uint8_t* State::read_chunk_head(uint32_t c, std::vector<uint8_t>& into, bool* whole, std::string& why,
                                      const ChunksAhead& ahead) const {
  const ChunkRecord& r = chunks[c];
  format::ChunkHeader h;
  if (!chunk_in_trace(*this, r, why)) return nullptr;
  if (into.size() < r.size) resize_prefaulted(into, r.size);
  // One read holds the head of a chunk of up to 120 segments (245 760 events).
  const size_t have = std::min<size_t>(r.size, 1024);
  // Read from the page cache only (RWF_NOWAIT, Linux 4.14): what it lacks
  // comes from the disk, so the walk's chunks are asked for first. In the
  // page cache, this costs nothing more than the read; asking there would
  // cost ~2 us a chunk (measured), a tenth of a fine zoom's query.
  size_t got = 0;
  if (ahead.f) {
    iovec head{into.data(), have};
    const ssize_t n = ::preadv2(trace_fd, &head, 1, off_t(r.offset), RWF_NOWAIT);
    got = n > 0 ? size_t(n) : 0;
    if (got < have) ask_for_chunks(ahead);
  }
  if ((got < have && !read_chunk_bytes(c, into.data(), got, have, why)) || !chunk_as_recorded(r, into.data(), h, why))
    return nullptr;
  *whole = !(h.flags & format::kChunkLz4Segments);
  const size_t head = *whole ? r.size : trace::chunk_head_bytes(h);  // (within r.size: chunk_sizes_possible)
  if (head > have && !read_chunk_bytes(c, into.data(), have, head, why)) return nullptr;
  return into.data();
}

const uint8_t* State::payload(const uint8_t* chunk, std::vector<uint8_t>& buf, std::string& why, size_t* to,
                              size_t from) {
  format::ChunkHeader h;
  std::memcpy(&h, chunk, sizeof h);
  // Room for the whole payload, new memory mapped in one call (prefault.hpp).
  if ((h.flags & (format::kChunkLz4 | format::kChunkLz4Segments)) && buf.size() < h.raw_size)
    resize_prefaulted(buf, h.raw_size);
  size_t all = SIZE_MAX;
  const uint8_t* raw = trace::chunk_payload_range(chunk, buf, to ? from : 0, to ? to : &all);
  if (!raw) why = "payload does not decompress";
  return raw;
}

void State::publish(uint32_t shift) {
  stream_ids.clear();
  for (auto& [id, f] : feedlets)
    for (uint32_t i = 0; i < f->streams.size(); ++i) stream_ids.emplace_back(id, i);
  std::sort(damage.begin(), damage.end(), [](auto& a, auto& b) { return a.offset < b.offset; });

  // Checkpoints T_j for every grid point in (first event, last event].
  grid_shift = shift;
  GrowArray<uint32_t>& feedlet_of = grid_feedlets.vec();
  GrowArray<uint64_t>& before = grid_before.vec();
  GrowArray<uint64_t>& positions = grid_positions.vec();
  feedlet_of.clear();
  before.clear();
  positions.clear();
  uint64_t lo = UINT64_MAX, hi = 0;
  for (auto& [id, f] : feedlets) {
    if (f->events == 0) continue;
    lo = std::min(lo, f->first_ts);
    hi = std::max(hi, f->last_ts);
    feedlet_of.push_back(id);
  }
  if (feedlet_of.empty()) return;
  // A position per checkpoint and feedlet: 4096 checkpoints of 50 000
  // feedlets were 1.6 GB. Past kGridEntries the grid coarsens (each
  // feedlet's points at a finer shift hold those of the coarser one), and
  // global_event() merges from further back.
  while (((hi >> shift) - (lo >> shift)) * feedlet_of.size() > kGridEntries && (hi >> shift) > (lo >> shift)) ++shift;
  grid_shift = shift;
  grid_first = (lo >> shift) + 1;
  uint64_t count = (hi >> shift) - (lo >> shift);
  const size_t nf = feedlet_of.size();
  positions.assign(count * nf, 0);
  before.assign(count, 0);
  for (size_t c = 0; c < nf; ++c) {
    const FeedletState& f = *feedlets.at(feedlet_of[c]);
    const uint32_t d = shift - f.grid_shift;
    auto hit = f.grid_hits.begin();
    uint64_t last = 0;
    for (uint64_t j = 0; j < count; ++j) {
      uint64_t gj = grid_first + j;  // at this shift
      uint64_t fine = gj << d;
      while (hit != f.grid_hits.end() && hit->first < fine) ++hit;
      uint64_t pos;
      if (hit != f.grid_hits.end() && hit->first == fine) {
        pos = hit->second;
      } else {
        pos = (gj << shift) <= f.first_ts ? 0 : f.events;
      }
      // Events before T_j never decrease with j; a feedlet whose chunks go
      // back in time (a damaged trace) would otherwise break the order.
      pos = last = std::max(last, pos);
      positions[j * nf + c] = pos;
      before[j] += pos;
    }
  }
}

// -------------------------------------------------------------- lifecycle

TraceIndex::TraceIndex() : s_(std::make_unique<State>()), tasks_(std::make_unique<ParallelTasks>()) {}
TraceIndex::~TraceIndex() = default;

std::string TraceIndex::default_index_path(const std::string& trace) {
  namespace fs = std::filesystem;
  fs::path p(trace);
  fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (::access(dir.c_str(), W_OK) == 0) return trace + ".idx";
  // Read-only: the cache directory, named after the trace's full path.
  std::error_code ec;
  std::string full = fs::weakly_canonical(fs::absolute(p), ec).string();
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  fs::path cache = xdg && *xdg ? fs::path(xdg) : fs::path(home ? home : "/tmp") / ".cache";
  cache /= "tinescope";
  fs::create_directories(cache, ec);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)format::checksum(full.data(), full.size()));
  return (cache / (p.filename().string() + "." + hex + ".idx")).string();
}

namespace {

bool map_trace(State& s, const std::string& path, std::string& error) {
  if (s.trace_fd < 0) {
    s.trace_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (s.trace_fd < 0) {
      error = path + ": cannot open: " + std::strerror(errno);
      return false;
    }
  }
  struct stat st;
  if (::fstat(s.trace_fd, &st) != 0) {
    error = path + ": cannot stat: " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {  // (mmap's "No such device" for a directory said nothing)
    error = path + (S_ISDIR(st.st_mode) ? ": is a directory, not a trace" : ": is not a regular file, not a trace");
    return false;
  }
  size_t size = size_t(st.st_size);
  if (size == s.trace_map_size) return true;
  if (s.trace_map) ::munmap(const_cast<uint8_t*>(s.trace_map), s.trace_map_size);
  s.trace_map = nullptr;
  s.trace_map_size = 0;
  if (size == 0) return true;
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, s.trace_fd, 0);
  if (m == MAP_FAILED) {
    error = path + ": cannot map: " + std::strerror(errno);
    return false;
  }
  // Read through the mapping: the fingerprint's two ends, and a loaded
  // index's header and metadata chunks, each asked for whole first
  // (index_file.cpp); a fault reads only its page. With sequential advice
  // the first fault read megabytes ahead (8 MB on this VM's disk), ~6 ms
  // of a cold trace's opening for the 64 KB it needed.
  ::madvise(m, size, MADV_RANDOM);
  s.trace_map = static_cast<const uint8_t*>(m);
  s.trace_map_size = size;
  return true;
}

unsigned thread_count(const BuildOptions& o) {
  return o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

namespace {

// An indexer killed mid-way leaves INDEX.tmp.PID behind: remove those whose
// process is gone (a live one may be indexing the same trace right now).
void remove_dead_temps(const std::string& index_path) {
  namespace fs = std::filesystem;
  const fs::path p(index_path);
  const std::string prefix = p.filename().string() + ".tmp.";
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(p.parent_path().empty() ? "." : p.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string pid = name.substr(prefix.size());
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (::kill(pid_t(std::stol(pid)), 0) != 0 && errno == ESRCH) fs::remove(e.path(), ec);
  }
}

}  // namespace

std::unique_ptr<TraceIndex> TraceIndex::follow(const std::string& trace, std::string& error,
                                               const BuildOptions& options) {
  std::unique_ptr<TraceIndex> ix(new TraceIndex());
  ix->trace_path_ = trace;
  ix->index_path_ = options.index_path.empty() ? default_index_path(trace) : options.index_path;
  ix->options_ = options;
  if (!map_trace(*ix->s_, trace, error)) return nullptr;
  remove_dead_temps(ix->index_path_);
  // Pages go to a temporary file that becomes the index when finished.
  ix->temp_path_ = ix->index_path_ + ".tmp." + std::to_string(::getpid());
  int fd = ::open(ix->temp_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = ix->temp_path_ + ": cannot create the index: " + std::strerror(errno);
    return nullptr;
  }
  ix->s_->index_fd = fd;
  ix->s_->pages = std::make_unique<PageWriter>(fd, kPageBytes);  // page 0 is the file header
  ix->builder_ = std::make_unique<Builder>(*ix->s_, ix->catalog_, ix->header_);
  if (!ix->builder_->open_flows(ix->index_path_, error)) return nullptr;
  if (!ix->update(error)) return nullptr;
  return ix;
}

void TraceIndex::align_clock(double offset_ns, double rate) {
  std::unique_lock lock(mu_);
  catalog_.clock.align(offset_ns, rate);
  ++catalog_.version;
  std::lock_guard snap(snapshot_mu_);
  snapshot_.reset();  // taken on the old clock
}

std::shared_ptr<const trace::Catalog> TraceIndex::catalog_snapshot() const {
  std::shared_lock lock(mu_);
  std::lock_guard snap(snapshot_mu_);
  if (!snapshot_ || snapshot_->version != catalog_.version || snapshot_->strings.size() != catalog_.strings.size())
    snapshot_ = std::make_shared<const trace::Catalog>(catalog_);
  return snapshot_;
}

bool TraceIndex::update(std::string& error) {
  std::unique_lock lock(mu_);
  return run_builder(false, error);
}

bool TraceIndex::run_builder(bool eof, std::string& error) {
  if (!builder_) {
    error = index_path_ + ": this index is complete; it does not follow its trace";
    return false;
  }
  if (!map_trace(*s_, trace_path_, error)) return false;
  bool ok = builder_->run(s_->trace_fd, s_->trace_map_size, eof, thread_count(options_), options_.read_slice,
                          options_.progress);
  if (!ok) {
    error = trace_path_ + ": " + builder_->error();
    return false;
  }
  if (eof && !builder_->parser().header_done()) {
    // Nothing to index, and an index of nothing would not load: say so.
    std::string why = s_->trace_map_size == 0 ? "the file is empty" : "no valid file header at offset 0";
    if (s_->trace_map_size && !builder_->parser().error().empty()) why += ": " + builder_->parser().error();
    error = trace_path_ + ": not a tinescope trace (" + why + ")";
    return false;
  }
  if (eof && !builder_->parser().found_trace()) {
    // No magic and not one chunk: some other file (a JSON trace not yet
    // imported, a typo), not a damaged trace. Its index would only say
    // "all damage", written beside a file that is not ours.
    error = trace_path_ + ": not a tinescope trace (no file header and no intact chunk)";
    return false;
  }
  if (eof) builder_->finish();
  if (!s_->layouts && builder_->parser().header_done()) s_->layouts = std::make_unique<Layouts>(header_.schema);
  builder_->publish_flows(eof);
  for (auto& [id, f] : s_->feedlets) {
    f->final_open.clear(), add_open_entries(f->walk, f->final_open);
    f->counts = f->walk.counts;
  }
  s_->publish(builder_->grid_shift());
  covered_ = builder_->consumed();
  if (!s_->pages->flush() || !s_->pages->error().empty()) {
    error = temp_path_ + ": " + s_->pages->error();
    return false;
  }
  return true;
}

bool TraceIndex::finish(std::string& error) {
  std::unique_lock lock(mu_);
  if (!run_builder(true, error)) return false;
  // The flows still live in the builder's table: save before letting it go.
  bool saved = IndexFile::save(*this, temp_path_, error);
  if (!saved) {
    ::unlink(temp_path_.c_str());
    return false;
  }
  if (::rename(temp_path_.c_str(), index_path_.c_str()) != 0) {
    error = index_path_ + ": cannot write the index: " + std::strerror(errno);
    ::unlink(temp_path_.c_str());
    return false;
  }
  bool mapped = IndexFile::map_pages(*this, error);
  builder_.reset();
  return mapped;
}

std::unique_ptr<TraceIndex> TraceIndex::build(const std::string& trace, std::string& error,
                                              const BuildOptions& options) {
  auto ix = follow(trace, error, options);
  if (!ix || !ix->finish(error)) {
    if (ix) ::unlink(ix->temp_path_.c_str());
    return nullptr;
  }
  return ix;
}

std::unique_ptr<TraceIndex> TraceIndex::load(const std::string& trace, const std::string& index_path,
                                             std::string& error, uint64_t warm_bytes) {
  std::unique_ptr<TraceIndex> ix(new TraceIndex());
  ix->trace_path_ = trace;
  ix->index_path_ = index_path;
  if (!map_trace(*ix->s_, trace, error)) return nullptr;
  if (!IndexFile::load(*ix, error)) return nullptr;
  // A small index is read in by its first queries as soon: no thread for it.
  if (ix->s_->index_map_size >= IndexWarmer::kSmallest) ix->warmer_ = std::make_unique<IndexWarmer>(*ix->s_, warm_bytes);
  return ix;
}

bool TraceIndex::warm() const { return !warmer_ || warmer_->done(); }
bool TraceIndex::pages_all_in() const { return warmer_ && warmer_->read_all(); }

TraceIndex::PageChecks TraceIndex::page_checks() const {
  std::shared_lock lock(mu_);
  PageChecks c;
  c.pages = s_->verified_count;
  for (size_t i = 0; i < c.pages; ++i)
    c.checked += std::atomic_ref<uint8_t>(s_->verified_pages[i]).load(std::memory_order_relaxed) != 0;
  c.table_blocks = s_->table_blocks;
  for (size_t i = 0; i < c.table_blocks; ++i)
    c.table_blocks_checked += std::atomic_ref<uint8_t>(s_->table_marks[i]).load(std::memory_order_relaxed) != 0;
  c.asked = s_->pages_asked.load(std::memory_order_relaxed);
  c.chunks_asked = s_->chunks_asked.load(std::memory_order_relaxed);
  return c;
}

std::unique_ptr<TraceIndex> TraceIndex::open(const std::string& trace, std::string& error,
                                             const BuildOptions& options, std::string* rebuilt_because) {
  std::string path = options.index_path.empty() ? default_index_path(trace) : options.index_path;
  std::string why;
  if (auto ix = load(trace, path, why, options.warm_bytes)) return ix;
  if (rebuilt_because) *rebuilt_because = why;
  BuildOptions o = options;
  o.index_path = path;
  return build(trace, error, o);
}

// ------------------------------------------------------------ whole trace

uint64_t TraceIndex::index_bytes() const {
  std::shared_lock lock(mu_);
  return s_->index_size ? s_->index_size : (s_->pages ? s_->pages->end() : 0);
}

TraceIndex::Parts TraceIndex::index_parts() const {
  std::shared_lock lock(mu_);
  Parts p;
  for (auto& [id, f] : s_->feedlets) {
    for (const Stream& st : f->streams)
      for (const Level& lv : st.levels)
        for (size_t i = 0; i < lv.pages.size(); ++i) p.node_pages[std::min<size_t>(size_t(st.info.kind), std::size(p.node_pages) - 1)] += lv.pages[i].bytes;
    for (size_t i = 0; i < f->chunks.size(); ++i) p.resume_points += f->chunks[i].resume_bytes;
  }
  for (size_t i = 0; i < s_->flow_blocks.size(); ++i) p.flow_blocks += s_->flow_blocks[i].bytes;
  return p;
}

uint64_t TraceIndex::events() const {
  std::shared_lock lock(mu_);
  uint64_t n = 0;
  for (auto& [id, f] : s_->feedlets) n += f->events;
  return n;
}

uint64_t TraceIndex::dropped() const {
  std::shared_lock lock(mu_);
  uint64_t n = 0;
  for (const Gap& g : s_->gaps) n += g.dropped;  // every chunk that follows drops has a gap
  return n;
}

std::pair<uint64_t, uint64_t> State::extent() const {
  uint64_t first = UINT64_MAX, last = 0;
  for (auto& [id, f] : feedlets) first = std::min(first, f->first_ts), last = std::max(last, f->last_ts);
  return {first == UINT64_MAX ? 0 : first, last};
}

uint64_t TraceIndex::first_ts() const {
  std::shared_lock lock(mu_);
  return s_->extent().first;
}

uint64_t TraceIndex::last_ts() const {
  std::shared_lock lock(mu_);
  return s_->extent().second;
}

std::vector<uint64_t> TraceIndex::events_per_type() const {
  std::shared_lock lock(mu_);
  std::vector<uint64_t> n(format::kMaxEventType + 1);
  for (auto& [id, f] : s_->feedlets)
    for (size_t t = 0; t < n.size(); ++t) n[t] += f->type_counts[t];
  return n;
}

std::vector<ChunkRecord> TraceIndex::chunks() const {
  std::shared_lock lock(mu_);
  return {s_->chunks.begin(), s_->chunks.end()};
}

size_t TraceIndex::chunk_count() const {
  std::shared_lock lock(mu_);
  return s_->chunks.size();
}

std::vector<trace::Damage> TraceIndex::damage() const {
  std::shared_lock lock(mu_);
  return s_->damage;
}

std::vector<trace::Loss> TraceIndex::losses() const {
  std::shared_lock lock(mu_);
  return s_->losses;
}

std::vector<Gap> TraceIndex::gaps() const {
  std::shared_lock lock(mu_);
  const State& s = *s_;
  const auto [first, last] = s.extent();
  std::vector<Gap> out(s.gaps.begin(), s.gaps.end());
  for (Gap& g : out) {
    if (g.flags & Gap::kFromStart) g.t0 = first;
    if (g.flags & Gap::kToEnd) g.t1 = last;
    g.flags = 0;
  }
  // Damaged bytes span from the latest chunk before them (of any feedlet)
  // to the first chunk after them; chunks lie in the table in trace order.
  const size_t n = s.chunks.size();
  for (const trace::Damage& d : s.damage) {
    size_t after = partition_index(s.chunks, 0, n, [&](const ChunkRecord& c) { return c.offset < d.offset; });
    const uint64_t t0 = std::max(first, after != n ? s.chunks[after].latest_before : s.latest_last_ts);
    after = partition_index(s.chunks, after, n, [&](const ChunkRecord& c) { return c.offset - d.offset < d.length; });
    out.push_back(Gap{Gap::kAllFeedlets, 0, t0, after != n ? std::max(t0, s.chunks[after].first_ts) : last, 0});
  }
  return out;
}

uint64_t TraceIndex::feedlet_events_of_type(uint32_t feedlet, uint16_t type) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  return f && type < f->type_counts.size() ? f->type_counts[type] : 0;
}

std::vector<FeedletSummary> TraceIndex::feedlets() const {
  std::shared_lock lock(mu_);
  std::vector<FeedletSummary> out;
  for (auto& [id, f] : s_->feedlets) {
    FeedletSummary fs;
    fs.id = id;
    auto info = catalog_.feedlets.find(id);
    if (info != catalog_.feedlets.end()) fs.tid = info->second.tid, fs.name = info->second.name;
    fs.events = f->events;
    fs.chunks = f->chunks.size();
    fs.dropped = f->dropped;
    fs.first_ts = f->first_ts;
    fs.counts = f->counts;
    fs.last_ts = f->last_ts;
    out.push_back(std::move(fs));
  }
  return out;
}

std::vector<StreamInfo> TraceIndex::streams() const {
  std::shared_lock lock(mu_);
  std::vector<StreamInfo> out;
  for (auto [f, i] : s_->stream_ids) out.push_back(s_->feedlets.at(f)->streams[i].info);
  return out;
}

int TraceIndex::find_stream(StreamKind kind, uint32_t feedlet, uint32_t key) const {
  std::shared_lock lock(mu_);
  const FeedletState* f = s_->feedlet(feedlet);
  if (!f) return -1;
  int local = f->find(stream_key(kind, key));
  if (local < 0) return -1;
  auto want = std::make_pair(feedlet, uint32_t(local));
  auto pos = std::lower_bound(s_->stream_ids.begin(), s_->stream_ids.end(), want);
  return pos != s_->stream_ids.end() && *pos == want
             ? int(pos - s_->stream_ids.begin())
             : -1;
}

int TraceIndex::find_stream(StreamKind kind, uint32_t feedlet, std::string_view name) const {
  std::vector<uint32_t> ids;  // a name may have been defined more than once
  {
    std::shared_lock lock(mu_);
    for (size_t id = 1; id < catalog_.strings.size(); ++id)
      if (catalog_.strings[id] == name) ids.push_back(uint32_t(id));
  }
  for (uint32_t id : ids)
    if (int s = find_stream(kind, feedlet, id); s >= 0) return s;
  return -1;
}

uint64_t TraceIndex::page_errors() const { return s_->page_errors.load(); }

uint64_t TraceIndex::checkpoint_count() const {
  std::shared_lock lock(mu_);
  return s_->grid_before.size();
}

}  // namespace tinescope::index
