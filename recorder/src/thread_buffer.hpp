// A thread's feedlet buffer: a single-producer single-consumer byte ring.
//
// The application thread (producer) appends raw records and publishes its
// head with a release store; the collector (consumer) reads records up to
// head and publishes its tail. Neither ever waits for the other: a producer
// that finds no room drops the record and counts it.
//
// A record never wraps: the ring has kMaxRecordBytes of slack after its end,
// and a record that starts near the end runs on into the slack. Positions are
// virtual (they only grow); offset = position & mask. The consumer reads the
// record from the same contiguous bytes, so neither side handles wrap-around.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "raw_record.hpp"

namespace tinescope::rec {

enum class BufferState : int { Active, Exited, Free };

struct ThreadBuffer {
  // --- set when the buffer is made, then only read, by both sides
  uint64_t capacity = 0;
  uint64_t mask = 0;
  uint8_t* data = nullptr;

  // --- producer-private, touched on every event: a cache line of its own,
  // as the collector reads the fields above at every drain (sharing one,
  // the line went back and forth between the cores and an event cost twice).
  alignas(64) uint64_t head_local = 0;
  uint64_t tail_cache = 0;
  uint64_t dropped = 0;           // cumulative, this buffer's life
  uint64_t dropped_reported = 0;  // cumulative count in the last drop record
  uint64_t message_counter = 0;

  // -finstrument-functions: the functions entered and not yet exited, with
  // the stack pointer of each entry, so that frames a longjmp skipped (they
  // never exit) are found when a later entry comes from a stack at or above
  // theirs. The first kShadowFrames of a thread's depth; deeper ones are
  // not followed.
  static constexpr uint32_t kShadowFrames = 256;
  uint32_t frames = 0;
  bool jumped = false;  // a longjmp since the last entry (longjmp.cpp)
  uintptr_t frame_sp[kShadowFrames];
  void* frame_fn[kShadowFrames];

  // --- shared
  alignas(64) std::atomic<uint64_t> head{0};
  alignas(64) std::atomic<uint64_t> tail{0};
  alignas(64) std::atomic<uint64_t> dropped_total{0};  // written by producer only
  std::atomic<BufferState> state{BufferState::Active};
  // When its thread exited (ticks; written before `state` becomes Exited):
  // where drops after the thread's last recorded event end.
  std::atomic<uint64_t> exit_ticks{0};
  std::atomic<uint64_t> generation{0};  // +1 each time a thread takes the buffer
  uint32_t feedlet_hint = 0;            // feedlet number used in message ids
  // Set by each new owner before `generation` moves (release); the collector
  // reads it only after it has seen the new generation (acquire). Atomic so
  // that a collector bug here would be a wrong name, not undefined behaviour.
  std::atomic<uint32_t> tid{0};
  // The thread's name (PR_GET_NAME, 15 bytes and a NUL) as it was at its
  // first event, and again as it exits: what names a thread that is gone
  // from /proc by the time the collector first sees its buffer. Written
  // before `generation` moves and before `state` becomes Exited (release).
  std::atomic<uint64_t> name[2] = {};
  ThreadBuffer* next = nullptr;         // registry list, push-only
  // Collector-private: the generation whose feedlet the collector ended when
  // its thread exited. Until `generation` moves past it, the buffer has no
  // owner yet (a new one may be between taking it and bumping the count).
  uint64_t retired_generation = 0;

  // Room for `bytes` at the head, or nullptr. Never blocks.
  inline uint8_t* reserve(uint64_t bytes) {
    uint64_t h = head_local;
    if (__builtin_expect(h + bytes - tail_cache > capacity, 0)) {
      tail_cache = tail.load(std::memory_order_acquire);
      if (h + bytes - tail_cache > capacity) return nullptr;
    }
    return data + (h & mask);
  }
  inline void commit(uint64_t bytes) {
    head_local += bytes;
    head.store(head_local, std::memory_order_release);
  }
  inline void count_drop() {
    ++dropped;
    dropped_total.store(dropped, std::memory_order_relaxed);
  }
};
// The producer's private fields start a cache line after the read-only ones
// (the collector reads those at every drain); head and tail have one each.
static_assert(offsetof(ThreadBuffer, data) < offsetof(ThreadBuffer, head_local) &&
              offsetof(ThreadBuffer, head_local) % 64 == 0 && offsetof(ThreadBuffer, head) % 64 == 0 &&
              offsetof(ThreadBuffer, tail) % 64 == 0);

}  // namespace tinescope::rec
