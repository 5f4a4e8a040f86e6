// SPDX-License-Identifier: MIT
/*
 * app_funcs.c - a program built with -finstrument-functions and linked with
 * libbtrace (test_funcs.sh): a known call tree for the recorder to capture.
 *
 *   fib(20) on the main thread         21891 calls of fib
 *   16 pool threads, thread i:          pool_work 1, pool_leaf 100 + i
 *   one thread: nap() around usleep(NAP_US)
 *   one thread: 50 pool_leaf calls, then ends with SYS_exit (no TSD
 *   destructor: its function batch is never closed)
 * It prints "fib TID", "pool TID K", "nap TID T0 T1" (CLOCK_BOOTTIME
 * around the usleep), "killed TID N", then "phases-done"; then keeps one
 * thread calling tick() every ms (a batch open while the test dumps) until
 * the -S file exists.
 */
#include "btrace.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NAP_US 20000

static volatile long sink;

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static void pool_leaf(int i)
{
	sink += i;
}

static void pool_work(int k)
{
	for (int i = 0; i < k; i++)
		pool_leaf(i);
}

static void *pool_thread(void *arg)
{
	int k = (int)(long)arg;
	printf("pool %ld %d\n", (long)syscall(SYS_gettid), k);
	pool_work(k);
	return NULL;
}

static void nap(long *t0, long *t1)
{
	*t0 = now_ns();
	usleep(NAP_US);
	*t1 = now_ns();
}

static void *nap_thread(void *arg)
{
	long t0, t1;
	(void)arg;
	nap(&t0, &t1);
	printf("nap %ld %ld %ld\n", (long)syscall(SYS_gettid), t0, t1);
	return NULL;
}

static void *killed_thread(void *arg)
{
	(void)arg;
	printf("killed %ld 50\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	for (int i = 0; i < 50; i++)
		pool_leaf(i);
	syscall(SYS_exit, 0); /* no destructors, no unwinding: the batch stays open */
	return NULL;
}

static volatile int stop;

static void tick(void)
{
	sink++;
}

static void *tick_thread(void *arg)
{
	(void)arg;
	while (!stop) {
		tick();
		usleep(1000);
	}
	return NULL;
}

static void run_all(int loops, const char *stopfile);

int main(int argc, char **argv)
{
	const char *attached = NULL, *stopfile = NULL;
	int opt, loops = 1;
	while ((opt = getopt(argc, argv, "f:S:n:")) != -1) {
		if (opt == 'f')
			attached = optarg;
		else if (opt == 'S')
			stopfile = optarg;
		else if (opt == 'n')
			loops = atoi(optarg);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	btrace_init("app_funcs");
	for (int i = 0; i < 2000 && !btrace_attached(); i++)
		usleep(10000);
	if (!btrace_attached())
		fprintf(stderr, "app_funcs: no recorder (running untraced)\n");
	if (attached) {
		FILE *f = fopen(attached, "w");
		if (f)
			fclose(f);
	}
	run_all(loops, stopfile);
	return 0;
}

/* Traced from its entry (main was entered before the recorder attached). */
static void run_all(int loops, const char *stopfile)
{
	for (int l = 0; l < loops; l++)
		printf("fib %ld %d\n", (long)syscall(SYS_gettid), fib(20));
	pthread_t t[16], nt, kt, tt;
	for (int i = 0; i < 16; i++)
		pthread_create(&t[i], NULL, pool_thread, (void *)(long)(100 + i));
	for (int i = 0; i < 16; i++)
		pthread_join(t[i], NULL);
	pthread_create(&nt, NULL, nap_thread, NULL);
	pthread_join(nt, NULL);
	pthread_create(&kt, NULL, killed_thread, NULL);
	usleep(50000); /* it is gone by then (a raw SYS_exit cannot be joined) */
	printf("phases-done\n");
	pthread_create(&tt, NULL, tick_thread, NULL);
	for (int i = 0; stopfile && i < 3000 && access(stopfile, F_OK) != 0; i++)
		usleep(10000);
	stop = 1;
	pthread_join(tt, NULL);
	(void)kt;
}
