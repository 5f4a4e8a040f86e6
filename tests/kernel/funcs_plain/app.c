// SPDX-License-Identifier: MIT
/* app.c - a program with no btrace call, built exactly as the README says
 * (test_funcs_plain.sh): a small string table worked by 3 threads, a
 * forked child doing the same, a SIGALRM storm (every 50 us, taken by the
 * workers) whose handler calls traced functions, and longjmps out of recursion. Every traced function counts
 * its own calls (atomically: handlers count too); the counts are printed
 * at the end, per process, for the test to compare with the recorder's:
 *   COUNT pid name calls
 * Names have 8 (clearkey), 16 (table_get_value1) and other lengths.
 *   app ITERS WAIT_MS [CHILD_WAIT_MS]: sleeps before the work (the child
 *   CHILD_WAIT_MS, default WAIT_MS: 0 with BTRACE_WAIT_MS works at once). */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define N_FN 8
enum { F_CLEARKEY, F_TABLE_GET_VALUE1, F_HASHSTR, F_ON_ALRM, F_JDEEP, F_JTOP, F_WORKER_LOOP, F_RUN_ALL };
static const char *const fn_names[N_FN] = { "clearkey", "table_get_value1", "hashstr", "on_alrm",
					    "jdeep", "jtop", "worker_loop", "run_all" };
static unsigned long counts[N_FN];
static void counted(int f) __attribute__((no_instrument_function));
static void counted(int f)
{
	__atomic_fetch_add(&counts[f], 1, __ATOMIC_RELAXED);
}

#define TSIZE 256
static char keys[TSIZE][16];
static __thread jmp_buf jb;
static volatile unsigned long sink;

__attribute__((noinline)) unsigned hashstr(const char *s)
{
	counted(F_HASHSTR);
	unsigned h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

__attribute__((noinline)) void clearkey(char *k)
{
	counted(F_CLEARKEY);
	k[0] = 0;
}

__attribute__((noinline)) int table_get_value1(const char *k)
{
	counted(F_TABLE_GET_VALUE1);
	return (int)(hashstr(k) % TSIZE);
}

/* The handler's own traced call. */
__attribute__((noinline)) void on_alrm(int sig)
{
	counted(F_ON_ALRM);
	sink += hashstr("signal");
	(void)sig;
}

__attribute__((noinline)) void jdeep(int n)
{
	counted(F_JDEEP);
	if (n == 0)
		longjmp(jb, 1);
	jdeep(n - 1);
	sink++;
}

__attribute__((noinline)) void jtop(void)
{
	counted(F_JTOP);
	if (setjmp(jb) == 0)
		jdeep(5);
}

__attribute__((noinline)) void *worker_loop(void *arg)
{
	counted(F_WORKER_LOOP);
	long iters = (long)arg;
	char k[16];
	for (long i = 0; i < iters; i++) {
		snprintf(k, sizeof(k), "k%ld", i % 997);
		sink += (unsigned long)table_get_value1(k);
		if (i % 64 == 0)
			clearkey(keys[i % TSIZE]);
		if (i % 512 == 0)
			jtop();
	}
	return NULL;
}

__attribute__((noinline)) void run_all(long iters)
{
	counted(F_RUN_ALL);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker_loop, (void *)iters);
	/* The storm goes to the workers, inside their hooks as often as not
	 * (a sleeping main thread would take every signal). */
	sigset_t al;
	sigemptyset(&al);
	sigaddset(&al, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &al, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
}

static void print_counts(void) __attribute__((no_instrument_function));
static void print_counts(void)
{
	for (int f = 0; f < N_FN; f++)
		printf("COUNT %d %s %lu\n", (int)getpid(), fn_names[f], counts[f]);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 20000;
	unsigned wait_ms = argc > 2 ? (unsigned)atoi(argv[2]) : 2000;
	unsigned child_ms = argc > 3 ? (unsigned)atoi(argv[3]) : wait_ms;
	usleep(wait_ms * 1000); /* registration: the recorder hands over a buffer */
	signal(SIGALRM, on_alrm);
	struct itimerval it = { { 0, 50 }, { 0, 50 } }; /* a storm: every 50 us */
	pid_t child = fork();
	if (child == 0) {
		usleep(child_ms * 1000); /* the child registers on its own */
		setitimer(ITIMER_REAL, &it, NULL); /* timers are not inherited */
		run_all(iters);
		struct itimerval z = { { 0, 0 }, { 0, 0 } };
		setitimer(ITIMER_REAL, &z, NULL);
		print_counts();
		usleep(300 * 1000); /* names read while alive */
		_exit(0);
	}
	setitimer(ITIMER_REAL, &it, NULL);
	run_all(iters);
	struct itimerval z = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &z, NULL);
	int st;
	waitpid(child, &st, 0);
	print_counts();
	usleep(300 * 1000);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
