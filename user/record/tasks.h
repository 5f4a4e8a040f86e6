/* SPDX-License-Identifier: MIT */
/*
 * tasks.h - tid -> (tgid, comm) table kept outside the overwritten buffer, so a
 * dump names every thread that appears in it. Seeded from /proc at start and
 * updated from fork/exec/rename/exit events by the drain thread. Thread-safe:
 * the drain thread updates while a dump thread snapshots.
 */
#ifndef BTRACE_TASKS_H
#define BTRACE_TASKS_H
#include <stddef.h>
#include <stdint.h>
#include "task_list.h"

struct bt_task_table;
struct bt_event_hdr;

struct bt_task_table *bt_tasks_new(void);
void bt_tasks_free(struct bt_task_table *t);
/* Read every thread in /proc/<pid>/task/<tid>/comm. Returns tasks added or -errno. */
int bt_tasks_seed_proc(struct bt_task_table *t);
/* Insert or replace one task. */
void bt_tasks_set(struct bt_task_table *t, uint32_t tid, uint32_t tgid, const char *comm);
/* Apply an event (fork, exec, rename, exit change the table; others are ignored). */
void bt_tasks_apply(struct bt_task_table *t, const struct bt_event_hdr *ev, uint32_t len);
/* Copy of the table (malloc'd array, caller frees), sorted by tid. */
int bt_tasks_snapshot(struct bt_task_table *t, struct bt_task **out, size_t *n);
#endif
