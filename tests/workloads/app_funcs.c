// SPDX-License-Identifier: MIT
/*
 * app_funcs.c - a program built with -finstrument-functions and linked with
 * libbtrace (test_funcs.sh): a known call tree for the recorder to capture.
 *
 *   fib(20) on the main thread         21891 calls of fib
 *   16 pool threads, thread i:          pool_work 1, pool_leaf 100 + i
 *   one thread: nap() around usleep(NAP_US)
 *   one thread: 50 pool_leaf calls, then ends with SYS_exit (no TSD
 *   destructor: its function batch is never closed)
 * With -g (a hostile program) it then garbles the function batches of its
 * ended threads in its own buffer, keeping the block framing intact: a count
 * past the room, a long record cut off by the count, a room that is not the
 * entry's; each garbled batch's first record is also pointed at an address
 * no function starts at (shown as 0x... or sym+0x... if ever delivered).
 * It prints "garbled N".
 * It prints "fib TID", "pool TID K", "nap TID T0 T1" (CLOCK_BOOTTIME
 * around the usleep), "killed TID N", then "phases-done"; then keeps one
 * thread calling tick() every ms (a batch open while the test dumps) until
 * the -S file exists.
 */
#include "btrace.h"
#include "app_shm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NAP_US 20000

static volatile long sink;

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static void pool_leaf(int i)
{
	sink += i;
}

static void pool_work(int k)
{
	for (int i = 0; i < k; i++)
		pool_leaf(i);
}

static void *pool_thread(void *arg)
{
	int k = (int)(long)arg;
	printf("pool %ld %d\n", (long)syscall(SYS_gettid), k);
	pool_work(k);
	return NULL;
}

static void nap(long *t0, long *t1)
{
	*t0 = now_ns();
	usleep(NAP_US);
	*t1 = now_ns();
}

static void *nap_thread(void *arg)
{
	long t0, t1;
	(void)arg;
	nap(&t0, &t1);
	printf("nap %ld %ld %ld\n", (long)syscall(SYS_gettid), t0, t1);
	return NULL;
}

static void *killed_thread(void *arg)
{
	(void)arg;
	printf("killed %ld 50\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	for (int i = 0; i < 50; i++)
		pool_leaf(i);
	syscall(SYS_exit, 0); /* no destructors, no unwinding: the batch stays open */
	return NULL;
}

static volatile int stop;

static void tick(void)
{
	sink++;
}

static void *tick_thread(void *arg)
{
	(void)arg;
	while (!stop) {
		tick();
		usleep(1000);
	}
	return NULL;
}

static void run_all(int loops, const char *stopfile);

#define GARBLE_DELTA 0x1000001ull /* an odd address: no function starts there */

/* Garble the function batches of threads other than this one (ended: no
 * writer will store their count again). Not instrumented: it writes no
 * record itself. */
__attribute__((no_instrument_function)) static int garble(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;
	uint32_t me = (uint32_t)syscall(SYS_gettid);
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (!strstr(line, "btrace-app") || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		struct bt_app_shm *shm = (struct bt_app_shm *)lo;
		if (shm->magic != BT_APP_SHM_MAGIC || shm->total_size > hi - lo)
			continue;
		for (uint32_t d = 0; d < shm->nblocks; d++) {
			uint8_t *blk = (uint8_t *)lo + shm->data_off + (uint64_t)d * shm->block_size;
			uint32_t off = BT_BLOCK_HDR;
			if (!((struct bt_block_hdr *)blk)->pos)
				continue;
			while (off + BT_ENTRY_HDR + sizeof(struct bt_ev_app_funcs) <= shm->block_size) {
				struct bt_entry_hdr *e = (struct bt_entry_hdr *)(blk + off);
				if (!e->size || e->size % 8 || e->size > shm->block_size - off)
					break;
				struct bt_ev_app_funcs *b = (struct bt_ev_app_funcs *)(blk + off + BT_ENTRY_HDR);
				if (e->kind == BT_ENTRY_DATA && b->h.type == BT_EV_APP_FUNCS && b->h.tid != me &&
				    b->count >= 2) {
					/* every other batch: the next one keeps the block's neighbours honest */
					if (n % 2 == 0) {
						int how = n / 2 % 3;
						b->words[0] = (b->words[0] & 0x3ffffffffull) |
							      (GARBLE_DELTA << 34);
						if (how == 0)
							b->count = b->cap + 1;
						else if (how == 1)
							b->words[b->count - 1] |= (uint64_t)BT_FREC_ENTRY_LONG << 32;
						else
							b->cap = b->cap + 3;
					}
					n++;
				}
				off += e->size;
			}
		}
	}
	if (f)
		fclose(f);
	return (n + 1) / 2;
}

int main(int argc, char **argv)
{
	const char *attached = NULL, *stopfile = NULL;
	int opt, loops = 1, hostile = 0;
	while ((opt = getopt(argc, argv, "f:S:n:g")) != -1) {
		if (opt == 'f')
			attached = optarg;
		else if (opt == 'S')
			stopfile = optarg;
		else if (opt == 'n')
			loops = atoi(optarg);
		else if (opt == 'g')
			hostile = 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	btrace_init("app_funcs");
	int waited = 0;
	for (; waited < 2000 && !btrace_attached(); waited++)
		usleep(10000);
	if (!btrace_attached())
		fprintf(stderr, "app_funcs: no recorder (running untraced)\n");
	else
		printf("attached after %d ms\n", waited * 10);
	if (attached) {
		FILE *f = fopen(attached, "w");
		if (f)
			fclose(f);
	}
	run_all(loops, stopfile);
	if (hostile)
		printf("garbled %d\n", garble());
	return 0;
}

/* Traced from its entry (main was entered before the recorder attached). */
static void run_all(int loops, const char *stopfile)
{
	for (int l = 0; l < loops; l++)
		printf("fib %ld %d\n", (long)syscall(SYS_gettid), fib(20));
	pthread_t t[16], nt, kt, tt;
	for (int i = 0; i < 16; i++)
		pthread_create(&t[i], NULL, pool_thread, (void *)(long)(100 + i));
	for (int i = 0; i < 16; i++)
		pthread_join(t[i], NULL);
	pthread_create(&nt, NULL, nap_thread, NULL);
	pthread_join(nt, NULL);
	pthread_create(&kt, NULL, killed_thread, NULL);
	usleep(50000); /* it is gone by then (a raw SYS_exit cannot be joined) */
	printf("phases-done\n");
	pthread_create(&tt, NULL, tick_thread, NULL);
	for (int i = 0; stopfile && i < 3000 && access(stopfile, F_OK) != 0; i++)
		usleep(10000);
	stop = 1;
	pthread_join(tt, NULL);
	(void)kt;
}
