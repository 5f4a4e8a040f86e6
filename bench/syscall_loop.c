// SPDX-License-Identifier: MIT
/*
 * syscall_loop.c - a system-call load for the record benchmarks
 * (scripts/bench_record.sh): N threads call getppid() as fast as they can,
 * or at a set total rate, for T seconds, then one summary line.
 *
 *   syscall_loop [-t THREADS] [-d SECONDS] [-r CALLS_PER_S]
 *
 *   -t  threads (default 1)
 *   -d  duration in seconds, fractions allowed (default 2)
 *   -r  total target rate over all threads; 0 = as fast as possible (default)
 *
 * Output (stdout), one line:
 *   syscall_loop: threads=1 seconds=2.000 calls=12345678 calls_per_s=6172839 target=0
 *
 * Each call is one sys_enter and one sys_exit event when `record -e syscalls`
 * runs. A paced thread checks the clock (vDSO, no system call) every BATCH
 * calls and sleeps with clock_nanosleep() until the next batch is due, so
 * pacing adds two events per batch at most, and leaves the CPU to others (the
 * recorder's drain thread) instead of spinning.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#define MAX_THREADS 64
#define BATCH 256

struct worker {
	pthread_t thread;
	uint64_t calls;     /* written by the worker, read after join */
	double rate;        /* calls/s for this thread, 0 = unpaced */
	char pad[64];       /* keep workers' counters off each other's lines */
};

static atomic_int go, stop_flag;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t calls = 0, t0;

	/* Acquire pairs with the release store of go in main(). */
	while (!atomic_load_explicit(&go, memory_order_acquire))
		;
	t0 = now_ns();
	while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
		for (int i = 0; i < BATCH; i++)
			syscall(SYS_getppid);
		calls += BATCH;
		if (w->rate > 0) {
			/* When is call number `calls` due? Sleep until then if early. */
			uint64_t due = t0 + (uint64_t)((double)calls * 1e9 / w->rate);

			if (due > now_ns() + 20000) {
				struct timespec ts = { (time_t)(due / 1000000000ull),
						       (long)(due % 1000000000ull) };

				clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			}
		}
	}
	w->calls = calls;
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: syscall_loop [-t THREADS] [-d SECONDS] [-r CALLS_PER_S]\n");
}

int main(int argc, char **argv)
{
	static struct worker workers[MAX_THREADS];
	int nthreads = 1, opt;
	double seconds = 2.0, rate = 0;
	uint64_t total = 0, t0, t1;
	struct timespec ts;
	char *end;

	while ((opt = getopt(argc, argv, "t:d:r:h")) != -1) {
		switch (opt) {
		case 't':
			nthreads = (int)strtol(optarg, &end, 10);
			if (*end || nthreads < 1 || nthreads > MAX_THREADS) {
				fprintf(stderr, "syscall_loop: -t takes 1 to %d\n", MAX_THREADS);
				return 2;
			}
			break;
		case 'd':
			seconds = strtod(optarg, &end);
			if (*end || !(seconds > 0)) {
				fprintf(stderr, "syscall_loop: -d takes a positive number of seconds\n");
				return 2;
			}
			break;
		case 'r':
			rate = strtod(optarg, &end);
			if (*end || rate < 0) {
				fprintf(stderr, "syscall_loop: -r takes calls per second (0 = unpaced)\n");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}

	for (int i = 0; i < nthreads; i++) {
		workers[i].rate = rate / nthreads;
		errno = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
		if (errno) {
			perror("syscall_loop: pthread_create");
			return 1;
		}
	}
	t0 = now_ns();
	/* Release pairs with the acquire loads in worker_main(). */
	atomic_store_explicit(&go, 1, memory_order_release);
	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	atomic_store_explicit(&stop_flag, 1, memory_order_relaxed);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(workers[i].thread, NULL);
		total += workers[i].calls;
	}
	t1 = now_ns();
	printf("syscall_loop: threads=%d seconds=%.3f calls=%llu calls_per_s=%.0f target=%.0f\n",
	       nthreads, (double)(t1 - t0) / 1e9, (unsigned long long)total,
	       (double)total * 1e9 / (double)(t1 - t0), rate);
	return 0;
}
