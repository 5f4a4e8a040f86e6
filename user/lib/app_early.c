// SPDX-License-Identifier: MIT
/*
 * app_early.c - a buffer a process makes for itself, to write in before
 * the recorder has answered its registration.
 *
 * A forked child registers as a process of its own, which takes the
 * recorder tens of milliseconds; its first calls came before and were lost
 * (issue 36). Instead the child makes a memfd of its parent's geometry in
 * the fork hook, writes there from its first call, and passes it with its
 * registration (btrace_app.c: early_register). The recorder seals and
 * validates it (app_registry.c: buf_adopt) and reads it as it reads a
 * buffer a resize left behind, while the child moves on to the buffer the
 * recorder sends. The pages are touched as they are written: a fork costs
 * a memfd, not the copy of its parent's buffer.
 *
 * A process that starts while a recorder listens (an exec'ed child of a
 * traced program, any program) does the same from its constructor with a
 * geometry of its own (btrace_fresh_buffer_: BT_APP_EARLY_SIZE), as it
 * cannot know the recorder's before it is answered.
 */
#include "app_write.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

struct app_buf *btrace_buf_view_(void *base, size_t total, int fd)
{
	const struct bt_app_shm *h = base;
	struct app_buf *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->shm = base;
	b->meta = (struct bt_app_meta *)((uint8_t *)base + h->meta_off);
	b->cores = (struct bt_app_core *)((uint8_t *)base + h->cores_off);
	b->data = (uint8_t *)base + h->data_off;
	b->bsize = h->block_size;
	b->A = h->active;
	b->R = h->nblocks / h->active;
	b->rmask = (b->R & (b->R - 1)) == 0 ? b->R - 1 : 0;
	b->ncores = h->ncores;
	b->size = total;
	b->fd = fd;
	return b;
}

struct app_buf *btrace_early_buffer_(uint32_t bsize, uint32_t A, uint32_t N, uint32_t ncores, uint32_t pid)
{
	uint64_t mo, co, dof;
	uint64_t total = bt_app_shm_layout(bsize, A, N, ncores, &mo, &co, &dof);
	int fd = memfd_create("btrace-app-early", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *base;
	struct app_buf *b;

	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)total) < 0 ||
	    (base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	bt_app_shm_init(base, bsize, A, N, ncores, pid);
	b = btrace_buf_view_(base, total, fd);
	if (!b) {
		munmap(base, total);
		close(fd);
		return NULL;
	}
	b->early = 1;
	return b;
}

struct app_buf *btrace_fresh_buffer_(uint32_t pid)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	uint32_t ncores = n > 0 && n <= BT_APP_MAX_CORES ? (uint32_t)n : BT_APP_MAX_CORES;
	uint32_t A, N;
	char why[160];

	/* Many CPUs need more blocks than the usual size holds: doubled. */
	for (uint64_t size = BT_APP_EARLY_SIZE; size <= 16 * BT_APP_EARLY_SIZE; size *= 2)
		if (bt_app_geometry(size, BT_APP_EARLY_BLOCK, ncores, &A, &N, why, sizeof(why)) == 0)
			return btrace_early_buffer_(BT_APP_EARLY_BLOCK, A, N, ncores, pid);
	return NULL;
}
