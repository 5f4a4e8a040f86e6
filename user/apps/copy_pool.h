/* SPDX-License-Identifier: MIT */
/*
 * copy_pool.h - destinations for copies of application buffers, kept warm
 * for the next dump (copy_pool.c).
 */
#ifndef BT_COPY_POOL_H
#define BT_COPY_POOL_H

#include <stddef.h>

/* Kept between dumps at most: three copies of the default 32 MiB buffer
 * of a program with function records (the dump being written's and the
 * two pending ones' of record_triggers.c). Larger copies go back. */
#define BT_COPY_POOL_BYTES (96ull << 20)

/* len bytes to write a copy into: a kept mapping of that length (written
 * before: no page is new to the machine), else a fresh, populated one.
 * NULL (errno set) when out of memory. */
void *bt_copy_pool_get(size_t len);
/* Done with p (from bt_copy_pool_get): kept if it fits, else unmapped. */
void bt_copy_pool_put(void *p, size_t len);

#endif
