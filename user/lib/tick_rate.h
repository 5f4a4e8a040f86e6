/* SPDX-License-Identifier: MIT */
/*
 * tick_rate.h - the rate of the CPU's tick counter (rdtsc, cntvct) in
 * nanoseconds of CLOCK_BOOTTIME, kept current for the life of a process
 * (function tracing stamps records in ticks; readers convert with it).
 *
 * The rate is measured over windows of at least a second between two
 * (ticks, ns) pairs, each window starting where the last ended, so it
 * follows NTP's slewing and never depends on the first pair. A window whose
 * rate jumps from the one in use (a suspend: BOOTTIME moved on, the counter
 * did not; a counter reset; a live migration to a host with another tick
 * rate) is not believed at once: the next window must agree with it.
 * No locking here: the caller serializes updates.
 */
#ifndef BTRACE_TICK_RATE_H
#define BTRACE_TICK_RATE_H
#include <stdint.h>

#define BT_TICK_WINDOW_NS 1000000000ull /* the shortest window: pair jitter (~100 ns) is 1e-7 of it */

struct bt_tick_rate {
	uint64_t tk, ns; /* the current window's start */
	uint64_t mult;   /* ns per tick * 2^32, the rate in use (0: none yet) */
	uint64_t pending; /* a window's rate that jumped from mult, waiting for a second; 0: none */
};

/* Start with the rate between two pairs taken close together (the first
 * calibration); the window starts at the second. */
void bt_tick_rate_init(struct bt_tick_rate *r, uint64_t tk0, uint64_t ns0, uint64_t tk1, uint64_t ns1);

/* A new pair. Ends the window if it is a window long (or if either clock
 * went back: the window restarts there); returns 1 when mult changed. */
int bt_tick_rate_update(struct bt_tick_rate *r, uint64_t tk, uint64_t ns);
#endif
