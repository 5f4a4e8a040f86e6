// SPDX-License-Identifier: MIT
/*
 * u32map.c - a uint32 -> uint32 hash map (see u32map.h): linear probing,
 * grown to keep it at most half full.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hash_mix.h"
#include "u32map.h"

static size_t map_slot(const struct bt_u32map *m, uint32_t key)
{
	size_t i = (size_t)bt_u64_mix(key) & (m->cap - 1);
	while (m->used[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

int bt_u32map_put(struct bt_u32map *m, uint32_t key, uint32_t val)
{
	if ((m->n + 1) * 2 > m->cap) {
		struct bt_u32map g = { .cap = m->cap ? m->cap * 2 : 64 };
		g.keys = malloc(g.cap * sizeof(*g.keys));
		g.vals = malloc(g.cap * sizeof(*g.vals));
		g.used = calloc(g.cap, 1);
		if (!g.keys || !g.vals || !g.used) {
			free(g.keys);
			free(g.vals);
			free(g.used);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->used[i])
				continue;
			size_t j = map_slot(&g, m->keys[i]);
			g.used[j] = 1;
			g.keys[j] = m->keys[i];
			g.vals[j] = m->vals[i];
		}
		g.n = m->n;
		bt_u32map_free(m);
		*m = g;
	}
	size_t i = map_slot(m, key);
	if (!m->used[i]) {
		m->used[i] = 1;
		m->keys[i] = key;
		m->n++;
	}
	m->vals[i] = val;
	return 0;
}

int bt_u32map_get(const struct bt_u32map *m, uint32_t key, uint32_t *val)
{
	if (!m->cap)
		return 0;
	size_t i = map_slot(m, key);
	if (!m->used[i])
		return 0;
	if (val)
		*val = m->vals[i];
	return 1;
}

void bt_u32map_free(struct bt_u32map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	memset(m, 0, sizeof(*m));
}
