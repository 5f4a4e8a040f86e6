// SPDX-License-Identifier: MIT
/*
 * func_bench.c - the workload of scripts/bench_funcs.sh: recursive fib(N),
 * timed, in one of the builds the script makes from this one file:
 *
 *   plain      no instrumentation (the per-call baseline)
 *   instr      -finstrument-functions + libbtrace (with or without a recorder)
 *   pg         -pg, no libbtrace (for `uftrace record`)
 *   manual     -DMANUAL: BTRACE_BEGIN/END around each call's body + libbtrace
 *   hooks0     -finstrument-functions -DHOOKS=0, no libbtrace: hooks that
 *              return at once (the floor the compiler's call sets)
 *   hooksclk   -DHOOKS=1: hooks that read the TSC and store it with the
 *              function (the floor of any timed record of a call)
 *   hooksflag  -DHOOKS=2: hooks that load a flag and branch past a call
 *              (the floor of any hook that can be off)
 *
 *   func_bench [-n N] [-r REPS] [-w] [-t]
 *     -w  wait (up to 5 s) for a recorder to attach first; fail without one
 *     -t  also time a bare rdtsc (the clock floor of a trace point)
 * Prints "calls C", then one "ns_per_call X" per rep, and "rdtsc_ns X".
 */
#ifndef NO_BTRACE
#include "btrace.h"
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

static long calls;

#ifdef HOOKS
#define NOINSTR_ __attribute__((no_instrument_function))
#if HOOKS == 2
int hook_on; /* never set: not static, so every hook loads it */
__attribute__((noinline)) NOINSTR_ void hook_slow(void *fn)
{
	__asm__ volatile("" ::"r"(fn) : "memory");
}
#define HOOK_BODY                                                         \
	do {                                                              \
		if (__builtin_expect(__atomic_load_n(&hook_on, __ATOMIC_RELAXED), 0)) \
			hook_slow(fn);                                    \
	} while (0)
#elif HOOKS
__thread uint64_t hook_ts, hook_fn; /* not static: the stores stay */
#define HOOK_BODY                                  \
	do {                                       \
		hook_ts = __rdtsc();               \
		hook_fn = (uint64_t)(uintptr_t)fn; \
	} while (0)
#else
#define HOOK_BODY (void)fn
#endif
NOINSTR_ void __cyg_profile_func_enter(void *fn, void *site)
{
	(void)site;
	HOOK_BODY;
}
NOINSTR_ void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	HOOK_BODY;
}
#endif

#define NOINSTR __attribute__((no_instrument_function))

static NOINSTR double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

__attribute__((noinline)) int fib(int n)
{
#ifdef MANUAL
	BTRACE_BEGIN("fib");
	int r = n < 2 ? n : fib(n - 1) + fib(n - 2);
	BTRACE_END();
	return r;
#else
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
#endif
}

static NOINSTR long fib_calls(int n)
{
	long a = 1, b = 1; /* calls(n) = 2 fib(n + 1) - 1 */
	for (int i = 1; i < n; i++) {
		long c = a + b;
		a = b;
		b = c;
	}
	return 2 * (n < 1 ? 1 : b) - 1;
}

int main(int argc, char **argv)
{
	int n = 30, reps = 5, wait = 0, rdtsc = 0, c;
	while ((c = getopt(argc, argv, "n:r:wt")) != -1) {
		if (c == 'n')
			n = atoi(optarg);
		else if (c == 'r')
			reps = atoi(optarg);
		else if (c == 'w')
			wait = 1;
		else if (c == 't')
			rdtsc = 1;
		else
			return 2;
	}
#ifndef NO_BTRACE
	if (wait) {
		btrace_init("func_bench");
		for (int i = 0; i < 500 && !btrace_attached(); i++)
			usleep(10000);
		if (!btrace_attached()) {
			fprintf(stderr, "func_bench: no recorder attached\n");
			return 1;
		}
	}
#else
	(void)wait;
#endif
	calls = fib_calls(n);
	printf("calls %ld\n", calls);
	volatile int sink = 0;
	for (int r = 0; r < reps; r++) {
		double t0 = now();
		sink += fib(n);
		printf("ns_per_call %.3f\n", (now() - t0) / (double)calls);
		fflush(stdout);
	}
	if (rdtsc) {
		uint64_t acc = 0;
		double t0 = now();
		for (int i = 0; i < 10000000; i++)
			acc += __rdtsc();
		printf("rdtsc_ns %.3f\n", (now() - t0) / 1e7);
		sink += (int)acc;
	}
	return sink == -1;
}
