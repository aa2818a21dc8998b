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
#include <future>
#include <string>
#include <vector>

#include "tinescope/index/trace_index.hpp"

namespace tinescope::analysis {

// (Trivial, no member defaults: a window of millions is made room for at
// once, and filled.)
struct SmallEvent {
  uint64_t ts;
  uint32_t feedlet;
  uint16_t type;
  uint64_t u[3];  // its first three fields (trace::Event::u)
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
    if (!done_) ahead_ = std::async(std::launch::async, [this] { read_window(next_events_); });
  }

  ~MergedEvents() {
    if (ahead_.valid()) ahead_.wait();
  }

  bool next(SmallEvent& e) {
    while (at_ == window_events_.size()) {
      if (!ahead_.valid()) return false;
      // The next window was read on another thread while this one was
      // used; the one after it is read now.
      ahead_.get();
      window_events_.swap(next_events_);
      at_ = 0;
      if (!done_) ahead_ = std::async(std::launch::async, [this] { read_window(next_events_); });
    }
    e = window_events_[at_++];
    return true;
  }
  uint64_t end() const { return hi_; }
  // "FILE: chunk at offset N: why" for each chunk that could not be read.
  const std::vector<std::string>& unreadable() const { return unreadable_; }

 private:
  void read_window(std::vector<SmallEvent>& out) {
    const uint64_t w0 = next_window_, w1 = hi_ - w0 < window_ - 1 ? hi_ : w0 + window_ - 1;
    done_ = w1 == hi_;
    next_window_ = w1 + 1;
    per_feedlet_.resize(feedlets_.size());
    size_t total = 0;
    for (size_t k = 0; k < feedlets_.size(); ++k) {
      const uint32_t f = feedlets_[k];
      std::vector<SmallEvent>& mine = per_feedlet_[k];
      mine.clear();
      std::string why;
      const bool ok = ix_.decode_events(
          f, w0, w1,
          [&](const trace::Event& ev) {
            if (!wanted_[ev.type]) return;
            mine.push_back(SmallEvent{ev.ts, f, ev.type, {ev.u[0], ev.u[1], ev.u[2]}});
          },
          why);
      if (!ok && std::find(unreadable_.begin(), unreadable_.end(), why) == unreadable_.end())
        unreadable_.push_back(why);
      total += mine.size();
    }
    // Each feedlet's events are in its order: merged by time, ties by
    // feedlet id (a heap of the feedlets' next events).
    out.clear();
    out.reserve(total);
    if (feedlets_.size() <= 16) {  // a few threads: the smallest head by a scan, cheaper than a heap
      std::vector<size_t>& at = at_each_;
      at.assign(feedlets_.size(), 0);
      // (Written by index into room made once: push_back was a call per
      // event, a sixth of a job scan.)
      out.resize(total);
      SmallEvent* to = out.data();
      for (;;) {
        size_t best = SIZE_MAX;
        uint64_t best_ts = UINT64_MAX;
        for (size_t k = 0; k < at.size(); ++k)
          if (at[k] < per_feedlet_[k].size() && per_feedlet_[k][at[k]].ts < best_ts) best = k, best_ts = per_feedlet_[k][at[k]].ts;
        if (best == SIZE_MAX) break;
        *to++ = per_feedlet_[best][at[best]++];
      }
      out.resize(size_t(to - out.data()));  // (all of them: a head at UINT64_MAX is one no scan picks)
    } else {
      merge_by_heap(out);
    }
    if (!rank_) return;
    for (size_t i = 0; i < out.size();) {
      size_t j = i + 1;
      bool several = false;  // threads at this tick (one thread's events keep their order)
      while (j < out.size() && out[j].ts == out[i].ts) several |= out[j].feedlet != out[i].feedlet, ++j;
      if (several && j - i <= 64) by_rank(out, i, j);  // (past 64 at one tick: as merged, not in quadratic time)
      i = j;
    }
  }

  void merge_by_heap(std::vector<SmallEvent>& out) {
    heap_.clear();
    for (size_t k = 0; k < feedlets_.size(); ++k)
      if (!per_feedlet_[k].empty()) heap_.push_back({per_feedlet_[k][0].ts, uint32_t(k), 0});
    auto later = [](const Head& a, const Head& b) { return a.ts != b.ts ? a.ts > b.ts : a.k > b.k; };
    std::make_heap(heap_.begin(), heap_.end(), later);
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), later);
      Head& h = heap_.back();
      const std::vector<SmallEvent>& from = per_feedlet_[h.k];
      // Take this feedlet's events up to the next head's time at once.
      const uint64_t until = heap_.size() > 1 ? heap_.front().ts : UINT64_MAX;
      const uint32_t until_k = heap_.size() > 1 ? heap_.front().k : UINT32_MAX;
      size_t i = h.i;
      while (i < from.size() && (from[i].ts < until || (from[i].ts == until && h.k < until_k))) out.push_back(from[i++]);
      if (i < from.size()) {
        h.i = i, h.ts = from[i].ts;
        std::push_heap(heap_.begin(), heap_.end(), later);
      } else {
        heap_.pop_back();
      }
    }
  }
  // Events [i, j) of one tick: each time, of the threads' next events, the
  // one of the lowest rank (ties: the lower thread id).
  void by_rank(std::vector<SmallEvent>& out, size_t i, size_t j) {
    tick_.assign(out.begin() + i, out.begin() + j);
    taken_.assign(tick_.size(), 0);
    for (size_t o = i; o < j; ++o) {
      size_t best = SIZE_MAX;
      heads_.clear();  // threads whose next event was seen
      for (size_t k = 0; k < tick_.size(); ++k) {
        if (taken_[k] || std::find(heads_.begin(), heads_.end(), tick_[k].feedlet) != heads_.end()) continue;
        heads_.push_back(tick_[k].feedlet);
        if (best == SIZE_MAX || rank_(tick_[k].type) < rank_(tick_[best].type)) best = k;
      }
      taken_[best] = 1;
      out[o] = tick_[best];
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
  bool done_ = true;  // (the reading thread's: no window after the one it read)
  struct Head {
    uint64_t ts;
    uint32_t k;
    size_t i;
  };
  std::vector<std::vector<SmallEvent>> per_feedlet_;
  std::vector<Head> heap_;
  std::vector<size_t> at_each_;
  std::future<void> ahead_;  // reads the next window into next_events_
  std::vector<SmallEvent> window_events_, next_events_;
  size_t at_ = 0;
  std::vector<std::string> unreadable_;
};

}  // namespace tinescope::analysis
