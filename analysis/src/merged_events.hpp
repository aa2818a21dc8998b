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
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "tinescope/index/trace_index.hpp"
#include "tinescope/trace_decode.hpp"

namespace tinescope::analysis {

// An event's type, time, thread and first three fields.
using SmallEvent = trace::LeadingEvent;

// A vector's allocator that leaves trivial elements uninitialised on
// resize: a window's room is made once and every element then written.
template <class T>
struct NoInit : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = NoInit<U>;
  };
  NoInit() = default;
  template <class U>
  NoInit(const NoInit<U>&) {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
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
    finished_ = feedlets_.empty() || lo_ > hi_;
    // About half a million of them a window (spread evenly over the
    // trace's time). (Each thread's chunk astride two windows is read by
    // both, a sixth of the reading; a million a window halved that, but
    // the live viewer's rescans under ASan then fell behind in gui.live.)
    const uint64_t windows = std::max<uint64_t>(1, total >> 19);
    window_ = finished_ ? 1 : std::max<uint64_t>(1, (hi_ - lo_) / windows + 1);
    next_window_ = lo_;
    for (size_t k = 1; k < kSlots; ++k) launch(slots_[k]);
  }

  ~MergedEvents() {
    for (Slot& s : slots_)
      if (s.done.valid()) s.done.wait();
  }

  bool next(SmallEvent& e) {
    const SmallEvent* p = next();
    if (p) e = *p;
    return p != nullptr;
  }
  // The next event (valid until the next call), or null past the last.
  // (The step within a window inlined, the next window's wait not: with it
  // inlined this was a call with six registers saved, a tenth of a scan.)
  const SmallEvent* next() {
    const Slot& s = slots_[cur_];
    if (at_ == s.order.size()) [[unlikely]]
      return next_window();
    // (The events were written on another core, a window too big for its
    // caches: fetched a few ahead, their misses overlap instead of one after
    // another.)
    if (at_ + kAhead < s.order.size()) __builtin_prefetch(s.order[at_ + kAhead]);
    return s.order[at_++];
  }
  uint64_t end() const { return hi_; }
  // "FILE: chunk at offset N: why" for each chunk that could not be read.
  const std::vector<std::string>& unreadable() const { return unreadable_; }

 private:
  // A window's events, read on a thread of its own, and what reading them uses.
  struct Head {
    uint64_t ts;
    uint32_t k;
    size_t i;
  };
  // An event of a window, in its feedlet's array. (The merge orders these,
  // not copies of the events: a third of what it moved. Pointers, not
  // (feedlet, index): the scan reads each event with one load less.)
  using Ref = const SmallEvent*;
  struct Slot {
    uint64_t w0 = 0, w1 = 0;
    std::vector<std::vector<SmallEvent, NoInit<SmallEvent>>> per_feedlet;
    std::unique_ptr<trace::FieldPlan> plan;  // of the schema its chunks were read with
    std::vector<Ref, NoInit<Ref>> order;  // the window's events in merged order
    std::vector<Head> heap;
    std::vector<Ref> tick;
    std::vector<uint8_t> taken;
    std::vector<uint32_t> heads;
    std::vector<std::string> unreadable;
    bool ties = false;  // events of several threads at one tick: ordered by rank
    std::future<void> done;
  };
  static constexpr size_t kSlots = 3;  // one used, two read ahead
  static constexpr size_t kAhead = 16;  // events prefetched ahead of the one given

  [[gnu::noinline]] const SmallEvent* next_window() {
    if (ended_) return nullptr;
    while (at_ == slots_[cur_].order.size()) {
      // The windows ahead were read on other threads while this one was
      // used (two at once: decoding is most of a scan's cost, and the
      // second core does half of it); this slot now reads the next.
      launch(slots_[cur_]);
      cur_ = (cur_ + 1) % kSlots;
      Slot& s = slots_[cur_];
      if (!s.done.valid()) return at_ = s.order.size(), ended_ = true, nullptr;  // (so later calls come here)
      s.done.get();
      for (std::string& why : s.unreadable)
        if (std::find(unreadable_.begin(), unreadable_.end(), why) == unreadable_.end()) unreadable_.push_back(std::move(why));
      s.unreadable.clear();
      at_ = 0;
    }
    return next();
  }

  void launch(Slot& s) {
    if (finished_) return;
    s.w0 = next_window_, s.w1 = hi_ - next_window_ < window_ - 1 ? hi_ : next_window_ + window_ - 1;
    finished_ = s.w1 == hi_;
    next_window_ = s.w1 + 1;
    s.done = std::async(std::launch::async, [this, &s] { read_window(s); });
  }

  void read_window(Slot& s) {
    const uint64_t w0 = s.w0, w1 = s.w1;
    s.per_feedlet.resize(feedlets_.size());
    size_t total = 0;
    for (size_t k = 0; k < feedlets_.size(); ++k) {
      const uint32_t f = feedlets_[k];
      auto& mine = s.per_feedlet[k];
      mine.clear();
      std::string why;
      // (Decoded here by a loop that knows the few types wanted and their
      // first three fields, the copy inlined into it: the generic decoding
      // and a std::function call an event were half of a job scan.)
      const bool ok = ix_.each_payload(
          f, w0, w1,
          [&](const uint8_t* raw, const format::ChunkHeader& h, const format::Schema& schema, std::string& reason) {
            const size_t known = size_t(std::count(schema.known.begin(), schema.known.end(), true));
            if (!s.plan || s.plan->known_types != known) s.plan = std::make_unique<trace::FieldPlan>(schema);
            const size_t at = mine.size();
            // Room for all (NoInit), cut to those kept.
            mine.resize(at + std::min<size_t>(h.event_count, h.raw_size / 2 + 1));
            const bool inside = h.first_ts >= w0 && h.last_ts <= w1;
            size_t kept = 0;
            const bool read = inside ? trace::decode_leading<false>(raw, h.raw_size, h, *s.plan, wanted_.data(), w0,
                                                                    w1, mine.data() + at, kept, reason)
                                     : trace::decode_leading<true>(raw, h.raw_size, h, *s.plan, wanted_.data(), w0,
                                                                   w1, mine.data() + at, kept, reason);
            mine.resize(at + kept);
            return read;
          },
          why);
      if (!ok) s.unreadable.push_back(why);
      total += mine.size();
    }
    // Each feedlet's events are in its order: merged by time, ties by
    // feedlet id.
    auto& out = s.order;
    out.resize(total);
    Ref* to = out.data();
    s.ties = false;
    if (feedlets_.size() <= 16) {  // a few threads: the smallest head by a scan, cheaper than a heap
      // Each feedlet's next time side by side (UINT64_MAX: none left), so
      // the scan reads one small array; the first smallest wins a tie.
      const size_t n = feedlets_.size();
      uint64_t head[16];
      size_t at[16] = {};
      for (size_t k = 0; k < n; ++k) head[k] = s.per_feedlet[k].empty() ? UINT64_MAX : s.per_feedlet[k][0].ts;
      for (;;) {
        size_t best = 0;
        uint64_t second = UINT64_MAX;  // the next smallest head
        for (size_t k = 1; k < n; ++k) {
          const bool less = head[k] < head[best];
          second = std::min(second, less ? head[best] : head[k]);
          best = less ? k : best;
        }
        if (head[best] == UINT64_MAX) break;
        s.ties |= head[best] == second;  // another thread's event at this tick
        // Its events before the next head's time at once (at a tie, one:
        // the lower feedlet's first).
        const auto& from = s.per_feedlet[best];
        const SmallEvent *p = from.data() + at[best], *const last = from.data() + from.size();
        do *to++ = p;
        while (++p < last && p->ts < second);
        at[best] = size_t(p - from.data());
        head[best] = p < last ? p->ts : UINT64_MAX;
      }
      // Events at UINT64_MAX (a time too, where "none left" is told apart
      // by the count): by feedlet.
      size_t tails = 0;
      for (size_t k = 0; k < n; ++k) {
        tails += at[k] < s.per_feedlet[k].size();
        for (; at[k] < s.per_feedlet[k].size(); ++at[k]) *to++ = &s.per_feedlet[k][at[k]];
      }
      s.ties |= tails > 1;
    } else {
      merge_by_heap(s, to);
    }
    if (!rank_ || !s.ties) return;
    for (size_t i = 0; i < out.size();) {
      size_t j = i + 1;
      bool several = false;  // threads at this tick (one thread's events keep their order)
      while (j < out.size() && out[j]->ts == out[i]->ts) several |= out[j]->feedlet != out[i]->feedlet, ++j;
      if (several && j - i <= 64) by_rank(s, i, j);  // (past 64 at one tick: as merged, not in quadratic time)
      i = j;
    }
  }

  void merge_by_heap(Slot& s, Ref* to) {
    auto& heap = s.heap;
    heap.clear();
    for (size_t k = 0; k < feedlets_.size(); ++k)
      if (!s.per_feedlet[k].empty()) heap.push_back({s.per_feedlet[k][0].ts, uint32_t(k), 0});
    auto later = [](const Head& a, const Head& b) { return a.ts != b.ts ? a.ts > b.ts : a.k > b.k; };
    std::make_heap(heap.begin(), heap.end(), later);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), later);
      Head& h = heap.back();
      const auto& from = s.per_feedlet[h.k];
      // Take this feedlet's events up to the next head's time at once.
      const uint64_t until = heap.size() > 1 ? heap.front().ts : UINT64_MAX;
      const uint32_t until_k = heap.size() > 1 ? heap.front().k : UINT32_MAX;
      size_t i = h.i;
      for (; i < from.size() && (from[i].ts < until || (from[i].ts == until && h.k < until_k)); ++i) {
        *to++ = &from[i];
        s.ties |= from[i].ts == until;
      }
      if (i < from.size()) {
        h.i = i, h.ts = from[i].ts;
        std::push_heap(heap.begin(), heap.end(), later);
      } else {
        heap.pop_back();
      }
    }
  }
  // Events [i, j) of one tick: each time, of the threads' next events, the
  // one of the lowest rank (ties: the lower thread id).
  void by_rank(Slot& s, size_t i, size_t j) {
    auto& out = s.order;
    s.tick.assign(out.begin() + i, out.begin() + j);
    s.taken.assign(s.tick.size(), 0);
    for (size_t o = i; o < j; ++o) {
      size_t best = SIZE_MAX;
      s.heads.clear();  // threads whose next event was seen
      for (size_t k = 0; k < s.tick.size(); ++k) {
        if (s.taken[k] || std::find(s.heads.begin(), s.heads.end(), s.tick[k]->feedlet) != s.heads.end()) continue;
        s.heads.push_back(s.tick[k]->feedlet);
        if (best == SIZE_MAX || rank_(s.tick[k]->type) < rank_(s.tick[best]->type)) best = k;
      }
      s.taken[best] = 1;
      out[o] = s.tick[best];
    }
  }

  const index::TraceIndex& ix_;
  Rank rank_ = nullptr;
  std::vector<uint8_t> wanted_;
  std::vector<uint32_t> feedlets_;
  uint64_t lo_ = 0, hi_ = 0, window_ = 1, next_window_ = 0;
  bool finished_ = true;  // no window after the last one launched
  Slot slots_[kSlots];
  size_t cur_ = 0;  // the slot in use (slot 0 starts empty: the first call takes slot 1)
  size_t at_ = 0;
  bool ended_ = false;  // past the last event: every later call says so
  std::vector<std::string> unreadable_;
};

}  // namespace tinescope::analysis
