// SPDX-License-Identifier: MIT
/*
 * Concurrency stress test of in-process tracing: the application library's
 * writers (btrace.h macros, the real fast and slow paths) and the
 * recorder's validating reader (app_reader.c) on one shared memfd buffer.
 *
 * Phase 1 (wrap): STRESS_THREADS (64) writers on all CPUs for STRESS_SECONDS
 * write stamped events into a small buffer that wraps hundreds of times,
 * some of them sleeping between events or yielding in their slice; a reader
 * reads the buffer in a loop all along. Every block the reader is handed
 * must pass validation (an honest writer never produces a bad block), every
 * event must be untorn (check value), unique, and in per-thread order
 * within what one read returned.
 * Phase 2 (exact): a fresh buffer large enough for everything is swapped in
 * (as a resize does) while writers run; after a fixed count per thread every
 * stamp written after the swap must be there exactly once.
 * Prints TAP lines for tests/run.sh.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "btrace.h"
#include "app_reader.h"
#include "harness.h"

#define MAX_THREADS 256
#define PHASE2_EVENTS 3000

static int nthreads = 64;
static uint32_t ncores;
static atomic_int stop, phase2_go;
static _Atomic uint64_t written[MAX_THREADS];
static _Atomic uint64_t p2_start[MAX_THREADS]; /* first index written into buffer 2 */
static atomic_int failures;
static struct bt_app_view views[2];
static pthread_barrier_t bar;

static int64_t chk(int64_t t, int64_t i)
{
	return (int64_t)((uint64_t)i * 2654435761u ^ (uint64_t)t);
}

static void fail(const char *fmt, long a, long b)
{
	if (atomic_fetch_add(&failures, 1) < 10) {
		printf("# FAIL: ");
		printf(fmt, a, b);
		printf("\n");
	}
}

static int make_buffer(struct bt_app_view *v, uint64_t size, uint32_t bsize)
{
	uint32_t A, N;
	uint64_t mo, co, dof;
	char err[256];
	if (bt_app_geometry(size, bsize, ncores, &A, &N, err, sizeof(err)) < 0) {
		printf("# %s\n", err);
		return -1;
	}
	uint64_t total = bt_app_shm_layout(bsize, A, N, ncores, &mo, &co, &dof);
	int fd = memfd_create("btrace-app-stress", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)total) < 0)
		return -1;
	void *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return -1;
	bt_app_shm_init(base, bsize, A, N, ncores, (uint32_t)getpid());
	*v = (struct bt_app_view){ .base = base, .size = total, .bsize = bsize, .A = A, .N = N, .R = N / A,
				   .ncores = ncores, .pid = (uint32_t)getpid() };
	return fd;
}

static void *writer(void *arg)
{
	int64_t t = (int64_t)(intptr_t)arg;
	unsigned r = (unsigned)t * 7919u + 1;
	int64_t i = 0;
	pthread_barrier_wait(&bar);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (atomic_load_explicit(&phase2_go, memory_order_acquire) && !atomic_load(&p2_start[t]))
			atomic_store(&p2_start[t], (uint64_t)i + 1); /* +1: 0 = not yet */
		if (atomic_load(&p2_start[t]) && i >= (int64_t)atomic_load(&p2_start[t]) - 1 + PHASE2_EVENTS)
			break;
		int slice = i % 8 == 0;
		if (slice)
			BTRACE_BEGIN("slice", i);
		BTRACE_INSTANT("stamp", t, i, chk(t, i));
		if (slice)
			BTRACE_END();
		i++;
		atomic_store_explicit(&written[t], (uint64_t)i, memory_order_relaxed);
		r = r * 1103515245u + 12345u;
		if (t % 4 == 0 && (r >> 16) % 64 == 0)
			sched_yield();
		else if (t % 4 == 1 && (r >> 16) % 256 == 0)
			usleep(50);
	}
	return NULL;
}

struct rctx {
	int64_t *last;     /* per thread: last stamp index seen in the current block */
	uint64_t *last_blk; /* per thread: block (c->blocks) that last[] is from */
	uint8_t *seen; /* phase 2: [t * PHASE2_EVENTS + (i - start)] */
	uint64_t events, blocks;
	int phase2;
};

static int on_block(const struct bt_block_view *blk, void *arg)
{
	struct rctx *c = arg;
	uint32_t off = 0, len;
	const void *p;
	c->blocks++;
	while ((p = bt_block_next(blk, &off, &len))) {
		const struct bt_ev_app *e = p;
		c->events++;
		if (e->h.type != BT_EV_APP_INSTANT || e->nargs != 3)
			continue;
		int64_t t = e->args[0], i = e->args[1];
		if (t < 0 || t >= nthreads || e->args[2] != chk(t, i)) {
			fail("torn or foreign stamp (thread %ld, index %ld)", (long)t, (long)i);
			continue;
		}
		/* A thread's events are in order within one block (it moves
		 * between CPUs, so not across blocks). */
		if (!c->phase2 && c->last_blk[t] == c->blocks && c->last[t] >= i)
			fail("thread %ld: stamp %ld out of order or duplicated within a block", (long)t, (long)i);
		if (!c->phase2) {
			c->last[t] = i;
			c->last_blk[t] = c->blocks;
		}
		if (c->phase2) {
			int64_t s = (int64_t)atomic_load(&p2_start[t]) - 1;
			if (s < 0 || i < s)
				continue; /* written before the swap reached this thread */
			if (i - s >= PHASE2_EVENTS)
				fail("thread %ld: stamp %ld after its last", (long)t, (long)i);
			else if (c->seen[t * PHASE2_EVENTS + (i - s)]++)
				fail("thread %ld: stamp %ld twice", (long)t, (long)i);
		}
	}
	return 0;
}

static void *reader(void *arg)
{
	uint64_t *reads = arg;
	int64_t last[MAX_THREADS];
	uint64_t last_blk[MAX_THREADS];
	while (!atomic_load(&stop)) {
		struct bt_app_read_stats st;
		struct rctx c = { .last = last, .last_blk = last_blk };
		memset(last_blk, 0, sizeof(last_blk));
		bt_app_read(&views[0], on_block, &c, &st);
		if (st.blocks_bad)
			fail("an honest writer produced %ld bad blocks (read %ld)", (long)st.blocks_bad, (long)*reads);
		(*reads)++;
	}
	return NULL;
}

static void test_writers_and_reader(void)
{
	int secs = getenv("STRESS_SECONDS") ? atoi(getenv("STRESS_SECONDS")) : 4;
	pthread_t th[MAX_THREADS], rd;
	uint64_t reads = 0;
	if (getenv("STRESS_THREADS"))
		nthreads = atoi(getenv("STRESS_THREADS"));
	if (nthreads < 2 || nthreads > MAX_THREADS)
		nthreads = 64;
	ncores = (uint32_t)sysconf(_SC_NPROCESSORS_CONF);
	printf("# stress_app: %d writers, %u CPUs, %d s\n", nthreads, ncores, secs);

	/* Phase 1: 256 KiB of 1 KiB blocks: wraps constantly. */
	int fd1 = make_buffer(&views[0], 256 << 10, 1024);
	REQUIRE(fd1 >= 0, "phase 1 buffer");
	REQUIRE(btrace_attach_fd_(fd1) == 0, "library attaches the buffer");
	pthread_barrier_init(&bar, NULL, (unsigned)nthreads + 1);
	for (int t = 0; t < nthreads; t++)
		pthread_create(&th[t], NULL, writer, (void *)(intptr_t)t);
	pthread_create(&rd, NULL, reader, &reads);
	pthread_barrier_wait(&bar);
	sleep((unsigned)(secs > 1 ? secs - 1 : 1));

	/* Phase 2: swap in a buffer that holds everything that follows. */
	uint64_t need = (uint64_t)nthreads * PHASE2_EVENTS * 2 * bt_app_entry_size(3) * 2;
	int fd2 = make_buffer(&views[1], need < (8u << 20) ? 8u << 20 : need, 4096);
	REQUIRE(fd2 >= 0, "phase 2 buffer");
	REQUIRE(btrace_attach_fd_(fd2) == 0, "library swaps to the new buffer");
	atomic_store_explicit(&phase2_go, 1, memory_order_release);
	for (int t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	atomic_store(&stop, 1);
	pthread_join(rd, NULL);

	uint64_t total = 0;
	for (int t = 0; t < nthreads; t++)
		total += atomic_load(&written[t]);
	CHECK(reads > 0, "the reader read %llu times during the writes", (unsigned long long)reads);
	CHECK(total > (uint64_t)nthreads * PHASE2_EVENTS, "writers wrote %llu events", (unsigned long long)total);

	/* Exact: every stamp written after the swap is in buffer 2 once. */
	struct rctx c = { .phase2 = 1, .seen = calloc((size_t)nthreads * PHASE2_EVENTS, 1) };
	struct bt_app_read_stats st;
	views[0] = views[1];
	bt_app_read(&views[1], on_block, &c, &st);
	CHECK(st.blocks_bad == 0 && st.blocks_busy == 0, "final read: %llu bad, %llu busy blocks",
	      (unsigned long long)st.blocks_bad, (unsigned long long)st.blocks_busy);
	uint64_t missing = 0;
	for (size_t k = 0; k < (size_t)nthreads * PHASE2_EVENTS; k++)
		missing += !c.seen[k];
	const struct bt_app_shm *sh = (const void *)views[1].base;
	CHECK(missing == 0, "every stamp after the swap present: %llu of %d missing (app dropped %llu)",
	      (unsigned long long)missing, nthreads * PHASE2_EVENTS,
	      (unsigned long long)atomic_load(&((struct bt_app_shm *)sh)->stats.dropped));
	CHECK(atomic_load(&failures) == 0, "no torn, foreign, duplicate or reordered stamp, no bad block (%d failures)",
	      atomic_load(&failures));
	free(c.seen);
}

/* Fill meta m's block of round r with stamped events and a pad; returns
 * the block. */
static uint8_t *fill_round(const struct bt_app_view *v, uint32_t m, uint32_t r)
{
	uint64_t mo, co, dof;
	bt_app_shm_layout(v->bsize, v->A, v->N, v->ncores, &mo, &co, &dof);
	uint8_t *blk = (uint8_t *)v->base + dof + ((size_t)(r % v->R) * v->A + m) * v->bsize;
	struct bt_block_hdr h = { .pos = (uint64_t)r * v->A + m, .prev_pos = BT_NO_POS, .core = 0 };
	memcpy(blk, &h, sizeof(h));
	uint32_t off = BT_BLOCK_HDR, len = bt_app_entry_size(3);
	for (int64_t i = 0; off + len <= v->bsize; i++, off += len) {
		uint8_t ev[sizeof(struct bt_ev_app) + 24] = { 0 };
		struct bt_ev_app *a = (struct bt_ev_app *)ev;
		a->h = (struct bt_event_hdr){ .ts_ns = 1000 + (uint64_t)i, .seq = (uint32_t)i, .tid = v->pid,
					      .tgid = v->pid, .type = BT_EV_APP_INSTANT };
		a->name_id = 1;
		a->nargs = 3;
		a->args[0] = 0;
		a->args[1] = i;
		a->args[2] = chk(0, i);
		struct bt_entry_hdr e = { .size = len, .kind = BT_ENTRY_DATA };
		memcpy(blk + off, &e, sizeof(e));
		memcpy(blk + off + BT_ENTRY_HDR, ev, sizeof(ev));
	}
	if (off < v->bsize) {
		struct bt_entry_hdr pad = { .size = v->bsize - off, .kind = BT_ENTRY_PAD };
		memcpy(blk + off, &pad, sizeof(pad));
	}
	return blk;
}

static int count_blocks(const struct bt_block_view *blk, void *arg)
{
	(void)blk;
	(*(int *)arg)++;
	return 0;
}

/* The moment in advance() after a writer locked a meta's next round and
 * wrote the block's new header, but before it zeroed the block and opened
 * the round (alloc still the round before): preempted there, it leaves the
 * previous round's entries under the new position. The reader must take
 * nothing from it (it used to take the old entries, or a mix of them and
 * the zeros, as the new block: the position re-check passes, the header
 * being already new). */
static void test_lock_in_progress(void)
{
	struct bt_app_view v;
	ncores = (uint32_t)sysconf(_SC_NPROCESSORS_CONF);
	int fd = make_buffer(&v, 64 << 10, 1024);
	REQUIRE(fd >= 0, "buffer");
	struct bt_app_meta *mt = (struct bt_app_meta *)((uint8_t *)v.base + ((struct bt_app_shm *)v.base)->meta_off);
	uint32_t r = 1, r2 = 1 + v.R; /* same physical block */
	uint8_t *blk = fill_round(&v, 0, r);
	atomic_store(&mt[0].alloc, BT_APP_RP(r, v.bsize));
	atomic_store(&mt[0].conf, BT_APP_RP(r, v.bsize));
	struct bt_app_read_stats st;
	int n = 0;
	bt_app_read(&v, count_blocks, &n, &st);
	REQUIRE(n == 1 && st.blocks_read == 1 && st.entries > 0, "the complete round reads back (%llu entries)",
		(unsigned long long)st.entries);
	/* Locked (conf), header written, nothing else yet. */
	atomic_store(&mt[0].conf, BT_APP_RP(r2, BT_BLOCK_HDR));
	struct bt_block_hdr h = { .pos = (uint64_t)r2 * v.A, .prev_pos = BT_NO_POS, .core = 1 % ncores };
	memcpy(blk, &h, sizeof(h));
	n = 0;
	bt_app_read(&v, count_blocks, &n, &st);
	CHECK(n == 0 && st.blocks_busy == 1, "a block being locked is busy, not the old round renamed "
	      "(%d delivered, %llu entries, %llu busy)", n, (unsigned long long)st.entries,
	      (unsigned long long)st.blocks_busy);
	/* Half zeroed: still nothing written in the new round. */
	memset(blk + v.bsize / 2, 0, v.bsize / 2);
	n = 0;
	bt_app_read(&v, count_blocks, &n, &st);
	CHECK(n == 0 && st.blocks_busy == 1, "a block half zeroed is busy, never torn (%d delivered)", n);
	/* Opened: alloc in round r2, the block zeroed: an empty block. */
	memset(blk + BT_BLOCK_HDR, 0, v.bsize - BT_BLOCK_HDR);
	atomic_store(&mt[0].alloc, BT_APP_RP(r2, BT_BLOCK_HDR));
	n = 0;
	bt_app_read(&v, count_blocks, &n, &st);
	CHECK(n == 1 && st.entries == 0 && st.blocks_bad == 0, "once opened it reads as the new, empty block");
	munmap((void *)v.base, v.size);
	close(fd);
}

int main(void)
{
	RUN(test_lock_in_progress);
	RUN(test_writers_and_reader);
	return h_done();
}
