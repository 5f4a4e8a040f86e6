// SPDX-License-Identifier: MIT
/*
 * test_live_window.c - the window `ctl status` shows, kept by the drain
 * (live_window.h): nested events a few seqs out of order are not gaps, nor
 * a batch of system-call pairs that uprobe events overtook, a
 * real gap starts the continuous window after it, what the buffer has
 * overwritten (by its position clock) is not counted, and the answer costs
 * the same whatever the buffer holds.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "harness.h"
#include <linux/types.h>
#include "events.h" /* BT_SYS_BATCH */
#include "live_window.h"

static void add_o(struct bt_live *lv, uint32_t cpu, uint32_t seq, uint64_t ts, uint32_t overtaking)
{
	struct bt_live_run r = { seq, 1, ts, ts, overtaking };

	bt_live_add(lv, cpu, &r, 1);
}

static void add(struct bt_live *lv, uint32_t cpu, uint32_t seq, uint64_t ts)
{
	add_o(lv, cpu, seq, ts, 0);
}

static void test_reorder_is_not_a_gap(void)
{
	struct bt_live *lv = bt_live_new(2);
	struct bt_seq_window w;
	REQUIRE(lv, "new");
	/* seqs 0..199 with every 10th pair swapped (a nested program reserves
	 * after the one it interrupted took its seq) */
	for (uint32_t i = 0; i < 200; i++) {
		uint32_t s = i % 10 == 4 ? i + 1 : i % 10 == 5 ? i - 1 : i;
		add(lv, 0, s, 1000 + i);
	}
	bt_live_pass(lv, 10, 1000);
	bt_live_window(lv, 10, 1000, &w);
	CHECK(w.events == 200 && w.gaps == 0 && w.missing == 0, "events %" PRIu64 " gaps %" PRIu64, w.events, w.gaps);
	CHECK(w.first_ts == 1000 && w.last_ts == 1199 && w.cont_start_ts == 1000 && w.limit_cpu == -1,
	      "window %" PRIu64 "..%" PRIu64 " from %" PRIu64 " limit %d", w.first_ts, w.last_ts, w.cont_start_ts,
	      w.limit_cpu);
	bt_live_free(lv);
}

/* A CPU's batch of system-call pairs held while k uprobe events (which do
 * not flush it) go ahead after each pair, for rounds batches: the batch's
 * seqs come after all of them and fill every hole, none is a gap. */
static void overtaken(int rounds, uint32_t k, uint32_t overtaking)
{
	struct bt_live *lv = bt_live_new(1);
	struct bt_seq_window w;
	uint32_t seq = 0, n = 0;
	REQUIRE(lv, "new");
	for (int round = 0; round < rounds; round++) {
		uint32_t first = seq;

		for (int i = 0; i < BT_SYS_BATCH; i++, seq += 2 + k) { /* enter, exit, k uprobe events */
			struct bt_live_run r = { seq + 2, k, 1000 + n, 1000 + n + k - 1, overtaking };

			bt_live_add(lv, 0, &r, 1);
			n += k;
		}
		for (int i = 0; i < BT_SYS_BATCH; i++) { /* the batch, after them */
			struct bt_live_run r = { first + (2 + k) * (uint32_t)i, 2, 1000 + n, 1000 + n, 0 };

			bt_live_add(lv, 0, &r, 1);
			n += 2;
		}
	}
	bt_live_pass(lv, 10, 1000);
	bt_live_window(lv, 10, 1000, &w);
	CHECK(w.events == n && w.gaps == 0 && w.missing == 0, "events %" PRIu64 " of %u, gaps %" PRIu64 " missing %" PRIu64,
	      w.events, n, w.gaps, w.missing);
	bt_live_free(lv);
}

/* One uprobe event after each pair: within the slack of any event. */
static void test_batch_overtaken(void)
{
	overtaken(20, 1, 0);
}

/* 200 after each pair (a probed function called in a loop between two
 * system calls): the holes wait for the batch however many came (up to
 * HOLE_SLACK_ALL); the same events from programs that flush it would have
 * brought it first. */
static void test_batch_overtaken_long(void)
{
	overtaken(3, 200, 1);
}

/* A CPU with uprobe events alone: a seq lost among them is still a gap,
 * once HOLE_SLACK_ALL (4096) events came after it. */
static void test_overtaking_loss_is_a_gap(void)
{
	struct bt_live *lv = bt_live_new(1);
	struct bt_seq_window w;
	REQUIRE(lv, "new");
	struct bt_live_run a = { 0, 100, 1000, 1099, 1 }, b = { 101, 5000, 1101, 6100, 1 };
	bt_live_add(lv, 0, &a, 1);
	bt_live_add(lv, 0, &b, 1);
	bt_live_pass(lv, 10, 1000);
	bt_live_window(lv, 10, 1000, &w);
	CHECK(w.events == 5100 && w.gaps == 1 && w.missing == 1 && w.cont_start_ts == 1101,
	      "events %" PRIu64 ", gaps %" PRIu64 " missing %" PRIu64 " from %" PRIu64, w.events, w.gaps, w.missing,
	      w.cont_start_ts);
	bt_live_free(lv);
}

static void test_gap_starts_window(void)
{
	struct bt_live *lv = bt_live_new(2);
	struct bt_seq_window w;
	REQUIRE(lv, "new");
	for (uint32_t i = 0; i < 100; i++)
		add(lv, 0, i, 1000 + i);
	for (uint32_t i = 105; i < 300; i++) /* 100..104 lost */
		add(lv, 0, i, 1000 + i);
	for (uint32_t i = 0; i < 300; i++)
		add(lv, 1, i, 1000 + i);
	bt_live_pass(lv, 10, 1000);
	bt_live_window(lv, 10, 1000, &w);
	CHECK(w.gaps == 1 && w.missing == 5, "gaps %" PRIu64 " missing %" PRIu64, w.gaps, w.missing);
	CHECK(w.cont_start_ts == 1105 && w.limit_cpu == 0, "continuous from %" PRIu64 " (cpu %d)", w.cont_start_ts,
	      w.limit_cpu);
	bt_live_free(lv);
}

/* Three passes of 50 events, each taking 100 block positions. */
static void test_overwritten(void)
{
	struct bt_live *lv = bt_live_new(1);
	struct bt_seq_window w;
	REQUIRE(lv, "new");
	uint32_t seq = 0;
	for (int pass = 0; pass < 3; pass++) {
		for (int i = 0; i < 50; i++, seq++)
			add(lv, 0, seq, 1000 + seq);
		bt_live_pass(lv, 100 * (uint64_t)(pass + 1), 1000);
	}
	/* a buffer of 1000 blocks: nothing overwritten, seq 0 sets no limit */
	bt_live_window(lv, 300, 1000, &w);
	CHECK(w.events == 150 && w.cont_start_ts == 1000 && w.limit_cpu == -1, "all: %" PRIu64, w.events);
	/* shrunk to 250 blocks at position 350: positions 0..99 are gone */
	bt_live_window(lv, 350, 250, &w);
	CHECK(w.events == 100 && w.first_ts == 1050 && w.cont_start_ts == 1050 && w.limit_cpu == 0,
	      "retained %" PRIu64 " from %" PRIu64 ", continuous from %" PRIu64 " (cpu %d)", w.events, w.first_ts,
	      w.cont_start_ts, w.limit_cpu);
	/* grown again: what was overwritten does not come back */
	bt_live_window(lv, 350, 1000, &w);
	CHECK(w.events == 100, "after a grow: %" PRIu64, w.events);
	bt_live_free(lv);
}

/* Many passes: checkpoints are thinned, the answer stays quick and close. */
static void test_long_run(void)
{
	struct bt_live *lv = bt_live_new(4);
	struct bt_seq_window w;
	REQUIRE(lv, "new");
	uint32_t seq[4] = { 0 };
	uint64_t ts = 0, pos = 0;
	for (int pass = 0; pass < 20000; pass++) {
		for (uint32_t c = 0; c < 4; c++)
			for (int i = 0; i < 5; i++)
				add(lv, c, seq[c]++, ++ts);
		bt_live_pass(lv, ++pos, 5000);
	}
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	bt_live_window(lv, pos, 5000, &w);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	/* the last 5000 passes: 100000 events, give or take one thinned
	 * checkpoint (256 kept of 20000 passes: every 128th) */
	CHECK(w.events + 4 * 5 * 128 >= 100000 && w.events <= 100000 + 4 * 5 * 128, "retained %" PRIu64, w.events);
	CHECK(w.gaps == 0 && w.cont_events <= w.events, "gaps %" PRIu64, w.gaps);
	printf("# window of 20000 passes computed in %.3f ms\n", ms);
	bt_live_free(lv);
}

/* The drain reports a batch as runs of consecutive seqs: the window must
 * be the one its events give one at a time, whatever the batches, with
 * nested events out of order, gaps, late events filling holes, seqs
 * wrapping at 2^32 and times going back. */
static void test_runs_same_as_events(void)
{
	struct bt_live *one = bt_live_new(2), *runs = bt_live_new(2);
	struct bt_seq_window a, b;
	struct bt_live_run batch[64];
	uint32_t seq = UINT32_MAX - 3000, nb = 0, late_from = 0, late_n = 0, late_in = 0;
	uint64_t ts = 1000, pos = 0, rnd = 42;
	REQUIRE(one && runs, "new");
	for (int i = 0; i < 20000; i++) {
		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t r = (uint32_t)(rnd >> 33), s = seq++;
		if (r % 97 == 0)
			seq += 1 + r % 5; /* a gap */
		if (!late_n && r % 29 == 0) { /* the next 2-4 (a nested program's) come late */
			late_from = seq, late_n = 2 + r % 3, late_in = 1 + r % 7;
			seq += late_n;
		}
		ts += r % 7 == 0 ? (uint64_t)-3 : 10; /* now and then a time back */
		uint32_t o = r % 13 < 2; /* now and then a uprobe's event */
		add_o(one, 0, s, ts, o);
		bt_live_run_take(batch, &nb, s, ts, o);
		if (late_n && !--late_in) {
			for (uint32_t k = 0; k < late_n; k++) {
				add(one, 0, late_from + k, ts);
				bt_live_run_take(batch, &nb, late_from + k, ts, 0);
			}
			late_n = 0;
		}
		if (nb >= 56 || r % 11 == 0) { /* a batch written */
			bt_live_add(runs, 0, batch, nb);
			nb = 0;
		}
		if (r % 101 == 0) {
			bt_live_add(runs, 0, batch, nb);
			nb = 0;
			pos += 1 + r % 3;
			bt_live_pass(one, pos, 400);
			bt_live_pass(runs, pos, 400);
		}
	}
	bt_live_add(runs, 0, batch, nb);
	bt_live_pass(one, pos, 400);
	bt_live_pass(runs, pos, 400);
	bt_live_window(one, pos, 400, &a);
	bt_live_window(runs, pos, 400, &b);
	CHECK(a.events > 1000 && a.gaps > 10, "the sequence has events (%" PRIu64 ") and gaps (%" PRIu64 ")", a.events,
	      a.gaps);
	CHECK(a.events == b.events && a.first_ts == b.first_ts && a.last_ts == b.last_ts && a.gaps == b.gaps &&
	      a.missing == b.missing && a.cpus_with_events == b.cpus_with_events && a.limit_cpu == b.limit_cpu &&
	      a.cont_start_ts == b.cont_start_ts && a.cont_events == b.cont_events,
	      "runs give the window of single events: events %" PRIu64 "/%" PRIu64 " gaps %" PRIu64 "/%" PRIu64
	      " missing %" PRIu64 "/%" PRIu64 " from %" PRIu64 "/%" PRIu64 " last %" PRIu64 "/%" PRIu64,
	      a.events, b.events, a.gaps, b.gaps, a.missing, b.missing, a.cont_start_ts, b.cont_start_ts, a.last_ts,
	      b.last_ts);
	bt_live_free(one);
	bt_live_free(runs);
}

int main(void)
{
	RUN(test_reorder_is_not_a_gap);
	RUN(test_batch_overtaken);
	RUN(test_batch_overtaken_long);
	RUN(test_overtaking_loss_is_a_gap);
	RUN(test_gap_starts_window);
	RUN(test_overwritten);
	RUN(test_long_run);
	RUN(test_runs_same_as_events);
	return h_done();
}
