// SPDX-License-Identifier: MIT
/*
 * stress_stacks.c - the stack table under its real concurrency: one drain
 * thread defining stacks, naming them in events it writes into a block
 * buffer and reclaiming after every few events (stack_table.h), while dump
 * threads hold the table, read the buffer, copy the table and release, and
 * a status thread reads the counts.
 *
 * Self-checking payloads: an event is (hash, id, check) and a stack's first
 * frame is its hash. A dump proves that every event it read names an id
 * whose frames are its own stack (an id freed and handed to another stack
 * while a retained event names it would show other frames), that no event
 * is torn (check); and that stacks were reclaimed at all. Stacks lost
 * because the table was full while dumps held it are shown, not failed.
 * Two rounds: a table larger than the window (freed as the window moves
 * on), then one smaller (full: the stacks named longest ago give way while
 * events still name them, and the dump's births must call those events
 * reclaimed, never give them the frames of the id's next stack).
 *
 * usage: stress_stacks [SECONDS (default $STRESS_SECONDS, else 2)] [DUMPERS];
 * prints one summary line.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/types.h>
#include "btrace_buffer.h"
#include "stack_table.h"

struct ev {
	uint64_t hash;
	uint32_t id, check;
	uint64_t ts;  /* the drain's event count */
	uint32_t cpu, pad;
};

static struct bt_buffer *buf;
static struct bt_stack_table *tab;
static atomic_int stop;
static _Atomic uint64_t dumps, verified, bad, torn, reclaimed_refs;

static uint32_t check_of(uint64_t h, uint32_t id)
{
	return (uint32_t)(h * 0x9e3779b97f4a7c15ull >> 32) ^ id ^ 0x5a5a5a5au;
}

static void forget(void *ctx, const uint64_t *h, size_t n)
{
	(void)ctx, (void)h, (void)n; /* the drain below always sends definitions */
}

static long held(void *ctx, uint64_t **out)
{
	(void)ctx;
	*out = NULL;
	return 0;
}

static void define(uint64_t hash)
{
	union {
		struct bt_raw_stack_def d;
		__u64 raw[(sizeof(struct bt_raw_stack_def) + 3 * 8) / 8];
	} m;

	memset(&m, 0, sizeof(m));
	m.d.h.type = BT_RAW_STACK_DEF;
	m.d.hash = hash;
	m.d.nframes = 3;
	m.d.ips[0] = hash;
	m.d.ips[1] = ~hash;
	m.d.ips[2] = 0xffffffff81000000ull;
	bt_stack_table_define(tab, &m.d, sizeof(m));
}

static void *drain(void *arg)
{
	uint64_t i = 0, *lost = arg;
	struct bt_stats bs;

	/* Pairs with the release store in main(). */
	while (!atomic_load_explicit(&stop, memory_order_acquire)) {
		uint64_t h = 0x100000 + i / 4;
		/* Its definition each time, as the kernel resends a stack the
		 * table had it forget: an undefined id is then always a bug. */
		define(h);
		uint32_t cpu = (uint32_t)(i / 64 % 2);
		bt_stack_table_note(tab, cpu, i + 1);
		struct ev e = { h, bt_stack_table_ref(tab, h), 0, i + 1, cpu, 0 };
		e.check = check_of(e.hash, e.id);
		if (e.id == BT_STACK_LOST)
			++*lost;
		bt_write(buf, cpu, &e, sizeof(e));
		if (++i % 5 == 0) {
			bt_buffer_stats(buf, &bs);
			bt_stack_table_pass(tab, bs.blocks_used, bs.nblocks, UINT64_MAX, bs.active);
		}
	}
	return NULL;
}

struct events {
	struct ev *e;
	size_t n, cap;
};

static int collect(const struct bt_block_view *blk, void *ctx)
{
	struct events *c = ctx;
	uint32_t off = 0, len;
	const struct ev *e;

	while ((e = bt_block_next(blk, &off, &len))) {
		if (len != sizeof(*e) || e->check != check_of(e->hash, e->id)) {
			atomic_fetch_add_explicit(&torn, 1, memory_order_relaxed);
			continue;
		}
		if (c->n == c->cap) {
			c->cap = c->cap ? 2 * c->cap : 1024;
			c->e = realloc(c->e, c->cap * sizeof(*c->e));
			if (!c->e)
				abort();
		}
		c->e[c->n++] = *e;
	}
	return 0;
}

static void *dumper(void *arg)
{
	struct events c = { 0 };
	struct bt_read_stats rst;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_acquire)) {
		struct bt_dump_stacks s;
		uint64_t nb = 0;

		c.n = 0;
		memset(&s, 0, sizeof(s));
		uint64_t token = bt_stack_table_hold(tab);
		struct bt_stack_births *b = bt_stack_table_births(tab);
		bt_read(buf, collect, &c, &rst);
		int r = bt_stack_table_snapshot(tab, &s);
		bt_stack_table_release(tab, token);
		if (r || !b)
			abort();
		for (size_t i = 0; i < c.n; i++) {
			const struct ev *e = &c.e[i];
			uint32_t id = bt_stack_births_id(b, e->id, e->cpu, e->ts);
			if (id == BT_STACK_LOST || id == BT_STACK_RECLAIMED)
				continue;
			const struct bt_dump_stack *k = id && id <= s.nstacks ? &s.stacks[id - 1] : NULL;
			if (!k || (k->flags & BT_STACK_F_UNDEFINED) || k->nframes != 3 ||
			    s.frames[k->first].off != e->hash || s.frames[k->first + 1].off != ~e->hash) {
				if (nb++ < 3)
					fprintf(stderr, "event of stack %#llx names id %u: %s\n", (unsigned long long)e->hash,
						e->id, !k ? "out of range" : (k->flags & BT_STACK_F_UNDEFINED) ? "free/undefined" :
						"another stack's frames");
			}
		}
		bt_stack_snapshot_free(&s);
		atomic_fetch_add_explicit(&reclaimed_refs, bt_stack_births_reclaimed(b), memory_order_relaxed);
		bt_stack_births_free(b);
		atomic_fetch_add_explicit(&bad, nb, memory_order_relaxed);
		atomic_fetch_add_explicit(&verified, c.n, memory_order_relaxed);
		atomic_fetch_add_explicit(&dumps, 1, memory_order_relaxed);
		/* Dumps are occasional: back to back they would keep every
		 * stack doomed meanwhile (by design), and the table would fill. */
		struct timespec ts = { 0, 500000 };
		nanosleep(&ts, NULL);
	}
	free(c.e);
	return NULL;
}

static void *status(void *arg)
{
	struct bt_stack_counts c;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_acquire)) {
		bt_stack_table_counts(tab, &c);
		if (c.stacks > 4096 || c.frames > 3 * c.stacks) /* frames come after the id */
			abort();
	}
	return NULL;
}

/* One round of secs with a table of max stacks; 0 if it held. */
static int round_of(uint32_t max, double secs, int ndump)
{
	struct bt_config cfg = { .size = 128 * 512, .block_size = 512, .ncores = 2, .active = 8 };
	struct bt_stack_reclaim_ops ops = { forget, held, NULL, 2 };
	pthread_t d, st, dd[8];
	uint64_t lost = 0;
	struct bt_stack_counts c;

	atomic_store(&stop, 0);
	dumps = verified = bad = torn = reclaimed_refs = 0;
	buf = bt_buffer_create(&cfg, NULL, 0);
	/* a window: 128 blocks x ~15 events / 4 events per stack ~ 480 stacks */
	tab = bt_stack_table_new(max);
	if (!buf || !tab)
		return 2;
	bt_stack_table_set_reclaim(tab, &ops);
	pthread_create(&d, NULL, drain, &lost);
	pthread_create(&st, NULL, status, NULL);
	for (int i = 0; i < ndump; i++)
		pthread_create(&dd[i], NULL, dumper, NULL);
	struct timespec ts = { (time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9) };
	nanosleep(&ts, NULL);
	/* Release: pairs with the acquire loads of the threads. */
	atomic_store_explicit(&stop, 1, memory_order_release);
	pthread_join(d, NULL);
	pthread_join(st, NULL);
	for (int i = 0; i < ndump; i++)
		pthread_join(dd[i], NULL);
	bt_stack_table_counts(tab, &c);
	/* a full table must have evicted, and its dumps seen reclaimed ids */
	int full = max < 480;
	int fail = bad || torn || !c.reclaimed || !verified || (full && (!c.evicted || !reclaimed_refs));
	printf("stress_stacks: %s: table of %u: %llu dumps verified %llu events, %llu wrong frames, %llu torn, %llu "
	       "said reclaimed; table: %llu stacks, %llu reclaimed (%llu while full), %llu lost (table full)\n",
	       fail ? "FAIL" : "ok", max, (unsigned long long)dumps, (unsigned long long)verified,
	       (unsigned long long)bad, (unsigned long long)torn, (unsigned long long)reclaimed_refs,
	       (unsigned long long)c.stacks, (unsigned long long)c.reclaimed, (unsigned long long)c.evicted,
	       (unsigned long long)lost);
	bt_stack_table_free(tab);
	bt_buffer_destroy(buf);
	return fail;
}

int main(int argc, char **argv)
{
	const char *env = getenv("STRESS_SECONDS");
	double secs = argc > 1 ? atof(argv[1]) : env ? atof(env) : 2;
	int ndump = argc > 2 ? atoi(argv[2]) : 2;

	if (ndump < 1 || ndump > 8)
		ndump = 2;
	int fail = round_of(4096, secs / 2, ndump);
	return round_of(256, secs / 2, ndump) || fail;
}
