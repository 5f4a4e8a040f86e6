// SPDX-License-Identifier: MIT
/*
 * cold_pump.c - the recorder's compressor thread (see cold_pump.h).
 *
 * It sleeps for the time the drain takes, at the rate of the last passes,
 * to fill a quarter of the buffer (MIN_MS..MAX_MS), and not at all while a
 * pass finds more than an eighth of the buffer complete; the drain wakes it
 * early (bt_cold_nudge after each of its passes) once a quarter of the
 * buffer was used since its last pass began, since a burst outruns any
 * rate learnt from the passes before it: the buffer turning
 * over between two passes would lose blocks before they are taken (each
 * such loss is counted as a gap by the tier). Nice -5: below the drain (-10,
 * loader.c), which must never wait for it, above the workload, so a busy
 * machine does not starve it; a compressor that falls behind loses old
 * history only, and counts it.
 */
#include "cold_pump.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "btrace_buffer.h"
#include "cold_tier.h"
#include "recorder_state.h"
#include "util.h"

#define MIN_MS 1
#define MAX_MS 20
#define NICE (-5)

struct bt_cold_pump {
	struct bt_cold *cold;
	struct bt_buffer *buf;
	pthread_t thread;
	atomic_int stop;
};

static void *pump_main(void *arg)
{
	struct bt_cold_pump *p = arg;
	struct bt_stats bs;
	int warned = 0;

	pthread_setname_np(pthread_self(), "btrace-cold");
	bt_thread_nice(NICE, "cold tier thread");
	bt_buffer_stats(p->buf, &bs);
	/* Acquire: pairs with the release store in bt_cold_pump_stop(). */
	uint64_t last = bt_now_ns();
	double rate = 0; /* blocks per ns, smoothed */

	while (!atomic_load_explicit(&p->stop, memory_order_acquire)) {
		int n = bt_cold_pump(p->cold, p->buf);
		uint64_t now = bt_now_ns(), sleep_ns = MAX_MS * 1000000ull;

		if (n < 0 && !warned) {
			bt_warn("cold tier: %s: older history is no longer compressed", strerror(-n));
			warned = 1;
		}
		if (n > 0 && now > last)
			rate = 0.5 * rate + 0.5 * (double)n / (double)(now - last);
		last = now;
		if (n >= 0 && (uint32_t)n > bs.nblocks / 8)
			continue;
		if (rate > 0 && bs.nblocks / 4 / rate < (double)sleep_ns)
			sleep_ns = (uint64_t)(bs.nblocks / 4 / rate);
		if (sleep_ns < MIN_MS * 1000000ull)
			sleep_ns = MIN_MS * 1000000ull;
		bt_cold_wait(p->cold, sleep_ns); /* or less: the drain nudges (bt_cold_nudge) */
		bt_buffer_stats(p->buf, &bs); /* a resize changes nblocks */
	}
	bt_cold_pump(p->cold, p->buf);
	return NULL;
}

/* Start the thread; NULL + message on failure. */
static struct bt_cold_pump *bt_cold_pump_start(struct bt_cold *cold, struct bt_buffer *buf, char *err, size_t errlen)
{
	struct bt_cold_pump *p = calloc(1, sizeof(*p));
	int r;

	if (!p) {
		snprintf(err, errlen, "cold tier: out of memory");
		return NULL;
	}
	p->cold = cold;
	p->buf = buf;
	r = pthread_create(&p->thread, NULL, pump_main, p);
	if (r) {
		snprintf(err, errlen, "cold tier: cannot start its thread: %s", strerror(r));
		free(p);
		return NULL;
	}
	return p;
}

void bt_cold_pump_stop(struct bt_cold_pump *p)
{
	if (!p)
		return;
	/* Release: pairs with the acquire load in pump_main(). */
	atomic_store_explicit(&p->stop, 1, memory_order_release);
	bt_cold_wake(p->cold);
	pthread_join(p->thread, NULL);
	free(p);
}

uint64_t recorder_buffer_share(const struct record_opts *o, uint64_t budget)
{
	return o->cold_pct ? budget / 100 * (100 - o->cold_pct) : budget;
}

int recorder_cold_start(struct recorder *r)
{
	const struct record_opts *o = r->o;
	struct bt_cold_config cc = { .codec = (enum bt_codec)o->cold_codec, .level = o->cold_level };
	struct bt_stats bs;
	char err[256];

	bt_buffer_stats(r->buf, &bs);
	cc.size = o->buffer_size > bs.size ? (size_t)(o->buffer_size - bs.size) : 0;
	r->cold = bt_cold_create(&cc, bs.block_size, err, sizeof(err));
	if (!r->cold) {
		bt_warn("%s: give a larger --buffer-size or --cold-tier, or --cold-tier off", err);
		return -1;
	}
	r->cold_pump = bt_cold_pump_start(r->cold, r->buf, err, sizeof(err));
	if (!r->cold_pump) {
		bt_warn("%s", err);
		return -1;
	}
	return 0;
}
