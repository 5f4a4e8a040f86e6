// SPDX-License-Identifier: MIT
/*
 * clocks.c - clocks and deadlines (see clocks.h). No dependency beyond libc:
 * libbtrace links it into applications.
 */
#include <time.h>
#include "clocks.h"

uint64_t bt_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t bt_now_ns(void)
{
	return bt_clock_ns(CLOCK_MONOTONIC);
}

void bt_deadline_after(clockid_t clk, uint64_t ns, struct timespec *ts)
{
	clock_gettime(clk, ts);
	ts->tv_sec += (time_t)(ns / 1000000000u);
	ts->tv_nsec += (long)(ns % 1000000000u);
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

void bt_cond_init_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
}

uint64_t bt_thread_cpu_ns(void)
{
	return bt_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

uint64_t bt_boottime_ns(void)
{
	return bt_clock_ns(CLOCK_BOOTTIME);
}

