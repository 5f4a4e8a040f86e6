// SPDX-License-Identifier: MIT
/*
 * dump_capture.c - take a dump's window (dump_capture.h).
 *
 * Applications first: at full speed one overwrites its buffer in tens of
 * milliseconds, and nothing has to happen before their copy. The kernel
 * side's events may still sit in the BPF rings: those are flushed into the
 * block buffer (bounded wait), then the buffer is copied. Loss counters and
 * tasks are read around that copy, so what the dump says it lost is what
 * the capture lost.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "compact.h"
#include "dump_capture.h"
#include "recorder_state.h"
#include "tasks.h"
#include "app_registry.h"
#include "util.h"
#include "log.h"

#define FLUSH_TIMEOUT_MS 2000

/* A copy is a few milliseconds of memory bandwidth, but on a busy machine
 * the scheduler may stop it for tens of them while writers go on: the
 * copies run at the lowest real-time priority (root has it; without it
 * they run as they are, their losses counted). Only the copies: the flush,
 * compression and writing stay at the thread's own priority. */
struct boost {
	int policy, on;
	struct sched_param old;
};

static void boost_on(struct boost *b)
{
	struct sched_param p = { .sched_priority = 1 };

	b->on = pthread_getschedparam(pthread_self(), &b->policy, &b->old) == 0 &&
		b->policy != SCHED_FIFO && b->policy != SCHED_RR &&
		pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) == 0;
}

static void boost_off(struct boost *b)
{
	if (b->on)
		pthread_setschedparam(pthread_self(), b->policy, &b->old);
	b->on = 0;
}

struct bt_apps_capture *dump_capture_apps(struct recorder *r)
{
	struct boost bo = { 0 };

	boost_on(&bo);
	struct bt_apps_capture *c = bt_apps_capture(r->apps);
	int e = errno;
	boost_off(&bo);
	errno = e;
	return c;
}

int dump_capture_take(struct recorder *r, struct bt_apps_capture *apps, struct dump_capture *c, char *err,
		      size_t errlen)
{
	size_t ncells = (size_t)r->ncpus * BT_GROUP_MAX;
	struct boost bo = { 0 };
	int ret;

	memset(c, 0, sizeof(*c));
	if (apps) {
		c->apps = apps;
		c->apps_early = 1;
		c->acopy_ns = bt_apps_capture_copy_ns(apps);
	} else if (r->apps) {
		c->apps = dump_capture_apps(r);
		if (!c->apps) {
			ret = -errno;
			snprintf(err, errlen, "cannot copy the application buffers: %s", strerror(-ret));
			goto fail;
		}
		c->acopy_ns = bt_apps_capture_copy_ns(c->apps);
	}
	/* Events the kernel emitted before the request may still sit in the
	 * BPF ring: bring them into the buffer first. */
	uint64_t f0 = bt_now_ns();
	int late = bt_loader_flush(r->loader, FLUSH_TIMEOUT_MS);

	c->flush_ns = bt_now_ns() - f0;
	if (late)
		bt_warn("the drain is %ums behind under this load: the dump may miss the newest events",
			FLUSH_TIMEOUT_MS);
	c->drops = calloc(ncells, sizeof(*c->drops));
	c->emitted = calloc(ncells, sizeof(*c->emitted));
	if (!c->drops || !c->emitted) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	ret = bt_loader_read_cpu_state(r->loader, c->drops, c->emitted, NULL);
	if (ret)
		bt_warn("cannot read the per-CPU loss counters: %s", strerror(-ret));
	pthread_mutex_lock(&r->buf_swap); /* a resize waits for this copy only */
	boost_on(&bo);
	c->kbuf = bt_capture(r->buf, NULL);
	boost_off(&bo);
	pthread_mutex_unlock(&r->buf_swap);
	if (!c->kbuf) {
		ret = -errno;
		snprintf(err, errlen, "cannot copy the buffer: %s", strerror(-ret));
		goto fail;
	}
	c->kcopy_ns = bt_capture_copy_ns(c->kbuf);
	bt_loader_drain_stats(r->loader, &c->ds);
	ret = bt_tasks_snapshot(r->tasks, &c->tasks, &c->ntasks);
	if (ret) {
		snprintf(err, errlen, "cannot copy the task table: %s", strerror(-ret));
		goto fail;
	}
	return 0;
fail:
	dump_capture_free(c);
	return ret;
}

void dump_capture_free(struct dump_capture *c)
{
	bt_apps_capture_free(c->apps);
	bt_capture_free(c->kbuf);
	free(c->drops);
	free(c->emitted);
	free(c->tasks);
	memset(c, 0, sizeof(*c));
}

uint64_t dump_capture_oldest_ts(const struct dump_capture *c)
{
	uint64_t oldest;

	bt_compact_capture_span(c->kbuf, bt_boottime_ns(), &oldest, NULL);
	return oldest;
}
