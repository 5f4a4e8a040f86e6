// SPDX-License-Identifier: MIT
/*
 * test_stack_table.c - the stack table's reclamation (stack_table.h) driven
 * the way the drain drives it, against a real block buffer: stacks defined
 * and named by events written into the buffer, a pass after every few
 * events. The kernel side is this test's: `forget` records the hashes the
 * table drops from the set of stacks already sent, `held` returns what a
 * test says blocked tasks hold.
 *
 * Each event carries its stack's hash; each stack's frame 0 is its hash. The
 * invariant checked everywhere: every event the buffer still holds names an
 * id whose frames, in a snapshot taken after the buffer was read, are its
 * own hash (no id handed to another stack while an event names it).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "harness.h"
#include "btrace_buffer.h"
#include "stack_table.h"

struct ev {
	uint64_t hash;
	uint32_t id, pad;
	uint64_t ts;
};
static uint64_t clock_ns; /* the events' time */

/* The kernel side. */
static uint64_t forgot[1 << 16];
static size_t nforgot;
static uint64_t held_hashes[8];
static long nheld;
static int held_fails;

static void t_forget(void *ctx, const uint64_t *h, size_t n)
{
	(void)ctx;
	for (size_t i = 0; i < n && nforgot < sizeof(forgot) / sizeof(forgot[0]); i++)
		forgot[nforgot++] = h[i];
}

static long t_held(void *ctx, uint64_t **out)
{
	(void)ctx;
	if (held_fails)
		return -EIO;
	*out = malloc(sizeof(held_hashes));
	if (!*out)
		return -ENOMEM;
	memcpy(*out, held_hashes, sizeof(held_hashes));
	return nheld;
}

static int was_forgotten(uint64_t h)
{
	for (size_t i = 0; i < nforgot; i++)
		if (forgot[i] == h)
			return 1;
	return 0;
}

struct rig {
	struct bt_buffer *buf;
	struct bt_stack_table *t;
	struct bt_stats bs;
};

static int rig_new(struct rig *r, uint32_t max_stacks)
{
	struct bt_config c = { .size = 64 * 256, .block_size = 256, .ncores = 1, .active = 16 };
	struct bt_stack_reclaim_ops ops = { t_forget, t_held, NULL, 1 };

	memset(r, 0, sizeof(*r));
	nforgot = 0;
	nheld = 0;
	held_fails = 0;
	r->buf = bt_buffer_create(&c, NULL, 0);
	r->t = bt_stack_table_new(max_stacks);
	if (!r->buf || !r->t)
		return -1;
	bt_stack_table_set_reclaim(r->t, &ops);
	return 0;
}

static void rig_free(struct rig *r)
{
	bt_stack_table_free(r->t);
	bt_buffer_destroy(r->buf);
}

/* A kernel stack's definition: 2 frames, the first its hash. */
static void define(struct rig *r, uint64_t hash)
{
	union {
		struct bt_raw_stack_def d;
		__u64 raw[(sizeof(struct bt_raw_stack_def) + 2 * 8) / 8];
	} m;

	memset(&m, 0, sizeof(m));
	m.d.h.type = BT_RAW_STACK_DEF;
	m.d.hash = hash;
	m.d.nframes = 2;
	m.d.ips[0] = hash;
	m.d.ips[1] = 0xffffffff81000000ull;
	bt_stack_table_define(r->t, &m.d, sizeof(m));
}

/* An event naming hash, stored; its id. */
static uint32_t event(struct rig *r, uint64_t hash)
{
	bt_stack_table_note(r->t, 0, ++clock_ns);
	struct ev e = { hash, bt_stack_table_ref(r->t, hash), 0, clock_ns };

	bt_write(r->buf, 0, &e, sizeof(e));
	return e.id;
}

static void pass(struct rig *r)
{
	bt_buffer_stats(r->buf, &r->bs);
	bt_stack_table_pass(r->t, r->bs.blocks_used, r->bs.nblocks, UINT64_MAX, r->bs.active);
}

struct events {
	struct ev *e;
	size_t n, cap;
};

static int collect_block(const struct bt_block_view *blk, void *ctx)
{
	struct events *c = ctx;
	uint32_t off = 0, len;
	const struct ev *e;

	while ((e = bt_block_next(blk, &off, &len))) {
		if (c->n == c->cap) {
			c->cap = c->cap ? 2 * c->cap : 256;
			c->e = realloc(c->e, c->cap * sizeof(*c->e));
			if (!c->e)
				abort();
		}
		c->e[c->n++] = *e;
	}
	return 0;
}

struct verdict {
	uint64_t events, bad, undefined, lost, reclaimed;
	uint64_t tail_gone; /* of the last TAIL events read: without their stack */
	uint64_t recent, recent_gone; /* events naming a hash in [recent_from, 0x7000...): without their stack */
};
static uint64_t recent_from = UINT64_MAX;
#define TAIL 40

/* A dump's order: hold, read the buffer, (the drain goes on: a pass),
 * snapshot the table, release. Every event's id must give its own hash. */
static struct verdict verify(struct rig *r)
{
	struct events c = { 0 };
	struct bt_dump_stacks s;
	struct bt_read_stats rst;
	struct verdict v = { 0 };

	memset(&s, 0, sizeof(s));
	uint64_t token = bt_stack_table_hold(r->t);
	struct bt_stack_births *b = bt_stack_table_births(r->t);
	bt_read(r->buf, collect_block, &c, &rst);
	for (int i = 0; i < 3; i++) { /* the drain goes on meanwhile: nothing may be freed */
		for (int k = 0; k < 40; k++) {
			uint64_t h = 0x7000000000000000ull + (uint64_t)(k % 4);
			define(r, h);
			event(r, h);
		}
		pass(r);
	}
	if (bt_stack_table_snapshot(r->t, &s) == 0) {
		for (size_t i = 0; i < c.n; i++) {
			const struct ev *e = &c.e[i];
			uint32_t id = bt_stack_births_id(b, e->id, 0, e->ts);
			int tail = i + TAIL >= c.n;
			v.events++;
			int recent = e->hash >= recent_from && e->hash < 0x7000000000000000ull;
			v.tail_gone += tail && BT_STACK_ID_GONE(id);
			v.recent += recent;
			v.recent_gone += recent && BT_STACK_ID_GONE(id);
			if (id == BT_STACK_LOST || id == BT_STACK_RECLAIMED) {
				v.lost += id == BT_STACK_LOST;
				v.reclaimed += id == BT_STACK_RECLAIMED;
				continue;
			}
			if (!id || id > s.nstacks) {
				v.bad++;
				continue;
			}
			const struct bt_dump_stack *k = &s.stacks[id - 1];
			if (k->flags & BT_STACK_F_UNDEFINED) {
				v.undefined++;
				v.tail_gone += tail;
				v.recent_gone += recent;
			} else if (!k->nframes || s.frames[k->first].off != e->hash)
				v.bad++;
		}
		bt_stack_snapshot_free(&s);
	} else
		v.bad = UINT64_MAX;
	bt_stack_table_release(r->t, token);
	if (!b)
		v.bad = UINT64_MAX;
	bt_stack_births_free(b);
	free(c.e);
	return v;
}

static uint64_t counter(struct rig *r, int which)
{
	struct bt_stack_counts c;

	bt_stack_table_counts(r->t, &c);
	return which == 0 ? c.stacks : which == 1 ? c.overflow : which == 2 ? c.reclaimed : which == 4 ? c.evicted : c.frames;
}

/* 20,000 events naming 5,000 stacks in turn through a table of 512 and a
 * buffer whose window holds ~450 events (~110 stacks): without reclamation
 * the table is full after 512 stacks. With it: nothing lost, and every
 * retained event names its own frames, checked at many points. */
static void follows_window(int dumps_between_passes)
{
	struct rig r;
	uint64_t bad = 0, undefined = 0, lost = 0, checks = 0;

	REQUIRE(rig_new(&r, 512) == 0, "rig");
	for (uint32_t i = 0; i < 20000; i++) {
		uint64_t h = 0x1000 + i / 4;
		if (i % 4 == 0)
			define(&r, h);
		event(&r, h);
		if (i % 5 == 4) {
			pass(&r);
			/* a dump that begins and ends before the next pass: after
			 * a doom, it began after it (the pass count once took it
			 * for an older one, and reclamation stopped for good) */
			if (dumps_between_passes)
				bt_stack_table_release(r.t, bt_stack_table_hold(r.t));
		}
		if (i % 997 == 996) {
			struct verdict v = verify(&r);
			bad += v.bad;
			undefined += v.undefined;
			lost += v.lost;
			checks += v.events;
		}
	}
	CHECK(checks > 7000, "verified %lu events", (unsigned long)checks);
	CHECK(bad == 0, "%lu retained events name frames not theirs", (unsigned long)bad);
	CHECK(undefined == 0, "%lu retained events name undefined stacks", (unsigned long)undefined);
	CHECK(lost == 0 && counter(&r, 1) == 0, "lost %lu, overflow %lu", (unsigned long)lost,
	      (unsigned long)counter(&r, 1));
	CHECK(counter(&r, 4) == 0, "evicted %lu from a table larger than the window", (unsigned long)counter(&r, 4));
	CHECK(counter(&r, 2) > 4000, "reclaimed %lu", (unsigned long)counter(&r, 2));
	CHECK(counter(&r, 0) <= 512 && counter(&r, 3) == 2 * counter(&r, 0), "stacks %lu frames %lu",
	      (unsigned long)counter(&r, 0), (unsigned long)counter(&r, 3));
	CHECK(nforgot >= counter(&r, 2), "forgot %zu < reclaimed", nforgot);
	CHECK(was_forgotten(0x1000) && !was_forgotten(0x1000 + 4999), "the oldest forgotten, the newest not");
	rig_free(&r);
}

static void test_follows_window(void)
{
	follows_window(0);
}

/* The same with a short dump after every pass. */
static void test_follows_window_dumps_between(void)
{
	follows_window(1);
}

/* A table smaller than the window (96 stacks; the window names ~110):
 * full long before the window moves on. The stacks named longest ago give
 * way; the newest events all keep their stacks, nothing is lost, and an
 * event whose stack was freed says reclaimed, never shows the frames its
 * id went to. */
static void test_full_keeps_newest(void)
{
	struct rig r;
	uint64_t bad = 0, undefined = 0, lost = 0, reclaimed = 0, tail_gone = 0, checks = 0, held_overflow = 0;

	REQUIRE(rig_new(&r, 96) == 0, "rig");
	for (uint32_t i = 0; i < 6000; i++) {
		uint64_t h = 0x5000 + i / 4;
		if (i % 4 == 0)
			define(&r, h);
		event(&r, h);
		if (i % 5 == 4)
			pass(&r);
		if (i % 499 == 498) {
			uint64_t o = counter(&r, 1);
			struct verdict v = verify(&r);
			/* nothing is freed while held: its own new stacks may not fit */
			held_overflow += counter(&r, 1) - o;
			bad += v.bad;
			undefined += v.undefined;
			lost += v.lost;
			reclaimed += v.reclaimed;
			tail_gone += v.tail_gone;
			checks += v.events;
		}
	}
	CHECK(checks > 3000, "verified %lu events", (unsigned long)checks);
	CHECK(bad == 0, "%lu events name frames not theirs", (unsigned long)bad);
	CHECK(tail_gone == 0, "%lu of the newest events without their stack", (unsigned long)tail_gone);
	CHECK(lost == 0 && counter(&r, 1) == held_overflow && undefined == 0,
	      "lost %lu, overflow %lu (%lu while held), undefined %lu", (unsigned long)lost,
	      (unsigned long)counter(&r, 1), (unsigned long)held_overflow, (unsigned long)undefined);
	CHECK(reclaimed > checks / 8, "only %lu of %lu events say reclaimed", (unsigned long)reclaimed,
	      (unsigned long)checks);
	CHECK(counter(&r, 4) > 1000 && counter(&r, 4) <= counter(&r, 2), "evicted %lu, reclaimed %lu",
	      (unsigned long)counter(&r, 4), (unsigned long)counter(&r, 2));
	CHECK(counter(&r, 0) <= 96, "stacks %lu", (unsigned long)counter(&r, 0));
	rig_free(&r);
}

/* A full table under a steady stream of new stacks with bursts (6 a pass,
 * 30 every tenth): room is made for the next passes, the oldest first,
 * and no more than that: the newest half of the table's stacks keep every
 * event that names them (a burst once doomed twice the room wanted, and
 * with it stacks named a second ago: CI run of 2026-12-05). */
static void test_full_keeps_half(void)
{
	struct rig r;
	uint64_t next = 0x9000, recent = 0, recent_gone = 0, bad = 0, checks = 0;

	REQUIRE(rig_new(&r, 192) == 0, "rig");
	for (uint32_t p = 0; p < 400; p++) {
		uint32_t n = p % 10 == 9 ? 30 : 6;
		for (uint32_t j = 0; j < n; j++, next++) {
			define(&r, next);
			event(&r, next);
			event(&r, next);
		}
		pass(&r);
		if (p % 25 == 24 && p > 100) {
			recent_from = next - 96;
			struct verdict v = verify(&r);
			recent_from = UINT64_MAX;
			recent += v.recent;
			recent_gone += v.recent_gone;
			bad += v.bad;
			checks++;
		}
	}
	CHECK(checks > 5 && recent > checks * 100, "checked %lu events in %lu dumps", (unsigned long)recent,
	      (unsigned long)checks);
	CHECK(recent_gone == 0, "%lu of %lu events naming the newest 96 stacks without them", (unsigned long)recent_gone,
	      (unsigned long)recent);
	CHECK(bad == 0, "%lu events name frames not theirs", (unsigned long)bad);
	CHECK(counter(&r, 4) > 1000, "evicted %lu", (unsigned long)counter(&r, 4));
	rig_free(&r);
}

/* Without the kernel side (no ops), nothing is reclaimed: the table fills
 * and the overflow is counted. */
static void test_off_fills(void)
{
	struct bt_config c = { .size = 64 * 256, .block_size = 256, .ncores = 1, .active = 16 };
	struct rig r = { .buf = bt_buffer_create(&c, NULL, 0), .t = bt_stack_table_new(64) };

	REQUIRE(r.buf && r.t, "rig");
	for (uint32_t i = 0; i < 1000; i++) {
		define(&r, 0x1000 + i);
		event(&r, 0x1000 + i);
		pass(&r);
	}
	CHECK(counter(&r, 0) == 64 && counter(&r, 1) == 2 * (1000 - 64) && /* the definition and the event */ counter(&r, 2) == 0,
	      "stacks %lu overflow %lu reclaimed %lu", (unsigned long)counter(&r, 0), (unsigned long)counter(&r, 1),
	      (unsigned long)counter(&r, 2));
	rig_free(&r);
}

/* Passes (a new stack named 8 times each) until stack h, id 1, is
 * reclaimed; their number, 0 if not within max. */
static int run_until_reclaimed(struct rig *r, uint64_t h, int max)
{
	for (int i = 1; i <= max; i++) {
		uint64_t filler = 0x900000 + (uint64_t)i;
		define(r, filler);
		for (int k = 0; k < 8; k++)
			event(r, filler);
		pass(r);
		struct bt_dump_stacks s;
		memset(&s, 0, sizeof(s));
		if (bt_stack_table_snapshot(r->t, &s))
			return 0;
		/* id 1 free, or handed to another stack */
		int gone = (s.stacks[0].flags & BT_STACK_F_UNDEFINED) || s.frames[s.stacks[0].first].off != h;
		bt_stack_snapshot_free(&s);
		if (gone)
			return i;
	}
	return 0;
}

/* A stack a blocked task still holds (the kernel's pending table) stays;
 * so does every stack while a dump holds the table, and while the kernel
 * side cannot say what it holds. */
static void test_kept_while_held(void)
{
	struct rig r;

	REQUIRE(rig_new(&r, 256) == 0, "rig");
	define(&r, 0xabc);
	REQUIRE(event(&r, 0xabc) == 1, "first id");
	held_hashes[0] = 0xabc;
	nheld = 1;
	CHECK(run_until_reclaimed(&r, 0xabc, 300) == 0, "freed while a blocked task holds it");
	CHECK(was_forgotten(0xabc), "doomed (forgotten) meanwhile");
	nheld = 0;
	held_fails = 1;
	CHECK(run_until_reclaimed(&r, 0xabc, 300) == 0, "freed while the kernel side could not be read");
	held_fails = 0;
	CHECK(run_until_reclaimed(&r, 0xabc, 300) > 0, "not freed once the kernel side could be read");
	rig_free(&r);

	/* any dump holding the table keeps it (its births and its copy of the
	 * table must stay true: a full table frees stacks events still name),
	 * also one that began after it was doomed */
	REQUIRE(rig_new(&r, 256) == 0, "rig");
	define(&r, 0xabc);
	REQUIRE(event(&r, 0xabc) == 1, "first id");
	uint64_t token = bt_stack_table_hold(r.t);
	CHECK(run_until_reclaimed(&r, 0xabc, 300) == 0, "freed during a dump that may have copied its events");
	CHECK(was_forgotten(0xabc), "doomed meanwhile");
	uint64_t later = bt_stack_table_hold(r.t);
	bt_stack_table_release(r.t, token);
	CHECK(run_until_reclaimed(&r, 0xabc, 5) == 0, "freed during a dump that began after it was doomed");
	bt_stack_table_release(r.t, later);
	CHECK(run_until_reclaimed(&r, 0xabc, 5) > 0, "kept once no dump holds the table");
	rig_free(&r);
}

/* A stack doomed (forgotten by the kernel) and named in the next pass by
 * an event that was in flight survives, keeps its id and frames. */
static void test_named_while_doomed(void)
{
	struct rig r;
	int doomed_at = 0;

	REQUIRE(rig_new(&r, 256) == 0, "rig");
	define(&r, 0xabc);
	REQUIRE(event(&r, 0xabc) == 1, "first id");
	for (int i = 1; i <= 300 && !doomed_at; i++) {
		define(&r, 0x900000 + (uint64_t)i);
		for (int k = 0; k < 8; k++)
			event(&r, 0x900000 + (uint64_t)i);
		pass(&r);
		if (was_forgotten(0xabc))
			doomed_at = i;
	}
	REQUIRE(doomed_at, "never doomed");
	CHECK(event(&r, 0xabc) == 1, "the in-flight event keeps id 1");
	pass(&r);
	CHECK(event(&r, 0xabc) == 1, "still id 1 after the pass that frees the doomed");
	struct verdict v = verify(&r);
	CHECK(v.bad == 0 && v.undefined == 0, "bad %lu undefined %lu", (unsigned long)v.bad, (unsigned long)v.undefined);
	rig_free(&r);
}

/* A hash freed while an event naming it was in flight comes back without
 * frames: it gets an id (undefined), the kernel is told to forget it at
 * the pass, and the next definition fills that id. */
static void test_in_flight_after_free(void)
{
	struct rig r;

	REQUIRE(rig_new(&r, 256) == 0, "rig");
	define(&r, 0xabc);
	REQUIRE(event(&r, 0xabc) == 1, "first id");
	REQUIRE(run_until_reclaimed(&r, 0xabc, 300) > 0, "reclaimed");
	nforgot = 0;
	uint32_t id = event(&r, 0xabc); /* the kernel still thought it sent it */
	CHECK(id != 0 && id != BT_STACK_LOST, "id %u", id);
	pass(&r);
	CHECK(was_forgotten(0xabc), "not forgotten: its frames would never come again");
	define(&r, 0xabc);
	CHECK(event(&r, 0xabc) == id, "the definition fills the same id");
	struct verdict v = verify(&r);
	CHECK(v.bad == 0 && v.undefined == 0, "bad %lu undefined %lu", (unsigned long)v.bad, (unsigned long)v.undefined);
	rig_free(&r);
}

/* Hashes that share a home slot: freeing some keeps the rest reachable
 * (the same ids come back, no new ones) and their slots reusable. */
static void test_index_removal(void)
{
	struct rig r;

	REQUIRE(rig_new(&r, 64) == 0, "rig"); /* 128 slots */
	/* home = (h ^ h >> 32) & 127: h = k << 7 | 5 share home 5 */
	uint64_t hs[20];
	uint32_t ids[20];
	for (int k = 0; k < 20; k++) {
		hs[k] = ((uint64_t)(k + 1) << 7) | 5;
		define(&r, hs[k]);
		ids[k] = event(&r, hs[k]);
	}
	/* keep the odd ones named until the even ones are reclaimed */
	for (int i = 0; i < 400 && counter(&r, 2) < 10; i++) {
		for (int k = 1; k < 20; k += 2)
			event(&r, hs[k]);
		pass(&r);
	}
	CHECK(counter(&r, 2) == 10, "reclaimed %lu, want the 10 even ones", (unsigned long)counter(&r, 2));
	for (int k = 1; k < 20; k += 2)
		CHECK(event(&r, hs[k]) == ids[k], "hash %d moved: id %u", k, ids[k]);
	struct verdict v = verify(&r);
	CHECK(v.bad == 0, "bad %lu", (unsigned long)v.bad);
	rig_free(&r);
}

int main(void)
{
	RUN(test_follows_window);
	RUN(test_follows_window_dumps_between);
	RUN(test_full_keeps_newest);
	RUN(test_full_keeps_half);
	RUN(test_off_fills);
	RUN(test_kept_while_held);
	RUN(test_named_while_doomed);
	RUN(test_in_flight_after_free);
	RUN(test_index_removal);
	printf("# %d passed, %d failed\n", h_ntests - h_nfail_tests, h_nfail_tests);
	return h_nfail_tests != 0;
}
