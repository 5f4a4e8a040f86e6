// SPDX-License-Identifier: MIT
/*
 * stack_reclaim.c - what reclaiming the stack table costs the drain, and
 * what it buys, with reclamation on and off side by side (stack_table.h).
 *
 * The drain's work on the table, without the kernel: a stream of sample
 * events into a real block buffer, a new stack every STACKS_EVERY events
 * (as under process churn, where every process brings new stacks), each
 * stack defined (BT_MAX_FRAMES/4 kernel frames, no file mapping to read),
 * then named by its events; a pass after every 64 events (a drain pass).
 * On: the loader's reclaim ops (the kernel side's forget/held answered at
 * once); off: none, as before reclamation (the table fills and stays full).
 *
 * Per configuration, median of REPS interleaved runs: ns of drain work per
 * event (the table's ref, define and pass, and the buffer write, the same
 * in both: the difference is reclamation's cost), the table's memory at the end (entries,
 * index and frames), and the share of the last window's events that carry
 * their stack.
 *
 * Three configurations: off with the default --max-stacks (the table
 * fills, later stacks are lost), on with it, and off with a table big
 * enough for every stack of the run (what the latest window would take
 * without reclamation: memory grows with the run).
 *
 * usage: stack_reclaim [EVENTS] [REPS]; one line per configuration.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/types.h>
#include "btrace_buffer.h"
#include "stack_table.h"

#define MAX_STACKS 16384u /* the default --max-stacks */
#define STACKS_EVERY 4
#define NFRAMES 32

struct ev {
	uint64_t hash;
	uint32_t id, pad;
};

static void forget(void *ctx, const uint64_t *h, size_t n)
{
	(void)ctx, (void)h, (void)n;
}

static long held(void *ctx, uint64_t **out)
{
	(void)ctx;
	*out = NULL;
	return 0;
}

/* Stack hashes are FNV-1a outputs: spread, as here (splitmix64). */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return (x ^ (x >> 31)) | 2; /* not BT_HASH_NONE/LOST */
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct count {
	uint64_t n, with;
};

static int count_block(const struct bt_block_view *blk, void *ctx)
{
	struct count *c = ctx;
	uint32_t off = 0, len;
	const struct ev *e;

	while ((e = bt_block_next(blk, &off, &len))) {
		c->n++;
		c->with += e->id != BT_STACK_LOST;
	}
	return 0;
}

struct result {
	double ns_per_event, mem_mib, window_pct;
	uint64_t reclaimed;
};

/* mode 0: off, --max-stacks 16384; 1: on; 2: off with a table as big as
 * every stack of the run (what keeping the latest window without
 * reclamation takes). */
static struct result run(int mode, uint64_t events)
{
	uint32_t max = mode == 2 ? (uint32_t)(events / STACKS_EVERY + 1) : MAX_STACKS;
	/* 1 MiB of 4 KiB blocks: a window of ~43k events, ~11k stacks (one
	 * per STACKS_EVERY events): they fit in the table with its slack. */
	struct bt_config cfg = { .size = 1 << 20, .block_size = 4096, .ncores = 2 };
	struct bt_buffer *b = bt_buffer_create(&cfg, NULL, 0);
	struct bt_stack_table *t = bt_stack_table_new(max);
	struct bt_stack_reclaim_ops ops = { .forget = forget, .held = held };
	union {
		struct bt_raw_stack_def d;
		__u64 raw[(sizeof(struct bt_raw_stack_def) + NFRAMES * 8) / 8];
	} m;
	struct bt_stats bs;
	struct result r = { 0 };

	if (!b || !t)
		exit(2);
	if (mode == 1)
		bt_stack_table_set_reclaim(t, &ops);
	memset(&m, 0, sizeof(m));
	m.d.h.type = BT_RAW_STACK_DEF;
	m.d.nframes = NFRAMES;
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < events; i++) {
		uint64_t h = mix(i / STACKS_EVERY);
		if (i % STACKS_EVERY == 0) {
			m.d.hash = h;
			for (int k = 0; k < NFRAMES; k++)
				m.d.ips[k] = 0xffffffff81000000ull + (h & 0xffffff) * 64 + (uint64_t)k;
			bt_stack_table_define(t, &m.d, sizeof(m));
		}
		struct ev e = { h, bt_stack_table_ref(t, h), 0 };
		bt_write(b, (uint32_t)(i / 256 % 2), &e, sizeof(e));
		if (i % 64 == 63) {
			bt_buffer_stats(b, &bs);
			bt_stack_table_pass(t, bs.blocks_used, bs.nblocks, UINT64_MAX, bs.active);
		}
	}
	uint64_t drain_ns = now_ns() - t0;
	struct bt_stack_counts c;
	bt_stack_table_counts(t, &c);
	struct count w = { 0 };
	struct bt_read_stats rst;
	bt_read(b, count_block, &w, &rst);
	/* fixed: entries (48 B), index (2 slots x 12 B), free/doomed/fresh
	 * lists and scratch (20 B) per max_stacks; frames: 16 B each */
	r.mem_mib = ((double)max * (48 + 24 + 20) + (double)c.frames * 16) / (1 << 20);
	r.ns_per_event = (double)drain_ns / (double)events;
	r.window_pct = w.n ? 100.0 * (double)w.with / (double)w.n : 0;
	r.reclaimed = c.reclaimed;
	bt_stack_table_free(t);
	bt_buffer_destroy(b);
	return r;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const char *const names[3] = { "off (max 16384)", "on (max 16384)", "off, table of every stack" };
	uint64_t events = argc > 1 ? strtoull(argv[1], NULL, 10) : 4000000;
	int reps = argc > 2 ? atoi(argv[2]) : 5;
	double ns[3][64], mem[3] = { 0 }, win[3] = { 0 };
	uint64_t recl[3] = { 0 };

	if (reps < 1 || reps > 64)
		reps = 5;
	run(1, events / 10); /* warm up */
	for (int r = 0; r < reps; r++)
		for (int mode = 0; mode < 3; mode++) {
			struct result x = run(mode, events);
			ns[mode][r] = x.ns_per_event;
			mem[mode] = x.mem_mib;
			win[mode] = x.window_pct;
			recl[mode] = x.reclaimed;
		}
	for (int mode = 0; mode < 3; mode++) {
		qsort(ns[mode], (size_t)reps, sizeof(double), cmp_d);
		printf("stack_reclaim %s: %.1f ns of drain work per event (median of %d), table %.2f MiB, "
		       "last window's events with their stack %.1f%%, %llu stacks reclaimed, %llu events\n",
		       names[mode], ns[mode][reps / 2], reps, mem[mode], win[mode], (unsigned long long)recl[mode],
		       (unsigned long long)events);
	}
	return 0;
}
