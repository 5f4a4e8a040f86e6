// SPDX-License-Identifier: MIT
/*
 * bench/app_bench.c - per-event cost of in-process tracing (btrace.h) against
 * the alternatives, for scripts/bench_app.sh (issue 8's benchmark).
 *
 * T threads, pinned round-robin to the CPUs (T = CPUs: one per core; T = 32 x
 * CPUs: heavy oversubscription, threads preempt each other anywhere), each
 * records the same event: stamp(t, i, check) with check = i * 2654435761 ^ t
 * (three integer arguments, the event tests/workloads/app_stress.c writes), through
 * one of these tracers:
 *
 *   btrace       BTRACE_INSTANT("stamp", t, i, check): the library attached to
 *                a real recorder (the script runs `btrace-bpf record` and sets
 *                $BTRACE_CTL; we wait for btrace_attached())
 *   off          the same call with no recorder attached (one branch)
 *   uprobe       a call of app_bench_fn(t, i, check), a noinline function
 *                taking the same arguments; the script probes it with
 *                `btrace-bpf record -u BIN:app_bench_fn`
 *   call         the same call with no probe (the uprobe row's reference)
 *   uprobe-ss    app_bench_leaf(t, i, check), whose first instruction the
 *                probe single-steps (probed by the script as well)
 *   call-ss      the same call with no probe
 *   thread       per-thread ring baseline: every thread its own byte ring
 *                (total / T bytes), overwrite, no atomics at all
 *   pcow         per-core overwrite ring, ftrace-like (bench/baselines.h bl_pcow)
 *   pcdrop       per-core sub-buffered drop-newest ring, LTTng-like (bl_pcdrop)
 *   lttng-tp     lttng_ust_tracepoint(app_bench, stamp, t, i, check)
 *   lttng-tracef lttng_ust_tracef("stamp %ld %ld %ld", t, i, check)
 *   clock        sched_getcpu() + clock_gettime(CLOCK_BOOTTIME) and the record
 *                filled on the stack, nothing written: what every tracer
 *                here pays before touching its buffer
 *
 * The baselines write the same record btrace does (struct bt_ev_app with
 * three arguments: CLOCK_BOOTTIME stamp, per-thread seq, tid, tgid,
 * sched_getcpu(), type, name id), into the same total size (--size).
 * The lttng-* tracers exist only in build/bench/app_bench_lttng (this file
 * with -DWITH_LTTNG, linked with -llttng-ust; made by the script on demand).
 *
 * Each run has two phases, all threads starting together at a barrier:
 *   1. throughput: N events per thread untimed; the threads' CPU time
 *      (CLOCK_THREAD_CPUTIME_ID, so time spent preempted does not count)
 *      divided by the events: the mean cost with no timer in it;
 *   2. latency: N more events per thread, each timed with rdtsc (lfence;
 *      rdtsc; lfence ... rdtscp; lfence); geometric mean, p50, p99, p99.9 and
 *      max over all events of all threads. The timer's own cost (an empty
 *      timed region, measured in the same process) is printed so that it can
 *      be subtracted.
 * The event index i runs 0..2N-1 per thread over both phases.
 *
 * Output, one line:
 *   TRACER threads=T events=N gm=NS p50=NS p99=NS p999=NS max=NS cpu=NS timer_gm=NS timer_p50=NS pid=PID [extra]
 *
 * Usage: app_bench --tracer NAME [--threads T] [--events N] [--size BYTES]
 *                  [--wait SECONDS]
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>

#include "btrace.h"
#include "events.h"
#include "baselines.h"

#ifdef APP_BENCH_TP_UNIT
/* The second translation unit of app_bench_lttng: the tracepoint provider
 * (its definition cannot share a unit with tracef.h, whose tracepoint
 * liblttng-ust defines). */
#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "app_bench_tp.h"
#else
#ifdef WITH_LTTNG
#include "app_bench_tp.h"
#include <lttng/tracef.h>
#endif

#if !defined(__x86_64__)
#error "app_bench times events with rdtsc (x86-64 only)"
#endif
#include <x86intrin.h>

/* ---- the probed function (uprobe row) ----------------------------------------- */

/* Starts with a push (it calls a helper), which x86 uprobes emulate: the
 * cheapest kind of probed instruction, as in bench/uprobe_bench.c. */
__attribute__((noipa)) long app_bench_helper(long a)
{
	return a * 31;
}

__attribute__((noipa)) long app_bench_fn(long t, long i, long chk)
{
	return app_bench_helper(t) + i + chk;
}

/* Starts with a lea (at -O2), which the kernel cannot emulate: the probe single-steps
 * it out of line (a second trap), as for most first instructions other than
 * push, nop, jumps and calls. */
__attribute__((noipa)) long app_bench_leaf(long t, long i, long chk)
{
	return t * 37 + i * 11 + chk;
}

/* ---- timing ------------------------------------------------------------------------ */

static inline uint64_t ts_begin(void)
{
	_mm_lfence();
	uint64_t t = __rdtsc();
	_mm_lfence();
	return t;
}

static inline uint64_t ts_end(void)
{
	unsigned aux;
	uint64_t t = __rdtscp(&aux);
	_mm_lfence();
	return t;
}

static uint64_t mono_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double ns_per_tick = 1.0;

static void calibrate_tsc(void)
{
	uint64_t n0 = mono_ns(CLOCK_MONOTONIC), c0 = ts_begin(), n1, c1;
	do
		n1 = mono_ns(CLOCK_MONOTONIC);
	while (n1 - n0 < 50000000ull);
	c1 = ts_end();
	ns_per_tick = (double)(n1 - n0) / (double)(c1 - c0);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

struct lat {
	double gm, p50, p99, p999, max;
};

/* Sorts v. Samples of 0 ticks count as 1 in the geometric mean. */
static struct lat lat_stats(uint32_t *v, size_t n)
{
	struct lat l = { 0 };
	double s = 0;
	if (!n)
		return l;
	qsort(v, n, sizeof(*v), cmp_u32);
	for (size_t k = 0; k < n; k++)
		s += log(v[k] ? (double)v[k] : 1.0);
	l.gm = exp(s / (double)n) * ns_per_tick;
	l.p50 = v[n / 2] * ns_per_tick;
	l.p99 = v[(size_t)((double)(n - 1) * 0.99)] * ns_per_tick;
	l.p999 = v[(size_t)((double)(n - 1) * 0.999)] * ns_per_tick;
	l.max = v[n - 1] * ns_per_tick;
	return l;
}

static struct lat timer_overhead(void)
{
	enum { N = 20001 };
	static uint32_t v[N];
	for (int k = 0; k < N; k++) {
		uint64_t t0 = ts_begin(), t1 = ts_end();
		v[k] = (uint32_t)(t1 - t0);
	}
	return lat_stats(v, N);
}

/* ---- tracers --------------------------------------------------------------------- */

enum tracer { TR_BTRACE, TR_OFF, TR_UPROBE, TR_CALL, TR_THREAD, TR_PCOW, TR_PCDROP, TR_LTTNG_TP, TR_LTTNG_TRACEF,
	      TR_CLOCK, TR_UPROBE_SS, TR_CALL_SS };
static const char *const tr_name[] = { "btrace", "off",	   "uprobe",   "call",	       "thread", "pcow",
				       "pcdrop", "lttng-tp", "lttng-tracef", "clock", "uprobe-ss", "call-ss" };

static enum tracer tracer;
static long nthreads = 2, nevents = 200000;
static uint64_t total_size = 16ull << 20;
static int ncpu;
static pthread_barrier_t barrier;
static struct bl_pcow *pcow;
static struct bl_pcdrop *pcdrop;
static volatile long sink;
static uint32_t tgid;

/* The record the baselines write: what btrace writes for this event. */
struct rec {
	struct bt_ev_app e;
	int64_t args[3];
};

/* per-thread ring: no atomics; the entry format of bench/baselines.h */
struct tring {
	uint8_t *data;
	uint64_t size, head;
};

struct worker {
	pthread_t th;
	long t;
	uint32_t tid, seq;
	struct tring ring;
	uint64_t cpu_ns;
	uint32_t *lat; /* [nevents] ticks */
	int cpu_mismatch;
};

static inline uint64_t boot_ns(void)
{
	return mono_ns(CLOCK_BOOTTIME);
}

static inline void fill(struct worker *w, struct rec *r, int cpu, int64_t t, int64_t i, int64_t chk)
{
	r->e.h.ts_ns = boot_ns();
	r->e.h.seq = w->seq++;
	r->e.h.tid = w->tid;
	r->e.h.tgid = tgid;
	r->e.h.cpu = (uint16_t)cpu;
	r->e.h.type = BT_EV_APP_INSTANT;
	r->e.name_id = 1;
	r->e.nargs = 3;
	r->e.flags = 0;
	r->args[0] = t;
	r->args[1] = i;
	r->args[2] = chk;
}

static inline void tring_write(struct tring *r, const void *src, uint32_t len)
{
	uint32_t sz = bl_entry_size(len);
	uint64_t pos = r->head;
	r->head = pos + sz;
	bl_copy_in(r->data, r->size, pos + BL_HDR, src, len);
	/* a plain store: only this thread writes the ring (the compiler
	 * barrier keeps the tag after the payload for a reader after the fact) */
	__asm__ __volatile__("" ::: "memory");
	*(uint64_t *)(void *)(r->data + pos % r->size) = bl_tag(pos, sz, BL_KIND_DATA);
}

/* One event. Always inlined with a constant tracer, so every tracer's loop
 * is the same code around its own event. */
static inline __attribute__((always_inline)) void event(enum tracer tr, struct worker *w, int64_t t, int64_t i)
{
	int64_t chk = (int64_t)((uint64_t)i * 2654435761u ^ (uint64_t)t);
	struct rec r;
	int cpu;

	switch (tr) {
	case TR_BTRACE:
	case TR_OFF:
		BTRACE_INSTANT("stamp", t, i, chk);
		break;
	case TR_UPROBE:
	case TR_CALL:
		sink = app_bench_fn(t, i, chk);
		break;
	case TR_UPROBE_SS:
	case TR_CALL_SS:
		sink = app_bench_leaf(t, i, chk);
		break;
	case TR_THREAD:
		cpu = sched_getcpu();
		fill(w, &r, cpu, t, i, chk);
		tring_write(&w->ring, &r, sizeof(r));
		break;
	case TR_PCOW:
		cpu = sched_getcpu();
		fill(w, &r, cpu, t, i, chk);
		bl_pcow_write(pcow, (uint32_t)cpu % pcow->ncores, &r, sizeof(r));
		break;
	case TR_PCDROP:
		cpu = sched_getcpu();
		fill(w, &r, cpu, t, i, chk);
		bl_pcdrop_write(pcdrop, (uint32_t)cpu % pcdrop->ncores, &r, sizeof(r));
		break;
	case TR_CLOCK:
		cpu = sched_getcpu();
		fill(w, &r, cpu, t, i, chk);
		__asm__ __volatile__("" : : "r"(&r) : "memory");
		break;
	case TR_LTTNG_TP:
#ifdef WITH_LTTNG
		lttng_ust_tracepoint(app_bench, stamp, t, i, chk);
#endif
		break;
	case TR_LTTNG_TRACEF:
#ifdef WITH_LTTNG
		lttng_ust_tracef("stamp %ld %ld %ld", (long)t, (long)i, (long)chk);
#endif
		break;
	}
}

static inline __attribute__((always_inline)) void loop(enum tracer tr, struct worker *w, long from, long to,
							 int timed)
{
	if (timed) {
		for (long i = from; i < to; i++) {
			uint64_t t0 = ts_begin();
			event(tr, w, w->t, i);
			uint64_t t1 = ts_end();
			w->lat[i - from] = (uint32_t)(t1 - t0);
		}
	} else {
		for (long i = from; i < to; i++)
			event(tr, w, w->t, i);
	}
}

static void run_loop(struct worker *w, long from, long to, int timed)
{
	switch (tracer) {
	case TR_BTRACE: loop(TR_BTRACE, w, from, to, timed); break;
	case TR_OFF: loop(TR_OFF, w, from, to, timed); break;
	case TR_UPROBE: loop(TR_UPROBE, w, from, to, timed); break;
	case TR_CALL: loop(TR_CALL, w, from, to, timed); break;
	case TR_THREAD: loop(TR_THREAD, w, from, to, timed); break;
	case TR_PCOW: loop(TR_PCOW, w, from, to, timed); break;
	case TR_PCDROP: loop(TR_PCDROP, w, from, to, timed); break;
	case TR_LTTNG_TP: loop(TR_LTTNG_TP, w, from, to, timed); break;
	case TR_LTTNG_TRACEF: loop(TR_LTTNG_TRACEF, w, from, to, timed); break;
	case TR_CLOCK: loop(TR_CLOCK, w, from, to, timed); break;
	case TR_UPROBE_SS: loop(TR_UPROBE_SS, w, from, to, timed); break;
	case TR_CALL_SS: loop(TR_CALL_SS, w, from, to, timed); break;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	cpu_set_t set;
	uint64_t c0;

	CPU_ZERO(&set);
	CPU_SET((int)(w->t % ncpu), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	w->tid = (uint32_t)syscall(SYS_gettid);
	if (tracer == TR_THREAD) {
		w->ring.size = (total_size / (uint64_t)nthreads) & ~7ull;
		w->ring.data = bl_alloc_zero(w->ring.size);
		if (!w->ring.data || w->ring.size < 2 * BL_MAX_ENTRY) {
			fprintf(stderr, "app_bench: per-thread ring of %llu bytes too small\n",
				(unsigned long long)w->ring.size);
			exit(1);
		}
	}
	pthread_barrier_wait(&barrier);
	c0 = mono_ns(CLOCK_THREAD_CPUTIME_ID);
	run_loop(w, 0, nevents, 0);
	w->cpu_ns = mono_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	pthread_barrier_wait(&barrier);
	run_loop(w, nevents, 2 * nevents, 1);
	if (sched_getcpu() != (int)(w->t % ncpu))
		w->cpu_mismatch = 1;
	return NULL;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s --tracer btrace|off|uprobe|call|uprobe-ss|call-ss|thread|pcow|pcdrop|clock"
#ifdef WITH_LTTNG
		"|lttng-tp|lttng-tracef"
#endif
		" [--threads T] [--events N] [--size BYTES] [--wait SECONDS]\n",
		argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *tname = NULL;
	long wait_s = 10;
	struct worker *w;
	uint32_t *all;
	uint64_t cpu_ns = 0;
	int mismatch = 0;

	for (int k = 1; k < argc; k++) {
		if (strcmp(argv[k], "--tracer") == 0 && k + 1 < argc)
			tname = argv[++k];
		else if (strcmp(argv[k], "--threads") == 0 && k + 1 < argc)
			nthreads = atol(argv[++k]);
		else if (strcmp(argv[k], "--events") == 0 && k + 1 < argc)
			nevents = atol(argv[++k]);
		else if (strcmp(argv[k], "--size") == 0 && k + 1 < argc) {
			if (parse_size(argv[++k], &total_size))
				usage(argv[0]);
		} else if (strcmp(argv[k], "--wait") == 0 && k + 1 < argc)
			wait_s = atol(argv[++k]);
		else
			usage(argv[0]);
	}
	if (!tname || nthreads < 1 || nevents < 1)
		usage(argv[0]);
	tracer = (enum tracer)-1;
	for (unsigned k = 0; k < sizeof(tr_name) / sizeof(tr_name[0]); k++)
		if (strcmp(tname, tr_name[k]) == 0)
			tracer = (enum tracer)k;
	if ((int)tracer < 0)
		usage(argv[0]);
#ifndef WITH_LTTNG
	if (tracer == TR_LTTNG_TP || tracer == TR_LTTNG_TRACEF) {
		fprintf(stderr, "app_bench: built without LTTng-UST; use build/bench/app_bench_lttng\n");
		return 2;
	}
#endif
	ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	tgid = (uint32_t)getpid();
	calibrate_tsc();

	if (tracer == TR_BTRACE) {
		btrace_init("app_bench");
		for (long ms = 0; !btrace_attached() && ms < wait_s * 1000; ms += 5)
			usleep(5000);
		if (!btrace_attached()) {
			fprintf(stderr, "app_bench: no recorder attached after %lds ($BTRACE_CTL?)\n", wait_s);
			return 1;
		}
	} else if (tracer == TR_OFF) {
		btrace_init("app_bench");
		usleep(20000); /* the connection thread's first attempt is over */
		if (btrace_attached()) {
			fprintf(stderr, "app_bench: off: a recorder is attached (unset $BTRACE_CTL)\n");
			return 1;
		}
	} else if (tracer == TR_PCOW) {
		pcow = bl_pcow_create(total_size, (uint32_t)ncpu);
	} else if (tracer == TR_PCDROP) {
		pcdrop = bl_pcdrop_create(total_size, (uint32_t)ncpu, 4);
	}
	if ((tracer == TR_PCOW && !pcow) || (tracer == TR_PCDROP && !pcdrop)) {
		fprintf(stderr, "app_bench: cannot create the baseline buffer\n");
		return 1;
	}

	struct lat timer = timer_overhead();
	w = calloc((size_t)nthreads, sizeof(*w));
	all = malloc((size_t)nthreads * (size_t)nevents * sizeof(*all));
	if (!w || !all)
		return 1;
	pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
	for (long t = 0; t < nthreads; t++) {
		w[t].t = t;
		w[t].lat = all + (size_t)t * (size_t)nevents;
		if (pthread_create(&w[t].th, NULL, worker_main, &w[t])) {
			fprintf(stderr, "app_bench: cannot create thread %ld\n", t);
			return 1;
		}
	}
	for (long t = 0; t < nthreads; t++) {
		pthread_join(w[t].th, NULL);
		cpu_ns += w[t].cpu_ns;
		mismatch |= w[t].cpu_mismatch;
	}
	struct lat l = lat_stats(all, (size_t)nthreads * (size_t)nevents);
	printf("%s threads=%ld events=%ld gm=%.1f p50=%.1f p99=%.1f p999=%.1f max=%.0f cpu=%.1f timer_gm=%.1f "
	       "timer_p50=%.1f pid=%d",
	       tr_name[tracer], nthreads, nevents, l.gm, l.p50, l.p99, l.p999, l.max,
	       (double)cpu_ns / (double)(nthreads * nevents), timer.gm, timer.p50, (int)getpid());
	if (tracer == TR_PCDROP)
		printf(" dropped=%llu", (unsigned long long)bl_pcdrop_dropped(pcdrop));
	if (tracer == TR_BTRACE)
		printf(" attached=%d", btrace_attached());
	if (mismatch)
		printf(" unpinned=1");
	printf("\n");
	return 0;
}
#endif /* APP_BENCH_TP_UNIT */
