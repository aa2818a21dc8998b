// For the live tests: real recording processes and sources that misbehave.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tinescope/index/live_source.hpp"

namespace tinescope::test {

// Some message says `words`.
inline bool mentions(const std::vector<index::LiveMessage>& messages, const std::string& words) {
  for (const index::LiveMessage& m : messages)
    if (m.text.find(words) != std::string::npos) return true;
  return false;
}

// The demo workload recording to a live feed (and nowhere else), as a child process.
inline pid_t start_demo(const std::string& live_address, double seconds) {
  const std::string demo = std::string(std::getenv("TINESCOPE_BIN")) + "/recorder/tinescope-demo";
  const std::string duration = std::to_string(seconds);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::execl(demo.c_str(), demo.c_str(), "-o", "-", "--live", live_address.c_str(), "--duration", duration.c_str(),
            nullptr);
    ::_exit(127);
  }
  return pid;
}

inline bool running(pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) == 0; }

inline void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

// Waits (polling) until `done` holds or `seconds` pass.
inline bool eventually(const std::function<bool()>& done, double seconds,
                       const std::function<void()>& between = [] { std::this_thread::sleep_for(std::chrono::milliseconds(10)); }) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    between();
  }
  return done();
}

// A source that is not a recorder: listens on a unix socket and sends
// whatever `bytes` returns to the first client, then closes.
class FakeSource {
 public:
  FakeSource(const std::string& path, std::function<std::string()> bytes) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    ::unlink(path.c_str());
    ok_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd_, 4) == 0;
    thread_ = std::thread([this, bytes = std::move(bytes)] {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      const std::string b = bytes();
      for (size_t done = 0; done < b.size();) {
        const ssize_t w = ::send(c, b.data() + done, b.size() - done, MSG_NOSIGNAL);
        if (w <= 0) break;
        done += size_t(w);
      }
      ::close(c);
    });
  }
  ~FakeSource() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  bool ok() const { return ok_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool ok_ = false;
  std::thread thread_;
};

}  // namespace tinescope::test
