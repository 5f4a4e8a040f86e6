// SPDX-License-Identifier: MIT
/* test_tick_rate.c - the tick counter's rate over a process's life
 * (user/lib/tick_rate.c): refined window by window, a jump (suspend,
 * counter reset, migration) believed only when a second window agrees. */
#include <stdint.h>
#include "harness.h"
#include "tick_rate.h"

#define GHZ3 ((uint64_t)((1ull << 32) / 3)) /* ns per tick * 2^32 at 3 GHz */
#define SEC 1000000000ull

static int near(uint64_t m, uint64_t want, uint64_t ppm)
{
	uint64_t d = m > want ? m - want : want - m;
	return (unsigned __int128)d * 1000000u <= (unsigned __int128)want * ppm;
}

/* A 3 GHz counter: ticks at boot time ns. */
static uint64_t tk3(uint64_t ns)
{
	return ns * 3;
}

static void test_refined_by_windows(void)
{
	struct bt_tick_rate r;
	/* a first 10 ms calibration 30 ticks off (1e-6) */
	bt_tick_rate_init(&r, tk3(SEC), SEC, tk3(SEC + 10000000) + 30, SEC + 10000000);
	CHECK(near(r.mult, GHZ3, 2) && !near(r.mult, GHZ3, 0), "the first rate is the calibration's");
	CHECK(bt_tick_rate_update(&r, tk3(SEC + SEC / 2), SEC + SEC / 2) == 0 && r.tk == tk3(SEC + 10000000) + 30,
	      "half a second later: the window goes on");
	CHECK(bt_tick_rate_update(&r, tk3(3 * SEC), 3 * SEC) == 1 && near(r.mult, GHZ3, 1) && r.ns == 3 * SEC,
	      "a window of 2 s refines the rate and the next starts at its end");
	/* NTP slews BOOTTIME by 400 ppm: followed */
	uint64_t ns = 3 * SEC + 2 * SEC + 2 * SEC * 400 / 1000000;
	CHECK(bt_tick_rate_update(&r, tk3(5 * SEC), ns) == 1 && near(r.mult, GHZ3 + GHZ3 / 2500, 5),
	      "a slew of 400 ppm is followed at once");
}

static void test_suspend_is_not_believed(void)
{
	struct bt_tick_rate r;
	bt_tick_rate_init(&r, 0, 0, tk3(SEC), SEC);
	uint64_t m = r.mult;
	/* 30 s suspended during a 2 s window: BOOTTIME moved 32 s, the counter 2 s */
	CHECK(bt_tick_rate_update(&r, tk3(3 * SEC), 33 * SEC) == 0 && r.mult == m && r.pending,
	      "a window across a suspend leaves the rate alone");
	CHECK(r.ns == 33 * SEC && r.tk == tk3(3 * SEC), "the next window starts after the resume");
	CHECK(bt_tick_rate_update(&r, tk3(5 * SEC), 35 * SEC) == 0 && r.mult == m && !r.pending,
	      "the window after agrees with the old rate: the jump is forgotten");
}

static void test_counter_reset_and_migration(void)
{
	struct bt_tick_rate r;
	bt_tick_rate_init(&r, 0, 0, tk3(SEC), SEC);
	uint64_t m = r.mult;
	CHECK(bt_tick_rate_update(&r, 1000, 4 * SEC) == 0 && r.mult == m && r.tk == 1000,
	      "the counter went back (reset): the window restarts, the rate stays");
	/* migrated to a 2 GHz host: two windows agree on the new rate */
	uint64_t tk = 1000 + 2 * 2 * SEC;
	CHECK(bt_tick_rate_update(&r, tk, 6 * SEC) == 0 && r.mult == m, "one window at 2 GHz: not yet believed");
	CHECK(bt_tick_rate_update(&r, tk + 2 * 3 * SEC, 9 * SEC) == 1 && near(r.mult, (1ull << 32) / 2, 1),
	      "a second window at 2 GHz: the new rate is taken");
	CHECK(bt_tick_rate_update(&r, tk + 2 * 3 * SEC + 10, 8 * SEC) == 0 && r.ns == 8 * SEC,
	      "BOOTTIME before the window's start: restart, no rate");
}

int main(void)
{
	RUN(test_refined_by_windows);
	RUN(test_suspend_is_not_believed);
	RUN(test_counter_reset_and_migration);
	return h_done();
}
