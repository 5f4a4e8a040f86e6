// SPDX-License-Identifier: MIT
/*
 * u64map.c - a u64 -> u32 hash map (see u64map.h).
 */
#include <stdlib.h>
#include "hash_mix.h"
#include "u64map.h"

uint32_t *bt_u64map_slot(struct bt_u64map *m, uint64_t key)
{
	if (2 * (m->n + 1) > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1024;
		uint64_t *k = calloc(cap, sizeof(*k));
		uint32_t *v = calloc(cap, sizeof(*v));
		if (!k || !v) {
			free(k);
			free(v);
			return NULL;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->k[i])
				continue;
			size_t j = bt_u64_mix(m->k[i]) & (cap - 1);
			while (k[j])
				j = (j + 1) & (cap - 1);
			k[j] = m->k[i];
			v[j] = m->v[i];
		}
		free(m->k);
		free(m->v);
		m->k = k;
		m->v = v;
		m->cap = cap;
	}
	size_t j = bt_u64_mix(key) & (m->cap - 1);
	while (m->k[j] && m->k[j] != key)
		j = (j + 1) & (m->cap - 1);
	if (!m->k[j]) {
		m->k[j] = key;
		m->v[j] = 0;
		m->n++;
	}
	return &m->v[j];
}

void bt_u64map_free(struct bt_u64map *m)
{
	free(m->k);
	free(m->v);
	m->k = NULL;
	m->v = NULL;
	m->cap = m->n = 0;
}
