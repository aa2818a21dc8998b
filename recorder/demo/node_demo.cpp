// tinescope-demo --node: two "machines" that talk over sockets, each
// recording its own trace on its own clock, for the merge of several traces
// (tinescope view A B aligns them from their clock sync messages).
//
// Node A (this process) sends requests on channel "req" to node B (a child
// process); B handles each in a "handle" interval and answers on "resp".
// Every 10 ms A's "sync" thread sends a clock sync message and B's answers
// with one back, over a socket of their own, so that a busy request queue
// does not delay them (the fit assumes equal delays each way).
//
// B records with TINESCOPE_CLOCK_SKEW: its clock reads 5 s ahead of A's and
// runs 1000 ppm (1.001x) fast, as an unsynchronised machine's might; the
// skew is written to B's trace as metadata "demo.clock_skew", and each
// node's own count of what it sent and received as "demo.*", so that a test
// can hold the fit and the matching to them.
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "tinescope/tinescope.hpp"

namespace {

constexpr uint64_t kReq = 1, kResp = 2;
constexpr const char* kSkew = "5000000000,1.001";  // B's clock: 5 s + 1.001 x A's

struct Frame {
  uint64_t id;
  uint32_t kind;  // 0 request, 1 response, 2 stop
  uint32_t size;
};

bool write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    const ssize_t w = ::write(fd, c, n);
    if (w <= 0) return false;
    c += w, n -= size_t(w);
  }
  return true;
}

bool read_all(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n) {
    const ssize_t r = ::read(fd, c, n);
    if (r <= 0) return false;
    c += r, n -= size_t(r);
  }
  return true;
}

uint64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

void spin_for(uint64_t ns) {
  const uint64_t end = now_ns() + ns;
  while (now_ns() < end) {
  }
}

bool start(const std::string& path, bool overwrite, const char* node) {
  ts_config c{};
  c.file_path = path.c_str();
  c.overwrite = overwrite;
  if (ts_start(&c) != 0) {
    std::fprintf(stderr, "tinescope-demo --node: %s: %s\n", path.c_str(), ts_last_error());
    return false;
  }
  ts::process_name((std::string("node ") + node).c_str());
  ts::metadata("node", node);
  ts::channel_name(kReq, "req");
  ts::channel_name(kResp, "resp");
  return true;
}

// Node B: answers requests on `data` and sync messages on `sync` until A says stop.
int node_b(int data, int sync, const std::string& path, bool overwrite) {
  setenv("TINESCOPE_CLOCK_SKEW", kSkew, 1);
  if (!start(path, overwrite, "B")) return 1;
  ts::metadata("demo.clock_skew", kSkew);
  std::thread syncer([sync] {
    ts::thread_name("sync");
    uint64_t id;
    while (read_all(sync, &id, sizeof id)) {
      ts_clock_sync_recv(id, 1);
      const uint64_t back = id | 1;  // A numbers its own ids even
      ts_clock_sync_send(back, 1);
      if (!write_all(sync, &back, sizeof back)) break;
    }
  });
  ts::thread_name("server");
  Frame f;
  uint64_t n = 0;
  while (read_all(data, &f, sizeof f) && f.kind != 2) {
    ts::recv(f.id, kReq, f.size);
    {
      ts::Scope handle("handle");
      spin_for(100'000 + (f.id % 7) * 50'000);  // 100 to 400 us
    }
    Frame r{(uint64_t(2) << 40) | ++n, 1, 64};
    ts::send(r.id, kResp, r.size);
    if (!write_all(data, &r, sizeof r)) break;
  }
  ::shutdown(sync, SHUT_RDWR);
  syncer.join();
  ts::metadata("demo.requests_received", std::to_string(n).c_str());  // the workload's own count
  ts_stop();
  return 0;
}

}  // namespace

int run_node_demo(const std::string& out, double duration, bool overwrite) {
  std::string stem = out;
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".tine") == 0) stem.resize(stem.size() - 5);
  const std::string path_a = stem + ".a.tine", path_b = stem + ".b.tine";
  int data[2], sync[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, data) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sync) != 0) {
    std::perror("tinescope-demo --node: socketpair");
    return 1;
  }
  const pid_t child = fork();
  if (child < 0) return std::perror("tinescope-demo --node: fork"), 1;
  if (child == 0) {
    ::close(data[0]), ::close(sync[0]);
    std::_Exit(node_b(data[1], sync[1], path_b, overwrite));
  }
  ::close(data[1]), ::close(sync[1]);
  const int d = data[0], s = sync[0];
  if (!start(path_a, overwrite, "A")) {
    Frame stop{0, 2, 0};
    write_all(d, &stop, sizeof stop);
    waitpid(child, nullptr, 0);
    return 1;
  }
  std::atomic<bool> stop{false};
  std::thread syncer([&] {
    ts::thread_name("sync");
    for (uint64_t n = 1; !stop.load(); ++n) {
      const uint64_t id = n * 2;
      ts_clock_sync_send(id, 2);
      uint64_t back;
      if (!write_all(s, &id, sizeof id) || !read_all(s, &back, sizeof back)) break;
      ts_clock_sync_recv(back, 2);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  uint64_t replies_received = 0, requests_sent = 0;
  std::thread replies([&] {
    ts::thread_name("replies");
    Frame r;
    while (read_all(d, &r, sizeof r)) {
      ++replies_received;
      ts::recv(r.id, kResp, r.size);
      TS_SCOPE("reply");
      spin_for(20'000);
    }
  });
  ts::thread_name("client");
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(duration);
  for (uint64_t n = 1; std::chrono::steady_clock::now() < end; ++n) {
    Frame f{(uint64_t(1) << 40) | n, 0, 256};
    {
      TS_SCOPE("request");
      ts::send(f.id, kReq, f.size);
      if (!write_all(d, &f, sizeof f)) break;
      ++requests_sent;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stop = true;
  Frame bye{0, 2, 0};
  write_all(d, &bye, sizeof bye);
  syncer.join();
  int status = 0;
  waitpid(child, &status, 0);
  ::shutdown(d, SHUT_RDWR);
  replies.join();
  ts::metadata("demo.requests_sent", std::to_string(requests_sent).c_str());
  ts::metadata("demo.replies_received", std::to_string(replies_received).c_str());
  ts_stop();
  std::printf("tinescope-demo --node: %s (node A) and %s (node B, its clock 5 s ahead and 1000 ppm fast)\n"
              "  tinescope view %s %s   aligns them from their clock sync messages\n",
              path_a.c_str(), path_b.c_str(), path_a.c_str(), path_b.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
