#include "tinescope/index/live_source.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "tinescope/format.hpp"

namespace tinescope::index {

namespace fs = std::filesystem;

namespace {

int64_t wall_ns() {
  timespec t;
  ::clock_gettime(CLOCK_REALTIME, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

uint64_t mono_ms() {
  timespec t;
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000 + uint64_t(t.tv_nsec) / 1000000;
}

std::string errno_text() { return std::strerror(errno); }

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b < 10000) std::snprintf(buf, sizeof buf, "%llu bytes", (unsigned long long)b);
  else if (b < 10000000) std::snprintf(buf, sizeof buf, "%.1f KB", double(b) / 1e3);
  else std::snprintf(buf, sizeof buf, "%.1f MB", double(b) / 1e6);
  return buf;
}

// Connects to a unix or tcp address; -1 with the reason.
int connect_to(bool unix_socket, const std::string& target, std::string& why) {
  if (unix_socket) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (target.size() >= sizeof a.sun_path) {
      why = "socket path too long";
      return -1;
    }
    std::memcpy(a.sun_path, target.c_str(), target.size() + 1);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      why = errno_text();
      if (fd >= 0) ::close(fd);
      return -1;
    }
    return fd;
  }
  const size_t colon = target.rfind(':');
  const std::string host = target.substr(0, colon), port = target.substr(colon + 1);
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    why = ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  why = "no address";
  for (addrinfo* p = res; p; p = p->ai_next) {
    fd = ::socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);
    if (fd >= 0 && ::connect(fd, p->ai_addr, p->ai_addrlen) == 0) break;
    why = errno_text();
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  return fd;
}

}  // namespace

// ------------------------------------------------------------------ capture

FeedCapture::~FeedCapture() {
  if (fd_ >= 0) ::close(fd_);
}

bool FeedCapture::open(const std::string& path, const BuildOptions& options, std::string& error) {
  path_ = path;
  options_ = options;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    error = path + ": cannot create: " + errno_text();
    return false;
  }
  return true;
}

bool FeedCapture::append(const uint8_t* data, size_t n, std::string& error) {
  // A feed starts with the file header: anything else is not a feed, and is
  // not saved (a later look at the file would only find garbage).
  if (bytes_ < sizeof format::kFileMagic) {
    const size_t k = std::min(n, size_t(sizeof format::kFileMagic - bytes_));
    if (std::memcmp(data, format::kFileMagic + bytes_, k) != 0) {
      error = "not a tinescope live feed: the bytes at offset " + std::to_string(bytes_) +
              " are not the file header's magic number";
      return false;
    }
  }
  for (size_t done = 0; done < n;) {
    const ssize_t w = ::write(fd_, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      error = path_ + ": cannot save the feed at offset " + std::to_string(bytes_ + done) + ": " + errno_text();
      return false;
    }
    done += size_t(w);
  }
  bytes_ += n;
  return true;
}

bool FeedCapture::update(std::string& error) {
  if (bytes_ == indexed_) return true;
  if (!index_) {
    index_ = TraceIndex::follow(path_, error, options_);
    if (!index_) return false;
  } else if (!index_->update(error)) {
    return false;
  }
  indexed_ = bytes_;
  return true;
}

bool FeedCapture::finish(std::string& error) {
  if (fd_ >= 0) ::close(fd_), fd_ = -1;
  if (bytes_ == 0) {
    ::unlink(path_.c_str());
    error = path_ + ": nothing was received";
    return false;
  }
  if (!update(error)) return false;
  if (!index_->finish(error)) return false;
  return true;
}

// ------------------------------------------------------------------ source

std::unique_ptr<LiveSource> LiveSource::start(const std::string& address, const LiveOptions& options,
                                              std::string& error) {
  std::unique_ptr<LiveSource> s(new LiveSource());
  s->address_ = address;
  s->options_ = options;
  if (s->options_.build.threads == 0) s->options_.build.threads = 1;
  if (address.rfind("unix:", 0) == 0) {
    s->kind_ = Kind::Unix, s->target_ = address.substr(5);
  } else if (address.rfind("tcp:", 0) == 0) {
    s->kind_ = Kind::Tcp, s->target_ = address.substr(4);
    if (s->target_.find(':') == std::string::npos) {
      error = address + ": a TCP address is tcp:HOST:PORT";
      return nullptr;
    }
  } else if (address.rfind("file:", 0) == 0) {
    s->kind_ = Kind::File, s->target_ = address.substr(5);
  } else {
    error = address + ": not a live source (use unix:PATH, tcp:HOST:PORT or file:PATH)";
    return nullptr;
  }
  if (s->target_.empty()) {
    error = address + ": no path or host given";
    return nullptr;
  }
  if (s->kind_ != Kind::File) {
    std::string& dir = s->options_.save_dir;
    if (dir.empty()) {
      const char* data = std::getenv("XDG_DATA_HOME");
      const char* home = std::getenv("HOME");
      dir = data && *data ? std::string(data) + "/tinescope/live"
                          : std::string(home && *home ? home : ".") + "/.local/share/tinescope/live";
    }
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!fs::is_directory(dir)) {
      error = dir + ": cannot create the directory for live captures" + (ec ? ": " + ec.message() : "");
      return nullptr;
    }
  }
  s->thread_ = std::thread([p = s.get()] { p->kind_ == Kind::File ? p->run_file() : p->run_socket(); });
  return s;
}

LiveSource::~LiveSource() { stop(); }

void LiveSource::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::vector<std::shared_ptr<TraceIndex>> LiveSource::indexes() const {
  std::lock_guard lock(mu_);
  return indexes_;
}

std::vector<LiveMessage> LiveSource::messages(size_t from) const {
  std::lock_guard lock(mu_);
  if (from >= messages_.size()) return {};
  return {messages_.begin() + ptrdiff_t(from), messages_.end()};
}

LiveSource::Status LiveSource::status() const {
  std::lock_guard lock(mu_);
  return status_;
}

void LiveSource::nap(uint32_t ms) const {
  // In small steps, so that stop() is never kept waiting.
  for (uint32_t t = 0; t < ms && !stop_.load(); t += 2) ::usleep(2000);
}

void LiveSource::say(bool error, std::string text) {
  std::lock_guard lock(mu_);
  messages_.push_back({wall_ns(), error, address_ + ": " + std::move(text)});
}

void LiveSource::publish_index(std::shared_ptr<TraceIndex> ix) {
  {
    std::lock_guard lock(mu_);
    indexes_.push_back(std::move(ix));
  }
  damage_told_ = losses_told_ = 0;
  dropped_told_ = 0;
  generation_.fetch_add(1, std::memory_order_release);
}

void LiveSource::check_news(const TraceIndex& ix) {
  // Told once each, and at most a few of each kind: a flood of garbage must
  // not become a flood of messages.
  const std::vector<trace::Damage> damage = ix.damage();
  for (; damage_told_ < damage.size(); ++damage_told_) {
    const trace::Damage& d = damage[damage_told_];
    if (damage_told_ < 8)
      say(true, "damaged bytes [" + std::to_string(d.offset) + ", " + std::to_string(d.offset + d.length) +
                    ") of the feed were skipped: " + d.reason);
    else if (damage_told_ == 8)
      say(true, "more damage follows; `tinescope info " + ix.trace_path() + "` lists all of it");
  }
  const std::vector<trace::Loss> losses = ix.losses();
  for (; losses_told_ < losses.size(); ++losses_told_) {
    const trace::Loss& l = losses[losses_told_];
    if (l.first_sequence == 0) continue;  // chunks from before we joined the feed
    if (losses_told_ < 8)
      say(true, std::to_string(l.count) + " chunk(s) of feedlet " + std::to_string(l.feedlet) +
                    " never arrived (the viewer fell behind the feed, or the recorder dropped them)");
  }
  const uint64_t dropped = ix.dropped();
  if (dropped > dropped_told_) {
    say(false, "the recorder dropped " + std::to_string(dropped - dropped_told_) +
                   " events (its buffers were full); the gaps are hatched");
    dropped_told_ = dropped;
  }
}

std::string LiveSource::next_capture_path() {
  std::string base = target_;
  for (char& c : base)
    if (c == '/' || c == ':' || c == ' ') c = '-';
  while (!base.empty() && base[0] == '-') base.erase(0, 1);
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  for (int n = 1;; ++n) {
    const std::string p = options_.save_dir + "/" + base + "-" + stamp + (n > 1 ? "-" + std::to_string(n) : "") + ".tine";
    if (!fs::exists(p)) return p;
  }
}

void LiveSource::run_socket() {
  std::vector<uint8_t> buf(1 << 20);
  std::string last_connect_error;
  while (!stop_.load()) {
    std::string why;
    const int fd = connect_to(kind_ == Kind::Unix, target_, why);
    if (fd < 0) {
      if (why != last_connect_error) say(false, "waiting for the source (" + why + "); retrying");
      last_connect_error = why;
      nap(options_.retry_ms);
      continue;
    }
    last_connect_error.clear();
    FeedCapture capture;
    std::string error;
    if (!capture.open(next_capture_path(), options_.build, error)) {
      say(true, error);
      ::close(fd);
      nap(1000);
      continue;
    }
    {
      std::lock_guard lock(mu_);
      status_.receiving = true;
      ++status_.connections;
      status_.saving_to = capture.path();
    }
    say(false, "connected; saving the feed to " + capture.path());
    bool published = false, bad = false;
    uint64_t last_update = mono_ms();
    std::string ended;
    while (!stop_.load()) {
      pollfd p{fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, int(options_.update_ms));
      if (ready > 0) {
        const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
        if (n == 0) {
          ended = "the source closed the feed";
          break;
        }
        if (n < 0 && errno != EINTR && errno != EAGAIN) {
          ended = "the connection failed: " + errno_text();
          break;
        }
        if (n > 0) {
          if (!capture.append(buf.data(), size_t(n), error)) {
            say(true, error + "; disconnected");
            bad = true;
            break;
          }
          std::lock_guard lock(mu_);
          status_.bytes += uint64_t(n);
        }
      }
      if (mono_ms() - last_update >= options_.update_ms) {
        last_update = mono_ms();
        const uint64_t before = capture.index() ? capture.index()->trace_bytes() : 0;
        if (!capture.update(error)) {
          say(true, error);
          bad = true;
          break;
        }
        if (capture.index() && !published) publish_index(capture.index()), published = true;
        if (capture.index() && capture.index()->trace_bytes() != before) {
          generation_.fetch_add(1, std::memory_order_release);
          check_news(*capture.index());
        }
      }
    }
    ::close(fd);
    {
      std::lock_guard lock(mu_);
      status_.receiving = false;
    }
    if (!ended.empty()) say(!stop_.load(), ended + " after " + human_bytes(capture.bytes()));
    if (capture.finish(error)) {
      if (!published) publish_index(capture.index());
      check_news(*capture.index());
      say(false, "saved " + capture.path() + " (" + std::to_string(capture.index()->events()) +
                     " events; reopen it with `tinescope view`)");
    } else if (capture.bytes() > 0 && !bad) {
      say(true, error);
    }
    generation_.fetch_add(1, std::memory_order_release);
    if (bad) nap(4 * options_.retry_ms);  // garbage or a broken file: give the source a moment
  }
}

void LiveSource::run_file() {
  std::shared_ptr<TraceIndex> ix;
  std::string last_error;
  uint64_t size_seen = 0;
  while (!stop_.load()) {
    struct stat st;
    const bool there = ::stat(target_.c_str(), &st) == 0;
    if (!there || (!ix && st.st_size == 0)) {
      std::string why = there ? "the file is empty" : errno_text();
      if (why != last_error) say(false, "waiting for the trace (" + why + ")");
      last_error = why;
      nap(options_.retry_ms);
      continue;
    }
    std::string error;
    if (!ix) {
      ix = TraceIndex::follow(target_, error, options_.build);
      if (!ix) {
        if (error != last_error) say(true, error);
        last_error = error;
        nap(options_.retry_ms);
        continue;
      }
      {
        std::lock_guard lock(mu_);
        status_.receiving = true;
        status_.connections = 1;
        status_.saving_to = target_;
      }
      say(false, "following the growing trace");
      publish_index(ix);
      size_seen = uint64_t(st.st_size);
    } else if (uint64_t(st.st_size) < size_seen) {
      say(true, "the file shrank from " + std::to_string(size_seen) + " to " + std::to_string(st.st_size) +
                    " bytes (rewritten?); keeping what was read");
      break;
    } else if (uint64_t(st.st_size) > size_seen) {
      size_seen = uint64_t(st.st_size);
      if (!ix->update(error)) {
        say(true, error);
        break;
      }
      generation_.fetch_add(1, std::memory_order_release);
    }
    {
      std::lock_guard lock(mu_);
      status_.bytes = size_seen;
    }
    check_news(*ix);
    nap(options_.update_ms);
  }
  {
    std::lock_guard lock(mu_);
    status_.receiving = false;
  }
  // The index of what was followed is worth keeping; if the file grows
  // later it is found stale and rebuilt.
  std::string error;
  if (ix && !ix->finish(error)) say(true, error);
}

}  // namespace tinescope::index
