// SPDX-License-Identifier: MIT
/*
 * copy_pool.c - the mappings a dump copies application buffers into, kept
 * for the next one (copy_pool.h).
 *
 * Writing a fresh mapping costs far more than the copy itself: on the
 * 2-CPU development VM a 32 MiB buffer copied in 3 ms into memory written
 * before and in 90-150 ms into a new populated mapping, even at real-time
 * priority (each new page is backed by the host on its first write); into
 * new huge pages 4-60 ms. A trigger's dump starts with that copy (issue
 * 36: within 100 ms of the hit), so the copies' mappings are made in huge
 * pages, and kept for the next dump up to BT_COPY_POOL_BYTES.
 */
#include "copy_pool.h"
#include "prefault.h"

#include <pthread.h>
#include <sys/mman.h>

#define POOL_SLOTS 4

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void *p;
	size_t len;
} pool[POOL_SLOTS];
static size_t pool_bytes;

/* A new mapping in huge pages where the system gives them (a copy into
 * 4 KiB pages new to a VM took 115 ms for 32 MiB, into huge pages 4-60
 * ms), populated now: the copy must not stop on a page fault per page. */
static void *fresh(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_HUGEPAGE); /* advice: refused, 4 KiB pages */
	if (bt_prefault(p, len)) {
		munmap(p, len); /* out of memory */
		return NULL;
	}
	return p;
}

void *bt_copy_pool_get(size_t len)
{
	void *p = NULL;

	pthread_mutex_lock(&pool_lock);
	for (int i = 0; i < POOL_SLOTS; i++)
		if (pool[i].p && pool[i].len == len) {
			p = pool[i].p;
			pool[i].p = NULL;
			pool_bytes -= len;
			break;
		}
	pthread_mutex_unlock(&pool_lock);
	return p ? p : fresh(len);
}

void bt_copy_pool_put(void *p, size_t len)
{
	if (!p)
		return;
	pthread_mutex_lock(&pool_lock);
	for (int i = 0; i < POOL_SLOTS && pool_bytes + len <= BT_COPY_POOL_BYTES; i++)
		if (!pool[i].p) {
			pool[i].p = p;
			pool[i].len = len;
			pool_bytes += len;
			p = NULL;
			break;
		}
	pthread_mutex_unlock(&pool_lock);
	if (p)
		munmap(p, len);
}
