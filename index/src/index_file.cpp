#include "index_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <span>
#include <system_error>
#include <thread>
#include <type_traits>

#include <xxhash.h>

#include "parallel_tasks.hpp"
#include "state.hpp"

namespace tinescope::index {

namespace {

struct Footer {  // the last 64 bytes of the file
  uint8_t magic[8];
  uint32_t version;
  uint32_t page_bytes;
  uint64_t dir_offset;
  uint64_t dir_size;
  uint64_t dir_checksum;   // XXH3-64 of the directory
  uint64_t trace_size;     // bytes of the trace indexed
  uint64_t trace_fingerprint;
  uint64_t footer_checksum;  // XXH3-64 of the 56 bytes before it
};
static_assert(sizeof(Footer) == 64);

// Reads a byte of each OS page of [p, p + n), so that its mapping's first
// touch is paid here, on another core than the one that reads it next.
constexpr uint64_t kTouchAlongside = 1 << 20;  // directory bytes worth a thread
void touch_pages(const uint8_t* p, uint64_t n) {
  uint8_t sum = 0;
  for (uint64_t i = 0; i < n; i += 4096) sum ^= static_cast<const volatile uint8_t*>(p)[i];
  static_cast<void>(sum);
}

// Reads with bounds checks: a damaged directory is an error, never a crash.
// Tables are not copied: they are read in place from the mapping.
struct In {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;
  // For the tables checked when first read: the mapping, where the tables
  // lie ([tables_begin, tables_end)), their checks, and the next free mark.
  const uint8_t* map = nullptr;
  uint64_t tables_begin = 0, tables_end = 0;
  const TableChecks* checks = nullptr;
  uint8_t* marks = nullptr;
  template <class T>
  T get() {
    T v{};
    if (size_t(end - p) < sizeof v) {
      ok = false;
      return v;
    }
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
  }
  void pad() {
    const size_t n = size_t(-reinterpret_cast<uintptr_t>(p) & 7);  // the directory starts at a multiple of 8
    if (n > size_t(end - p)) ok = false;
    if (ok) p += n;
  }
  template <class T>
  std::span<const T> inline_table() {
    const uint64_t n = get<uint64_t>();
    pad();
    if (!ok || n > uint64_t(end - p) / sizeof(T)) {
      ok = false;
      return {};
    }
    const T* at = reinterpret_cast<const T*>(p);
    p += n * sizeof(T);
    return {at, size_t(n)};
  }
  template <class T>
  void vec(Table<T>& t) {
    std::span<const T> v = inline_table<T>();
    t.view(v.data(), v.size());
  }
  template <class T>
  void vec(std::vector<T>& t) {
    std::span<const T> v = inline_table<T>();
    t.assign(v.begin(), v.end());
  }
  // A table among the tables: where it is and its blocks' checksums here.
  template <class T>
  void table(Table<T>& t, typename Table<T>::Valid valid = nullptr, uint64_t bound = 0) {
    const uint64_t n = get<uint64_t>();
    pad();
    const uint64_t at = get<uint64_t>();
    const uint64_t blocks = check_blocks(n);
    if (!ok || n > (tables_end - tables_begin) / sizeof(T) || at % 8 != 0 || at < tables_begin ||
        !fits_in(at, n * sizeof(T), tables_end) || blocks > uint64_t(end - p) / 8) {
      ok = false;
      return;
    }
    t.view(reinterpret_cast<const T*>(map + at), n);
    t.check(reinterpret_cast<const uint64_t*>(p), marks, checks, valid, bound);
    p += blocks * 8, marks += blocks;  // marks: a byte for each checksum of the directory, at most
  }
  std::string str() {
    uint64_t n = get<uint64_t>();
    if (!ok || n > uint64_t(end - p)) {
      ok = false;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(p), n);
    p += n;
    return s;
  }
};

struct LossRecord {
  uint32_t feedlet, pad;
  uint64_t first, count;
};

bool pwrite_all(int fd, const void* data, size_t n, uint64_t at) {
  const char* p = static_cast<const char*>(data);
  while (n) {
    ssize_t w = ::pwrite(fd, p, n, off_t(at));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w, n -= size_t(w), at += uint64_t(w);
  }
  return true;
}

// Writes the tables to the file as they are made, 64 KB at a time (large
// ones straight from memory), and keeps the directory, which only says where
// they are, in memory until the end. Made whole in a string first, the
// tables were the peak of indexing's memory: ~100 MB at 8*10^9 events, and up
// to twice that while the string grew.
class Out {
 public:
  Out(int fd, uint64_t tables_at) : fd_(fd), at_(tables_at) { buf_.reserve(kBuffer); }
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    head(&v, sizeof v);
  }
  // A table read whole at opening, in the directory: its count, then zeros
  // up to a multiple of 8 bytes (the directory starts at one in the file),
  // then its elements, so that a loaded index reads them in place.
  template <class T>
  void vec(std::span<const T> v) {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= 8);
    put(uint64_t(v.size()));
    pad_head();
    head(v.data(), v.size() * sizeof(T));
  }
  template <class T>
  void vec(const std::vector<T>& v) {
    vec(std::span<const T>(v));
  }
  template <class T>
  void vec(const Table<T>& v) {
    vec(std::span<const T>(v));
  }
  // A table checked block by block when it is first read (table.hpp): its
  // elements among the tables, before the directory, at a multiple of 8;
  // in the directory its count, zeros up to a multiple of 8, its offset in
  // the file and the XXH3-64 of each block.
  template <class T>
  void table(std::span<const T> v) {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= 8);
    static constexpr uint8_t kZeros[8] = {};
    bytes(kZeros, size_t(-(at_ + size()) & 7));
    put(uint64_t(v.size()));
    pad_head();
    put(uint64_t(at_ + size()));
    for (size_t b = 0; b < check_blocks(v.size()); ++b) {
      const size_t from = b << kCheckShift, n = std::min<size_t>(kCheckBlock, v.size() - from);
      put(table_block_checksum(v.data() + from, n * sizeof(T)));
    }
    bytes(v.data(), v.size() * sizeof(T));
  }
  template <class T>
  void table(const Table<T>& v) {
    table(std::span<const T>(v));
  }
  void str(const std::string& s) {
    put(uint64_t(s.size()));
    head(s.data(), s.size());
  }
  // Writes the rest of the tables, then the directory after them (at a
  // multiple of 8); false if a write failed.
  bool finish(uint64_t& dir_offset, uint64_t& dir_size, uint64_t& checksum) {
    flush();
    dir_offset = (at_ + written_ + 7) & ~uint64_t(7);
    dir_size = head_.size();
    checksum = format::checksum(head_.data(), head_.size());
    return ok_ && pwrite_all(fd_, head_.data(), head_.size(), dir_offset);
  }

 private:
  // Small enough that the tests' tables (a few hundred KB) take both
  // paths: through the buffer and straight from a table.
  static constexpr size_t kBuffer = 64 << 10;
  uint64_t size() const { return written_ + buf_.size(); }
  void head(const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    head_.insert(head_.end(), c, c + n);
  }
  void pad_head() { head_.resize((head_.size() + 7) & ~size_t(7)); }
  void bytes(const void* p, size_t n) {
    if (buf_.size() + n > kBuffer) flush();
    if (n >= kBuffer) return write(p, n);
    const auto* c = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), c, c + n);
  }
  void flush() {
    if (!buf_.empty()) write(buf_.data(), buf_.size());
    buf_.clear();
  }
  void write(const void* p, size_t n) {
    ok_ &= pwrite_all(fd_, p, n, at_ + written_);
    written_ += n;
  }
  int fd_;
  uint64_t at_, written_ = 0;
  bool ok_ = true;
  std::vector<uint8_t> buf_, head_;
};

// What the queries assume of a loaded table's elements, checked with each
// block (table.hpp). `before` is the element before the block, if any.
bool valid_chunks(const ChunkRecord* p, size_t, size_t n, const ChunkRecord*, const TableChecks& c, uint64_t) {
  bool ok = true;
  for (size_t i = 0; i < n; ++i) ok &= fits_in(p[i].offset, p[i].size, c.trace_size);
  return ok;
}
// A feedlet's chunks start at event 0 and go up (queries step through
// them), name chunks that exist, and their resume points lie among the pages.
bool valid_feedlet_chunks(const FeedletChunk* p, size_t, size_t n, const FeedletChunk* before, const TableChecks& c,
                          uint64_t events) {
  bool ok = before || n == 0 || p[0].first_event == 0;
  for (size_t i = 0; i < n; ++i) {
    const FeedletChunk& k = p[i];
    const FeedletChunk* prev = i ? &p[i - 1] : before;
    ok &= k.chunk < c.chunk_count && k.first_event < events && (!prev || prev->first_event < k.first_event) &&
          (k.resume_bytes == 0 || (k.resume_at >= kPageBytes && fits_in(k.resume_at, k.resume_bytes, c.tables_begin)));
  }
  return ok;
}
// A level's node pages: each of 1 to kNodesPerPage nodes, no larger than
// that many packed, lying among the pages, in bucket order (a query sums
// the counts of the pages a window meets to reserve its answer, and walks
// them until one starts past the window).
bool valid_node_pages(const PageRef* p, size_t, size_t n, const PageRef* before, const TableChecks& c, uint64_t) {
  bool ok = true;
  for (size_t i = 0; i < n; ++i) {
    const PageRef& r = p[i];
    const PageRef* prev = i ? &p[i - 1] : before;
    ok &= r.count >= 1 && r.count <= kNodesPerPage && r.bytes <= kNodesPerPage * kMaxPackedNode &&
          r.offset >= kPageBytes && fits_in(r.offset, r.bytes, c.tables_begin) &&
          (!prev || prev->first_bucket < r.first_bucket);
  }
  return ok;
}
bool valid_flow_blocks(const FlowBlock* p, size_t, size_t n, const FlowBlock*, const TableChecks& c, uint64_t) {
  bool ok = true;
  for (size_t i = 0; i < n; ++i)
    ok &= p[i].offset >= kPageBytes && fits_in(p[i].offset, p[i].bytes, c.tables_begin) && p[i].count <= kFlowsPerBlock;
  return ok;
}
// Checkpoints: events before each never go down; each feedlet's position
// is within its events (column i % feedlets of row i / feedlets).
bool valid_grid_before(const uint64_t* p, size_t, size_t n, const uint64_t* before, const TableChecks&, uint64_t) {
  bool ok = !before || n == 0 || *before <= p[0];
  for (size_t i = 1; i < n; ++i) ok &= p[i - 1] <= p[i];
  return ok;
}
bool valid_grid_positions(const uint64_t* p, size_t first, size_t n, const uint64_t*, const TableChecks& c, uint64_t) {
  const size_t columns = c.column_events.size();
  bool ok = columns > 0;
  for (size_t i = 0; ok && i < n; ++i) ok &= p[i] <= c.column_events[(first + i) % columns];
  return ok;
}

}  // namespace

uint64_t trace_fingerprint(const uint8_t* data, uint64_t size) {
  const uint64_t k = std::min<uint64_t>(size, 64 << 10);
  // Both ends asked for at once: the trace's mapping reads a page a fault.
  ask_for_read(data, k), ask_for_read(data + size - k, k);
  uint64_t a = format::checksum(data, k);
  uint64_t b = format::checksum(data + size - k, k);
  return a ^ (b << 1 | b >> 63) ^ size;
}

// Maps the pages of a range of the index's mapping about to be read in one
// system call rather than one page fault each: on a virtual machine the
// faults were most of the time to open an index of 2*10^9 events. Those not
// in the page cache are asked for first, all at once: the mapping reads no
// more than the page a fault needs (map_pages).
#ifndef MADV_POPULATE_READ  // Linux 5.14; older kernels refuse the advice, which changes nothing
#define MADV_POPULATE_READ 22
#endif
namespace {
// The whole OS pages that [data, data + bytes) touches.
std::pair<void*, size_t> os_pages(const void* data, size_t bytes) {
  constexpr uintptr_t kPage = 4096;
  const uintptr_t a = reinterpret_cast<uintptr_t>(data) & ~(kPage - 1);
  const uintptr_t b = (reinterpret_cast<uintptr_t>(data) + bytes + kPage - 1) & ~(kPage - 1);
  return {reinterpret_cast<void*>(a), b > a ? b - a : 0};
}
}  // namespace

// Hints: failure changes nothing.
void ask_for_read(const void* data, size_t bytes) {
  const auto [p, n] = os_pages(data, bytes);
  if (n) ::madvise(p, n, MADV_WILLNEED);
}
void populate_read(const void* data, size_t bytes) {
  const auto [p, n] = os_pages(data, bytes);
  if (n) ::madvise(p, n, MADV_WILLNEED), ::madvise(p, n, MADV_POPULATE_READ);
}

uint64_t table_block_checksum(const void* p, size_t bytes) { return XXH3_64bits(p, bytes); }

bool IndexFile::save(TraceIndex& ix, const std::string& path, std::string& error) {
  State& s = *ix.s_;
  // The flows go after the pages, packed in blocks (the table is sorted now),
  // a batch of parts at a time (the table may be larger than memory), the
  // parts packed side by side on the cores: packing alone was 0.35 s of the
  // serial end of indexing at 2*10^9 events.
  std::vector<FlowBlock> blocks;
  uint64_t flows_end = s.pages->end();
  {
    constexpr size_t kPartFlows = 64 * kFlowsPerBlock, kParts = 8;
    struct Part {
      std::vector<uint8_t> bytes;
      size_t used = 0;
      std::vector<FlowBlock> blocks;  // offsets within bytes
    };
    std::vector<Part> parts(kParts);
    for (size_t first = 0; first < s.flow_count; first += kParts * kPartFlows) {
      const size_t count = std::min(kParts, (s.flow_count - first + kPartFlows - 1) / kPartFlows);
      ix.tasks_->run(count, [&](size_t k) {
        Part& p = parts[k];
        p.used = 0, p.blocks.clear();
        const size_t from = first + k * kPartFlows, to = std::min(s.flow_count, from + kPartFlows);
        const size_t room = (to - from) * kMaxPackedFlow + (kPartFlows / kFlowsPerBlock) * kFlowHeaderBytes;
        if (p.bytes.size() < room) p.bytes.resize(room);
        for (size_t i = from; i < to; i += kFlowsPerBlock) {
          FlowBlock b;
          b.bytes = uint32_t(pack_flows(s.flows + i, uint32_t(std::min<size_t>(kFlowsPerBlock, to - i)),
                                        p.bytes.data() + p.used, b));
          b.offset = p.used;
          b.checksum = uint32_t(format::checksum(p.bytes.data() + p.used, b.bytes));
          p.blocks.push_back(b);
          p.used += b.bytes;
        }
      });
      for (size_t k = 0; k < count; ++k) {
        if (!pwrite_all(s.index_fd, parts[k].bytes.data(), parts[k].used, flows_end)) {
          error = path + ": cannot write the index: " + std::strerror(errno);
          return false;
        }
        for (FlowBlock b : parts[k].blocks) b.offset += flows_end, blocks.push_back(b);
        flows_end += parts[k].used;
      }
    }
  }
  // Then the tables that grow with the trace, after them, and the directory
  // that says where they are (all aligned: tables are read in place).
  const uint64_t tables_at = (flows_end + 7) & ~uint64_t(7);
  Footer f{};
  Out o(s.index_fd, tables_at);
  o.put(uint64_t(ix.covered_));
  o.put(tables_at);
  o.table(s.chunks);
  std::vector<uint32_t> metadata;  // the catalog's chunks, read again at opening
  for (size_t c = 0; c < s.chunks.size(); ++c)
    if (s.chunks[c].feedlet == format::kMetadataFeedlet) metadata.push_back(uint32_t(c));
  o.vec(metadata);
  o.put(uint32_t(s.feedlets.size()));
  for (auto& [id, fs] : s.feedlets) {
    o.put(id);
    o.put(fs->events), o.put(fs->dropped), o.put(fs->first_ts), o.put(fs->last_ts);
    o.table(fs->chunks);
    o.table(fs->pool);
    o.vec(fs->final_open);
    o.vec(fs->type_counts);
    o.put(fs->counts);
    o.put(uint32_t(fs->streams.size()));
    for (const Stream& st : fs->streams) {
      o.put(st.info);
      o.put(uint32_t(st.levels.size()));
      for (const Level& l : st.levels) o.table(l.pages);
    }
  }
  o.put(uint64_t(s.damage.size()));
  for (const trace::Damage& d : s.damage) o.put(d.offset), o.put(d.length), o.str(d.reason);
  std::vector<LossRecord> losses;
  for (const trace::Loss& l : s.losses) losses.push_back({l.feedlet, 0, l.first_sequence, l.count});
  o.vec(losses);
  o.table(s.gaps);
  o.put(s.latest_last_ts);
  o.put(uint64_t(s.flow_count));
  o.table(std::span<const FlowBlock>(blocks));
  FlowBlockIndex block_index;
  block_index.build(blocks);
  o.table(block_index.reach), o.table(block_index.floor);
  o.put(s.grid_shift), o.put(s.grid_first);
  o.vec(s.grid_feedlets), o.table(s.grid_before), o.table(s.grid_positions);

  std::memcpy(f.magic, kIndexMagic, 8);
  f.version = kIndexVersion;
  f.page_bytes = kPageBytes;
  const bool dir_written = o.finish(f.dir_offset, f.dir_size, f.dir_checksum);
  f.trace_size = ix.covered_;
  f.trace_fingerprint = trace_fingerprint(s.trace_map, ix.covered_);
  f.footer_checksum = format::checksum(&f, offsetof(Footer, footer_checksum));
  uint8_t head[kPageBytes] = {};
  std::memcpy(head, kIndexMagic, 8);
  std::memcpy(head + 8, &f.version, 4);
  std::memcpy(head + 12, &f.page_bytes, 4);
  // Directory and footer first, then fsync, then (by the caller) rename: a
  // killed indexer leaves a temporary file, never a half-written index.
  if (!dir_written ||
      !pwrite_all(s.index_fd, &f, sizeof f, f.dir_offset + f.dir_size) ||
      !pwrite_all(s.index_fd, head, sizeof head, 0) || ::fdatasync(s.index_fd) != 0) {
    error = path + ": cannot write the index: " + std::strerror(errno);
    return false;
  }
  s.index_size = f.dir_offset + f.dir_size + sizeof f;
  // From now on the flows are read from the file (the builder's table goes).
  s.flows = nullptr;
  s.flow_blocks.vec().assign(blocks);
  s.flow_index = std::move(block_index);
  return true;
}

bool IndexFile::map_pages(TraceIndex& ix, std::string& error) {
  State& s = *ix.s_;
  struct stat st;
  if (::fstat(s.index_fd, &st) != 0) {
    error = ix.index_path_ + ": " + std::strerror(errno);
    return false;
  }
  void* m = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_SHARED, s.index_fd, 0);
  if (m == MAP_FAILED) {
    error = ix.index_path_ + ": cannot map: " + std::strerror(errno);
    return false;
  }
  // A query reads a few node pages of each stream, scattered over the file:
  // with the default advice, each page fault read the device's read-ahead
  // window around the page (8 MB on this VM's disk) before it went on, most
  // of it other streams' pages. Read in bulk by the warmer (IndexWarmer,
  // which asks for its ranges itself), the file needs no read-around.
  ::madvise(m, size_t(st.st_size), MADV_RANDOM);  // a hint: failure changes nothing
  s.index_map = static_cast<const uint8_t*>(m);
  s.index_map_size = size_t(st.st_size);
  s.index_size = uint64_t(st.st_size);
  return true;
}

namespace {
struct NoVisitor : trace::Visitor {};
}  // namespace

bool IndexFile::load(TraceIndex& ix, std::string& error) {
  State& s = *ix.s_;
  const std::string& path = ix.index_path_;
  s.index_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (s.index_fd < 0) {
    error = path + ": no index (" + std::strerror(errno) + ")";
    return false;
  }
  Footer f;
  struct stat st;
  if (::fstat(s.index_fd, &st) != 0 || uint64_t(st.st_size) < kPageBytes + sizeof f ||
      ::pread(s.index_fd, &f, sizeof f, st.st_size - off_t(sizeof f)) != ssize_t(sizeof f)) {
    error = path + ": index too short (a killed indexer?)";
    return false;
  }
  if (std::memcmp(f.magic, kIndexMagic, 8) != 0 ||
      !format::checksum_matches(format::checksum(&f, offsetof(Footer, footer_checksum)), f.footer_checksum)) {
    error = path + ": damaged index footer at offset " + std::to_string(st.st_size - off_t(sizeof f));
    return false;
  }
  if (f.version != kIndexVersion || f.page_bytes != kPageBytes) {
    error = path + ": index version " + std::to_string(f.version) + ", this tinescope writes " +
            std::to_string(kIndexVersion);
    return false;
  }
  const uint64_t before_footer = uint64_t(st.st_size) - sizeof f;  // st_size >= sizeof f: the footer was read
  if (f.dir_offset > before_footer || f.dir_size != before_footer - f.dir_offset || f.dir_offset % 8 != 0) {
    error = path + ": index directory out of place";
    return false;
  }
  if (f.trace_size != s.trace_map_size || trace_fingerprint(s.trace_map, s.trace_map_size) != f.trace_fingerprint) {
    error = path + ": stale index (made for " + std::to_string(f.trace_size) + " bytes of trace, it has " +
            std::to_string(s.trace_map_size) + " now, or other contents)";
    return false;
  }
  if (!map_pages(ix, error)) return false;
  const uint8_t* dir = s.index_map + f.dir_offset;
  populate_read(dir, f.dir_size);  // read whole below
  // The first read of each page of a mapping costs ~2 us on this VM even
  // once it is populated, where the page cache holds the file in small pages
  // (an index written since the machine started: XXH3 of the 25 MB
  // directory at 2*10^9 events took 10.5 ms the first time, 1.9 ms again): a
  // helper touches the second half of the directory while the checksum reads
  // the first (opening 12.8 -> 9.1 ms; at 8*10^9 events 33-44 -> 24 ms).
  std::thread toucher;
  if (f.dir_size >= kTouchAlongside) {
    try {
      toucher = std::thread([dir, n = f.dir_size] { touch_pages(dir + n / 2, n - n / 2); });
    } catch (const std::system_error&) {  // no thread to be had: the checksum touches them all
    }
  }
  const bool dir_ok = format::checksum_matches(format::checksum(dir, f.dir_size), f.dir_checksum);
  if (toucher.joinable()) toucher.join();
  if (!dir_ok) {
    error = path + ": damaged index directory at offset " + std::to_string(f.dir_offset);
    return false;
  }

  In in{dir, dir + f.dir_size};
  ix.covered_ = in.get<uint64_t>();
  in.map = s.index_map;
  in.tables_begin = in.get<uint64_t>(), in.tables_end = f.dir_offset;
  in.ok &= in.tables_begin >= kPageBytes && in.tables_begin <= in.tables_end;
  s.tables_begin = in.tables_begin, s.tables_end = in.tables_end;
  // A mark for each block of every table: at most one for each checksum
  // in the directory. From calloc, whose large blocks are fresh zero pages.
  s.table_marks.reset(static_cast<uint8_t*>(std::calloc(f.dir_size / 8 + 1, 1)));
  if (!s.table_marks) {
    error = path + ": out of memory for the table marks";
    return false;
  }
  TableChecks& checks = s.table_checks;
  checks.trace_size = s.trace_map_size, checks.tables_begin = in.tables_begin, checks.errors = &s.page_errors;
  in.checks = &checks, in.marks = s.table_marks.get();
  size_t pages = 0;  // of every level
  in.table(s.chunks, valid_chunks);
  checks.chunk_count = s.chunks.size();
  std::vector<uint32_t> metadata;  // the catalog's chunks, below
  in.vec(metadata);
  uint32_t nf = in.get<uint32_t>();
  for (uint32_t i = 0; in.ok && i < nf; ++i) {
    auto fs = std::make_unique<FeedletState>();
    fs->id = in.get<uint32_t>();
    fs->events = in.get<uint64_t>(), fs->dropped = in.get<uint64_t>();
    fs->first_ts = in.get<uint64_t>(), fs->last_ts = in.get<uint64_t>();
    in.table(fs->chunks, valid_feedlet_chunks, fs->events);
    in.ok &= fs->events == 0 || !fs->chunks.empty();
    in.table(fs->pool);
    in.vec(fs->final_open);
    in.vec(fs->type_counts);
    fs->counts = in.get<WalkCounts>();
    uint32_t ns = in.get<uint32_t>();
    if (in.ok && ns <= uint64_t(in.end - in.p) / sizeof(StreamInfo)) fs->streams.reserve(ns);  // (not grown: moves)
    for (uint32_t k = 0; in.ok && k < ns; ++k) {
      Stream st;
      st.info = in.get<StreamInfo>();
      in.ok &= st.info.kind >= StreamKind::Interval && st.info.kind <= StreamKind::Hold &&
               (st.info.kind != StreamKind::Depth || st.info.key < kDepthStreams) &&
               (st.info.kind != StreamKind::Span || st.info.key == 0);
      uint32_t nl = in.get<uint32_t>();
      if (nl > 64 || st.info.leaf_shift + uint64_t(nl) > kMaxShift + 1) in.ok = false;  // shifts stay < 64
      if (in.ok) st.levels.reserve(nl);
      for (uint32_t l = 0; in.ok && l < nl; ++l) {
        Level& lv = st.levels.emplace_back();
        in.table(lv.pages, valid_node_pages);
        pages += lv.pages.size();
      }
      fs->insert(stream_key(st.info.kind, st.info.key), k);
      fs->streams.push_back(std::move(st));
    }
    if (fs->type_counts.size() != format::kMaxEventType + 1) in.ok = false;
    s.feedlets[fs->id] = std::move(fs);
  }
  uint64_t nd = in.get<uint64_t>();
  for (uint64_t i = 0; in.ok && i < nd; ++i) {
    trace::Damage d;
    d.offset = in.get<uint64_t>(), d.length = in.get<uint64_t>(), d.reason = in.str();
    s.damage.push_back(std::move(d));
  }
  std::vector<LossRecord> losses;
  in.vec(losses);
  for (const LossRecord& l : losses) s.losses.push_back(trace::Loss{l.feedlet, l.first, l.count});
  in.table(s.gaps);
  s.latest_last_ts = in.get<uint64_t>();
  s.flow_count = in.get<uint64_t>();
  in.table(s.flow_blocks, valid_flow_blocks);
  in.table(s.flow_index.reach), in.table(s.flow_index.floor);
  in.ok &= s.flow_index.reach.size() == s.flow_blocks.size() && s.flow_index.floor.size() == s.flow_blocks.size() &&
           s.flow_count <= s.flow_blocks.size() * kFlowsPerBlock;
  s.grid_shift = in.get<uint32_t>(), s.grid_first = in.get<uint64_t>();
  in.vec(s.grid_feedlets), in.table(s.grid_before, valid_grid_before), in.table(s.grid_positions, valid_grid_positions);
  if (!in.ok || in.p != in.end || s.grid_positions.size() != s.grid_before.size() * s.grid_feedlets.size()) {
    error = path + ": malformed index directory";
    return false;
  }
  // What the queries assume of the tables is checked with their blocks
  // (valid_chunks...), and of the directory here: checkpoints name feedlets
  // that exist (their positions are checked against these counts).
  for (uint32_t c : metadata) {
    if (c >= s.chunks.size()) {
      error = path + ": malformed index directory (metadata chunk " + std::to_string(c) + " past the " +
              std::to_string(s.chunks.size()) + " chunks)";
      return false;
    }
  }
  s.grid_events.resize(s.grid_feedlets.size());
  for (size_t c = 0; c < s.grid_feedlets.size(); ++c) {
    const FeedletState* fs = s.feedlet(s.grid_feedlets[c]);
    if (!fs) {
      error = path + ": malformed index directory (a checkpoint names feedlet " + std::to_string(s.grid_feedlets[c]) +
              ", which the index does not have)";
      return false;
    }
    s.grid_events[c] = fs->events;
  }
  checks.column_events = s.grid_events;
  s.table_blocks = size_t(in.marks - s.table_marks.get());
  for (auto& [id, fs] : s.feedlets)
    for (uint32_t k = 0; k < fs->streams.size(); ++k) s.stream_ids.emplace_back(id, k);
  s.verified_pages.reset(static_cast<uint8_t*>(std::calloc(std::max<size_t>(pages, 1), 1)));  // none checked yet
  if (!s.verified_pages) {
    error = path + ": out of memory for " + std::to_string(pages) + " page marks";
    return false;
  }
  s.verified_count = pages;
  uint8_t* verified = s.verified_pages.get();
  for (auto& [id, fs] : s.feedlets)
    for (Stream& st : fs->streams)
      for (Level& lv : st.levels) lv.verified = verified, verified += lv.pages.size();

  // The catalog (names, clock, schema) comes again from the trace's header
  // and metadata chunks, which are few and small.
  struct HeaderOnly : trace::Visitor {
    trace::Header header;
    void on_header(const trace::Header& h) override { header = h; }
  } v;
  trace::Parser parser(v, {.decode_data = false});
  // Present the header as the builder saw it: its stated size when that is
  // possible, else just the fixed part (no magic, an impossible size: the
  // parser calls it damaged and goes on); cut short by the end of the file
  // (even before the fixed part ends), with eof, so it reads as damaged too.
  // The chunks after it still count.
  uint64_t header_size = s.trace_map_size;
  if (s.trace_map_size >= format::kFileHeaderFixed) {
    const uint32_t stated = format::load_le<uint32_t>(s.trace_map + 12);
    const bool plausible = std::memcmp(s.trace_map, format::kFileMagic, 8) == 0 &&
                           stated >= format::kFileHeaderFixed + 8 && stated <= format::kMaxFileHeader;
    header_size = std::min<uint64_t>(plausible ? stated : format::kFileHeaderFixed, s.trace_map_size);
  }
  // All of it asked for at once (the trace's mapping reads a page a fault).
  ask_for_read(s.trace_map, header_size);
  for (uint32_t c : metadata)
    if (s.chunks.readable(c)) ask_for_read(s.trace_map + s.chunks[c].offset, s.chunks[c].size);  // (in the trace)
  parser.parse(s.trace_map, header_size, 0, header_size >= s.trace_map_size);
  for (uint32_t c : metadata) {
    if (!s.chunks.readable(c)) {
      error = path + ": damaged index table (the chunk index) at offset " +
              std::to_string(static_cast<const uint8_t*>(s.chunks.block_address(c)) - s.index_map);
      return false;
    }
    const ChunkRecord& r = s.chunks[c];
    parser.parse(s.trace_map + r.offset, r.size, r.offset, false);
  }
  if (!parser.header_done()) {
    error = path + ": the trace's header does not read: " + parser.error();
    return false;
  }
  ix.header_ = v.header;
  ix.catalog_ = parser.catalog();
  s.layouts = std::make_unique<Layouts>(v.header.schema);
  return true;
}

}  // namespace tinescope::index
