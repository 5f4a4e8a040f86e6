// SPDX-License-Identifier: MIT
/*
 * Concurrency stress test of function tracing (btrace_funcs.c): writer
 * threads run instrumented code (this file is built with
 * -finstrument-functions; everything but outer() and inner() opts out)
 * while the recorder's validating reader (app_reader.c) reads the shared
 * buffer, open batches included.
 *
 * Each writer calls outer() -> inner() in a loop, so the record with
 * per-thread seq s is: s%4 = 0 entry outer, 1 entry inner, 2 exit inner,
 * 3 exit outer. Phase 1 (wrap): a small buffer that wraps many times; every
 * block handed over must validate, every decoded record must be the one its
 * seq says, seqs contiguous within a batch. Phase 2 (exact): a buffer large
 * enough for everything; after the writers end (their batches closed by the
 * thread-exit destructor), each thread's records are there exactly once.
 * Phase 3 (signals): writers also write events, and a signal handler that
 * writes an event and calls an instrumented function interrupts them
 * anywhere, inside a hook or an event write too: no seq is used twice, and
 * every write of the handler is either in the buffer or counted dropped.
 * Prints TAP lines for tests/run.sh.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "btrace.h"
#include "app_reader.h"
#include "func_batch.h"
#include "harness.h"

#define NI __attribute__((no_instrument_function))
#define WRITERS 8
#define P2_LOOPS 20000

static uint32_t ncores;
static atomic_int stop, failures;
static __thread volatile long sink; /* per thread: the writers share nothing */
static struct bt_app_view view;
static int loops_each; /* 0: until stop */

NI static void fail(const char *fmt, long a, long b)
{
	if (atomic_fetch_add(&failures, 1) < 10) {
		printf("# FAIL: ");
		printf(fmt, a, b);
		printf("\n");
	}
}

__attribute__((noinline)) static void inner(int i)
{
	sink += i;
}

__attribute__((noinline)) static void outer(int i)
{
	inner(i);
}

NI static int make_buffer(uint64_t size)
{
	uint32_t A, N;
	uint64_t mo, co, dof;
	char err[256];
	if (bt_app_geometry(size, 4096, ncores, &A, &N, err, sizeof(err)) < 0)
		return -1;
	uint64_t total = bt_app_shm_layout(4096, A, N, ncores, &mo, &co, &dof);
	int fd = memfd_create("btrace-funcs-stress", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)total) < 0)
		return -1;
	void *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return -1;
	bt_app_shm_init(base, 4096, A, N, ncores, (uint32_t)getpid());
	view = (struct bt_app_view){ .base = base, .size = total, .bsize = 4096, .A = A, .N = N, .R = N / A,
				     .ncores = ncores, .pid = (uint32_t)getpid() };
	return fd;
}

NI static void *writer(void *arg)
{
	(void)arg;
	for (int i = 0; loops_each ? i < loops_each : !atomic_load_explicit(&stop, memory_order_relaxed); i++)
		outer(i);
	return NULL;
}

/* Per thread (phase 2): which seqs were seen. */
#define MAX_TIDS 64
static struct seen {
	uint32_t tid;
	uint8_t *bits;
} seen[MAX_TIDS];

struct rctx {
	int exact;
	uint64_t records, batches;
	struct bt_func_rec rec[1024];
};

NI static int check_block(const struct bt_block_view *blk, void *arg)
{
	struct rctx *c = arg;
	uint32_t off = 0, len;
	const void *p;
	while ((p = bt_block_next(blk, &off, &len))) {
		const struct bt_ev_app_funcs *f = p;
		if (len < sizeof(*f) || f->h.type != BT_EV_APP_FUNCS)
			continue;
		int64_t n = bt_funcs_count(f, len);
		if (n <= 0 || n > 1024) {
			fail("batch of %ld records (tid %ld)", (long)n, (long)f->h.tid);
			continue;
		}
		c->batches++;
		bt_funcs_decode(f, len, c->rec);
		for (int64_t i = 0; i < n; i++) {
			const struct bt_func_rec *r = &c->rec[i];
			uint32_t k = r->seq % 4;
			uint64_t want = k == 0 || k == 3 ? (uint64_t)(uintptr_t)outer : (uint64_t)(uintptr_t)inner;
			if (r->addr != want || r->exit != (k >= 2))
				fail("tid %ld seq %ld: not the record its seq says", (long)f->h.tid, (long)r->seq);
			if (i && (r->ts_ns < r[-1].ts_ns))
				fail("tid %ld seq %ld: time goes back", (long)f->h.tid, (long)r->seq);
			if (!c->exact)
				continue;
			int s = 0;
			while (s < MAX_TIDS && seen[s].tid && seen[s].tid != f->h.tid)
				s++;
			if (s == MAX_TIDS || r->seq >= 4u * P2_LOOPS) {
				fail("tid %ld seq %ld out of range", (long)f->h.tid, (long)r->seq);
				continue;
			}
			if (!seen[s].tid) {
				seen[s].tid = f->h.tid;
				seen[s].bits = calloc(4 * P2_LOOPS, 1);
			}
			if (seen[s].bits[r->seq]++)
				fail("tid %ld seq %ld twice", (long)f->h.tid, (long)r->seq);
		}
		c->records += (uint64_t)n;
	}
	return 0;
}

NI static void *reader(void *arg)
{
	uint64_t *bad = arg;
	while (!atomic_load(&stop)) {
		struct rctx c = { 0 };
		struct bt_app_read_stats st;
		bt_app_read(&view, check_block, &c, &st);
		*bad += st.blocks_bad;
	}
	return NULL;
}

NI static void run_writers(int loops, double secs, uint64_t *bad)
{
	pthread_t w[WRITERS], r;
	atomic_store(&stop, 0);
	loops_each = loops;
	pthread_create(&r, NULL, reader, bad);
	for (int i = 0; i < WRITERS; i++)
		pthread_create(&w[i], NULL, writer, NULL);
	if (!loops) {
		usleep((useconds_t)(secs * 1e6));
		atomic_store(&stop, 1);
	}
	for (int i = 0; i < WRITERS; i++)
		pthread_join(w[i], NULL);
	atomic_store(&stop, 1);
	pthread_join(r, NULL);
}

NI static void test_wrap(void)
{
	uint64_t bad = 0;
	int fd = make_buffer(256 * 1024);
	REQUIRE(fd >= 0, "buffer");
	REQUIRE(btrace_attach_fd_(fd) == 0, "library attaches the buffer");
	run_writers(0, 1.0, &bad);
	struct rctx c = { 0 };
	struct bt_app_read_stats st;
	bt_app_read(&view, check_block, &c, &st);
	CHECK(bad == 0 && st.blocks_bad == 0, "an honest writer never makes a bad block (%lu)", (unsigned long)bad);
	CHECK(c.records > 1000, "records read after wrapping: %lu", (unsigned long)c.records);
	CHECK(atomic_load(&failures) == 0, "every record is the one its seq says, in time order");
}

NI static void test_exact(void)
{
	uint64_t bad = 0;
	int fd = make_buffer(64ull << 20);
	REQUIRE(fd >= 0, "buffer");
	REQUIRE(btrace_attach_fd_(fd) == 0, "library swaps to the big buffer");
	run_writers(P2_LOOPS, 0, &bad);
	struct rctx c = { .exact = 1 };
	struct bt_app_read_stats st;
	bt_app_read(&view, check_block, &c, &st);
	int threads = 0, complete = 0;
	for (int s = 0; s < MAX_TIDS && seen[s].tid; s++, threads++) {
		uint32_t k = 0;
		while (k < 4u * P2_LOOPS && seen[s].bits[k] == 1)
			k++;
		complete += k == 4u * P2_LOOPS;
	}
	CHECK(threads == WRITERS && complete == WRITERS, "%d of %d threads have every record exactly once", complete,
	      WRITERS);
	CHECK(st.blocks_busy == 0, "every batch closed at thread exit (%lu blocks busy)",
	      (unsigned long)st.blocks_busy);
	CHECK(bad == 0 && st.blocks_bad == 0, "no bad block while writers ran");
	CHECK(atomic_load(&failures) == 0, "no record out of place");
}

/* ---- phase 3: signal handlers ---------------------------------------------- */

#define P3_WRITERS 4
#define P3_LOOPS 20000
#define P3_SEQS (1u << 20)
#define EV_MAIN 1u /* name ids of the writers' and the handler's events */
#define EV_SIG 2u
static __thread volatile sig_atomic_t sig_tries; /* the handler's writes attempted */
static atomic_ulong tries_total;
static atomic_int p3_done;

__attribute__((noinline)) static void in_handler(void)
{
	sink++;
}

NI static void on_signal(int sig)
{
	(void)sig;
	in_handler(); /* an entry and an exit */
	btrace_event(BTRACE_TYPE_INSTANT, EV_SIG, 0, NULL);
	sig_tries += 3;
}

NI static void *sig_writer(void *arg)
{
	(void)arg;
	for (int i = 0; i < P3_LOOPS; i++) {
		outer(i);
		if (i % 4 == 0) {
			int64_t a = i;
			btrace_event(BTRACE_TYPE_INSTANT, EV_MAIN, 1, &a);
		}
	}
	atomic_fetch_add(&p3_done, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		usleep(1000); /* stay alive for the signals still on their way */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	atomic_fetch_add(&tries_total, (unsigned long)sig_tries);
	return NULL;
}

struct p3ctx {
	uint32_t tid[P3_WRITERS];
	uint8_t *seen[P3_WRITERS];
	uint64_t twice, main_recs, main_evs, sig_items, other;
	struct bt_func_rec rec[1024];
};

NI static uint8_t *p3_seen(struct p3ctx *c, uint32_t tid)
{
	for (int s = 0; s < P3_WRITERS; s++) {
		if (c->tid[s] == tid)
			return c->seen[s];
		if (!c->tid[s]) {
			c->tid[s] = tid;
			return c->seen[s] = calloc(P3_SEQS, 1);
		}
	}
	return NULL;
}

NI static void p3_mark(struct p3ctx *c, uint32_t tid, uint32_t seq)
{
	uint8_t *b = p3_seen(c, tid);
	if (!b || seq >= P3_SEQS)
		c->other++;
	else if (b[seq]++)
		c->twice++;
}

NI static int p3_block(const struct bt_block_view *blk, void *arg)
{
	struct p3ctx *c = arg;
	uint32_t off = 0, len;
	const void *p;
	while ((p = bt_block_next(blk, &off, &len))) {
		const struct bt_event_hdr *h = p;
		if (len >= sizeof(struct bt_ev_app) && h->type == BT_EV_APP_INSTANT) {
			const struct bt_ev_app *e = p;
			p3_mark(c, h->tid, h->seq);
			c->main_evs += e->name_id == EV_MAIN;
			c->sig_items += e->name_id == EV_SIG;
			continue;
		}
		const struct bt_ev_app_funcs *f = p;
		int64_t n = len >= sizeof(*f) && h->type == BT_EV_APP_FUNCS ? bt_funcs_count(f, len) : -1;
		if (n <= 0 || n > 1024) {
			c->other++;
			continue;
		}
		bt_funcs_decode(f, len, c->rec);
		for (int64_t i = 0; i < n; i++) {
			p3_mark(c, f->h.tid, c->rec[i].seq);
			if (c->rec[i].addr == (uint64_t)(uintptr_t)in_handler)
				c->sig_items++;
			else
				c->main_recs++;
		}
	}
	return 0;
}

NI static void test_signals(void)
{
	int fd = make_buffer(64ull << 20);
	REQUIRE(fd >= 0, "buffer");
	REQUIRE(btrace_attach_fd_(fd) == 0, "library swaps to a fresh buffer");
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t w[P3_WRITERS];
	atomic_store(&stop, 0);
	for (int i = 0; i < P3_WRITERS; i++)
		pthread_create(&w[i], NULL, sig_writer, NULL);
	unsigned long sent = 0;
	while (atomic_load(&p3_done) < P3_WRITERS) {
		for (int i = 0; i < P3_WRITERS; i++)
			sent += pthread_kill(w[i], SIGUSR1) == 0;
		usleep(50);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < P3_WRITERS; i++)
		pthread_join(w[i], NULL);
	signal(SIGUSR1, SIG_IGN);
	struct p3ctx *c = calloc(1, sizeof(*c));
	REQUIRE(c, "memory");
	struct bt_app_read_stats st;
	bt_app_read(&view, p3_block, c, &st);
	uint64_t dropped = atomic_load(&((struct bt_app_shm *)view.base)->stats.dropped);
	unsigned long tries = atomic_load(&tries_total);
	printf("# %lu signals sent, %lu handler writes tried: %lu in the buffer, %lu dropped (nested)\n", sent, tries,
	       (unsigned long)c->sig_items, (unsigned long)dropped);
	CHECK(c->twice == 0 && c->other == 0, "no seq used twice in a thread (%lu twice, %lu unexpected)",
	      (unsigned long)c->twice, (unsigned long)c->other);
	/* The interrupted code's writes are all there, or (a reservation that
	 * gave up: every try found the block taken, possible under a loaded
	 * ASan run, seen once in CI as 19999 of 20000 events) counted in
	 * dropped: then the handler's writes plus the drops exceed its tries
	 * by exactly that many. Nothing is lost uncounted, and the interrupted
	 * code loses at most one write in ten thousand. */
	struct bt_app_shm *shm = (struct bt_app_shm *)view.base;
	uint64_t want_main = 4ull * P3_WRITERS * P3_LOOPS + (uint64_t)P3_WRITERS * (P3_LOOPS / 4);
	uint64_t got_main = c->main_recs + c->main_evs;
	printf("# stats: skipped %lu, races %lu\n", (unsigned long)atomic_load(&shm->stats.skipped),
	       (unsigned long)atomic_load(&shm->stats.races));
	CHECK(got_main <= want_main && (want_main - got_main) * 10000 <= want_main,
	      "the interrupted code's writes are there (%lu records, %lu events; at most 1 in 10^4 counted dropped)",
	      (unsigned long)c->main_recs, (unsigned long)c->main_evs);
	CHECK(tries > 0 && c->sig_items + dropped == tries + (want_main - got_main),
	      "every write is in the buffer or counted dropped (handler: %lu + %lu of %lu; interrupted code: %lu missing)",
	      (unsigned long)c->sig_items, (unsigned long)dropped, tries, (unsigned long)(want_main - got_main));
	for (int s = 0; s < P3_WRITERS; s++)
		free(c->seen[s]);
	free(c);
}

NI int main(void)
{
	ncores = (uint32_t)sysconf(_SC_NPROCESSORS_CONF);
	RUN(test_wrap);
	RUN(test_exact);
	RUN(test_signals);
	return h_done();
}
