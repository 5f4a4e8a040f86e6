// SPDX-License-Identifier: MIT
/*
 * app_reader.c - read an application's block buffer without trusting it.
 *
 * A block's identity comes from its header (pos), which must map back to
 * the physical block it sits in. How much of it is valid comes from its
 * meta's conf word: a later round locked proves this one completed; the
 * current round is read only when every reserved byte is confirmed. The
 * copy is then re-checked like a seqlock (a new owner rewrites the header
 * before writing anything else), and every entry and event in the copy is
 * validated. Anything inconsistent is counted, never delivered and never
 * followed.
 */
#include "app_reader.h"
#include "clocks.h"
#include "copy_pool.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NO_TSAN __attribute__((no_sanitize("thread")))
#define NO_TSAN_ACTIVE 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) && !defined(NO_TSAN_ACTIVE)
#define NO_TSAN __attribute__((no_sanitize("thread")))
#define NO_TSAN_ACTIVE 1
#endif
#ifndef NO_TSAN
#define NO_TSAN
#endif

/* The application writes these bytes concurrently: a racy copy by design,
 * validated afterwards (the seqlock-style re-check below). */
NO_TSAN static void copy_racy(void *dst, const void *src, size_t n)
{
	/* 8-byte acquire loads, in address order: an entry header or a
	 * function batch's count seen written comes with what its writer
	 * stored before it (release; app_write.h, btrace_funcs.c). */
	const uint64_t *s = src;
	uint64_t *d = dst;
	for (size_t i = 0; i < n / 8; i++)
		d[i] = __atomic_load_n(&s[i], __ATOMIC_ACQUIRE);
}

NO_TSAN static uint64_t load_racy64(const void *p)
{
	return *(volatile const uint64_t *)p;
}

/* A function batch (btrace_funcs.c): its count within its room, and no
 * long record cut off by the count. */
static int check_funcs(const uint8_t *p, uint32_t size)
{
	struct bt_ev_app_funcs f;
	if (size < BT_ENTRY_HDR + sizeof(f))
		return -1;
	memcpy(&f, p + BT_ENTRY_HDR, sizeof(f));
	if ((uint64_t)size != BT_ENTRY_HDR + sizeof(f) + 8ull * f.cap || f.count > f.cap || f.count == 0)
		return -1;
	for (uint32_t i = 0; i < f.count; i++) {
		uint64_t w;
		memcpy(&w, p + BT_ENTRY_HDR + sizeof(f) + 8u * i, sizeof(w));
		if (((w >> 32) & 3) >= BT_FREC_ENTRY_LONG && ++i >= f.count)
			return -1;
	}
	return 0;
}

static int bt_app_check_block(const uint8_t *blk, uint32_t used, uint32_t bsize, uint32_t ncores, uint32_t pid,
		       uint64_t *entries)
{
	uint32_t off = BT_BLOCK_HDR;
	uint64_t n = 0;
	if (used < BT_BLOCK_HDR || used > bsize || used % 8)
		return -1;
	while (off < used) {
		struct bt_entry_hdr e;
		if (used - off < sizeof(e))
			return -1;
		memcpy(&e, blk + off, sizeof(e));
		if (e.size < sizeof(e) || e.size % 8 || e.size > used - off)
			return -1;
		if (e.kind == BT_ENTRY_DATA) {
			struct bt_ev_app ev;
			if (e.size < BT_ENTRY_HDR + sizeof(ev))
				return -1;
			memcpy(&ev, blk + off + BT_ENTRY_HDR, sizeof(ev));
			if (ev.h.tgid != pid || ev.h.cpu >= ncores)
				return -1;
			if (ev.h.type == BT_EV_APP_FUNCS) {
				if (check_funcs(blk + off, e.size) < 0)
					return -1;
			} else if (ev.h.type < BT_EV_APP_INSTANT || ev.h.type > BT_EV_APP_COUNTER ||
				   ev.nargs > BT_APP_MAX_ARGS || e.size != bt_app_entry_size(ev.nargs) ||
				   ev.name_id > BT_APP_MAX_NAMES || (ev.h.type == BT_EV_APP_COUNTER && ev.nargs < 1)) {
				return -1;
			}
			n++;
		} else if (e.kind != BT_ENTRY_PAD) {
			return -1;
		}
		off += e.size;
	}
	*entries = n;
	return 0;
}

/* A block with writes in flight: the bytes up to its first entry not
 * written yet (blocks are zeroed when locked, and a writer stores an
 * entry's header last), or 0 if that is the first. A malformed header ends
 * the prefix too: validation refuses the block if it is garbage. */
static uint32_t written_prefix(const uint8_t *blk, uint32_t reserved)
{
	uint32_t off = BT_BLOCK_HDR;
	while (off + BT_ENTRY_HDR <= reserved) {
		struct bt_entry_hdr e;
		memcpy(&e, blk + off, sizeof(e));
		if (e.size == 0 && e.kind == 0)
			break;
		if (e.size < BT_ENTRY_HDR || e.size % 8 || e.size > reserved - off)
			return reserved; /* not an unwritten entry: validation decides */
		off += e.size;
	}
	return off > BT_BLOCK_HDR ? off : 0;
}

struct slot {
	uint64_t pos;
	uint32_t d;
};

static int by_pos(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* How much of block pos to take, from its meta's conf c and alloc a (read
 * after its header and before its copy): 0 with *used (bytes to copy),
 * *inflight (non-zero: writes in flight, the written prefix of those bytes
 * counts) and *complete; or -1 with the block counted in rs. */
static int classify(const struct bt_app_view *v, uint64_t pos, uint64_t c, uint64_t a, uint32_t *used,
		    uint32_t *inflight, int *complete, struct bt_app_read_stats *rs)
{
	uint32_t r = (uint32_t)(pos / v->A);
	int32_t ahead = (int32_t)(BT_APP_RND(c) - r);

	*inflight = 0;
	if (ahead < 0) {
		rs->blocks_bad++; /* conf behind the header: never happens honestly */
		return -1;
	}
	if (ahead > 0) {
		/* A later round was locked, so this one completed. Rounds can be
		 * skipped, so even R or more rounds later the slot may still hold
		 * it: the header re-check tells. */
		*used = v->bsize;
		*complete = 1;
		return 0;
	}
	*used = BT_APP_BYTES(c);
	*complete = *used == v->bsize;
	if (*used > v->bsize || *used < BT_BLOCK_HDR) {
		rs->blocks_bad++;
		return -1;
	}
	if (!*complete && BT_APP_RND(a) != r) {
		/* Round r is locked but alloc is not: either its locker is still
		 * zeroing the block (alloc behind: nothing is written yet, and the
		 * bytes there are the previous round's under the new header), or
		 * a newer round was locked since conf was read (alloc ahead: the
		 * block is being overwritten). */
		if ((int32_t)(BT_APP_RND(a) - r) < 0)
			rs->blocks_busy++;
		else
			rs->blocks_lost++;
		return -1;
	}
	if (!*complete && BT_APP_BYTES(a) != *used) {
		/* Writes in flight (an open function batch, an event being
		 * written, a writer that died): what is written before the first
		 * unwritten entry. */
		uint32_t f = BT_APP_BYTES(a);

		if (f > v->bsize)
			f = v->bsize;
		f &= ~7u; /* untrusted: whole words, at least the header */
		if (f <= BT_BLOCK_HDR) {
			rs->blocks_busy++;
			return -1;
		}
		*used = *inflight = f;
	}
	return 0;
}

/* A block copied (used bytes, position pos2 re-read after the copy): 0 with
 * view filled when it may be delivered, or -1 with it counted in rs. */
static int finish(const struct bt_app_view *v, uint64_t pos, uint64_t pos2, const uint8_t *copy, uint32_t used,
		  uint32_t inflight, int complete, struct bt_app_read_stats *rs, struct bt_block_view *view)
{
	struct bt_block_hdr h;
	uint64_t n;

	if (inflight) {
		uint32_t reserved = used;

		used = written_prefix(copy, used);
		if (!used) {
			rs->blocks_busy++; /* nothing written yet, or never confirmed */
			return -1;
		}
		rs->blocks_partial += used < reserved;
	}
	/* A new owner of the slot rewrites the header before anything else,
	 * so an unchanged position means an untouched copy. */
	if (pos2 != pos) {
		rs->blocks_lost++;
		return -1;
	}
	memcpy(&h, copy, sizeof(h));
	if (h.pos != pos || h.core >= v->ncores ||
	    bt_app_check_block(copy, used, v->bsize, v->ncores, v->pid, &n) < 0) {
		rs->blocks_bad++;
		return -1;
	}
	*view = (struct bt_block_view){
		.pos = pos, .prev_pos = h.prev_pos, .core = h.core, .used = used, .complete = complete, .data = copy,
	};
	rs->blocks_read++;
	rs->entries += n;
	return 0;
}

/* The position block d claims, 0 if it claims none or one that does not
 * map back to it (counted in rs). */
static uint64_t claimed_pos(const struct bt_app_view *v, const uint8_t *data, uint32_t d, struct bt_app_read_stats *rs)
{
	uint64_t pos = load_racy64(data + (size_t)d * v->bsize), r;

	if (pos == 0) {
		rs->blocks_empty++;
		return 0;
	}
	r = pos / v->A;
	if (pos % v->A != d % v->A || r % v->R != d / v->A || r > UINT32_MAX) {
		rs->blocks_bad++;
		return 0;
	}
	return pos;
}

int bt_app_read(const struct bt_app_view *v, bt_block_cb cb, void *ctx, struct bt_app_read_stats *st)
{
	return bt_app_read_skip(v, NULL, cb, ctx, st);
}

int bt_app_read_skip(const struct bt_app_view *v, int (*skip)(uint64_t pos, void *ctx), bt_block_cb cb, void *ctx,
		     struct bt_app_read_stats *st)
{
	struct bt_app_read_stats rs = { 0 };
	struct slot *slots = malloc((size_t)v->N * sizeof(*slots));
	uint8_t *copy = malloc(v->bsize);
	size_t ns = 0;
	int ret = 0;
	if (!slots || !copy) {
		free(slots);
		free(copy);
		return -ENOMEM;
	}
	/* Where metas and blocks are, from our own geometry (never the header's). */
	uint64_t mo, co, dof;
	bt_app_shm_layout(v->bsize, v->A, v->N, v->ncores, &mo, &co, &dof);
	const struct bt_app_meta *metas = (const struct bt_app_meta *)(v->base + mo);
	const uint8_t *data = v->base + dof;
	/* Pass 1: which position each block claims, in order. */
	for (uint32_t d = 0; d < v->N; d++) {
		uint64_t pos = claimed_pos(v, data, d, &rs);
		if (pos)
			slots[ns++] = (struct slot){ pos, d };
	}
	qsort(slots, ns, sizeof(*slots), by_pos);

	/* Pass 2: copy, re-check, validate, deliver. */
	for (size_t i = 0; i < ns && !ret; i++) {
		uint64_t pos = slots[i].pos;
		uint32_t d = slots[i].d, used, inflight;
		const struct bt_app_meta *mt = &metas[pos % v->A];
		const uint8_t *src = data + (size_t)d * v->bsize;
		struct bt_block_view view;
		int complete;
		if (skip && skip(pos, ctx))
			continue;
		/* Acquire: pairs with the writers' release confirms; the bytes
		 * they confirmed are visible in the copy below. */
		uint64_t c = atomic_load_explicit(&mt->conf, memory_order_acquire);
		/* Acquire: pairs with the release store of alloc that opens a
		 * round for writing in advance() (FAAs after it continue its
		 * release sequence): seeing round r open, the copy sees the
		 * block's header and zeroing that came before. */
		uint64_t a = atomic_load_explicit(&mt->alloc, memory_order_acquire);
		if (classify(v, pos, c, a, &used, &inflight, &complete, &rs) < 0)
			continue;
		copy_racy(copy, src, used);
		/* Acquire fence: the copy's loads happen before the re-check
		 * (the reader side of the seqlock; the writers' locking CAS is
		 * acq_rel, ordering the new round's stores after it). */
		atomic_thread_fence(memory_order_acquire);
		if (finish(v, pos, load_racy64(src), copy, used, inflight, complete, &rs, &view) == 0)
			ret = cb(&view, ctx);
	}
	free(slots);
	free(copy);
	if (st)
		*st = rs;
	return ret;
}

/* ---- capture: the whole buffer copied at one moment, read later --------- */

enum { CAP_EMPTY, CAP_SKIP, CAP_COPIED, CAP_LAPPED /* taken by the writer: lost */ };

struct bt_app_cap_block {
	uint64_t pos, pos2;     /* header before and after the copy */
	uint32_t used, inflight;
	uint32_t order;         /* when the pass came to it: oldest first */
	uint8_t state, complete;
	uint8_t hole;           /* a writer lapping the copy took it */
};

#ifdef NO_TSAN_ACTIVE
#define bulk_copy copy_racy
#else
/* memcpy's loads are in no defined order: blocks with writes in flight are
 * copied again in address order (copy_racy) before they are re-checked. */
NO_TSAN static void bulk_copy(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}
#endif

/* Copy blocks m0..m1-1 of slot `slot` (consecutive) and decide what each
 * may give (see btrace_capture.c for the sequence). */
static void capture_slot(struct bt_app_capture *cap, const struct bt_app_meta *metas, const uint8_t *data,
			 uint64_t g0, uint32_t slot, uint32_t m0, uint32_t m1)
{
	const struct bt_app_view *v = &cap->v;
	uint32_t d0 = slot * v->A;
	size_t off = (size_t)(d0 + m0) * v->bsize;

	for (uint32_t m = m0; m < m1; m++) {
		struct bt_app_cap_block *b = &cap->blk[d0 + m];
		b->pos = claimed_pos(v, data, d0 + m, &cap->pre);
		b->state = b->pos ? CAP_COPIED : CAP_EMPTY;
		b->order = cap->visited++;
		b->hole = 0;
	}
	for (uint32_t m = m0; m < m1; m++) {
		struct bt_app_cap_block *b = &cap->blk[d0 + m];
		int complete;
		if (b->state != CAP_COPIED)
			continue;
		/* Acquire: pairs with the writers' release confirms and the
		 * release store of alloc that opens a round (as in
		 * bt_app_read_skip): confirmed bytes are in the copy below. */
		uint64_t c = atomic_load_explicit(&metas[m].conf, memory_order_acquire);
		uint64_t a = atomic_load_explicit(&metas[m].alloc, memory_order_acquire);
		if (classify(v, b->pos, c, a, &b->used, &b->inflight, &complete, &cap->pre) < 0)
			b->state = CAP_SKIP;
		b->complete = (uint8_t)complete;
	}
	bulk_copy(cap->data + off, data + off, (size_t)(m1 - m0) * v->bsize);
	for (uint32_t m = m0; m < m1; m++) {
		struct bt_app_cap_block *b = &cap->blk[d0 + m];
		size_t o = (size_t)(d0 + m) * v->bsize;
		if (b->state == CAP_COPIED && b->inflight)
			copy_racy(cap->data + o, data + o, b->used);
	}
	/* Acquire fence: the copy's loads happen before the re-check (the
	 * reader side of the seqlock, as in bt_app_read_skip). */
	atomic_thread_fence(memory_order_acquire);
	for (uint32_t m = m0; m < m1; m++) {
		struct bt_app_cap_block *b = &cap->blk[d0 + m];
		b->pos2 = load_racy64(data + (size_t)(d0 + m) * v->bsize);
		/* Handed out after the capture began: the block it replaced, part
		 * of the window, was overwritten before it was copied. */
		if (b->state == CAP_COPIED && b->pos >= g0) {
			b->state = CAP_LAPPED;
			cap->pre.blocks_lost++;
		}
		/* Retaken by a position handed out after the copy began (not by
		 * a writer that drew an older one before it and stored the
		 * header late: that block held the oldest round, no hole). */
		b->hole = b->state == CAP_LAPPED || (b->state == CAP_COPIED && b->pos2 != b->pos && b->pos2 >= g0);
	}
}

/* Blocks the copy could not keep in order: overwritten while copied, or
 * holding a position handed out after the copy began (the writer lapped
 * it: the older blocks it replaced are missing, a gap in the window). */
static uint64_t capture_damage(const struct bt_app_capture *cap)
{
	uint64_t n = cap->pre.blocks_lost;
	for (uint32_t d = 0; d < cap->v.N; d++) {
		const struct bt_app_cap_block *b = &cap->blk[d];
		n += b->state == CAP_COPIED && b->pos2 != b->pos;
	}
	return n;
}

/* One pass over every slot, oldest round first; the damage it took. */
static uint64_t capture_pass(struct bt_app_capture *cap, const struct bt_app_view *v, uint64_t mo, uint64_t dof)
{
	const struct bt_app_shm *sh = (const struct bt_app_shm *)v->base;
	/* Oldest position first: the one after the block being handed out
	 * (the word is the application's, untrusted: it only picks the order). */
	uint64_t g0 = atomic_load_explicit(&sh->global, memory_order_relaxed);
	const struct bt_app_meta *metas = (const struct bt_app_meta *)(v->base + mo);
	uint32_t cur = (uint32_t)(g0 / v->A % v->R), m0 = (uint32_t)(g0 % v->A);
	memset(&cap->pre, 0, sizeof(cap->pre));
	cap->visited = 0;
	/* The writer fills the current slot at meta m0: above it the slot
	 * still holds the oldest round, below it the newest. */
	capture_slot(cap, metas, v->base + dof, g0, cur, m0, v->A);
	for (uint32_t k = 1; k < v->R; k++)
		capture_slot(cap, metas, v->base + dof, g0, (cur + k) % v->R, 0, v->A);
	capture_slot(cap, metas, v->base + dof, g0, cur, 0, m0);
	return capture_damage(cap);
}

/* The writer took a block from under the copy: the blocks the pass copied
 * before it are older, an island behind a hole. A dump's window is the
 * continuous history after the last hole, so they go too, counted lost
 * (blocks with writes in flight stay: an open batch pins its block, and
 * its records are no part of the chase). */
static void drop_islands(struct bt_app_capture *cap)
{
	uint32_t last = 0;
	int holes = 0;
	for (uint32_t d = 0; d < cap->v.N; d++) {
		const struct bt_app_cap_block *b = &cap->blk[d];
		if (b->hole) {
			if (!holes || b->order > last)
				last = b->order;
			holes = 1;
		}
	}
	for (uint32_t d = 0; holes && d < cap->v.N; d++) {
		struct bt_app_cap_block *b = &cap->blk[d];
		if (b->state == CAP_COPIED && b->pos2 == b->pos && b->complete && b->order < last) {
			b->state = CAP_LAPPED;
			cap->pre.blocks_lost++;
		}
	}
}

int bt_app_capture(const struct bt_app_view *v, struct bt_app_capture *cap)
{
	uint64_t mo, co, dof;
	memset(cap, 0, sizeof(*cap));
	cap->v = *v;
	cap->v.base = NULL;
	cap->len = (size_t)v->N * v->bsize;
	/* Kept from an earlier dump when it can be (copy_pool.c: a new
	 * mapping's first writes cost 30x the copy); every byte of it is
	 * written by the passes below. */
	cap->data = bt_copy_pool_get(cap->len);
	cap->blk = calloc(v->N ? v->N : 1, sizeof(*cap->blk));
	if (!cap->data || !cap->blk) {
		bt_app_capture_release(cap);
		return -ENOMEM;
	}
	bt_app_shm_layout(v->bsize, v->A, v->N, v->ncores, &mo, &co, &dof);
	uint64_t t0 = bt_now_ns();
	/* A copy outrun by the writer (this thread preempted mid-copy on a
	 * busy machine) is taken again at once: the next pass usually runs
	 * through. At most BT_APP_CAPTURE_TRIES; the last one is kept, its
	 * damage counted like any other. */
	for (int i = 0; i < BT_APP_CAPTURE_TRIES; i++) {
		cap->tries = (uint32_t)i + 1;
		if (!capture_pass(cap, v, mo, dof))
			break;
	}
	drop_islands(cap);
	cap->copy_ns = bt_now_ns() - t0;
	return 0;
}

int bt_app_capture_read(const struct bt_app_capture *cap, bt_block_cb cb, void *ctx, struct bt_app_read_stats *st)
{
	const struct bt_app_view *v = &cap->v;
	struct bt_app_read_stats rs = cap->pre;
	struct slot *slots = malloc((size_t)v->N * sizeof(*slots));
	size_t ns = 0;
	int ret = 0;
	if (!slots)
		return -ENOMEM;
	for (uint32_t d = 0; d < v->N; d++)
		if (cap->blk[d].state == CAP_COPIED)
			slots[ns++] = (struct slot){ cap->blk[d].pos, d };
	qsort(slots, ns, sizeof(*slots), by_pos);
	for (size_t i = 0; i < ns && !ret; i++) {
		const struct bt_app_cap_block *b = &cap->blk[slots[i].d];
		struct bt_block_view view;
		if (finish(v, b->pos, b->pos2, cap->data + (size_t)slots[i].d * v->bsize, b->used, b->inflight,
			   b->complete, &rs, &view) == 0)
			ret = cb(&view, ctx);
	}
	free(slots);
	if (st)
		*st = rs;
	return ret;
}

void bt_app_capture_release(struct bt_app_capture *cap)
{
	bt_copy_pool_put(cap->data, cap->len);
	free(cap->blk);
	memset(cap, 0, sizeof(*cap));
}
