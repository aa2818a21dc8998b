/* The few libtracefs and libtracecmd calls the importers make, behind a C
 * interface: tracefs.h (which trace-cmd.h includes) is C that C++ does not
 * compile (an int where an enum is due). */
#ifndef TINESCOPE_TRACEFS_GLUE_H
#define TINESCOPE_TRACEFS_GLUE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tep_event;
struct tep_record;
struct tep_handle;
struct ts_tracefs;

/* Mounts tracefs where it is not (and this user may), makes an instance
 * named `name` with the sched events on `clock`, tracing off. NULL with
 * `why` filled on failure. */
struct ts_tracefs *ts_tracefs_open(const char *name, const char *clock, unsigned buffer_kb, char *why, size_t why_size);
/* Only `pid` and what it forks. 0, or -1 with errno. */
int ts_tracefs_follow(struct ts_tracefs *t, int pid);
int ts_tracefs_on(struct ts_tracefs *t);
int ts_tracefs_off(struct ts_tracefs *t);
/* Every event the buffers hold now, to `cb` (time order across CPUs). */
int ts_tracefs_read(struct ts_tracefs *t, int (*cb)(struct tep_event *, struct tep_record *, int, void *), void *ctx);
/* Tracing off, the instance removed, everything freed. */
void ts_tracefs_close(struct ts_tracefs *t);

/* A trace-cmd trace.dat (libtracecmd): every event of its top buffer in
 * time order, to `cb`. -1 with `why` filled where it cannot be read. */
int ts_tracecmd_read(const char *path, int (*cb)(struct tep_event *, struct tep_record *, int, void *), void *ctx,
                     char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif
