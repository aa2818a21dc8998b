/* tinescope recorder: the C API (C99 and C++).
 *
 * Every recording call is safe to make from any thread at any time, whether or
 * not recording is on. On the calling thread a recording call takes no lock,
 * allocates nothing (after the thread's first event), makes no system call and
 * never blocks: it reads the clock and copies a few words into the thread's
 * own ring buffer. A collector thread encodes, compresses and writes them.
 * When a ring is full the event is dropped, counted, and the count is written
 * into the trace.
 *
 * Names: every `const char *name` must stay valid and unchanged for the life of
 * the process -- a string literal, or a string returned by ts_intern(). The
 * collector reads it later, once per distinct pointer.
 */
#ifndef TINESCOPE_TINESCOPE_H
#define TINESCOPE_TINESCOPE_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define TS_API __attribute__((visibility("default")))
#else
#define TS_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ session */

typedef struct ts_config {
  const char *file_path;      /* trace file to write; NULL: none. Never overwrites
                                 an existing file unless `overwrite` is set. */
  const char *live_address;   /* live feed to serve: "unix:/path" or "tcp:HOST:PORT"
                                 (port 0 picks one; see ts_live_port); NULL: none */
  uint32_t buffer_bytes;      /* ring per thread, rounded up to a power of two;
                                 0: 2 MiB */
  uint32_t flush_interval_us; /* a partly filled chunk is published after at
                                 most this long; 0: 20000 (20 ms) */
  uint64_t categories;        /* categories recorded at start; 0: all */
  int overwrite;              /* replace an existing file_path */
} ts_config;

/* Starts recording. Fields left 0 take their defaults; environment variables
 * TINESCOPE_OUT, TINESCOPE_LIVE, TINESCOPE_BUFFER, TINESCOPE_CLOCK=monotonic
 * override them. Returns 0, or -1 with a message for ts_last_error(). */
TS_API int ts_start(const ts_config *config);
/* Starts from the environment alone, if TINESCOPE_OUT or TINESCOPE_LIVE is set.
 * The library does so itself as it is loaded (unless TINESCOPE_AUTOSTART=0),
 * so a program records with no change; this is then a no-op, and a ts_start
 * of the program's own takes that recording as its session. */
TS_API int ts_start_from_env(void);
/* Flushes every thread's events and closes the sinks. Called at exit too. */
TS_API void ts_stop(void);
TS_API const char *ts_last_error(void);
TS_API int ts_is_running(void);

/* Recording on/off at runtime, and by category (bit mask, 64 categories). */
TS_API void ts_set_enabled(int enabled);
TS_API void ts_set_categories(uint64_t mask);
TS_API uint64_t ts_categories(void);

typedef struct ts_stats {
  uint64_t events_recorded;   /* written into chunks */
  uint64_t events_dropped;    /* rings were full */
  uint64_t events_lost_io;    /* in chunks the file sink could not write */
  uint64_t chunks_written;
  uint64_t bytes_written;     /* to the file */
  uint64_t live_clients;      /* connected now */
  uint64_t live_chunks_dropped; /* not sent to a client that fell behind */
} ts_stats;
TS_API void ts_get_stats(ts_stats *out);

/* The TCP port of the live feed (useful with "tcp:127.0.0.1:0"), or 0. */
TS_API int ts_live_port(void);

/* The clock of every event, in ticks (TSC, or ns where there is no invariant TSC). */
TS_API uint64_t ts_now(void);
/* A duration in ns as ticks of that clock (ts_now() + ts_ticks_from_ns(5000000):
 * 5 ms from now), by the calibration of ts_start(). */
TS_API uint64_t ts_ticks_from_ns(uint64_t ns);

/* A copy of `s` that lives until the process exits; the same pointer for equal strings.
 * Takes a lock: call it at set-up, not on a hot path. */
TS_API const char *ts_intern(const char *s);

/* ------------------------------------------------------------ events */
/* The _c variants take a category bit mask (default: category 1). */

TS_API void ts_begin(const char *name);
TS_API void ts_end(const char *name);
TS_API void ts_begin_c(uint64_t category, const char *name);
TS_API void ts_end_c(uint64_t category, const char *name);
/* An interval that ended now and lasted `duration_ticks`. */
TS_API void ts_complete(const char *name, uint64_t duration_ticks);
TS_API void ts_instant(const char *name);
TS_API void ts_instant_c(uint64_t category, const char *name);
/* Names a category (each bit of the mask) in the trace: a begin or instant
 * of a category other than 1 keeps it as its field `cat` ("io", or "io,net"
 * for two bits; an unnamed bit as "cat<bit>", bit 0 as "default"). The
 * field's type `.cat` takes one of the 192 user type codes at its first use.
 * Takes a lock: call it at set-up. */
TS_API void ts_category_name(uint64_t category, const char *name);
TS_API void ts_counter_i64(const char *name, int64_t value);
TS_API void ts_counter_f64(const char *name, double value);

/* Messages. ts_message_id() is unique in the process without shared atomics:
 * the thread's feedlet number in the high 24 bits, a per-thread counter below. */
TS_API uint64_t ts_message_id(void);
/* payload: optional bytes recorded with the message (at most TS_MAX_PAYLOAD; the
 * rest is cut off); `size` is the message's real size in bytes. */
#define TS_MAX_PAYLOAD 1024
TS_API void ts_message_send(uint64_t id, uint64_t channel, uint64_t size,
                            const void *payload, uint32_t payload_len);
TS_API void ts_message_recv(uint64_t id, uint64_t channel, uint64_t size,
                            const void *payload, uint32_t payload_len);

/* Names and metadata. These copy the string; any lifetime is fine. */
TS_API void ts_thread_name(const char *name);
TS_API void ts_process_name(const char *name);
TS_API void ts_cpu_name(uint32_t cpu, const char *name);
TS_API void ts_metadata(const char *key, const char *value);
/* Names a message channel (the `channel` of ts_message_send/recv): readers
 * show "name" beside the number. Stored as the metadata "channel.<id>". */
TS_API void ts_channel_name(uint64_t channel, const char *name);

/* Scheduling (Grasp's vocabulary). */
typedef enum ts_sched_kind {
  TS_TASK_ARRIVE = 13,
  TS_JOB_ARRIVE = 14,
  TS_JOB_START = 15,
  TS_JOB_PREEMPT = 16,
  TS_JOB_RESUME = 17,
  TS_JOB_BLOCK = 18,
  TS_JOB_COMPLETE = 19
} ts_sched_kind;
TS_API void ts_sched(ts_sched_kind kind, const char *task, uint64_t job, uint32_t cpu);
/* The job's absolute deadline, in ticks of ts_now()'s clock: at its arrival
 * (or any time before it completes; the last one given counts). `tinescope
 * check` reports the jobs that complete after it. */
TS_API void ts_job_deadline(const char *task, uint64_t job, uint64_t deadline);
/* The task's priority from now on (higher: more urgent), for `tinescope
 * check`'s priority inversions. A task recording lock events on its own
 * thread is that thread (its ts_thread_name is the task's name). */
TS_API void ts_task_priority(const char *task, int32_t level);

/* Locks: contend (about to wait), acquire (got it), release. */
typedef enum ts_lock_kind { TS_LOCK_ACQUIRE = 20, TS_LOCK_CONTEND = 21, TS_LOCK_RELEASE = 22 } ts_lock_kind;
TS_API void ts_lock(ts_lock_kind kind, const char *lock_name, uint64_t lock_id);

/* Clock synchronisation between nodes: the sender records send(id, receiver
 * node), the receiver records recv(id, sender node), each on its own clock. */
TS_API void ts_clock_sync_send(uint64_t sync_id, uint32_t peer_node);
TS_API void ts_clock_sync_recv(uint64_t sync_id, uint32_t peer_node);

/* Function entry and exit by code address (what -finstrument-functions calls). */
TS_API void ts_func_enter(void *fn);
TS_API void ts_func_exit(void *fn);

/* User-defined event types with typed fields. */
typedef enum ts_field_type {
  TS_FIELD_U64 = 'u',
  TS_FIELD_I64 = 'i',
  TS_FIELD_F64 = 'f',
  TS_FIELD_STRING = 's' /* a name: const char * with process lifetime */
} ts_field_type;
typedef struct ts_field {
  const char *name;
  ts_field_type type;
} ts_field;
#define TS_MAX_FIELDS 16
/* Returns the type's code (64..255), or 0 if the name is taken by another
 * definition, the fields are invalid, or all codes are used. Same name and
 * fields: same code. Takes a lock: call it at set-up. */
TS_API uint32_t ts_define_event_type(const char *name, const ts_field *fields, uint32_t field_count);
/* One event of a user type: one 8-byte slot per field, in definition order
 * (integers as is, doubles through ts_f64_slot, strings as the pointer). */
TS_API void ts_user_event(uint32_t type, const uint64_t *slots);
TS_API uint64_t ts_f64_slot(double v);
TS_API uint64_t ts_str_slot(const char *s);

#ifdef __cplusplus
}
#endif
#endif
