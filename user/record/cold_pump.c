// SPDX-License-Identifier: MIT
/*
 * cold_pump.c - the recorder's compressor thread (see cold_pump.h).
 *
 * It sleeps for the time the drain takes, at the rate of the last passes,
 * to fill a sixteenth of the buffer (MIN_MS..MAX_MS), and not at all while a
 * pass finds more than a thirty-second of the buffer complete; the drain wakes
 * it early (bt_cold_nudge after each of its passes) once a sixteenth of the
 * buffer was used since its last pass began, since a burst outruns any
 * rate learnt from the passes before it: the buffer turning
 * over between two passes would lose blocks before they are taken (each
 * such loss is counted as a gap by the tier). At the lowest real-time
 * priority: at nice -5 a syscall storm (dd bs=1, 10k blocks/s into a
 * 480-block buffer) left it on the run queue 224 ms in 3 s, in waits of
 * ~20 ms, long enough for the buffer to turn: 7-188 gaps per 6 s storm,
 * 0 since. Its CPU is bounded by the budget plus the copies past it
 * (shown apart). Refused real time (a cpu cgroup without real-time
 * runtime: 116-221 gaps a storm at nice 0), it runs at nice -5, below the
 * drain (-10, loader.h); a compressor that falls behind loses old history
 * only, and counts it.
 *
 * It takes a block once it is three quarters of a turn old (take_end):
 * the tier then holds a second copy of at most a quarter of the buffer.
 *
 * The CPU budget (--cold-cpu, budget_ppm of one CPU; 0 unbounded): the
 * thread earns credit at that share of the wall clock, kept up to BURST_MS
 * of it, and pays for everything it does out of the thread's CPU clock (the
 * same time /proc/PID/task/TID/stat shows). A pass compresses the groups
 * the credit pays for at the cost per block measured so far, oldest first,
 * and stores the rest as they are (a copy, ~1/50 of zstd's cost), so the
 * window is never shorter than without a tier. With the credit overspent
 * it still copies every block due, never compressing, and that CPU is kept
 * out of the budget (shown apart: bt_cold_budget_copied): a tier that
 * skipped blocks would leave holes in the middle of the window, which is
 * worse than a copy's cost. Each pass that stored blocks raw is counted
 * (bt_cold_budget_held_back): status and dumps say the budget held the tier
 * back. A block the thread still misses (starved of CPU) is a counted gap,
 * and reads leave out its core's older blocks (cold_tier.h).
 */
#include "cold_pump.h"

#include <errno.h>
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
#define FALLBACK_NICE (-5)
/* After a pass that took nothing. The drain's nudge comes once a sixteenth
 * of the buffer is used, well before a block due is overwritten, so this
 * only bounds the sleep: at 200 ms its 5 wakes a second were 0.6-0.9 ms of
 * CPU a second on an idle machine in a VM, for nothing. */
#define IDLE_MS 2000
#define BURST_MS 250          /* credit kept at most: the budget of this much wall time */
#define FIRST_BLOCK_NS 20000. /* a block's cost until one is measured (zstd-1, 4 KiB, loaded) */

struct bt_cold_pump {
	struct bt_cold *cold;
	struct bt_buffer *buf;
	uint32_t budget_ppm; /* of one CPU; 0 unbounded */
	pthread_t thread;
	atomic_int stop;
	/* One pass at a time: the thread's, or a resize's catch-up
	 * (bt_cold_pump_catch_up); the tier's pump state is single-threaded. */
	pthread_mutex_t pass;
};

static uint64_t take_end(const struct bt_stats *bs);

/* A pass of the pump, under its lock. */
static int pump_pass(struct bt_cold_pump *p, uint64_t before, uint32_t zmax, struct bt_cold_pass *out)
{
	int n;

	pthread_mutex_lock(&p->pass);
	n = bt_cold_pump_upto(p->cold, p->buf, before, zmax, out);
	pthread_mutex_unlock(&p->pass);
	return n;
}

int bt_cold_pump_catch_up(struct bt_cold_pump *p, uint64_t nblocks_after)
{
	struct bt_stats bs;

	if (!p)
		return 0;
	struct bt_cold_pass pass = { 0 };
	int n;

	bt_buffer_stats(p->buf, &bs);
	bs.nblocks = (uint32_t)nblocks_after;
	/* Copies only: compressing a shrink's worth of blocks (tens of MiB)
	 * would hold the resize for seconds on a loaded machine. */
	n = pump_pass(p, take_end(&bs), 0, &pass);
	if (pass.stored_raw)
		bt_cold_budget_held_back(p->cold);
	return n;
}

/* The budget's account, in ns of this thread's CPU time. */
struct budget {
	uint32_t ppm;
	double credit, cap, block_ns;
	uint64_t wall, cpu; /* when last settled: CLOCK_MONOTONIC, thread CPU */
};

static void budget_init(struct budget *bg, uint32_t ppm)
{
	bg->ppm = ppm;
	bg->cap = (double)ppm * BURST_MS; /* ppm * 1e-6 * BURST_MS * 1e6 ns */
	bg->credit = bg->cap;
	bg->block_ns = FIRST_BLOCK_NS;
	bg->wall = bt_now_ns();
	bg->cpu = bt_thread_cpu_ns();
}

/* Earn for the wall time passed, pay for the CPU time used since last. */
static void budget_settle(struct budget *bg)
{
	uint64_t wall = bt_now_ns(), cpu = bt_thread_cpu_ns();

	bg->credit += (double)(wall - bg->wall) * bg->ppm / 1e6 - (double)(cpu - bg->cpu);
	if (bg->credit > bg->cap)
		bg->credit = bg->cap;
	bg->wall = wall;
	bg->cpu = cpu;
}

/* Blocks the credit pays to compress now. */
static uint32_t budget_blocks(const struct budget *bg)
{
	double n = bg->credit / bg->block_ns;

	return !bg->ppm ? UINT32_MAX : n <= 0 ? 0 : n > 1e6 ? 1000000u : (uint32_t)n;
}

/* The first position the pump leaves in the buffer: it takes the blocks
 * older than three quarters of a turn, and has the last quarter to reach
 * each (the drain nudges it every sixteenth). What it takes earlier is held
 * twice until the buffer overwrites it: stored raw (the budget spent),
 * that is memory the window loses. Taking the older half, at 1M events/s
 * into 8 MiB with half a percent of a CPU, left the window 3.57x ftrace's
 * against 3.99x without the tier. */
static uint64_t take_end(const struct bt_stats *bs)
{
	uint64_t leave = bs->nblocks - bs->nblocks / 4;

	return bs->blocks_used + 1 > leave ? bs->blocks_used + 1 - leave : 1;
}

static void *pump_main(void *arg)
{
	struct bt_cold_pump *p = arg;
	struct bt_stats bs;
	struct budget bg;
	int warned = 0;

	pthread_setname_np(pthread_self(), "btrace-cold");
	bt_thread_realtime("cold tier thread", FALLBACK_NICE);
	bt_buffer_stats(p->buf, &bs);
	budget_init(&bg, p->budget_ppm);
	uint64_t last = bt_now_ns();
	double rate = 0; /* blocks per ns, smoothed */
	/* blocks_used before the last pass, if it took nothing: until a block
	 * is handed out, another pass would find nothing new either (a block
	 * still open then is closed by its writer taking the next). On an idle
	 * machine those passes, each sorting every block header, were most of
	 * the recorder's CPU (issue 40). */
	uint64_t empty_at = UINT64_MAX;
	uint64_t pass_end = bg.cpu; /* thread CPU when the last pass ended */

	/* Acquire: pairs with the release store in bt_cold_pump_stop(). */
	while (!atomic_load_explicit(&p->stop, memory_order_acquire)) {
		struct bt_cold_pass pass = { 0 };
		uint32_t zmax = UINT32_MAX;
		int n;

		bt_buffer_stats(p->buf, &bs); /* a resize changes nblocks */
		if (bs.blocks_used == empty_at) {
			bt_cold_wait(p->cold, IDLE_MS * 1000000ull);
			continue;
		}
		if (bg.ppm) {
			budget_settle(&bg);
			zmax = budget_blocks(&bg); /* 0 overspent: copies only */
		}
		uint64_t cpu0 = bt_thread_cpu_ns();
		n = pump_pass(p, take_end(&bs), zmax, &pass);
		uint64_t now = bt_now_ns(), sleep_ns = (n == 0 ? IDLE_MS : MAX_MS) * 1000000ull;
		uint64_t cpu1 = bt_thread_cpu_ns();

		empty_at = n == 0 ? bs.blocks_used : UINT64_MAX;

		if (n < 0 && !warned) {
			bt_warn("cold tier: %s: older history is no longer compressed", strerror(-n));
			warned = 1;
		}
		if (!zmax) {
			/* Copies only: kept out of the budget, shown apart, with
			 * the wait and wakeup before the pass (settled against the
			 * credit: given back). In a dd storm (21k blocks a second
			 * through a buffer of 512) that is 800 passes a second,
			 * and 13 ms of CPU a second between them. */
			uint64_t spent = cpu1 - pass_end;

			bg.credit += (double)(cpu0 - pass_end);
			bg.cpu = cpu1;
			bt_cold_budget_copied(p->cold, spent);
		} else if (n > 0 && pass.compressed) {
			/* A compressed block's cost: the codec's share, and the
			 * read and copy every block taken has. Learnt in a storm
			 * too, where every pass also stores blocks raw: the first
			 * guess (20 us) stood there; learnt, 12 us at 1M events/s
			 * into 32 MiB, and 11% more of the tier compressed. */
			uint64_t spent = cpu1 - cpu0;
			uint64_t other = spent > pass.codec_ns ? spent - pass.codec_ns : 0;
			double per = (double)pass.codec_ns / pass.compressed + (double)other / n;

			bg.block_ns = 0.7 * bg.block_ns + 0.3 * (per > 100 ? per : 100);
		}
		pass_end = cpu1;
		if (pass.stored_raw)
			bt_cold_budget_held_back(p->cold);
		if (n > 0 && now > last)
			rate = 0.5 * rate + 0.5 * (double)n / (double)(now - last);
		last = now;
		if (n >= 0 && (uint32_t)n > bs.nblocks / (2 * BT_COLD_NUDGE_DIV))
			continue;
		if (rate > 0 && bs.nblocks / BT_COLD_NUDGE_DIV / rate < (double)sleep_ns)
			sleep_ns = (uint64_t)(bs.nblocks / BT_COLD_NUDGE_DIV / rate);
		if (sleep_ns < MIN_MS * 1000000ull)
			sleep_ns = MIN_MS * 1000000ull;
		bt_cold_wait(p->cold, sleep_ns); /* or less: the drain nudges (bt_cold_nudge) */
	}
	/* The last blocks due, for the final dump (the newer
	 * ones it reads from the buffer); outside the budget. */
	bt_buffer_stats(p->buf, &bs);
	pump_pass(p, take_end(&bs), UINT32_MAX, NULL);
	return NULL;
}

/* Start the thread; NULL + message on failure. */
static struct bt_cold_pump *bt_cold_pump_start(struct bt_cold *cold, struct bt_buffer *buf, uint32_t budget_ppm,
					       char *err, size_t errlen)
{
	struct bt_cold_pump *p = calloc(1, sizeof(*p));
	int r;

	if (!p) {
		snprintf(err, errlen, "cold tier: out of memory");
		return NULL;
	}
	p->cold = cold;
	p->buf = buf;
	p->budget_ppm = budget_ppm;
	pthread_mutex_init(&p->pass, NULL);
	bt_cold_budget_set(cold, budget_ppm);
	r = pthread_create(&p->thread, NULL, pump_main, p);
	if (r) {
		snprintf(err, errlen, "cold tier: cannot start its thread: %s", strerror(r));
		pthread_mutex_destroy(&p->pass);
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
	pthread_mutex_destroy(&p->pass);
	free(p);
}

uint64_t recorder_buffer_share(const struct record_opts *o, uint64_t budget)
{
	/* floor(budget * share / 100), without the product's overflow and
	 * without dropping budget % 100 (2 MiB at 75% must leave 512 KiB) */
	return o->cold_pct ? budget / 100 * (100 - o->cold_pct) + budget % 100 * (100 - o->cold_pct) / 100 : budget;
}

void recorder_budget_now(struct recorder *r, struct recorder_budget *b)
{
	struct bt_stats bs;
	struct bt_cold_stats cs = { 0 };

	bt_buffer_stats(r->buf, &bs);
	if (r->cold)
		bt_cold_stats(r->cold, &cs);
	b->raw = bs.size;
	b->cold = cs.size;
	b->size = bs.size + cs.size;
	b->max = r->cold ? r->o->max_size : bs.max_size;
}

void recorder_budget_split(struct recorder *r, uint64_t total, uint64_t *raw, uint64_t *cold)
{
	struct bt_stats bs;

	if (!r->cold) {
		*raw = total;
		*cold = 0;
		return;
	}
	bt_buffer_stats(r->buf, &bs);
	*raw = bt_round_size(r->buf, (size_t)recorder_buffer_share(r->o, total));
	if (*raw > bs.max_size)
		*raw = bs.max_size;
	*cold = total > *raw ? total - *raw : 0;
}

int recorder_cold_start(struct recorder *r)
{
	const struct record_opts *o = r->o;
	struct bt_cold_config cc = { .codec = (enum bt_codec)o->cold_codec, .level = o->cold_level,
				      .group_blocks = o->cold_group };
	struct bt_stats bs;
	char err[256];

	bt_buffer_stats(r->buf, &bs);
	cc.size = o->buffer_size > bs.size ? (size_t)(o->buffer_size - bs.size) : 0;
	r->cold = bt_cold_create(&cc, bs.block_size, err, sizeof(err));
	if (!r->cold && !o->cold_given && errno == EINVAL) {
		/* The default tier in a buffer too small for one group: record
		 * without it rather than refuse to record. */
		bt_warn("%s: recording without the cold tier (the buffer keeps its share only)", err);
		return 0;
	}
	if (!r->cold) {
		bt_warn("%s: give a larger --buffer-size or --cold-tier, or --cold-tier off", err);
		return -1;
	}
	r->cold_pump = bt_cold_pump_start(r->cold, r->buf, o->cold_cpu_ppm, err, sizeof(err));
	if (!r->cold_pump) {
		bt_warn("%s", err);
		return -1;
	}
	return 0;
}
