// The hot path makes no allocation and no system call. Allocation is counted
// by interposing malloc and friends; system calls by a seccomp filter on the
// producer thread that hands every call to a supervisor thread (user
// notification), which counts it and lets it continue.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <thread>

#include "tinescope/tinescope.hpp"
#include "trace_helpers.hpp"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);
}

namespace {
thread_local bool tl_counting = false;
std::atomic<uint64_t> g_allocations{0};
inline void count() {
  if (tl_counting) g_allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* malloc(size_t n) {
  count();
  return __libc_malloc(n);
}
void* calloc(size_t a, size_t b) {
  count();
  return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
  count();
  return __libc_realloc(p, n);
}
void free(void* p) {
  count();
  __libc_free(p);
}
void* aligned_alloc(size_t align, size_t n) {
  count();
  return __libc_memalign(align, n);
}
void* memalign(size_t align, size_t n) {
  count();
  return __libc_memalign(align, n);
}
int posix_memalign(void** out, size_t align, size_t n) {
  count();
  *out = __libc_memalign(align, n);
  return *out ? 0 : 12;
}
}

namespace tinescope::test {
namespace {

uint32_t g_type = 0;

void one_of_each() {
  ts_begin("hot");
  ts_end("hot");
  ts_complete("hot", 5);
  ts_instant("hot");
  ts_counter_i64("hot", 1);
  ts_counter_f64("hot", 1.5);
  uint64_t id = ts_message_id();
  ts_message_send(id, 1, 8, "payload", 7);
  ts_message_recv(id, 1, 8, "payload", 7);
  ts_thread_name("hot-thread");
  ts_cpu_name(0, "cpu0");
  ts_metadata("k", "v");
  ts_sched(TS_JOB_START, "hot", 1, 0);
  ts_lock(TS_LOCK_ACQUIRE, "hot", 1);
  ts_clock_sync_send(1, 1);
  ts_func_enter(reinterpret_cast<void*>(&one_of_each));
  ts_func_exit(reinterpret_cast<void*>(&one_of_each));
  const uint64_t slots[2] = {1, 2};
  ts_user_event(g_type, slots);
  (void)ts_now();
}

int seccomp_listener() {
  sock_filter filter[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF)};
  sock_fprog prog{1, filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return int(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
}

TEST(RecorderHotPath, NoAllocationAndNoSystemCallAfterTheFirstEvent) {
  const std::string path = temp_path("hot-path");
  unlink(path.c_str());
  const ts_field fields[] = {{"a", TS_FIELD_U64}, {"b", TS_FIELD_U64}};
  g_type = ts_define_event_type("hot.user", fields, 2);
  ts_config cfg{};
  cfg.file_path = path.c_str();
  cfg.buffer_bytes = 1 << 16;  // small enough that the loop below also drops
  ASSERT_EQ(ts_start(&cfg), 0) << ts_last_error();

  std::atomic<int> listener{-1};
  std::atomic<bool> measuring{false}, supervisor_stop{false};
  std::atomic<uint64_t> syscalls_measured{0}, syscalls_other{0};
  std::map<int, int> which;  // syscall number → count, while measuring
  std::thread supervisor([&] {
    while (listener.load() == -1) std::this_thread::yield();
    int fd = listener.load();
    if (fd < 0) return;
    seccomp_notif req{};
    seccomp_notif_resp resp{};
    while (!supervisor_stop.load()) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 10) <= 0) continue;
      if (p.revents & (POLLHUP | POLLERR)) break;
      std::memset(&req, 0, sizeof req);
      if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) continue;
      if (measuring.load()) {
        ++syscalls_measured;
        ++which[req.data.nr];
      } else {
        ++syscalls_other;
      }
      resp = {};
      resp.id = req.id;
      resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
      ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }
    close(fd);
  });

  bool seccomp_ok = false;
  uint64_t allocations = 0;
  std::thread producer([&] {
    one_of_each();  // the first event: registration may allocate and call the kernel
    int fd = seccomp_listener();
    seccomp_ok = fd >= 0;
    listener.store(fd >= 0 ? fd : -2);
    if (!seccomp_ok) return;
    uint64_t before = g_allocations.load();
    measuring = true;
    tl_counting = true;
    for (int i = 0; i < 20000; ++i) one_of_each();
    tl_counting = false;
    measuring = false;
    allocations = g_allocations.load() - before;
    (void)getppid();  // one system call outside the measured phase: proves the counter works
  });
  producer.join();
  supervisor_stop = true;
  supervisor.join();
  ts_stop();
  ts_stats st{};
  ts_get_stats(&st);

  ASSERT_TRUE(seccomp_ok) << "seccomp user notification is not available: " << std::strerror(errno);
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(syscalls_measured.load(), 0u);
  for (auto [nr, n] : which) ADD_FAILURE() << "system call " << nr << " made " << n << " times on the hot path";
  EXPECT_GT(syscalls_other.load(), 0u) << "the filter saw nothing at all: the check proves nothing";
  EXPECT_GT(st.events_dropped, 0u) << "the loop should also have exercised the drop path";
  Collected c = read_trace(path);
  EXPECT_GT(c.events.size(), 1000u);
  unlink(path.c_str());
}

}  // namespace
}  // namespace tinescope::test
