// SPDX-License-Identifier: MIT
/*
 * app_funcs_spin.c - built with -finstrument-functions and linked with
 * libbtrace (test_dump_capture.sh, bench_capture.sh): calls a small function
 * as fast as it can, so its buffer is overwritten many times a second.
 *
 *   -s MS    spin for MS milliseconds, then stop calling (default 2000)
 *   -t N     N spinning threads (default 1)
 *   -w MS    once, MS milliseconds into the spin, the main thread calls
 *            slow_call(), which sleeps 5 ms (an app-func trigger's target)
 *   -r N     N rounds (test_trigger_busy.sh): every -g MS (default 600) the
 *            main thread writes the instant "mark" (value 2k) then calls
 *            slow_call(); -g MS later the instant "mark" (2k+1) then
 *            BTRACE_TRIGGER("stall"); -s is then the time after the rounds
 *   -n N     each thread stops after N calls (or -s MS, whichever first)
 *   -f FILE  created once attached;  -S FILE  exit once it exists
 * Built -DNO_BTRACE -pg (bench_dump_app.sh), the same program for uftrace:
 * no libbtrace, its calls and triggers compiled out.
 * Prints "spinning PID", "slow TID T0 T1" (CLOCK_BOOTTIME around the
 * sleep), "stall K T" (before the trigger) and "stopped CALLS" when every
 * thread stopped calling.
 */
#ifndef NO_BTRACE
#include "btrace.h"
#else
#define btrace_init(name) ((void)(name))
#define btrace_attached() 1
#define BTRACE_INSTANT(name, v) ((void)(v))
#define BTRACE_TRIGGER(name) ((void)0)
#endif

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile long sink;
static volatile int stop;
static long max_calls; /* -n: 0 is no bound */
static int running;    /* spinning threads */

__attribute__((no_instrument_function)) static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void leaf(long i)
{
	sink += i;
}

static void *spin(void *arg)
{
	long n = 0;
	while (!stop && (!max_calls || n < max_calls))
		leaf(n++);
	*(long *)arg = n;
	__atomic_sub_fetch(&running, 1, __ATOMIC_RELEASE); /* pairs with main's wait */
	return NULL;
}

static void slow_call(long *t0, long *t1)
{
	*t0 = now_ns();
	usleep(5000);
	*t1 = now_ns();
}

int main(int argc, char **argv)
{
	const char *attached = NULL, *stopfile = NULL;
	long spin_ms = 2000, slow_ms = -1, rounds = 0, gap_ms = 600;
	int opt, nthreads = 1;
	while ((opt = getopt(argc, argv, "s:t:w:r:g:f:S:n:")) != -1) {
		if (opt == 'n')
			max_calls = atol(optarg);
		else if (opt == 's')
			spin_ms = atol(optarg);
		else if (opt == 't')
			nthreads = atoi(optarg);
		else if (opt == 'w')
			slow_ms = atol(optarg);
		else if (opt == 'r')
			rounds = atol(optarg);
		else if (opt == 'g')
			gap_ms = atol(optarg);
		else if (opt == 'f')
			attached = optarg;
		else if (opt == 'S')
			stopfile = optarg;
	}
	if (nthreads < 1 || nthreads > 64)
		nthreads = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	btrace_init("app_spin");
	for (int i = 0; i < 2000 && !btrace_attached(); i++)
		usleep(10000);
	if (!btrace_attached())
		fprintf(stderr, "app_funcs_spin: no recorder (running untraced)\n");
	if (attached) {
		FILE *f = fopen(attached, "w");
		if (f)
			fclose(f);
	}
	printf("spinning %d\n", (int)getpid());
	pthread_t th[64];
	long calls[64] = { 0 }, total = 0, t0 = now_ns();
	running = nthreads;
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, spin, &calls[i]);
	if (slow_ms >= 0) {
		long s0, s1;
		usleep((useconds_t)slow_ms * 1000);
		slow_call(&s0, &s1);
		printf("slow %ld %ld %ld\n", (long)syscall(SYS_gettid), s0, s1);
	}
	for (long k = 0; k < rounds; k++) {
		long s0, s1;
		usleep((useconds_t)gap_ms * 1000);
		BTRACE_INSTANT("mark", 2 * k);
		slow_call(&s0, &s1);
		printf("slow %ld %ld %ld\n", (long)syscall(SYS_gettid), s0, s1);
		usleep((useconds_t)gap_ms * 1000);
		BTRACE_INSTANT("mark", 2 * k + 1);
		printf("stall %ld %ld\n", k, now_ns());
		BTRACE_TRIGGER("stall");
	}
	if (rounds)
		t0 = now_ns();
	while (now_ns() - t0 < spin_ms * 1000000L && __atomic_load_n(&running, __ATOMIC_ACQUIRE) > 0)
		usleep(1000);
	stop = 1;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		total += calls[i];
	}
	printf("stopped %ld\n", total);
	while (stopfile && access(stopfile, F_OK) != 0)
		usleep(10000);
	return 0;
}
