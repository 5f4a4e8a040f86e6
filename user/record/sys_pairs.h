/* SPDX-License-Identifier: MIT */
/*
 * sys_pairs.h - the user side of deferred sys_enter events (bpf/emit.bpf.h):
 * a BT_RAW_SYS_PAIR record split back into its two events, and the enters
 * still held in the per-CPU slots, read from the map so a dump or the last
 * pass has the calls in progress.
 *
 * Landing an enter takes three steps, so it is stored in its CPU's order:
 *   1. bt_sys_held_read(): the slots are read; their enters become
 *      candidates (not stored);
 *   2. the drain consumes the rings again: every event its CPU emitted
 *      before the read is now stored, and a candidate whose ring copy comes
 *      in this pass is stored from the ring (bt_sys_landed_dup() says
 *      "store it" and drops the candidate);
 *   3. bt_sys_held_take(): the candidates left are stored, and remembered:
 *      the kernel's later copy of such an enter (in a pair, or flushed
 *      alone) is a duplicate.
 * Landed after step 1 alone, an enter would overtake the events its CPU
 * emitted while the rings were being consumed: a false seq gap.
 */
#ifndef BTRACE_SYS_PAIRS_H
#define BTRACE_SYS_PAIRS_H

#include <stdbool.h>
#include <stdint.h>
#include "events.h"

/* The enter and the exit a pair record stands for (inline: the drain
 * splits every pair it reads). */
static inline void bt_sys_pair_split(const struct bt_raw_sys_pair *p, struct bt_ev_syscall *enter,
				     struct bt_ev_syscall *exit)
{
	enter->h = p->h;
	enter->h.type = BT_EV_SYS_ENTER;
	enter->h.ts_ns = p->enter_ts;
	enter->h.seq = p->enter_seq;
	enter->id = p->enter_id;
	enter->ret = 0;
	exit->h = p->h;
	exit->h.type = BT_EV_SYS_EXIT;
	exit->id = p->id;
	exit->ret = p->ret;
}

/* Per CPU of a drain's range, the last BT_SYS_LANDED_MAX enters read from
 * its slot whose ring copy has not come yet. More than one: an enter stored
 * for one dump may still be on its way through the ring when the next dump
 * stores that CPU's next one. */
#define BT_SYS_LANDED_MAX 4
enum { BT_LANDED_FREE = 0, BT_LANDED_CANDIDATE, BT_LANDED_STORED };
struct bt_sys_landed {
	uint32_t first, count;
	struct {
		struct bt_ev_syscall ev[BT_SYS_LANDED_MAX];
		uint8_t state[BT_SYS_LANDED_MAX];
		uint32_t next; /* the entry the next one takes (the oldest) */
		uint32_t live; /* entries not free: none, and a ring's enter is no duplicate */
	} *cpu;
};

int bt_sys_landed_init(struct bt_sys_landed *l, uint32_t first, uint32_t count);
void bt_sys_landed_free(struct bt_sys_landed *l);

/* Step 1: the enters held in the slots of the range's CPUs (from the
 * cpu_state map, ncpus values) become candidates, unless already known. A
 * slot the kernel was rewriting while it was read (two reads differ) is
 * skipped: its enter comes through the ring. The number of candidates, or
 * -errno. */
int bt_sys_held_read(struct bt_sys_landed *l, int cpu_state_fd, uint32_t ncpus);

/* For a sys_enter coming from the ring: true if it was stored from its slot
 * already (a duplicate: drop it). A candidate is forgotten and the ring's
 * copy stored instead. Inline the common case, on every pair the drain
 * reads: nothing landed on the enter's CPU. */
bool bt_sys_landed_dup_(struct bt_sys_landed *l, const struct bt_event_hdr *enter);
static inline bool bt_sys_landed_dup(struct bt_sys_landed *l, const struct bt_event_hdr *enter)
{
	uint32_t i = enter->cpu - l->first;

	if (!l->cpu || enter->cpu < l->first || i >= l->count || !l->cpu[i].live)
		return false;
	return bt_sys_landed_dup_(l, enter);
}

/* Step 3: the candidates left, at most l->count into out, now remembered
 * as stored. The number. */
int bt_sys_held_take(struct bt_sys_landed *l, struct bt_ev_syscall *out);

#endif
