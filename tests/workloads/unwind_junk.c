// SPDX-License-Identifier: MIT
/*
 * unwind_junk.c - a stack that runs into garbage, for tests/kernel/test_unwind.sh.
 *
 *   unwind_junk SECONDS
 *
 * Spins in junk_spin(), a function with no call-frame information (built
 * with -fno-asynchronous-unwind-tables, and written without .cfi
 * directives), whose rbp points at a fake frame: a saved rbp of garbage and
 * a "return address" that is the address of a data variable. An unwinder
 * that follows it shows the data address as a caller; ours must end the
 * stack there, marked truncated, and count it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

uint64_t junk_data[4] = { 1, 2, 3, 4 }; /* .data: readable, not code */

void junk_spin(uint64_t *fake_frame, uint64_t iters);
__asm__(".text\n"
	".globl junk_spin\n"
	".type junk_spin, @function\n"
	"junk_spin:\n"
	"	push %rbp\n"
	"	mov %rdi, %rbp\n"
	"1:	dec %rsi\n"
	"	jnz 1b\n"
	"	pop %rbp\n"
	"	ret\n"
	".size junk_spin, .-junk_spin\n");

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	uint64_t frame[2] = { 0x5a5a5a5a5a5a5a58ull, (uint64_t)(uintptr_t)&junk_data[1] };
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		junk_spin(frame, 10000000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	printf("done\n");
	return 0;
}
