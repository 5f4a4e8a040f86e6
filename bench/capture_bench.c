// SPDX-License-Identifier: MIT
/*
 * capture_bench.c - how fast a dump takes its window (scripts/bench_capture.sh).
 *
 *   copy     a full 64 MiB block buffer (4 KiB blocks, 2 cores): bt_capture's
 *            copy time against a plain memcpy of 64 MiB between two
 *            prefaulted areas (the floor), alternated, REPS times each;
 *            medians and their ratio.
 *   kept     the same buffer with a writer at full speed (64-byte entries
 *            from one thread): the share of blocks a dump keeps, reading it
 *            the old way (bt_read, each block deflated before the next is
 *            copied, as the dump writer did) against bt_capture (copy, then
 *            deflate the copy). Alternated, REPS times each; medians.
 * Prints one line per configuration. Usage: capture_bench [REPS] [MiB].
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <zlib.h>
#include "btrace_buffer.h"

static atomic_int stop;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

static void fill(struct bt_buffer *b, size_t bytes)
{
	uint8_t e[64];
	memset(e, 0x5a, sizeof(e));
	for (size_t i = 0; i < bytes / 64 + 1024; i++)
		bt_write(b, (uint32_t)(i & 1), e, sizeof(e));
}

static void *writer(void *arg)
{
	struct bt_buffer *b = arg;
	uint8_t e[64];
	uint64_t i = 0;
	memset(e, 0xa5, sizeof(e));
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		bt_write(b, (uint32_t)(i++ & 1), e, sizeof(e));
	return NULL;
}

struct zctx {
	z_stream z;
	uint8_t out[1 << 16];
};

static int deflate_block(const struct bt_block_view *v, void *arg)
{
	struct zctx *c = arg;
	c->z.next_in = (Bytef *)v->data;
	c->z.avail_in = v->used;
	while (c->z.avail_in) {
		c->z.next_out = c->out;
		c->z.avail_out = sizeof(c->out);
		deflate(&c->z, Z_NO_FLUSH);
	}
	return 0;
}

/* Blocks kept of those the buffer holds (per mille). */
static uint64_t kept_old(struct bt_buffer *b, uint32_t nblocks)
{
	struct zctx *c = calloc(1, sizeof(*c));
	struct bt_read_stats st;
	deflateInit(&c->z, 1);
	bt_read(b, deflate_block, c, &st);
	deflateEnd(&c->z);
	free(c);
	return st.blocks_read * 1000 / nblocks;
}

static uint64_t kept_new(struct bt_buffer *b, uint32_t nblocks)
{
	struct zctx *c = calloc(1, sizeof(*c));
	struct bt_read_stats st;
	struct bt_capture *cap = bt_capture(b, &st);
	if (!cap) {
		free(c);
		return 0;
	}
	deflateInit(&c->z, 1);
	bt_capture_read(cap, deflate_block, c);
	deflateEnd(&c->z);
	bt_capture_free(cap);
	free(c);
	return st.blocks_read * 1000 / nblocks;
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 9;
	size_t mib = argc > 2 ? (size_t)atoi(argv[2]) : 64, size = mib << 20;
	struct bt_config cfg = { .size = size, .block_size = 4096, .ncores = 2, .prefault = 1 };
	char err[256];
	struct bt_buffer *b = bt_buffer_create(&cfg, err, sizeof(err));
	uint8_t *src = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	uint8_t *dst = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	uint64_t *tm = calloc((size_t)reps, 8), *tc = calloc((size_t)reps, 8), *ta = calloc((size_t)reps, 8);
	uint64_t *ko = calloc((size_t)reps, 8), *kn = calloc((size_t)reps, 8);
	if (!b || src == MAP_FAILED || dst == MAP_FAILED || !tm || !tc || !ta || !ko || !kn || reps < 1) {
		fprintf(stderr, "capture_bench: setup failed: %s\n", b ? "out of memory" : err);
		return 1;
	}
	memset(src, 1, size);
	fill(b, size);
	uint32_t nblocks = (uint32_t)(size / 4096);
	for (int i = 0; i < reps; i++) {
		uint64_t t0 = now_ns();
		memcpy(dst, src, size);
		tm[i] = now_ns() - t0;
		t0 = now_ns();
		struct bt_capture *c = bt_capture(b, NULL);
		ta[i] = now_ns() - t0;
		tc[i] = c ? bt_capture_copy_ns(c) : 0;
		bt_capture_free(c);
	}
	uint64_t mm = median(tm, reps), mc = median(tc, reps), ma = median(ta, reps);
	printf("copy %zu MiB: memcpy %.2f ms (floor), bt_capture copy %.2f ms (%.2fx the floor), "
	       "with allocation %.2f ms; medians of %d\n", mib, mm / 1e6, mc / 1e6, (double)mc / (double)mm, ma / 1e6, reps);

	pthread_t th;
	atomic_store(&stop, 0);
	pthread_create(&th, NULL, writer, b);
	for (int i = 0; i < reps; i++) {
		ko[i] = kept_old(b, nblocks);
		kn[i] = kept_new(b, nblocks);
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	printf("kept with a writer at full speed: old read (bt_read + deflate per block) %.1f%%, "
	       "capture then deflate %.1f%%; medians of %d\n", median(ko, reps) / 10.0, median(kn, reps) / 10.0, reps);
	bt_buffer_destroy(b);
	return 0;
}
