// SPDX-License-Identifier: MIT
/*
 * stack_workload.c - a workload of known shape for the call-stack tests
 * (tests/kernel/test_stacks.sh), built with frame pointers.
 *
 *   stack_workload SECONDS [BLOCKS BLOCK_MS]
 *
 * Prints "ready PID READER_TID" and waits for a line on stdin, then for
 * SECONDS runs at once:
 *   - thread "cpu": in every slice of its CPU time (5 to 15 ms, random),
 *     70% in hot_a() (reached through path_a()) and 30% in hot_b() (through
 *     path_b());
 *   - thread "reader": BLOCKS times blocks in wait_for_input() on a pipe
 *     read, released BLOCK_MS later by thread "writer" in release_reader();
 *   - a child process that runs exited_work() for 300 ms and exits.
 * At the end prints "blocked_us N reader_tid T" (the reader's measured time
 * in read, its thread id) and exits.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;
static double seconds = 2;
static int blocks = 10, block_ms = 30;
static int pfd[2];
static volatile int reader_waiting;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time of the calling thread: what sampling measures (a wall-clock
 * slice would give the time the thread was preempted to whichever function
 * it was in, on a busy machine). */
static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The work itself, inlined into spin_until whatever the optimization
 * level: samples land in it, so their source lines show an inlined call
 * (the test finds the LINE: marks). */
static inline __attribute__((always_inline)) void mix_step(int i)
{
	sink = sink * 6364136223846793005ull + (uint64_t)i; /* LINE:mix_step_body */
}

/* Busy work until the thread used `until` of CPU, the clock read every
 * ~20 us of work (a sample inside that system call still has the caller's
 * user stack). */
__attribute__((noinline)) static void spin_until(uint64_t until)
{
	do {
		for (int i = 0; i < 20000; i++)
			mix_step(i); /* LINE:mix_step_call */
	} while (cpu_ns() < until);
}

__attribute__((noinline)) void hot_a(uint64_t ns)
{
	spin_until(cpu_ns() + ns); /* LINE:hot_a_call */
}

__attribute__((noinline)) void hot_b(uint64_t ns)
{
	spin_until(cpu_ns() + ns);
}

__attribute__((noinline)) void path_a(uint64_t ns)
{
	hot_a(ns);
	sink++;
}

__attribute__((noinline)) void path_b(uint64_t ns)
{
	hot_b(ns);
	sink++;
}

static void *cpu_main(void *arg)
{
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);

	(void)arg;
	uint64_t r = 88172645463325252ull;
	while (now_ns() < end) {
		/* slices of random length (0.5x..1.5x), 70/30 each: no fixed
		 * period for the sampling timer to beat with */
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		uint64_t k = 500 + r % 1001; /* per mille */
		path_a(7000ull * k);
		path_b(3000ull * k);
	}
	return NULL;
}

/* The system call made here, not in libc: glibc is built without frame
 * pointers, and a user stack taken inside its read() would skip the
 * function that called it (the walk starts from the caller's frame; a
 * leaf function has no frame of its own either: inlined). */
static inline __attribute__((always_inline)) long raw_syscall3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
}

__attribute__((noinline)) uint64_t wait_for_input(void)
{
	char c;
	uint64_t t0 = now_ns();

	reader_waiting = 1;
	if (raw_syscall3(SYS_read, pfd[0], (long)&c, 1) != 1)
		exit(3);
	return now_ns() - t0;
}

static uint64_t blocked_ns;
static int reader_tid;

static void *reader_main(void *arg)
{
	(void)arg;
	reader_tid = (int)syscall(SYS_gettid);
	for (int i = 0; i < blocks; i++)
		blocked_ns += wait_for_input();
	return NULL;
}

__attribute__((noinline)) void release_reader(void)
{
	if (raw_syscall3(SYS_write, pfd[1], (long)"x", 1) != 1)
		exit(3);
}

static void *writer_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < blocks; i++) {
		while (!reader_waiting)
			usleep(100);
		reader_waiting = 0;
		usleep((useconds_t)block_ms * 1000);
		release_reader();
	}
	return NULL;
}

__attribute__((noinline)) void exited_work(void)
{
	hot_a(300000000);
}

int main(int argc, char **argv)
{
	pthread_t c, r, w;
	pid_t child;
	char line[16];

	if (argc > 1)
		seconds = atof(argv[1]);
	if (argc > 3) {
		blocks = atoi(argv[2]);
		block_ms = atoi(argv[3]);
	}
	if (pipe(pfd))
		return 2;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	child = fork();
	if (child == 0) {
		exited_work();
		_exit(0);
	}
	pthread_create(&r, NULL, reader_main, NULL);
	pthread_create(&w, NULL, writer_main, NULL);
	pthread_create(&c, NULL, cpu_main, NULL);
	pthread_join(c, NULL);
	pthread_join(r, NULL);
	pthread_join(w, NULL);
	waitpid(child, NULL, 0);
	printf("blocked_us %llu reader_tid %d\n", (unsigned long long)(blocked_ns / 1000), reader_tid);
	return 0;
}
