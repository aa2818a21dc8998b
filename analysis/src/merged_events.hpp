// Events of a few built-in types from every feedlet, in the trace's merged
// order (time, then feedlet, then position): what an analysis that follows
// something across threads reads (jobs, locks). Window by window, so memory
// follows a window's events, not the trace. At one tick, events of several
// threads come in the order of a rank where the thread ids' order does not
// make sense of them (a lock's release before another thread's acquire);
// each thread's own events keep their order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tinescope/index/trace_index.hpp"

namespace tinescope::analysis {

struct SmallEvent {
  uint64_t ts = 0;
  uint32_t feedlet = 0;
  uint16_t type = 0;
  uint64_t u[3] = {};  // its first three fields (trace::Event::u)
};

class MergedEvents {
 public:
  using Rank = int (*)(uint16_t type);  // lower first
  MergedEvents(const index::TraceIndex& ix, std::vector<uint16_t> types, Rank rank = nullptr, uint64_t t1 = UINT64_MAX)
      : ix_(ix), rank_(rank) {
    wanted_.assign(format::kMaxEventType + 1, 0);
    uint64_t total = 0;
    for (uint16_t t : types) wanted_[t] = 1;
    for (const index::FeedletSummary& f : ix.feedlets()) {
      uint64_t n = 0;
      for (uint16_t t : types) n += ix.feedlet_events_of_type(f.id, t);
      if (n) feedlets_.push_back(f.id), total += n;
    }
    std::sort(feedlets_.begin(), feedlets_.end());
    lo_ = ix.first_ts(), hi_ = std::min(t1, ix.last_ts());
    done_ = feedlets_.empty() || lo_ > hi_;
    // About a million of them a window (spread evenly over the trace's time).
    const uint64_t windows = std::max<uint64_t>(1, total >> 20);
    window_ = done_ ? 1 : std::max<uint64_t>(1, (hi_ - lo_) / windows + 1);
    next_window_ = lo_;
  }

  bool next(SmallEvent& e) {
    while (at_ == window_events_.size()) {
      if (done_) return false;
      read_window();
    }
    e = window_events_[at_++];
    return true;
  }
  uint64_t end() const { return hi_; }
  // "FILE: chunk at offset N: why" for each chunk that could not be read.
  const std::vector<std::string>& unreadable() const { return unreadable_; }

 private:
  void read_window() {
    const uint64_t w0 = next_window_, w1 = hi_ - w0 < window_ - 1 ? hi_ : w0 + window_ - 1;
    done_ = w1 == hi_;
    next_window_ = w1 + 1;
    window_events_.clear(), at_ = 0;
    for (uint32_t f : feedlets_) {
      std::string why;
      const bool ok = ix_.decode_events(
          f, w0, w1,
          [&](const trace::Event& ev) {
            if (!wanted_[ev.type]) return;
            SmallEvent s;
            s.ts = ev.ts, s.feedlet = f, s.type = ev.type;
            s.u[0] = ev.u[0], s.u[1] = ev.u[1], s.u[2] = ev.u[2];
            window_events_.push_back(s);
          },
          why);
      if (!ok && std::find(unreadable_.begin(), unreadable_.end(), why) == unreadable_.end())
        unreadable_.push_back(why);
    }
    // Each feedlet's events are in its order and the feedlets in id order:
    // a stable sort by time gives the merged order.
    std::stable_sort(window_events_.begin(), window_events_.end(),
                     [](const SmallEvent& a, const SmallEvent& b) { return a.ts < b.ts; });
    if (!rank_) return;
    for (size_t i = 0; i < window_events_.size();) {
      size_t j = i + 1;
      while (j < window_events_.size() && window_events_[j].ts == window_events_[i].ts) ++j;
      if (j - i > 1 && j - i <= 64) by_rank(i, j);  // (past 64 at one tick: as merged, not in quadratic time)
      i = j;
    }
  }
  // Events [i, j) of one tick: each time, of the threads' next events, the
  // one of the lowest rank (ties: the lower thread id).
  void by_rank(size_t i, size_t j) {
    tick_.assign(window_events_.begin() + i, window_events_.begin() + j);
    taken_.assign(tick_.size(), 0);
    for (size_t out = i; out < j; ++out) {
      size_t best = SIZE_MAX;
      heads_.clear();  // threads whose next event was seen
      for (size_t k = 0; k < tick_.size(); ++k) {
        if (taken_[k] || std::find(heads_.begin(), heads_.end(), tick_[k].feedlet) != heads_.end()) continue;
        heads_.push_back(tick_[k].feedlet);
        if (best == SIZE_MAX || rank_(tick_[k].type) < rank_(tick_[best].type)) best = k;
      }
      taken_[best] = 1;
      window_events_[out] = tick_[best];
    }
  }

  const index::TraceIndex& ix_;
  Rank rank_ = nullptr;
  std::vector<SmallEvent> tick_;
  std::vector<uint8_t> taken_;
  std::vector<uint32_t> heads_;
  std::vector<uint8_t> wanted_;
  std::vector<uint32_t> feedlets_;
  uint64_t lo_ = 0, hi_ = 0, window_ = 1, next_window_ = 0;
  bool done_ = true;
  std::vector<SmallEvent> window_events_;
  size_t at_ = 0;
  std::vector<std::string> unreadable_;
};

}  // namespace tinescope::analysis
