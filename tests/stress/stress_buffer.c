// SPDX-License-Identifier: MIT
/*
 * Concurrency stress test of the block buffer: many more writer threads than
 * cores (several per virtual core), a reader taking snapshots all along, and
 * a resizer growing and shrinking the buffer in between.
 *
 * Every entry carries (writer, seq, len, checksum). Each snapshot is checked:
 *   - no torn or corrupted entry (checksum, length, core of its block);
 *   - no duplicate (writer, seq);
 *   - per-writer order preserved;
 *   - every missing entry is accounted for: a seq gap of a writer only occurs
 *     where its core's block chain is broken (a block overwritten or dropped
 *     by the read, counted in the read stats), never inside a continuous run.
 * At the end the buffer's counters must equal what the writers did.
 *
 * The reader's snapshots are taken by bt_read() in the first two runs and
 * by bt_capture() (a bulk copy, read afterwards) in the last two: the same
 * checks hold for both.
 *
 * Half the writers use bt_write(), half bt_reserve() + a slow two-part copy
 * (sometimes preempted in the middle) + bt_commit().
 * Env: STRESS_SECONDS (default 4), STRESS_THREADS (default 64).
 * Prints TAP lines for tests/run.sh.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "btrace_buffer.h"
#include "harness.h"

#define NCORES 4
#define BS 1024u
#define A_ACTIVE (16 * NCORES)
#define SLOT ((size_t)A_ACTIVE * BS)
#define MAX_THREADS 256

struct rec {
	uint32_t writer;
	uint32_t len;
	uint64_t seq;
	uint32_t csum;
	uint32_t core;
	uint8_t fill[];
};

static struct bt_buffer *buf;
static atomic_int stop;
static int nthreads;
static _Atomic uint64_t written[MAX_THREADS], dropped[MAX_THREADS];
static _Atomic uint64_t total_bytes;
static _Atomic uint64_t snapshots, resizes, resize_timeouts, chain_breaks, lost_blocks, busy_blocks;
static atomic_int failures;

static uint32_t csum(const struct rec *r)
{
	uint32_t h = 2166136261u ^ r->writer ^ (uint32_t)(r->seq * 2654435761u) ^ r->len ^ r->core << 7;

	for (uint32_t i = 0; i < r->len - sizeof(*r); i++)
		h = (h ^ r->fill[i]) * 16777619u;
	return h;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&failures, 1) < 20) {
		va_start(ap, fmt);
		fprintf(stderr, "  FAIL: ");
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
	}
}

static void *writer(void *arg)
{
	uint32_t w = (uint32_t)(uintptr_t)arg, core = w % NCORES;
	uint8_t b[512];
	struct rec *r = (struct rec *)b;
	uint64_t x = w * 7919 + 1;

	for (uint64_t seq = 0; !atomic_load_explicit(&stop, memory_order_relaxed); seq++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		/* skewed: core 0 writes small entries often, core 3 big ones */
		uint32_t len = sizeof(*r) + (uint32_t)(x % (core == 3 ? 400 : 96));
		int err;

		r->writer = w;
		r->len = len;
		r->seq = seq;
		r->core = core;
		for (uint32_t i = 0; i < len - sizeof(*r); i++)
			r->fill[i] = (uint8_t)(x >> (i % 56));
		r->csum = csum(r);
		if (w % 2) {
			err = bt_write(buf, core, r, len);
		} else {
			/* Reserve, fill slowly (preempted mid-copy now and then),
			 * commit: the window a torn read would need. */
			struct bt_reservation res;

			err = bt_reserve(buf, core, len, &res);
			if (!err) {
				memcpy(res.data, r, len / 2);
				if (x % 8 == 0)
					sched_yield();
				memcpy((uint8_t *)res.data + len / 2, (uint8_t *)r + len / 2, len - len / 2);
				bt_commit(buf, &res);
			}
		}
		if (err == -EAGAIN) {
			atomic_fetch_add(&dropped[w], 1);
			fail("writer %u: -EAGAIN (every candidate block held)", w);
		} else if (err) {
			fail("writer %u: bt_write %d", w, err);
			break;
		}
		atomic_store_explicit(&written[w], seq + 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&total_bytes, (BT_ENTRY_HDR + len + 7) & ~7u, memory_order_relaxed);
		if (core != 0 && x % 16 == 0)
			sched_yield(); /* slower cores, and preemption in odd places */
	}
	return NULL;
}

/* ---- snapshot checker ---------------------------------------------------- */

struct ent {
	uint64_t seq;
	uint32_t writer;
	uint32_t blk; /* index in the block list */
};

struct blk {
	uint64_t pos, prev;
	uint32_t core;
	int broken; /* chain break before this block (within its core) */
};

struct snap {
	struct ent *e;
	size_t n, cap;
	struct blk *b;
	size_t nb, capb;
};

static int snap_cb(const struct bt_block_view *v, void *ctx)
{
	struct snap *s = ctx;
	uint32_t off = 0, len;
	const uint8_t *p;

	if (s->nb == s->capb) {
		s->capb = s->capb ? 2 * s->capb : 1024;
		s->b = realloc(s->b, s->capb * sizeof(*s->b));
	}
	s->b[s->nb] = (struct blk){ v->pos, v->prev_pos, v->core, 0 };
	while ((p = bt_block_next(v, &off, &len))) {
		const struct rec *r = (const struct rec *)p;

		if (len < sizeof(*r) || r->len != len || r->writer >= (uint32_t)nthreads ||
		    r->core != r->writer % NCORES || r->core != v->core || csum(r) != r->csum) {
			fail("torn or corrupted entry in block %lu (core %u): len %u writer %u", (unsigned long)v->pos,
			     v->core, len, len >= sizeof(*r) ? r->writer : 0);
			continue;
		}
		if (s->n == s->cap) {
			s->cap = s->cap ? 2 * s->cap : 65536;
			s->e = realloc(s->e, s->cap * sizeof(*s->e));
		}
		s->e[s->n++] = (struct ent){ r->seq, r->writer, (uint32_t)s->nb };
	}
	s->nb++;
	return 0;
}

static void check_snapshot(struct snap *s, const struct bt_read_stats *st)
{
	uint64_t *last = calloc(nthreads, sizeof(*last));
	uint32_t *last_blk = calloc(nthreads, sizeof(*last_blk));
	uint8_t *seen = calloc(nthreads, 1);
	uint64_t breaks = 0;

	/* Chain breaks per core: a block whose prev is not the previous
	 * retained block of the same core (blocks come oldest first). */
	uint64_t prev_of_core[NCORES];
	int have_core[NCORES] = { 0 };
	for (size_t i = 0; i < s->nb; i++) {
		struct blk *b = &s->b[i];

		if (b->core >= NCORES)
			continue; /* resizer-internal block */
		if (i > 0 && b->pos <= s->b[i - 1].pos)
			fail("blocks not in position order");
		if (have_core[b->core] && b->prev != prev_of_core[b->core]) {
			/* prev may name an empty block lost in a core race; the
			 * only legal way to skip is a prev older than ours. */
			b->broken = 1;
			breaks++;
		}
		if (have_core[b->core] && b->prev > b->pos)
			fail("block %lu prev %lu in the future", (unsigned long)b->pos, (unsigned long)b->prev);
		prev_of_core[b->core] = b->pos;
		have_core[b->core] = 1;
	}

	for (size_t i = 0; i < s->n; i++) {
		struct ent *e = &s->e[i];
		uint32_t w = e->writer;

		if (seen[w]) {
			if (e->seq == last[w])
				fail("duplicate entry writer %u seq %lu", w, (unsigned long)e->seq);
			else if (e->seq < last[w])
				fail("writer %u order: seq %lu after %lu", w, (unsigned long)e->seq,
				     (unsigned long)last[w]);
			else if (e->seq != last[w] + 1) {
				/* Missing entries: need a chain break between the
				 * two blocks (or a dropped write, counted). */
				int explained = 0;

				for (uint32_t b = last_blk[w] + 1; b <= e->blk && !explained; b++)
					explained = s->b[b].broken && s->b[b].core == w % NCORES;
				if (!explained && atomic_load(&dropped[w]) == 0)
					fail("writer %u: seq %lu..%lu missing inside a continuous run (blocks %lu..%lu)", w,
					     (unsigned long)last[w] + 1, (unsigned long)e->seq - 1,
					     (unsigned long)s->b[last_blk[w]].pos, (unsigned long)s->b[e->blk].pos);
			}
		}
		seen[w] = 1;
		last[w] = e->seq;
		last_blk[w] = e->blk;
	}
	atomic_fetch_add(&chain_breaks, breaks);
	atomic_fetch_add(&lost_blocks, st->blocks_lost);
	atomic_fetch_add(&busy_blocks, st->blocks_busy);
	free(last);
	free(last_blk);
	free(seen);
}

/* Snapshots by bt_read (block by block) or by bt_capture (every block
 * copied at once, read from the copy afterwards). */
static int use_capture;

static int read_by_capture(struct snap *s, struct bt_read_stats *st)
{
	struct bt_capture *c = bt_capture(buf, st);
	int err;

	if (!c)
		return -errno;
	if (memcmp(bt_capture_read_stats(c), st, sizeof(*st)))
		fail("capture read stats differ from what bt_capture returned");
	err = bt_capture_read(c, snap_cb, s);
	bt_capture_free(c);
	return err;
}

static void take_snapshot(void)
{
	struct snap s = { 0 };
	struct bt_read_stats st;
	int err = use_capture ? read_by_capture(&s, &st) : bt_read(buf, snap_cb, &s, &st);

	if (err)
		fail("%s: %d", use_capture ? "bt_capture" : "bt_read", err);
	else
		check_snapshot(&s, &st);
	if (st.entries != s.n + 0 && !atomic_load(&failures))
		fail("read stats entries %lu != delivered %zu", (unsigned long)st.entries, s.n);
	atomic_fetch_add(&snapshots, 1);
	free(s.e);
	free(s.b);
}

static void *reader(void *arg)
{
	struct bt_stats st;

	while (!atomic_load(&stop)) {
		take_snapshot();
		bt_buffer_stats(buf, &st); /* counters are read while everything runs */
	}
	return NULL;
}

static void *resizer(void *arg)
{
	uint64_t x = 12345;
	char err[256];

	while (!atomic_load(&stop)) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size_t size = (2 + x % 15) * SLOT;
		int r = bt_resize(buf, size, 2000, err, sizeof(err));

		if (r == -ETIMEDOUT)
			atomic_fetch_add(&resize_timeouts, 1); /* retried by the next call */
		else if (r)
			fail("resize to %zu: %d %s", size, r, err);
		else
			atomic_fetch_add(&resizes, 1);
		usleep(2000);
	}
	return NULL;
}

static void run(int with_resize)
{
	struct bt_config cfg = { .size = 8 * SLOT, .max_size = 16 * SLOT, .block_size = BS, .ncores = NCORES,
				 .active = A_ACTIVE, .start_round = 0xFFFFFF00u, .prefault = 1 };
	pthread_t tw[MAX_THREADS], tr, tz;
	char err[256];
	int secs = getenv("STRESS_SECONDS") ? atoi(getenv("STRESS_SECONDS")) : 4;
	struct bt_stats st;
	uint64_t total = 0;

	buf = bt_buffer_create(&cfg, err, sizeof(err));
	REQUIRE(buf, "create: %s", err);
	atomic_store(&stop, 0);
	memset(written, 0, sizeof(written));
	memset(dropped, 0, sizeof(dropped));
	atomic_store(&total_bytes, 0);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&tw[i], NULL, writer, (void *)(uintptr_t)i);
	pthread_create(&tr, NULL, reader, NULL);
	if (with_resize)
		pthread_create(&tz, NULL, resizer, NULL);
	sleep(secs > 0 ? secs : 1);
	atomic_store(&stop, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(tw[i], NULL);
	pthread_join(tr, NULL);
	if (with_resize)
		pthread_join(tz, NULL);

	/* Quiescent: a last snapshot, and the counters must add up exactly. */
	take_snapshot();
	bt_buffer_stats(buf, &st);
	for (int i = 0; i < nthreads; i++)
		total += atomic_load(&written[i]);
	CHECK(st.entries_written == total, "buffer counted %lu entries, writers wrote %lu",
	      (unsigned long)st.entries_written, (unsigned long)total);
	CHECK(st.entries_dropped == 0, "%lu writes dropped", (unsigned long)st.entries_dropped);
	CHECK(st.bytes_written == atomic_load(&total_bytes), "buffer counted %lu bytes, writers wrote %lu",
	      (unsigned long)st.bytes_written, (unsigned long)atomic_load(&total_bytes));
	CHECK(atomic_load(&failures) == 0, "%d failures", atomic_load(&failures));
	CHECK(atomic_load(&snapshots) > 1, "only %lu snapshots", (unsigned long)atomic_load(&snapshots));
	if (with_resize) {
		char e2[256];

		CHECK(atomic_load(&resizes) > 0, "no resize completed");
		/* A final resize releases whatever a timed-out one left. */
		CHECK(bt_resize(buf, 4 * SLOT, 5000, e2, sizeof(e2)) == 0, "final resize: %s", e2);
		bt_buffer_stats(buf, &st);
		CHECK(st.resident == 4 * SLOT, "resident %zu after shrink to %zu", st.resident, 4 * SLOT);
	}
	printf("# %d threads on %d cores, %ds: %lu entries, %lu snapshots, %lu resizes (%lu timed out), "
	       "%lu chain breaks, %lu blocks lost during reads, %lu busy; closed %lu, skipped %lu, stale %lu, "
	       "core races %lu, padding %lu bytes\n",
	       nthreads, NCORES, secs, (unsigned long)total, (unsigned long)atomic_load(&snapshots),
	       (unsigned long)atomic_load(&resizes), (unsigned long)atomic_load(&resize_timeouts),
	       (unsigned long)atomic_load(&chain_breaks), (unsigned long)atomic_load(&lost_blocks),
	       (unsigned long)atomic_load(&busy_blocks), (unsigned long)st.blocks_closed,
	       (unsigned long)st.blocks_skipped, (unsigned long)st.positions_stale, (unsigned long)st.core_races,
	       (unsigned long)st.padding_bytes);
	bt_buffer_destroy(buf);
	atomic_store(&snapshots, 0);
	atomic_store(&resizes, 0);
	atomic_store(&chain_breaks, 0);
	atomic_store(&lost_blocks, 0);
	atomic_store(&busy_blocks, 0);
}

static void stress_write_read(void)
{
	run(0);
}

static void stress_write_read_resize(void)
{
	run(1);
}

/* The same checks on captures: a dump's window taken at once (btrace_capture.c). */
static void stress_write_capture(void)
{
	use_capture = 1;
	run(0);
	use_capture = 0;
}

static void stress_write_capture_resize(void)
{
	use_capture = 1;
	run(1);
	use_capture = 0;
}

int main(void)
{
	nthreads = getenv("STRESS_THREADS") ? atoi(getenv("STRESS_THREADS")) : 64;
	if (nthreads < 1 || nthreads > MAX_THREADS)
		nthreads = 64;
	RUN(stress_write_read);
	RUN(stress_write_read_resize);
	RUN(stress_write_capture);
	RUN(stress_write_capture_resize);
	return h_done();
}
