// Live sources: what the viewer watches while it is being recorded.
//
//  - FeedCapture: the bytes of one live-feed connection, saved to a new trace
//    file as they arrive and indexed incrementally (TraceIndex::follow), so
//    history is bounded by disk, not RAM, and the file can be reopened later.
//  - LiveSource: a thread that keeps one source coming in: a recorder's live
//    feed ("unix:PATH", "tcp:HOST:PORT"), reconnecting when it goes away (a
//    new connection is a new capture), or a trace file that another process
//    is still writing ("file:PATH", follow mode).
//
// Everything a source has to say (connected, closed, garbage, damage, lost
// chunks) becomes a message; a source never stops the program.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tinescope/index/trace_index.hpp"

namespace tinescope::index {

class FeedCapture {
 public:
  ~FeedCapture();
  // Creates `path` for the feed (never replaces an existing file).
  bool open(const std::string& path, const BuildOptions& options, std::string& error);
  // Saves received bytes. False (and nothing saved) when the feed does not
  // start with a tinescope file header: it is not a live feed.
  bool append(const uint8_t* data, size_t n, std::string& error);
  // Indexes what was appended since the last update.
  bool update(std::string& error);
  // The feed ended: a partial chunk at its end is damage; the index is
  // written beside the trace. False (with the reason) if nothing could be
  // indexed; the file is then removed when it holds no trace at all.
  bool finish(std::string& error);

  const std::string& path() const { return path_; }
  uint64_t bytes() const { return bytes_; }
  // Null until the file header has arrived.
  std::shared_ptr<TraceIndex> index() const { return index_; }

 private:
  std::string path_;
  BuildOptions options_;
  int fd_ = -1;
  uint64_t bytes_ = 0;
  uint64_t indexed_ = 0;  // bytes the index has seen
  std::shared_ptr<TraceIndex> index_;
};

struct LiveOptions {
  std::string save_dir;       // where feeds are saved ("" : $XDG_DATA_HOME/tinescope/live)
  uint32_t update_ms = 10;    // how often the index catches up with what arrived
  uint32_t retry_ms = 250;    // between connection attempts
  BuildOptions build;         // index threads (default 1: the viewer draws on the other core)
};

struct LiveMessage {
  int64_t wall_ns = 0;  // CLOCK_REALTIME
  bool error = false;
  std::string text;     // starts with the source's address
};

class LiveSource {
 public:
  // address: "unix:PATH", "tcp:HOST:PORT" or "file:PATH". Fails only for an
  // address it cannot understand or a save directory it cannot create; a
  // source that is not there yet is waited for.
  static std::unique_ptr<LiveSource> start(const std::string& address, const LiveOptions& options,
                                           std::string& error);
  ~LiveSource();  // stops, and finishes the current capture's index

  const std::string& address() const { return address_; }
  // Bumped whenever a capture is added or its index has grown.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // One index per connection, oldest first (a followed file: one).
  std::vector<std::shared_ptr<TraceIndex>> indexes() const;
  // Messages from number `from` on (they are numbered from 0).
  std::vector<LiveMessage> messages(size_t from = 0) const;
  struct Status {
    bool receiving = false;       // connected now (or the file is still growing)
    uint64_t bytes = 0;           // received in all connections
    uint64_t connections = 0;
    std::string saving_to;        // the current capture's file
  };
  Status status() const;
  // Stops receiving and finishes the current capture (the destructor does this too).
  void stop();

 private:
  LiveSource() = default;
  void run_socket();
  void run_file();
  void say(bool error, std::string text);
  void nap(uint32_t ms) const;
  void publish_index(std::shared_ptr<TraceIndex> ix);
  void check_news(const TraceIndex& ix);  // damage, lost chunks, drops: once each
  std::string next_capture_path();

  enum class Kind { Unix, Tcp, File } kind_ = Kind::Unix;
  std::string address_, target_;  // target: the path, or HOST:PORT
  LiveOptions options_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> generation_{0};
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<TraceIndex>> indexes_;
  std::vector<LiveMessage> messages_;
  Status status_;
  // What was already said about the current index.
  size_t damage_told_ = 0, losses_told_ = 0;
  uint64_t dropped_told_ = 0;
};

}  // namespace tinescope::index
