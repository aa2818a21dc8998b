#include "tracefs_glue.h"

#include <errno.h>
#include <event-parse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <trace-cmd.h>
#include <tracefs.h>
#include <unistd.h>

struct ts_tracefs {
  struct tracefs_instance *instance;
  struct tep_handle *tep;
};

struct ts_tracefs *ts_tracefs_open(const char *name, const char *clock, unsigned buffer_kb, char *why, size_t why_size) {
  static const char *const events[] = {"sched_switch", "sched_wakeup", "sched_wakeup_new", "sched_migrate_task",
                                       "sched_process_exit"};
  static const char *systems[] = {"sched", NULL};
  const char *dir = NULL;
  char kb[32];
  size_t i;
  struct ts_tracefs *t;
  if (!tracefs_tracing_dir_is_mounted(true, &dir) || !dir) {
    snprintf(why, why_size,
             "tracefs is not mounted and could not be mounted (%s): as root, mount -t tracefs nodev /sys/kernel/tracing",
             strerror(errno));
    return NULL;
  }
  if (access(dir, W_OK) != 0) {
    snprintf(why, why_size,
             "%s is not writable by this user (%s): the kernel's scheduling is recorded as root (or with tracefs made "
             "writable)",
             dir, strerror(errno));
    return NULL;
  }
  t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->instance = tracefs_instance_create(name);
  if (!t->instance) {
    snprintf(why, why_size, "cannot make the tracefs instance %s: %s", name, strerror(errno));
    ts_tracefs_close(t);
    return NULL;
  }
  tracefs_trace_off(t->instance);
  if (tracefs_instance_file_write(t->instance, "trace_clock", clock) < 0) {
    snprintf(why, why_size, "this kernel's tracefs has no %s trace clock: its events could not share the program's clock",
             clock);
    ts_tracefs_close(t);
    return NULL;
  }
  snprintf(kb, sizeof kb, "%u", buffer_kb);
  tracefs_instance_file_write(t->instance, "buffer_size_kb", kb);
  for (i = 0; i < sizeof events / sizeof events[0]; ++i)
    if (tracefs_event_enable(t->instance, "sched", events[i]) < 0) {
      snprintf(why, why_size, "cannot enable the event sched/%s in tracefs: %s", events[i], strerror(errno));
      ts_tracefs_close(t);
      return NULL;
    }
  t->tep = tracefs_local_events_system(NULL, systems);
  if (!t->tep) {
    snprintf(why, why_size, "cannot read the sched events' formats from tracefs");
    ts_tracefs_close(t);
    return NULL;
  }
  return t;
}

int ts_tracefs_follow(struct ts_tracefs *t, int pid) {
  char text[32];
  snprintf(text, sizeof text, "%d", pid);
  if (tracefs_instance_file_write(t->instance, "set_event_pid", text) < 0) return -1;
  return tracefs_option_enable(t->instance, TRACEFS_OPTION_EVENT_FORK) < 0 ? -1 : 0;
}

int ts_tracefs_on(struct ts_tracefs *t) { return tracefs_trace_on(t->instance); }
int ts_tracefs_off(struct ts_tracefs *t) { return tracefs_trace_off(t->instance); }

int ts_tracefs_read(struct ts_tracefs *t, int (*cb)(struct tep_event *, struct tep_record *, int, void *), void *ctx) {
  return tracefs_iterate_raw_events(t->tep, t->instance, NULL, 0, cb, ctx);
}

void ts_tracefs_close(struct ts_tracefs *t) {
  if (!t) return;
  if (t->instance) {
    tracefs_trace_off(t->instance);
    tracefs_instance_destroy(t->instance);
    tracefs_instance_free(t->instance);
  }
  if (t->tep) tep_free(t->tep);
  free(t);
}

struct tracecmd_reading {
  int (*cb)(struct tep_event *, struct tep_record *, int, void *);
  void *ctx;
  struct tep_handle *tep;
};

static int tracecmd_record(struct tracecmd_input *handle, struct tep_record *record, int cpu, void *data) {
  struct tracecmd_reading *r = data;
  struct tep_event *ev = tep_find_event_by_record(r->tep, record);
  (void)handle, (void)cpu;  /* (over several buffers, cpu counts on past the first's CPUs: the record's is its own) */
  return ev ? r->cb(ev, record, record->cpu, r->ctx) : 0;
}

int ts_tracecmd_read(const char *path, int (*cb)(struct tep_event *, struct tep_record *, int, void *), void *ctx,
                     char *why, size_t why_size) {
  struct tracecmd_reading r;
  struct tracecmd_input *in = tracecmd_open(path, 0);
  if (!in) {
    snprintf(why, why_size, "%s: not a trace-cmd trace that libtracecmd can read (%s)", path, strerror(errno));
    return -1;
  }
  /* The top buffer and every instance's (trace-cmd record -B, extract -B), merged in time. */
  struct tracecmd_input *handles[65];
  int n = 0, i, buffers = tracecmd_buffer_instances(in);
  handles[n++] = in;
  for (i = 0; i < buffers && n < 65; ++i) {
    struct tracecmd_input *b = tracecmd_buffer_instance_handle(in, i);
    if (b) handles[n++] = b;
  }
  r.cb = cb, r.ctx = ctx, r.tep = tracecmd_get_tep(in);
  tracecmd_iterate_events_multi(handles, n, tracecmd_record, &r);
  for (i = 1; i < n; ++i) tracecmd_close(handles[i]);
  tracecmd_close(in);
  return 0;
}
