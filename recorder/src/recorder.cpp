// The recording calls of the C API (the hot path) and the session around them.
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "clock.hpp"
#include "collector.hpp"
#include "raw_record.hpp"
#include "registry.hpp"
#include "thread_buffer.hpp"
#include "tinescope/tinescope.h"

namespace tinescope::rec {

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: threads may outlive static destructors
  return *r;
}

namespace {

// Categories recorded now; 0 while stopped or disabled. The one global every
// event reads (relaxed: a change takes effect "soon", which is all we promise).
std::atomic<uint64_t> g_mask{0};

struct Session {
  std::mutex mutex;  // start/stop/config only
  std::unique_ptr<Collector> collector;
  bool running = false;
  bool from_env = false;  // started by the library itself (TINESCOPE_OUT / TINESCOPE_LIVE)
  bool adopted = false;   // ... and a ts_start of the program's own took it as its session
  bool enabled = true;
  uint64_t categories = ~0ull;
  uint64_t buffer_bytes = 2u << 20;
  std::string last_error;
  pthread_key_t exit_key;
  std::atomic<uint32_t> next_feedlet_hint{1};
  ts_stats last_stats{};  // of the last session, once stopped
};
__attribute__((tls_model("initial-exec"))) thread_local ThreadBuffer* tl_buf = nullptr;
__attribute__((tls_model("initial-exec"))) thread_local uint64_t tl_message_hint = 0;
__attribute__((tls_model("initial-exec"))) thread_local uint64_t tl_message_counter = 0;

// The calling thread's name into b->name (a system call: by a thread's
// registration and its exit only).
void keep_thread_name(ThreadBuffer* b) {
  char name[17] = {};
  prctl(PR_GET_NAME, name, 0, 0, 0);
  uint64_t words[2];
  std::memcpy(words, name, 16);
  b->name[0].store(words[0], std::memory_order_relaxed);
  b->name[1].store(words[1], std::memory_order_relaxed);
}

// Runs on the exiting thread. An event from a later thread-local destructor
// registers a fresh buffer rather than writing into one being retired.
void on_thread_exit(void* p) {
  tl_buf = nullptr;
  auto* b = static_cast<ThreadBuffer*>(p);
  keep_thread_name(b);  // (named since its first event, perhaps)
  b->exit_ticks.store(read_ticks(), std::memory_order_relaxed);
  b->state.store(BufferState::Exited, std::memory_order_release);
}

Session& session() {
  static Session* s = [] {
    auto* s = new Session;
    pthread_key_create(&s->exit_key, on_thread_exit);
    return s;
  }();
  return *s;
}


// The slow path of a thread's first event: find or make its buffer. May
// allocate and make system calls; runs once per thread.
__attribute__((noinline, cold)) ThreadBuffer* register_thread() {
  Session& s = session();
  Registry& r = registry();
  const uint64_t capacity = s.buffer_bytes;
  ThreadBuffer* b = nullptr;
  for (ThreadBuffer* it = r.buffers.load(std::memory_order_acquire); it; it = it->next) {
    BufferState expected = BufferState::Free;
    if (it->capacity == capacity &&
        it->state.compare_exchange_strong(expected, BufferState::Active, std::memory_order_acq_rel)) {
      b = it;
      break;
    }
  }
  if (!b) {
    void* mem = mmap(nullptr, capacity + kMaxRecordBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (mem == MAP_FAILED) return nullptr;
    b = new ThreadBuffer;
    b->data = static_cast<uint8_t*>(mem);
    b->capacity = capacity;
    b->mask = capacity - 1;
    b->next = r.buffers.load(std::memory_order_relaxed);
    while (!r.buffers.compare_exchange_weak(b->next, b, std::memory_order_release, std::memory_order_relaxed)) {
    }
  }
  // A reused buffer was drained by the collector: its tail equals its head.
  b->head_local = b->head.load(std::memory_order_relaxed);
  b->tail_cache = b->tail.load(std::memory_order_acquire);
  b->dropped = b->dropped_reported = 0;
  b->frames = 0, b->jumped = false;
  b->dropped_total.store(0, std::memory_order_relaxed);
  b->tid.store(uint32_t(syscall(SYS_gettid)), std::memory_order_relaxed);
  keep_thread_name(b);
  b->generation.fetch_add(1, std::memory_order_release);
  pthread_setspecific(s.exit_key, b);
  tl_buf = b;
  return b;
}

struct Rec {
  ThreadBuffer* b;
  uint64_t* w;
};

// Reserves `words` words and fills the two common ones. w == nullptr: not
// recorded (off, or dropped and counted).
inline Rec begin_record(uint64_t category, uint32_t kind, uint32_t words, uint64_t low) {
  if (!(g_mask.load(std::memory_order_relaxed) & category)) return {nullptr, nullptr};
  const uint64_t ts = read_ticks();  // before a first event's registration, which takes a while
  ThreadBuffer* b = tl_buf;
  if (__builtin_expect(!b, 0)) {
    b = register_thread();
    if (!b) return {nullptr, nullptr};
  }
  const uint64_t bytes = uint64_t(words) * 8;
  if (__builtin_expect(b->dropped != b->dropped_reported, 0)) {
    // Tell the collector how many went missing, right where they did.
    uint64_t* d = reinterpret_cast<uint64_t*>(b->reserve(bytes + 24));
    if (!d) {
      b->count_drop();
      return {b, nullptr};
    }
    d[0] = ts;
    d[1] = raw_word1(kRawDrop, 3, 0);
    d[2] = b->dropped;
    b->commit(24);
    b->dropped_reported = b->dropped;
  }
  uint64_t* w = reinterpret_cast<uint64_t*>(b->reserve(bytes));
  if (__builtin_expect(!w, 0)) {
    b->count_drop();
    return {b, nullptr};
  }
  w[0] = ts;
  w[1] = raw_word1(kind, words, low);
  return {b, w};
}

inline void commit(Rec r, uint32_t words) { r.b->commit(uint64_t(words) * 8); }

constexpr uint64_t kDefaultCategory = 1;

// Ticks per ns of the clock ts_now() reads, from the last ts_start()'s
// calibration (1 before any, and for CLOCK_MONOTONIC).
std::atomic<double> g_ticks_per_ns{1.0};

inline void record2(uint64_t category, uint32_t kind, uint64_t low) {
  Rec r = begin_record(category, kind, 2, low);
  if (r.w) commit(r, 2);
}
inline void record3(uint64_t category, uint32_t kind, uint64_t low, uint64_t a) {
  Rec r = begin_record(category, kind, 3, low);
  if (!r.w) return;
  r.w[2] = a;
  commit(r, 3);
}
inline void record4(uint32_t kind, uint64_t low, uint64_t a, uint64_t b) {
  Rec r = begin_record(kDefaultCategory, kind, 4, low);
  if (!r.w) return;
  r.w[2] = a;
  r.w[3] = b;
  commit(r, 4);
}

inline uint64_t ptr_bits(const void* p) { return reinterpret_cast<uintptr_t>(p); }

void record_message(uint32_t kind, uint64_t id, uint64_t channel, uint64_t size, const void* payload,
                    uint32_t len) {
  if (!payload) len = 0;
  if (len > TS_MAX_PAYLOAD) len = TS_MAX_PAYLOAD;
  const uint32_t words = 5 + words_for_bytes(len);
  Rec r = begin_record(kDefaultCategory, kind, words, len);
  if (!r.w) return;
  r.w[2] = id;
  r.w[3] = channel;
  r.w[4] = size;
  std::memcpy(&r.w[5], payload ? payload : "", len);
  commit(r, words);
}

// Inline strings: [ts, kind|len, prefix words..., bytes].
void record_text(uint32_t kind, const uint64_t* prefix, uint32_t nprefix, const char* text) {
  if (!text) text = "";
  uint32_t len = uint32_t(strnlen(text, kMaxInlineString));
  const uint32_t words = 2 + nprefix + words_for_bytes(len);
  Rec r = begin_record(kDefaultCategory, kind, words, len);
  if (!r.w) return;
  for (uint32_t i = 0; i < nprefix; ++i) r.w[2 + i] = prefix[i];
  std::memcpy(&r.w[2 + nprefix], text, len);
  commit(r, words);
}

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = getenv(name);
  return v && *v ? strtoull(v, nullptr, 0) : fallback;
}

void stop_at_exit() { ts_stop(); }

}  // namespace
}  // namespace tinescope::rec

using namespace tinescope::rec;
using namespace tinescope::format;

// ------------------------------------------------------------------ session

// A thread's ring for a buffer_bytes asked for: at least 4 KiB, a power of two.
static uint64_t ring_bytes(uint64_t asked) {
  const uint64_t bytes = std::max<uint64_t>(asked, 4096);
  return uint64_t(1) << (64 - __builtin_clzll(bytes - 1));
}

extern "C" int ts_start(const ts_config* config) {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.running && s.from_env && !s.adopted) {
    // The recording the environment started (the library starts itself,
    // see start_from_environment) becomes the program's own: its file and
    // address stay the environment's, as they would have; its categories
    // and, for threads that have not recorded yet, its buffer size apply.
    s.adopted = true;
    if (config && config->categories) s.categories = config->categories;
    g_mask.store(s.enabled ? s.categories : 0, std::memory_order_release);
    if (config && config->buffer_bytes && !getenv("TINESCOPE_BUFFER"))
      s.buffer_bytes = ring_bytes(config->buffer_bytes);
    return 0;
  }
  if (s.running) {
    s.last_error = "tinescope: already recording";
    return -1;
  }
  ts_config c = config ? *config : ts_config{};
  if (const char* v = getenv("TINESCOPE_OUT"); v && *v) c.file_path = v;
  if (const char* v = getenv("TINESCOPE_LIVE"); v && *v) c.live_address = v;
  c.buffer_bytes = uint32_t(env_u64("TINESCOPE_BUFFER", c.buffer_bytes));
  if (!c.file_path && !c.live_address) {
    s.last_error = "tinescope: no file_path and no live_address: nothing to record to";
    return -1;
  }
  s.buffer_bytes = ring_bytes(c.buffer_bytes ? c.buffer_bytes : (2u << 20));

  const char* clock = getenv("TINESCOPE_CLOCK");
  g_use_tsc = cpu_has_invariant_tsc() && !(clock && strcmp(clock, "monotonic") == 0);
  {  // TINESCOPE_CLOCK_SKEW="OFFSET_NS[,RATE]"; anything else: this host's own clock
    double offset = 0, rate = 1;
    if (const char* skew = getenv("TINESCOPE_CLOCK_SKEW")) {
      char* end = nullptr;
      offset = strtod(skew, &end);
      if (end && *end == ',') rate = strtod(end + 1, &end);
      if (end == skew || (end && *end) || !(rate > 0.5 && rate < 2) || !(std::fabs(offset) < 1e18)) {
        fprintf(stderr, "tinescope: TINESCOPE_CLOCK_SKEW='%s' is not OFFSET_NS[,RATE] (rate 0.5 to 2): not used\n", skew);
        offset = 0, rate = 1;
      }
    }
    set_clock_skew(offset, rate);
  }

  CollectorOptions opt;
  if (c.file_path) opt.file_path = c.file_path;
  if (c.live_address) opt.live_address = c.live_address;
  opt.overwrite = c.overwrite != 0;
  opt.flush_interval_ns = uint64_t(c.flush_interval_us ? c.flush_interval_us : 20000) * 1000;
  opt.clock = calibrate(2'000'000);
  g_ticks_per_ns.store(g_use_tsc ? opt.clock.ticks_per_ns : 1.0, std::memory_order_relaxed);
  // Functions left out, and the only ones kept (docs/RECORDER.md): by
  // default the code of the system's headers (the standard library's
  // templates, instantiated into the program) is left out.
  auto patterns = [](const char* all, std::vector<std::string>& out) {
    for (std::string_view s = all; !s.empty();) {
      const size_t end = std::min(s.find(':'), s.size());
      if (end > 0) out.emplace_back(s.substr(0, end));
      s.remove_prefix(std::min(end + 1, s.size()));
    }
  };
  if (const char* ex = getenv("TINESCOPE_FUNC_EXCLUDE")) patterns(ex, opt.function_excludes);
  else opt.function_excludes.push_back("file=/usr/include/*");
  if (const char* in = getenv("TINESCOPE_FUNC_INCLUDE")) patterns(in, opt.function_includes);
  auto collector = std::make_unique<Collector>(std::move(opt));
  std::string error;
  if (!collector->start(error)) {
    s.last_error = "tinescope: " + error;
    return -1;
  }
  s.collector = std::move(collector);
  s.running = true;
  s.enabled = true;
  s.categories = c.categories ? c.categories : ~0ull;
  g_mask.store(s.categories, std::memory_order_release);
  static bool registered = (atexit(stop_at_exit), true);
  (void)registered;
  return 0;
}

extern "C" int ts_start_from_env(void) {
  if (!getenv("TINESCOPE_OUT") && !getenv("TINESCOPE_LIVE")) return 0;
  {
    Session& s = session();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.running && s.from_env) return 0;  // the library started it already
  }
  return ts_start(nullptr);
}

// A program linked with the recorder records with no change to its code
// when TINESCOPE_OUT (a file) or TINESCOPE_LIVE (an address) is set: the
// library starts itself as it is loaded, before the program's own
// constructors and main, and stops (flushing every thread's events) at
// exit, after the program's static destructors. TINESCOPE_AUTOSTART=0 leaves
// the start to the program. Where it cannot start it says why, once, and
// the program runs unrecorded.
__attribute__((constructor)) static void start_from_environment() {
  if (!getenv("TINESCOPE_OUT") && !getenv("TINESCOPE_LIVE")) return;
  if (const char* a = getenv("TINESCOPE_AUTOSTART"); a && strcmp(a, "0") == 0) return;
  if (ts_start(nullptr) != 0) {
    fprintf(stderr, "%s (from TINESCOPE_%s=%s): not recording\n", ts_last_error(), getenv("TINESCOPE_OUT") ? "OUT" : "LIVE",
            getenv("TINESCOPE_OUT") ? getenv("TINESCOPE_OUT") : getenv("TINESCOPE_LIVE"));
    return;
  }
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.from_env = true;
}

extern "C" void ts_stop(void) {
  Session& s = session();
  std::unique_ptr<Collector> collector;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.running) return;
    g_mask.store(0, std::memory_order_release);
    s.running = false;
    s.from_env = s.adopted = false;
    collector = std::move(s.collector);
  }
  collector->stop();
  ts_stats st{};
  collector->stats(st);
  std::lock_guard<std::mutex> lock(s.mutex);
  s.last_stats = st;
}

extern "C" const char* ts_last_error(void) { return session().last_error.c_str(); }

extern "C" int ts_is_running(void) {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.running;
}

static void apply_mask(Session& s) {
  g_mask.store(s.running && s.enabled ? s.categories : 0, std::memory_order_release);
}

extern "C" void ts_set_enabled(int enabled) {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.enabled = enabled != 0;
  apply_mask(s);
}

extern "C" void ts_set_categories(uint64_t mask) {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.categories = mask;
  apply_mask(s);
}

extern "C" uint64_t ts_categories(void) {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.categories;
}

extern "C" void ts_get_stats(ts_stats* out) {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.collector)
    s.collector->stats(*out);
  else
    *out = s.last_stats;
}

extern "C" int ts_live_port(void) {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.collector ? s.collector->live_port() : 0;
}

extern "C" uint64_t ts_now(void) { return read_ticks(); }
extern "C" uint64_t ts_ticks_from_ns(uint64_t ns) {
  return uint64_t(double(ns) * g_ticks_per_ns.load(std::memory_order_relaxed) + 0.5);
}

extern "C" const char* ts_intern(const char* str) {
  static std::mutex mutex;
  static auto* strings = new std::unordered_set<std::string>;
  std::lock_guard<std::mutex> lock(mutex);
  return strings->emplace(str ? str : "").first->c_str();
}

// ------------------------------------------------------------------ events

extern "C" void ts_begin(const char* name) { record2(kDefaultCategory, kIntervalBegin, ptr_bits(name)); }
extern "C" void ts_end(const char* name) { record2(kDefaultCategory, kIntervalEnd, ptr_bits(name)); }
// A begin or instant of a category other than the default carries it in a
// third word (raw_record.hpp): the collector writes it as the event's `cat`.
extern "C" void ts_begin_c(uint64_t cat, const char* name) {
  if (cat == kDefaultCategory) record2(cat, kIntervalBegin, ptr_bits(name));
  else record3(cat, kIntervalBegin, ptr_bits(name), cat);
}
extern "C" void ts_end_c(uint64_t cat, const char* name) { record2(cat, kIntervalEnd, ptr_bits(name)); }
extern "C" void ts_instant(const char* name) { record2(kDefaultCategory, kInstant, ptr_bits(name)); }
extern "C" void ts_instant_c(uint64_t cat, const char* name) {
  if (cat == kDefaultCategory) record2(cat, kInstant, ptr_bits(name));
  else record3(cat, kInstant, ptr_bits(name), cat);
}

extern "C" void ts_category_name(uint64_t category, const char* name) {
  if (!category || !name) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.types_mutex);
  for (int b = 0; b < 64; ++b)
    if (category >> b & 1) r.category_names[b] = name;
  r.category_names_version.fetch_add(1, std::memory_order_release);
}
extern "C" void ts_complete(const char* name, uint64_t duration) {
  record3(kDefaultCategory, kIntervalComplete, ptr_bits(name), duration);
}
extern "C" void ts_counter_i64(const char* name, int64_t value) {
  record3(kDefaultCategory, kCounterInt, ptr_bits(name), uint64_t(value));
}
extern "C" void ts_counter_f64(const char* name, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, 8);
  record3(kDefaultCategory, kCounterFloat, ptr_bits(name), bits);
}

extern "C" uint64_t ts_message_id(void) {
  if (__builtin_expect(tl_message_hint == 0, 0))
    tl_message_hint = uint64_t(session().next_feedlet_hint.fetch_add(1, std::memory_order_relaxed)) << 40;
  return tl_message_hint | (++tl_message_counter & ((uint64_t(1) << 40) - 1));
}
extern "C" void ts_message_send(uint64_t id, uint64_t channel, uint64_t size, const void* payload,
                                uint32_t len) {
  record_message(kMessageSend, id, channel, size, payload, len);
}
extern "C" void ts_message_recv(uint64_t id, uint64_t channel, uint64_t size, const void* payload,
                                uint32_t len) {
  record_message(kMessageRecv, id, channel, size, payload, len);
}

extern "C" void ts_thread_name(const char* name) { record_text(kThreadName, nullptr, 0, name); }
extern "C" void ts_process_name(const char* name) { record_text(kProcessName, nullptr, 0, name); }
extern "C" void ts_cpu_name(uint32_t cpu, const char* name) {
  uint64_t prefix = cpu;
  record_text(kCpuName, &prefix, 1, name);
}
extern "C" void ts_metadata(const char* key, const char* value) {
  if (!key) key = "";
  if (!value) value = "";
  uint32_t klen = uint32_t(strnlen(key, 512)), vlen = uint32_t(strnlen(value, 512));
  const uint32_t words = 2 + words_for_bytes(klen) + words_for_bytes(vlen);
  Rec r = begin_record(kDefaultCategory, kMetadata, words, klen | (uint64_t(vlen) << 16));
  if (!r.w) return;
  std::memcpy(&r.w[2], key, klen);
  std::memcpy(&r.w[2 + words_for_bytes(klen)], value, vlen);
  commit(r, words);
}

extern "C" void ts_channel_name(uint64_t channel, const char* name) {
  char key[32];
  std::snprintf(key, sizeof key, "channel.%" PRIu64, channel);
  ts_metadata(key, name);
}

extern "C" void ts_sched(ts_sched_kind kind, const char* task, uint64_t job, uint32_t cpu) {
  if (kind < TS_TASK_ARRIVE || kind > TS_JOB_COMPLETE) return;
  record4(uint32_t(kind), ptr_bits(task), job, cpu);
}
extern "C" void ts_job_deadline(const char* task, uint64_t job, uint64_t deadline) {
  record4(kJobDeadline, ptr_bits(task), job, deadline);
}
extern "C" void ts_task_priority(const char* task, int32_t level) {
  record3(kDefaultCategory, kTaskPriority, ptr_bits(task), uint64_t(int64_t(level)));
}
extern "C" void ts_lock(ts_lock_kind kind, const char* lock_name, uint64_t lock_id) {
  if (kind < TS_LOCK_ACQUIRE || kind > TS_LOCK_RELEASE) return;
  record3(kDefaultCategory, uint32_t(kind), ptr_bits(lock_name), lock_id);
}
extern "C" void ts_clock_sync_send(uint64_t sync_id, uint32_t peer) {
  record3(kDefaultCategory, kClockSyncSend, peer, sync_id);
}
extern "C" void ts_clock_sync_recv(uint64_t sync_id, uint32_t peer) {
  record3(kDefaultCategory, kClockSyncRecv, peer, sync_id);
}
extern "C" void ts_func_enter(void* fn) { record2(kDefaultCategory, kFuncEnter, ptr_bits(fn)); }
extern "C" void ts_func_exit(void* fn) { record2(kDefaultCategory, kFuncExit, ptr_bits(fn)); }

// -finstrument-functions: a program compiled with that flag calls these on
// every function entry and exit (record2 inline here: through ts_func_enter,
// an exported function, each would be a second call through the PLT).
// Leave functions out at compile time with -finstrument-functions-exclude-
// file-list= and -finstrument-functions-exclude-function-list= (no cost at
// all), or at run time with TINESCOPE_FUNC_EXCLUDE=pattern:pattern (fnmatch
// on demangled names; the collector drops them, the call still costs an
// event).
//
// A longjmp leaves frames that never call the exit hook. Each entry keeps
// its stack pointer (ThreadBuffer::frame_sp). After a longjmp (the library
// sees each one: longjmp.cpp), an entry from a stack at or above a frame
// still held is a call made after that frame was left, so that frame, and
// any above it, end there as func_unwind events (readers close them, marked
// and counted as cut); so do the frames still held above a function that
// exits. (Only after a longjmp: a function inlined into its caller calls
// the hooks from its caller's stack.) An exception unwinds through GCC's
// cleanups, which call the exit hook: nothing is left.
namespace {
// Farther than this above the frames held, a stack is another one (a signal
// handler on sigaltstack), not the same one unwound.
constexpr uintptr_t kUnwindReach = uintptr_t(64) << 20;

__attribute__((noinline, cold, no_instrument_function)) void end_skipped_frames(ThreadBuffer& b, uintptr_t sp) {
  while (b.frames > 0 && b.frames <= ThreadBuffer::kShadowFrames && b.frame_sp[b.frames - 1] <= sp &&
         sp - b.frame_sp[b.frames - 1] < kUnwindReach) {
    --b.frames;
    record2(kDefaultCategory, kFuncUnwind, ptr_bits(b.frame_fn[b.frames]));
  }
}
// An exit of `fn` while frames it called are still held (a longjmp left them
// and nothing was called since): they end first.
__attribute__((noinline, cold, no_instrument_function)) void end_frames_above(ThreadBuffer& b, void* fn) {
  uint32_t own = b.frames - 1;
  while (own > 0 && b.frame_fn[own] != fn) --own;
  if (b.frame_fn[own] != fn) return;  // not held (entered before the recording): as it is
  while (b.frames > own + 1) {
    --b.frames;
    record2(kDefaultCategory, kFuncUnwind, ptr_bits(b.frame_fn[b.frames]));
  }
}
}  // namespace

namespace tinescope::rec {
// This thread is about to longjmp (longjmp.cpp).
__attribute__((no_instrument_function)) void note_longjmp() {
  if (ThreadBuffer* b = tl_buf) b->jumped = true;
}
}  // namespace tinescope::rec

namespace {
// The whole of a function event where nothing is unusual (a thread
// recording, the default category on, no drop to report, room in its ring,
// the TSC the clock):
// inline in the hooks, which a call pays twice. False: record2's way.
__attribute__((always_inline, no_instrument_function)) inline bool func_event_fast(ThreadBuffer* b, uint32_t kind,
                                                                                   const void* fn) {
  if (!(g_mask.load(std::memory_order_relaxed) & kDefaultCategory) || b->dropped != b->dropped_reported ||
      !g_use_tsc) [[unlikely]]
    return false;
  uint64_t* w = reinterpret_cast<uint64_t*>(b->reserve(16));  // (full: record2 counts the drop)
  if (!w) [[unlikely]]
    return false;
  w[0] = __rdtsc();  // (read_ticks() where the TSC is the clock; the slow path reads the other)
  w[1] = raw_word1(kind, 2, ptr_bits(fn));
  b->commit(16);
  return true;
}

// What is unusual (a thread's first event, a longjmp seen, frames to end,
// a drop to report, no room, recording paused): out of line, so that the
// hooks' common path is a leaf that saves no register.
__attribute__((noinline, no_instrument_function)) void func_enter_slow(void* fn, uintptr_t sp) {
  ThreadBuffer* b = tl_buf;
  if (b && b->jumped) {
    b->jumped = false;
    end_skipped_frames(*b, sp);
  }
  record2(kDefaultCategory, kFuncEnter, ptr_bits(fn));  // (a thread's first event registers it)
  if (!(b = tl_buf)) return;
  const uint32_t depth = b->frames++;
  if (depth < ThreadBuffer::kShadowFrames) b->frame_sp[depth] = sp, b->frame_fn[depth] = fn;
}
__attribute__((noinline, no_instrument_function)) void func_exit_slow(void* fn) {
  ThreadBuffer* b = tl_buf;
  if (b) b->jumped = false;
  if (b && b->frames > 0 && b->frames <= ThreadBuffer::kShadowFrames && b->frame_fn[b->frames - 1] != fn)
    end_frames_above(*b, fn);
  record2(kDefaultCategory, kFuncExit, ptr_bits(fn));
  if (b && b->frames > 0) --b->frames;
}
}  // namespace

extern "C" TS_API __attribute__((no_instrument_function)) void __cyg_profile_func_enter(void* fn, void*) {
  // The stack pointer (the hook's, a fixed distance from its caller's) without a frame of its own.
#if defined(__x86_64__)
  uintptr_t sp;
  asm("mov %%rsp, %0" : "=r"(sp));
#else
  const uintptr_t sp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
#endif
  ThreadBuffer* b = tl_buf;
  if (b && !b->jumped && func_event_fast(b, kFuncEnter, fn)) [[likely]] {
    const uint32_t depth = b->frames++;
    if (depth < ThreadBuffer::kShadowFrames) b->frame_sp[depth] = sp, b->frame_fn[depth] = fn;
    return;
  }
  func_enter_slow(fn, sp);
}
extern "C" TS_API __attribute__((no_instrument_function)) void __cyg_profile_func_exit(void* fn, void*) {
  ThreadBuffer* b = tl_buf;
  if (b) [[likely]] {
    const uint32_t depth = b->frames;
    if ((depth == 0 || depth > ThreadBuffer::kShadowFrames || b->frame_fn[depth - 1] == fn) &&
        func_event_fast(b, kFuncExit, fn)) [[likely]] {
      b->jumped = false;
      b->frames = depth - (depth > 0);
      return;
    }
  }
  func_exit_slow(fn);
}

extern "C" uint32_t ts_define_event_type(const char* name, const ts_field* fields, uint32_t count) {
  if (!name || !*name || count > TS_MAX_FIELDS || (count && !fields)) return 0;
  EventTypeDef def;
  def.name = name;
  for (uint32_t i = 0; i < count; ++i) {
    char t = char(fields[i].type);
    if (t != 'u' && t != 'i' && t != 'f' && t != 's') return 0;
    def.fields.push_back({FieldType(t), fields[i].name ? fields[i].name : ""});
  }
  for (const EventTypeDef& b : builtin_schema().types)
    if (b.name == def.name) return 0;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.types_mutex);
  for (const EventTypeDef& t : r.user_types) {
    if (t.name != def.name) continue;
    bool same = t.fields.size() == def.fields.size();
    for (size_t i = 0; same && i < t.fields.size(); ++i)
      same = t.fields[i].type == def.fields[i].type && t.fields[i].name == def.fields[i].name;
    return same ? t.code : 0;
  }
  if (r.user_types.size() > kMaxEventType - kFirstUserType) return 0;
  def.code = uint16_t(kFirstUserType + r.user_types.size());
  r.field_counts[r.user_types.size()] = uint8_t(def.fields.size());
  r.user_types.push_back(def);
  r.types_count.store(uint32_t(r.user_types.size()), std::memory_order_release);
  return def.code;
}

extern "C" void ts_user_event(uint32_t type, const uint64_t* slots) {
  Registry& r = registry();
  if (type < kFirstUserType || type - kFirstUserType >= r.types_count.load(std::memory_order_acquire)) return;
  const uint32_t n = r.field_counts[type - kFirstUserType];  // not the vector: it may be growing
  const uint32_t words = 2 + n;
  Rec rec = begin_record(kDefaultCategory, type, words, 0);
  if (!rec.w) return;
  std::memcpy(&rec.w[2], slots, n * 8);
  commit(rec, words);
}

extern "C" uint64_t ts_f64_slot(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  return bits;
}
extern "C" uint64_t ts_str_slot(const char* s) { return ptr_bits(s); }
