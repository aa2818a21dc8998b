#include "collector.hpp"

#include "tinescope/tinescope.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "raw_record.hpp"
#include "registry.hpp"
#include "symbols.hpp"

namespace tinescope::rec {

using namespace format;

constexpr uint64_t kCalibrationPeriodNs = 1'000'000'000;
constexpr uint64_t kIdleSleepUs = 500;
constexpr uint64_t kMaxDrainBytes = 4u << 20;  // per buffer per pass, so one thread cannot starve the rest

// How much a ring should hold before the collector drains it (or it waits a
// quarter of the flush interval): a quarter of the ring, at most 256 KiB.
static uint64_t batch_bytes(const ThreadBuffer& b) { return std::min<uint64_t>(b.capacity / 4, 256u << 10); }

Collector::Collector(CollectorOptions options) : opt_(std::move(options)) {
  meta_.feedlet = kMetadataFeedlet;
}

Collector::~Collector() { stop(); }

// A small /proc file, or "" if it cannot be read (a thread that has exited
// is gone from /proc/self/task: reading its comm fails with ESRCH).
static std::string read_file_string(const char* path) {
  std::string out;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, size_t(n));
  ::close(fd);
  return out;
}

std::string Collector::header_bytes() const {
  HeaderInfo info;
  info.clock.source = uint8_t(g_use_tsc ? ClockSource::Tsc : ClockSource::Monotonic);
  info.clock.ticks_per_ns = opt_.clock.ticks_per_ns;
  info.clock.ref_ticks = opt_.clock.ref_ticks;
  info.clock.ref_mono_ns = opt_.clock.ref_mono_ns;
  info.clock.ref_real_ns = opt_.clock.ref_real_ns;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  info.host = host;
  info.pid = uint32_t(getpid());
  std::string comm = read_file_string("/proc/self/comm");
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  info.process_name = comm;
  std::string cmdline = read_file_string("/proc/self/cmdline");
  for (size_t i = 0; i < cmdline.size();) {
    size_t end = cmdline.find('\0', i);
    if (end == std::string::npos) end = cmdline.size();
    info.cmdline.push_back(cmdline.substr(i, end - i));
    i = end + 1;
  }
  info.recorder = "tinescope recorder 0.1";
  return build_file_header(info);
}

bool Collector::start(std::string& error) {
  if (!opt_.file_path.empty()) {
    file_ = std::make_unique<FileSink>();
    if (!file_->open(opt_.file_path, opt_.overwrite, error)) return false;
  }
  if (!opt_.live_address.empty()) {
    live_ = std::make_unique<LiveServer>();
    if (!live_->listen(opt_.live_address, error)) return false;
  }
  const std::string header = header_bytes();
  if (file_) file_->append(reinterpret_cast<const uint8_t*>(header.data()), header.size(), 0);
  meta_frames_.push_back(header);

  // Threads that were recording in an earlier session continue as new
  // feedlets; whatever their rings still hold from before is skipped.
  for (ThreadBuffer* b = registry().buffers.load(std::memory_order_acquire); b; b = b->next) {
    BufferState s = b->state.load(std::memory_order_acquire);
    uint64_t head = b->head.load(std::memory_order_acquire);
    b->tail.store(head, std::memory_order_release);
    const uint64_t generation = b->generation.load(std::memory_order_acquire);
    if (s == BufferState::Exited) {
      b->retired_generation = generation;
      b->state.store(BufferState::Free, std::memory_order_release);
    } else if (s == BufferState::Active && generation != b->retired_generation) {
      Feedlet& f = feedlet_for(*b, generation);
      f.pos = head;
      f.drops_seen = b->dropped_total.load(std::memory_order_relaxed);
    }
  }
  emit_calibration();
  thread_ = std::thread([this] { run(); });
  return true;
}

void Collector::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_release);
  thread_.join();
}

void Collector::stats(ts_stats& out) const {
  out.events_recorded = events_recorded_.load(std::memory_order_relaxed);
  out.events_dropped = events_dropped_.load(std::memory_order_relaxed);
  out.chunks_written = chunks_written_.load(std::memory_order_relaxed);
  out.events_lost_io = events_lost_io_.load(std::memory_order_relaxed);
  out.bytes_written = bytes_written_.load(std::memory_order_relaxed);
  out.live_clients = live_clients_.load(std::memory_order_relaxed);
  out.live_chunks_dropped = live_chunks_dropped_.load(std::memory_order_relaxed);
}

void Collector::run() {
  while (!stop_.load(std::memory_order_acquire)) {
    bool busy = poll(false);
    if (!busy) usleep(kIdleSleepUs);
  }
  poll(true);
  emit_calibration();
  publish(meta_, 0);
  flush_sinks();
  if (live_) live_->drain(2'000'000'000);
}

// One pass over every ring. Returns whether there was work.
bool Collector::poll(bool final) {
  sync_user_types();
  bool busy = false;
  uint64_t now = mono_ns();
  for (ThreadBuffer* b = registry().buffers.load(std::memory_order_acquire); b; b = b->next) {
    BufferState state = b->state.load(std::memory_order_acquire);
    if (state == BufferState::Free) continue;
    // head before generation: a new owner bumps the generation before its first commit.
    uint64_t head = b->head.load(std::memory_order_acquire);
    const uint64_t generation = b->generation.load(std::memory_order_acquire);
    // A buffer being taken by a new thread that has not bumped the generation
    // yet (its tid may be half written): no feedlet until it has. Without this
    // the collector declared an empty feedlet named after the new thread.
    if (generation == b->retired_generation) continue;
    Feedlet& f = feedlet_for(*b, generation);
    if (!final && state == BufferState::Active && head != f.pos && head - f.pos < batch_bytes(*b)) {
      // Let a little accumulate: a collector that chases the producer's
      // write position steals its cache lines and doubles the cost of an event.
      if (f.waiting_since_ns == 0) f.waiting_since_ns = now;
      if (now - f.waiting_since_ns < opt_.flush_interval_ns / 4) continue;
    }
    f.waiting_since_ns = 0;
    busy |= head != f.pos;
    if (head - f.pos > b->capacity / 2) pace_.behind();  // half full when reached: drops are near
    drain(*b, f, final || state == BufferState::Exited);
    if (f.pos != head) busy = true;  // drained only part of it this pass

    if ((final || state == BufferState::Exited) && f.pos == head) {
      uint64_t total = b->dropped_total.load(std::memory_order_relaxed);
      if (total != f.drops_seen) {
        // Drops after its last recorded event: a feedlet_end where the
        // thread ended (or the recording, for one still running), in a chunk
        // of its own that counts them, gives them an end. Readers cut what
        // the thread had open there, as after any drop, instead of leaving
        // it open to the trace's end.
        if (!f.chunk.empty()) publish(f.chunk, 0);
        const uint64_t exited = b->exit_ticks.load(std::memory_order_relaxed);
        f.chunk.end(f.chunk.begin(kFeedletEnd, state == BufferState::Exited && exited ? exited : read_ticks()));
      }
      f.chunk.pending_drops += total - f.drops_seen;
      events_dropped_ += total - f.drops_seen;
      f.drops_seen = total;
      publish(f.chunk, kChunkFeedletEnd);
      if (state == BufferState::Exited) {
        feedlets_.erase(b);
        b->retired_generation = generation;
        b->state.store(BufferState::Free, std::memory_order_release);
      }
    }
  }

  now = mono_ns();
  for (auto& [b, f] : feedlets_)
    if (!f.chunk.empty() && now - f.chunk.opened_at_ns >= opt_.flush_interval_ns)
      publish(f.chunk, kChunkPartial);
  if (!meta_.empty() && now - meta_.opened_at_ns >= opt_.flush_interval_ns) publish(meta_, 0);
  if (now - last_calibration_ns_ >= kCalibrationPeriodNs) emit_calibration();

  flush_sinks();
  return busy;
}

void Collector::flush_sinks() {
  if (file_) {
    file_->flush();
    events_lost_io_.store(file_->events_lost(), std::memory_order_relaxed);
    bytes_written_.store(file_->bytes_written(), std::memory_order_relaxed);
  }
  if (live_) {
    std::vector<const std::string*> greeting;
    for (const std::string& s : meta_frames_) greeting.push_back(&s);
    live_->accept_clients(greeting);
    live_->pump();
    live_clients_.store(live_->clients(), std::memory_order_relaxed);
    live_chunks_dropped_.store(live_->chunks_dropped(), std::memory_order_relaxed);
  }
}

Collector::Feedlet& Collector::feedlet_for(ThreadBuffer& b, uint64_t generation) {
  auto [it, fresh] = feedlets_.try_emplace(&b);
  Feedlet& f = it->second;
  if (!fresh && f.generation == generation) return f;
  if (!fresh) publish(f.chunk, kChunkFeedletEnd);  // the old owner is gone
  f = Feedlet{};
  f.generation = generation;
  f.pos = b.tail.load(std::memory_order_relaxed);
  f.chunk.feedlet = next_feedlet_++;

  // Name the feedlet after the OS thread; ts_thread_name() may rename it later.
  const uint32_t tid = b.tid.load(std::memory_order_relaxed);
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
  std::string comm = read_file_string(path);
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  if (comm.empty()) {  // gone already: its name as it kept it
    const uint64_t words[2] = {b.name[0].load(std::memory_order_relaxed), b.name[1].load(std::memory_order_relaxed)};
    char name[17] = {};
    std::memcpy(name, words, 16);
    comm = name;
  }
  f.tid = tid;
  const uint64_t info[] = {f.chunk.feedlet, tid, text_id(comm)};
  put_metadata(kFeedletInfo, read_ticks(), info);
  return f;
}

void Collector::drain(ThreadBuffer& b, Feedlet& f, bool final) {
  const uint64_t head = b.head.load(std::memory_order_acquire);
  const uint64_t limit = final ? head : std::min(head, f.pos + kMaxDrainBytes);
  uint64_t pos = f.pos;
  // (Read once: they share a cache line with what the producer writes at
  // every event, and read a record at a time, that line went back and forth
  // between the two cores: an event cost the application twice as much.)
  const uint8_t* const data = b.data;
  const uint64_t mask = b.mask;
  while (pos < limit) {
    const uint64_t* rec = reinterpret_cast<const uint64_t*>(data + (pos & mask));
    uint32_t words = raw_words(rec[1]);
    if (raw_kind(rec[1]) == kRawDrop) {
      // Drops happened here: cut the chunk so the count lands exactly between
      // the events before and after them.
      uint64_t cumulative = rec[2];
      pace_.behind();
      if (!f.chunk.empty()) publish(f.chunk, 0);
      f.chunk.pending_drops += cumulative - f.drops_seen;
      events_dropped_ += cumulative - f.drops_seen;
      f.drops_seen = cumulative;
    } else {
      encode(f, rec);
    }
    pos += uint64_t(words) * 8;
  }
  f.pos = pos;
  b.tail.store(pos, std::memory_order_release);
}

// Raw record → compact event. Layouts are in raw_record.hpp.
void Collector::encode(Feedlet& f, const uint64_t* rec) {
  ChunkBuilder& c = f.chunk;
  const uint64_t ts = rec[0];
  const uint32_t kind = raw_kind(rec[1]);
  const uint64_t low = raw_low(rec[1]);
  auto inline_text = [](const uint64_t* at, uint64_t len) {
    return std::string_view(reinterpret_cast<const char*>(at), len);
  };
  uint8_t* p;
  switch (kind) {
    case kIntervalBegin:
    case kIntervalEnd:
    case kInstant: {
      uint32_t name = name_id(reinterpret_cast<const char*>(low));
      // (Interned before begin(), as names are; 0: no type left for `.cat`.)
      const uint32_t cat = raw_words(rec[1]) == 3 && kind != kIntervalEnd ? category_id(rec[2]) : 0;
      const bool categorised = cat != 0;
      p = c.begin(uint16_t(kind), ts);
      p = ChunkBuilder::put_u64(p, name);
      if (!categorised) break;
      // Its category: an argument event (docs/FORMAT.md, "Arguments") in the
      // same chunk, right after it.
      c.end(p);
      if (c.events() == 1) c.opened_at_ns = mono_ns();
      uint8_t field[kMaxVarint];
      p = c.begin(category_type_, ts);
      p = ChunkBuilder::put_bytes(p, field, size_t(ChunkBuilder::put_u64(field, cat) - field));  // self-sized
      break;
    }
    case kFuncEnter:
    case kFuncUnwind:
    case kFuncExit: {
      uint32_t fn = function_id(low);
      if (fn == 0) return;  // excluded by TINESCOPE_FUNC_EXCLUDE
      p = c.begin(uint16_t(kind), ts);
      p = ChunkBuilder::put_u64(p, fn);
      break;
    }
    case kIntervalComplete: {
      uint32_t name = name_id(reinterpret_cast<const char*>(low));
      p = c.begin(kIntervalComplete, ts);
      p = ChunkBuilder::put_u64(p, name);
      p = ChunkBuilder::put_u64(p, rec[2]);
      break;
    }
    case kCounterInt:
    case kCounterFloat: {
      uint32_t name = name_id(reinterpret_cast<const char*>(low));
      p = c.begin(uint16_t(kind), ts);
      p = ChunkBuilder::put_u64(p, name);
      if (kind == kCounterInt) {
        p = ChunkBuilder::put_i64(p, int64_t(rec[2]));
      } else {
        std::memcpy(p, &rec[2], 8);
        p += 8;
      }
      break;
    }
    case kMessageSend:
    case kMessageRecv: {
      p = c.begin(uint16_t(kind), ts);
      p = c.put_delta(p, rec[2]);
      p = ChunkBuilder::put_u64(p, rec[3]);
      p = ChunkBuilder::put_u64(p, rec[4]);
      p = ChunkBuilder::put_bytes(p, &rec[5], low);
      break;
    }
    // Names and metadata go to the metadata chunk too (before begin(), as
    // interning does): an indexer decodes only that chunk's events before it
    // walks the data chunks, and a thread's ts_thread_name here alone never
    // reached the index, whose lane kept the OS thread's name. A rename is a
    // new FeedletInfo.
    case kThreadName:
    case kProcessName: {
      uint32_t name = text_id(inline_text(&rec[2], low));
      if (kind == kThreadName) {
        const uint64_t info[] = {c.feedlet, f.tid, name};
        put_metadata(kFeedletInfo, ts, info);
      } else {
        const uint64_t named[] = {name};
        put_metadata(kProcessName, ts, named);
      }
      p = c.begin(uint16_t(kind), ts);
      p = ChunkBuilder::put_u64(p, name);
      break;
    }
    case kCpuName: {
      uint32_t name = text_id(inline_text(&rec[3], low));
      const uint64_t named[] = {rec[2], name};
      put_metadata(kCpuName, ts, named);
      p = c.begin(kCpuName, ts);
      p = ChunkBuilder::put_u64(p, rec[2]);
      p = ChunkBuilder::put_u64(p, name);
      break;
    }
    case kMetadata: {
      uint64_t klen = low & 0xffff, vlen = (low >> 16) & 0xffff;
      uint32_t key = text_id(inline_text(&rec[2], klen));
      uint32_t value = text_id(inline_text(&rec[2 + words_for_bytes(klen)], vlen));
      const uint64_t pair[] = {key, value};
      put_metadata(kMetadata, ts, pair);
      p = c.begin(kMetadata, ts);
      p = ChunkBuilder::put_u64(p, key);
      p = ChunkBuilder::put_u64(p, value);
      break;
    }
    case kTaskArrive: {
      uint32_t task = name_id(reinterpret_cast<const char*>(low));
      p = c.begin(kTaskArrive, ts);
      p = ChunkBuilder::put_u64(p, task);
      p = ChunkBuilder::put_u64(p, rec[3]);
      break;
    }
    case kJobArrive: case kJobStart: case kJobPreempt: case kJobResume:
    case kJobBlock: case kJobComplete: case kJobDeadline: {
      uint32_t task = name_id(reinterpret_cast<const char*>(low));
      p = c.begin(uint16_t(kind), ts);
      p = ChunkBuilder::put_u64(p, task);
      p = ChunkBuilder::put_u64(p, rec[2]);
      p = ChunkBuilder::put_u64(p, rec[3]);
      break;
    }
    case kTaskPriority: {
      uint32_t task = name_id(reinterpret_cast<const char*>(low));
      p = c.begin(kTaskPriority, ts);
      p = ChunkBuilder::put_u64(p, task);
      p = ChunkBuilder::put_i64(p, int64_t(rec[2]));
      break;
    }
    case kLockAcquire:
    case kLockContend:
    case kLockRelease: {
      uint32_t lock = name_id(reinterpret_cast<const char*>(low));
      p = c.begin(uint16_t(kind), ts);
      p = ChunkBuilder::put_u64(p, lock);
      p = ChunkBuilder::put_u64(p, rec[2]);
      break;
    }
    case kClockSyncSend:
    case kClockSyncRecv:
      p = c.begin(uint16_t(kind), ts);
      p = ChunkBuilder::put_u64(p, rec[2]);
      p = ChunkBuilder::put_u64(p, low);
      break;
    default: {
      // A type defined since this pass began: its definition is visible now
      // that we have seen the event (define happens before the emit).
      if (kind >= kFirstUserType && kind - kFirstUserType >= user_types_.size()) sync_user_types();
      if (kind < kFirstUserType || kind - kFirstUserType >= user_types_.size()) return;
      const EventTypeDef& def = user_types_[kind - kFirstUserType];
      // String slots are interned before begin(): interning may write to the
      // metadata chunk, never to this one, but keep the order obvious.
      uint64_t slots[kMaxFields];
      for (size_t i = 0; i < def.fields.size(); ++i)
        slots[i] = def.fields[i].type == FieldType::String
                       ? name_id(reinterpret_cast<const char*>(rec[2 + i]))
                       : rec[2 + i];
      uint8_t fields[kMaxFields * kMaxVarint];
      uint8_t* q = fields;
      for (size_t i = 0; i < def.fields.size(); ++i) {
        switch (def.fields[i].type) {
          case FieldType::I64: q = ChunkBuilder::put_i64(q, int64_t(slots[i])); break;
          case FieldType::F64: std::memcpy(q, &slots[i], 8); q += 8; break;
          default: q = ChunkBuilder::put_u64(q, slots[i]); break;
        }
      }
      p = c.begin(uint16_t(kind), ts);
      p = ChunkBuilder::put_bytes(p, fields, size_t(q - fields));  // self-sized, see format.hpp
      break;
    }
  }
  end_event(c, p);
}

void Collector::put_metadata(uint16_t type, uint64_t ts, std::span<const uint64_t> fields) {
  uint8_t* p = meta_.begin(type, ts);
  for (uint64_t v : fields) p = ChunkBuilder::put_u64(p, v);
  end_event(meta_, p);
}

void Collector::end_event(ChunkBuilder& c, uint8_t* p) {
  c.end(p);
  if (c.events() == 1) c.opened_at_ns = mono_ns();
  if (c.full()) publish(c, 0);
}

void Collector::publish(ChunkBuilder& c, uint16_t flags) {
  if (c.empty() && c.pending_drops == 0 && !(flags & kChunkFeedletEnd)) return;
  const bool metadata = &c == &meta_;
  // Names and types a data chunk uses must reach readers first.
  if (!metadata && !meta_.empty()) publish(meta_, 0);
  const uint64_t events = c.events();
  c.dense = pace_.dense(mono_ns(), c.size());
  c.finish(flags, frame_);
  events_recorded_.fetch_add(events, std::memory_order_relaxed);
  chunks_written_.fetch_add(1, std::memory_order_relaxed);
  if (file_) file_->append(frame_.data(), frame_.size(), events);
  if (metadata) meta_frames_.emplace_back(frame_.begin(), frame_.end());
  if (live_) live_->send(frame_.data(), frame_.size(), metadata);
}

void Collector::sync_user_types() {
  Registry& r = registry();
  uint32_t n = r.types_count.load(std::memory_order_acquire);
  if (n == user_types_.size()) return;
  std::lock_guard<std::mutex> lock(r.types_mutex);
  while (user_types_.size() < n) {
    const EventTypeDef& def = r.user_types[user_types_.size()];
    user_types_.push_back(def);
    std::string schema;
    encode_schema_entry(def, schema);
    uint8_t* p = meta_.begin(kTypeDef, read_ticks(), schema.size());
    p = ChunkBuilder::put_u64(p, def.code);
    p = ChunkBuilder::put_bytes(p, schema.data(), schema.size());
    end_event(meta_, p);
  }
}

uint32_t Collector::category_id(uint64_t mask) {
  Registry& r = registry();
  const uint32_t version = r.category_names_version.load(std::memory_order_acquire);
  if (version != category_version_) category_ids_.clear(), category_version_ = version;
  uint32_t& id = category_ids_[mask];
  if (id) return id;
  if (!category_type_) {
    // The argument type `.cat` joins the schema at its first use, taking a
    // user type code. With none left (or `.cat` defined otherwise by the
    // application) categories are not written, and not asked for again.
    if (category_failed_) return 0;
    const ts_field field{"cat", TS_FIELD_STRING};
    category_type_ = uint16_t(ts_define_event_type(".cat", &field, 1));
    if (!category_type_) return category_failed_ = true, 0;
    sync_user_types();
  }
  std::string text;
  {
    std::lock_guard<std::mutex> lock(r.types_mutex);
    std::vector<std::string> names;  // each once: one name may be given to several bits
    for (int b = 0; b < 64; ++b) {
      if (!(mask >> b & 1)) continue;
      std::string name = !r.category_names[b].empty() ? r.category_names[b] : b == 0 ? "default" : "cat" + std::to_string(b);
      if (std::find(names.begin(), names.end(), name) != names.end()) continue;
      text += (text.empty() ? "" : ",") + name;
      names.push_back(std::move(name));
    }
  }
  return id = text_id(text);
}

void Collector::emit_calibration() {
  uint64_t ticks, ns;
  read_pair(ticks, ns);
  put_metadata(kCalibration, ticks, std::span(&ns, 1));
  last_calibration_ns_ = ns;
}

uint32_t Collector::text_id(std::string_view s) {
  auto it = name_by_text_.find(std::string(s));
  if (it != name_by_text_.end()) return it->second;
  uint32_t id = next_string_++;
  name_by_text_.emplace(std::string(s), id);
  uint8_t* p = meta_.begin(kStringDef, read_ticks(), s.size());
  p = ChunkBuilder::put_u64(p, id);
  p = ChunkBuilder::put_bytes(p, s.data(), s.size());
  end_event(meta_, p);
  return id;
}

uint32_t Collector::name_id(const char* ptr) {
  if (!ptr) return 0;
  CacheEntry& e = name_cache_[(reinterpret_cast<uintptr_t>(ptr) >> 3) & 1023];
  if (e.ptr == ptr) return e.id;
  auto it = name_by_ptr_.find(ptr);
  uint32_t id;
  if (it != name_by_ptr_.end()) {
    id = it->second;
  } else {
    id = text_id(std::string_view(ptr, strnlen(ptr, 4096)));
    name_by_ptr_.emplace(ptr, id);
  }
  e = {ptr, id};
  return id;
}

uint32_t Collector::function_id(uint64_t address) {
  auto it = function_by_addr_.find(address);
  if (it != function_by_addr_.end()) return it->second;
  // (Made at the first function named: a program that records no function
  // events never reads its modules' symbol tables.)
  if (!symbols_) symbols_ = std::make_unique<Symbols>();
  const CodeName code = symbols_->resolve(address);
  std::string name = code.name;
  if (name.empty()) {
    Dl_info info{};  // (the dynamic symbols, where the module's file could not be read)
    if (dladdr(reinterpret_cast<void*>(address), &info) && info.dli_sname) {
      name = demangled(info.dli_sname);
    } else {
      char hex[32];
      std::snprintf(hex, sizeof hex, "0x%" PRIx64, address);
      name = hex;
      if (!code.module.empty()) name += " in " + code.module;
      else if (info.dli_fname) name += std::string(" in ") + info.dli_fname;
    }
  }
  auto matches = [&](const std::string& pattern) {
    if (pattern.starts_with("file=")) return !code.file.empty() && fnmatch(pattern.c_str() + 5, code.file.c_str(), 0) == 0;
    if (pattern.starts_with("module=")) return !code.module.empty() && fnmatch(pattern.c_str() + 7, code.module.c_str(), 0) == 0;
    return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
  };
  const bool kept = opt_.function_includes.empty() ||
                    std::any_of(opt_.function_includes.begin(), opt_.function_includes.end(), matches);
  if (!kept || std::any_of(opt_.function_excludes.begin(), opt_.function_excludes.end(), matches))
    return function_by_addr_[address] = 0;
  uint32_t id = text_id(name);
  function_by_addr_[address] = id;
  const uint64_t def[] = {id, address};
  put_metadata(kFunctionDef, read_ticks(), def);
  if (!code.file.empty()) {
    const uint64_t source[] = {id, text_id(code.file), code.line};
    put_metadata(kFunctionSource, read_ticks(), source);
  }
  return id;
}

}  // namespace tinescope::rec
