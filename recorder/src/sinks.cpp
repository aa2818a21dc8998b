#include "sinks.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.hpp"

namespace tinescope::rec {

// ------------------------------------------------------------------ file

bool FileSink::open(const std::string& path, bool overwrite, std::string& error) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (overwrite ? O_TRUNC : O_EXCL);
  fd_ = ::open(path.c_str(), flags, 0644);
  if (fd_ < 0) {
    error = path + ": " + std::strerror(errno) +
            (errno == EEXIST ? " (refusing to overwrite an existing trace)" : "");
    return false;
  }
  buf_.reserve(1 << 20);
  return true;
}

FileSink::~FileSink() {
  flush();
  if (fd_ >= 0) ::close(fd_);
}

void FileSink::append(const uint8_t* data, size_t n, uint64_t events) {
  buf_.insert(buf_.end(), data, data + n);
  frames_.emplace_back(buf_.size(), events);
  if (buf_.size() >= (1u << 20)) flush();
}

void FileSink::flush() {
  size_t done = 0;
  while (done < buf_.size()) {
    ssize_t w = ::write(fd_, buf_.data() + done, buf_.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;  // disk full, I/O error: what is left is lost
    done += size_t(w);
  }
  bytes_written_ += done;
  // Events of every frame that did not reach the file in full are lost. A
  // partly written frame leaves a truncated chunk that readers skip.
  for (auto [end, events] : frames_)
    if (end > done) events_lost_ += events;
  buf_.clear();
  frames_.clear();
}

// ------------------------------------------------------------------ live

static bool set_nonblocking(int fd) { return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0; }

bool LiveServer::listen(const std::string& address, std::string& error) {
  auto fail = [&](const std::string& what) {
    error = "live feed " + address + ": " + what + (errno ? std::string(": ") + std::strerror(errno) : "");
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    return false;
  };
  errno = 0;
  if (address.rfind("unix:", 0) == 0) {
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::string path = address.substr(5);
    if (path.empty() || path.size() >= sizeof sa.sun_path) return fail("bad socket path");
    std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return fail("socket");
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      // A socket left behind by a process that died: nobody answers on it,
      // so it may go. Anything else at that path is not ours to remove.
      struct stat st{};
      int probe = errno == EADDRINUSE && lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)
                      ? ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)
                      : -1;
      bool stale = probe >= 0 && ::connect(probe, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 &&
                   errno == ECONNREFUSED;
      if (probe >= 0) ::close(probe);
      errno = EADDRINUSE;
      if (!stale || ::unlink(path.c_str()) != 0 ||
          ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
        return fail("bind");
    }
    unix_path_ = path;
  } else if (address.rfind("tcp:", 0) == 0) {
    std::string rest = address.substr(4);
    size_t colon = rest.rfind(':');
    if (colon == std::string::npos) return fail("expected tcp:HOST:PORT");
    std::string host = rest.substr(0, colon), port = rest.substr(colon + 1);
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    if (getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res) != 0 || !res)
      return fail("cannot resolve " + rest);
    fd_ = ::socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd_ >= 0) setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    bool ok = fd_ >= 0 && ::bind(fd_, res->ai_addr, res->ai_addrlen) == 0;
    freeaddrinfo(res);
    if (!ok) return fail("bind");
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len);
    port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  } else {
    return fail("expected unix:PATH or tcp:HOST:PORT");
  }
  if (::listen(fd_, 16) != 0 || !set_nonblocking(fd_)) return fail("listen");
  return true;
}

LiveServer::~LiveServer() {
  while (!clients_.empty()) close_client(clients_.size() - 1);
  if (fd_ >= 0) ::close(fd_);
  if (!unix_path_.empty()) ::unlink(unix_path_.c_str());
}

void LiveServer::accept_clients(const std::vector<const std::string*>& greeting) {
  for (;;) {
    int c = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) return;
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on unix sockets
    Client client{c, {}, 0};
    for (const std::string* s : greeting) client.out.insert(client.out.end(), s->begin(), s->end());
    clients_.push_back(std::move(client));
  }
}

void LiveServer::send(const uint8_t* data, size_t n, bool metadata) {
  for (size_t i = clients_.size(); i-- > 0;) {
    Client& c = clients_[i];
    if (c.out.size() - c.sent + n > kMaxBacklog) {
      if (metadata) {  // without it nothing after makes sense: let it reconnect
        close_client(i);
        continue;
      }
      ++chunks_dropped_;
      continue;
    }
    c.out.insert(c.out.end(), data, data + n);
  }
}

void LiveServer::pump() {
  for (size_t i = clients_.size(); i-- > 0;) {
    Client& c = clients_[i];
    while (c.sent < c.out.size()) {
      ssize_t w = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) {
        c.sent += size_t(w);
        continue;
      }
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
      close_client(i);  // the viewer went away
      goto next;
    }
    if (c.sent == c.out.size()) {
      c.out.clear();
      c.sent = 0;
    } else if (c.sent > (1u << 20)) {
      c.out.erase(c.out.begin(), c.out.begin() + long(c.sent));
      c.sent = 0;
    }
  next:;
  }
}

void LiveServer::drain(uint64_t timeout_ns) {
  uint64_t deadline = mono_ns() + timeout_ns;
  for (;;) {
    pump();
    bool pending = false;
    for (const Client& c : clients_) pending |= c.sent < c.out.size();
    if (!pending || mono_ns() > deadline) return;
    usleep(1000);
  }
}

void LiveServer::close_client(size_t i) {
  ::close(clients_[i].fd);
  clients_.erase(clients_.begin() + long(i));
}

}  // namespace tinescope::rec
