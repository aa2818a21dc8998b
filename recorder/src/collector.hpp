// The collector thread: drains every thread's ring, encodes raw records into
// the compact trace encoding, cuts chunks, compresses them with lz4 and hands
// the frames to the sinks (file and live feed).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tinescope/trace_writer.hpp"
#include "clock.hpp"
#include "sinks.hpp"
#include "thread_buffer.hpp"
#include "tinescope/tinescope.h"

namespace tinescope::rec {

class Symbols;

struct CollectorOptions {
  std::string file_path;
  bool overwrite = false;
  std::string live_address;
  uint64_t flush_interval_ns = 20'000'000;
  Calibration clock{};
  // Functions left out, and (when any) the only ones kept: fnmatch patterns
  // on the demangled name, or with "file=" on the source file, "module=" on
  // the module's path.
  std::vector<std::string> function_excludes, function_includes;
};

class Collector {
 public:
  explicit Collector(CollectorOptions options);
  ~Collector();

  // Opens the sinks, writes the trace header and starts the thread.
  bool start(std::string& error);
  // Drains every buffer, writes the last chunks and closes the sinks.
  void stop();
  void stats(ts_stats& out) const;
  int live_port() const { return live_ ? live_->port() : 0; }

 private:
  struct Feedlet {
    format::ChunkBuilder chunk;
    uint64_t generation = 0;
    uint64_t pos = 0;            // read position in the ring
    uint64_t drops_seen = 0;     // cumulative drop count already accounted
    uint64_t waiting_since_ns = 0;  // when data first waited below the batch size
    uint64_t tid = 0;               // the OS thread's
  };

  void run();
  bool poll(bool final);
  void drain(ThreadBuffer& b, Feedlet& f, bool final);
  void encode(Feedlet& f, const uint64_t* rec);
  Feedlet& feedlet_for(ThreadBuffer& b, uint64_t generation);
  void end_event(format::ChunkBuilder& c, uint8_t* p);
  // An event of u64 fields in the metadata chunk.
  void put_metadata(uint16_t type, uint64_t ts, std::span<const uint64_t> fields);
  void publish(format::ChunkBuilder& c, uint16_t flags);
  void flush_sinks();
  void sync_user_types();
  void emit_calibration();
  uint32_t name_id(const char* p);
  uint32_t text_id(std::string_view s);
  uint32_t function_id(uint64_t address);
  std::string header_bytes() const;

  CollectorOptions opt_;
  std::unique_ptr<FileSink> file_;
  std::unique_ptr<LiveServer> live_;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  format::ChunkBuilder meta_;
  format::DensePace pace_;  // how publish() compresses
  std::vector<std::string> meta_frames_;  // replayed to live clients that join
  std::unordered_map<ThreadBuffer*, Feedlet> feedlets_;
  uint32_t next_feedlet_ = 1;

  std::unordered_map<const void*, uint32_t> name_by_ptr_;
  std::unordered_map<std::string, uint32_t> name_by_text_;
  std::unordered_map<uint64_t, uint32_t> function_by_addr_;
  std::unique_ptr<Symbols> symbols_;  // made at the first function named
  struct CacheEntry { const void* ptr; uint32_t id; };
  CacheEntry name_cache_[1024] = {};
  uint32_t next_string_ = 1;

  std::vector<format::EventTypeDef> user_types_;  // the collector's copy
  // Categories (ts_begin_c, ts_instant_c): the text of each mask seen, as
  // a string id, until a category is named again; the type `.cat`.
  uint32_t category_id(uint64_t mask);
  std::unordered_map<uint64_t, uint32_t> category_ids_;
  uint32_t category_version_ = 0;
  uint16_t category_type_ = 0;
  bool category_failed_ = false;  // no user type code was left for `.cat`
  uint64_t last_calibration_ns_ = 0;
  std::vector<uint8_t> frame_;

  // Published for ts_get_stats() on other threads.
  std::atomic<uint64_t> events_recorded_{0}, events_dropped_{0}, chunks_written_{0};
  std::atomic<uint64_t> events_lost_io_{0}, bytes_written_{0}, live_clients_{0}, live_chunks_dropped_{0};
};

}  // namespace tinescope::rec
