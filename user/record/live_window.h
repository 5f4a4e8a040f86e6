/* SPDX-License-Identifier: MIT */
/*
 * live_window.h - the latest continuous window of a live buffer (for `ctl
 * status`), kept incrementally by the drain instead of read out of the
 * buffer: a status costs microseconds whatever the buffer size.
 *
 * The drain reports every event it stored (CPU, seq, time, in write order)
 * and, after each pass, the buffer's position clock (blocks taken so far).
 * Per CPU the tracker keeps the seq gaps it saw (a few events of slack for
 * nested programs, whose seqs reach the ring slightly out of order) and
 * checkpoints (position, time, seq, events so far). The buffer overwrites in
 * position order, so what it still holds of a CPU starts at the first
 * checkpoint taken after position (blocks taken - blocks); the window is then
 * computed with the same definition as a dump's report (dump.h), to within
 * one checkpoint (a drain pass; coarser for windows of hours).
 */
#ifndef BTRACE_LIVE_WINDOW_H
#define BTRACE_LIVE_WINDOW_H
#include <stdint.h>
#include "dump.h"

struct bt_live;

/* Events of one CPU with consecutive seqs, in write order: how the drain
 * reports a batch (one run for most batches, not a record per event). */
struct bt_live_run {
	uint32_t seq;    /* the first's */
	uint32_t n;
	uint64_t ts;     /* the first's time */
	uint64_t max_ts; /* the latest of their times */
	uint32_t overtaking; /* 1: events that may overtake their CPU's held
			      * system-call pairs (drain.c: overtakes) */
};

/* One more event of a batch: the last of the runs so far (nruns of them,
 * room for one more) grows, or a run starts. */
static inline void bt_live_run_take(struct bt_live_run *runs, uint32_t *nruns, uint32_t seq, uint64_t ts,
				    uint32_t overtaking)
{
	struct bt_live_run *r = *nruns ? &runs[*nruns - 1] : NULL;

	if (r && seq == r->seq + r->n && overtaking == r->overtaking) {
		r->n++;
		if (ts > r->max_ts)
			r->max_ts = ts;
		return;
	}
	runs[(*nruns)++] = (struct bt_live_run){ seq, 1, ts, ts, overtaking };
}

struct bt_live *bt_live_new(uint32_t ncpus);
void bt_live_free(struct bt_live *lv);
/* Drain thread: these runs of cpu's events are now in the buffer. */
void bt_live_add(struct bt_live *lv, uint32_t cpu, const struct bt_live_run *runs, uint32_t nruns);
/* Drain thread, after each pass: the buffer's blocks_used and nblocks. */
void bt_live_pass(struct bt_live *lv, uint64_t blocks_used, uint64_t nblocks);
/* Any thread: the window given the buffer's blocks_used and nblocks now.
 * w->dups is 0 (not tracked). */
void bt_live_window(struct bt_live *lv, uint64_t blocks_used, uint64_t nblocks, struct bt_seq_window *w);
#endif
