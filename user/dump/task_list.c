// SPDX-License-Identifier: MIT
/* task_list.c - lookup in a dump's sorted task list (see task_list.h). */
#include "task_list.h"

const struct bt_task *bt_tasks_find(const struct bt_task *arr, size_t n, uint32_t tid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (arr[mid].tid == tid)
			return &arr[mid];
		if (arr[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
