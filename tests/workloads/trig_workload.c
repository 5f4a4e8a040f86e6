// SPDX-License-Identifier: MIT
/*
 * trig_workload.c - deliberate anomalies for tests/kernel/test_trigger.sh, one
 * per mode; the process (and every thread) is named "trigwork" so triggers
 * can filter on comm=trigwork and ignore the rest of the machine.
 *
 *   latency MS    two CPU-bound threads pinned to CPU 0 and a third, pinned
 *                 there too and SCHED_IDLE, woken every millisecond for MS ms:
 *                 it waits behind the hogs (sched-latency)
 *   sleep MS      one thread sleeps MS ms inside clock_nanosleep (syscall, offcpu)
 *   func MS       calls trig_slow(MS), which sleeps MS ms (func>T on trig_slow)
 *   crash         a child dereferences NULL (crash)
 *   handled       a child takes a SIGSEGV it handles and exits 0 (no crash)
 *   crash-thread  a child process "trigcrash" whose thread "crasher" dereferences NULL
 *   alloc MB      touches MB MiB, 1 MiB at a time (oom inside memory.max)
 *   storm N MS    N sleeps of 1 ms spread over MS ms (a storm of syscall hits)
 *
 * Prints "ready" when started and "done" at the end (stdout, unbuffered).
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts))
		;
}

static void pin0(void)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(0, &s);
	pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

static void *hog(void *arg)
{
	pin0();
	while (!stop)
		__asm__ volatile("" ::: "memory");
	return arg;
}

static void *woken(void *arg)
{
	struct sched_param sp = { 0 };
	long ms = (long)arg;
	struct timespec t0, t;

	pin0();
	pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		struct timespec one = { 0, 1000000L };

		nanosleep(&one, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	return NULL;
}

__attribute__((noinline)) int trig_slow(int ms)
{
	sleep_ms(ms);
	__asm__ volatile("" ::: "memory");
	return ms;
}

static void on_segv(int sig)
{
	_exit(sig == SIGSEGV ? 0 : 1);
}

static void *crash_now(void *name)
{
	if (name)
		prctl(PR_SET_NAME, (const char *)name);
	sleep_ms(50);
	int *volatile np = NULL;

	*(volatile int *)np = 1;
	return NULL;
}

/* handled: catch the SIGSEGV; thread: crash in a thread of another name */
static int child(int handled, const char *thread)
{
	pid_t p = fork();
	int st;

	if (p == 0) {
		prctl(PR_SET_NAME, "trigcrash");
		if (handled)
			signal(SIGSEGV, on_segv);
		if (thread) {
			pthread_t t;
			pthread_create(&t, NULL, crash_now, (void *)thread);
			pthread_join(t, NULL);
		} else {
			crash_now(NULL);
		}
		_exit(3);
	}
	waitpid(p, &st, 0);
	printf("child %s %d\n", WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long a = argc > 2 ? atol(argv[2]) : 0, b = argc > 3 ? atol(argv[3]) : 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	prctl(PR_SET_NAME, "trigwork");
	printf("ready %d\n", (int)getpid());
	if (!strcmp(mode, "latency")) {
		pthread_t h1, h2, w;

		pthread_create(&h1, NULL, hog, NULL);
		pthread_create(&h2, NULL, hog, NULL);
		pthread_create(&w, NULL, woken, (void *)a);
		pthread_join(w, NULL);
		stop = 1;
		pthread_join(h1, NULL);
		pthread_join(h2, NULL);
	} else if (!strcmp(mode, "sleep")) {
		sleep_ms(a);
	} else if (!strcmp(mode, "func")) {
		trig_slow((int)a);
	} else if (!strcmp(mode, "crash") || !strcmp(mode, "handled")) {
		child(!strcmp(mode, "handled"), NULL);
	} else if (!strcmp(mode, "crash-thread")) {
		child(0, "crasher");
	} else if (!strcmp(mode, "alloc")) {
		for (long i = 0; i < a; i++) {
			char *m = malloc(1 << 20);

			if (!m)
				return 1;
			memset(m, 1, 1 << 20);
		}
	} else if (!strcmp(mode, "storm")) {
		struct timespec t0, t;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (long i = 0; i < a; i++) {
			struct timespec one = { 0, 1000000L };

			nanosleep(&one, NULL);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		printf("storm %ld sleeps in %ld ms\n", a,
		       (long)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000));
		(void)b;
	} else {
		fprintf(stderr, "usage: trig_workload latency|sleep|func|crash|handled|crash-thread|alloc|storm ARG\n");
		return 2;
	}
	printf("done\n");
	return 0;
}
