/* SPDX-License-Identifier: MIT */
/*
 * switch_chain.h - events missing without a sequence gap, found from the
 * sched_switch chain: on a CPU, a switch's prev is the previous switch's
 * next. A break with no seq gap of that CPU between the two switches is a
 * switch the kernel never reported to any tracer (perf sees the same: a
 * kernel that hides some tasks from tracing, e.g. a VM's guest agent), or
 * one whose program run the kernel skipped (counted in the dump's program
 * table). report --stats shows both, so the loss is never silent.
 */
#ifndef BTRACE_SWITCH_CHAIN_H
#define BTRACE_SWITCH_CHAIN_H
#include <stddef.h>
#include <stdint.h>
#include "dump.h"

#define BT_CHAIN_TIDS 8
struct bt_switch_chain {
	uint64_t switches;    /* sched_switch events checked */
	uint64_t breaks;      /* prev != the previous switch's next, on the same CPU */
	uint64_t unexplained; /* of those, with no seq gap of the CPU in between */
	uint32_t tids[BT_CHAIN_TIDS]; /* threads whose switch-away went unreported (first ones) */
	size_t ntids;
};

/* ev: time-ordered events (bt_dump_events). 0 or -ENOMEM. */
int bt_switch_chain(const struct bt_dump_event *ev, size_t n, uint32_t ncpus, struct bt_switch_chain *out);
#endif
