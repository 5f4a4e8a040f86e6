// SPDX-License-Identifier: MIT
/*
 * btrace_follow.c - a follower's read (bt_read_follow): the positions from
 * where it stopped last, in order, each block found through the layout
 * rather than by scanning every header, and copied once, to where the
 * follower keeps it.
 *
 * The cold tier's compressor reads this way, every few milliseconds in an
 * event storm. Through bt_read_range a pass loaded every block's header (a
 * cache miss each: 8192 at 32 MiB), sorted them, and copied each block
 * twice (its validated copy, then into the group being compressed). At a
 * million events a second into 32 MiB that was about 60% of the compressor
 * thread's CPU, paid out of the budget meant for compression (issue 40).
 *
 *   g = global                        seq_cst, after the reader's epoch
 *   for p in [from, min(to, handed)):
 *       d = layout(gen).order[round(p) - base] * A + p % A
 *       copy d into dst() and validate (bt_read_block_: header pos == p)
 *       complete: to cb       active: busy       not p: coming or gone?
 *
 * A position not at its block was never published (its writer may be
 * preempted between taking it and publishing: first_unpublished, as
 * bt_read_range's rule), or was overwritten or skipped (its meta went past
 * its round): gone. Positions of an older layout (a resize since `from`)
 * map differently: that pass falls back to bt_read_range.
 */
#include "btrace_buffer_int.h"

int bt_read_follow(struct bt_buffer *b, uint64_t from, uint64_t to, bt_follow_dst dst, bt_block_cb cb, void *ctx,
		   struct bt_read_stats *st)
{
	struct bt_read_stats local = { 0 };
	struct bt_layout *l;
	uint64_t g, base, handed, end, half, cap;
	uint32_t n, slot = 0;
	uint64_t slot_round = UINT64_MAX;
	int ri, ret = 0;

	ri = bt_read_begin_(b, &st, &local);
	if (ri < 0)
		return ri;
	/* Seq_cst: after our epoch announcement (see bt_reader_enter_()). */
	g = atomic_load_explicit(&b->global, memory_order_seq_cst);
	l = &b->layouts[GGEN(g) % NLAYOUTS];
	base = atomic_load_explicit(&l->base_round, memory_order_relaxed);
	n = atomic_load_explicit(&l->nslots, memory_order_relaxed);
	handed = GPOS(g);
	cap = (uint64_t)n * b->A;
	/* Older than a whole buffer before `handed`: overwritten, or skipped. */
	if (from < b->first_pos)
		from = b->first_pos;
	if (handed > cap && from < handed - cap)
		from = handed - cap;
	if (n == 0 || n > b->max_slots || from / b->A < base) {
		bt_reader_exit_(b, ri);
		return bt_read_range(b, from, BT_READ_COMPLETE, cb, ctx, st);
	}
	end = to < handed ? to : handed;
	half = handed > cap / 2 ? handed - cap / 2 : 0; /* older: let go (bt_read_range) */

	for (uint64_t p = from; p < end; p++) {
		uint64_t round = p / b->A;
		struct bt_block_view v;
		enum bt_read_result rr;

		if (round != slot_round) {
			slot = atomic_load_explicit(&l->order[(round - base) % n], memory_order_relaxed);
			slot_round = round;
		}
		/* A layout rewritten under us (four resizes during one pass)
		 * names garbage; the header check catches a wrong block, not
		 * one beyond the reserved slots. Wait here for the next pass. */
		if (slot >= b->max_slots) {
			if (p < st->first_unpublished)
				st->first_unpublished = p;
			break;
		}
		rr = bt_read_block_(b, slot * b->A + (uint32_t)(p % b->A), p, dst(ctx), &v);
		if (rr == BT_READ_OK && !v.complete)
			rr = BT_READ_BUSY;
		if (rr == BT_READ_BUSY) {
			st->blocks_busy++;
			if (p < st->first_busy)
				st->first_busy = p;
			continue;
		}
		if (rr == BT_READ_LOST) {
			/* Acquire: pairs with the conf CAS in lock_position(); a
			 * round past p's was taken after p's writer gave p up. */
			uint64_t cf = atomic_load_explicit(&b->meta[p % b->A].conf, memory_order_acquire);

			if (p >= half && !rnd_before((uint32_t)round, RND(cf)) && p < st->first_unpublished)
				st->first_unpublished = p;
			continue;
		}
		st->blocks_read++;
		ret = cb(&v, ctx);
		if (ret)
			break;
	}
	bt_reader_exit_(b, ri);
	return ret;
}
