// SPDX-License-Identifier: MIT
/*
 * ringbuf.c - batch consumer of BPF ring buffers (see ringbuf.h).
 *
 * Memory ordering, per ring (the kernel side is kernel/bpf/ringbuf.c):
 *   - producer_pos is read with acquire: pairs with the kernel's release
 *     store when it reserves, so record headers up to it are allocated;
 *   - each record's length word is read with acquire: pairs with the
 *     kernel's release (xchg) that clears the busy bit at submit/discard,
 *     so the record's bytes are visible once the bit is clear;
 *   - consumer_pos is published with release: pairs with the kernel's
 *     acquire read in reserve, which may then reuse the space only after
 *     we finished reading it.
 */
#include "ringbuf.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#define RB_BUSY (1u << 31)
#define RB_DISCARD (1u << 30)
#define RB_HDR 8u
#define WAKE_TAG UINT64_MAX /* the wake eventfd's epoll data (rings: their index) */

struct ring {
	int fd;
	uint64_t mask;
	_Atomic unsigned long *cons; /* consumer page, read-write */
	_Atomic unsigned long *prod; /* producer page, read-only */
	uint8_t *data;               /* data area, mapped twice */
	size_t prod_len;
	uint64_t peak; /* the most a pass found waiting (drain thread only) */
};

struct bt_rings {
	int epfd;
	int wakefd; /* eventfd: bt_rings_wake() ends a wait early */
	size_t n;
	size_t page;
	struct ring *r;
	struct epoll_event *evs;
};

void bt_rings_free(struct bt_rings *rs)
{
	if (!rs)
		return;
	for (size_t i = 0; i < rs->n; i++) {
		if (rs->r[i].cons)
			munmap((void *)rs->r[i].cons, rs->page);
		if (rs->r[i].prod)
			munmap((void *)rs->r[i].prod, rs->r[i].prod_len);
	}
	if (rs->epfd >= 0)
		close(rs->epfd);
	if (rs->wakefd >= 0)
		close(rs->wakefd);
	free(rs->r);
	free(rs->evs);
	free(rs);
}

struct bt_rings *bt_rings_new(const int *fds, size_t n, uint64_t size, char *err, size_t errlen)
{
	struct bt_rings *rs = calloc(1, sizeof(*rs));
	int e = 0;
	if (!rs) {
		errno = ENOMEM;
		return NULL;
	}
	rs->epfd = rs->wakefd = -1;
	rs->page = (size_t)sysconf(_SC_PAGESIZE);
	rs->r = calloc(n ? n : 1, sizeof(*rs->r));
	rs->evs = calloc(n + 1, sizeof(*rs->evs));
	if (!rs->r || !rs->evs || (size & (size - 1)) || size < rs->page) {
		e = rs->r && rs->evs ? EINVAL : ENOMEM;
		snprintf(err, errlen, "ring buffers: bad size %llu", (unsigned long long)size);
		goto fail;
	}
	rs->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (rs->epfd < 0) {
		e = errno;
		snprintf(err, errlen, "epoll_create1: %s", strerror(e));
		goto fail;
	}
	rs->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event wev = { .events = EPOLLIN, .data.u64 = WAKE_TAG };
	if (rs->wakefd < 0 || epoll_ctl(rs->epfd, EPOLL_CTL_ADD, rs->wakefd, &wev) < 0) {
		e = errno;
		snprintf(err, errlen, "eventfd for the drain's wakeups: %s", strerror(e));
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		struct ring *r = &rs->r[i];
		r->fd = fds[i];
		r->mask = size - 1;
		r->prod_len = rs->page + 2 * size;
		void *c = mmap(NULL, rs->page, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
		if (c == MAP_FAILED) {
			e = errno;
			snprintf(err, errlen, "mapping ring %zu: %s", i, strerror(e));
			goto fail;
		}
		r->cons = c;
		void *p = mmap(NULL, r->prod_len, PROT_READ, MAP_SHARED, r->fd, (off_t)rs->page);
		if (p == MAP_FAILED) {
			e = errno;
			snprintf(err, errlen, "mapping ring %zu: %s", i, strerror(e));
			goto fail;
		}
		r->prod = p;
		r->data = (uint8_t *)p + rs->page;
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = i };
		if (epoll_ctl(rs->epfd, EPOLL_CTL_ADD, r->fd, &ev) < 0) {
			e = errno;
			snprintf(err, errlen, "epoll on ring %zu: %s", i, strerror(e));
			goto fail;
		}
	}
	rs->n = n;
	return rs;
fail:
	rs->n = rs->r ? n : 0; /* unmap what was mapped (zeroed entries are skipped) */
	bt_rings_free(rs);
	errno = e;
	return NULL;
}

int bt_rings_poll(struct bt_rings *rs, int timeout_ms)
{
	int k = epoll_wait(rs->epfd, rs->evs, (int)rs->n + 1, timeout_ms);

	if (k < 0)
		return -errno;
	for (int i = 0; i < k; i++) {
		uint64_t v;

		if (rs->evs[i].data.u64 == WAKE_TAG && read(rs->wakefd, &v, sizeof(v)) < 0) {
			/* EAGAIN: an earlier poll took it */
		}
	}
	return k;
}

void bt_rings_wake(struct bt_rings *rs)
{
	uint64_t one = 1;

	if (write(rs->wakefd, &one, sizeof(one)) < 0) {
		/* EAGAIN (the counter full) leaves it readable: the wait ends all the same */
	}
}

static uint64_t consume_ring(struct ring *r, bt_ring_cb cb, void *ctx)
{
	unsigned long cons = atomic_load_explicit(r->cons, memory_order_relaxed); /* only we write it */
	unsigned long published = cons, prod;
	uint64_t n = 0;
	const unsigned long step = (unsigned long)(r->mask + 1) / 8;

	/* Acquire: pairs with the kernel's store of producer_pos at reserve.
	 * Read once: a pass ends at what was there when it began, so a busy
	 * producer cannot keep the drain here forever. */
	prod = atomic_load_explicit(r->prod, memory_order_acquire);
	if (prod - cons > r->peak)
		r->peak = prod - cons;
	while (cons < prod) {
		_Atomic uint32_t *hdr = (_Atomic uint32_t *)(r->data + (cons & r->mask));
		/* Acquire: pairs with the kernel's release when it commits. */
		uint32_t len = atomic_load_explicit(hdr, memory_order_acquire);
		if (len & RB_BUSY)
			break; /* reserved, not committed yet: the rest waits */
		uint32_t dlen = len & ~(RB_BUSY | RB_DISCARD);
		if (!(len & RB_DISCARD)) {
			cb(ctx, (uint8_t *)hdr + RB_HDR, dlen);
			n++;
		}
		cons += (dlen + RB_HDR + 7) & ~7ul;
		if (cons - published >= step) {
			/* Release: the space before cons is read; the producer may reuse it. */
			atomic_store_explicit(r->cons, cons, memory_order_release);
			published = cons;
		}
	}
	if (cons != published)
		atomic_store_explicit(r->cons, cons, memory_order_release);
	return n;
}

uint64_t bt_rings_consume(struct bt_rings *rs, bt_ring_cb cb, void *ctx)
{
	uint64_t n = 0;
	for (size_t i = 0; i < rs->n; i++)
		n += consume_ring(&rs->r[i], cb, ctx);
	return n;
}

uint64_t bt_rings_peak(const struct bt_rings *rs)
{
	uint64_t peak = 0;

	for (size_t i = 0; i < rs->n; i++)
		if (rs->r[i].peak > peak)
			peak = rs->r[i].peak;
	return peak;
}
