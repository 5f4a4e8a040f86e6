/* SPDX-License-Identifier: MIT */
/*
 * hash_mix.h - the 64-bit mixer (murmur3's finalizer) of every integer-keyed
 * hash table: keys that differ in a few low bits (tids, addresses) spread
 * over the whole table.
 */
#ifndef BTRACE_HASH_MIX_H
#define BTRACE_HASH_MIX_H
#include <stdint.h>

static inline uint64_t bt_u64_mix(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	v ^= v >> 33;
	v *= 0xc4ceb9fe1a85ec53ull;
	return v ^ (v >> 33);
}
#endif
