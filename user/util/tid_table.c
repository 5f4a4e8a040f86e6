// SPDX-License-Identifier: MIT
/*
 * tid_table.c - per-thread records keyed by tid (see tid_table.h): linear
 * probing, grown to keep it at most half full.
 */
#include <stdlib.h>
#include <string.h>
#include "hash_mix.h"
#include "tid_table.h"

static uint32_t tid_at(const unsigned char *rec, size_t elem, size_t i)
{
	uint32_t tid;

	memcpy(&tid, rec + i * elem, sizeof(tid));
	return tid;
}

static size_t find(const unsigned char *rec, size_t elem, size_t cap, uint32_t tid)
{
	size_t k = (size_t)bt_u64_mix(tid) & (cap - 1);
	uint32_t at;

	while ((at = tid_at(rec, elem, k)) && at != tid)
		k = (k + 1) & (cap - 1);
	return k;
}

void *bt_tid_table_get(struct bt_tid_table *t, uint32_t tid, int *fresh)
{
	if (fresh)
		*fresh = 0;
	if (2 * (t->n + 1) > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		unsigned char *g = calloc(cap, t->elem);
		if (!g)
			return NULL;
		for (size_t i = 0; i < t->cap; i++) {
			uint32_t at = tid_at(t->rec, t->elem, i);
			if (at)
				memcpy(g + find(g, t->elem, cap, at) * t->elem, t->rec + i * t->elem, t->elem);
		}
		free(t->rec);
		t->rec = g;
		t->cap = cap;
	}
	size_t k = find(t->rec, t->elem, t->cap, tid);
	unsigned char *r = t->rec + k * t->elem;
	if (!tid_at(t->rec, t->elem, k)) {
		memcpy(r, &tid, sizeof(tid));
		t->n++;
		if (fresh)
			*fresh = 1;
	}
	return r;
}

void *bt_tid_table_slot(const struct bt_tid_table *t, size_t i)
{
	return tid_at(t->rec, t->elem, i) ? t->rec + i * t->elem : NULL;
}

void bt_tid_table_free(struct bt_tid_table *t)
{
	free(t->rec);
	t->rec = NULL;
	t->cap = t->n = 0;
}
