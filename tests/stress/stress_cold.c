// SPDX-License-Identifier: MIT
/*
 * Concurrency stress test of the cold tier: one writer per core at full
 * speed into a small block buffer (as the recorder's drain writes), the pump
 * compressing behind them, and a reader joining the two tiers all along
 * (bt_cold_read, then bt_read_range from the position it returns), as a dump
 * does. Then a quiet phase with paced writers (never half a buffer ahead of
 * the pump), where nothing may be lost: the final read reaches back past it.
 *
 * Every entry carries (writer, seq, len, checksum). Each joined read is checked:
 *   - block positions strictly increase across the join (no duplicate, no
 *     block of the cold tier after one of the buffer);
 *   - no torn or corrupted entry, no duplicate (writer, seq), order kept;
 *   - a writer's seq gap only where its core's block chain breaks (at the
 *     first entry after the break, which may be blocks later: a block closed
 *     before its writer wrote anything holds no entry), and every
 *     chain break inside a read is accounted for: by the tier's `gaps` (a
 *     block overwritten before the pump took it) or a block lost to the read.
 * The tier must hold more history than the buffer alone (the reason it exists).
 * Env: STRESS_SECONDS (default 4). Prints TAP lines for tests/run.sh.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "btrace_buffer.h"
#include "stress_check.h"
#include "cold_tier.h"

#define NCORES 2
#define BS 1024u
#define HOT_SIZE (4 * 16 * NCORES * (size_t)BS) /* 4 slots of A blocks */

struct rec {
	uint32_t writer, len;
	uint64_t seq;
	uint32_t csum, pad;
	uint8_t fill[];
};

static struct bt_buffer *buf;
static struct bt_cold *cold;
static atomic_int stop, paced;
static _Atomic uint64_t written[NCORES];
static uint64_t reads, chain_breaks, unexplained, max_span, read_lost, odd_gaps, late_jumps;
static uint64_t pending_breaks, pending_until; /* breaks the tier has not counted yet, and its pass count then */
static _Atomic uint64_t quiet_seq[NCORES]; /* writers' seq when the quiet phase began */

static int ntap;
static void tap_ok(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tap_ok(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", ok ? "" : "not ", ++ntap);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!ok)
		atomic_fetch_add(&failures, 1);
}

static uint32_t csum(const struct rec *r)
{
	return stress_csum(r->writer ^ (uint32_t)(r->seq * 2654435761u) ^ r->len, r->fill, (uint32_t)(r->len - sizeof(*r)));
}

/* Quiet phase: no writer more than half a buffer ahead of the pump. Paced
 * writes alone outran a pump starved of CPU (TSAN, a busy machine): a
 * block overwritten before the pump took it cuts everything older from a
 * read, which check 4 is there to rule out. */
static void wait_for_pump(void)
{
	for (int i = 0; i < 1000 && !atomic_load(&stop); i++) {
		struct bt_cold_stats cs;
		struct bt_stats bs;

		bt_buffer_stats(buf, &bs);
		bt_cold_stats(cold, &cs);
		if (cs.newest_pos != BT_NO_POS && bs.blocks_used <= cs.newest_pos + 1 + bs.nblocks / 2)
			return;
		usleep(1000);
	}
}

static void *writer(void *arg)
{
	uint32_t w = (uint32_t)(uintptr_t)arg;
	uint8_t tmp[256];
	struct rec *r = (struct rec *)tmp;
	uint64_t seq = 0, x = w * 7919u + 1;

	while (!atomic_load(&stop)) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		r->writer = w;
		r->seq = seq;
		r->len = (uint32_t)(sizeof(*r) + 8 + x % 120) & ~7u;
		for (uint32_t i = 0; i < r->len - sizeof(*r); i++)
			r->fill[i] = (uint8_t)(seq + i);
		r->csum = csum(r);
		if (bt_write(buf, w, r, r->len) == 0)
			seq++;
		if (w == 0 && seq % 64 == 0) { /* as the drain does after a pass */
			struct bt_stats bs;

			bt_buffer_stats(buf, &bs);
			bt_cold_nudge(cold, bs.blocks_used, bs.nblocks);
		}
		atomic_store(&written[w], seq);
		if (atomic_load(&paced)) {
			struct timespec ts = { 0, 100000 };

			nanosleep(&ts, NULL);
			if (seq % 8 == 0)
				wait_for_pump();
		}
	}
	return NULL;
}

static void *pump(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		if (bt_cold_pump(cold, buf) < 0)
			fail("pump failed");
		bt_cold_wait(cold, 200000); /* or less: writer 0 nudges */
	}
	return NULL;
}

/* One joined read. */
struct join {
	uint64_t last_pos;
	uint64_t core_last[NCORES];   /* position of the core's previous block in this read */
	int core_partial[NCORES];     /* that block was active: read up to its confirmed prefix */
	/* Since the core's last entry in this read: its chain broke (or a
	 * block was partial), so its next entry may jump. Kept until that
	 * entry, which may be blocks later: a block closed before its writer
	 * wrote anything (block closing) holds no entry. */
	int core_jump_ok[NCORES], core_broke[NCORES];
	int64_t next_seq[NCORES];     /* -1: no entry of the writer yet */
	uint64_t first_seq[NCORES], last_seq[NCORES];
	uint64_t breaks;              /* chain breaks after a core's first block */
	uint64_t quiet_breaks;        /* of those, in the quiet phase */
	uint64_t gaps_unexplained;
	uint64_t late_jumps;          /* seq jumps after a break blocks earlier (entry-less blocks between) */
	int in_hot;
	uint64_t hot_blocks;
};

static int check_block(const struct bt_block_view *v, void *ctx)
{
	struct join *j = ctx;
	uint32_t off = 0, len, c = v->core;
	const void *p;
	int real_break, here;

	if (v->pos <= j->last_pos && j->last_pos != 0)
		fail("position %llu after %llu (%s)", (unsigned long long)v->pos, (unsigned long long)j->last_pos,
		     j->in_hot ? "buffer" : "cold tier");
	j->last_pos = v->pos;
	j->hot_blocks += j->in_hot;
	if (c >= NCORES) {
		fail("block of core %u", c);
		return 0;
	}
	real_break = j->core_last[c] && v->prev_pos != j->core_last[c];
	if (real_break)
		j->breaks++;
	/* After an active block read up to its prefix, the writer may have
	 * finished it and gone on before this block was read: its tail is
	 * not in this read (as with bt_read alone), not a loss. */
	here = real_break || j->core_partial[c];
	j->core_jump_ok[c] |= here;
	j->core_broke[c] |= real_break;
	j->core_last[c] = v->pos;
	j->core_partial[c] = !v->complete;
	while ((p = bt_block_next(v, &off, &len))) {
		const struct rec *r = p;

		if (len < sizeof(*r) || r->len != len || r->writer != c || csum(r) != r->csum) {
			fail("torn entry at block %llu", (unsigned long long)v->pos);
			continue;
		}
		if (j->next_seq[c] >= 0 && (int64_t)r->seq < j->next_seq[c])
			fail("writer %u: seq %llu after %lld", c, (unsigned long long)r->seq, (long long)j->next_seq[c]);
		else if (j->next_seq[c] >= 0 && (int64_t)r->seq != j->next_seq[c] && !j->core_jump_ok[c])
			j->gaps_unexplained++;
		else if (j->next_seq[c] >= 0 && (int64_t)r->seq != j->next_seq[c] && !here)
			j->late_jumps++;
		if (j->next_seq[c] < 0)
			j->first_seq[c] = r->seq;
		uint64_t q = atomic_load(&quiet_seq[c]);

		if (j->core_broke[c] && q && r->seq > q)
			j->quiet_breaks++;
		j->last_seq[c] = r->seq;
		j->next_seq[c] = (int64_t)r->seq + 1;
		/* Only the first entry after a break may jump. */
		j->core_jump_ok[c] = j->core_broke[c] = 0;
	}
	return 0;
}

static void joined_read(struct join *j, struct bt_cold_stats *before, struct bt_read_stats *rs,
			struct bt_cold_read_stats *cs)
{
	uint64_t from = 0;

	memset(j, 0, sizeof(*j));
	for (int c = 0; c < NCORES; c++)
		j->next_seq[c] = -1;
	bt_cold_stats(cold, before);
	if (bt_cold_read(cold, check_block, j, cs, &from) < 0)
		fail("cold read failed");
	j->in_hot = 1;
	if (bt_read_range(buf, from, 0, check_block, j, rs) < 0)
		fail("buffer read failed");
}

static void *reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		struct join j;
		struct bt_cold_stats cst, cst2;
		struct bt_read_stats rs;
		struct bt_cold_read_stats crs;

		joined_read(&j, &cst, &rs, &crs);
		bt_cold_stats(cold, &cst2);
		reads++;
		chain_breaks += j.breaks;
		read_lost += rs.blocks_lost;
		/* A break inside the read: the tier counted a gap (ever: it may be
		 * old history still held) or this read lost a block. The tier
		 * counts a block overwritten before it took it when it takes the
		 * block's successor, on its next pass, which may end after this
		 * read: such breaks wait for two passes begun after the read. */
		if (pending_breaks && (cst2.gaps || cst2.pumps >= pending_until)) {
			if (!cst2.gaps)
				unexplained += pending_breaks;
			pending_breaks = 0;
		}
		if (j.breaks && !cst2.gaps && !rs.blocks_lost && !crs.blocks_bad) {
			pending_breaks += j.breaks;
			pending_until = cst2.pumps + 3;
		}
		odd_gaps += j.gaps_unexplained;
		late_jumps += j.late_jumps;
		for (int c = 0; c < NCORES; c++)
			if (j.next_seq[c] >= 0 && j.last_seq[c] - j.first_seq[c] > max_span)
				max_span = j.last_seq[c] - j.first_seq[c];
		usleep(2000);
	}
	return NULL;
}

int main(void)
{
	struct bt_config cfg = { .size = HOT_SIZE, .block_size = BS, .ncores = NCORES };
	struct bt_cold_config cc = { .size = 16 * HOT_SIZE, .codec = BT_CODEC_LZ4, .group_blocks = 4 };
	pthread_t wt[NCORES], pt, rt;
	char err[256];
	const char *e = getenv("STRESS_SECONDS");
	int secs = e ? atoi(e) : 4;

	buf = bt_buffer_create(&cfg, err, sizeof(err));
	cold = bt_cold_create(&cc, BS, err, sizeof(err));
	if (!buf || !cold) {
		printf("not ok 1 - setup: %s\n", err);
		return 1;
	}
	for (uintptr_t w = 0; w < NCORES; w++)
		pthread_create(&wt[w], NULL, writer, (void *)w);
	pthread_create(&pt, NULL, pump, NULL);
	pthread_create(&rt, NULL, reader, NULL);
	unsigned half = secs > 2 ? (unsigned)secs / 2 : 1;

	sleep(half);
	/* Quiet phase: paced writers, the pump keeps up, nothing may be lost. */
	atomic_store(&paced, 1);
	usleep(100000); /* the pump catches up */
	for (int c = 0; c < NCORES; c++)
		quiet_seq[c] = atomic_load(&written[c]);
	/* Until the quiet phase alone outgrows the buffer (check 6: the storm's
	 * last chain break cuts everything older from a read), 10 s at most:
	 * a paced write takes over 1 ms under TSAN on a busy machine. */
	for (unsigned ms = 0; ms < 10000 && (ms < 1000 * half ||
					 atomic_load(&written[0]) - quiet_seq[0] <= 2 * HOT_SIZE / 32); ms += 100)
		usleep(100000);
	atomic_store(&stop, 1);
	bt_cold_wake(cold);
	for (int w = 0; w < NCORES; w++)
		pthread_join(wt[w], NULL);
	pthread_join(pt, NULL);
	pthread_join(rt, NULL);

	/* Final joined read after a last pump: writers are quiet. */
	struct join j;
	struct bt_cold_stats cst;
	struct bt_read_stats rs;
	struct bt_cold_read_stats crs;
	struct bt_stats bs;
	uint64_t gaps_before;

	bt_cold_stats(cold, &cst);
	gaps_before = cst.gaps;
	bt_cold_pump(cold, buf);
	joined_read(&j, &cst, &rs, &crs);
	if (pending_breaks && !cst.gaps) /* the pump has stopped: no later count */
		unexplained += pending_breaks;
	bt_buffer_stats(buf, &bs);

	tap_ok(atomic_load(&failures) == 0, "%llu joined reads: positions increase, entries intact, gaps only at chain breaks",
	       (unsigned long long)reads);
	tap_ok(odd_gaps == 0,
	       "seq gaps without a chain break: %llu in %llu joined reads (none allowed; %llu jumps after entry-less blocks)",
	       (unsigned long long)odd_gaps, (unsigned long long)reads, (unsigned long long)late_jumps);
	tap_ok(unexplained == 0, "every chain break inside a read is counted (%llu breaks, %llu tier gaps, %llu blocks lost to reads)",
	       (unsigned long long)chain_breaks, (unsigned long long)cst.gaps, (unsigned long long)read_lost);
	/* and the read reaches back past its start: a break there cuts the
	 * older blocks out of the read rather than show in it */
	int reaches = 1;
	for (int c = 0; c < NCORES; c++)
		reaches &= j.next_seq[c] >= 0 && j.first_seq[c] <= quiet_seq[c];
	tap_ok(cst.gaps == gaps_before && j.quiet_breaks == 0 && j.gaps_unexplained == 0 && reaches,
	       "final read: the quiet phase is one unbroken chain per core (%llu breaks there, %llu before it; "
	       "writer 0 from entry %llu, the phase from %llu)",
	       (unsigned long long)j.quiet_breaks, (unsigned long long)(j.breaks - j.quiet_breaks),
	       (unsigned long long)j.first_seq[0], (unsigned long long)quiet_seq[0]);
	int newest_ok = 1;
	for (int c = 0; c < NCORES; c++)
		if (j.next_seq[c] < 0 || j.last_seq[c] + 1 != atomic_load(&written[c])) {
			newest_ok = 0;
			fprintf(stderr, "  writer %d: newest entry %llu, wrote %llu\n", c, (unsigned long long)j.last_seq[c],
				(unsigned long long)atomic_load(&written[c]));
		}
	tap_ok(newest_ok, "the joined read ends with every writer's newest entry");
	uint64_t hot_entries_cap = HOT_SIZE / 32; /* entries are >= 32 bytes */
	tap_ok(j.last_seq[0] - j.first_seq[0] > hot_entries_cap,
	       "the tiers hold more than the buffer can (%llu entries of writer 0, the buffer at most %llu)",
	       (unsigned long long)(j.last_seq[0] - j.first_seq[0]), (unsigned long long)hot_entries_cap);
	tap_ok(cst.blocks_in > 0 && cst.raw_bytes_in > cst.stored_bytes_in,
	       "compressed: %llu blocks, %llu raw bytes in %llu (%llu groups evicted)", (unsigned long long)cst.blocks_in,
	       (unsigned long long)cst.raw_bytes_in, (unsigned long long)cst.stored_bytes_in,
	       (unsigned long long)cst.groups_evicted);
	bt_cold_destroy(cold);
	bt_buffer_destroy(buf);
	return atomic_load(&failures) ? 1 : 0;
}
