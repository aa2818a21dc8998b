#include "tinescope/analysis/locks.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "merged_events.hpp"

namespace tinescope::analysis {

std::vector<LockStats> lock_stats(const index::TraceIndex& ix) {
  struct Lock {
    LockStats s;
    uint32_t holder = 0, depth = 0;
    uint64_t since = 0;
    std::map<uint32_t, uint64_t> waiting;  // thread -> its contend
    std::set<uint32_t> holders;
  };
  std::map<std::pair<uint32_t, uint64_t>, Lock> locks;
  auto ns = [&](uint64_t a, uint64_t b) { return uint64_t(std::max<int64_t>(0, ix.to_ns(b) - ix.to_ns(a))); };
  // At one tick a release before another thread's acquire (sched_check.cpp does the same).
  MergedEvents events(ix, {format::kLockContend, format::kLockAcquire, format::kLockRelease},
                      [](uint16_t type) { return type == format::kLockRelease ? 0 : type == format::kLockContend ? 1 : 2; });
  for (SmallEvent e; events.next(e);) {
    Lock& l = locks[{uint32_t(e.u[0]), e.u[1]}];
    switch (e.type) {
      case format::kLockContend: l.waiting[e.feedlet] = e.ts; break;
      case format::kLockAcquire: {
        if (l.holder == e.feedlet) {  // again, by its holder (a recursive lock)
          ++l.depth;
          break;
        }
        if (l.holder) ++l.s.unmatched;
        ++l.s.acquires;
        auto w = l.waiting.find(e.feedlet);
        if (w != l.waiting.end()) {
          const uint64_t waited = ns(w->second, e.ts);
          if (l.s.contended == 0 || waited > l.s.wait.max())
            l.s.longest_wait_at = e.ts, l.s.longest_wait_feedlet = e.feedlet;
          ++l.s.contended;
          l.s.wait.add(waited);
          l.waiting.erase(w);
        }
        l.holder = e.feedlet, l.depth = 1, l.since = e.ts;
        l.holders.insert(e.feedlet);
        break;
      }
      case format::kLockRelease:
        if (l.holder != e.feedlet) {
          ++l.s.unmatched;
          break;
        }
        if (--l.depth > 0) break;
        {
          const uint64_t held = ns(l.since, e.ts);
          if (l.s.hold.count() == 0 || held > l.s.hold.max())
            l.s.longest_hold_at = l.since, l.s.longest_hold_feedlet = e.feedlet;
          l.s.hold.add(held);
        }
        l.holder = 0;
        break;
      default: break;
    }
  }
  const auto catalog = ix.catalog_snapshot();
  std::vector<LockStats> out;
  for (auto& [key, l] : locks) {
    l.s.name = std::string(catalog->string(key.first));
    l.s.id = key.second;
    l.s.threads = l.holders.size();
    l.s.held_at_end = l.holder != 0;
    out.push_back(std::move(l.s));
  }
  std::sort(out.begin(), out.end(), [](const LockStats& a, const LockStats& b) { return std::tie(a.name, a.id) < std::tie(b.name, b.id); });
  return out;
}

}  // namespace tinescope::analysis
