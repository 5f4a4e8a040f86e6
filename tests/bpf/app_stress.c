// SPDX-License-Identifier: MIT
/*
 * app_stress - a test application traced in-process with libbtrace.
 *
 * T threads each write N stamped instant events "stamp" (args: thread
 * index, per-thread index, check = index * 2654435761 ^ thread), every
 * 16th wrapped in a BEGIN/END slice "batch" and followed by a counter
 * "progress". A checker can then prove exact counts, per-thread order and
 * untorn payloads from the dump.
 *
 *   -t T        threads (default 64)
 *   -n N        events per thread (default 2000)
 *   -w SECONDS  wait until attached to a recorder first (default 10; 0: don't)
 *   -p USEC     pause between events (default 0)
 *   -c          after writing, scribble over the shared buffer (corruption test)
 *   -s SECONDS  stay alive after writing (default 0)
 *   -f FILE     touch FILE once attached (scripts wait for it)
 */
#include "btrace.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static long nthreads = 64, nevents = 2000, pause_us;
static pthread_barrier_t start;

static void *writer(void *arg)
{
	int64_t t = (int64_t)(intptr_t)arg;
	pthread_barrier_wait(&start);
	for (int64_t i = 0; i < nevents; i++) {
		int slice = i % 16 == 0;
		if (slice)
			BTRACE_BEGIN("batch", i / 16);
		BTRACE_INSTANT("stamp", t, i, (int64_t)((uint64_t)i * 2654435761u ^ (uint64_t)t));
		if (slice) {
			BTRACE_END();
			BTRACE_COUNTER("progress", i);
		}
		if (pause_us)
			usleep((useconds_t)pause_us);
	}
	return NULL;
}

/* Overwrite every byte of our buffer mappings with garbage. */
static int scribble(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;
	srand(1);
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (!strstr(line, "btrace-app") || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		for (unsigned long p = lo; p < hi; p += 8) {
			/* keep a few blocks intact: the recorder must still take valid ones */
			if (((p - lo) / 4096) % 5 == 0)
				continue;
			*(volatile uint64_t *)p = ((uint64_t)rand() << 32) ^ (uint64_t)rand();
		}
		n++;
	}
	if (f)
		fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	long wait_s = 10, stay = 0;
	int corrupt = 0, c;
	const char *flag = NULL;
	while ((c = getopt(argc, argv, "t:n:w:p:cs:f:")) != -1) {
		switch (c) {
		case 't': nthreads = atol(optarg); break;
		case 'n': nevents = atol(optarg); break;
		case 'w': wait_s = atol(optarg); break;
		case 'p': pause_us = atol(optarg); break;
		case 'c': corrupt = 1; break;
		case 's': stay = atol(optarg); break;
		case 'f': flag = optarg; break;
		default:
			fprintf(stderr, "usage: app_stress [-t T] [-n N] [-w S] [-p USEC] [-c] [-s S] [-f FILE]\n");
			return 2;
		}
	}
	btrace_init("app_stress");
	for (long ms = 0; wait_s && !btrace_attached() && ms < wait_s * 1000; ms += 10)
		usleep(10000);
	if (wait_s && !btrace_attached()) {
		fprintf(stderr, "app_stress: no recorder attached after %lds\n", wait_s);
		return 1;
	}
	if (flag) {
		FILE *f = fopen(flag, "w");
		if (f)
			fclose(f);
	}
	pthread_t *th = calloc((size_t)nthreads, sizeof(*th));
	pthread_barrier_init(&start, NULL, (unsigned)nthreads);
	for (long t = 0; t < nthreads; t++)
		pthread_create(&th[t], NULL, writer, (void *)(intptr_t)t);
	for (long t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	printf("wrote %ld events in %ld threads\n", nthreads * nevents, nthreads);
	if (corrupt)
		printf("scribbled over %d buffer mapping(s)\n", scribble());
	fflush(stdout);
	if (stay)
		sleep((unsigned)stay);
	return 0;
}
