// SPDX-License-Identifier: MIT
/*
 * app_shm.c - the geometry and fresh header of an application buffer
 * (layout: app_shm.h). Shared by the recorder, which makes each
 * registrant's buffer (app_registry.c), and the library, whose forked
 * child makes its own before its first call (btrace_app.c: early_buffer).
 */
#include "app_shm.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>

int bt_app_geometry(uint64_t size, uint32_t bsize, uint32_t ncores, uint32_t *A, uint32_t *N, char *err,
		    size_t errlen)
{
	if (bsize < BT_MIN_BLOCK_SIZE || bsize > BT_MAX_BLOCK_SIZE || (bsize & (bsize - 1))) {
		snprintf(err, errlen, "application block size %u: must be a power of two from %u to %u", bsize,
			 BT_MIN_BLOCK_SIZE, BT_MAX_BLOCK_SIZE);
		return -EINVAL;
	}
	if (ncores == 0 || ncores > BT_APP_MAX_CORES) {
		snprintf(err, errlen, "%u CPUs: application buffers support 1 to %u", ncores, BT_APP_MAX_CORES);
		return -EINVAL;
	}
	/* A: many threads per CPU are preempted inside blocks; 32 open blocks
	 * per CPU keep positions available (skipping) with dozens of them. */
	uint64_t blocks = size / bsize;
	uint64_t a = 32ull * ncores;
	if (a > blocks / BT_APP_MIN_BLOCKS_PER_META)
		a = blocks / BT_APP_MIN_BLOCKS_PER_META;
	if (a < ncores || a == 0) {
		snprintf(err, errlen, "application buffer of %llu bytes is too small: needs at least %llu (2 blocks of %u bytes per CPU)",
			 (unsigned long long)size, (unsigned long long)2ull * ncores * bsize, bsize);
		return -EINVAL;
	}
	uint64_t n = blocks / a * a;
	if (n > UINT32_MAX) {
		snprintf(err, errlen, "application buffer of %llu bytes is too large", (unsigned long long)size);
		return -EINVAL;
	}
	*A = (uint32_t)a;
	*N = (uint32_t)n;
	return 0;
}

void bt_app_shm_init(void *base, uint32_t bsize, uint32_t A, uint32_t N, uint32_t ncores, uint32_t pid)
{
	struct bt_app_shm *s = base;
	uint64_t mo, co, dof;
	s->magic = BT_APP_SHM_MAGIC;
	s->version = BT_APP_SHM_VERSION;
	s->block_size = bsize;
	s->active = A;
	s->nblocks = N;
	s->ncores = ncores;
	s->pid = pid;
	s->total_size = bt_app_shm_layout(bsize, A, N, ncores, &mo, &co, &dof);
	s->meta_off = mo;
	s->cores_off = co;
	s->data_off = dof;
	atomic_store_explicit(&s->global, A, memory_order_relaxed); /* round 1 first: round 0 = "never used" */
	struct bt_app_meta *m = (struct bt_app_meta *)((uint8_t *)base + mo);
	for (uint32_t i = 0; i < A; i++) {
		atomic_store_explicit(&m[i].alloc, BT_APP_RP(0, bsize), memory_order_relaxed);
		atomic_store_explicit(&m[i].conf, BT_APP_RP(0, bsize), memory_order_relaxed);
	}
}
