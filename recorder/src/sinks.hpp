// Where the collector's chunk frames go: a trace file, and a live feed served
// to any number of viewers. Both run on the collector thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tinescope::rec {

class FileSink {
 public:
  // Creates `path`; refuses to replace an existing file unless `overwrite`.
  bool open(const std::string& path, bool overwrite, std::string& error);
  ~FileSink();

  // Buffers a frame holding `events` events; flush() writes the buffer.
  void append(const uint8_t* data, size_t n, uint64_t events);
  void flush();

  uint64_t bytes_written() const { return bytes_written_; }
  uint64_t events_lost() const { return events_lost_; }  // in frames that could not be written

 private:
  int fd_ = -1;
  std::vector<uint8_t> buf_;
  std::vector<std::pair<size_t, uint64_t>> frames_;  // (end offset in buf_, events)
  uint64_t bytes_written_ = 0;
  uint64_t events_lost_ = 0;
};

// Listens on "unix:/path" or "tcp:HOST:PORT". A client that connects first
// gets the header and every metadata chunk so far, then the live chunks.
// Sends never block: a client that falls more than kMaxBacklog behind misses
// data chunks (it sees the sequence gap); one that cannot take metadata is
// disconnected.
class LiveServer {
 public:
  static constexpr size_t kMaxBacklog = 64u << 20;

  bool listen(const std::string& address, std::string& error);
  ~LiveServer();

  // Accepts new clients; `greeting` is what each new one receives first.
  void accept_clients(const std::vector<const std::string*>& greeting);
  void send(const uint8_t* data, size_t n, bool metadata);
  void pump();                      // moves pending bytes into the sockets
  void drain(uint64_t timeout_ns);  // at stop: give clients a moment to take the rest
  int port() const { return port_; }
  uint64_t clients() const { return clients_.size(); }
  uint64_t chunks_dropped() const { return chunks_dropped_; }

 private:
  struct Client {
    int fd;
    std::vector<uint8_t> out;
    size_t sent = 0;
  };
  void close_client(size_t i);

  int fd_ = -1;
  int port_ = 0;
  std::string unix_path_;
  std::vector<Client> clients_;
  uint64_t chunks_dropped_ = 0;
};

}  // namespace tinescope::rec
