// SPDX-License-Identifier: MIT
/*
 * unwind_cfa.c - a stack through OpenSSL's forms of call-frame information,
 * for tests/kernel/test_unwind_cfa.sh.
 *
 *   unwind_cfa SECONDS   (of CPU time, at most 10x that long; 0: exits at once)
 *
 * main -> cfa_run -> cfa_deref_call (CFA read from its frame, rbp zeroed)
 * -> cfa_reg_spin (CFA on r11, rsp realigned), where nearly all samples
 * land (tests/cfa_forms.h). An unwinder that follows only rsp and rbp
 * rules stops at the leaf or its caller; ours must reach main.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "cfa_forms.h"

static double now(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* CPU time, so a busy machine gives the samples an idle one does. */
__attribute__((noinline)) static void cfa_run(double secs)
{
	double c0 = now(CLOCK_PROCESS_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);

	while (now(CLOCK_PROCESS_CPUTIME_ID) - c0 < secs && now(CLOCK_MONOTONIC) - w0 < 10 * secs)
		cfa_deref_call(20000000);
}

int main(int argc, char **argv)
{
	cfa_run(argc > 1 ? atof(argv[1]) : 2);
	printf("done\n");
	return 0;
}
