// SPDX-License-Identifier: MIT
/*
 * app_funcs_edge.c - built with -finstrument-functions and linked with
 * libbtrace (test_funcs_edge.sh): calls that are not plain returns.
 *
 *   jmp N         N times: jmp_outer() sets a jump, calls jmp_inner() ->
 *                 jmp_deep(), which longjmps back; jmp_outer() then calls
 *                 after_jmp(), which sleeps 2 ms
 *   dlopen LIB N STOP  loads LIB (built with the hooks), calls its
 *                 plugin_work() N times, prints "loaded", waits for the
 *                 file STOP, then calls plugin_work() once more and exits
 *   crash         a thread "crasher" runs crash_outer() -> crash_mid() ->
 *                 crash_leaf(), which spins 20 ms and dereferences NULL
 *                 while main waits in wait_crasher(): the process dies of
 *                 SIGSEGV with calls open on both threads
 * Prints "attached PID" once a recorder took it (or "untraced").
 */
#include "btrace.h"

#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static jmp_buf env;
static volatile int sink;

static void jmp_deep(void)
{
	sink++;
	longjmp(env, 1);
}

static void jmp_inner(void)
{
	jmp_deep();
	sink++; /* never reached */
}

static void after_jmp(void)
{
	usleep(2000);
}

static void jmp_outer(void)
{
	if (!setjmp(env))
		jmp_inner();
	after_jmp();
}

static void crash_leaf(void)
{
	for (int i = 0; i < 20; i++)
		usleep(1000);
	*(volatile int *)(uintptr_t)sink = 1; /* sink is 0: SIGSEGV */
}

static void crash_mid(void)
{
	crash_leaf();
}

static void *crash_outer(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "crasher");
	crash_mid();
	return NULL;
}

static void wait_crasher(pthread_t t)
{
	pthread_join(t, NULL);
}

static int run_crash(void)
{
	pthread_t t;
	sink = 0;
	if (pthread_create(&t, NULL, crash_outer, NULL))
		return 1;
	printf("crashing\n");
	wait_crasher(t);
	return 1; /* never: the process died */
}

static int run_dlopen(const char *lib, int n, const char *stop)
{
	void *h = dlopen(lib, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", lib, dlerror());
		return 1;
	}
	int (*work)(int) = (int (*)(int))dlsym(h, "plugin_work");
	if (!work) {
		fprintf(stderr, "dlsym plugin_work: %s\n", dlerror());
		return 1;
	}
	for (int i = 0; i < n; i++)
		sink += work(i);
	printf("loaded\n");
	while (access(stop, F_OK) != 0)
		usleep(10000);
	sink += work(n);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	btrace_init("funcs_edge");
	for (int i = 0; i < 500 && !btrace_attached(); i++)
		usleep(10000);
	if (btrace_attached())
		printf("attached %d\n", (int)getpid());
	else
		printf("untraced\n");
	if (argc >= 3 && strcmp(argv[1], "jmp") == 0) {
		for (int i = 0; i < atoi(argv[2]); i++)
			jmp_outer();
		return 0;
	}
	if (argc >= 5 && strcmp(argv[1], "dlopen") == 0)
		return run_dlopen(argv[2], atoi(argv[3]), argv[4]);
	if (argc >= 2 && strcmp(argv[1], "crash") == 0)
		return run_crash();
	fprintf(stderr, "usage: app_funcs_edge jmp N | dlopen LIB N STOPFILE | crash\n");
	return 2;
}
