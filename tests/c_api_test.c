/* The C API from C99: this file is compiled with -std=c99 -pedantic-errors. */
#include <stdint.h>
#include <string.h>

#include "tinescope/tinescope.h"

/* Records one of each kind of event into `path`. Returns 0 on success. */
int tinescope_c_api_record(const char *path) {
  ts_config config;
  ts_field fields[2];
  uint32_t type;
  uint64_t slots[2];
  uint64_t id;
  memset(&config, 0, sizeof config);
  config.file_path = path;
  config.buffer_bytes = 65536;
  if (ts_start(&config) != 0) return 1;
  if (!ts_is_running()) return 2;

  fields[0].name = "bytes";
  fields[0].type = TS_FIELD_U64;
  fields[1].name = "ratio";
  fields[1].type = TS_FIELD_F64;
  type = ts_define_event_type("c.user", fields, 2);
  if (type < 64) return 3;

  ts_thread_name("c-thread");
  ts_begin("c.outer");
  ts_instant("c.instant");
  ts_counter_i64("c.count", 42);
  ts_counter_f64("c.ratio", 0.5);
  id = ts_message_id();
  ts_message_send(id, 3, 64, "abc", 3);
  ts_message_recv(id, 3, 64, NULL, 0);
  ts_sched(TS_JOB_START, "c.task", 1, 0);
  ts_job_deadline("c.task", 1, ts_now() + ts_ticks_from_ns(1000000));
  ts_task_priority("c.task", 3);
  ts_lock(TS_LOCK_ACQUIRE, "c.lock", 5);
  ts_clock_sync_send(9, 1);
  slots[0] = 4096;
  slots[1] = ts_f64_slot(0.25);
  ts_user_event(type, slots);
  ts_complete("c.complete", 10);
  ts_end("c.outer");
  ts_channel_name(3, "c.channel");
  ts_stop();
  return ts_is_running() ? 4 : 0;
}
