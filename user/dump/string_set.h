/* SPDX-License-Identifier: MIT */
/*
 * string_set.h - strings stored once each in one growing table of
 * NUL-terminated strings, named by their offsets (a dump section's string
 * table; the symbolizer's copy of the source files and functions it found).
 */
#ifndef BTRACE_STRING_SET_H
#define BTRACE_STRING_SET_H
#include <stddef.h>
#include <stdint.h>

#define BT_STRSET_NONE UINT32_MAX /* the offset of NULL */

struct bt_strset {
	char *p; /* the table: len bytes */
	size_t len, cap;
	uint32_t *slot; /* 1 + offset, open addressing */
	size_t nslots, n;
	int err; /* the first failure (-ENOMEM, -E2BIG): adds then do nothing */
};

/* The offset of s in the table, added if new; BT_STRSET_NONE for NULL, 0
 * once t->err is set. */
uint32_t bt_strset_add(struct bt_strset *t, const char *s);
/* Frees what t holds but the table itself if keep_table (the caller then
 * owns t->p). */
void bt_strset_release(struct bt_strset *t, int keep_table);
#endif
