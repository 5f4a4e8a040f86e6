// SPDX-License-Identifier: MIT
/*
 * mmap_loop.c - the cost of the unwinder's mmap hook (bpf/unwind_walk.bpf.h,
 * handle_unwind_mmap on sys_exit_mmap) for scripts/bench_stacks.sh: N
 * mmap/munmap pairs of FILE's first page, executable (the hook's full
 * path: a new code mapping recorded for its process) or anonymous
 * read-write (its early exit), timed, then one line.
 *
 *   mmap_loop exec|anon N FILE
 *
 * Output: "mmap_loop: MODE N calls NS_PER_CALL ns"
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "exec") && strcmp(argv[1], "anon"))) {
		fprintf(stderr, "usage: mmap_loop exec|anon N FILE\n");
		return 2;
	}
	int exec = !strcmp(argv[1], "exec");
	long n = atol(argv[2]);
	int fd = open(argv[3], O_RDONLY | O_CLOEXEC);
	struct timespec a, b;

	if (fd < 0 || n <= 0) {
		perror("mmap_loop");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		void *p = exec ? mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0)
			       : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("mmap_loop: mmap");
			return 1;
		}
		munmap(p, 4096);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
	printf("mmap_loop: %s %ld calls %.0f ns\n", argv[1], n, ns);
	return 0;
}
