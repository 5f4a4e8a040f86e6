/* SPDX-License-Identifier: MIT */
/*
 * u32map.h - a small open-addressing hash map uint32 -> uint32 (any key,
 * any value): the exporters' per-thread state (tid -> index, depth, ...).
 */
#ifndef BTRACE_U32MAP_H
#define BTRACE_U32MAP_H
#include <stddef.h>
#include <stdint.h>

struct bt_u32map {
	uint32_t *keys, *vals;
	uint8_t *used;
	size_t cap, n;
};
int bt_u32map_put(struct bt_u32map *m, uint32_t key, uint32_t val); /* 0 or -ENOMEM */
int bt_u32map_get(const struct bt_u32map *m, uint32_t key, uint32_t *val); /* 1 found, 0 not */
void bt_u32map_free(struct bt_u32map *m);
#endif
