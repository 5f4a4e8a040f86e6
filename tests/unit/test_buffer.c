// SPDX-License-Identifier: MIT
/* Deterministic tests of the block buffer (single thread, virtual cores). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btrace_buffer.h"
#include "btrace_buffer_int.h" /* test_unpublished_position stages a preempted writer */
#include "harness.h"

/* Payload of every test entry: self-describing and checksummed. */
struct rec {
	uint32_t core;
	uint32_t len; /* whole payload length */
	uint64_t seq;
	uint32_t csum;
	uint32_t pad;
	uint8_t fill[];
};

static uint32_t csum_of(const struct rec *r)
{
	uint32_t h = 2166136261u ^ r->core ^ (uint32_t)r->seq * 16777619u ^ r->len;

	for (uint32_t i = 0; i < r->len - sizeof(*r); i++)
		h = (h ^ r->fill[i]) * 16777619u;
	return h;
}

static int put(struct bt_buffer *b, uint32_t core, uint64_t seq, uint32_t len)
{
	uint8_t buf[65536];
	struct rec *r = (struct rec *)buf;

	if (len < sizeof(*r))
		len = sizeof(*r);
	r->core = core;
	r->len = len;
	r->seq = seq;
	r->pad = 0;
	for (uint32_t i = 0; i < len - sizeof(*r); i++)
		r->fill[i] = (uint8_t)(seq * 31 + i);
	r->csum = csum_of(r);
	return bt_write(b, core, r, len);
}

struct got {
	uint64_t seq;
	uint32_t core, len;
	uint64_t block_pos, prev_pos;
	uint32_t block_core;
};

struct collect {
	struct got *v;
	size_t n, cap;
	int bad; /* malformed entries */
	uint64_t blocks;
};

static int collect_cb(const struct bt_block_view *blk, void *ctx)
{
	struct collect *c = ctx;
	uint32_t off = 0, len;
	const void *p;

	c->blocks++;
	while ((p = bt_block_next(blk, &off, &len))) {
		struct rec r;

		if (len < sizeof(r)) {
			c->bad++;
			continue;
		}
		memcpy(&r, p, sizeof(r));
		if (r.len != len || csum_of((const struct rec *)p) != r.csum || r.core != blk->core) {
			c->bad++;
			continue;
		}
		if (c->n == c->cap) {
			c->cap = c->cap ? c->cap * 2 : 1024;
			c->v = realloc(c->v, c->cap * sizeof(*c->v));
		}
		c->v[c->n++] = (struct got){ r.seq, r.core, len, blk->pos, blk->prev_pos, blk->core };
	}
	return 0;
}

static struct collect read_all(struct bt_buffer *b, struct bt_read_stats *st)
{
	struct collect c = { 0 };
	struct bt_read_stats local;

	bt_read(b, collect_cb, &c, st ? st : &local);
	return c;
}

static struct bt_buffer *mk(size_t size, size_t max, uint32_t bs, uint32_t cores, uint32_t A, uint32_t start)
{
	struct bt_config cfg = { .size = size, .max_size = max, .block_size = bs, .ncores = cores,
				 .active = A, .start_round = start, .prefault = 1 };
	char err[256] = "";
	struct bt_buffer *b = bt_buffer_create(&cfg, err, sizeof(err));

	if (!b)
		fprintf(stderr, "create failed: %s\n", err);
	return b;
}

/* Entries of one core in read order must have strictly increasing seq, and
 * (when nothing was lost) consecutive seq. Returns the number of seq gaps. */
static int seq_gaps(const struct collect *c, uint32_t core, uint64_t *first, uint64_t *last, int *disorder)
{
	int gaps = 0, have = 0;
	uint64_t prev = 0;

	*disorder = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (c->v[i].core != core)
			continue;
		if (!have)
			*first = c->v[i].seq;
		else if (c->v[i].seq <= prev)
			(*disorder)++;
		else if (c->v[i].seq != prev + 1)
			gaps++;
		prev = c->v[i].seq;
		have = 1;
	}
	*last = prev;
	return have ? gaps : -1;
}

/* The newest gap-free run of a core: first seq and payload+header bytes. */
static uint64_t latest_run(const struct collect *c, uint32_t core, uint64_t *first)
{
	uint64_t bytes = 0, next = 0;
	int have = 0;

	for (size_t i = c->n; i-- > 0;) {
		if (c->v[i].core != core)
			continue;
		if (have && c->v[i].seq + 1 != next)
			break;
		bytes += c->v[i].len + BT_ENTRY_HDR;
		next = c->v[i].seq;
		have = 1;
	}
	*first = next;
	return bytes;
}

static void test_create_errors(void)
{
	struct bt_config cfg = { .size = 1 << 20, .ncores = 2 };
	char err[256];

	cfg.block_size = 3000;
	err[0] = 0;
	CHECK(!bt_buffer_create(&cfg, err, sizeof(err)) && errno == EINVAL, "block size 3000 accepted");
	CHECK(strstr(err, "power of two"), "message: %s", err);
	cfg.block_size = 128;
	CHECK(!bt_buffer_create(&cfg, err, sizeof(err)), "block size 128 accepted");
	cfg.block_size = 4096;
	cfg.size = 0;
	CHECK(!bt_buffer_create(&cfg, err, sizeof(err)) && strstr(err, "greater than zero"), "size 0: %s", err);
	cfg.size = 1 << 20;
	cfg.max_size = 1 << 19;
	CHECK(!bt_buffer_create(&cfg, err, sizeof(err)) && strstr(err, "maximum"), "min > max: %s", err);
	cfg.max_size = 0;
	cfg.ncores = 0;
	CHECK(!bt_buffer_create(&cfg, err, sizeof(err)) && strstr(err, "cores"), "0 cores: %s", err);
	cfg.ncores = 2;
	cfg.active = 512; /* 512 * 4K = 2M > 1M */
	CHECK(!bt_buffer_create(&cfg, err, sizeof(err)) && strstr(err, "smaller than A"), "A too big: %s", err);
	cfg.active = 0;
	cfg.size = 4096; /* one block for two cores */
	CHECK(!bt_buffer_create(&cfg, err, sizeof(err)) && strstr(err, "fewer than"), "too small: %s", err);
}

static void test_order_single_core(void)
{
	struct bt_buffer *b = mk(1 << 20, 0, 4096, 1, 4, 0);
	struct bt_read_stats st;
	struct bt_stats s;
	int dis;
	uint64_t f, l;

	REQUIRE(b, "create");
	for (uint64_t i = 0; i < 1000; i++)
		REQUIRE(put(b, 0, i, 24 + (uint32_t)(i * 7) % 200) == 0, "write %lu", (unsigned long)i);
	struct collect c = read_all(b, &st);
	CHECK(c.bad == 0, "%d malformed entries", c.bad);
	CHECK(c.n == 1000, "read %zu of 1000", c.n);
	CHECK(seq_gaps(&c, 0, &f, &l, &dis) == 0 && dis == 0 && f == 0 && l == 999, "order: f=%lu l=%lu dis=%d",
	      (unsigned long)f, (unsigned long)l, dis);
	CHECK(st.blocks_lost == 0 && st.blocks_busy == 0, "lost %lu busy %lu", (unsigned long)st.blocks_lost,
	      (unsigned long)st.blocks_busy);
	bt_buffer_stats(b, &s);
	CHECK(s.entries_written == 1000, "entries_written %lu", (unsigned long)s.entries_written);
	uint64_t expect_bytes = 0;
	for (uint64_t i = 0; i < 1000; i++)
		expect_bytes += (BT_ENTRY_HDR + 24 + (uint32_t)(i * 7) % 200 + 7) & ~7u;
	CHECK(s.bytes_written == expect_bytes, "bytes_written %lu, expected %lu", (unsigned long)s.bytes_written,
	      (unsigned long)expect_bytes);
	CHECK(st.entries == 1000, "read stats entries %lu", (unsigned long)st.entries);
	free(c.v);
	bt_buffer_destroy(b);
}

/* Many rounds: the retained entries of each core are a gap-free newest suffix. */
static void test_wraparound(void)
{
	size_t size = 64 * 4096;
	struct bt_buffer *b = mk(size, 0, 4096, 2, 4, 0);
	uint64_t n[2] = { 0, 0 }, f, l;
	int dis;

	REQUIRE(b, "create");
	for (int i = 0; i < 40000; i++) {
		uint32_t core = (i % 5 == 0); /* core 1 four times slower */

		REQUIRE(put(b, core, n[core]++, 24 + (uint32_t)(i * 13) % 100) == 0, "write");
	}
	struct collect c = read_all(b, NULL);
	CHECK(c.bad == 0, "%d malformed", c.bad);
	for (uint32_t core = 0; core < 2; core++) {
		int g = seq_gaps(&c, core, &f, &l, &dis);

		CHECK(g == 0 && dis == 0, "core %u: gaps %d disorder %d", core, g, dis);
		CHECK(l == n[core] - 1, "core %u newest %lu of %lu", core, (unsigned long)l, (unsigned long)n[core] - 1);
	}
	/* Retained bytes close to capacity: at most A blocks (closing) plus a
	 * block per core (partial) are not holding retained data. */
	uint64_t bytes = 0;

	for (size_t i = 0; i < c.n; i++)
		bytes += c.v[i].len + BT_ENTRY_HDR;
	CHECK(bytes > size - 6 * 4096 - size / 20, "retained %lu of %zu", (unsigned long)bytes, size);
	free(c.v);
	bt_buffer_destroy(b);
}

static void test_exact_fit_and_too_large(void)
{
	uint32_t bs = 1024, maxp = BT_MAX_PAYLOAD(bs);
	struct bt_buffer *b = mk(64 * bs, 0, bs, 1, 4, 0);
	struct bt_stats s;

	REQUIRE(b, "create");
	CHECK(put(b, 0, 1, maxp) == 0, "exact fit rejected");
	CHECK(put(b, 0, 2, maxp + 1) == -EMSGSIZE, "one byte over accepted");
	CHECK(put(b, 0, 3, maxp) == 0, "exact fit after reject");
	CHECK(bt_write(b, 7, "x", 1) == -EINVAL, "bad core accepted");
	bt_buffer_stats(b, &s);
	CHECK(s.entries_rejected == 1, "rejected %lu", (unsigned long)s.entries_rejected);
	struct collect c = read_all(b, NULL);
	CHECK(c.n == 2 && c.v[0].seq == 1 && c.v[1].seq == 3, "n=%zu", c.n);
	CHECK(c.n == 2 && c.v[0].block_pos != c.v[1].block_pos, "exact fits share a block");
	free(c.v);
	bt_buffer_destroy(b);
}

static void test_padding(void)
{
	uint32_t bs = 1024;
	struct bt_buffer *b = mk(64 * bs, 0, bs, 1, 4, 0);
	struct bt_stats s;

	REQUIRE(b, "create");
	/* 600-byte payloads: one per block, the tail of each block is padding. */
	for (int i = 0; i < 10; i++)
		REQUIRE(put(b, 0, i, 600) == 0, "write");
	bt_buffer_stats(b, &s);
	uint32_t esz = (600 + BT_ENTRY_HDR + 7) & ~7u, tail = bs - BT_BLOCK_HDR - esz;

	CHECK(s.padding_bytes == 9ull * tail, "padding %lu, expected %lu", (unsigned long)s.padding_bytes,
	      9ul * tail);
	CHECK(s.blocks_used == 10, "blocks used %lu", (unsigned long)s.blocks_used);
	struct collect c = read_all(b, NULL);
	CHECK(c.n == 10 && c.bad == 0, "n=%zu bad=%d (padding returned?)", c.n, c.bad);
	free(c.v);
	bt_buffer_destroy(b);
}

/* bt_room(): the payload the next entry takes without padding the block. */
static void test_room(void)
{
	uint32_t bs = 1024, maxp = BT_MAX_PAYLOAD(bs);
	struct bt_buffer *b = mk(64 * bs, 0, bs, 2, 4, 0);
	struct bt_stats s;

	REQUIRE(b, "create");
	CHECK(bt_room(b, 0) == maxp, "no block yet: room %u, expected %u", bt_room(b, 0), maxp);
	CHECK(bt_room(b, 2) == 0, "core out of range: room %u", bt_room(b, 2));
	REQUIRE(put(b, 0, 1, 100) == 0, "write");
	uint32_t room = bt_room(b, 0), want = maxp - ((100 + BT_ENTRY_HDR + 7) & ~7u);
	CHECK(room == want, "after 100 bytes: room %u, expected %u", room, want);
	CHECK(bt_room(b, 1) == maxp, "another core's room changed: %u", bt_room(b, 1));
	REQUIRE(put(b, 0, 2, room) == 0, "write the room");
	bt_buffer_stats(b, &s);
	CHECK(s.padding_bytes == 0, "the room was not all usable: %lu padding bytes",
	      (unsigned long)s.padding_bytes);
	CHECK(bt_room(b, 0) == maxp, "full block: room %u, expected a new block's %u", bt_room(b, 0), maxp);
	REQUIRE(put(b, 0, 3, 101) == 0, "write");
	room = bt_room(b, 0);
	REQUIRE(put(b, 0, 4, room + 1) == 0, "write one byte over the room");
	bt_buffer_stats(b, &s);
	CHECK(s.padding_bytes == room + BT_ENTRY_HDR, "one byte over the room: %lu padding bytes, expected %u",
	      (unsigned long)s.padding_bytes, room + BT_ENTRY_HDR);
	struct collect c = read_all(b, NULL);
	CHECK(c.n == 4 && c.bad == 0, "n=%zu bad=%d", c.n, c.bad);
	CHECK(c.n == 4 && c.v[0].block_pos == c.v[1].block_pos && c.v[2].block_pos != c.v[3].block_pos,
	      "entries not in the blocks the room promised");
	free(c.v);
	bt_buffer_destroy(b);
}

/* bt_block_next on a corrupt entry size near 2^32: refused, never a step of
 * 0 (the old 32-bit rounding returned the entry, or spun on a PAD, forever). */
static void test_block_next_huge_size(void)
{
	uint8_t blk[256] = { 0 };
	struct bt_block_view v = { .used = sizeof(blk), .data = blk };
	struct bt_entry_hdr *e = (struct bt_entry_hdr *)(blk + BT_BLOCK_HDR);
	uint32_t off = 0, len = 0;

	e->size = 0xfffffff9u;
	e->kind = BT_ENTRY_DATA;
	CHECK(bt_block_next(&v, &off, &len) == NULL, "data entry of size 0x%x returned (len %u)", e->size, len);
	off = 0;
	e->kind = BT_ENTRY_PAD;
	CHECK(bt_block_next(&v, &off, &len) == NULL, "pad entry of size 0x%x not refused", e->size);
	off = UINT32_MAX - 4; /* a caller's offset past the block */
	CHECK(bt_block_next(&v, &off, &len) == NULL, "offset past the block not refused");
}

/* Block closing: a slow core's partial block is closed A positions later. */
static void test_closing_lagging_block(void)
{
	uint32_t bs = 1024;
	struct bt_buffer *b = mk(64 * bs, 0, bs, 2, 4, 0);
	struct bt_stats s;

	REQUIRE(b, "create");
	REQUIRE(put(b, 0, 0, 40) == 0, "core 0 write");
	/* Core 1 fills several blocks: its 4th advance closes core 0's block. */
	for (int i = 0; i < 60; i++)
		REQUIRE(put(b, 1, i, 200) == 0, "core 1 write");
	bt_buffer_stats(b, &s);
	CHECK(s.blocks_closed >= 1, "closed %lu", (unsigned long)s.blocks_closed);
	/* Core 0's next entry must go to a new block chained to the old one. */
	REQUIRE(put(b, 0, 1, 40) == 0, "core 0 write 2");
	struct collect c = read_all(b, NULL);
	struct got *e0 = NULL, *e1 = NULL;

	for (size_t i = 0; i < c.n; i++)
		if (c.v[i].core == 0)
			*(c.v[i].seq ? &e1 : &e0) = &c.v[i];
	REQUIRE(e0 && e1, "core 0 entries missing (%p %p)", (void *)e0, (void *)e1);
	CHECK(e1->block_pos > e0->block_pos, "same block after closing");
	CHECK(e1->prev_pos == e0->block_pos, "chain: prev %lu != %lu", (unsigned long)e1->prev_pos,
	      (unsigned long)e0->block_pos);
	CHECK(e0->prev_pos == BT_NO_POS, "first block prev %lx", (unsigned long)e0->prev_pos);
	free(c.v);
	bt_buffer_destroy(b);
}

/* An active block is readable up to its confirmed prefix, without closing. */
static void test_read_active_block(void)
{
	struct bt_buffer *b = mk(16 * 4096, 0, 4096, 1, 4, 0);
	struct bt_reservation r;
	struct bt_read_stats st;
	struct bt_stats s;

	REQUIRE(b, "create");
	REQUIRE(put(b, 0, 0, 40) == 0, "write");
	REQUIRE(put(b, 0, 1, 40) == 0, "write");
	struct collect c = read_all(b, &st);
	CHECK(c.n == 2, "partial block read %zu", c.n);
	free(c.v);
	/* An unconfirmed reservation makes the block unreadable, never torn. */
	REQUIRE(bt_reserve(b, 0, 40, &r) == 0, "reserve");
	c = read_all(b, &st);
	CHECK(c.n == 0 && st.blocks_busy == 1, "in-flight block: n=%zu busy=%lu", c.n,
	      (unsigned long)st.blocks_busy);
	free(c.v);
	memset(r.data, 0, 40);
	struct rec *rr = r.data;
	rr->core = 0;
	rr->len = 40;
	rr->seq = 2;
	rr->csum = csum_of(rr);
	bt_commit(b, &r);
	c = read_all(b, &st);
	CHECK(c.n == 3 && c.v[2].seq == 2, "after commit n=%zu", c.n);
	free(c.v);
	bt_buffer_stats(b, &s);
	CHECK(s.blocks_used == 1, "reads closed the block: %lu blocks", (unsigned long)s.blocks_used);
	bt_buffer_destroy(b);
}

static void test_round_wrap(void)
{
	/* Rounds start 5 before 2^32: the 32-bit round in the metadata wraps. */
	struct bt_buffer *b = mk(8 * 1024, 0, 1024, 1, 4, 0xFFFFFFFBu);
	uint64_t f, l;
	int dis;

	REQUIRE(b, "create");
	for (uint64_t i = 0; i < 3000; i++)
		REQUIRE(put(b, 0, i, 64) == 0, "write %lu", (unsigned long)i);
	struct collect c = read_all(b, NULL);
	int g = seq_gaps(&c, 0, &f, &l, &dis);

	CHECK(g == 0 && dis == 0 && l == 2999, "gaps %d dis %d last %lu", g, dis, (unsigned long)l);
	CHECK(c.n > 50, "retained %zu", c.n);
	CHECK(c.n >= 2 && c.v[c.n - 1].block_pos / 4 > 0x100000000ull, "round did not pass 2^32");
	free(c.v);
	bt_buffer_destroy(b);
}

static void test_resize(void)
{
	uint32_t bs = 4096, A = 4;
	size_t slot = (size_t)A * bs;
	struct bt_buffer *b = mk(8 * slot, 16 * slot, bs, 2, A, 0);
	uint64_t n = 0, f, l, f2, l2;
	struct bt_stats s;
	char err[256];
	int dis;

	REQUIRE(b, "create");
	for (int i = 0; i < 20000; i++)
		REQUIRE(put(b, 0, n++, 48 + i % 64) == 0, "write");
	struct collect before = read_all(b, NULL);
	seq_gaps(&before, 0, &f, &l, &dis);

	/* Shrink to 3 slots: the newest data is kept gap-free, memory returned.
	 * (The slot holding the newest round also holds older blocks of its
	 * other metas: a separate, older fragment, reported as such.) */
	REQUIRE(bt_resize(b, 3 * slot, 1000, err, sizeof(err)) == 0, "shrink: %s", err);
	bt_buffer_stats(b, &s);
	CHECK(s.size == 3 * slot && s.resident == 3 * slot, "size %zu resident %zu", s.size, s.resident);
	struct collect after = read_all(b, NULL);
	seq_gaps(&after, 0, &f2, &l2, &dis);
	uint64_t run = latest_run(&after, 0, &f2);
	CHECK(dis == 0 && l2 == l, "after shrink: disorder %d newest %lu (was %lu)", dis, (unsigned long)l2,
	      (unsigned long)l);
	CHECK(run >= 2 * slot, "kept window %lu bytes < 2 slots", (unsigned long)run);
	CHECK(after.n < before.n, "kept %zu of %zu", after.n, before.n);

	/* Keep writing at the small size. */
	for (int i = 0; i < 5000; i++)
		REQUIRE(put(b, 0, n++, 48 + i % 64) == 0, "write");
	free(after.v);
	after = read_all(b, NULL);
	int g = seq_gaps(&after, 0, &f2, &l2, &dis);
	run = latest_run(&after, 0, &f2);
	CHECK(g == 0 && dis == 0 && l2 == n - 1 && run >= 2 * slot, "small: gaps %d dis %d run %lu", g, dis,
	      (unsigned long)run);

	/* Grow to 12 slots: nothing retained is lost, then the window extends. */
	uint64_t f_small = f2;
	REQUIRE(bt_resize(b, 12 * slot, 1000, err, sizeof(err)) == 0, "grow: %s", err);
	free(after.v);
	after = read_all(b, NULL);
	latest_run(&after, 0, &f2);
	CHECK(f2 == f_small, "grow lost history: first %lu (was %lu)", (unsigned long)f2, (unsigned long)f_small);
	/* Writing less than the added capacity (9 slots, 144 KiB; these
	 * entries take ~90 bytes) overwrites nothing old. */
	for (int i = 0; i < 1200; i++)
		REQUIRE(put(b, 0, n++, 48 + i % 64) == 0, "write");
	free(after.v);
	after = read_all(b, NULL);
	latest_run(&after, 0, &f2);
	CHECK(f2 == f_small, "after grow, old history overwritten early: first %lu (was %lu)", (unsigned long)f2,
	      (unsigned long)f_small);
	for (int i = 0; i < 30000; i++)
		REQUIRE(put(b, 0, n++, 48 + i % 64) == 0, "write");
	free(after.v);
	after = read_all(b, NULL);
	g = seq_gaps(&after, 0, &f2, &l2, &dis);
	run = latest_run(&after, 0, &f2);
	CHECK(g == 0 && dis == 0 && l2 == n - 1, "grown: gaps %d dis %d", g, dis);
	CHECK(run > 10 * slot, "grown window only %lu bytes", (unsigned long)run);
	bt_buffer_stats(b, &s);
	CHECK(s.resident == 12 * slot && s.resizes == 2, "resident %zu resizes %lu", s.resident,
	      (unsigned long)s.resizes);

	/* Errors: over max, below minimum. Nothing changes. */
	CHECK(bt_resize(b, 17 * slot, 1000, err, sizeof(err)) == -E2BIG && strstr(err, "maximum"), "over max: %s",
	      err);
	CHECK(bt_resize(b, slot - 1, 1000, err, sizeof(err)) == -EINVAL && strstr(err, "minimum"), "below min: %s",
	      err);
	bt_buffer_stats(b, &s);
	CHECK(s.size == 12 * slot, "size changed by a failed resize");
	free(before.v);
	free(after.v);
	bt_buffer_destroy(b);
}

/* Repeated resizes across many sizes keep every core's newest window gap-free. */
static void test_resize_cycles(void)
{
	uint32_t bs = 1024, A = 4;
	size_t slot = (size_t)A * bs;
	struct bt_buffer *b = mk(4 * slot, 10 * slot, bs, 2, A, 0xFFFFFFF0u);
	uint64_t n[2] = { 0, 0 }, f, l;
	char err[256];
	int dis;

	REQUIRE(b, "create");
	for (int cycle = 0; cycle < 60; cycle++) {
		size_t sz = (size_t)(1 + (cycle * 7) % 10) * slot;

		REQUIRE(bt_resize(b, sz, 1000, err, sizeof(err)) == 0, "resize %zu: %s", sz, err);
		for (int i = 0; i < 400; i++) {
			uint32_t core = i % 3 == 0;

			REQUIRE(put(b, core, n[core]++, 24 + (i * 11) % 150) == 0, "write");
		}
		struct collect c = read_all(b, NULL);
		uint64_t total = 0;

		for (uint32_t core = 0; core < 2; core++) {
			seq_gaps(&c, core, &f, &l, &dis);
			total += latest_run(&c, core, &f);
			CHECK(dis == 0 && l == n[core] - 1, "cycle %d core %u: disorder %d last %lu/%lu", cycle, core,
			      dis, (unsigned long)l, (unsigned long)n[core] - 1);
		}
		/* Both cores' newest runs together fill most of all but ~2 slots. */
		if (sz >= 3 * slot)
			CHECK(total >= sz - 2 * slot, "cycle %d: latest runs %lu bytes of %zu", cycle,
			      (unsigned long)total, sz);
		CHECK(c.bad == 0, "malformed %d", c.bad);
		free(c.v);
	}
	bt_buffer_destroy(b);
}

/* A shrink that times out on a stalled writer must leave every slot a
 * producer can still reach mapped: retries (same size, or a grow) finish
 * the shrink first or fail, never unmap under a writer. */
static void test_resize_timeout_retry(void)
{
	const uint32_t bs = 4096, A = 4;
	const size_t slot = (size_t)A * bs;
	char err[256] = "", big[3000] = { 0 }, small[16] = { 0 };
	struct bt_reservation held;

	for (int variant = 0; variant < 2; variant++) {
		struct bt_buffer *b = mk(4 * slot, 4 * slot, bs, 4, A, 0);
		struct bt_stats s;
		int r;

		REQUIRE(b, "create");
		bt_write(b, 1, small, 8);
		REQUIRE(bt_reserve(b, 1, 8, &held) == 0, "reserve"); /* the stalled writer */
		bt_write(b, 2, small, 8);
		bt_write(b, 3, small, 8);
		for (int i = 0; i < 8; i++)
			bt_write(b, 0, big, sizeof(big));
		for (int i = 0; i < 3; i++) {
			bt_write(b, 2, big, sizeof(big));
			bt_write(b, 0, big, sizeof(big));
		}
		r = bt_resize(b, slot, 20, err, sizeof(err));
		CHECK(r == -ETIMEDOUT, "shrink over a held reservation: %d", r);
		r = bt_resize(b, variant ? 2 * slot : slot, 20, err, sizeof(err));
		CHECK(r == -ETIMEDOUT && strstr(err, "still stalled"), "retry while stalled: %d %s", r, err);
		for (int i = 0; i < 4; i++) /* core 2's block may be in a dropped slot */
			CHECK(bt_write(b, 2, small, 8) == 0, "write after retry");
		memset(held.data, 1, 8);
		bt_commit(b, &held); /* still mapped */
		r = bt_resize(b, variant ? 2 * slot : slot, 1000, err, sizeof(err));
		CHECK(r == 0, "retry once the writer is done: %d %s", r, err);
		bt_buffer_stats(b, &s);
		CHECK(s.resident == (variant ? 2 : 1) * slot, "resident %zu", s.resident);
		bt_buffer_destroy(b);
	}
}

static int count_block(const struct bt_block_view *v, void *ctx)
{
	(void)v;
	(*(int *)ctx)++;
	return 0;
}

/* A writer that took a position and was preempted before publishing its
 * block: a follower (BT_READ_COMPLETE, as the cold tier reads) is told to
 * wait at it, until the position's meta is taken at a later round (the
 * writer then finds it stale and never publishes). */
static void test_unpublished_position(void)
{
	struct bt_buffer *b = mk(16 * 4096, 0, 4096, 2, 4, 0);
	struct bt_read_stats st;
	uint64_t seq = 0, p;
	int nb = 0;

	REQUIRE(b, "create");
	for (int i = 0; i < 5; i++) /* 4 entries of 1000 B fill a block */
		REQUIRE(put(b, 0, seq++, 1000) == 0, "write");
	/* The advance's first step, as a writer of core 1 would take it. */
	p = GPOS(atomic_fetch_add_explicit(&b->global, 1, memory_order_acq_rel));
	for (int i = 0; i < 4; i++)
		REQUIRE(put(b, 0, seq++, 1000) == 0, "write");
	REQUIRE(bt_read_range(b, 0, BT_READ_COMPLETE, count_block, &nb, &st) == 0, "read");
	CHECK(st.first_unpublished == p, "first unpublished %llu, the preempted writer's %llu",
	      (unsigned long long)st.first_unpublished, (unsigned long long)p);
	CHECK(nb >= 2, "the complete blocks around it are delivered (%d)", nb);
	/* A more blocks: p's meta is locked again at the next round. */
	for (int i = 0; i < 4 * 5; i++)
		REQUIRE(put(b, 0, seq++, 1000) == 0, "write");
	REQUIRE(bt_read_range(b, 0, BT_READ_COMPLETE, count_block, &nb, &st) == 0, "read");
	CHECK(st.first_unpublished == BT_NO_POS, "given up once its meta moved on: %llu",
	      (unsigned long long)st.first_unpublished);
	/* A plain read does not look for them. */
	REQUIRE(bt_read_range(b, 0, 0, count_block, &nb, &st) == 0, "read");
	CHECK(st.first_unpublished == BT_NO_POS, "plain read: %llu", (unsigned long long)st.first_unpublished);
	bt_buffer_destroy(b);
}

/* A follower's pass (bt_read_follow) against the full scan it replaces:
 * from any position, the same complete blocks below `to`, in order, with
 * the same first_busy and first_unpublished, each copied to where the
 * follower asked (dst); and after a resize moved the layout, the same
 * blocks again (the fallback). */
struct follow_ctx {
	uint8_t *slots; /* the follower's storage: one block each */
	uint32_t bs, n, cap;
	uint64_t to;
	uint64_t pos[256];
	int elsewhere; /* delivered somewhere other than the slot asked for */
	int bad;       /* the bytes at the slot are not the block read */
};

static uint8_t *follow_dst(void *ctx)
{
	struct follow_ctx *f = ctx;

	return f->slots + (size_t)(f->n < f->cap ? f->n : f->cap - 1) * f->bs;
}

static int follow_cb(const struct bt_block_view *v, void *ctx)
{
	struct follow_ctx *f = ctx;
	struct collect c = { 0 };

	if (v->pos >= f->to)
		return 1; /* the fallback delivers past `to`: the caller stops it */
	if (v->data != f->slots + (size_t)f->n * f->bs)
		f->elsewhere++;
	collect_cb(v, &c); /* every entry whole and checksummed */
	f->bad += c.bad || ((const struct bt_block_hdr *)v->data)->pos != v->pos;
	free(c.v);
	if (f->n < f->cap)
		f->pos[f->n++] = v->pos;
	return 0;
}

static int range_cb(const struct bt_block_view *v, void *ctx)
{
	struct follow_ctx *f = ctx;

	if (v->pos >= f->to)
		return 1;
	if (f->n < f->cap)
		f->pos[f->n++] = v->pos;
	return 0;
}

/* Both reads from `from` below `to`: 1 if they agree. */
static int follow_agrees(struct bt_buffer *b, uint64_t from, uint64_t to, int want_direct, uint32_t *nread)
{
	static uint8_t slots[256 * 4096] __attribute__((aligned(64)));
	struct follow_ctx fo = { .slots = slots, .bs = 4096, .cap = 256, .to = to };
	struct follow_ctx ra = { .bs = 4096, .cap = 256, .to = to };
	struct bt_read_stats sf, sr;

	if (bt_read_follow(b, from, to, follow_dst, follow_cb, &fo, &sf) < 0 ||
	    bt_read_range(b, from, BT_READ_COMPLETE, range_cb, &ra, &sr) < 0) {
		CHECK(0, "a read failed");
		return 0;
	}
	*nread = fo.n;
	if (sr.first_busy >= to)
		sr.first_busy = BT_NO_POS; /* the follower looks below `to` only */
	if (sr.first_unpublished >= to)
		sr.first_unpublished = BT_NO_POS;
	CHECK(fo.n == ra.n && !memcmp(fo.pos, ra.pos, fo.n * sizeof(*fo.pos)),
	      "from %llu to %llu: %u blocks followed, %u scanned", (unsigned long long)from, (unsigned long long)to,
	      fo.n, ra.n);
	CHECK(sf.first_busy == sr.first_busy && sf.first_unpublished == sr.first_unpublished,
	      "busy %llu / %llu, unpublished %llu / %llu", (unsigned long long)sf.first_busy,
	      (unsigned long long)sr.first_busy, (unsigned long long)sf.first_unpublished,
	      (unsigned long long)sr.first_unpublished);
	CHECK(!fo.bad, "%d blocks torn or not the one named", fo.bad);
	CHECK(want_direct ? fo.elsewhere == 0 : 1, "%d blocks not copied where asked", fo.elsewhere);
	return fo.n == ra.n && sf.first_busy == sr.first_busy && sf.first_unpublished == sr.first_unpublished &&
	       !fo.bad && (!want_direct || !fo.elsewhere);
}

static void test_read_follow(void)
{
	uint32_t bs = 4096, A = 4, nread;
	size_t slot = (size_t)A * bs;
	struct bt_buffer *b = mk(8 * slot, 16 * slot, bs, 2, A, 0);
	uint64_t seq[2] = { 0, 0 }, p, handed;
	struct bt_stats s;
	char err[256];
	int ok = 1;

	REQUIRE(b, "create");
	/* Both cores, wrapped twice: old positions are gone, the rest in turn. */
	for (int i = 0; i < 20000; i++)
		REQUIRE(put(b, (uint32_t)(i % 2), seq[i % 2]++, 48 + i % 200) == 0, "write");
	handed = GPOS(atomic_load(&b->global));
	for (uint64_t from = 0; from < handed + 2; from += 3)
		for (uint64_t to = from; to <= handed + 4; to += 5)
			ok &= follow_agrees(b, from, to, 1, &nread);
	CHECK(ok, "every (from, to) agreed");
	follow_agrees(b, 0, BT_NO_POS, 1, &nread);
	CHECK(nread >= 8 * A - 2 * 2, "the whole buffer but the active blocks: %u", nread);
	/* A preempted writer's position: waited for, and the blocks after it taken. */
	p = GPOS(atomic_fetch_add_explicit(&b->global, 1, memory_order_acq_rel));
	for (int i = 0; i < 8; i++) /* 2 blocks: p's meta not reached again */
		REQUIRE(put(b, 0, seq[0]++, 1000) == 0, "write");
	follow_agrees(b, p - 8, BT_NO_POS, 1, &nread);
	struct bt_read_stats st;
	struct follow_ctx fo = { .slots = (uint8_t[4096 * 64]){ 0 }, .bs = 4096, .cap = 64, .to = BT_NO_POS };

	REQUIRE(bt_read_follow(b, p - 8, BT_NO_POS, follow_dst, follow_cb, &fo, &st) == 0, "follow");
	CHECK(st.first_unpublished == p, "first unpublished %llu, the preempted writer's %llu",
	      (unsigned long long)st.first_unpublished, (unsigned long long)p);
	/* Grow: positions before the new layout's base take the fallback. */
	REQUIRE(bt_resize(b, 12 * slot, 1000, err, sizeof(err)) == 0, "grow: %s", err);
	for (int i = 0; i < 300; i++) /* ~11 blocks: the old layout's still held */
		REQUIRE(put(b, (uint32_t)(i % 2), seq[i % 2]++, 48 + i % 200) == 0, "write");
	bt_buffer_stats(b, &s);
	handed = GPOS(atomic_load(&b->global));
	ok = 1;
	for (uint64_t from = handed > 60 ? handed - 60 : 0; from < handed; from += 2)
		ok &= follow_agrees(b, from, BT_NO_POS, 0, &nread);
	CHECK(ok, "after a grow, every start agreed");
	follow_agrees(b, handed > 60 ? handed - 60 : 0, BT_NO_POS, 0, &nread);
	CHECK(nread > 11 && s.resizes == 1, "blocks of both layouts read (%u)", nread);
	bt_buffer_destroy(b);
}

int main(void)
{
	RUN(test_create_errors);
	RUN(test_order_single_core);
	RUN(test_wraparound);
	RUN(test_exact_fit_and_too_large);
	RUN(test_padding);
	RUN(test_room);
	RUN(test_block_next_huge_size);
	RUN(test_closing_lagging_block);
	RUN(test_read_active_block);
	RUN(test_unpublished_position);
	RUN(test_read_follow);
	RUN(test_round_wrap);
	RUN(test_resize);
	RUN(test_resize_cycles);
	RUN(test_resize_timeout_retry);
	return h_done();
}
