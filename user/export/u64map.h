/* SPDX-License-Identifier: MIT */
/*
 * u64map.h - a u64 -> u32 hash map (open addressing, keys never 0) for the
 * exporters' interning: strings by offset, functions, locations, stack
 * frame tries.
 */
#ifndef BTRACE_U64MAP_H
#define BTRACE_U64MAP_H
#include <stddef.h>
#include <stdint.h>

struct bt_u64map {
	uint64_t *k;
	uint32_t *v;
	size_t cap, n;
};

/* The value slot of key (not 0), added with value 0 if new; NULL out of memory. */
uint32_t *bt_u64map_slot(struct bt_u64map *m, uint64_t key);
void bt_u64map_free(struct bt_u64map *m);
/* A 64-bit mixer (murmur3's finalizer) for keys made of several parts. */
uint64_t bt_u64_mix(uint64_t v);
#endif
