#include "tinescope/import/kernel_sched.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "kernel_events.hpp"
#include "tinescope/trace_reader.hpp"
#include "tinescope/trace_writer.hpp"
#include "tracefs_glue.h"

namespace tinescope::import {

using format::ChunkBuilder;
using namespace format;

const char* state_name(int64_t s) {
  // The kernel reports a switched-out task's state as one bit of
  // TASK_REPORT (R 0, S 1, D 2, T 4, t 8, X 16, Z 32, P 64, I 128), and a
  // preemption as TASK_REPORT_MAX (256 since 4.14; 2048 in some older ones).
  if (s == 0 || s >= 256) return "Runnable (preempted)";
  if (s & 1) return "Sleeping";
  if (s & 2) return "Uninterruptible (D)";
  if (s & (4 | 8)) return "Stopped";
  if (s & (16 | 32)) return "Exited";
  if (s & 64) return "Parked";
  return "Idle";
}

const char* state_name(std::string_view s) {
  if (s.empty() || s[0] == 'R') return "Runnable (preempted)";
  switch (s[0]) {
    case 'S': return "Sleeping";
    case 'D': return "Uninterruptible (D)";
    case 'T':
    case 't': return "Stopped";
    case 'X':
    case 'Z': return "Exited";
    case 'P': return "Parked";
    default: return "Idle";
  }
}

static const char* const kRunning = "Running";
static const char* const kWoken = "Runnable (woken)";
static const char* const kActivation = "activation";

void ThreadStates::set(int32_t tid, Thread& t, uint64_t ts, const char* state) {
  if (t.state) sink_.end(tid, ts, t.state);
  if (state) sink_.begin(tid, ts, state);
  t.state = state;
}

void ThreadStates::activate(int32_t tid, Thread& t, uint64_t ts, bool on, const char* state) {
  if (t.state) sink_.end(tid, ts, t.state), t.state = nullptr;
  if (t.active != on) (on ? sink_.begin(tid, ts, kActivation) : sink_.end(tid, ts, kActivation)), t.active = on;
  set(tid, t, ts, state);
}

void ThreadStates::switched_out(int32_t tid, uint64_t ts, const char* state) {
  Thread& t = threads_[tid];
  if (state[0] == 'R') set(tid, t, ts, state);  // still runnable: the activation goes on
  else activate(tid, t, ts, false, state);
}

void ThreadStates::switched_in(int32_t tid, uint64_t ts) {
  Thread& t = threads_[tid];
  if (!t.active) activate(tid, t, ts, true, kRunning);  // (no wakeup seen: its first event, or one lost)
  else set(tid, t, ts, kRunning);
}

void ThreadStates::woken(int32_t tid, uint64_t ts) {
  Thread& t = threads_[tid];
  if (t.active && t.state) return;  // runnable or running already
  activate(tid, t, ts, true, kWoken);
}

void ThreadStates::exited(int32_t tid, uint64_t ts) {
  auto t = threads_.find(tid);
  if (t != threads_.end()) activate(tid, t->second, ts, false, nullptr);
}

namespace {

// What the trace holds already: where its names, feedlets and metadata chunks end.
struct TraceEnd : trace::Visitor {
  uint32_t max_feedlet = 0;
  uint64_t metadata_chunks = 0;  // the next metadata chunk's sequence number
  void on_chunk(const trace::ChunkInfo& c) override {
    max_feedlet = std::max(max_feedlet, c.header.feedlet);
    if (c.header.feedlet == kMetadataFeedlet) metadata_chunks = std::max(metadata_chunks, c.header.sequence + 1);
  }
};

constexpr uint64_t kMigrationChannel = 0x6b6d6967;  // "gimk": the kernel's migrations
constexpr uint64_t kMigrationIds = uint64_t(0x6d) << 56;  // apart from the program's message ids

// A thread's lane of states.
struct ThreadLane {
  uint32_t feedlet = 0;
};

class Writer {
 public:
  Writer(int fd, const std::vector<std::string>& strings, uint32_t next_feedlet)
      : fd_(fd), next_string_(uint32_t(strings.size())), next_feedlet_(next_feedlet) {
    for (uint32_t id = 1; id < strings.size(); ++id) strings_.try_emplace(strings[id], id);
  }
  ~Writer() {
    if (spill_fd_ >= 0) ::close(spill_fd_);
  }

  uint32_t intern(const std::string& s) {
    auto [it, fresh] = strings_.try_emplace(s, next_string_);
    if (fresh) ++next_string_, new_strings_.push_back(s);
    return it->second;
  }
  uint32_t new_feedlet() { return next_feedlet_++; }
  ChunkBuilder& lane(uint32_t feedlet) {
    auto [it, fresh] = lanes_.try_emplace(feedlet);
    if (fresh) it->second.feedlet = feedlet;
    return it->second;
  }
  void named(uint16_t type, ChunkBuilder& cb, uint64_t ts, uint32_t name) {
    uint8_t* p = cb.begin(type, ts);
    cb.end(ChunkBuilder::put_u64(p, name));
    if (cb.full()) flush(cb);
  }
  void job(ChunkBuilder& cb, uint16_t type, uint64_t ts, uint32_t task, uint64_t tid, uint64_t cpu) {
    uint8_t* p = cb.begin(type, ts);
    p = ChunkBuilder::put_u64(p, task);
    p = ChunkBuilder::put_u64(p, tid);
    cb.end(ChunkBuilder::put_u64(p, cpu));
    if (cb.full()) flush(cb);
  }
  void priority(ChunkBuilder& cb, uint64_t ts, uint32_t task, int64_t level) {
    uint8_t* p = cb.begin(kTaskPriority, ts);
    p = ChunkBuilder::put_u64(p, task);
    cb.end(ChunkBuilder::put_i64(p, level));
    if (cb.full()) flush(cb);
  }
  // An instant of its name, then its fields as an argument event (in one
  // chunk: the arguments follow their event).
  void with_args(ChunkBuilder& cb, uint64_t ts, uint32_t name, uint16_t type, const std::string& args) {
    uint8_t* p = cb.begin(kInstant, ts);
    cb.end(ChunkBuilder::put_u64(p, name));
    p = cb.begin(type, ts, args.size() + kMaxVarint);
    cb.end(ChunkBuilder::put_bytes(p, args.data(), args.size()));  // (a self-sized event: its length, its fields)
    if (cb.full()) flush(cb);
  }
  void message(ChunkBuilder& cb, uint16_t type, uint64_t ts, uint64_t id) {
    uint8_t* p = cb.begin(type, ts);
    p = cb.put_delta(p, id);
    p = ChunkBuilder::put_u64(p, kMigrationChannel);
    p = ChunkBuilder::put_u64(p, 0);
    cb.end(ChunkBuilder::put_bytes(p, "", 0));
    if (cb.full()) flush(cb);
  }
  void flush(ChunkBuilder& cb) {
    if (cb.empty()) return;
    cb.finish(0, frame_);
    frames_.insert(frames_.end(), frame_.begin(), frame_.end());
    if (frames_.size() > (16u << 20)) spill();
  }
  // The metadata (names first: the data chunks use them), then the data.
  bool finish(uint64_t metadata_sequence, const std::vector<std::pair<uint32_t, std::pair<uint64_t, std::string>>>& feedlets,
              const std::vector<std::pair<std::string, std::string>>& metadata,
              const std::vector<format::EventTypeDef>& arg_types, std::string& why) {
    for (auto& [id, cb] : lanes_) {
      // Drops with no event after them: a chunk of their own carries them.
      if (cb.empty() && cb.pending_drops) named(kInstant, cb, cb.last_ts(), intern("events lost"));
      flush(cb);
    }
    ChunkBuilder meta;
    meta.sequence = metadata_sequence;
    std::vector<uint8_t> frame;
    auto meta_flush = [&] {
      meta.finish(0, frame);
      metadata_frames_.insert(metadata_frames_.end(), frame.begin(), frame.end());
    };
    for (const auto& [k, v] : metadata) intern(k), intern(v);
    for (const auto& f : feedlets) intern(f.second.second);
    std::string entry;
    for (const format::EventTypeDef& d : arg_types) {
      entry.clear();
      format::encode_schema_entry(d, entry);
      uint8_t* p = meta.begin(kTypeDef, 0, entry.size() + 16);
      p = ChunkBuilder::put_u64(p, d.code);
      meta.end(ChunkBuilder::put_bytes(p, entry.data(), entry.size()));
      if (meta.full()) meta_flush();
    }
    for (size_t i = 0; i < new_strings_.size(); ++i) {
      const std::string& s = new_strings_[i];
      uint8_t* p = meta.begin(kStringDef, 0, s.size() + 16);
      p = ChunkBuilder::put_u64(p, strings_.at(s));
      meta.end(ChunkBuilder::put_bytes(p, s.data(), s.size()));
      if (meta.full()) meta_flush();
    }
    for (const auto& [feedlet, info] : feedlets) {
      uint8_t* p = meta.begin(kFeedletInfo, 0);
      p = ChunkBuilder::put_u64(p, feedlet);
      p = ChunkBuilder::put_u64(p, info.first);
      meta.end(ChunkBuilder::put_u64(p, strings_.at(info.second)));
      if (meta.full()) meta_flush();
    }
    for (const auto& [k, v] : metadata) {
      uint8_t* p = meta.begin(kMetadata, 0);
      p = ChunkBuilder::put_u64(p, strings_.at(k));
      meta.end(ChunkBuilder::put_u64(p, strings_.at(v)));
      if (meta.full()) meta_flush();
    }
    if (!meta.empty()) meta_flush();
    // The metadata goes before every data chunk of ours: a reader learns the
    // names before the events that use them.
    if (!write_all(metadata_frames_) || !spill_done()) return why = std::strerror(errno), false;
    return true;
  }

 private:
  bool write_all(const std::vector<uint8_t>& bytes) {
    size_t at = 0;
    while (at < bytes.size()) {
      const ssize_t n = ::write(fd_, bytes.data() + at, bytes.size() - at);
      if (n <= 0) return false;
      at += size_t(n);
    }
    return true;
  }
  // Data chunks wait in a temporary file until the metadata is written.
  void spill() {
    if (spill_fd_ < 0) {
      char path[] = "/tmp/tinescope-kernel-XXXXXX";
      spill_fd_ = ::mkstemp(path);
      if (spill_fd_ >= 0) ::unlink(path);
    }
    if (spill_fd_ >= 0) {
      size_t at = 0;
      while (at < frames_.size()) {
        const ssize_t n = ::write(spill_fd_, frames_.data() + at, frames_.size() - at);
        if (n <= 0) {
          spill_failed_ = true;
          break;
        }
        at += size_t(n);
      }
    } else {
      spill_failed_ = true;
    }
    frames_.clear();
  }
  bool spill_done() {
    if (spill_failed_) return false;
    if (spill_fd_ >= 0) {
      std::vector<uint8_t> buf(1 << 20);
      ::lseek(spill_fd_, 0, SEEK_SET);
      for (ssize_t n; (n = ::read(spill_fd_, buf.data(), buf.size())) > 0;) {
        buf.resize(size_t(n));
        if (!write_all(buf)) return false;
        buf.resize(1 << 20);
      }
      ::close(spill_fd_);
      spill_fd_ = -1;
    }
    return write_all(frames_);
  }

  int fd_;
  uint32_t next_string_, next_feedlet_;
  std::unordered_map<std::string, uint32_t> strings_;
  std::vector<std::string> new_strings_;
  std::map<uint32_t, ChunkBuilder> lanes_;
  std::vector<uint8_t> frame_, frames_, metadata_frames_;
  int spill_fd_ = -1;
  bool spill_failed_ = false;
};

}  // namespace

bool append_kernel_sched(const std::string& path, const std::vector<KernelSched>& events,
                         const std::vector<LostEvents>& lost, int32_t root_pid, AppendResult& result,
                         std::string& why, const std::vector<format::EventTypeDef>& arg_types) {
  TraceEnd end;
  trace::Parser parser(end, {.decode_data = false});
  if (!trace::read_file(path, parser, why)) return false;
  if (!parser.header().intact) return why = path + ": its header is damaged: the kernel's events are not added", false;
  const std::string process = parser.catalog().process_name.empty() ? parser.header().process_name
                                                                     : parser.catalog().process_name;
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return why = path + ": " + std::strerror(errno), false;
  const off_t original_size = ::lseek(fd, 0, SEEK_END);
  // New feedlets after every one the trace knows (its chunks' and its
  // feedlet_info's); its names reused where ours are the same text.
  uint32_t max_feedlet = end.max_feedlet;
  for (const auto& [id, f] : parser.catalog().feedlets) max_feedlet = std::max(max_feedlet, id);
  if (max_feedlet >= UINT32_MAX - 1 - (1u << 20)) {
    ::close(fd);
    return why = path + ": its feedlet ids run to the end of their range: the kernel's events are not added", false;
  }
  Writer w(fd, parser.catalog().strings, max_feedlet + 1);
  std::vector<std::pair<uint32_t, std::pair<uint64_t, std::string>>> feedlets;  // id -> (tid, name)
  std::vector<std::pair<std::string, std::string>> metadata;
  std::map<uint32_t, uint32_t> cpu_feedlet;
  std::unordered_map<int32_t, ThreadLane> threads;
  std::unordered_map<int32_t, bool> followed;  // tid -> gets a lane (root_pid's threads)
  if (root_pid > 0) {
    followed[root_pid] = true;
    for (const KernelSched& e : events)
      if (e.kind == KernelSched::WakeupNew) followed[e.pid] = true;
  }
  auto has_lane = [&](int32_t tid) { return root_pid <= 0 || followed.count(tid); };
  std::unordered_map<uint32_t, std::string> lane_comm;  // a state lane's thread's last name
  // A thread as the program named it (ts_thread_name), else as the kernel
  // does, with its tid ("COMM-TID", as ftrace prints it).
  std::unordered_map<uint64_t, std::string> program_names;
  for (const auto& [id, f] : parser.catalog().feedlets)
    if (!f.name.empty()) program_names[f.tid] = f.name;
  auto display = [&](int32_t tid, const std::string& comm) {
    auto named = program_names.find(uint64_t(tid));  // (a thread it did not name is named by its comm)
    return named != program_names.end() && named->second != comm ? named->second : comm + "-" + std::to_string(tid);
  };
  auto cpu_lane = [&](uint32_t cpu) -> ChunkBuilder& {
    auto [it, fresh] = cpu_feedlet.try_emplace(cpu, 0);
    if (fresh) {
      it->second = w.new_feedlet();
      feedlets.push_back({it->second, {0, "cpu " + std::to_string(cpu)}});
      metadata.emplace_back("feedlet." + std::to_string(it->second) + ".process", "kernel");
      ++result.cpus;
    }
    return w.lane(it->second);
  };
  auto thread = [&](int32_t tid, const std::string& comm) -> ThreadLane& {
    auto [it, fresh] = threads.try_emplace(tid);
    if (fresh) {
      it->second.feedlet = w.new_feedlet();
      if (!process.empty()) metadata.emplace_back("feedlet." + std::to_string(it->second.feedlet) + ".process", process);
      ++result.threads;
    }
    lane_comm[it->second.feedlet] = display(tid, comm);
    return it->second;
  };
  // The states go to each thread's lane.
  struct ToLanes : ThreadStates::Sink {
    Writer& w;
    std::unordered_map<int32_t, ThreadLane>& threads;
    ToLanes(Writer& w, std::unordered_map<int32_t, ThreadLane>& t) : w(w), threads(t) {}
    void begin(int32_t tid, uint64_t ts, const char* name) override {
      w.named(kIntervalBegin, w.lane(threads.at(tid).feedlet), ts, w.intern(name));
    }
    void end(int32_t tid, uint64_t ts, const char* name) override {
      w.named(kIntervalEnd, w.lane(threads.at(tid).feedlet), ts, w.intern(name));
    }
  } to_lanes(w, threads);
  ThreadStates states(to_lanes);

  size_t next_loss = 0;
  std::vector<LostEvents> losses = lost;
  std::sort(losses.begin(), losses.end(), [](const LostEvents& a, const LostEvents& b) { return a.ts < b.ts; });
  uint64_t migration = 0;
  std::unordered_map<int32_t, bool> ran_;  // tid -> on a CPU before: a start again is a resume
  std::unordered_map<int32_t, std::pair<uint32_t, int32_t>> priority;  // tid -> (task, prio) last written
  std::unordered_map<uint32_t, std::pair<int32_t, uint32_t>> on_cpu;  // cpu -> (tid, task) of its segment
  for (const KernelSched& e : events) {
    // Losses before this event: in their CPU's next chunk (cut here).
    for (; next_loss < losses.size() && losses[next_loss].ts <= e.ts; ++next_loss) {
      ChunkBuilder& cb = cpu_lane(losses[next_loss].cpu);
      w.flush(cb);
      cb.pending_drops += losses[next_loss].count;
      result.lost += losses[next_loss].count;
    }
    ++result.events;
    switch (e.kind) {
      case KernelSched::Switch: {
        ++result.switches;
        ChunkBuilder& cpu = cpu_lane(e.cpu);
        // (Following a program, a switch is recorded when either side is
        // its: another task's segment would run on until the program's next
        // switch there. Its threads' segments alone are written.)
        if (e.pid > 0 && has_lane(e.pid)) {
          const char* state = state_name(e.prev_state);
          const bool runnable = state[0] == 'R';
          // (Named as its segment began: a name that changed on the way, at an exec, ends the same job.)
          auto began = on_cpu.find(e.cpu);
          const uint32_t task = began != on_cpu.end() && began->second.first == e.pid ? began->second.second
                                                                                    : w.intern(display(e.pid, e.comm));
          w.job(cpu, runnable ? kJobPreempt : kJobBlock, e.ts, task, uint64_t(e.pid), e.cpu);
          thread(e.pid, e.comm), states.switched_out(e.pid, e.ts, state);
        }
        if (e.next_pid > 0 && has_lane(e.next_pid)) {
          bool& ran = ran_[e.next_pid];
          const uint32_t task = w.intern(display(e.next_pid, e.next_comm));
          if (e.next_prio != KernelSched::kNoPrio) {
            auto [last, fresh] = priority.try_emplace(e.next_pid, task, e.next_prio);
            if (fresh || last->second != std::make_pair(task, e.next_prio)) {
              last->second = {task, e.next_prio};
              w.priority(cpu, e.ts, task, 139 - int64_t(e.next_prio));
            }
          }
          w.job(cpu, ran ? kJobResume : kJobStart, e.ts, task, uint64_t(e.next_pid), e.cpu);
          on_cpu[e.cpu] = {e.next_pid, task};
          ran = true;
          thread(e.next_pid, e.next_comm), states.switched_in(e.next_pid, e.ts);
        }
        break;
      }
      case KernelSched::Wakeup:
      case KernelSched::WakeupNew: {
        ++result.wakeups;
        if (has_lane(e.pid)) thread(e.pid, e.comm), states.woken(e.pid, e.ts);
        break;
      }
      case KernelSched::Migrate: {
        ++result.migrations;
        const uint64_t id = kMigrationIds | ++migration;
        w.message(cpu_lane(e.orig_cpu), kMessageSend, e.ts, id);
        w.message(cpu_lane(e.dest_cpu), kMessageRecv, e.ts, id);
        break;
      }
      case KernelSched::Exit: {
        if (threads.count(e.pid)) states.exited(e.pid, e.ts);
        break;
      }
      case KernelSched::Other: {
        ++result.others;
        w.with_args(cpu_lane(e.cpu), e.ts, w.intern(e.comm), e.arg_type, e.args);
        break;
      }
    }
  }
  for (; next_loss < losses.size(); ++next_loss) {  // (after the last event: finish() writes them)
    ChunkBuilder& cb = cpu_lane(losses[next_loss].cpu);
    w.flush(cb);
    cb.pending_drops += losses[next_loss].count;
    result.lost += losses[next_loss].count;
  }
  for (const auto& [tid, t] : threads) feedlets.push_back({t.feedlet, {uint64_t(tid), lane_comm[t.feedlet] + " states"}});
  std::sort(feedlets.begin(), feedlets.end());
  if (result.migrations) metadata.emplace_back("channel." + std::to_string(kMigrationChannel), "migration");
  bool ok = w.finish(end.metadata_chunks, feedlets, metadata, arg_types, why);
  if (::fsync(fd) != 0 && ok) ok = false, why = std::strerror(errno);
  // A failed append (a full disk) is taken back: the trace stays as it was.
  if (!ok && ::ftruncate(fd, off_t(original_size)) != 0) why += "; and it could not be cut back to its own end";
  if (::close(fd) != 0 && ok) ok = false, why = std::strerror(errno);
  if (!ok) why = path + ": " + why;
  return ok;
}

bool create_trace_file(const std::string& path, const format::HeaderInfo& info, std::string& why) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return why = path + ": " + std::strerror(errno) + (errno == EEXIST ? " (tinescope never writes over a file)" : ""), false;
  const std::string header = format::build_file_header(info);
  const bool ok = ::write(fd, header.data(), header.size()) == ssize_t(header.size());
  if (::close(fd) != 0 || !ok) return why = path + ": cannot write: " + std::strerror(errno), false;
  return true;
}

bool import_trace_dat(const std::string& in, const std::string& out, ImportResult& r, std::string& error) {
  struct Reading {
    ImportResult* r;
    KernelEventReader reader;
    std::vector<KernelSched> events;
    std::vector<LostEvents> lost;
  } rd{&r, {}, {}, {}};
  auto on_record = [](tep_event* ev, tep_record* rec, int cpu, void* self) {
    Reading& m = *static_cast<Reading*>(self);
    ++m.r->events_read;
    if (rec->missed_events)
      m.lost.push_back(LostEvents{uint32_t(cpu), rec->ts, uint64_t(rec->missed_events > 0 ? rec->missed_events : 1)});
    KernelSched k;
    if (m.reader.read(ev, rec, cpu, k) || m.reader.other(ev, rec, cpu, k)) m.events.push_back(std::move(k));
    else ++m.r->unsupported[std::string("trace.dat ") + (ev->name ? ev->name : "?") + " (past 192 kinds of event)"];
    return 0;
  };
  char why[512] = "";
  if (ts_tracecmd_read(in.c_str(), on_record, &rd, why, sizeof why) < 0) return error = why, false;
  if (rd.events.empty()) return error = in + ": a trace-cmd trace with no events", false;
  std::stable_sort(rd.events.begin(), rd.events.end(), [](const KernelSched& a, const KernelSched& b) { return a.ts < b.ts; });
  format::HeaderInfo info;
  info.clock.source = uint8_t(format::ClockSource::Monotonic);
  info.clock.ticks_per_ns = 1;
  info.process_name = "kernel";
  info.recorder = "tinescope import (trace-cmd trace.dat)";
  if (!create_trace_file(out, info, error)) return false;
  AppendResult a;
  if (!append_kernel_sched(out, rd.events, rd.lost, 0, a, error, rd.reader.arg_types())) {
    ::unlink(out.c_str());
    return false;
  }
  r.events_written = a.events;
  r.feedlets = a.cpus + a.threads;
  return true;
}

}  // namespace tinescope::import
