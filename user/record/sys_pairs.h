/* SPDX-License-Identifier: MIT */
/*
 * sys_pairs.h - the user side of deferred sys_enter events (bpf/emit.bpf.h):
 * a BT_RAW_SYS_PAIR record split back into its two events, and the enters
 * still held in the per-CPU slots read from the map, so a dump or the last
 * pass has them. An enter stored from its slot is remembered per CPU: when
 * the kernel later emits it (in a pair, or flushed alone), it is not stored
 * twice.
 */
#ifndef BTRACE_SYS_PAIRS_H
#define BTRACE_SYS_PAIRS_H

#include <stdbool.h>
#include <stdint.h>
#include "events.h"

/* The enter and the exit a pair record stands for. */
void bt_sys_pair_split(const struct bt_raw_sys_pair *p, struct bt_ev_syscall *enter, struct bt_ev_syscall *exit);

/* Enters stored from the slots and not yet seen in the ring: the last
 * BT_SYS_LANDED_MAX of each CPU of a drain's range. More than one: an enter
 * stored for one dump may still be on its way through the ring when the
 * next dump stores its CPU's next one. */
#define BT_SYS_LANDED_MAX 4
struct bt_sys_landed {
	uint32_t first, count;
	struct {
		uint32_t seq[BT_SYS_LANDED_MAX], tid[BT_SYS_LANDED_MAX];
		bool valid[BT_SYS_LANDED_MAX];
		uint32_t next; /* the slot the next one takes (the oldest) */
	} *cpu;
};

int bt_sys_landed_init(struct bt_sys_landed *l, uint32_t first, uint32_t count);
void bt_sys_landed_free(struct bt_sys_landed *l);

/* Whether this sys_enter from the ring was stored from its slot already
 * (then forgotten: the kernel emits an enter once). */
bool bt_sys_landed_dup(struct bt_sys_landed *l, const struct bt_event_hdr *enter);

/* The enters held in the slots of the range's CPUs and not stored yet, from
 * the cpu_state map (ncpus values): at most l->count into out, each
 * remembered as stored. A slot the kernel was rewriting while it was read
 * (two reads differ) is skipped: its enter comes through the ring. The
 * number, or -errno. */
int bt_sys_held_enters(struct bt_sys_landed *l, int cpu_state_fd, uint32_t ncpus, struct bt_ev_syscall *out);

#endif
