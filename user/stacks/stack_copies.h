/* SPDX-License-Identifier: MIT */
/*
 * stack_copies.h - the recorder's pending user stack copies: where the BPF
 * walk stopped at a binary whose table was not built yet (a process's
 * first instants), the BPF side sends a bounded copy of the stack
 * (bpf/stack_copy.bpf.h); it waits here until the tables it needs are
 * published, is walked on (stack_copy_walk.h) and its stack in the stack
 * table gets its remaining frames (bt_stack_table_finish): each copy names
 * a stack of its own, so finishing one changes no other event's stack.
 * Bounded: BT_STACK_COPIES_MEM bytes held (past it the oldest copies
 * are dropped, counted: the newest are what a dump is asked for); a copy whose table has not come in BT_STACK_COPY_WAIT_NS is
 * walked as far as the tables go. Every copy ends in one counter.
 * Drain thread, except bt_stack_copies_counts.
 */
#ifndef BTRACE_STACK_COPIES_H
#define BTRACE_STACK_COPIES_H
#include <stdint.h>
#include "stack_copy_walk.h"
#include "stack_table.h"

#define BT_STACK_COPIES_MEM (16u << 20)      /* ~1,300 copies of 12 KiB at most */
#define BT_STACK_COPY_WAIT_NS (40ull * 1000000000ull) /* a table's build gives up after 30 s */

struct bt_stack_copy_counts {
	uint64_t received; /* copies that came */
	uint64_t done;     /* stacks walked on from their copy to the outermost frame */
	uint64_t cut;      /* ... walked on, and cut again (their stack says why) */
	uint64_t waiting;  /* copies waiting for a table now */
	uint64_t mem;      /* dropped, the oldest first: BT_STACK_COPIES_MEM reached */
	uint64_t expired;  /* walked after BT_STACK_COPY_WAIT_NS without every table */
	uint64_t gone;     /* their stack had left the table (reclaimed) or was cut by the recorder */
	uint64_t bad;      /* malformed records */
};

struct bt_stack_copies;
/* tb: where tables are looked up (copied). NULL with errno. */
struct bt_stack_copies *bt_stack_copies_new(const struct bt_copy_tables *tb);
void bt_stack_copies_free(struct bt_stack_copies *s);
/* A BT_RAW_STACK_COPY record of len bytes, after its stack's definition. */
void bt_stack_copies_add(struct bt_stack_copies *s, const void *rec, uint32_t len);
/* After a drain pass: the copies whose tables are in finish their stacks in
 * t. At most every 50 ms unless now (a dump's flush). */
void bt_stack_copies_pass(struct bt_stack_copies *s, struct bt_stack_table *t, int now);
/* Any thread. NULL-safe (zeros). */
void bt_stack_copies_counts(struct bt_stack_copies *s, struct bt_stack_copy_counts *c);
#endif
