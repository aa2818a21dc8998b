// tinescope-queues: messages across many queues (issue 52's workload), and
// its own record of what it sent and received, to hold the tools' counts to.
//
// P producers send messages to random queues; each of N queue threads takes
// messages from its queue (its channel, named "q.NN" with ts_channel_name),
// handles each in a "handle" interval and forwards half of them to another
// queue from inside it (a chain of hops). Queues forward along a fixed
// service graph, as real systems do: each to one of its two successors on a
// ring laid in a shuffled order (seeded), so that no thread order shows it
// by chance; `--forward any` sends to any other queue instead. At the end the producers stop and
// the queue threads stop where they are: what is left in the queues was sent
// and never received (much of it in q.13, whose handling takes 3 ms a
// message, so that it falls behind). One message is put in a queue with no send recorded:
// received but never sent.
//
// Usage: tinescope-queues [-o FILE] [--queues N] [--producers P]
//                         [--duration S] [--rate R] [--record FILE.json] [--overwrite]
//                         [--forward ring|any]
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tinescope/tinescope.hpp"

namespace {

std::atomic<bool> g_stop{false};
constexpr size_t kSlowQueue = 12;  // q.13: handles each message in 3 ms

struct Message {
  uint64_t id;
  bool recorded;  // its send was recorded
};

struct Queue {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<Message> items;
  uint64_t channel = 0;
  std::string name;
  std::vector<size_t> next;  // the queues it forwards to (empty: any other)
  // The workload's own record.
  std::atomic<uint64_t> sent{0}, received{0}, received_unsent{0};
};

void push(Queue& q, Message m) {
  {
    std::lock_guard<std::mutex> lock(q.mutex);
    q.items.push_back(m);
  }
  q.cv.notify_one();
}

void send_to(Queue& q) {
  const uint64_t id = ts::message_id();
  ts::send(id, q.channel, 64);
  q.sent.fetch_add(1, std::memory_order_relaxed);
  push(q, Message{id, true});
}

void queue_thread(size_t index, std::vector<std::unique_ptr<Queue>>* queues) {
  Queue& q = *(*queues)[index];
  pthread_setname_np(pthread_self(), q.name.substr(0, 15).c_str());
  ts::thread_name(q.name.c_str());
  std::mt19937_64 rng(index * 7919 + 1);
  while (!g_stop.load()) {
    Message m;
    {
      std::unique_lock<std::mutex> lock(q.mutex);
      if (!q.cv.wait_for(lock, std::chrono::milliseconds(5), [&] { return !q.items.empty(); })) continue;
      m = q.items.front();
      q.items.pop_front();
    }
    // Taken from the queue: received, stop or not.
    TS_SCOPE("handle");
    ts::recv(m.id, q.channel, 64);
    // The work: a few microseconds; the slow queue's, milliseconds (it
    // falls behind, and its backlog is never received).
    if (index == kSlowQueue % queues->size()) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    else for (const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(5 + rng() % 20);
              std::chrono::steady_clock::now() < until;) {
    }
    (m.recorded ? q.received : q.received_unsent).fetch_add(1, std::memory_order_relaxed);
    if (rng() % 2 == 0 && queues->size() > 1) {
      size_t next = rng() % (queues->size() - 1);
      if (next >= index) ++next;
      if (!q.next.empty()) next = q.next[rng() % q.next.size()];
      send_to(*(*queues)[next]);
    }
  }
}

void producer_thread(int index, std::vector<std::unique_ptr<Queue>>* queues, double rate) {
  const std::string name = "producer." + std::to_string(index);
  pthread_setname_np(pthread_self(), name.c_str());
  ts::thread_name(name.c_str());
  std::mt19937_64 rng(uint64_t(index) * 104729 + 7);
  const auto gap = std::chrono::duration<double>(1.0 / rate);
  auto next = std::chrono::steady_clock::now();
  while (!g_stop.load()) {
    {
      TS_SCOPE("produce");
      send_to(*(*queues)[rng() % queues->size()]);
    }
    next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(gap);
    std::this_thread::sleep_until(next);
  }
}

void usage() {
  std::fprintf(stderr,
               "usage: tinescope-queues [-o FILE] [--queues N] [--producers P] [--duration SECONDS]\n"
               "                        [--rate MESSAGES_PER_S_PER_PRODUCER] [--record FILE.json] [--overwrite]\n"
               "                        [--forward ring|any]\n"
               "  P producers send to N queues (channels q.NN); each queue's thread handles its messages\n"
               "  and forwards half to one of two others on a fixed ring (--forward any: to any other\n"
               "  queue). What is left in the queues at the end was never\n"
               "  received; one message is received that was never sent. --record writes the workload's\n"
               "  own counts, per channel, as JSON.\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string out = "queues.tine", record;
  size_t n_queues = 100;
  int producers = 4;
  double duration = 1, rate = 5000;
  bool overwrite = false, ring = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-o" || a == "--out") out = value();
    else if (a == "--queues") n_queues = size_t(std::max(1, std::atoi(value())));
    else if (a == "--producers") producers = std::max(1, std::atoi(value()));
    else if (a == "--duration") duration = std::atof(value());
    else if (a == "--rate") rate = std::max(1.0, std::atof(value()));
    else if (a == "--record") record = value();
    else if (a == "--overwrite") overwrite = true;
    else if (a == "--forward") ring = std::string(value()) != "any";
    else if (a == "-h" || a == "--help") return usage(), 0;
    else return usage(), 2;
  }
  ts_config config{};
  config.file_path = out.c_str();
  config.buffer_bytes = 1u << 20;
  config.overwrite = overwrite ? 1 : 0;
  if (ts_start(&config) != 0) {
    std::fprintf(stderr, "tinescope-queues: %s\n", ts_last_error());
    return 1;
  }
  ts::process_name("tinescope-queues");
  ts::metadata("workload", "messages across queues");
  std::vector<std::unique_ptr<Queue>> queues;
  for (size_t i = 0; i < n_queues; ++i) {
    auto q = std::make_unique<Queue>();
    q->channel = i + 1;
    char name[16];
    std::snprintf(name, sizeof name, "q.%02zu", i + 1);
    q->name = name;
    ts::channel_name(q->channel, name);
    queues.push_back(std::move(q));
  }
  if (ring && n_queues > 2) {
    std::vector<size_t> order(n_queues);
    for (size_t i = 0; i < n_queues; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937_64(52));
    for (size_t j = 0; j < n_queues; ++j)
      queues[order[j]]->next = {order[(j + 1) % n_queues], order[(j + 2) % n_queues]};
  }
  // A message no send was recorded for (it came from outside the trace).
  push(*queues[n_queues / 2], Message{uint64_t(1) << 62, false});
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n_queues; ++i) threads.emplace_back(queue_thread, i, &queues);
  for (int p = 0; p < producers; ++p) threads.emplace_back(producer_thread, p, &queues, rate);
  std::this_thread::sleep_for(std::chrono::duration<double>(duration));
  g_stop = true;
  for (std::thread& t : threads) t.join();
  ts_stop();
  ts_stats st{};
  ts_get_stats(&st);

  uint64_t sent = 0, received = 0, never_received = 0, never_sent = 0;
  std::string rows;
  for (const auto& q : queues) {
    uint64_t left = 0, left_unsent = 0;
    for (const Message& m : q->items) (m.recorded ? left : left_unsent)++;
    sent += q->sent, received += q->received + q->received_unsent;
    never_received += left, never_sent += q->received_unsent;
    char row[256];
    std::snprintf(row, sizeof row,
                  "%s\n    {\"channel\": %llu, \"name\": \"%s\", \"sent\": %llu, \"received\": %llu, "
                  "\"never_received\": %llu, \"never_sent\": %llu}",
                  rows.empty() ? "" : ",", (unsigned long long)q->channel, q->name.c_str(),
                  (unsigned long long)q->sent.load(), (unsigned long long)(q->received + q->received_unsent),
                  (unsigned long long)left, (unsigned long long)q->received_unsent.load());
    rows += row;
  }
  std::printf("tinescope-queues: %zu queues, %d producers, %.2f s: %llu sent, %llu received, %llu never received, "
              "%llu never sent; %llu events recorded, %llu dropped -> %s\n",
              n_queues, producers, duration, (unsigned long long)sent, (unsigned long long)received,
              (unsigned long long)never_received, (unsigned long long)never_sent,
              (unsigned long long)st.events_recorded, (unsigned long long)st.events_dropped, out.c_str());
  if (!record.empty()) {
    FILE* f = std::fopen(record.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "tinescope-queues: cannot write %s\n", record.c_str());
      return 1;
    }
    std::fprintf(f,
                 "{\"sent\": %llu, \"received\": %llu, \"never_received\": %llu, \"never_sent\": %llu, "
                 "\"events_dropped\": %llu,\n  \"by_channel\": [%s\n  ]\n}\n",
                 (unsigned long long)sent, (unsigned long long)received, (unsigned long long)never_received,
                 (unsigned long long)never_sent, (unsigned long long)st.events_dropped, rows.c_str());
    std::fclose(f);
  }
  return 0;
}
