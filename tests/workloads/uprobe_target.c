// SPDX-License-Identifier: MIT
/*
 * uprobe_target - the process the uprobe tests attach to. Known functions,
 * called a known number of times with known arguments and return values, by
 * each of THREADS threads:
 *
 *   bt_add(i, 1000 + i) = 1000 + 2i          i = 0..N_ADD-1
 *   bt_args6(10k+1, ..., 10k+6) = 60k + 21   k = 0..N_ARGS6-1
 *   bt_fib(FIB_N) = 8, FIB_CALLS calls in all (recursive: nested returns)
 *   bt_sleep_us(2000) = 2000                  N_SLEEP times (durations >= 2 ms)
 *   foo::baz(int)  (_ZN3foo3bazEi)  x -> 2x,  x = 0..N_BAZ-1
 *   foo::bar(int)  (_ZN3foo3barEi)  x -> x+1, x = 0..N_BAR_INT-1   (overloads:
 *   foo::bar(long) (_ZN3foo3barEl)  x -> x+2, x = 0..N_BAR_LONG-1   "foo::bar" is ambiguous)
 *   malloc(4242)                              N_MALLOC times (libc)
 *   USDT btrace_test:tick(i, i*i)             i = 0..N_TICK-1
 *
 *   bt_ident(0x100000005 + i) = itself        i = 0..N_IDENT-1
 *
 * bt_unprobeable() starts with a trap instruction uprobes refuse; it is
 * never called.
 *
 * Usage: uprobe_target [-t THREADS] [--go] [--linger] [--helper]
 *   Prints "ready PID" and waits for SIGUSR1 (unless --go), runs the workload,
 *   prints "done" and exits; with --linger waits for another SIGUSR1 first.
 *   --helper: a thread that exists from the start ("helper TID" before
 *   "ready") and exits before the workload starts (tests of -p TID).
 *   Built -O1 -fno-inline (Makefile); noipa keeps every call and its ABI.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/sdt.h>

#define N_ADD 50
#define N_ARGS6 5
#define FIB_N 6
#define N_SLEEP 3
#define SLEEP_US 2000
#define N_BAZ 7
#define N_BAR_INT 3
#define N_BAR_LONG 4
#define N_MALLOC 9
#define MALLOC_SIZE 4242
#define N_TICK 20
#define N_IDENT 5

#define PROBED __attribute__((noipa, used))

PROBED long bt_add(long a, long b)
{
	return a + b;
}

PROBED long bt_args6(long a, long b, long c, long d, long e, long f)
{
	return a + b + c + d + e + f;
}

PROBED int bt_fib(int n)
{
	return n <= 2 ? 1 : bt_fib(n - 1) + bt_fib(n - 2);
}

PROBED unsigned bt_sleep_us(unsigned us)
{
	usleep(us);
	return us;
}

/* C++-mangled names in a C program. */
PROBED int foo_baz(int x) __asm__("_ZN3foo3bazEi");
PROBED int foo_baz(int x)
{
	return 2 * x;
}

PROBED int foo_bar_int(int x) __asm__("_ZN3foo3barEi");
PROBED int foo_bar_int(int x)
{
	return x + 1;
}

PROBED long foo_bar_long(long x) __asm__("_ZN3foo3barEl");
PROBED long foo_bar_long(long x)
{
	return x + 2;
}

/* Never called: a trap as first instruction, which uprobes cannot probe. */
void bt_unprobeable(void);
#if defined(__x86_64__)
__asm__(".text\n.globl bt_unprobeable\n.type bt_unprobeable,@function\n"
	"bt_unprobeable:\n\tint3\n\tret\n.size bt_unprobeable, .-bt_unprobeable\n");
#elif defined(__aarch64__)
__asm__(".text\n.globl bt_unprobeable\n.type bt_unprobeable,%function\n"
	"bt_unprobeable:\n\tbrk #0\n\tret\n.size bt_unprobeable, .-bt_unprobeable\n");
#else
void bt_unprobeable(void) {}
#endif

/* bt_ident(x) = x in two instructions, "mov %rdi,%rax" (3 bytes) then ret:
 * bt_ident+1 is inside the mov (a probe there once made bt_ident(0x100000005)
 * return 5), bt_ident+3 is the ret. */
long bt_ident(long x);
#if defined(__x86_64__)
__asm__(".text\n.globl bt_ident\n.type bt_ident,@function\n"
	"bt_ident:\n\tmov %rdi,%rax\n\tret\n.size bt_ident, .-bt_ident\n");
#elif defined(__aarch64__)
__asm__(".text\n.globl bt_ident\n.type bt_ident,%function\n"
	"bt_ident:\n\tmov x0, x0\n\tret\n.size bt_ident, .-bt_ident\n");
#else
PROBED long bt_ident(long x) { return x; }
#endif

static volatile long sink;

static void *workload(void *arg)
{
	(void)arg;
	for (long i = 0; i < N_ADD; i++)
		sink += bt_add(i, 1000 + i);
	for (long k = 0; k < N_ARGS6; k++)
		sink += bt_args6(10 * k + 1, 10 * k + 2, 10 * k + 3, 10 * k + 4, 10 * k + 5, 10 * k + 6);
	sink += bt_fib(FIB_N);
	for (int i = 0; i < N_SLEEP; i++)
		sink += bt_sleep_us(SLEEP_US);
	for (int x = 0; x < N_BAZ; x++)
		sink += foo_baz(x);
	for (int x = 0; x < N_BAR_INT; x++)
		sink += foo_bar_int(x);
	for (long x = 0; x < N_BAR_LONG; x++)
		sink += foo_bar_long(x);
	for (int i = 0; i < N_MALLOC; i++) {
		void *volatile p = malloc(MALLOC_SIZE);
		sink += p != NULL;
		free(p);
	}
	for (long i = 0; i < N_IDENT; i++)
		sink += bt_ident(0x100000005L + i) == 0x100000005L + i;
	for (long i = 0; i < N_TICK; i++) {
		long sq = i * i;
		DTRACE_PROBE2(btrace_test, tick, i, sq);
		sink += sq;
	}
	return NULL;
}

static pthread_mutex_t helper_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t helper_cond = PTHREAD_COND_INITIALIZER;
static int helper_tid, helper_go;

/* Says its thread id, waits for the go, exits without calling anything. */
static void *helper(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&helper_lock);
	helper_tid = (int)gettid();
	pthread_cond_broadcast(&helper_cond);
	while (!helper_go)
		pthread_cond_wait(&helper_cond, &helper_lock);
	pthread_mutex_unlock(&helper_lock);
	return NULL;
}

static void wait_usr1(const sigset_t *set)
{
	int sig;

	while (sigwait(set, &sig) != 0 || sig != SIGUSR1)
		;
}

int main(int argc, char **argv)
{
	int threads = 2, go = 0, linger = 0, with_helper = 0;
	pthread_t th[64], hth;
	sigset_t set;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-t") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--go") == 0)
			go = 1;
		else if (strcmp(argv[i], "--linger") == 0)
			linger = 1;
		else if (strcmp(argv[i], "--helper") == 0)
			with_helper = 1;
		else {
			fprintf(stderr, "usage: %s [-t THREADS] [--go] [--linger]\n", argv[0]);
			return 2;
		}
	}
	if (threads < 1 || threads > 64)
		threads = 2;
	/* Blocked before "ready": a SIGUSR1 sent right after it is not lost. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (with_helper) {
		if (pthread_create(&hth, NULL, helper, NULL) != 0) {
			perror("pthread_create");
			return 1;
		}
		pthread_mutex_lock(&helper_lock);
		while (!helper_tid)
			pthread_cond_wait(&helper_cond, &helper_lock);
		pthread_mutex_unlock(&helper_lock);
		printf("helper %d\n", helper_tid);
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!go)
		wait_usr1(&set);
	if (with_helper) { /* gone before any probed call */
		pthread_mutex_lock(&helper_lock);
		helper_go = 1;
		pthread_cond_broadcast(&helper_cond);
		pthread_mutex_unlock(&helper_lock);
		pthread_join(hth, NULL);
	}
	for (int i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, workload, NULL) != 0) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	printf("done\n");
	fflush(stdout);
	if (linger)
		wait_usr1(&set);
	return 0;
}
