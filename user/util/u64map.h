/* SPDX-License-Identifier: MIT */
/*
 * u64map.h - a u64 -> u32 hash map (open addressing, keys never 0): the
 * exporters' interning (strings by offset, functions, locations, stack
 * frame tries) and any table keyed by a nonzero integer.
 */
#ifndef BTRACE_U64MAP_H
#define BTRACE_U64MAP_H
#include <stddef.h>
#include <stdint.h>
#include "hash_mix.h" /* bt_u64_mix, for keys made of several parts */

struct bt_u64map {
	uint64_t *k;
	uint32_t *v;
	size_t cap, n;
};

/* The value slot of key (not 0), added with value 0 if new; NULL out of memory. */
uint32_t *bt_u64map_slot(struct bt_u64map *m, uint64_t key);
void bt_u64map_free(struct bt_u64map *m);
#endif
