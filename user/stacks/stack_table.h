/* SPDX-License-Identifier: MIT */
/*
 * stack_table.h - the recorder's call-stack table: 64-bit stack hashes from
 * the BPF side (bpf/record_stacks.bpf.h) -> small ids the stored events
 * carry, and each stack's frames, user frames already turned into (file,
 * offset) at record time (mapping_capture.h). Bounded by --max-stacks; a
 * stack met when the table is full is counted and its events say
 * BT_STACK_LOST. Lives outside the block buffer (like the task table) and
 * goes whole into every dump (section STCK, stack_symbols.h).
 *
 * The drain thread adds; a dump copies a consistent prefix under the lock.
 * Stacks are never removed nor changed once defined, so the copy holds
 * pointers to their frames, valid until bt_stack_table_free().
 */
#ifndef BTRACE_STACK_TABLE_H
#define BTRACE_STACK_TABLE_H
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "events.h"
#include "dump_stacks.h"

#define BT_DEFAULT_MAX_STACKS 16384u

struct bt_stack_table;
struct bt_stack_table *bt_stack_table_new(uint32_t max_stacks);
void bt_stack_table_free(struct bt_stack_table *t);

/* Drain thread. The id of a hash (BT_HASH_NONE -> 0, BT_HASH_LOST ->
 * BT_STACK_LOST); a hash seen for the first time gets an id now and its
 * frames when its definition arrives (rings are drained one CPU after the
 * other: another CPU's definition may come later in the same pass). */
uint32_t bt_stack_table_ref(struct bt_stack_table *t, uint64_t hash);
/* A BT_RAW_STACK_DEF record of len bytes. */
void bt_stack_table_define(struct bt_stack_table *t, const struct bt_raw_stack_def *d, uint32_t len);
/* Lifecycle events: exec and exit make a process's mappings stale. */
void bt_stack_table_task_event(struct bt_stack_table *t, const struct bt_event_hdr *h);

/* Any thread: copy of the table for a dump (s zeroed by the caller; free
 * with bt_stack_snapshot_free). The kernel-side counters are the caller's
 * to fill (BT_STKC_KERNEL_ERR...). 0 or -ENOMEM. */
int bt_stack_table_snapshot(struct bt_stack_table *t, struct bt_dump_stacks *s);
void bt_stack_snapshot_free(struct bt_dump_stacks *s);
/* The open descriptor of mapped file `map` (a frame's map id), -1 if none;
 * owned by the table. */
int bt_stack_table_map_fd(struct bt_stack_table *t, uint32_t map);
/* Stacks in the table, references that found it full (for ctl status). */
void bt_stack_table_counts(struct bt_stack_table *t, uint64_t *nstacks, uint64_t *overflow);
/* Mapped files in the table (map ids 1..n). */
size_t bt_stack_table_nmaps(struct bt_stack_table *t);
/* Map id map into m (its path copied into path), with a duplicate of its
 * descriptor in *fd (-1: kept by path only; the caller closes it). 0, or
 * -ENOENT for no such map id. */
int bt_stack_table_map_copy(struct bt_stack_table *t, uint32_t map, struct bt_dump_map *m, char *path, size_t pathlen,
			    int *fd);
#endif
