// SPDX-License-Identifier: MIT
/*
 * stress_symbols.c - the symbol loader (symbol_cache.c) under its real
 * concurrency: a drain thread defining new user stacks as fast as it can
 * (each new, so each frame queued for a source-line lookup ahead), dump
 * threads snapshotting and symbolizing the table, a status thread reading
 * the counts, and the loader itself.
 *
 * Self-checking: each stack's first frame is an address inside one of this
 * test's own functions (a fork of the test is the process the stacks
 * belong to), so a dump knows the name it must have; a wrong name is a
 * failure, an unnamed one too once the binary is loaded. The other frames
 * land anywhere in the binary's code: lookups for the loader to do. Midway a
 * frame lands in a file not loaded yet (libc): the loader must load it
 * within SETTLE_MS while the flood goes on (a loader stuck resolving lines
 * would starve it).
 *
 * usage: stress_symbols [SECONDS (default $STRESS_SECONDS, else 2)];
 * prints one summary line; exit 1 on a failure.
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include "events.h"
#include "stack_symbols.h"
#include "stack_table.h"
#include "symbol_cache.h"
#include "self_maps.h"

#define SETTLE_MS 10000 /* a starved loader never loads it; TSan on a busy machine is slow */
#define NFRAMES 16

#define SF(i)                                                  \
	__attribute__((noinline)) int sf_##i(int x)            \
	{                                                      \
		__asm__ volatile("" : "+r"(x)::"memory");      \
		return x * (i + 2) + (x >> 3) - (x << 2) + i;  \
	}
SF(0) SF(1) SF(2) SF(3) SF(4) SF(5) SF(6) SF(7) SF(8) SF(9) SF(10) SF(11) SF(12) SF(13) SF(14) SF(15)
#define FN(i) { (uintptr_t)&sf_##i, "sf_" #i }
static const struct {
	uintptr_t addr;
	const char *name;
} fns[] = { FN(0), FN(1), FN(2),  FN(3),  FN(4),  FN(5),  FN(6),  FN(7),
	    FN(8), FN(9), FN(10), FN(11), FN(12), FN(13), FN(14), FN(15) };
#define NFN (sizeof(fns) / sizeof(fns[0]))

static struct bt_stack_table *t;
static struct bt_symbolizer *z;
static pid_t child;
static uint64_t fn_off[NFN]; /* file offset of each function's first byte */
static uint64_t text_lo, text_hi; /* this binary's code, mapped (frames 1.. land anywhere in it) */
static atomic_int stop, failed;
static atomic_ulong defined, dumps, named, unnamed_late, status_reads;
static atomic_int exe_loaded;
/* main asks for the midway stack (1); the drain defines it (2): stacks are
 * defined by the drain thread only (stack_table.h) */
static atomic_int midway;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* File offset of addr in this process's mapping of /proc/self/exe, -1 if none. */
static void define_user(uint64_t hash, const uint64_t *ips, uint32_t n)
{
	union {
		struct bt_raw_stack_def d;
		__u64 raw[(sizeof(struct bt_raw_stack_def) + 8 * NFRAMES) / 8];
	} m;

	memset(&m, 0, sizeof(m));
	m.d.h.type = BT_RAW_STACK_DEF;
	m.d.h.tgid = (uint32_t)child;
	m.d.h.tid = (uint32_t)child;
	m.d.hash = hash;
	m.d.nframes = n;
	m.d.flags = BT_STACKDEF_USER;
	memcpy(m.d.ips, ips, 8 * n);
	bt_stack_table_define(t, &m.d, (uint32_t)sizeof(m));
}

/* The drain: new stacks of addresses inside the sf_ functions, unique hashes. */
static void *drain_main(void *arg)
{
	unsigned seed = 7;
	uint64_t h = 0x100000, ips[NFRAMES];

	(void)arg;
	while (!atomic_load(&stop)) {
		if (atomic_load(&midway) == 1) {
			uint64_t ip = (uint64_t)(uintptr_t)&getpid;

			define_user(0x22, &ip, 1);
			atomic_store(&midway, 2);
		}
		/* frame 0 in an sf_ function (checked by name: a return
		 * address, ip - 1 stays in it); the others anywhere in the
		 * code, so the loader has lookups to do, as on a real machine */
		ips[0] = fns[rand_r(&seed) % NFN].addr + 1 + (uint64_t)(rand_r(&seed) % 4);
		for (int k = 1; k < NFRAMES; k++)
			ips[k] = text_lo + 1 + (uint64_t)rand_r(&seed) % (text_hi - text_lo - 1);
		define_user(++h, ips, NFRAMES);
		atomic_fetch_add(&defined, 1);
	}
	return NULL;
}

/* The function a looked-up file offset is in (the nearest start at or below). */
static int fn_at(uint64_t off)
{
	int best = -1;

	for (size_t i = 0; i < NFN; i++)
		if (fn_off[i] <= off && (best < 0 || fn_off[i] > fn_off[best]))
			best = (int)i;
	return best;
}

static void *dump_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		struct bt_dump_stacks s;

		memset(&s, 0, sizeof(s));
		if (bt_stack_table_snapshot(t, &s) != 0)
			continue;
		if (bt_symbolize(z, &s, 50 * 1000000ull) != 0) {
			bt_stack_snapshot_free(&s);
			continue;
		}
		int loaded = atomic_load(&exe_loaded);
		for (uint32_t i = 0; i < s.nstacks; i++) {
			const struct bt_dump_stack *k = &s.stacks[i];
			for (uint32_t f = 0; f < k->nframes; f++) {
				const struct bt_dump_frame *fr = &s.frames[k->first + f];
				if (fr->map == BT_DMAP_KERNEL || fr->map == BT_DMAP_NONE || fr->map > s.nmaps ||
				    !strstr(s.maps[fr->map - 1].path, "stress_symbols"))
					continue;
				if (f)
					continue; /* anywhere in the code: no name to expect */
				int want = fn_at(bt_frame_lookup_off(fr->off, f));
				if (!fr->sym) {
					if (loaded)
						atomic_fetch_add(&unnamed_late, 1);
					continue;
				}
				const char *got = s.syms[fr->sym - 1].name;
				if (want < 0 || strcmp(got, fns[want].name) != 0) {
					fprintf(stderr, "stress_symbols: frame at offset 0x%" PRIx64 " named %s, want %s\n",
						fr->off, got, want < 0 ? "?" : fns[want].name);
					atomic_store(&failed, 1);
				}
				atomic_fetch_add(&named, 1);
			}
		}
		bt_stack_snapshot_free(&s);
		atomic_fetch_add(&dumps, 1);
		usleep(5000); /* dumps come and go: the loader's lookups wait for none */
	}
	return NULL;
}

static void *status_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		struct bt_symcache_stats st;
		bt_symbolizer_stats(z, &st);
		if (st.loaded > st.files)
			atomic_store(&failed, 1);
		atomic_fetch_add(&status_reads, 1);
		usleep(1000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *env = getenv("STRESS_SECONDS");
	double secs = argc > 1 ? atof(argv[1]) : env ? atof(env) : 2;
	pthread_t dr, du[2], stt;
	struct bt_symcache_stats st;

	for (size_t i = 0; i < NFN; i++) {
		int64_t o = h_exe_offset(fns[i].addr);
		if (o < 0) {
			fprintf(stderr, "stress_symbols: no file offset of %s\n", fns[i].name);
			return 1;
		}
		fn_off[i] = (uint64_t)o;
	}
	if (h_exe_text(&text_lo, &text_hi) || text_hi < text_lo + 64) {
		fprintf(stderr, "stress_symbols: no executable mapping of this binary\n");
		return 1;
	}
	child = h_paused_child();
	t = bt_stack_table_new(1u << 16);
	z = t ? bt_symbolizer_new(t, NULL, 1, 0) : NULL;
	if (child < 0 || !z) {
		fprintf(stderr, "stress_symbols: setup failed\n");
		return 1;
	}
	/* the binary's first frame, loaded before the flood */
	uint64_t ip = fns[0].addr + 1;
	define_user(0x11, &ip, 1); /* hashes 0 and 1 are the kernel side's none and lost */
	int r0 = bt_symbolizer_settle(z, SETTLE_MS);
	atomic_store(&exe_loaded, r0 == 0);
	for (int i = 0; i < SETTLE_MS / 10; i++) { /* ... and its line looked up ahead */
		bt_symbolizer_stats(z, &st);
		if (st.lines_ahead)
			break;
		usleep(10000);
	}
	pthread_create(&dr, NULL, drain_main, NULL);
	pthread_create(&du[0], NULL, dump_main, NULL);
	pthread_create(&du[1], NULL, dump_main, NULL);
	pthread_create(&stt, NULL, status_main, NULL);
	usleep((useconds_t)(secs / 2 * 1e6));
	/* midway, a file nothing has touched: loaded while the flood goes on */
	atomic_store(&midway, 1);
	while (atomic_load(&midway) != 2)
		usleep(1000);
	double t0 = now_s(); /* from its definition, as before the handshake */
	int r1 = bt_symbolizer_settle(z, SETTLE_MS);
	double settle_s = now_s() - t0;
	usleep((useconds_t)(secs / 2 * 1e6));
	atomic_store(&stop, 1);
	pthread_join(dr, NULL);
	pthread_join(du[0], NULL);
	pthread_join(du[1], NULL);
	pthread_join(stt, NULL);
	bt_symbolizer_stats(z, &st);
	bt_symbolizer_free(z);
	bt_stack_table_free(t);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);

	int ok = !atomic_load(&failed) && r0 == 0 && r1 == 0 && st.loaded >= 2 && atomic_load(&named) > 0 &&
		 atomic_load(&unnamed_late) == 0 && st.lines_ahead > 0;
	printf("stress_symbols: %s: %lu stacks defined, %lu dumps named %lu frames (%lu unnamed once loaded), "
	       "libc loaded %.3f s into the flood (settle %d), %" PRIu64 " files loaded, %" PRIu64
	       " lookups ahead, %" PRIu64 " frames not queued, %" PRIu64 " units decoded by dumps, %" PRIu64 " evicted, %lu status reads\n",
	       ok ? "ok" : "FAILED", atomic_load(&defined), atomic_load(&dumps), atomic_load(&named),
	       atomic_load(&unnamed_late), settle_s, r1, st.loaded, st.lines_ahead, st.lines_dropped, st.dump_units, st.evicted,
	       atomic_load(&status_reads));
	return ok ? 0 : 1;
}
