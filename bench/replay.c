/* SPDX-License-Identifier: MIT */
/*
 * bench/replay.c - trace-replay benchmark of the block-partitioned buffer
 * against simple baselines, after the BTrace paper (ASPLOS'25), section 5.
 *
 * Workload. A deterministic synthetic schedule (seeded) of events in time
 * order: each event has a virtual core (0..C-1, chosen with skewed per-core
 * rates: little cores busy, big cores 30x slower, like the paper's Fig. 4) and
 * a payload length (16..120 bytes, skewed towards small entries). The
 * schedule holds `volume` times the buffer capacity, so every tracer wraps
 * several times. It is cut into epochs of E events; a writer may only start
 * an event of epoch e once every event of epoch e-1 has started its write,
 * so the per-core rates (and therefore the skew) hold at a granularity of E
 * events, while a writer preempted inside a write holds nobody back.
 *
 * Replay. core-level: one writer thread per virtual core. thread-level: T
 * threads per virtual core (several hundred threads on the real CPUs, so
 * writers are preempted mid-write). Threads of a virtual core take that
 * core's events in order from a shared cursor; by default all threads of
 * virtual core c are pinned to real CPU c mod ncpu, so threads of one virtual
 * core preempt each other as on a real core. The payload holds (stamp, core,
 * per-core index, length) and a fill pattern derived from (core, index); as
 * the very last step before the write the event takes a unique, globally
 * increasing logical stamp from one atomic counter (as the paper does), and
 * the tracer's write is called (bt_write() for BTrace), timed with rdtsc.
 *
 * Read-back (writers stopped): bt_read() + bt_block_next() for BTrace, the
 * baseline readers for the others. Every entry is verified (fields match the
 * schedule, fill pattern intact, stamp and event never seen twice); for BTrace
 * any bad entry is fatal (exit 3), for the baselines torn entries are counted.
 *
 * Metrics, stamps 0..N-1 written (N events):
 *   latest fragment  the longest suffix [s, N-1] of the stamp space in which
 *                    every stamp was read back; reported in MiB of canonical
 *                    entry bytes (payload + 8-byte header, rounded up to 8,
 *                    the same accounting for every tracer) and in percent of
 *                    the total buffer size.
 *   loss rate        stamps missing inside [min read, max read] / its width.
 *   fragments        maximal runs of consecutive stamps among those read.
 *   latency          per bt_write()/baseline write, rdtsc-timed (timer
 *                    overhead included), geometric mean, p50, p99 in ns.
 * Each configuration runs `reps` times; every reported number is the median.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef NO_BTRACE
#include "btrace_buffer.h"
#endif
#include "baselines.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_TSC 1
#endif

/* ---- small helpers ---------------------------------------------------------- */

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("replay: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ts_begin(void)
{
#ifdef HAVE_TSC
	_mm_lfence();
	uint64_t t = __rdtsc();
	_mm_lfence();
	return t;
#else
	return now_ns();
#endif
}

static inline uint64_t ts_end(void)
{
#ifdef HAVE_TSC
	unsigned aux;
	uint64_t t = __rdtscp(&aux);

	_mm_lfence();
	return t;
#else
	return now_ns();
#endif
}

static double ns_per_tick = 1.0;

static void calibrate_tsc(void)
{
#ifdef HAVE_TSC
	uint64_t n0 = now_ns(), c0 = ts_begin(), n1, c1;

	do
		n1 = now_ns();
	while (n1 - n0 < 50000000ull);
	c1 = ts_end();
	ns_per_tick = (double)(n1 - n0) / (double)(c1 - c0);
#endif
}

static inline uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

struct rng {
	uint64_t s;
};
static inline uint64_t rng_next(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ull;
	return mix64(r->s);
}
static inline double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

static long futex(_Atomic uint32_t *addr, int op, uint32_t val)
{
	return syscall(SYS_futex, (void *)addr, op, val, NULL, NULL, 0);
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		return -1;
	*out = v;
	return 0;
}

/* ---- configuration ---------------------------------------------------------- */

enum tracer { TR_BTRACE, TR_PCOW, TR_PCDROP, TR_GLOBAL, TR_COUNT };
static const char *const tr_key[TR_COUNT] = { "btrace", "ftrace", "lttng", "global" };
static const char *const tr_label[TR_COUNT] = { "btrace", "percore-ovw(ftrace)", "percore-drop(lttng)",
						 "global-faa(bbq)" };

enum mode { MODE_THREAD, MODE_CORE, MODE_COUNT };
static const char *const mode_key[MODE_COUNT] = { "thread", "core" };

enum skew { SKEW_PHONE, SKEW_UNIFORM, SKEW_COUNT };
static const char *const skew_key[SKEW_COUNT] = { "phone", "uniform" };

struct opts {
	uint64_t size;       /* total buffer bytes, every tracer */
	uint32_t block;      /* BTrace block size */
	uint32_t tpc;        /* threads per virtual core, thread-level replay */
	uint32_t nsub;       /* sub-buffers per core, LTTng-like */
	uint32_t epoch;      /* events per pacing epoch */
	uint32_t reps;
	double volume;       /* bytes written / capacity */
	uint64_t seed;
	int pin, verbose, no_btrace, warmup;
	const char *md_path;
	const char *cmdline;
};

struct cfg {
	enum tracer tr;
	enum mode mode;
	enum skew skew;
	uint32_t ncores;
	uint32_t amult;      /* BTrace: A = amult * ncores */
	int live;            /* BTrace: a reader thread runs bt_read() during the replay */
	const char *group;
};

/* ---- workload ----------------------------------------------------------------- */

struct workload {
	uint32_t ncores;
	enum skew skew;
	uint64_t n;            /* events == stamps */
	uint64_t *off;         /* [ncores+1] prefix: events of core c are off[c]..off[c+1]-1 */
	uint8_t *len;          /* [n] payload length, per-core order */
	uint32_t *gidx;        /* [n] global schedule index, per-core order */
	double *weight;        /* [ncores] */
	uint64_t canon_bytes;  /* sum of canonical entry sizes */
	uint32_t epoch;
};

static inline uint32_t canon_size(uint32_t len)
{
	return (len + 8u + 7u) & ~7u;
}

static void skew_weights(enum skew sk, uint32_t c, double *w)
{
	if (sk == SKEW_UNIFORM) {
		for (uint32_t i = 0; i < c; i++)
			w[i] = 1.0;
		return;
	}
	/* "phone": like the paper's 12-core phone (Fig. 4): cores 0-3 little and
	 * busiest, 4-9 middle (~4.5x slower), 10-11 big (30x slower). Scaled to
	 * other core counts by the same thirds/sixths. */
	uint32_t little = c / 3 ? c / 3 : 1, big = c >= 2 ? (c / 6 ? c / 6 : 1) : 0;
	if (little + big > c)
		big = c - little;
	for (uint32_t i = 0; i < c; i++)
		w[i] = i < little ? 1.0 : (i >= c - big ? 1.0 / 30 : 0.22);
}

static uint32_t draw_len(struct rng *r)
{
	/* Skewed towards small entries: half 16..39, a third 40..79, the rest 80..120. */
	double u = rng_unit(r);
	uint64_t x = rng_next(r);

	if (u < 0.50)
		return 16 + (uint32_t)(x % 24);
	if (u < 0.85)
		return 40 + (uint32_t)(x % 40);
	return 80 + (uint32_t)(x % 41);
}

static struct workload *workload_make(uint32_t ncores, enum skew sk, const struct opts *o)
{
	struct workload *w = calloc(1, sizeof(*w));
	struct rng r = { o->seed * 0x100000001b3ull + ncores * 131 + sk };
	uint64_t target = (uint64_t)(o->volume * (double)o->size), cap = 1 << 20, n = 0, bytes = 0;
	uint16_t *core = malloc(cap * sizeof(*core));
	uint8_t *len = malloc(cap);
	double *cum = malloc(ncores * sizeof(*cum)), tot = 0;

	if (!w || !core || !len || !cum)
		die("out of memory");
	w->ncores = ncores;
	w->skew = sk;
	w->epoch = o->epoch;
	w->weight = malloc(ncores * sizeof(double));
	skew_weights(sk, ncores, w->weight);
	for (uint32_t c = 0; c < ncores; c++)
		cum[c] = (tot += w->weight[c]);
	while (bytes < target) {
		double u = rng_unit(&r) * tot;
		uint32_t lo = 0, hi = ncores - 1;

		while (lo < hi) {
			uint32_t mid = (lo + hi) / 2;

			if (cum[mid] > u)
				hi = mid;
			else
				lo = mid + 1;
		}
		if (n == cap) {
			cap *= 2;
			core = realloc(core, cap * sizeof(*core));
			len = realloc(len, cap);
			if (!core || !len)
				die("out of memory");
		}
		core[n] = (uint16_t)lo;
		len[n] = (uint8_t)draw_len(&r);
		bytes += canon_size(len[n]);
		n++;
	}
	w->n = n;
	w->canon_bytes = bytes;
	w->off = calloc(ncores + 1, sizeof(*w->off));
	w->len = malloc(n);
	w->gidx = malloc(n * sizeof(*w->gidx));
	if (!w->off || !w->len || !w->gidx)
		die("out of memory");
	for (uint64_t i = 0; i < n; i++)
		w->off[core[i] + 1]++;
	for (uint32_t c = 0; c < ncores; c++)
		w->off[c + 1] += w->off[c];
	{
		uint64_t *fill = calloc(ncores, sizeof(*fill));

		for (uint64_t i = 0; i < n; i++) {
			uint64_t at = w->off[core[i]] + fill[core[i]]++;

			w->len[at] = len[i];
			w->gidx[at] = (uint32_t)i;
		}
		free(fill);
	}
	free(core);
	free(len);
	free(cum);
	return w;
}

static void workload_free(struct workload *w)
{
	if (!w)
		return;
	free(w->off);
	free(w->len);
	free(w->gidx);
	free(w->weight);
	free(w);
}

/* ---- payload ----------------------------------------------------------------- */

struct payload_hdr {
	uint64_t stamp;
	uint32_t k;    /* index of the event among its core's events */
	uint16_t core;
	uint16_t len;  /* exact payload length */
};
_Static_assert(sizeof(struct payload_hdr) == 16, "payload header");

/* The fill pattern depends on (core, k) only, so it can be written before the
 * stamp is taken; the stamp is checked for range and uniqueness. */
static inline void payload_fill(uint8_t *p, uint32_t k, uint32_t core, uint32_t len)
{
	struct payload_hdr h = { 0, k, (uint16_t)core, (uint16_t)len };
	uint64_t x = mix64(((uint64_t)core << 32) ^ k);

	memcpy(p, &h, sizeof(h));
	for (uint32_t i = sizeof(h); i < len; i += 8) {
		uint64_t v = x ^ ((uint64_t)i * 0x9e3779b97f4a7c15ull);
		uint32_t n = len - i < 8 ? len - i : 8;

		memcpy(p + i, &v, n);
	}
}

/* ---- one run ------------------------------------------------------------------ */

struct padded_u64 {
	_Alignas(64) _Atomic uint64_t v;
};

struct run {
	const struct workload *w;
	enum tracer tr;
#ifndef NO_BTRACE
	struct bt_buffer *bt;
#endif
	struct bl_pcow *pcow;
	struct bl_pcdrop *pcdrop;
	struct bl_global *glob;
	uint32_t *lat;               /* [n] ticks per write, per-core order */
	struct padded_u64 *cursor;   /* [ncores] next event of the core */
	_Alignas(64) _Atomic uint64_t stamp;
	_Alignas(64) _Atomic uint64_t started;
	_Alignas(64) _Atomic uint64_t done;
	_Alignas(64) _Atomic uint32_t epoch; /* futex word: events of epochs <= epoch may run */
	_Alignas(64) _Atomic uint64_t errors;
	_Atomic uint64_t drops;
	_Atomic int first_error;
};

struct writer_arg {
	struct run *run;
	uint32_t core;
};

static inline int tracer_write(struct run *r, uint32_t core, const void *p, uint32_t len)
{
	switch (r->tr) {
#ifndef NO_BTRACE
	case TR_BTRACE:
		return bt_write(r->bt, core, p, len);
#endif
	case TR_PCOW:
		return bl_pcow_write(r->pcow, core, p, len);
	case TR_PCDROP:
		return bl_pcdrop_write(r->pcdrop, core, p, len);
	case TR_GLOBAL:
		return bl_global_write(r->glob, core, p, len);
	default:
		return -ENOSYS;
	}
}

static void *writer_main(void *arg)
{
	struct writer_arg *a = arg;
	struct run *r = a->run;
	const struct workload *w = r->w;
	const uint32_t c = a->core;
	const uint64_t base = w->off[c], cnt = w->off[c + 1] - w->off[c];
	_Alignas(8) uint8_t buf[256];

	for (;;) {
		/* Relaxed: the cursor only hands out indexes. */
		uint64_t k = atomic_fetch_add_explicit(&r->cursor[c].v, 1, memory_order_relaxed);
		uint64_t fi = base + k, t0, t1;
		uint32_t ep, len, e;
		uint64_t s, d;
		int rc;

		if (k >= cnt)
			break;
		ep = w->gidx[fi] / w->epoch + 1;
		/* Acquire: pairs with the release store of the epoch below. */
		while ((e = atomic_load_explicit(&r->epoch, memory_order_acquire)) < ep)
			futex(&r->epoch, FUTEX_WAIT_PRIVATE, e);
		len = w->len[fi];
		/* Pacing counts writes started, not finished: a writer preempted
		 * inside the write must not hold the others back (it does not in
		 * a real system either). Acq_rel: the last starter of an epoch
		 * saw every other start. */
		d = atomic_fetch_add_explicit(&r->started, 1, memory_order_acq_rel) + 1;
		if (d == (uint64_t)ep * w->epoch || d == w->n) {
			/* Release: pairs with the acquire load of the epoch above. */
			atomic_store_explicit(&r->epoch, ep + 1, memory_order_release);
			futex(&r->epoch, FUTEX_WAKE_PRIVATE, INT_MAX);
		}
		payload_fill(buf, (uint32_t)k, c, len);
		/* The stamp is taken last, right before the write, so that a
		 * preemption between the two (which would make the entry older
		 * than its neighbours in the buffer) is as unlikely as possible. */
		s = atomic_fetch_add_explicit(&r->stamp, 1, memory_order_relaxed);
		memcpy(buf, &s, sizeof(s));

		t0 = ts_begin();
		rc = tracer_write(r, c, buf, len);
		t1 = ts_end();

		r->lat[fi] = t1 - t0 > UINT32_MAX ? UINT32_MAX : (uint32_t)(t1 - t0);
		if (rc == -EAGAIN && r->tr == TR_PCDROP) {
			atomic_fetch_add_explicit(&r->drops, 1, memory_order_relaxed);
		} else if (rc) {
			int zero = 0;

			atomic_fetch_add_explicit(&r->errors, 1, memory_order_relaxed);
			atomic_compare_exchange_strong(&r->first_error, &zero, rc);
		}
		atomic_fetch_add_explicit(&r->done, 1, memory_order_relaxed);
	}
	return NULL;
}

/* ---- read-back and verification ---------------------------------------------- */

struct collect {
	const struct workload *w;
	uint8_t *size_by_stamp;  /* [n] canonical size of a read entry, 0 = not read */
	uint8_t *seen;           /* [n] per-core-order event read */
	uint32_t *fi_by_stamp;   /* [n] event (per-core order) of a read stamp, for diagnostics */
	uint64_t nread, nbad;
	int strict;              /* BTrace: any bad entry is fatal */
	const char *who;
	char first_bad[200];
};

static void bad_entry(struct collect *col, uint32_t core, const void *p, uint32_t len, const char *why)
{
	struct payload_hdr h = { 0 };

	if (len >= sizeof(h))
		memcpy(&h, p, sizeof(h));
	if (!col->nbad)
		snprintf(col->first_bad, sizeof(col->first_bad),
			 "%s (region core %d, len %u; payload says stamp %" PRIu64 " core %u k %u len %u)", why,
			 core == UINT32_MAX ? -1 : (int)core, len, h.stamp, h.core, h.k, h.len);
	col->nbad++;
	if (col->strict) {
		fprintf(stderr, "replay: FATAL: %s returned a bad entry: %s\n", col->who, col->first_bad);
		fprintf(stderr, "replay: this is a correctness failure of the buffer (or the reader); aborting\n");
		exit(3);
	}
}

static int collect_entry(void *ctx, uint32_t core, const void *p, uint32_t len)
{
	struct collect *col = ctx;
	const struct workload *w = col->w;
	_Alignas(8) uint8_t want[256];
	struct payload_hdr h;
	uint64_t fi;

	if (len < sizeof(h)) {
		bad_entry(col, core, p, len, "entry shorter than the payload header");
		return 0;
	}
	memcpy(&h, p, sizeof(h));
	if (h.len > len || len - h.len >= 8 || h.len < sizeof(h)) {
		bad_entry(col, core, p, len, "length field does not match the entry size");
		return 0;
	}
	if (h.core >= w->ncores || (core != UINT32_MAX && core != h.core)) {
		bad_entry(col, core, p, len, "core field does not match the block/ring core");
		return 0;
	}
	if (h.k >= w->off[h.core + 1] - w->off[h.core] || h.stamp >= w->n) {
		bad_entry(col, core, p, len, "event index or stamp out of range");
		return 0;
	}
	fi = w->off[h.core] + h.k;
	if (w->len[fi] != h.len) {
		bad_entry(col, core, p, len, "length differs from the schedule");
		return 0;
	}
	payload_fill(want, h.k, h.core, h.len);
	memcpy(want, &h.stamp, sizeof(h.stamp));
	if (memcmp(want, p, h.len)) {
		bad_entry(col, core, p, len, "payload fill pattern corrupted (torn entry)");
		return 0;
	}
	if (col->size_by_stamp[h.stamp] || col->seen[fi]) {
		/* Never legitimate, for any tracer. */
		fprintf(stderr, "replay: FATAL: %s returned stamp %" PRIu64 " (core %u event %u) twice\n", col->who,
			h.stamp, h.core, h.k);
		exit(3);
	}
	col->size_by_stamp[h.stamp] = (uint8_t)canon_size(h.len);
	col->seen[fi] = 1;
	col->fi_by_stamp[h.stamp] = (uint32_t)fi;
	col->nread++;
	return 0;
}

#ifndef NO_BTRACE
static int bt_collect_block(const struct bt_block_view *blk, void *ctx)
{
	struct collect *col = ctx;
	uint32_t off = 0, len;
	const void *p;

	if (blk->core >= col->w->ncores) {
		if (bt_block_next(blk, &off, &len)) {
			fprintf(stderr, "replay: FATAL: btrace block pos %" PRIu64 " of core %u holds data\n", blk->pos,
				blk->core);
			exit(3);
		}
		return 0;
	}
	while ((p = bt_block_next(blk, &off, &len)))
		collect_entry(col, blk->core, p, len);
	return 0;
}
/* A live reader: bt_read() in a loop while the writers run, verifying every
 * entry it is handed (a block overwritten during the copy must be dropped by
 * the buffer, never returned torn; an active block must only be returned up
 * to fully written entries). Catches e.g. confirming before the copy. */
struct live_reader {
	const struct workload *w;
	struct bt_buffer *bt;
	_Atomic int stop;
	uint64_t passes, entries, blocks, lost, busy;
};

static int live_entry_check(const struct workload *w, uint32_t core, const void *p, uint32_t len,
			    const struct bt_block_view *blk)
{
	_Alignas(8) uint8_t want[256];
	struct payload_hdr h;
	const char *why = NULL;

	if (len < sizeof(h)) {
		why = "entry shorter than the payload header";
		memset(&h, 0, sizeof(h));
	} else {
		memcpy(&h, p, sizeof(h));
		if (h.len > len || len - h.len >= 8 || h.len < sizeof(h))
			why = "length field does not match the entry size";
		else if (h.core >= w->ncores || core != h.core)
			why = "core field does not match the block core";
		else if (h.k >= w->off[h.core + 1] - w->off[h.core] || h.stamp >= w->n)
			why = "event index or stamp out of range";
		else if (w->len[w->off[h.core] + h.k] != h.len)
			why = "length differs from the schedule";
		else {
			payload_fill(want, h.k, h.core, h.len);
			memcpy(want, &h.stamp, sizeof(h.stamp));
			if (memcmp(want, p, h.len))
				why = "payload not (fully) written";
		}
	}
	if (!why)
		return 0;
	fprintf(stderr,
		"replay: FATAL: live bt_read returned a bad entry: %s (block pos %" PRIu64 " core %u complete %d "
		"used %u; entry len %u; payload says stamp %" PRIu64 " core %u k %u len %u)\n",
		why, blk->pos, blk->core, blk->complete, blk->used, len, h.stamp, h.core, h.k, h.len);
	fprintf(stderr, "replay: this is a correctness failure of the buffer; aborting\n");
	exit(3);
}

static int live_block(const struct bt_block_view *blk, void *ctx)
{
	struct live_reader *lr = ctx;
	uint32_t off = 0, len;
	const void *p;

	lr->blocks++;
	if (blk->core >= lr->w->ncores)
		return 0;
	while ((p = bt_block_next(blk, &off, &len))) {
		live_entry_check(lr->w, blk->core, p, len, blk);
		lr->entries++;
	}
	return 0;
}

static void *live_reader_main(void *arg)
{
	struct live_reader *lr = arg;

	while (!atomic_load_explicit(&lr->stop, memory_order_acquire)) {
		struct bt_read_stats rs = { 0 };
		int rc = bt_read(lr->bt, live_block, lr, &rs);

		if (rc)
			die("live bt_read: %s", strerror(-rc));
		lr->passes++;
		lr->lost += rs.blocks_lost;
		lr->busy += rs.blocks_busy;
	}
	return NULL;
}
#endif


/* ---- metrics ------------------------------------------------------------------- */

struct result {
	double latest_mib, latest_pct, loss, gm_ns, p50_ns, p99_ns, wall_s;
	double frags, nread, nbad, drops, waits, resync, slow;
	double live_passes, live_entries, live_lost, read_pct;
	double bt_skipped, bt_closed, bt_pad_pct, bt_used, bt_races;
	int have_bt;
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void latency_stats(const uint32_t *lat, uint64_t n, double *gm, double *p50, double *p99)
{
	enum { EXACT = 1 << 16 };
	uint32_t *hist = calloc(EXACT, sizeof(*hist));
	uint32_t *big = NULL;
	uint64_t nbig = 0, capbig = 0;
	double lsum = 0;
	int sorted_big = 0;

	if (!hist)
		die("out of memory");
	for (uint64_t i = 0; i < n; i++) {
		uint32_t v = lat[i] ? lat[i] : 1;

		lsum += log((double)v);
		if (v < EXACT) {
			hist[v]++;
		} else {
			if (nbig == capbig) {
				capbig = capbig ? capbig * 2 : 4096;
				big = realloc(big, capbig * sizeof(*big));
				if (!big)
					die("out of memory");
			}
			big[nbig++] = v;
		}
	}
	*gm = exp(lsum / (double)n) * ns_per_tick;
	for (int q = 0; q < 2; q++) {
		uint64_t rank = (uint64_t)((q ? 0.99 : 0.50) * (double)(n - 1)), acc = 0;
		double v = 0;
		uint32_t i;

		for (i = 0; i < EXACT; i++) {
			acc += hist[i];
			if (acc > rank)
				break;
		}
		if (i < EXACT) {
			v = i;
		} else {
			/* the rank lies among the huge values (>= 64 Ki ticks) */
			if (!sorted_big) {
				qsort(big, nbig, sizeof(*big), cmp_u32);
				sorted_big = 1;
			}
			v = big[rank - (n - nbig)];
		}
		*(q ? p99 : p50) = v * ns_per_tick;
	}
	free(hist);
	free(big);
}

static void compute_metrics(const struct collect *col, const struct opts *o, struct result *res)
{
	const struct workload *w = col->w;
	const uint8_t *sz = col->size_by_stamp;
	uint64_t s = w->n, bytes = 0, lo = UINT64_MAX, hi = 0, nread = 0, frags = 0;

	uint64_t all_bytes = 0;

	while (s > 0 && sz[s - 1]) {
		s--;
		bytes += sz[s];
	}
	for (uint64_t i = 0; i < w->n; i++) {
		if (!sz[i])
			continue;
		all_bytes += sz[i];
		if (lo == UINT64_MAX)
			lo = i;
		hi = i;
		nread++;
		if (i == 0 || !sz[i - 1])
			frags++;
	}
	res->latest_mib = (double)bytes / (1024.0 * 1024.0);
	res->latest_pct = 100.0 * (double)bytes / (double)o->size;
	res->read_pct = 100.0 * (double)all_bytes / (double)o->size;
	res->loss = nread ? (double)(hi - lo + 1 - nread) / (double)(hi - lo + 1) : 1.0;
	res->frags = (double)frags;
	res->nread = (double)nread;
	res->nbad = (double)col->nbad;
}

static const char *row_label(const struct cfg *cf)
{
	return cf->tr == TR_BTRACE && cf->live ? "btrace+live-reader" : tr_label[cf->tr];
}

static void run_once(const struct cfg *cf, const struct workload *w, const struct opts *o, struct result *res)
{
	struct run *r;
	struct writer_arg *args;
	pthread_t *tids;
	pthread_attr_t attr;
	uint32_t tpc = cf->mode == MODE_THREAD ? o->tpc : 1, nthreads = w->ncores * tpc;
	struct collect col = { .w = w, .strict = cf->tr == TR_BTRACE, .who = tr_label[cf->tr] };
	struct bl_read_stats bst = { 0 };
	cpu_set_t allowed;
	int cpus[CPU_SETSIZE], ncpu = 0;
	uint64_t t0, t1;

	memset(res, 0, sizeof(*res));
	if (posix_memalign((void **)&r, 64, sizeof(*r)))
		die("out of memory");
	memset(r, 0, sizeof(*r));
	r->w = w;
	r->tr = cf->tr;
	r->lat = malloc(w->n * sizeof(*r->lat));
	if (posix_memalign((void **)&r->cursor, 64, w->ncores * sizeof(*r->cursor)) || !r->lat)
		die("out of memory");
	memset(r->cursor, 0, w->ncores * sizeof(*r->cursor));
	memset(r->lat, 0, w->n * sizeof(*r->lat));

	switch (cf->tr) {
	case TR_BTRACE: {
#ifndef NO_BTRACE
		char err[256] = "";
		struct bt_config bc = {
			.size = o->size,
			.block_size = o->block,
			.ncores = w->ncores,
			.active = cf->amult * w->ncores,
			.prefault = 1,
		};

		r->bt = bt_buffer_create(&bc, err, sizeof(err));
		if (!r->bt)
			die("bt_buffer_create(size %" PRIu64 ", block %u, ncores %u, A %u): %s (%s)", o->size, o->block,
			    w->ncores, bc.active, strerror(errno), err);
#else
		die("built with NO_BTRACE");
#endif
		break;
	}
	case TR_PCOW:
		r->pcow = bl_pcow_create(o->size, w->ncores);
		if (!r->pcow)
			die("per-core overwrite ring: %s", strerror(errno));
		break;
	case TR_PCDROP:
		r->pcdrop = bl_pcdrop_create(o->size, w->ncores, o->nsub);
		if (!r->pcdrop)
			die("per-core drop ring: %s", strerror(errno));
		break;
	case TR_GLOBAL:
		r->glob = bl_global_create(o->size);
		if (!r->glob)
			die("global ring: %s", strerror(errno));
		break;
	default:
		die("bad tracer");
	}

	/* Threads: small stacks, pinned: virtual core c -> real CPU c mod ncpu. */
	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
		for (int i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, &allowed))
				cpus[ncpu++] = i;
	tids = calloc(nthreads, sizeof(*tids));
	args = calloc(nthreads, sizeof(*args));
	if (!tids || !args)
		die("out of memory");
	for (uint32_t i = 0; i < nthreads; i++) {
		int rc;

		args[i].run = r;
		args[i].core = i / tpc;
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		if (o->pin && ncpu > 0) {
			cpu_set_t one;

			CPU_ZERO(&one);
			CPU_SET(cpus[args[i].core % (uint32_t)ncpu], &one);
			pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		}
		rc = pthread_create(&tids[i], &attr, writer_main, &args[i]);
		pthread_attr_destroy(&attr);
		if (rc)
			die("pthread_create (thread %u of %u): %s", i, nthreads, strerror(rc));
	}

#ifndef NO_BTRACE
	struct live_reader lr = { .w = w, .bt = r->bt };
	pthread_t ltid;

	if (cf->live && r->bt) {
		int rc = pthread_create(&ltid, NULL, live_reader_main, &lr);

		if (rc)
			die("pthread_create (reader): %s", strerror(rc));
	}
#endif
	t0 = now_ns();
	/* Release: the whole setup before the writers start; pairs with their acquire. */
	atomic_store_explicit(&r->epoch, 1, memory_order_release);
	futex(&r->epoch, FUTEX_WAKE_PRIVATE, INT_MAX);
	for (uint32_t i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	t1 = now_ns();
	res->wall_s = (double)(t1 - t0) / 1e9;
#ifndef NO_BTRACE
	if (cf->live && r->bt) {
		/* Release: pairs with the acquire load in live_reader_main(). */
		atomic_store_explicit(&lr.stop, 1, memory_order_release);
		pthread_join(ltid, NULL);
		res->live_passes = (double)lr.passes;
		res->live_entries = (double)lr.entries;
		res->live_lost = (double)lr.lost;
		if (!lr.passes)
			fprintf(stderr, "replay: WARNING: the live reader finished no pass during the replay\n");
	}
#endif

	if (atomic_load(&r->errors))
		die("%s: %" PRIu64 " writes failed (first: %s)", tr_label[cf->tr], (uint64_t)atomic_load(&r->errors),
		    strerror(-atomic_load(&r->first_error)));
	if (atomic_load(&r->stamp) != w->n || atomic_load(&r->done) != w->n)
		die("harness: %" PRIu64 " stamps / %" PRIu64 " events done, expected %" PRIu64,
		    (uint64_t)atomic_load(&r->stamp), (uint64_t)atomic_load(&r->done), w->n);

	/* Read back. */
	col.size_by_stamp = calloc(w->n, 1);
	col.seen = calloc(w->n, 1);
	col.fi_by_stamp = calloc(w->n, sizeof(*col.fi_by_stamp));
	if (!col.size_by_stamp || !col.seen || !col.fi_by_stamp)
		die("out of memory");
	switch (cf->tr) {
#ifndef NO_BTRACE
	case TR_BTRACE: {
		struct bt_read_stats rs = { 0 };
		struct bt_stats bs;
		int rc = bt_read(r->bt, bt_collect_block, &col, &rs);

		if (rc)
			die("bt_read: %s", strerror(-rc));
		if (rs.blocks_lost || rs.blocks_busy)
			fprintf(stderr, "replay: WARNING: quiescent bt_read lost %" PRIu64 " and skipped %" PRIu64
					" busy blocks\n", rs.blocks_lost, rs.blocks_busy);
		if (rs.entries != col.nread + col.nbad)
			fprintf(stderr, "replay: WARNING: bt_read counted %" PRIu64 " entries, callback saw %" PRIu64 "\n",
				rs.entries, col.nread + col.nbad);
		bt_buffer_stats(r->bt, &bs);
		if (bs.entries_written != w->n)
			fprintf(stderr, "replay: WARNING: bt stats: %" PRIu64 " entries written, %" PRIu64 " expected\n",
				bs.entries_written, w->n);
		res->have_bt = 1;
		res->bt_used = (double)bs.blocks_used;
		res->bt_skipped = (double)bs.blocks_skipped;
		res->bt_closed = (double)bs.blocks_closed;
		res->bt_races = (double)bs.core_races;
		res->bt_pad_pct = bs.blocks_used ? 100.0 * (double)bs.padding_bytes /
							   ((double)bs.blocks_used * (double)bs.block_size)
						 : 0;
		break;
	}
#endif
	case TR_PCOW:
		bl_pcow_read(r->pcow, collect_entry, &col, &bst);
		break;
	case TR_PCDROP:
		bl_pcdrop_read(r->pcdrop, collect_entry, &col, &bst);
		if (bl_pcdrop_dropped(r->pcdrop) != atomic_load(&r->drops))
			die("harness: drop counters disagree");
		break;
	case TR_GLOBAL:
		bl_global_read(r->glob, collect_entry, &col, &bst);
		res->waits = (double)atomic_load(&r->glob->ring.waits);
		break;
	default:
		break;
	}
	{
		/* Writes that took over 10 us: preempted, or waiting, inside the write. */
		uint64_t slow = 0, lim = (uint64_t)(10000.0 / ns_per_tick);

		for (uint64_t i = 0; i < w->n; i++)
			slow += r->lat[i] > lim;
		res->slow = (double)slow;
	}
	res->resync = (double)bst.resync_bytes;
	res->drops = (double)atomic_load(&r->drops);
	compute_metrics(&col, o, res);
	latency_stats(r->lat, w->n, &res->gm_ns, &res->p50_ns, &res->p99_ns);
	if (o->verbose > 1) {
		/* Where the retained range starts: the oldest stamps read, which
		 * core wrote them and how long their write took. One write that
		 * lasted long lands in a new block with an old stamp and widens
		 * [min read, max read], which is what the loss rate divides by. */
		uint64_t shown = 0, start = w->n;

		while (start > 0 && col.size_by_stamp[start - 1])
			start--;
		fprintf(stderr, "replay:   %s: latest fragment starts at stamp %" PRIu64 " of %" PRIu64 "; oldest read:",
			row_label(cf), start, w->n);
		for (uint64_t i = 0; i < w->n && shown < 4; i++) {
			uint32_t fi;
			uint32_t core = 0;

			if (!col.size_by_stamp[i])
				continue;
			fi = col.fi_by_stamp[i];
			while (core + 1 < w->ncores && w->off[core + 1] <= fi)
				core++;
			fprintf(stderr, " %" PRIu64 " (core %u, write %.0f ns)", i, core, r->lat[fi] * ns_per_tick);
			shown++;
		}
		fputc('\n', stderr);
	}
	if (o->verbose > 1 && col.nbad)
		fprintf(stderr, "replay:   %s: %" PRIu64 " bad entries, first: %s\n", tr_label[cf->tr], col.nbad,
			col.first_bad);

#ifndef NO_BTRACE
	if (r->bt)
		bt_buffer_destroy(r->bt);
#endif
	bl_pcow_destroy(r->pcow);
	bl_pcdrop_destroy(r->pcdrop);
	bl_global_destroy(r->glob);
	free(col.size_by_stamp);
	free(col.seen);
	free(col.fi_by_stamp);
	free(tids);
	free(args);
	free(r->lat);
	free(r->cursor);
	free(r);
}

/* ---- reporting ----------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of every field over the repetitions. */
static void median_result(const struct result *rs, uint32_t n, struct result *out)
{
	double *v = malloc(n * sizeof(double));

	memset(out, 0, sizeof(*out));
	for (size_t f = 0; f < offsetof(struct result, have_bt) / sizeof(double); f++) {
		for (uint32_t i = 0; i < n; i++)
			v[i] = ((const double *)&rs[i])[f];
		qsort(v, n, sizeof(double), cmp_double);
		((double *)out)[f] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	}
	out->have_bt = rs[0].have_bt;
	free(v);
}

struct row {
	struct cfg cf;
	struct result med;
	double latest_min, latest_max;
	uint32_t tpc;
	uint64_t nevents;
};

static void fmt_a(const struct cfg *cf, char *buf, size_t n)
{
	if (cf->tr == TR_BTRACE)
		snprintf(buf, n, "%ux%u", cf->amult, cf->ncores);
	else
		snprintf(buf, n, "-");
}

static void fmt_notes(const struct row *rw, char *buf, size_t n)
{
	const struct result *m = &rw->med;
	int at = snprintf(buf, n, "writes >10us %.0f; ", m->slow);

	if (at < 0 || (size_t)at >= n)
		return;
	buf += at;
	n -= (size_t)at;
	if (rw->cf.tr == TR_BTRACE && m->have_bt && rw->cf.live)
		snprintf(buf, n, "live reader: %.0f passes, %.0f entries verified, %.0f blocks lost; skipped %.0f, "
			 "closed %.0f, pad %.1f%%", m->live_passes, m->live_entries, m->live_lost, m->bt_skipped,
			 m->bt_closed, m->bt_pad_pct);
	else if (rw->cf.tr == TR_BTRACE && m->have_bt)
		snprintf(buf, n, "blocks used %.0f, skipped %.0f, closed %.0f, races %.0f, pad %.1f%%", m->bt_used,
			 m->bt_skipped, m->bt_closed, m->bt_races, m->bt_pad_pct);
	else if (rw->cf.tr == TR_PCOW)
		snprintf(buf, n, "torn entries %.0f, resync %.0f B", m->nbad, m->resync);
	else if (rw->cf.tr == TR_PCDROP)
		snprintf(buf, n, "dropped newest %.0f", m->drops);
	else if (rw->cf.tr == TR_GLOBAL)
		snprintf(buf, n, "writes that waited %.0f", m->waits);
}

static void print_header(void)
{
	printf("%-20s %-6s %-7s %3s %4s %-6s %9s %7s %8s %7s %7s %7s %8s  %s\n", "tracer", "replay", "skew", "C",
	       "T/c", "A", "latestMiB", "latest%", "loss", "frags", "gm_ns", "p50_ns", "p99_ns", "notes");
}

static void print_row(const struct row *rw)
{
	char a[32], notes[200];

	fmt_a(&rw->cf, a, sizeof(a));
	fmt_notes(rw, notes, sizeof(notes));
	printf("%-20s %-6s %-7s %3u %4u %-6s %9.2f %6.1f%% %8.5f %7.0f %7.1f %7.0f %8.0f  %s\n", row_label(&rw->cf),
	       mode_key[rw->cf.mode], skew_key[rw->cf.skew], rw->cf.ncores, rw->tpc, a, rw->med.latest_mib,
	       rw->med.latest_pct, rw->med.loss, rw->med.frags, rw->med.gm_ns, rw->med.p50_ns, rw->med.p99_ns, notes);
	fflush(stdout);
}

static const struct row *find_row(const struct row *rows, size_t n, enum tracer tr, enum mode m, enum skew sk,
				  uint32_t c, uint32_t amult)
{
	for (size_t i = 0; i < n; i++)
		if (rows[i].cf.tr == tr && !rows[i].cf.live && rows[i].cf.mode == m && rows[i].cf.skew == sk &&
		    rows[i].cf.ncores == c &&
		    (tr != TR_BTRACE || rows[i].cf.amult == amult))
			return &rows[i];
	return NULL;
}

/* Target checks: reported, never enforced. Returns lines in buf. */
static void target_checks(const struct row *rows, size_t n, char *buf, size_t len)
{
	const struct row *bt = find_row(rows, n, TR_BTRACE, MODE_THREAD, SKEW_PHONE, 12, 16);
	const struct row *ow = find_row(rows, n, TR_PCOW, MODE_THREAD, SKEW_PHONE, 12, 0);
	const struct row *btc = find_row(rows, n, TR_BTRACE, MODE_CORE, SKEW_PHONE, 12, 16);
	const struct row *owc = find_row(rows, n, TR_PCOW, MODE_CORE, SKEW_PHONE, 12, 0);
	size_t at = 0;

	buf[0] = 0;
#define OUT(...) (at += (size_t)snprintf(buf + at, at < len ? len - at : 0, __VA_ARGS__))
	if (!bt || !ow) {
		OUT("target: (needs btrace A=16xC and the per-core overwrite ring, thread-level, phone skew, C=12)\n");
		return;
	}
	OUT("target %s: btrace latest fragment >= 90%% of capacity (thread-level, phone skew): %.1f%% (%.2f MiB)\n",
	    bt->med.latest_pct >= 90.0 ? "PASS" : "FAIL", bt->med.latest_pct, bt->med.latest_mib);
	OUT("target %s: per-core overwrite ring near the paper's 45%% (35..55%%): %.1f%% (%.2f MiB)\n",
	    ow->med.latest_pct >= 35.0 && ow->med.latest_pct <= 55.0 ? "PASS" : "FAIL", ow->med.latest_pct,
	    ow->med.latest_mib);
	OUT("target %s: btrace loss rate 0 at the paper's precision, i.e. < 0.005 (thread-level, phone skew): %.5f\n",
	    bt->med.loss < 0.005 ? "PASS" : "FAIL", bt->med.loss);
	OUT("target %s: btrace latency gm <= per-core overwrite ring (thread-level): %.1f ns vs %.1f ns\n",
	    bt->med.gm_ns <= ow->med.gm_ns ? "PASS" : "FAIL", bt->med.gm_ns, ow->med.gm_ns);
	if (btc && owc)
		OUT("target %s: btrace latency gm <= per-core overwrite ring (core-level): %.1f ns vs %.1f ns\n",
		    btc->med.gm_ns <= owc->med.gm_ns ? "PASS" : "FAIL", btc->med.gm_ns, owc->med.gm_ns);
#undef OUT
}

static void write_markdown(const char *path, const struct row *rows, size_t n, const struct opts *o,
			   const char *checks, double timer_ns, double total_s)
{
	FILE *f = fopen(path, "w");
	char a[32], notes[200];

	if (!f)
		die("%s: %s", path, strerror(errno));
	fprintf(f, "Buffer %.1f MiB for every tracer (BTrace: %u B blocks, prefaulted), workload %.1fx the capacity "
		   "(%" PRIu64 " entries for C=12), %u threads per virtual core in thread-level replay, "
		   "pacing epoch %u entries, seed %" PRIu64 ", median of %u runs each, %.0f s total. Latencies "
		   "include about %.0f ns of timer overhead.\n\n",
		(double)o->size / (1 << 20), o->block, o->volume, rows[0].nevents, o->tpc, o->epoch, o->seed, o->reps,
		total_s, timer_ns);
	fprintf(f, "| tracer | replay | skew | C | A | latest MiB | latest %% | loss rate | fragments | "
		   "lat gm ns | p50 ns | p99 ns | notes |\n");
	fprintf(f, "|---|---|---|--:|---|--:|--:|--:|--:|--:|--:|--:|---|\n");
	for (size_t i = 0; i < n; i++) {
		const struct row *rw = &rows[i];

		fmt_a(&rw->cf, a, sizeof(a));
		fmt_notes(rw, notes, sizeof(notes));
		fprintf(f, "| %s | %s | %s | %u | %s | %.2f | %.1f | %.5f | %.0f | %.1f | %.0f | %.0f | %s |\n",
			row_label(&rw->cf), mode_key[rw->cf.mode], skew_key[rw->cf.skew], rw->cf.ncores, a,
			rw->med.latest_mib, rw->med.latest_pct, rw->med.loss, rw->med.frags, rw->med.gm_ns,
			rw->med.p50_ns, rw->med.p99_ns, notes);
	}
	fprintf(f, "\n```\n%s```\n", checks);
	fclose(f);
}

/* ---- main ---------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: replay [options]\n"
		"Trace-replay benchmark (BTrace paper, section 5): BTrace vs per-core overwrite ring\n"
		"(ftrace-like), per-core drop-newest ring (LTTng-like), one global FAA ring (BBQ-like).\n"
		"Without -t/-m/-s/-c/-a it runs the default suite.\n\n"
		"  -t, --tracers LIST     btrace,ftrace,lttng,global\n"
		"  -m, --modes LIST       thread,core\n"
		"  -s, --skews LIST       phone,uniform\n"
		"  -c, --cores LIST       virtual core counts (default 12)\n"
		"  -a, --active LIST      BTrace A as multiples of C (default 16)\n"
		"  -T, --threads-per-core N  thread-level writers per virtual core (default 32)\n"
		"      --size BYTES       total buffer size of every tracer (default 12M)\n"
		"      --block BYTES      BTrace block size (default 4096)\n"
		"      --volume X         bytes written / capacity (default 6)\n"
		"  -r, --reps N           repetitions, medians reported (default 3)\n"
		"      --epoch N          pacing epoch in events (default 2048)\n"
		"      --nsub N           sub-buffers per core of the LTTng-like ring (default 4)\n"
		"      --seed N           workload seed (default 1)\n"
		"      --no-pin           do not pin virtual core c to real CPU c mod ncpu\n"
		"      --no-btrace        baselines only (BTrace rows skipped)\n"
		"      --no-warmup        skip the warm-up run\n"
		"      --quick            volume 3, 1 repetition\n"
		"      --live-read        BTrace rows run a verifying bt_read() loop during the replay\n"
		"      --md FILE          also write the result table as markdown\n"
		"  -v, --verbose          per-repetition lines on stderr (-vv: also the first bad\n"
		"                         entry and the oldest stamps read, with their write time)\n"
		"\nexamples:\n"
		"  replay                                  # default suite\n"
		"  replay -t btrace,ftrace -m thread -a 1,4,16,64\n");
}

static int parse_list(const char *arg, const char *const *keys, int nkeys, int *out, int max)
{
	char *dup = strdup(arg), *save = NULL, *tok;
	int n = 0;

	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int k;

		for (k = 0; k < nkeys; k++)
			if (!strcmp(tok, keys[k]))
				break;
		if (k == nkeys || n == max) {
			free(dup);
			return -1;
		}
		out[n++] = k;
	}
	free(dup);
	return n;
}

static int parse_ulist(const char *arg, uint32_t *out, int max)
{
	char *dup = strdup(arg), *save = NULL, *tok, *end;
	int n = 0;

	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long v = strtoul(tok, &end, 10);

		if (*end || !v || v > 4096 || n == max) {
			free(dup);
			return -1;
		}
		out[n++] = (uint32_t)v;
	}
	free(dup);
	return n;
}

static double timer_overhead_ns(void)
{
	enum { N = 20001 };
	static uint32_t v[N];
	double gm, p50, p99;

	for (int i = 0; i < N; i++) {
		uint64_t t0 = ts_begin(), t1 = ts_end();

		v[i] = (uint32_t)(t1 - t0);
	}
	latency_stats(v, N, &gm, &p50, &p99);
	return p50;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.size = 12ull << 20,
		.block = 4096,
		.tpc = 32,
		.nsub = 4,
		.epoch = 2048,
		.reps = 3,
		.volume = 6.0,
		.seed = 1,
		.pin = 1,
		.warmup = 1,
	};
	int trs[TR_COUNT], ntr = 0, modes[MODE_COUNT], nmodes = 0, skews[SKEW_COUNT], nskews = 0;
	uint32_t cores[16], ncores = 0, amults[16], namults = 0;
	int custom = 0, quick = 0, live = 0;
	struct cfg *cfgs;
	size_t ncfg = 0, cap = 64;
	struct row *rows;
	static char cmdline[1024];
	enum { O_SIZE = 256, O_BLOCK, O_VOLUME, O_EPOCH, O_NSUB, O_SEED, O_NOPIN, O_NOBT, O_NOWARM, O_QUICK, O_MD,
	       O_LIVE };
	static const struct option lo[] = {
		{ "tracers", required_argument, 0, 't' },
		{ "modes", required_argument, 0, 'm' },
		{ "skews", required_argument, 0, 's' },
		{ "cores", required_argument, 0, 'c' },
		{ "active", required_argument, 0, 'a' },
		{ "threads-per-core", required_argument, 0, 'T' },
		{ "reps", required_argument, 0, 'r' },
		{ "size", required_argument, 0, O_SIZE },
		{ "block", required_argument, 0, O_BLOCK },
		{ "volume", required_argument, 0, O_VOLUME },
		{ "epoch", required_argument, 0, O_EPOCH },
		{ "nsub", required_argument, 0, O_NSUB },
		{ "seed", required_argument, 0, O_SEED },
		{ "no-pin", no_argument, 0, O_NOPIN },
		{ "no-btrace", no_argument, 0, O_NOBT },
		{ "no-warmup", no_argument, 0, O_NOWARM },
		{ "quick", no_argument, 0, O_QUICK },
		{ "md", required_argument, 0, O_MD },
		{ "live-read", no_argument, 0, O_LIVE },
		{ "verbose", no_argument, 0, 'v' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int opt;
	uint64_t v64, start_ns;
	double timer_ns;

	for (int i = 0, at = 0; i < argc && at < (int)sizeof(cmdline) - 2; i++)
		at += snprintf(cmdline + at, sizeof(cmdline) - (size_t)at, "%s%s", i ? " " : "", argv[i]);
	o.cmdline = cmdline;

	while ((opt = getopt_long(argc, argv, "t:m:s:c:a:T:r:vh", lo, NULL)) != -1) {
		switch (opt) {
		case 't':
			if ((ntr = parse_list(optarg, tr_key, TR_COUNT, trs, TR_COUNT)) < 0)
				die("bad --tracers '%s' (btrace,ftrace,lttng,global)", optarg);
			custom = 1;
			break;
		case 'm':
			if ((nmodes = parse_list(optarg, mode_key, MODE_COUNT, modes, MODE_COUNT)) < 0)
				die("bad --modes '%s' (thread,core)", optarg);
			custom = 1;
			break;
		case 's':
			if ((nskews = parse_list(optarg, skew_key, SKEW_COUNT, skews, SKEW_COUNT)) < 0)
				die("bad --skews '%s' (phone,uniform)", optarg);
			custom = 1;
			break;
		case 'c':
			if ((int)(ncores = (uint32_t)parse_ulist(optarg, cores, 16)) < 0)
				die("bad --cores '%s'", optarg);
			custom = 1;
			break;
		case 'a':
			if ((int)(namults = (uint32_t)parse_ulist(optarg, amults, 16)) < 0)
				die("bad --active '%s'", optarg);
			custom = 1;
			break;
		case 'T':
			o.tpc = (uint32_t)strtoul(optarg, NULL, 10);
			if (!o.tpc || o.tpc > 1024)
				die("bad --threads-per-core '%s'", optarg);
			break;
		case 'r':
			o.reps = (uint32_t)strtoul(optarg, NULL, 10);
			if (!o.reps || o.reps > 100)
				die("bad --reps '%s'", optarg);
			break;
		case O_SIZE:
			if (parse_size(optarg, &o.size) || o.size < (1 << 20))
				die("bad --size '%s' (at least 1M)", optarg);
			break;
		case O_BLOCK:
			if (parse_size(optarg, &v64) || v64 < 256 || v64 > (1 << 20) || (v64 & (v64 - 1)))
				die("bad --block '%s' (power of two, 256..1M)", optarg);
			o.block = (uint32_t)v64;
			break;
		case O_VOLUME:
			o.volume = strtod(optarg, NULL);
			if (!(o.volume >= 0.5 && o.volume <= 100))
				die("bad --volume '%s' (0.5..100)", optarg);
			break;
		case O_EPOCH:
			o.epoch = (uint32_t)strtoul(optarg, NULL, 10);
			if (!o.epoch)
				die("bad --epoch '%s'", optarg);
			break;
		case O_NSUB:
			o.nsub = (uint32_t)strtoul(optarg, NULL, 10);
			if (o.nsub < 2 || o.nsub > 1024)
				die("bad --nsub '%s' (2..1024)", optarg);
			break;
		case O_SEED:
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case O_NOPIN:
			o.pin = 0;
			break;
		case O_NOBT:
			o.no_btrace = 1;
			break;
		case O_NOWARM:
			o.warmup = 0;
			break;
		case O_QUICK:
			quick = 1;
			break;
		case O_MD:
			o.md_path = optarg;
			break;
		case O_LIVE:
			live = 1;
			break;
		case 'v':
			o.verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (see --help)", argv[optind]);
	if (quick) {
		o.volume = 3.0;
		o.reps = 1;
	}
#ifdef NO_BTRACE
	o.no_btrace = 1;
#endif

	cfgs = calloc(cap, sizeof(*cfgs));
#define ADD(TR, M, SK, C, AM, G)                                                                             \
	do {                                                                                                 \
		if (((TR) != TR_BTRACE || !o.no_btrace) && ncfg < cap)                                        \
			cfgs[ncfg++] = (struct cfg){ .tr = (TR), .mode = (M), .skew = (SK), .ncores = (C),   \
						     .amult = (AM), .live = (TR) == TR_BTRACE && live,       \
						     .group = (G) };                                         \
	} while (0)
	if (!custom) {
		/* The default suite: the paper's comparison (Table 2) in both replay
		 * modes, the A sweep (Fig. 10), a uniform control, C = 2, and a
		 * BTrace run with a concurrent verifying reader. */
		live = 0;
		for (int m = 0; m < MODE_COUNT; m++)
			for (int t = 0; t < TR_COUNT; t++)
				ADD((enum tracer)t, (enum mode)m, SKEW_PHONE, 12, 16, "main");
		ADD(TR_BTRACE, MODE_THREAD, SKEW_PHONE, 12, 1, "sweep");
		ADD(TR_BTRACE, MODE_THREAD, SKEW_PHONE, 12, 4, "sweep");
		ADD(TR_BTRACE, MODE_THREAD, SKEW_PHONE, 12, 64, "sweep");
		ADD(TR_BTRACE, MODE_THREAD, SKEW_UNIFORM, 12, 16, "uniform");
		ADD(TR_PCOW, MODE_THREAD, SKEW_UNIFORM, 12, 16, "uniform");
		for (int t = 0; t < TR_COUNT; t++)
			ADD((enum tracer)t, MODE_THREAD, SKEW_PHONE, 2, 16, "c2");
		/* Correctness under concurrent reading (numbers include the reader). */
		live = 1;
		ADD(TR_BTRACE, MODE_THREAD, SKEW_PHONE, 12, 16, "live");
		live = 0;
	} else {
		if (!ntr)
			for (int t = 0; t < TR_COUNT; t++)
				trs[ntr++] = t;
		if (!nmodes)
			modes[nmodes++] = MODE_THREAD;
		if (!nskews)
			skews[nskews++] = SKEW_PHONE;
		if (!ncores)
			cores[ncores++] = 12;
		if (!namults)
			amults[namults++] = 16;
		for (uint32_t c = 0; c < ncores; c++)
			for (int s = 0; s < nskews; s++)
				for (int m = 0; m < nmodes; m++)
					for (int t = 0; t < ntr; t++)
						for (uint32_t a = 0; a < (trs[t] == TR_BTRACE ? namults : 1); a++)
							ADD((enum tracer)trs[t], (enum mode)modes[m], (enum skew)skews[s],
							    cores[c], amults[a], "custom");
	}
#undef ADD
	if (!ncfg)
		die("nothing to run");

	calibrate_tsc();
	timer_ns = timer_overhead_ns();
	{
		struct utsname u;

		uname(&u);
		printf("# replay: %s; %s %s, %ld CPUs; buffer %.1f MiB, block %u, volume %.1fx, %u threads/core "
		       "(thread-level), epoch %u, seed %" PRIu64 ", %u reps (medians), pin %s\n",
		       cmdline, u.sysname, u.release, sysconf(_SC_NPROCESSORS_ONLN), (double)o.size / (1 << 20), o.block,
		       o.volume, o.tpc, o.epoch, o.seed, o.reps, o.pin ? "on" : "off");
		printf("# latest = newest gap-free stamp suffix in canonical bytes (payload+8, rounded to 8) and %% of "
		       "buffer; loss = missing/(max-min+1) of read stamps; frags = runs of consecutive stamps; "
		       "latency = rdtsc around the write call, timer overhead ~%.0f ns included\n",
		       timer_ns);
	}
	print_header();

	start_ns = now_ns();
	rows = calloc(ncfg, sizeof(*rows));
	{
		struct workload *w = NULL;
		struct result *rs = calloc(o.reps, sizeof(*rs));
		uint32_t nreps;

		for (size_t i = 0; i < ncfg; i++) {
			const struct cfg *cf = &cfgs[i];

			if (!w || w->ncores != cf->ncores || w->skew != cf->skew) {
				workload_free(w);
				w = workload_make(cf->ncores, cf->skew, &o);
				if (o.verbose)
					fprintf(stderr, "replay: workload C=%u %s: %" PRIu64 " entries, %.1f MiB canonical\n",
						w->ncores, skew_key[w->skew], w->n, (double)w->canon_bytes / (1 << 20));
			}
			if (o.warmup && i == 0) {
				struct result tmp;

				run_once(cf, w, &o, &tmp);
			}
			/* The live-reader row is a correctness check: one run. */
			nreps = cf->live ? 1 : o.reps;
			for (uint32_t rep = 0; rep < nreps; rep++) {
				run_once(cf, w, &o, &rs[rep]);
				if (o.verbose)
					fprintf(stderr,
						"replay:   %s %s %s C=%u A=%u rep %u: latest %.1f%% (all read %.1f%%) loss %.5f "
						"frags %.0f gm %.1f ns p99 %.0f ns wall %.2f s bad %.0f\n",
						row_label(cf), mode_key[cf->mode], skew_key[cf->skew], cf->ncores,
						cf->amult * cf->ncores, rep, rs[rep].latest_pct, rs[rep].read_pct, rs[rep].loss,
						rs[rep].frags,
						rs[rep].gm_ns, rs[rep].p99_ns, rs[rep].wall_s, rs[rep].nbad);
			}
			rows[i].cf = *cf;
			rows[i].tpc = cf->mode == MODE_THREAD ? o.tpc : 1;
			rows[i].nevents = w->n;
			median_result(rs, nreps, &rows[i].med);
			rows[i].latest_min = rows[i].latest_max = rs[0].latest_pct;
			for (uint32_t rep = 1; rep < nreps; rep++) {
				if (rs[rep].latest_pct < rows[i].latest_min)
					rows[i].latest_min = rs[rep].latest_pct;
				if (rs[rep].latest_pct > rows[i].latest_max)
					rows[i].latest_max = rs[rep].latest_pct;
			}
			print_row(&rows[i]);
		}
		workload_free(w);
		free(rs);
	}
	{
		char checks[2048];
		double total_s = (double)(now_ns() - start_ns) / 1e9;

		target_checks(rows, ncfg, checks, sizeof(checks));
		fputs(checks, stdout);
		printf("# total %.1f s\n", total_s);
		if (o.md_path)
			write_markdown(o.md_path, rows, ncfg, &o, checks, timer_ns, total_s);
	}
	free(rows);
	free(cfgs);
	return 0;
}
