// SPDX-License-Identifier: MIT
/*
 * stack_hostile.c - what a hostile local user runs at a root recorder
 * (tests/kernel/test_hostile.sh), built with frame pointers.
 *
 *   stack_hostile SECONDS [MEMFD_MIB [FILE FILE_MIB]]
 *
 * Maps a memfd of MEMFD_MIB MiB and FILE (created, FILE_MIB MiB written,
 * then deleted), every page written so both hold memory or disk, prints
 * "ready PID" and spins for SECONDS of CPU in hostile_fn() (the test
 * renames that symbol to something hostile) so the sampler sees it.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Filled and mapped: pages that hold memory (memfd) or disk (a file). */
static void *fill(int fd, size_t bytes)
{
	void *p;

	if (ftruncate(fd, (off_t)bytes))
		return NULL;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0x5a, bytes);
	msync(p, bytes, MS_SYNC);
	return p;
}

__attribute__((noinline)) void hostile_fn(double until)
{
	while (cpu_s() < until)
		for (int i = 0; i < 100000; i++)
			sink = sink * 6364136223846793005ull + (uint64_t)i;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1;
	size_t memfd_mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;

	if (memfd_mib) {
		int fd = memfd_create("hostile", MFD_CLOEXEC);
		if (fd < 0 || !fill(fd, memfd_mib << 20)) {
			perror("memfd");
			return 1;
		}
		close(fd);
	}
	if (argc > 4) {
		int fd = open(argv[3], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || !fill(fd, strtoul(argv[4], NULL, 10) << 20)) {
			perror(argv[3]);
			return 1;
		}
		close(fd);
		unlink(argv[3]);
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	hostile_fn(cpu_s() + secs);
	return 0;
}
