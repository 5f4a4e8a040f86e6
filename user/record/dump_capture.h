/* SPDX-License-Identifier: MIT */
/*
 * dump_capture.h - the window of a dump, taken at the moment it is decided:
 * every application buffer, then (after the BPF rings are flushed) the
 * kernel side's block buffer, its loss counters and the task table. The
 * dump is written from this afterwards (recorder_dumps.c), while recording
 * goes on.
 */
#ifndef BTRACE_DUMP_CAPTURE_H
#define BTRACE_DUMP_CAPTURE_H
#include <stddef.h>
#include <stdint.h>
#include "btrace_buffer.h"
#include "loader.h"

struct recorder;
struct bt_task;
struct bt_apps_capture;

struct dump_capture {
	struct bt_apps_capture *apps; /* NULL: no applications traced */
	struct bt_capture *kbuf;
	uint64_t *drops, *emitted;    /* [ncpus * BT_GROUP_MAX] ring-buffer counters */
	struct bt_task *tasks;
	size_t ntasks;
	struct bt_drain_stats ds;
	uint64_t kcopy_ns, acopy_ns;  /* how long the copies took */
	uint64_t flush_ns;            /* waiting for the drain to empty the rings */
	int apps_early;               /* apps copied at the trigger's hit, before the dump */
};

/* Take it; apps: the application buffers copied already (at a trigger's
 * hit), taken over (freed on failure too), or NULL to copy them now.
 * 0, or -errno with a reason in err (nothing left to free). */
int dump_capture_take(struct recorder *r, struct bt_apps_capture *apps, struct dump_capture *c, char *err,
		      size_t errlen);
/* Every application buffer copied now, as a dump's capture does (a
 * trigger's copy ahead of its dump); NULL with errno. */
struct bt_apps_capture *dump_capture_apps(struct recorder *r);
/* The time of the oldest kernel-side event the capture holds, 0 if none:
 * where the window starts (as report's analysis of the dump says). A pass
 * over the stored forms' headers, no decoding. */
uint64_t dump_capture_oldest_ts(const struct dump_capture *c);
void dump_capture_free(struct dump_capture *c);
#endif
