// Who holds each lock (its name and id), as its acquires and releases come
// in the trace's merged order: what the lock checks and the priority
// inversions both follow. A thread that acquires a lock it holds holds it
// until as many releases (a recursive mutex); an acquire of a lock another
// thread holds takes it from that one (a misuse: check_locks reports it);
// a release by a thread that does not hold it changes nothing.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

namespace tinescope::analysis {

struct LockHold {
  uint32_t holder = 0;  // feedlet; 0: free
  uint32_t depth = 0;
  uint64_t since = 0;
};

class LockHolders {
 public:
  using Key = std::pair<uint32_t, uint64_t>;  // (name, id)
  // Each returns the lock's hold before the event.
  LockHold acquire(const Key& lock, uint32_t thread, uint64_t ts) {
    LockHold& h = locks_[lock];
    const LockHold before = h;
    if (h.holder == thread) ++h.depth;
    else h = LockHold{thread, 1, ts};
    return before;
  }
  LockHold release(const Key& lock, uint32_t thread) {
    LockHold& h = locks_[lock];
    const LockHold before = h;
    if (h.holder == thread && --h.depth == 0) h = LockHold{};
    return before;
  }
  uint32_t holder(const Key& lock) const {
    auto h = locks_.find(lock);
    return h == locks_.end() ? 0 : h->second.holder;
  }
  size_t seen() const { return locks_.size(); }  // locks acquired or released so far

 private:
  std::map<Key, LockHold> locks_;
};

}  // namespace tinescope::analysis
