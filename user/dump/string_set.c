// SPDX-License-Identifier: MIT
/*
 * string_set.c - strings stored once each (see string_set.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "string_set.h"
#include "util.h"

static int grow(struct bt_strset *t)
{
	size_t nslots = t->nslots ? t->nslots * 2 : 1024;
	uint32_t *slot = calloc(nslots, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < t->nslots; i++) {
		if (!t->slot[i])
			continue;
		size_t k = bt_str_hash(t->p + t->slot[i] - 1, 0) & (nslots - 1);
		while (slot[k])
			k = (k + 1) & (nslots - 1);
		slot[k] = t->slot[i];
	}
	free(t->slot);
	t->slot = slot;
	t->nslots = nslots;
	return 0;
}

uint32_t bt_strset_add(struct bt_strset *t, const char *s)
{
	if (!s)
		return BT_STRSET_NONE;
	if (t->err)
		return 0;
	if (2 * (t->n + 1) > t->nslots && (t->err = grow(t)))
		return 0;
	size_t k = bt_str_hash(s, 0) & (t->nslots - 1);
	while (t->slot[k]) {
		if (strcmp(t->p + t->slot[k] - 1, s) == 0)
			return t->slot[k] - 1;
		k = (k + 1) & (t->nslots - 1);
	}
	size_t n = strlen(s) + 1;
	if (t->len + n >= BT_STRSET_NONE) {
		t->err = -E2BIG;
		return 0;
	}
	if (t->len + n > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4096;
		while (cap < t->len + n)
			cap *= 2;
		char *p = realloc(t->p, cap);
		if (!p) {
			t->err = -ENOMEM;
			return 0;
		}
		t->p = p;
		t->cap = cap;
	}
	memcpy(t->p + t->len, s, n);
	t->slot[k] = (uint32_t)t->len + 1;
	t->len += n;
	t->n++;
	return t->slot[k] - 1;
}

void bt_strset_release(struct bt_strset *t, int keep_table)
{
	if (!keep_table)
		free(t->p);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}
