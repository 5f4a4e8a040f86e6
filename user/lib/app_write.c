// SPDX-License-Identifier: MIT
/*
 * app_write.c - the writer side of an application's shared block buffer
 * (layout and algorithm: app_shm.h), shared by the events of btrace.h
 * (btrace_app.c) and the function records (btrace_funcs.c): the buffer
 * writers use, each thread's state, and the reservation of entries.
 */
#include "app_write.h"

#include <errno.h>
#include <string.h>

_Atomic(struct app_buf *) btrace_buf_; /* NULL: not attached */
__thread struct tstate btrace_tls_ __attribute__((tls_model("initial-exec")));

static inline BT_NOINSTR uint8_t *block_at(const struct app_buf *b, uint32_t rnd, uint32_t m)
{
	uint32_t slot = b->rmask ? rnd & b->rmask : rnd % b->R;
	return b->data + ((size_t)slot * b->A + m) * b->bsize;
}

static inline BT_NOINSTR void put_pad(uint8_t *p, uint32_t len)
{
	put_hdr(p, len, BT_ENTRY_PAD);
}

/* Confirm len bytes of the meta's current round. Release: the bytes written
 * before it are visible to whoever sees the count (the reader's acquire load
 * of conf, the next round's locking CAS). */
/* Take a new block for `core`, replacing the core word `old`. 0, or -EAGAIN
 * when every position tried was held by a lagging writer. */
static BT_NOINSTR int advance(struct app_buf *b, uint32_t core, uint64_t old)
{
	struct bt_app_shm *s = b->shm;
	for (uint32_t tries = 0; tries < 2 * b->A; tries++) {
		uint64_t p = atomic_fetch_add_explicit(&s->global, 1, memory_order_relaxed);
		uint32_t r = (uint32_t)(p / b->A), m = (uint32_t)(p % b->A);
		struct bt_app_meta *mt = &b->meta[m];
		/* Acquire: pairs with the release confirms of the round's writers. */
		uint64_t c = atomic_load_explicit(&mt->conf, memory_order_acquire);
		if (BT_APP_BYTES(c) < b->bsize && (int32_t)(BT_APP_RND(c) - r) < 0) {
			/* Block closing: the block A positions back is still open;
			 * close it so at most A blocks are being written. */
			uint64_t a = atomic_load_explicit(&mt->alloc, memory_order_relaxed);
			if (BT_APP_RND(a) == BT_APP_RND(c) && BT_APP_BYTES(a) < b->bsize) {
				/* Acquire: as in reserve(). Whoever moves alloc owns
				 * the bytes it moved over, in whatever round alloc is
				 * now (the round may have completed and a newer one
				 * been locked since the load above): pad them, or
				 * that round could never complete. */
				a = atomic_fetch_add_explicit(&mt->alloc, b->bsize, memory_order_acquire);
				if (BT_APP_BYTES(a) < b->bsize) {
					put_pad(block_at(b, BT_APP_RND(a), m) + BT_APP_BYTES(a),
						b->bsize - BT_APP_BYTES(a));
					btrace_confirm_(mt, b->bsize - BT_APP_BYTES(a));
				}
			}
			c = atomic_load_explicit(&mt->conf, memory_order_acquire);
		}
		if (BT_APP_BYTES(c) != b->bsize || (int32_t)(BT_APP_RND(c) - r) >= 0) {
			/* A writer is still in the block (skip it; it is reused in
			 * a later round), or a stale position. */
			atomic_fetch_add_explicit(&s->stats.skipped, 1, memory_order_relaxed);
			continue;
		}
		/* Lock round r. acq_rel: acquire orders the header stores below
		 * after it (a reader that sees them sees the new conf round);
		 * release publishes nothing but keeps the RMW chain simple. */
		if (!atomic_compare_exchange_strong_explicit(&mt->conf, &c, BT_APP_RP(r, BT_BLOCK_HDR),
							     memory_order_acq_rel, memory_order_relaxed))
			continue;
		struct bt_block_hdr *h = (struct bt_block_hdr *)block_at(b, r, m);
		h->pos = p;
		/* Release fence: pairs with the reader's acquire fence before its
		 * position re-check (app_reader.c); a copy that saw anything
		 * stored below (the rest of the header included) sees the new
		 * position. */
		atomic_thread_fence(memory_order_release);
		h->prev_pos = old ? (uint64_t)BT_APP_RND(old) * b->A + (uint32_t)old : BT_NO_POS;
		h->core = core;
		h->flags = 0;
		/* Zero the entries: a reader walking a block with writes in
		 * flight stops at the first entry header still zero (see
		 * app_reader.c), never at an older round's bytes. */
		memset((uint8_t *)h + BT_BLOCK_HDR, 0, b->bsize - BT_BLOCK_HDR);
		/* Release: pairs with the acquire FAA on alloc in
		 * btrace_reserve_() (a writer whose bytes are in round r stores
		 * after the zeros) and with the reader's acquire load of alloc
		 * (app_reader.c: seeing round r open, it sees the zeros). */
		atomic_store_explicit(&mt->alloc, BT_APP_RP(r, BT_BLOCK_HDR), memory_order_release);
		uint64_t want = BT_APP_RP(r, m), cur = old;
		/* Release: pairs with the acquire load of the core word in
		 * btrace_reserve_(). */
		if (atomic_compare_exchange_strong_explicit(&b->cores[core].cur, &cur, want, memory_order_release,
							     memory_order_relaxed))
			return 0;
		/* Another thread of this CPU published a block first: give ours
		 * back as padding so its round completes. */
		uint64_t a = atomic_fetch_add_explicit(&mt->alloc, b->bsize, memory_order_acquire);
		if (BT_APP_BYTES(a) < b->bsize) {
			/* As for closing: a closer may have completed round r
			 * and a newer round been locked; pad what we moved over
			 * in whatever round it is. */
			put_pad(block_at(b, BT_APP_RND(a), m) + BT_APP_BYTES(a), b->bsize - BT_APP_BYTES(a));
			btrace_confirm_(mt, b->bsize - BT_APP_BYTES(a));
		}
		atomic_fetch_add_explicit(&s->stats.races, 1, memory_order_relaxed);
		return 0;
	}
	return -EAGAIN;
}

/* Reserve between min and max bytes for core (as much of max as the block
 * has room for); returns the entry, its meta and its length, or NULL. */
uint8_t *btrace_reserve_(struct app_buf *b, uint32_t core, uint32_t min, uint32_t max, uint32_t *lenp,
			 struct bt_app_meta **mtp)
{
	for (int attempt = 0; attempt < 64; attempt++) {
		/* Acquire: pairs with the release CAS publishing the block in advance(). */
		uint64_t cw = atomic_load_explicit(&b->cores[core].cur, memory_order_acquire);
		if (cw) {
			uint32_t r = BT_APP_RND(cw), m = (uint32_t)cw;
			struct bt_app_meta *mt = &b->meta[m];
			/* Acquire: pairs with the release store of alloc when the
			 * round was locked, so the block header written then
			 * happens-before our confirm, and our confirm (release)
			 * carries it to whoever locks the block's next round. */
			uint64_t a = atomic_fetch_add_explicit(&mt->alloc, max, memory_order_acquire);
			uint32_t ar = BT_APP_RND(a), off = BT_APP_BYTES(a);
			if (ar == r && off + min <= b->bsize) {
				/* Ours up to max, or to the block's end if alloc
				 * moved past it (nobody else gets those bytes). */
				*lenp = off + max <= b->bsize ? max : b->bsize - off;
				*mtp = mt;
				return block_at(b, r, m) + off;
			}
			if (off < b->bsize) {
				/* We own [off, end) of round ar's block: the tail of a
				 * block we overflowed, or a slice of a newer round
				 * reached through a stale core word. Pad it so the
				 * round can complete. */
				uint32_t pad = ar == r ? b->bsize - off : (max < b->bsize - off ? max : b->bsize - off);
				put_pad(block_at(b, ar, m) + off, pad);
				btrace_confirm_(mt, pad);
			}
			if (atomic_load_explicit(&b->cores[core].cur, memory_order_relaxed) != cw)
				continue; /* another thread of this CPU already moved on */
		}
		if (advance(b, core, cw) < 0)
			break;
	}
	atomic_fetch_add_explicit(&b->shm->stats.dropped, 1, memory_order_relaxed);
	return NULL;
}

