/* SPDX-License-Identifier: MIT */
/* task_list.h - the threads a dump names: tid -> (tgid, comm), sorted by
 * tid. The recorder's live table (record/tasks.h) hands out this form. */
#ifndef BTRACE_TASK_LIST_H
#define BTRACE_TASK_LIST_H
#include <stddef.h>
#include <stdint.h>

#define BT_TASK_COMM_LEN 16

struct bt_task {
	uint32_t tid;
	uint32_t tgid;
	uint64_t exit_ts; /* event time the task exited, 0 while alive */
	char comm[BT_TASK_COMM_LEN];
};

/* Lookup in a sorted snapshot array; NULL if absent. */
const struct bt_task *bt_tasks_find(const struct bt_task *arr, size_t n, uint32_t tid);
#endif
