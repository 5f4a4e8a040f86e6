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
 *   -u          reserve space in the buffer and never confirm it (a writer
 *               stuck mid-write), then write as usual
 *   -x          halfway through, reserve without confirming and SIGKILL
 *               ourselves (a process dying mid-write)
 *   -F SECONDS  at the end, fork a child that lives SECONDS longer than us
 *               (a pre-fork server: the recorder must still see us exit)
 *   -g FILE     once attached, wait for FILE to exist before writing
 *   -S FILE     after writing, stay alive until FILE exists (the test says
 *               when to quit: what it does to a live app then holds however
 *               slow the machine; gives up after 10 minutes, exit status 1)
 *   -N COUNT    after writing, intern COUNT more names "extra-I" (one
 *               instant each, arg I) and exit at once: names interned right
 *               before the end must still reach the recorder or be counted
 */
#include "btrace.h"
#include "app_shm.h"
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static long nthreads = 64, nevents = 2000, pause_us;
static int die_mid_write;
static pthread_barrier_t start;

/* The recorder's buffer, not the one a process writes in before the
 * recorder answers (app_early.c: memfd "btrace-app-early"). */
static int recorders_buffer(const char *line)
{
	return strstr(line, "btrace-app") && !strstr(line, "btrace-app-early");
}

/* Our shared buffer, found the way a debugger would: its mapping. */
static uint8_t *buffer_base(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long lo = 0, hi;
	while (f && fgets(line, sizeof(line), f))
		if (recorders_buffer(line) && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			break;
	if (f)
		fclose(f);
	return (uint8_t *)lo;
}

/* Reserve bytes in this CPU's current block as a writer would, and never
 * confirm them: the block can then never complete. */
static int hold_reservation(void)
{
	uint8_t *base = buffer_base();
	if (!base)
		return -1;
	struct bt_app_shm *s = (struct bt_app_shm *)base;
	struct bt_app_meta *meta = (struct bt_app_meta *)(base + s->meta_off);
	struct bt_app_core *cores = (struct bt_app_core *)(base + s->cores_off);
	/* Held on the CPU the thread's last event went to: pinned for the
	 * event and the hold, or a migration between them finds a CPU with
	 * no block (seen under TCG: no block was stuck, 0 skips). */
	cpu_set_t old, one;
	int cpu = sched_getcpu(), pinned = 0;
	if (cpu >= 0 && sched_getaffinity(0, sizeof(old), &old) == 0) {
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
	}
	/* The hole must lie inside the block: reserved where the block was
	 * already full (the event before filled it exactly, or a writer of
	 * this CPU padded its tail and has not moved on yet) it would own no
	 * byte and the block would complete (CI, 2026-12-05: 0 busy, 0
	 * partial). A CAS takes it only where it fits; else one more event. */
	uint32_t len = bt_app_entry_size(3);
	int held = 0;
	for (int tries = 0; tries < 1000 && !held; tries++) {
		BTRACE_INSTANT("hold"); /* this CPU has a block now */
		cpu = sched_getcpu();
		uint64_t cw = atomic_load(&cores[(uint32_t)(cpu < 0 ? 0 : cpu) % s->ncores].cur);
		if (!cw)
			continue;
		_Atomic uint64_t *alloc = &meta[(uint32_t)cw].alloc;
		uint64_t a = atomic_load(alloc);
		held = BT_APP_RND(a) == BT_APP_RND(cw) && BT_APP_BYTES(a) + len <= s->block_size &&
		       atomic_compare_exchange_strong(alloc, &a, a + len);
	}
	if (pinned)
		sched_setaffinity(0, sizeof(old), &old);
	return held ? 0 : -1;
}

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
		if (die_mid_write && t == 0 && i == nevents / 2) {
			if (hold_reservation() < 0)
				fprintf(stderr, "app_stress: no reservation held\n");
			kill(getpid(), SIGKILL);
		}
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
		if (!recorders_buffer(line) || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
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
	int corrupt = 0, stuck = 0, c;
	long fork_child = 0;
	const char *flag = NULL, *go = NULL, *hold = NULL;
	long extra = 0;
	while ((c = getopt(argc, argv, "t:n:w:p:cs:f:uxF:g:N:S:")) != -1) {
		switch (c) {
		case 't': nthreads = atol(optarg); break;
		case 'n': nevents = atol(optarg); break;
		case 'w': wait_s = atol(optarg); break;
		case 'p': pause_us = atol(optarg); break;
		case 'c': corrupt = 1; break;
		case 's': stay = atol(optarg); break;
		case 'f': flag = optarg; break;
		case 'u': stuck = 1; break;
		case 'x': die_mid_write = 1; break;
		case 'F': fork_child = atol(optarg); break;
		case 'g': go = optarg; break;
		case 'N': extra = atol(optarg); break;
		case 'S': hold = optarg; break;
		default:
			fprintf(stderr, "usage: app_stress [-t T] [-n N] [-w S] [-p USEC] [-c] [-s S] [-f FILE] [-u] [-x] "
					"[-F S] [-g FILE] [-N COUNT] [-S FILE]\n");
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
	while (go && access(go, F_OK) != 0)
		usleep(10000);
	if (stuck) {
		/* The recorder's buffer may have no block for this CPU yet. */
		int tries = 0;
		while (hold_reservation() < 0 && ++tries < 100)
			usleep(10000);
		if (tries == 100) {
			fprintf(stderr, "app_stress: no buffer to hold a reservation in\n");
			return 1;
		}
	}
	pthread_t *th = calloc((size_t)nthreads, sizeof(*th));
	pthread_barrier_init(&start, NULL, (unsigned)nthreads);
	for (long t = 0; t < nthreads; t++)
		pthread_create(&th[t], NULL, writer, (void *)(intptr_t)t);
	for (long t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	for (long i = 0; i < extra; i++) {
		char name[32];
		snprintf(name, sizeof(name), "extra-%ld", i);
		btrace_event(BTRACE_TYPE_INSTANT, btrace_intern(name), 1, (int64_t[]){ i });
	}
	printf("wrote %ld events in %ld threads\n", nthreads * nevents, nthreads);
	if (corrupt)
		printf("scribbled over %d buffer mapping(s)\n", scribble());
	fflush(stdout);
	if (stay)
		sleep((unsigned)stay);
	if (hold) { /* -S FILE: stay alive until the test creates FILE (at most 10 minutes) */
		long ms = 0;
		for (; access(hold, F_OK) != 0 && ms < 600 * 1000; ms += 10)
			usleep(10000);
		if (access(hold, F_OK) != 0) {
			fprintf(stderr, "app_stress: %s did not appear in 10 minutes\n", hold);
			return 1;
		}
	}
	if (fork_child > 0 && fork() == 0) {
		BTRACE_INSTANT("child"); /* detached in the child: goes nowhere */
		sleep((unsigned)fork_child);
		_exit(0);
	}
	return 0;
}
