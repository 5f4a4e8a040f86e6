/* SPDX-License-Identifier: MIT */
/*
 * tid_table.h - per-thread records keyed by tid (never 0), open addressing:
 * the per-thread state of every pass over a stream of events (function
 * calls, app-func watches). A record's first member is its uint32_t tid;
 * records are elem bytes each, zeroed when new, and move when the table
 * grows: a pointer to one lives until the next bt_tid_table_get.
 */
#ifndef BTRACE_TID_TABLE_H
#define BTRACE_TID_TABLE_H
#include <stddef.h>
#include <stdint.h>

struct bt_tid_table {
	unsigned char *rec;
	size_t elem, cap, n;
};

#define BT_TID_TABLE_INIT(type) { .elem = sizeof(type) }

/* The record of tid, added (zeroed, its tid set, *fresh = 1) if new; NULL
 * out of memory. fresh may be NULL. */
void *bt_tid_table_get(struct bt_tid_table *t, uint32_t tid, int *fresh);
/* Slot i (< t->cap) when it holds a record, else NULL: for walking all. */
void *bt_tid_table_slot(const struct bt_tid_table *t, size_t i);
void bt_tid_table_free(struct bt_tid_table *t);
#endif
