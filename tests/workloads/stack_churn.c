// SPDX-License-Identifier: MIT
/*
 * stack_churn.c - process churn for the stack table's reclamation test
 * (tests/kernel/test_stacks_churn.sh): for SECS seconds, one short-lived
 * child after another (at most two at a time), each spinning ~MS ms on the
 * CPU, then exiting. Every child is a new process, so every one of its
 * stacks is a new one for the recorder (user stacks are per process).
 *
 * A child's call chain says which child it is: an even pid spins through
 * churn_even(), an odd one through churn_odd(), so a test can check that
 * the frames a dump attaches to a sample are that process's own.
 *
 * Prints "parent PID" at the start, "children N" at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void churn_leaf(double until)
{
	unsigned long x = sink;

	while (now_s() < until)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

__attribute__((noinline)) static void churn_even(double until)
{
	churn_leaf(until);
	__asm__ volatile("" ::: "memory"); /* not a tail call: keeps this frame */
}

__attribute__((noinline)) static void churn_odd(double until)
{
	churn_leaf(until);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void churn_child(double ms)
{
	double until = now_s() + ms / 1000.0;

	if (getpid() % 2 == 0)
		churn_even(until);
	else
		churn_odd(until);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10, ms = argc > 2 ? atof(argv[2]) : 50;
	double end = now_s() + secs;
	unsigned long children = 0;
	int running = 0;

	printf("parent %d\n", (int)getpid());
	fflush(stdout);
	while (now_s() < end) {
		if (running == 2) {
			if (wait(NULL) > 0)
				running--;
			continue;
		}
		pid_t p = fork();
		if (p == 0) {
			churn_child(ms);
			_exit(0);
		}
		if (p > 0) {
			running++;
			children++;
		}
	}
	while (running-- > 0)
		wait(NULL);
	printf("children %lu\n", children);
	return 0;
}
