// SPDX-License-Identifier: MIT
/*
 * app_fork_burst.c - a child's first calls after fork (issue 36, item 3),
 * built with -finstrument-functions and linked with libbtrace
 * (test_fork_burst.sh). Only leaf() is traced; the rest is not
 * instrumented, so a process's leaf count is exact.
 *
 *   app_fork_burst fork N   once attached: fork; the child calls leaf() N
 *                           times at once and prints "child PID N NS FORK_NS"
 *                           (the ns from fork()'s return to its last call;
 *                           from before fork() to its return in the child)
 *   app_fork_burst exec N   the same, but the child execs this program
 *                           as "burst N" first
 *   app_fork_burst burst N  calls leaf() N times from main, prints
 *                           "burst PID N NS" (from main's start)
 * The parent prints "parent PID" and waits for its child; exit 0, or 1
 * when it never attached (no recorder in 10 s; with BTRACE_DISABLE=1 it
 * does not wait).
 */
#include "btrace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOI __attribute__((no_instrument_function))

static volatile long sink;

__attribute__((noinline)) void leaf(long i)
{
	sink += i;
}

static NOI long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static NOI void burst(const char *what, long n, long t0, long tfork)
{
	for (long i = 0; i < n; i++)
		leaf(i);
	printf("%s %d %ld %ld %ld\n", what, (int)getpid(), n, now_ns() - t0, tfork);
	fflush(stdout);
}

NOI int main(int argc, char **argv)
{
	long t0 = now_ns();
	const char *mode = argc > 1 ? argv[1] : "fork";
	long n = argc > 2 ? atol(argv[2]) : 1000;
	char num[32];

	if (strcmp(mode, "burst") == 0) {
		burst("burst", n, t0, 0);
		return 0;
	}
	/* BTRACE_DISABLE=1: run untraced (another tracer's turn) */
	for (int i = 0; btrace_init(NULL) == 0 && i < 10000 && !btrace_attached(); i++)
		usleep(1000);
	if (btrace_init(NULL) == 0 && !btrace_attached())
		return 1;
	printf("parent %d\n", (int)getpid());
	fflush(stdout);
	long tf = now_ns();
	pid_t c = fork();
	if (c == 0) {
		long t1 = now_ns();

		if (strcmp(mode, "exec") == 0) {
			snprintf(num, sizeof(num), "%ld", n);
			execl("/proc/self/exe", argv[0], "burst", num, (char *)NULL);
			_exit(127);
		}
		burst("child", n, t1, t1 - tf);
		exit(0);
	}
	int st = 0;
	waitpid(c, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 2;
}
