// SPDX-License-Identifier: MIT
/*
 * btrace_buffer.c - the block-partitioned flight-recorder buffer.
 *
 * Design (BTrace, ASPLOS'25, sections 3 and 4)
 * ============================================
 *
 *   global word  [gen:8 | pos:56]   FAA hands out block positions 0,1,2,...
 *
 *   position p -> meta m = p % A, round r = p / A
 *              -> data block d = slot(r) * A + m   (slot from the layout)
 *
 *   metadata (A blocks, never reclaimed)          data (R slots of A blocks)
 *   +-------------------------------+             slot 0: D0  D1 ... D(A-1)
 *   | M0  alloc [rnd:32|pos:32]     | --------->  slot 1: DA  ...
 *   |     conf  [rnd:32|pos:32]     |   ratio     ...
 *   |     didx  (data block of rnd) |   R = N/A   slot R-1
 *   | M1 ...                        |
 *   +-------------------------------+
 *   per-core word (ratio_and_pos) [rnd:32 | slot:16 | meta:16] = current block
 *
 * Fast path (4.1): FAA on alloc reserves bytes in the core's block, the caller
 * copies, then FAA on conf confirms: conf is a *counter*, so writers confirm
 * out of order and nobody waits for a preempted writer. A block is complete
 * when conf's byte count reaches the block size. conf's low word is
 * [entries | bytes] (bytes in the low bshift+1 bits), so the confirming FAA
 * also counts the entry: no other atomic per write. A round's count is
 * folded into the totals when its meta is locked for the next round.
 *
 * Slow path (4.2): an entry that does not fit pads the block's tail with a
 * dummy entry and advances: FAA the global position, close the lagging block
 * A positions behind (the meta's current round, 3.2 block closing), and lock
 * the meta for the new round by CAS on conf, but only if its previous round
 * is complete. A block still held by a lagging writer is skipped (3.4): the
 * position is abandoned and the next one tried; the block is reused in a
 * later round. The winner publishes the block in the per-core word by CAS.
 *
 * Implicit reclaiming (3.3): a round's data block can be overwritten or
 * unmapped only when its conf reached the block size (every reservation was
 * confirmed), so producers need no epoch or reference count of their own.
 *
 * Resize (4.4): the data area is one reservation of max_size bytes; a slot is
 * A consecutive blocks (A*B bytes) that is either mapped or PROT_NONE. The
 * layout maps rounds to physical slots (cyclic, oldest overwritten first); a
 * resize publishes a new layout under a new generation in the global word.
 * Shrinking drops the slots with the oldest data, then proves no producer can
 * touch them (every meta's round is forwarded past the old generation once
 * its block completed) and no reader can (epochs), then unmaps them.
 *
 * Readers (4.3) copy a block speculatively and re-check its header: the
 * header's pos is a sequence word (zeroed before a new owner rewrites the
 * block), so a block overwritten during the copy is dropped and counted,
 * never returned torn.
 */
#include "btrace_buffer_int.h"
#include "errors.h"
#include "clocks.h"
#include "prefault.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>


/* ---- writers: padding and closing -------------------------------------- */

/* Fill [off, off+len) of block d with one dummy entry and confirm it. The
 * caller owns that range through its reservation on the meta's alloc. */
static void pad_confirm(struct bt_buffer *b, struct bt_meta *mt, uint32_t d, uint32_t off, uint32_t len)
{
	struct bt_entry_hdr *e = (struct bt_entry_hdr *)(block_at(b, d) + off);

	e->size = len;
	e->kind = BT_ENTRY_PAD;
	atomic_fetch_add_explicit(&b->padding, len, memory_order_relaxed);
	/* Release: the dummy before the count; pairs with the acquire loads of
	 * conf in bt_read_block_() and lock_position(). */
	atomic_fetch_add_explicit(&mt->conf, len, memory_order_release);
}

/* Close the meta's current round if it is older than `r` and still open:
 * take the rest of the block with one CAS and pad it (block closing, 3.2).
 * Returns true if this call closed it. */
static bool close_round_before(struct bt_buffer *b, struct bt_meta *mt, uint32_t r)
{
	/* Acquire: pairs with the release CAS in lock_position() that reset
	 * alloc for this round, so didx below is this round's block. */
	uint64_t a = atomic_load_explicit(&mt->alloc, memory_order_acquire);

	for (;;) {
		if (!rnd_before(RND(a), r) || POS(a) >= b->bsize)
			return false;
		if (atomic_compare_exchange_weak_explicit(&mt->alloc, &a, RP(RND(a), b->bsize),
							  memory_order_acquire, memory_order_acquire)) {
			/* didx cannot change: the round stays open until we confirm. */
			uint32_t d = atomic_load_explicit(&mt->didx, memory_order_relaxed);

			pad_confirm(b, mt, d, POS(a), b->bsize - POS(a));
			return true;
		}
	}
}

/* A reservation that landed in a newer round of the meta than the writer
 * expected (the block was closed and relocked while the writer was
 * preempted between its check and its FAA). The bytes are ours in that
 * round's block: turn them into padding so the round can complete. */
static void neutralize_stale(struct bt_buffer *b, struct bt_meta *mt, uint64_t old, uint32_t size)
{
	uint32_t off = POS(old), end = off + size;

	if (off >= b->bsize)
		return;
	if (end > b->bsize)
		end = b->bsize;
	/* The FAA was acquire: we see the didx stored before the reset. */
	pad_confirm(b, mt, atomic_load_explicit(&mt->didx, memory_order_relaxed), off, end - off);
}

/* ---- writers: block advancement (slow path, 4.2) ----------------------- */

/* Physical slot of a 64-bit round in generation `gen`, or -1 if that layout
 * is gone (the position is then stale and skipped). */
static int layout_slot(struct bt_buffer *b, uint32_t gen, uint64_t round)
{
	struct bt_layout *l = &b->layouts[gen % NLAYOUTS];
	uint64_t base = atomic_load_explicit(&l->base_round, memory_order_relaxed);
	uint32_t n = atomic_load_explicit(&l->nslots, memory_order_relaxed);
	uint32_t slot;

	if (n == 0 || n > b->max_slots)
		return -1;
	slot = atomic_load_explicit(&l->order[(round - base) % n], memory_order_relaxed);
	/* Acquire fence: if the loads above saw a later resize's rewrite of
	 * this layout, the gen check below sees that resize's publication;
	 * pairs with the release fence in publish_layout(). */
	atomic_thread_fence(memory_order_acquire);
	if (GGEN(atomic_load_explicit(&b->global, memory_order_relaxed)) != (gen & 0xff))
		return -1;
	return slot < b->max_slots ? (int)slot : -1;
}

enum lock_result { LOCKED, SKIPPED, STALE };

/* Bracket a conf-word replacement and its fold for bt_buffer_stats(). */
static inline void fold_begin(struct bt_buffer *b)
{
	/* Seq_cst: ordered before the conf CAS that follows; pairs with the
	 * seq_cst loads in bt_buffer_stats(). */
	atomic_fetch_add_explicit(&b->folds_begun, 1, memory_order_seq_cst);
}

static inline void fold_end(struct bt_buffer *b)
{
	/* Seq_cst: after the fold; pairs with the loads in bt_buffer_stats(). */
	atomic_fetch_add_explicit(&b->folds_done, 1, memory_order_seq_cst);
}

/* Account a finished round whose conf word we just replaced (once). */
static void fold_round(struct bt_buffer *b, uint64_t cf)
{
	atomic_fetch_add_explicit(&b->folded_entries, CCOUNT(b, cf), memory_order_relaxed);
	atomic_fetch_add_explicit(&b->folded_bytes, CBYTES(b, cf), memory_order_relaxed);
}

/* Try to take position p for `core`. On LOCKED the block is initialized and
 * its header confirmed, and *cw_new describes it. */
static enum lock_result lock_position(struct bt_buffer *b, uint32_t core, uint64_t g, uint64_t prev_pos,
				      uint64_t *cw_new)
{
	uint64_t p = GPOS(g), round = p / b->A;
	uint32_t m = (uint32_t)(p % b->A), r = (uint32_t)round;
	struct bt_meta *mt = &b->meta[m];
	struct bt_block_hdr *h;
	uint64_t cf, a;
	uint32_t d;
	int slot;

	/* Block closing: the lagging block A positions behind stops taking
	 * entries, whoever holds it. */
	if (close_round_before(b, mt, r))
		atomic_fetch_add_explicit(&b->closed, 1, memory_order_relaxed);

	/* Acquire: pairs with the release confirmations, so a complete round's
	 * data is settled before we reuse its metadata. */
	cf = atomic_load_explicit(&mt->conf, memory_order_acquire);
	if (!rnd_before(RND(cf), r))
		return STALE; /* a wrap-around producer or a resize got further */
	if (CBYTES(b, cf) != b->bsize)
		return SKIPPED; /* a lagging writer still holds the block: skip it */
	slot = layout_slot(b, GGEN(g), round);
	if (slot < 0)
		return STALE;
	/* Lock: nobody can reuse or reclaim the meta's block while conf.pos is
	 * below the block size. */
	fold_begin(b);
	if (!atomic_compare_exchange_strong_explicit(&mt->conf, &cf, RP(r, 0), memory_order_acq_rel,
						     memory_order_relaxed)) {
		fold_end(b);
		return STALE;
	}
	fold_round(b, cf);
	fold_end(b);

	d = (uint32_t)slot * b->A + m;
	atomic_store_explicit(&mt->didx, d, memory_order_relaxed);

	/* Rewrite the header seqlock-style: invalidate, fence, fields, publish. */
	h = hdr_at(b, d);
	atomic_store_explicit(hdr_pos(b, d), 0, memory_order_relaxed);
	/* Release fence: the invalidation is visible before the new fields;
	 * pairs with the acquire fence in bt_read_block_(). */
	atomic_thread_fence(memory_order_release);
	h->prev_pos = prev_pos;
	h->core = core;
	h->flags = 0;
	/* Release: header fields before pos; pairs with the acquire load of
	 * pos in bt_read_block_(). */
	atomic_store_explicit(hdr_pos(b, d), p, memory_order_release);

	/* Reset alloc to the header's end. Stale FAAs may still bump the old
	 * round's word, so retry; the round lock keeps everyone else out. */
	a = atomic_load_explicit(&mt->alloc, memory_order_relaxed);
	/* Release: didx and header before the new round is visible to
	 * writers; pairs with the acquire FAA in bt_reserve() and the acquire
	 * load in close_round_before(). */
	while (!atomic_compare_exchange_weak_explicit(&mt->alloc, &a, RP(r, BT_BLOCK_HDR), memory_order_release,
						      memory_order_relaxed))
		;
	/* Release: confirm the header; pairs with acquire loads of conf. */
	atomic_fetch_add_explicit(&mt->conf, BT_BLOCK_HDR, memory_order_release);
	*cw_new = CW(r, slot, m);
	return LOCKED;
}

/* 64-bit position of the block a core word names, given a recent position
 * (rounds in the word are 32-bit; the true round is within 2^31 of now). */
static uint64_t cw_position(const struct bt_buffer *b, uint64_t cw, uint64_t now_pos)
{
	uint64_t now_round = now_pos / b->A;
	uint64_t round = now_round - (uint32_t)((uint32_t)now_round - RND(cw));

	return round * b->A + CW_META(cw);
}

/* Move `core` off the block named by cw_old. Returns 0 when the core has a
 * new block (ours or another thread's), -EAGAIN after 2*A failed positions. */
static int advance(struct bt_buffer *b, uint32_t core, uint64_t cw_old)
{
	struct bt_core *c = &b->cores[core];
	uint32_t tries;

	for (tries = 0; tries < 2 * b->A; tries++) {
		uint64_t cw_new, prev, g;

		/* Another thread of this core already advanced: use its block. */
		if (atomic_load_explicit(&c->cur, memory_order_relaxed) != cw_old)
			return 0;
		/* Acquire: pairs with the release CAS in publish_layout(), so
		 * the layout of this position's generation is visible. */
		g = atomic_fetch_add_explicit(&b->global, 1, memory_order_acquire);
		prev = cw_old == CORE_NONE ? BT_NO_POS : cw_position(b, cw_old, GPOS(g));
		switch (lock_position(b, core, g, prev, &cw_new)) {
		case SKIPPED:
			atomic_fetch_add_explicit(&b->skipped, 1, memory_order_relaxed);
			continue;
		case STALE:
			atomic_fetch_add_explicit(&b->stale, 1, memory_order_relaxed);
			continue;
		case LOCKED:
			break;
		}
		atomic_fetch_add_explicit(&b->blocks_used, 1, memory_order_relaxed);
		/* Release: the block's header and metadata before other writers
		 * of this core use it; pairs with the acquire load in bt_reserve(). */
		if (atomic_compare_exchange_strong_explicit(&c->cur, &cw_old, cw_new, memory_order_release,
							    memory_order_relaxed))
			return 0;
		/* Lost the race for the core: close our fresh block empty. */
		atomic_fetch_add_explicit(&b->core_races, 1, memory_order_relaxed);
		close_round_before(b, &b->meta[CW_META(cw_new)], RND(cw_new) + 1);
		return 0;
	}
	return -EAGAIN;
}

/* ---- writers: public API ------------------------------------------------- */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* The block is full and another writer of this core (the one whose
 * reservation started at or straddled the end) is advancing. Spin a bounded
 * moment before advancing ourselves: without this, every writer of the core
 * races to lock a block and all but one close theirs empty. Bounded and
 * without yielding, so a preempted advancer never holds us up for long. */
static void wait_for_advance(struct bt_core *c, uint64_t cw)
{
	for (int i = 0; i < 256; i++) {
		if (atomic_load_explicit(&c->cur, memory_order_relaxed) != cw)
			return;
		cpu_relax();
	}
}

int bt_reserve(struct bt_buffer *b, uint32_t core, uint32_t len, struct bt_reservation *res)
{
	uint32_t size = (BT_ENTRY_HDR + len + 7) & ~7u; /* bytes taken: 8-aligned */
	struct bt_core *c;

	if (core >= b->ncores)
		return -EINVAL;
	if (len > BT_MAX_PAYLOAD(b->bsize)) {
		atomic_fetch_add_explicit(&b->rejected, 1, memory_order_relaxed);
		return -EMSGSIZE;
	}
	c = &b->cores[core];
	for (;;) {
		/* Acquire: pairs with the release CAS in advance(); the block's
		 * header and reset metadata are visible. */
		uint64_t cw = atomic_load_explicit(&c->cur, memory_order_acquire);

		if (cw != CORE_NONE) {
			uint32_t r = RND(cw), m = CW_META(cw);
			struct bt_meta *mt = &b->meta[m];
			uint64_t a = atomic_load_explicit(&mt->alloc, memory_order_relaxed);

			/* FAA even when it will not fit, and when the block is
			 * exactly full: the writer whose reservation starts at or
			 * straddles the end pads the tail and is the one that
			 * advances; the others wait for it a moment. */
			if (RND(a) == r && POS(a) <= b->bsize) {
				/* Acquire: if this lands in a newer round, pairs with
				 * the release reset in lock_position() (see
				 * neutralize_stale()). */
				uint64_t old = atomic_fetch_add_explicit(&mt->alloc, size, memory_order_acquire);
				uint32_t off = POS(old);
				uint32_t d = CW_SLOT(cw) * b->A + m;

				if (RND(old) != r) {
					neutralize_stale(b, mt, old, size);
					continue;
				}
				if (off + size <= b->bsize) {
					struct bt_entry_hdr *e = (struct bt_entry_hdr *)(block_at(b, d) + off);

					/* Buffers are far larger than caches: fetch the line
					 * a few entries ahead for writing now, so the next
					 * locked add does not wait for it to arrive. */
					if (off + size + PREFETCH_AHEAD < b->bsize)
						__builtin_prefetch((uint8_t *)e + size + PREFETCH_AHEAD, 1, 3);

					e->size = BT_ENTRY_HDR + len; /* exact length */
					e->kind = BT_ENTRY_DATA;
					res->data = e + 1;
					res->meta_ = mt;
					res->size_ = size;
					res->core_ = core;
					return 0;
				}
				/* Does not fit: pad the tail we own, then advance. */
				if (off < b->bsize)
					pad_confirm(b, mt, d, off, b->bsize - off);
				else if (off > b->bsize)
					wait_for_advance(c, cw);
			} else if (RND(a) == r) {
				wait_for_advance(c, cw); /* past the end: someone advances */
			}
		}
		if (advance(b, core, cw) < 0) {
			atomic_fetch_add_explicit(&b->dropped, 1, memory_order_relaxed);
			return -EAGAIN;
		}
	}
}

void bt_commit(struct bt_buffer *b, struct bt_reservation *res)
{
	struct bt_meta *mt = res->meta_;

	/* Release: payload before the confirmation (bytes, and one entry);
	 * pairs with the acquire load of conf in bt_read_block_() and
	 * lock_position(). */
	atomic_fetch_add_explicit(&mt->conf, (1u << b->cbits) + res->size_, memory_order_release);
}

uint32_t bt_room(const struct bt_buffer *cb, uint32_t core)
{
	struct bt_buffer *b = (struct bt_buffer *)cb; /* atomics loads need non-const */
	uint32_t whole = BT_MAX_PAYLOAD(b->bsize), left;
	uint64_t cw, a;

	if (core >= b->ncores)
		return 0;
	/* Acquire: pairs with the release CAS in advance(), as in bt_reserve(). */
	cw = atomic_load_explicit(&b->cores[core].cur, memory_order_acquire);
	if (cw == CORE_NONE)
		return whole;
	/* Relaxed: a hint; bt_reserve()'s add decides where the entry goes. */
	a = atomic_load_explicit(&b->meta[CW_META(cw)].alloc, memory_order_relaxed);
	if (RND(a) != RND(cw) || POS(a) >= b->bsize)
		return whole;
	left = (b->bsize - POS(a)) & ~7u; /* entries take 8-aligned sizes */
	return left > BT_ENTRY_HDR ? left - BT_ENTRY_HDR : whole;
}

int bt_write(struct bt_buffer *b, uint32_t core, const void *data, uint32_t len)
{
	struct bt_reservation r;
	int err = bt_reserve(b, core, len, &r);

	if (err)
		return err;
	memcpy(r.data, data, len);
	bt_commit(b, &r);
	return 0;
}

/* ---- readers (speculative consumer, 4.3) --------------------------------- */

int bt_reader_enter_(struct bt_buffer *b)
{
	for (int i = 0; i < BT_MAX_READERS; i++) {
		uint32_t z = 0;

		if (atomic_compare_exchange_strong_explicit(&b->readers[i].claimed, &z, 1, memory_order_acquire,
							    memory_order_relaxed)) {
			uint64_t e = atomic_load_explicit(&b->epoch, memory_order_seq_cst);

			/* Seq_cst: the announcement is ordered before our layout
			 * load; pairs with the seq_cst epoch bump and scan in
			 * wait_readers(). */
			atomic_store_explicit(&b->readers[i].epoch, e, memory_order_seq_cst);
			return i;
		}
	}
	return -EBUSY;
}

void bt_reader_exit_(struct bt_buffer *b, int i)
{
	/* Release: our reads of the blocks are done; pairs with the acquire
	 * load in wait_readers() before memory is unmapped. */
	atomic_store_explicit(&b->readers[i].epoch, 0, memory_order_release);
	atomic_store_explicit(&b->readers[i].claimed, 0, memory_order_release);
}

/* Copy a block that writers may be changing; the result is validated by the
 * caller through the header's sequence word, so the race is intended. */
#ifdef BT_TSAN
__attribute__((no_sanitize("thread")))
#endif
static void speculative_copy(uint8_t *dst, const uint8_t *src, uint32_t len)
{
	const volatile uint64_t *s = (const volatile uint64_t *)src;
	uint64_t *o = (uint64_t *)dst;

	for (uint32_t i = 0; i < len / 8; i++)
		o[i] = s[i];
}

enum bt_read_result bt_read_block_(struct bt_buffer *b, uint32_t d, uint64_t expect, uint8_t *scratch,
				   struct bt_block_view *v)
{
	/* Acquire: pairs with the release store of pos in lock_position(). */
	uint64_t h1 = atomic_load_explicit(hdr_pos(b, d), memory_order_acquire), h2;
	uint32_t m, r, used;
	struct bt_meta *mt;
	uint64_t cf, a;
	const struct bt_block_hdr *h;

	if (h1 != expect)
		return BT_READ_LOST;
	m = (uint32_t)(h1 % b->A);
	r = (uint32_t)(h1 / b->A);
	mt = &b->meta[m];
	/* Acquire: pairs with the release confirmations; every confirmed
	 * entry's bytes are visible. */
	cf = atomic_load_explicit(&mt->conf, memory_order_acquire);
	a = atomic_load_explicit(&mt->alloc, memory_order_acquire);
	if (RND(cf) == r && CBYTES(b, cf) < b->bsize) {
		/* Active block: readable up to conf only when nothing is in
		 * flight (conf read first, so alloc == conf means all bytes
		 * below it were confirmed at the time of the conf load). */
		if (RND(a) != r || POS(a) != CBYTES(b, cf))
			return BT_READ_BUSY;
		used = CBYTES(b, cf);
		v->complete = 0;
	} else if (RND(cf) == r || rnd_before(r, RND(cf))) {
		used = b->bsize; /* complete (its meta may have moved on) */
		v->complete = 1;
	} else {
		return BT_READ_LOST;
	}
	speculative_copy(scratch, block_at(b, d), used);
	/* Acquire fence: if the copy saw any write of a new owner, the pos
	 * reload sees that owner's invalidation; pairs with the release fence
	 * in lock_position(). */
	atomic_thread_fence(memory_order_acquire);
	h2 = atomic_load_explicit(hdr_pos(b, d), memory_order_relaxed);
	if (h2 != h1)
		return BT_READ_LOST;
	h = (const struct bt_block_hdr *)scratch;
	v->pos = h1;
	v->prev_pos = h->prev_pos;
	v->core = h->core;
	v->used = used;
	v->data = scratch;
	return BT_READ_OK;
}

struct pos_idx {
	uint64_t pos;
	uint32_t d;
};

static int cmp_pos(const void *x, const void *y)
{
	const struct pos_idx *a = x, *b = y;

	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static uint32_t count_entries(const struct bt_block_view *v)
{
	uint32_t off = 0, len, n = 0;

	while (bt_block_next(v, &off, &len))
		n++;
	return n;
}

/* The lowest position below `handed` (positions handed out before the read
 * began), within the newest half of the buffer's and from min_pos on, that
 * no header showed in pass 1 (idx, sorted) while its meta has not gone past
 * its round: its writer may still publish it. A meta past the round means
 * the position was filled and overwritten, or skipped: it never comes. */
static uint64_t first_unpublished(struct bt_buffer *b, const struct pos_idx *idx, uint32_t n, uint64_t min_pos,
				  uint64_t handed, uint64_t nblocks)
{
	uint64_t p = handed > nblocks / 2 ? handed - nblocks / 2 : 0;
	uint32_t k = 0;

	if (p < min_pos)
		p = min_pos;
	if (p < b->first_pos)
		p = b->first_pos;
	for (; p < handed; p++) {
		uint32_t r = (uint32_t)(p / b->A);
		uint64_t cf;

		while (k < n && idx[k].pos < p)
			k++;
		if (k < n && idx[k].pos == p)
			continue;
		/* Acquire: pairs with the conf CAS in lock_position(); a round
		 * past r was taken after p's writer gave p up. */
		cf = atomic_load_explicit(&b->meta[p % b->A].conf, memory_order_acquire);
		if (!rnd_before(r, RND(cf)))
			return p;
	}
	return BT_NO_POS;
}

int bt_read(struct bt_buffer *b, bt_block_cb cb, void *ctx, struct bt_read_stats *st)
{
	return bt_read_range(b, 0, 0, cb, ctx, st);
}

int bt_read_begin_(struct bt_buffer *b, struct bt_read_stats **st, struct bt_read_stats *local)
{
	if (!*st)
		*st = local;
	memset(*st, 0, sizeof(**st));
	(*st)->first_busy = (*st)->first_unpublished = BT_NO_POS;
	return bt_reader_enter_(b);
}

int bt_read_range(struct bt_buffer *b, uint64_t min_pos, unsigned flags, bt_block_cb cb, void *ctx,
		  struct bt_read_stats *st)
{
	struct bt_read_stats local = { 0 };
	struct pos_idx *idx = NULL;
	uint8_t *scratch = NULL;
	uint32_t n = 0, nslots, i;
	uint16_t *slots = NULL;
	uint64_t handed = 0;
	int ri, ret = 0;

	ri = bt_read_begin_(b, &st, &local);
	if (ri < 0)
		return ri;

	/* Seq_cst: after our epoch announcement (see bt_reader_enter_()). */
	{
		uint64_t g = atomic_load_explicit(&b->global, memory_order_seq_cst);
		uint32_t gen = GGEN(g);
		struct bt_layout *l = &b->layouts[gen % NLAYOUTS];

		nslots = atomic_load_explicit(&l->nslots, memory_order_relaxed);
		slots = malloc(sizeof(*slots) * (nslots ? nslots : 1));
		idx = malloc(sizeof(*idx) * ((size_t)nslots * b->A + 1));
		scratch = aligned_alloc(64, b->bsize);
		if (!slots || !idx || !scratch) {
			ret = -ENOMEM;
			goto out;
		}
		for (i = 0; i < nslots; i++)
			slots[i] = atomic_load_explicit(&l->order[i], memory_order_relaxed);
		handed = GPOS(g);
	}

	/* Pass 1: which blocks hold what, then oldest position first. */
	for (i = 0; i < nslots; i++) {
		for (uint32_t m = 0; m < b->A; m++) {
			uint32_t d = (uint32_t)slots[i] * b->A + m;
			uint64_t p = atomic_load_explicit(hdr_pos(b, d), memory_order_relaxed);

			if (p == 0) {
				st->blocks_empty++;
				continue;
			}
			if (p < min_pos)
				continue;
			idx[n].pos = p;
			idx[n].d = d;
			n++;
		}
	}
	qsort(idx, n, sizeof(*idx), cmp_pos);
	if (flags & BT_READ_COMPLETE)
		st->first_unpublished = first_unpublished(b, idx, n, min_pos, handed, (uint64_t)nslots * b->A);

	/* Pass 2: speculative copies, validated one by one. */
	for (i = 0; i < n; i++) {
		struct bt_block_view v;
		enum bt_read_result rr = BT_READ_BUSY;

		/* An active block with a write in flight: give it a moment
		 * (BT_READ_COMPLETE: no moment, active blocks are not wanted). */
		for (int tries = 0; tries < 64; tries++) {
			rr = bt_read_block_(b, idx[i].d, idx[i].pos, scratch, &v);
			if (rr == BT_READ_OK && !v.complete && (flags & BT_READ_COMPLETE))
				rr = BT_READ_BUSY;
			if (rr != BT_READ_BUSY || (flags & BT_READ_COMPLETE))
				break;
			sched_yield();
		}
		if (rr == BT_READ_LOST) {
			st->blocks_lost++;
			continue;
		}
		if (rr == BT_READ_BUSY) {
			st->blocks_busy++;
			if (idx[i].pos < st->first_busy)
				st->first_busy = idx[i].pos;
			continue;
		}
		st->blocks_read++;
		st->entries += count_entries(&v);
		ret = cb(&v, ctx);
		if (ret)
			break;
	}
out:
	bt_reader_exit_(b, ri);
	free(slots);
	free(idx);
	free(scratch);
	return ret;
}

const void *bt_block_next(const struct bt_block_view *v, uint32_t *off, uint32_t *len)
{
	for (;;) {
		const struct bt_entry_hdr *e;
		uint32_t o = *off ? *off : BT_BLOCK_HDR;
		uint64_t step;

		if (o > v->used || v->used - o < BT_ENTRY_HDR)
			return NULL;
		e = (const struct bt_entry_hdr *)(v->data + o);
		/* In 64 bits: a size near 2^32 rounded in 32 would wrap to a step
		 * of 0, and the walk would return the entry (a PAD: spin) forever. */
		step = ((uint64_t)e->size + 7) & ~7ull;
		if (e->size < BT_ENTRY_HDR || step > v->used - o)
			return NULL; /* malformed: stop rather than walk garbage */
		*off = o + (uint32_t)step;
		if (e->kind == BT_ENTRY_DATA) {
			*len = e->size - BT_ENTRY_HDR;
			return e + 1;
		}
		if (e->kind != BT_ENTRY_PAD)
			return NULL;
	}
}

/* ---- resize (4.4) -------------------------------------------------------- */

/* Zero a file range: its pages go back to the kernel (a shared buffer's
 * slot released, or a handed buffer reused). */
static int punch(int fd, uint64_t off, uint64_t len)
{
	return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) ? -errno : 0;
}

static int unmap_slot(struct bt_buffer *b, uint32_t s);

static int map_slot(struct bt_buffer *b, uint32_t s, bool populate)
{
	/* Fresh zero pages over the reserved range. Prefaulted (prefault.h)
	 * at create, so writers never fault on a new block; a grow skips it
	 * (the kernel zeroes ~4 GB/s: 50 ms for 192 MiB) and lets the pages
	 * fault in as the new blocks are first written. A shared buffer maps
	 * its file's range (zero: punched at create and at each release). */
	void *at = block_at(b, s * b->A), *p;

	if (b->shm_fd >= 0)
		p = mmap(at, slot_bytes(b), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, b->shm_fd,
			 (off_t)(b->shm_data_off + (uint64_t)s * slot_bytes(b)));
	else
		p = mmap(at, slot_bytes(b), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	b->mapped[s] = 1;
	atomic_fetch_add_explicit(&b->nmapped, 1, memory_order_relaxed);
	if (populate && bt_prefault(p, slot_bytes(b))) {
		/* back to the reservation, a shared file's pages given back */
		unmap_slot(b, s);
		return -ENOMEM;
	}
	return 0;
}

static int unmap_slot(struct bt_buffer *b, uint32_t s)
{
	/* Replacing the range drops its pages at once (memory returned). */
	if (mmap(block_at(b, s * b->A), slot_bytes(b), PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
		return -errno;
	if (b->shm_fd >= 0) {
		int e = punch(b->shm_fd, b->shm_data_off + (uint64_t)s * slot_bytes(b), slot_bytes(b));

		if (e)
			return e;
	}
	b->mapped[s] = 0;
	atomic_fetch_sub_explicit(&b->nmapped, 1, memory_order_relaxed);
	return 0;
}

static void pause_briefly(void)
{
	struct timespec ts = { 0, 20000 };

	nanosleep(&ts, NULL);
}

/* Wait until no reader that entered before now is still reading. */
static int wait_readers(struct bt_buffer *b, uint64_t deadline)
{
	/* Seq_cst: pairs with the seq_cst announcement in bt_reader_enter_(). */
	uint64_t e = atomic_fetch_add_explicit(&b->epoch, 1, memory_order_seq_cst) + 1;

	for (int i = 0; i < BT_MAX_READERS; i++) {
		for (;;) {
			/* Acquire: pairs with the release in bt_reader_exit_(). */
			uint64_t re = atomic_load_explicit(&b->readers[i].epoch, memory_order_acquire);

			if (re == 0 || re >= e)
				break;
			if (bt_now_ns() > deadline)
				return -ETIMEDOUT;
			pause_briefly();
		}
	}
	return 0;
}

/* Build the layout of the next generation for a change from R to R2 slots
 * and publish it. `add` holds the new physical slots (grow); `drop`
 * receives the slots no longer used (shrink); *start_pos the global position
 * at which the new generation starts. 0, or -ETIMEDOUT (nothing changed). */
static int publish_layout(struct bt_buffer *b, uint32_t R2, const uint16_t *add, uint16_t *drop, uint32_t *ndrop,
			  uint64_t deadline, uint64_t *start_pos)
{
	uint64_t g = atomic_load_explicit(&b->global, memory_order_acquire);

	for (;;) {
		uint32_t gen = GGEN(g), ngen = (gen + 1) & 0xff;
		struct bt_layout *ol = &b->layouts[gen % NLAYOUTS], *nl = &b->layouts[ngen % NLAYOUTS];
		uint64_t obase = atomic_load_explicit(&ol->base_round, memory_order_relaxed);
		uint32_t R = atomic_load_explicit(&ol->nslots, memory_order_relaxed);
		/* The new generation starts at the next round boundary: the
		 * rest of the current round is never handed out, so no block of
		 * the oldest round is overwritten early under the old mapping. */
		uint64_t r0 = (GPOS(g) + b->A - 1) / b->A;
		uint32_t K = R < R2 ? R : R2, k = 0, j;
#define OLD_SLOT(round) atomic_load_explicit(&ol->order[((round)-obase) % R], memory_order_relaxed)

		/* Release fence: whoever reads this rewritten layout slot and
		 * then the global word sees at least the generation that
		 * retired it; pairs with the acquire fence in layout_slot(). */
		atomic_thread_fence(memory_order_release);
		/* Old slots from oldest to newest are OLD(r0) .. OLD(r0+R-1)
		 * (r0+R-1 is the same slot as r0-1, the newest round). Grow: the
		 * new slots come first, then every old slot, oldest first.
		 * Shrink: the K newest old slots, oldest first. */
		for (j = 0; j < R2 - K; j++)
			atomic_store_explicit(&nl->order[k++], add[j], memory_order_relaxed);
		for (j = R - K; j < R; j++)
			atomic_store_explicit(&nl->order[k++], OLD_SLOT(r0 + j), memory_order_relaxed);
		*ndrop = 0;
		for (j = 0; j < R - K; j++) /* dropped: the R-K oldest */
			drop[(*ndrop)++] = OLD_SLOT(r0 + j);
#undef OLD_SLOT
		atomic_store_explicit(&nl->base_round, r0, memory_order_relaxed);
		atomic_store_explicit(&nl->nslots, R2, memory_order_relaxed);
		/* The layout only depends on r0: while producers advance within
		 * the current round, retry the CAS without rebuilding it. */
		for (;;) {
			/* Release: the layout before the generation that uses it;
			 * pairs with the acquire FAA in advance(). Seq_cst also
			 * orders it before the epoch bump (see bt_reader_enter_()). */
			if (atomic_compare_exchange_strong_explicit(&b->global, &g, GWORD(ngen, r0 * b->A),
								    memory_order_seq_cst, memory_order_acquire)) {
				*start_pos = r0 * b->A;
				return 0;
			}
			if ((GPOS(g) + b->A - 1) / b->A != r0 || GGEN(g) != gen)
				break; /* a new round started: rebuild */
		}
		if (bt_now_ns() > deadline)
			return -ETIMEDOUT;
	}
}

/* After a shrink: forward every meta past the old generation once its
 * current block is complete, so no producer can touch a dropped slot. */
static int retire_old_generation(struct bt_buffer *b, uint64_t P, uint64_t deadline)
{
	for (uint32_t m = 0; m < b->A; m++) {
		struct bt_meta *mt = &b->meta[m];
		/* The new generation starts at round P / A for every meta (P is
		 * a round boundary): older rounds are the old generation's. */
		uint32_t last_old = (uint32_t)(P / b->A - 1);

		for (;;) {
			uint64_t cf = atomic_load_explicit(&mt->conf, memory_order_acquire);

			if (!rnd_before(RND(cf), last_old + 1))
				break; /* already in the new generation, or forwarded */
			if (CBYTES(b, cf) == b->bsize) {
				/* The forwarded round is a phantom: complete, empty. */
				bool done;

				fold_begin(b);
				done = atomic_compare_exchange_strong_explicit(&mt->conf, &cf, RP(last_old, b->bsize),
									     memory_order_acq_rel, memory_order_relaxed);
				if (done) {
					fold_round(b, cf);
					atomic_fetch_add_explicit(&b->phantom_bytes, b->bsize, memory_order_relaxed);
				}
				fold_end(b);
				if (done)
					break;
				continue;
			}
			/* Writers still in the block: stop new ones, let the
			 * in-flight ones confirm. Never blocks them. */
			if (close_round_before(b, mt, RND(cf) + 1))
				atomic_fetch_add_explicit(&b->closed, 1, memory_order_relaxed);
			if (bt_now_ns() > deadline)
				return -ETIMEDOUT;
			pause_briefly();
		}
	}
	return 0;
}

static int release_pending(struct bt_buffer *b, uint64_t deadline)
{
	int err = wait_readers(b, deadline);

	if (err)
		return err;
	while (b->npending) {
		uint16_t s = b->pending[b->npending - 1];

		err = unmap_slot(b, s);
		if (err)
			return err;
		b->is_pending[s] = 0;
		b->npending--;
	}
	return 0;
}

size_t bt_size_granule(const struct bt_buffer *b)
{
	return slot_bytes(b);
}

size_t bt_round_size(const struct bt_buffer *b, size_t size)
{
	return size / slot_bytes(b) * slot_bytes(b);
}

int bt_resize(struct bt_buffer *b, size_t size, unsigned timeout_ms, char *err, size_t errlen)
{
	uint64_t budget = (uint64_t)(timeout_ms ? timeout_ms : 2000) * 1000000ull, deadline = bt_now_ns() + budget;
	uint32_t R, R2 = (uint32_t)(size / slot_bytes(b)), nadd = 0, ndrop = 0;
	uint16_t *add = NULL, *drop = NULL;
	uint8_t *taken = NULL;
	uint64_t P = 0;
	int ret = 0;

	if (size > b->max_size) {
		bt_errmsg(err, errlen, "%zu bytes is over the maximum of %zu reserved at start (raise the maximum size)",
			size, b->max_size);
		return -E2BIG;
	}
	if (R2 == 0) {
		bt_errmsg(err, errlen, "%zu bytes is below the minimum of %zu (A=%u blocks of %u bytes)", size,
			slot_bytes(b), b->A, b->bsize);
		return -EINVAL;
	}
	if (atomic_flag_test_and_set_explicit(&b->resizing, memory_order_acquire)) {
		bt_errmsg(err, errlen, "another resize is in progress");
		return -EBUSY;
	}
	/* A shrink whose retire timed out left producers able to touch its
	 * dropped slots: finish that first, or change nothing. */
	if (b->retire_unfinished) {
		ret = retire_old_generation(b, b->retire_P, deadline);
		if (ret) {
			bt_errmsg(err, errlen, "a writer is still stalled inside a block of an earlier shrink; try again");
			goto out;
		}
		b->retire_unfinished = false;
	}
	R = atomic_load_explicit(&b->nslots, memory_order_relaxed);
	add = calloc(b->max_slots, sizeof(*add));
	drop = calloc(b->max_slots, sizeof(*drop));
	taken = calloc(b->max_slots, 1);
	if (!add || !drop || !taken) {
		ret = -ENOMEM;
		goto out;
	}
	if (R2 > R) {
		/* Grow: back the new slots before anyone can be handed them.
		 * Slots awaiting release are still mapped: take them back. */
		for (uint32_t s = 0; s < b->max_slots && nadd < R2 - R; s++) {
			if (b->mapped[s] && !b->is_pending[s])
				continue;
			if (b->is_pending[s]) {
				taken[s] = 1;
			} else if ((ret = map_slot(b, s, false)) < 0) {
				bt_errmsg(err, errlen, "cannot map %zu bytes: %s", slot_bytes(b), strerror(-ret));
				for (uint32_t i = 0; i < nadd; i++) /* never published */
					if (!taken[add[i]])
						unmap_slot(b, add[i]);
				goto out;
			}
			add[nadd++] = (uint16_t)s;
		}
		uint32_t k = 0;

		for (uint32_t i = 0; i < b->npending; i++) { /* taken ones leave pending */
			if (taken[b->pending[i]])
				b->is_pending[b->pending[i]] = 0;
			else
				b->pending[k++] = b->pending[i];
		}
		b->npending = k;
	}
	if (R2 != R) {
		ret = publish_layout(b, R2, add, drop, &ndrop, deadline, &P);
		if (ret) {
			bt_errmsg(err, errlen, "the buffer advanced too fast to publish a new layout in time; try again");
			for (uint32_t i = 0; i < nadd; i++) /* never published: back to how it was */
				if (taken[add[i]]) {
					b->pending[b->npending++] = add[i];
					b->is_pending[add[i]] = 1;
				} else {
					unmap_slot(b, add[i]);
				}
			goto out;
		}
		atomic_store_explicit(&b->nslots, R2, memory_order_relaxed);
		for (uint32_t i = 0; i < ndrop; i++) {
			b->pending[b->npending++] = drop[i];
			b->is_pending[drop[i]] = 1;
		}
		if (ndrop) {
			/* A fresh budget: publishing may have used some. */
			ret = retire_old_generation(b, P, bt_now_ns() + budget);
			if (ret) {
				b->retire_unfinished = true;
				b->retire_P = P;
				bt_errmsg(err, errlen,
					"a writer stalled inside a released block; the size changed, its memory is "
					"released by the next resize");
			}
		}
	}
	if (ret == 0) {
		ret = release_pending(b, bt_now_ns() + budget);
		if (ret == -ETIMEDOUT)
			bt_errmsg(err, errlen, "a reader (a dump in progress) kept the released memory; it is released by "
					     "the next resize");
	}
	if (ret == 0)
		atomic_fetch_add_explicit(&b->resizes, 1, memory_order_relaxed);
out:
	free(add);
	free(drop);
	free(taken);
	atomic_flag_clear_explicit(&b->resizing, memory_order_release);
	return ret;
}

/* ---- create / destroy / stats -------------------------------------------- */

/* The geometry of cfg, checked: block size, A, slots now and at most. */
struct geometry {
	uint32_t bsize, A, R, Rmax;
	size_t sbytes;
};

static int check_geometry(const struct bt_config *cfg, struct geometry *g, char *err, size_t errlen)
{
	uint32_t bsize = cfg->block_size ? cfg->block_size : BT_DEFAULT_BLOCK_SIZE;
	uint32_t ncores = cfg->ncores, A;
	size_t sbytes, max_size;
	uint32_t R;

	if (bsize < BT_MIN_BLOCK_SIZE || bsize > BT_MAX_BLOCK_SIZE || (bsize & (bsize - 1))) {
		bt_errmsg(err, errlen, "block size %u must be a power of two between %u and %u", bsize,
			BT_MIN_BLOCK_SIZE, BT_MAX_BLOCK_SIZE);
		return -EINVAL;
	}
	if (ncores == 0 || ncores > BT_MAX_CORES) {
		bt_errmsg(err, errlen, "number of cores %u must be between 1 and %u", ncores, BT_MAX_CORES);
		return -EINVAL;
	}
	if (cfg->size == 0) {
		bt_errmsg(err, errlen, "buffer size must be greater than zero");
		return -EINVAL;
	}
	A = cfg->active;
	if (A == 0) { /* default 16 x cores, the paper's sweet spot, if it fits */
		A = 16 * ncores;
		if (A > 0xffff) /* the per-core word has 16 bits for the meta */
			A = 0xffff;
		if ((size_t)A * bsize > cfg->size)
			A = (uint32_t)(cfg->size / bsize);
		if (A < ncores) {
			bt_errmsg(err, errlen, "buffer of %zu bytes holds %zu blocks of %u bytes: fewer than one a core (%u cores)",
				cfg->size, cfg->size / bsize, bsize, ncores);
			return -EINVAL;
		}
	}
	if (A == 0 || A > 0xffff) {
		bt_errmsg(err, errlen, "active blocks %u must be between 1 and 65535", A);
		return -EINVAL;
	}
	sbytes = (size_t)A * bsize;
	if (sbytes % (size_t)sysconf(_SC_PAGESIZE)) {
		bt_errmsg(err, errlen, "A=%u blocks of %u bytes (%zu) must be a multiple of the page size %ld", A,
			bsize, sbytes, sysconf(_SC_PAGESIZE));
		return -EINVAL;
	}
	max_size = cfg->max_size ? cfg->max_size : cfg->size;
	if (max_size < cfg->size) {
		bt_errmsg(err, errlen, "maximum size %zu is below the size %zu", max_size, cfg->size);
		return -EINVAL;
	}
	R = (uint32_t)(cfg->size / sbytes);
	if (R == 0) {
		bt_errmsg(err, errlen, "buffer of %zu bytes is smaller than A=%u active blocks of %u bytes (%zu)",
			cfg->size, A, bsize, sbytes);
		return -EINVAL;
	}
	if (max_size / sbytes > MAX_SLOTS) {
		bt_errmsg(err, errlen, "maximum size %zu needs more than %u slots of %zu bytes (raise the block size)",
			max_size, MAX_SLOTS, sbytes);
		return -EINVAL;
	}
	g->bsize = bsize;
	g->A = A;
	g->R = R;
	g->Rmax = (uint32_t)(max_size / sbytes);
	g->sbytes = sbytes;
	return 0;
}

int bt_buffer_geometry(const struct bt_config *cfg, uint32_t *A, size_t *size, size_t *max_size, char *err,
		       size_t errlen)
{
	struct geometry g;
	int e = check_geometry(cfg, &g, err, errlen);

	if (e)
		return e;
	if (A)
		*A = g.A;
	if (size)
		*size = (size_t)g.R * g.sbytes;
	if (max_size)
		*max_size = (size_t)g.Rmax * g.sbytes;
	return 0;
}

size_t bt_buffer_meta_bytes(uint32_t A)
{
	return sizeof(struct bt_meta) * A;
}

struct bt_buffer *bt_buffer_create(const struct bt_config *cfg, char *err, size_t errlen)
{
	struct geometry g;
	uint32_t ncores = cfg->ncores, A, bsize, R, Rmax, start;
	size_t sbytes;
	struct bt_buffer *b;

	if (check_geometry(cfg, &g, err, errlen))
		goto inval;
	bsize = g.bsize;
	A = g.A;
	R = g.R;
	Rmax = g.Rmax;
	sbytes = g.sbytes;
	start = cfg->start_round ? cfg->start_round : 1; /* position 0 marks a never-used block */

	b = aligned_alloc(CACHELINE, (sizeof(*b) + CACHELINE - 1) / CACHELINE * CACHELINE);
	if (!b)
		goto nomem;
	memset(b, 0, sizeof(*b));
	b->bsize = bsize;
	b->bshift = (uint32_t)__builtin_ctz(bsize);
	b->cbits = b->bshift + 1;
	/* The rounds before the first are phantoms: complete and empty. */
	atomic_init(&b->phantom_bytes, (uint64_t)A * bsize);
	b->A = A;
	b->ncores = ncores;
	b->max_slots = Rmax;
	b->max_size = (size_t)Rmax * sbytes;
	b->prefault = cfg->prefault;
	b->shm_fd = -1;
	atomic_flag_clear(&b->resizing);
	atomic_init(&b->epoch, 1);
	if (cfg->shm) {
		/* The handed file is reused from zero: its old contents were
		 * read (dumped) before (user/handover/). */
		int e = punch(cfg->shm->fd, cfg->shm->data_off, b->max_size);
		void *m = e ? MAP_FAILED : mmap(NULL, bt_buffer_meta_bytes(A), PROT_READ | PROT_WRITE, MAP_SHARED,
						cfg->shm->fd, (off_t)cfg->shm->meta_off);

		if (m == MAP_FAILED) {
			bt_errmsg(err, errlen, "cannot map the shared buffer: %s", strerror(e ? -e : errno));
			goto nomem_free;
		}
		b->meta = m;
		b->shm_fd = cfg->shm->fd;
		b->shm_data_off = cfg->shm->data_off;
	} else {
		b->meta = aligned_alloc(CACHELINE, sizeof(*b->meta) * A);
	}
	b->cores = aligned_alloc(CACHELINE, sizeof(*b->cores) * ncores);
	b->mapped = calloc(Rmax, 1);
	b->pending = calloc(Rmax, sizeof(*b->pending));
	b->is_pending = calloc(Rmax, 1);
	for (int i = 0; i < NLAYOUTS; i++)
		b->layouts[i].order = calloc(Rmax, sizeof(*b->layouts[i].order));
	if (!b->meta || !b->cores || !b->mapped || !b->pending || !b->is_pending || !b->layouts[NLAYOUTS - 1].order ||
	    !b->layouts[0].order || !b->layouts[1].order || !b->layouts[2].order)
		goto nomem_free;
	for (uint32_t m = 0; m < A; m++) {
		/* Round start-1 complete: the first advance locks round start. */
		atomic_init(&b->meta[m].alloc, RP(start - 1, bsize));
		atomic_init(&b->meta[m].conf, RP(start - 1, bsize));
		atomic_init(&b->meta[m].didx, 0);
	}
	for (uint32_t c = 0; c < ncores; c++) {
		atomic_init(&b->cores[c].cur, CORE_NONE);
	}
	b->data = mmap(NULL, b->max_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (b->data == MAP_FAILED) {
		bt_errmsg(err, errlen, "cannot reserve %zu bytes of address space: %s", b->max_size, strerror(errno));
		b->data = NULL;
		goto nomem_free;
	}
	for (uint32_t s = 0; s < R; s++) {
		int e = map_slot(b, s, b->prefault);

		if (e) {
			bt_errmsg(err, errlen, "cannot map %zu bytes: %s", sbytes, strerror(-e));
			goto nomem_free;
		}
		atomic_init(&b->layouts[0].order[s], (uint16_t)s);
	}
	atomic_init(&b->layouts[0].nslots, R);
	atomic_init(&b->layouts[0].base_round, (uint64_t)start);
	atomic_init(&b->nslots, R);
	atomic_init(&b->global, GWORD(0, (uint64_t)start * A));
	b->first_pos = (uint64_t)start * A;
	return b;

nomem_free:
	if (err && !err[0])
		bt_errmsg(err, errlen, "out of memory");
	/* The handed file was reused from zero: give back what the slots
	 * mapped so far took of it (a caller may retry in private memory). */
	if (b->shm_fd >= 0)
		punch(b->shm_fd, b->shm_data_off, b->max_size);
	bt_buffer_destroy(b);
	errno = ENOMEM;
	return NULL;
nomem:
	bt_errmsg(err, errlen, "out of memory");
	errno = ENOMEM;
	return NULL;
inval:
	errno = EINVAL;
	return NULL;
}

void bt_buffer_destroy(struct bt_buffer *b)
{
	if (!b)
		return;
	if (b->data)
		munmap(b->data, b->max_size);
	for (int i = 0; i < NLAYOUTS; i++)
		free((void *)b->layouts[i].order);
	free(b->pending);
	free(b->is_pending);
	free(b->mapped);
	free(b->cores);
	if (b->shm_fd >= 0)
		munmap(b->meta, bt_buffer_meta_bytes(b->A));
	else
		free(b->meta);
	free(b);
}

uint64_t bt_buffer_blocks_used(const struct bt_buffer *cb)
{
	struct bt_buffer *b = (struct bt_buffer *)cb; /* atomics loads need non-const */

	/* Relaxed: a progress hint, as st.blocks_used in bt_buffer_stats(). */
	return atomic_load_explicit(&b->blocks_used, memory_order_relaxed);
}

void bt_buffer_stats(const struct bt_buffer *cb, struct bt_stats *st)
{
	struct bt_buffer *b = (struct bt_buffer *)cb; /* atomics loads need non-const */
	uint32_t R = atomic_load_explicit(&b->nslots, memory_order_relaxed);
	uint32_t mapped = atomic_load_explicit(&b->nmapped, memory_order_relaxed);

	uint64_t entries = 0, bytes = 0;

	memset(st, 0, sizeof(*st));
	/* Finished rounds are folded; add the rounds still open. Retry while a
	 * fold runs, so no round is counted twice or missed. Exact when writers
	 * are quiescent; while they run, within the blocks being written. */
	for (int tries = 0; tries < 1000; tries++) {
		uint64_t done = atomic_load_explicit(&b->folds_done, memory_order_seq_cst);

		entries = atomic_load_explicit(&b->folded_entries, memory_order_seq_cst);
		bytes = atomic_load_explicit(&b->folded_bytes, memory_order_seq_cst);
		for (uint32_t m = 0; m < b->A; m++) {
			uint64_t cf = atomic_load_explicit(&b->meta[m].conf, memory_order_seq_cst);

			entries += CCOUNT(b, cf);
			bytes += CBYTES(b, cf);
		}
		if (atomic_load_explicit(&b->folds_begun, memory_order_seq_cst) == done)
			break;
	}
	st->entries_written = entries;
	st->entries_rejected = atomic_load_explicit(&b->rejected, memory_order_relaxed);
	st->entries_dropped = atomic_load_explicit(&b->dropped, memory_order_relaxed);
	st->padding_bytes = atomic_load_explicit(&b->padding, memory_order_relaxed);
	st->blocks_used = atomic_load_explicit(&b->blocks_used, memory_order_relaxed);
	st->blocks_closed = atomic_load_explicit(&b->closed, memory_order_relaxed);
	st->blocks_skipped = atomic_load_explicit(&b->skipped, memory_order_relaxed);
	st->positions_stale = atomic_load_explicit(&b->stale, memory_order_relaxed);
	st->core_races = atomic_load_explicit(&b->core_races, memory_order_relaxed);
	/* Confirmed bytes minus everything that is not an entry. Headers and
	 * padding of blocks being locked or closed right now may be counted
	 * on one side only: never report less than zero. */
	{
		int64_t v = (int64_t)(bytes - atomic_load_explicit(&b->phantom_bytes, memory_order_relaxed) -
				      st->blocks_used * BT_BLOCK_HDR - st->padding_bytes);

		st->bytes_written = v > 0 ? (uint64_t)v : 0;
	}
	st->resizes = atomic_load_explicit(&b->resizes, memory_order_relaxed);
	st->size = (size_t)R * slot_bytes(b);
	st->max_size = b->max_size;
	st->resident = (size_t)mapped * slot_bytes(b);
	st->metadata_bytes = sizeof(struct bt_meta) * b->A + sizeof(struct bt_core) * b->ncores;
	st->block_size = b->bsize;
	st->nblocks = R * b->A;
	st->active = b->A;
	st->ncores = b->ncores;
}
