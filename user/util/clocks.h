/* SPDX-License-Identifier: MIT */
/*
 * clocks.h - clocks in nanoseconds and deadlines for timed waits.
 */
#ifndef BTRACE_CLOCKS_H
#define BTRACE_CLOCKS_H
#include <pthread.h>
#include <stdint.h>
#include <time.h>

uint64_t bt_clock_ns(clockid_t id);
uint64_t bt_now_ns(void);      /* CLOCK_MONOTONIC */
uint64_t bt_boottime_ns(void); /* CLOCK_BOOTTIME, the clock of event timestamps */
uint64_t bt_thread_cpu_ns(void); /* the calling thread's CPU time */
/* *ts = ns from now on clock clk: a deadline for pthread_cond_timedwait
 * on a condition variable of that clock. */
void bt_deadline_after(clockid_t clk, uint64_t ns, struct timespec *ts);
/* A condition variable whose timed waits take CLOCK_MONOTONIC deadlines. */
void bt_cond_init_monotonic(pthread_cond_t *c);
#endif
