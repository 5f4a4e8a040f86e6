/* SPDX-License-Identifier: MIT */
/*
 * export_walk.h - the event loop every output format runs over a pre-pass
 * (export_prep.h): events in time order, the CPUs' seq gaps before the
 * event they precede, an application's per-thread gaps before its event,
 * the caller's progress callback every few thousand events and its answer
 * to stop (Ctrl-C of `convert`).
 */
#ifndef BTRACE_EXPORT_WALK_H
#define BTRACE_EXPORT_WALK_H
#include <stddef.h>
#include <stdint.h>
#include "export.h"
#include "export_prep.h"

/* The format's part; each returns 0 to go on, a negative errno to stop. */
struct bt_export_visit {
	/* a seq gap of CPU g->cpu (< ncpus) just before an event at ts */
	int (*gap)(void *ctx, const struct bt_seq_gap *g, uint64_t ts);
	/* a per-thread gap of an application just before its event h */
	int (*app_gap)(void *ctx, const struct bt_app_gap *g, const struct bt_event_hdr *h);
	/* an application's event (its cpu only where the thread ran, its seq
	 * the thread's: never part of a CPU's view) */
	int (*app)(void *ctx, const struct bt_dump_event *e);
	/* any other event, whatever its type and cpu (the format checks) */
	int (*kernel)(void *ctx, const struct bt_dump_event *e);
	/* optional: thread tid died without its exit in the window; its last
	 * event (at ts) was just visited: what it has open ends there */
	int (*thread_end)(void *ctx, uint32_t tid, uint64_t ts);
	/* nonzero: stop quietly (the output already failed, say) */
	int (*stop)(void *ctx);
};

#define BT_EXPORT_PROGRESS_EVERY 16384

/* Every event of p through v: 0, the first negative return of a callback,
 * or -EINTR ("interrupted" in err) when the progress callback asks to stop. */
int bt_export_walk(const struct bt_export_prep *p, const struct bt_export_opts *o, uint32_t ncpus,
		   const struct bt_export_visit *v, void *ctx, char *err, size_t errlen);
#endif
