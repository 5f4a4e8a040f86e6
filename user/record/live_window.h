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

struct bt_live *bt_live_new(uint32_t ncpus);
void bt_live_free(struct bt_live *lv);
/* Drain thread: n events of cpu are now in the buffer (write order). */
void bt_live_add(struct bt_live *lv, uint32_t cpu, const uint32_t *seq, const uint64_t *ts, uint32_t n);
/* Drain thread, after each pass: the buffer's blocks_used and nblocks. */
void bt_live_pass(struct bt_live *lv, uint64_t blocks_used, uint64_t nblocks);
/* Any thread: the window given the buffer's blocks_used and nblocks now.
 * w->dups is 0 (not tracked). */
void bt_live_window(struct bt_live *lv, uint64_t blocks_used, uint64_t nblocks, struct bt_seq_window *w);
#endif
