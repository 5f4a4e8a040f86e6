// SPDX-License-Identifier: MIT
/*
 * btrace_capture.c - take every retained block of a live buffer at one
 * moment (bt_capture), read it later at leisure (bt_capture_read).
 *
 * A dump used to read the buffer block by block, compressing each before
 * copying the next, while writers kept overwriting the oldest blocks: at
 * full speed most of the window was gone before it was read. A capture
 * copies first and lets the slow work run on the copy:
 *
 *   oldest position first       (writers overwrite it next)
 *   for each slot (A consecutive blocks; the current one in two parts):
 *       seq1[m] = header pos        acquire
 *       conf[m], alloc[m]           acquire: what a block's current round confirmed
 *       memcpy(slot)                one bulk copy, no per-block work
 *       acquire fence
 *       seq2[m] = header pos        changed: overwritten during the copy -> lost
 *
 * Copying oldest first races the writers from ahead: they overwrite the
 * oldest round next and the copy has usually passed it by then, so what is
 * lost is what writers reach during the few milliseconds the copy of one
 * slot takes, not during a whole dump. Each slot is validated right after
 * its own copy: a block overwritten after it was copied is still good.
 *
 * An active block (its round still open) is taken up to the bytes its conf
 * word confirmed, and only when nothing is in flight (as bt_read()); one
 * that was busy is retried on its own after the bulk pass.
 */
#include "btrace_buffer_int.h"
#include "clocks.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* One block of the capture. */
struct cap_block {
	uint64_t pos;  /* 0: empty, never used */
	uint32_t d;    /* data block it was copied from */
	uint32_t used; /* bytes valid in the copy */
	uint8_t state; /* enum bt_read_result */
	uint8_t complete;
};

struct cap_order {
	uint64_t pos;
	uint32_t i; /* index into blk[] and the copy */
};

struct bt_capture {
	uint8_t *data;           /* nblocks copies of bsize bytes, in capture order */
	size_t len;
	struct cap_block *blk;   /* [nblocks], same order */
	struct cap_order *order; /* delivered blocks, oldest position first */
	uint32_t nblocks, nvalid, bsize;
	struct bt_stats stats;
	struct bt_read_stats rst;
	uint64_t copy_ns;
};

/* The bulk copy of bytes writers may be changing; each block is validated
 * by its sequence word afterwards, so the race is intended. ThreadSanitizer
 * intercepts memcpy: there, word loads it is told to ignore. */
#ifdef BT_TSAN
__attribute__((no_sanitize("thread"))) static void bulk_copy(uint8_t *dst, const uint8_t *src, size_t len)
{
	const volatile uint64_t *s = (const volatile uint64_t *)src;
	uint64_t *o = (uint64_t *)dst;

	for (size_t i = 0; i < len / 8; i++)
		o[i] = s[i];
}
#else
static void bulk_copy(uint8_t *dst, const uint8_t *src, size_t len)
{
	memcpy(dst, src, len);
}
#endif

/* What of block d (first sequence word p1) the capture may keep, from its
 * meta's conf and alloc read after p1 and before the copy (bt_read_block_'s
 * rules): its used bytes and completeness, or LOST/BUSY. */
static enum bt_read_result classify(const struct bt_buffer *b, uint64_t p1, uint64_t cf, uint64_t a,
				    struct cap_block *cb)
{
	uint32_t r = (uint32_t)(p1 / b->A);

	if (RND(cf) == r && CBYTES(b, cf) < b->bsize) {
		/* Active: only when every reserved byte is confirmed. */
		if (RND(a) != r || POS(a) != CBYTES(b, cf))
			return BT_READ_BUSY;
		cb->used = CBYTES(b, cf);
		cb->complete = 0;
		return BT_READ_OK;
	}
	if (RND(cf) == r || rnd_before(r, RND(cf))) {
		cb->used = b->bsize;
		cb->complete = 1;
		return BT_READ_OK;
	}
	return BT_READ_LOST;
}

/* Copy blocks m0..m1-1 of physical slot `slot` into dst (block m at
 * dst + m * bsize), validating them into cb[m]; g0: the global position
 * when the capture began (the window ends there). */
static void capture_slot(struct bt_buffer *b, uint64_t g0, uint32_t slot, uint32_t m0, uint32_t m1, uint8_t *dst,
			 struct cap_block *cb, uint64_t *p1, uint64_t *cf, uint64_t *al)
{
	uint32_t d0 = slot * b->A;

	for (uint32_t m = m0; m < m1; m++)
		/* Acquire: pairs with the release store of pos in lock_position(). */
		p1[m] = atomic_load_explicit(hdr_pos(b, d0 + m), memory_order_acquire);
	for (uint32_t m = m0; m < m1; m++) {
		/* Acquire: pairs with the release confirmations (bt_commit,
		 * pad_confirm): every confirmed byte is in the copy below. */
		cf[m] = atomic_load_explicit(&b->meta[m].conf, memory_order_acquire);
		al[m] = atomic_load_explicit(&b->meta[m].alloc, memory_order_acquire);
	}
	bulk_copy(dst + ((size_t)m0 << b->bshift), block_at(b, d0 + m0), (size_t)(m1 - m0) << b->bshift);
	/* Acquire fence: if the copy saw any write of a block's new owner, the
	 * reload below sees that owner's invalidation; pairs with the release
	 * fence in lock_position(). */
	atomic_thread_fence(memory_order_acquire);
	for (uint32_t m = m0; m < m1; m++) {
		uint64_t p2 = atomic_load_explicit(hdr_pos(b, d0 + m), memory_order_relaxed);
		struct cap_block *c = &cb[m];

		c->pos = p1[m];
		c->d = d0 + m;
		if (!p1[m]) {
			c->state = BT_READ_OK;
			continue;
		}
		c->state = (uint8_t)classify(b, p1[m], cf[m], al[m], c);
		/* Changed during the copy, or handed out after the capture began
		 * (its position >= g0): the block it replaced, part of the
		 * window, was overwritten before it was copied. */
		if (c->state == BT_READ_OK && (p2 != p1[m] || p1[m] >= g0))
			c->state = BT_READ_LOST;
	}
}

/* Busy blocks (an active block with a write in flight): a moment later,
 * one by one. They are the newest: nothing is about to overwrite them. */
static void retry_busy(struct bt_buffer *b, struct bt_capture *c)
{
	for (uint32_t i = 0; i < c->nblocks; i++) {
		struct cap_block *cb = &c->blk[i];
		enum bt_read_result rr = BT_READ_BUSY;
		struct bt_block_view v;

		if (cb->state != BT_READ_BUSY)
			continue;
		for (int tries = 0; tries < 64 && rr == BT_READ_BUSY; tries++) {
			rr = bt_read_block_(b, cb->d, cb->pos, c->data + (size_t)i * c->bsize, &v);
			if (rr == BT_READ_BUSY)
				sched_yield();
		}
		cb->state = (uint8_t)rr;
		if (rr == BT_READ_OK) {
			cb->used = v.used;
			cb->complete = (uint8_t)v.complete;
		}
	}
}

static int by_pos(const void *x, const void *y)
{
	const struct cap_order *a = x, *b = y;

	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* Count, order and account the blocks of a finished copy. */
static void index_blocks(struct bt_capture *c, struct bt_read_stats *st)
{
	for (uint32_t i = 0; i < c->nblocks; i++) {
		const struct cap_block *cb = &c->blk[i];

		if (!cb->pos)
			st->blocks_empty++;
		else if (cb->state == BT_READ_LOST)
			st->blocks_lost++;
		else if (cb->state == BT_READ_BUSY)
			st->blocks_busy++;
		else
			c->order[c->nvalid++] = (struct cap_order){ cb->pos, i };
	}
	qsort(c->order, c->nvalid, sizeof(*c->order), by_pos);
	for (uint32_t k = 0; k < c->nvalid; k++) {
		const struct cap_block *cb = &c->blk[c->order[k].i];
		struct bt_block_view v = { .used = cb->used, .data = c->data + (size_t)c->order[k].i * c->bsize };
		uint32_t off = 0, len;

		st->blocks_read++;
		while (bt_block_next(&v, &off, &len))
			st->entries++;
	}
}

static struct bt_capture *capture_alloc(uint32_t nblocks, uint32_t bsize)
{
	struct bt_capture *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->nblocks = nblocks;
	c->bsize = bsize;
	c->len = (size_t)nblocks * bsize;
	/* Populated now: the copy must not stop on a page fault per 4 KiB. */
	c->data = mmap(NULL, c->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	c->blk = calloc(nblocks ? nblocks : 1, sizeof(*c->blk));
	c->order = calloc(nblocks ? nblocks : 1, sizeof(*c->order));
	if (c->data == MAP_FAILED || !c->blk || !c->order) {
		if (c->data == MAP_FAILED)
			c->data = NULL;
		bt_capture_free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

struct bt_capture *bt_capture(struct bt_buffer *b, struct bt_read_stats *st)
{
	struct bt_read_stats local;
	struct bt_capture *c = NULL;
	uint64_t *p1 = NULL, *cf = NULL, *al = NULL, t0, g, base, cur;
	uint32_t n, vs0, m0;
	struct bt_layout *l;
	uint16_t *slots = NULL;
	int ri;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	/* The copy's memory before the moment: allocating and populating it
	 * takes longer than the copy itself (64 MiB: ~4x), and writers at full
	 * speed would overwrite the window meanwhile. Sized for the buffer as
	 * it is now (relaxed: a guess); a resize in between is rare: the
	 * memory is then allocated again for the layout the capture reads. */
	for (int tries = 0;; tries++) {
		uint32_t guess = atomic_load_explicit(&b->nslots, memory_order_relaxed);

		slots = malloc(sizeof(*slots) * (guess ? guess : 1));
		p1 = malloc(sizeof(*p1) * b->A * 3);
		c = capture_alloc(guess * b->A, b->bsize);
		if (!slots || !p1 || !c || guess > b->max_slots) {
			free(slots);
			free(p1);
			bt_capture_free(c);
			errno = ENOMEM;
			return NULL;
		}
		ri = bt_reader_enter_(b);
		if (ri < 0) {
			free(slots);
			free(p1);
			bt_capture_free(c);
			errno = -ri;
			return NULL;
		}
		/* Seq_cst: after our epoch announcement (see bt_reader_enter_()). */
		g = atomic_load_explicit(&b->global, memory_order_seq_cst);
		l = &b->layouts[GGEN(g) % NLAYOUTS];
		n = atomic_load_explicit(&l->nslots, memory_order_relaxed);
		base = atomic_load_explicit(&l->base_round, memory_order_relaxed);
		if (n == guess)
			break;
		bt_reader_exit_(b, ri);
		free(slots);
		free(p1);
		bt_capture_free(c);
		if (tries == 3) { /* resized again and again: not now */
			errno = EBUSY;
			return NULL;
		}
	}
	cf = p1 + b->A;
	al = cf + b->A;
	for (uint32_t i = 0; i < n; i++)
		slots[i] = atomic_load_explicit(&l->order[i], memory_order_relaxed);
	/* Oldest position first. Rounds map to virtual slots from base,
	 * cyclically; in the current round's slot, the metas from the next
	 * position on still hold the oldest round, the ones below it the
	 * newest: that slot is copied in two parts, first and last. */
	cur = GPOS(g) / b->A;
	vs0 = n ? (uint32_t)((cur - base) % n) : 0;
	m0 = (uint32_t)(GPOS(g) % b->A);
	t0 = bt_now_ns();
	for (uint32_t k = 0; k <= n && n; k++) {
		uint32_t vs = (vs0 + k) % n, lo = k == 0 ? m0 : 0, hi = k == n ? m0 : b->A;
		size_t at = (size_t)(k % n) * b->A;

		capture_slot(b, GPOS(g), slots[vs], lo, hi, c->data + (at << b->bshift), c->blk + at, p1, cf, al);
	}
	retry_busy(b, c);
	c->copy_ns = bt_now_ns() - t0;
	bt_buffer_stats(b, &c->stats);
	bt_reader_exit_(b, ri);
	index_blocks(c, st);
	c->rst = *st;
	free(slots);
	free(p1);
	return c;
}

int bt_capture_read(const struct bt_capture *c, bt_block_cb cb, void *ctx)
{
	for (uint32_t k = 0; k < c->nvalid; k++) {
		const uint8_t *data = c->data + (size_t)c->order[k].i * c->bsize;
		const struct cap_block *blk = &c->blk[c->order[k].i];
		const struct bt_block_hdr *h = (const struct bt_block_hdr *)data;
		struct bt_block_view v = {
			.pos = blk->pos, .prev_pos = h->prev_pos, .core = h->core,
			.used = blk->used, .complete = blk->complete, .data = data,
		};
		int ret = cb(&v, ctx);

		if (ret)
			return ret;
	}
	return 0;
}

uint64_t bt_capture_oldest_pos(const struct bt_capture *c)
{
	return c->nvalid ? c->blk[c->order[0].i].pos : BT_NO_POS;
}

void bt_capture_first_prev(const struct bt_capture *c, uint64_t *prev, uint32_t ncores)
{
	for (uint32_t i = 0; i < ncores; i++)
		prev[i] = BT_NO_POS;
	for (uint32_t k = ncores ? c->nvalid : 0; k > 0; k--) { /* newest first: the oldest of a core wins */
		const struct bt_block_hdr *h = (const struct bt_block_hdr *)(c->data + (size_t)c->order[k - 1].i * c->bsize);

		if (h->core < ncores)
			prev[h->core] = h->prev_pos;
	}
}

const struct bt_stats *bt_capture_stats(const struct bt_capture *c)
{
	return &c->stats;
}

const struct bt_read_stats *bt_capture_read_stats(const struct bt_capture *c)
{
	return &c->rst;
}

uint64_t bt_capture_copy_ns(const struct bt_capture *c)
{
	return c->copy_ns;
}

void bt_capture_free(struct bt_capture *c)
{
	if (!c)
		return;
	if (c->data)
		munmap(c->data, c->len);
	free(c->blk);
	free(c->order);
	free(c);
}

/* ---- salvage: a dead writer's buffer ------------------------------------ */

/* How much of block d (its header's position p) a salvage keeps: as
 * classify() judges a live block, from the metadata word of its round,
 * except that nothing will ever confirm a write in flight now: an open
 * block keeps the bytes confirmed (its entries are checked when read). */
static int salvage_block(const struct bt_meta *meta, uint32_t bsize, uint32_t A, uint64_t p, struct cap_block *cb,
			 struct bt_salvage_stats *ss)
{
	struct bt_meta *mt = (struct bt_meta *)&meta[p % A]; /* loads want it non-const */
	uint32_t r = (uint32_t)(p / A), cbits = (uint32_t)__builtin_ctz(bsize) + 1;
	/* Relaxed: the writer is gone; these words are data to check. */
	uint64_t cf = atomic_load_explicit(&mt->conf, memory_order_relaxed);
	uint64_t a = atomic_load_explicit(&mt->alloc, memory_order_relaxed);
	uint32_t cbytes = (uint32_t)cf & ((1u << cbits) - 1);

	if (RND(cf) == r && cbytes < bsize) {
		if (cbytes < BT_BLOCK_HDR || (cbytes & 7))
			return -1;
		if (RND(a) != r || POS(a) != cbytes)
			ss->blocks_torn++;
		cb->used = cbytes;
		cb->complete = 0;
		return 0;
	}
	if ((RND(cf) == r && cbytes == bsize) || rnd_before(r, RND(cf))) {
		cb->used = bsize;
		cb->complete = 1;
		return 0;
	}
	return -1; /* a round its metadata never reached */
}

struct bt_capture *bt_capture_salvage(const void *meta, const void *data, uint32_t bsize, uint32_t A,
				      uint32_t ncores, uint32_t nblocks, const uint8_t *present,
				      struct bt_salvage_stats *ss)
{
	struct bt_salvage_stats local;
	struct bt_capture *c;
	uint32_t nslots, ncopy = 0;

	if (!ss)
		ss = &local;
	memset(ss, 0, sizeof(*ss));
	if (bsize < BT_MIN_BLOCK_SIZE || bsize > BT_MAX_BLOCK_SIZE || (bsize & (bsize - 1)) || !A ||
	    A > 0xffff || !ncores || ncores > BT_MAX_CORES || nblocks % A) {
		errno = EINVAL;
		return NULL;
	}
	nslots = nblocks / A;
	for (uint32_t s = 0; s < nslots; s++)
		ncopy += !present || present[s];
	c = capture_alloc(ncopy * A, bsize);
	if (!c)
		return NULL;
	uint64_t t0 = bt_now_ns();
	uint32_t j = 0;
	for (uint32_t d = 0; d < nblocks; d++) {
		if (present && !present[d / A]) {
			d += A - 1; /* a slot with no memory: never used */
			continue;
		}
		const uint8_t *src = (const uint8_t *)data + ((size_t)d * bsize);
		uint8_t *dst = c->data + ((size_t)j * bsize);
		struct cap_block *cb = &c->blk[j++];
		struct bt_block_hdr h;

		memcpy(&h, src, sizeof(h));
		cb->d = d;
		if (!h.pos)
			continue; /* never used (or released) */
		ss->blocks_used++;
		cb->pos = h.pos;
		cb->state = BT_READ_LOST;
		if (h.core >= ncores || salvage_block(meta, bsize, A, h.pos, cb, ss)) {
			ss->blocks_bad++;
			continue;
		}
		memcpy(dst, src, cb->used);
		cb->state = BT_READ_OK;
	}
	c->copy_ns = bt_now_ns() - t0;
	index_blocks(c, &c->rst);
	/* Slots with no memory are past the buffer's size (reserved for a
	 * resize), not blocks of it: not counted as never used. */
	/* Two blocks with one position: only one can be true; keep the first. */
	uint32_t k = 0;
	for (uint32_t i = 0; i < c->nvalid; i++) {
		if (k && c->order[k - 1].pos == c->order[i].pos) {
			ss->blocks_dup++;
			c->rst.blocks_read--;
			continue;
		}
		c->order[k++] = c->order[i];
	}
	c->nvalid = k;
	ss->blocks_kept = k;
	c->rst.blocks_lost = ss->blocks_bad + ss->blocks_dup;
	c->stats.block_size = bsize;
	c->stats.nblocks = ncopy * A; /* the slots with memory: the buffer's size then */
	c->stats.active = A;
	c->stats.ncores = ncores;
	c->stats.size = (size_t)ncopy * A * bsize;
	c->stats.max_size = (size_t)nblocks * bsize;
	return c;
}

void bt_capture_set_stats(struct bt_capture *c, const struct bt_stats *st)
{
	c->stats = *st;
}

uint64_t bt_capture_filter(struct bt_capture *c, bt_entry_keep_cb keep, void *ctx)
{
	uint64_t dropped = 0;

	for (uint32_t k = 0; k < c->nvalid; k++) {
		uint8_t *data = c->data + (size_t)c->order[k].i * c->bsize;
		const struct cap_block *blk = &c->blk[c->order[k].i];
		const struct bt_block_hdr *h = (const struct bt_block_hdr *)data;
		struct bt_block_view v = {
			.pos = blk->pos, .prev_pos = h->prev_pos, .core = h->core,
			.used = blk->used, .complete = blk->complete, .data = data,
		};
		uint32_t off = 0, len;
		const uint8_t *ent;

		while ((ent = bt_block_next(&v, &off, &len)))
			if (!keep(&v, ent, len, ctx)) {
				/* The copy is ours: the entry becomes padding. */
				((struct bt_entry_hdr *)(data + (ent - data) - BT_ENTRY_HDR))->kind = BT_ENTRY_PAD;
				dropped++;
			}
	}
	c->rst.entries -= dropped < c->rst.entries ? dropped : c->rst.entries;
	return dropped;
}
