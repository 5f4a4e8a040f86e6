// SPDX-License-Identifier: MIT
/*
 * btrace_funcs.c - every function entry and exit of a program compiled with
 * -finstrument-functions, into the application's shared buffer (Hubble,
 * OSDI'22, adapted to the BTrace block buffer).
 *
 * A thread claims a run of its CPU's block (one FAA on the block's alloc
 * word, up to BATCH_MAX bytes: a struct bt_ev_app_funcs entry) and then
 * writes one 8-byte word per entry or exit with plain stores: a tick delta
 * (TSC, rdtsc), the kind, and the address as a delta from the batch's
 * first function (events.h has the encoding). After each record the word
 * count is stored with release, so a dump taken while the batch is open
 * sees every record written so far (app_reader.c reads blocks with writes
 * in flight up to the first unwritten entry). The batch is confirmed (one
 * FAA on conf) when it is full, older than AGE_NS, the buffer changed, or
 * the thread ends (a TSD destructor); until then its block cannot be
 * reused, so an idle thread pins one block. A thread that dies without
 * closing its batch (SYS_exit, a crash) loses nothing it wrote; its block
 * is skipped (counted) until the buffer is replaced.
 *
 * Times: a batch starts with a calibration pair (ticks, CLOCK_BOOTTIME) and
 * the tick rate the library measured (mult_q32, kept current window by
 * window: tick_rate.h); readers convert ticks to the kernel events' clock.
 * A batch spans at most AGE_NS, so rate error and NTP slewing move its last
 * record by far less than a microsecond.
 *
 * The hooks and their fast path are in func_hooks.c and funcs_write.h; this
 * file does the rest. The hooks run in any thread at any time, including
 * signal handlers that interrupt a hook: fbusy sends the inner record to a
 * per-thread ring the interrupted hook writes out when it is done. Nothing
 * here is instrumented (BT_NOINSTR), so nothing recurses.
 */
#include "btrace.h"
#include "app_write.h"
#include "tick_rate.h"
#include "funcs_write.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BATCH_MAX 1024u /* bytes of a batch region: 120 records, 8.5 bytes/record with the header */
#define BATCH_MIN (BT_ENTRY_HDR + (uint32_t)sizeof(struct bt_ev_app_funcs) + 8u * 8u)
#define AGE_NS 8000000ull /* a batch spans at most 8 ms */

int btrace_funcs_on_;
int btrace_funcs_linked_;
static int funcs_disabled;           /* BTRACE_FUNCS=0 */
static struct bt_tick_rate rate;     /* updated under rate_lock only */
static atomic_flag rate_lock = ATOMIC_FLAG_INIT;
static _Atomic uint64_t rate_next_ns; /* when the rate's window can end (checked without the lock) */
static _Atomic uint64_t mult_q32;    /* rate.mult, for every thread: ns per tick * 2^32; 0: not calibrated */
static uint64_t age_ticks;           /* AGE_NS in ticks */
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* A (ticks, boot ns) pair taken close together: the tightest of three. */
static BT_NOINSTR void pair(uint64_t *tk, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		uint64_t a = btrace_ticks_(), n = now_boot(), b = btrace_ticks_();
		if (b - a < best) {
			best = b - a;
			*tk = a + (b - a) / 2;
			*ns = n;
		}
		if (best < 200)
			break;
	}
}

static BT_NOINSTR void set_rate(uint64_t m)
{
	if (!m)
		return;
	atomic_store_explicit(&mult_q32, m, memory_order_relaxed);
	uint64_t age = m ? (uint64_t)(((unsigned __int128)AGE_NS << 32) / m) : 0;
	if (age > (1ull << 31) || !age)
		age = 1ull << 31; /* a tick delta must fit 32 bits */
	__atomic_store_n(&age_ticks, age, __ATOMIC_RELAXED);
}

void btrace_funcs_calibrate_(long ms)
{
	const char *e = getenv("BTRACE_FUNCS");
	if (e && strcmp(e, "0") == 0)
		funcs_disabled = 1;
	if (funcs_disabled || atomic_load_explicit(&mult_q32, memory_order_relaxed))
		return;
	uint64_t t0, n0, t1, n1;
	pair(&t0, &n0);
	struct timespec ts = { 0, ms * 1000 * 1000 };
	nanosleep(&ts, NULL);
	pair(&t1, &n1);
	bt_tick_rate_init(&rate, t0, n0, t1, n1);
	set_rate(rate.mult);
	atomic_store_explicit(&rate_next_ns, n1 + BT_TICK_WINDOW_NS, memory_order_relaxed);
}

/* Refine the rate with a fresh pair once its window is a second long. One
 * thread at a time; the others go on with the rate in use (a try-lock: the
 * hooks run in signal handlers too, and never wait). Acquire/release on
 * rate_lock order the updates of `rate` between the threads that take it. */
static BT_NOINSTR void refine_rate(uint64_t tk, uint64_t ns)
{
	if (ns < atomic_load_explicit(&rate_next_ns, memory_order_relaxed) ||
	    atomic_flag_test_and_set_explicit(&rate_lock, memory_order_acquire))
		return;
	if (bt_tick_rate_update(&rate, tk, ns))
		set_rate(rate.mult);
	atomic_store_explicit(&rate_next_ns, rate.ns + BT_TICK_WINDOW_NS, memory_order_relaxed);
	atomic_flag_clear_explicit(&rate_lock, memory_order_release);
}

void btrace_funcs_attached_(int on)
{
	__atomic_store_n(&btrace_funcs_on_,
			 on && !funcs_disabled && atomic_load_explicit(&mult_q32, memory_order_relaxed) != 0,
			 __ATOMIC_RELAXED);
}

/* Confirm the thread's batch: its block can complete. */
static BT_NOINSTR void close_batch(struct tstate *t)
{
	if (t->fbat) {
		t->fprev_ns = t->fbat->h.ts_ns +
			      (uint64_t)(((unsigned __int128)(t->flast - t->ftsc0) * t->fbat->mult_q32) >> 32);
		btrace_confirm_(t->fmeta, t->flen);
		t->fbat = NULL;
	}
	t->fcap = t->fw = 0;
}

void btrace_funcs_break_(struct tstate *t)
{
	if (t->fbat)
		close_batch(t);
}

void btrace_dropped_nested_(struct tstate *t)
{
	t->seq++; /* the gap shows where */
	/* Acquire: pairs with the release store in publish() (btrace_app.c). */
	struct app_buf *b = atomic_load_explicit(&btrace_buf_, memory_order_acquire);
	if (b)
		atomic_fetch_add_explicit(&b->shm->stats.dropped, 1, memory_order_relaxed);
}

void btrace_funcs_nested_(struct tstate *t, uint64_t fn, unsigned kind)
{
	/* A handler interrupting a handler's own keeping (fbusy 2), or more
	 * than BT_FPEND records: dropped, counted, and no seq taken (the
	 * interrupted hook's records stay contiguous, nothing is cut). */
	if (t->fbusy != 1 || t->fpw - t->fpr >= BT_FPEND) {
		/* Acquire: pairs with the release store in publish() (btrace_app.c). */
		struct app_buf *b = atomic_load_explicit(&btrace_buf_, memory_order_acquire);
		if (b)
			atomic_fetch_add_explicit(&b->shm->stats.dropped, 1, memory_order_relaxed);
		return;
	}
	t->fbusy = 2;
	atomic_signal_fence(memory_order_seq_cst);
	uint32_t i = t->fpw % BT_FPEND;
	t->fpend_tk[i] = btrace_ticks_();
	t->fpend_fn[i] = fn;
	t->fpend_kind[i] = (uint8_t)kind;
	/* Signal fence: the slot is whole before the interrupted flush (if it
	 * was flushing) can see fpw move past it. */
	atomic_signal_fence(memory_order_seq_cst);
	t->fpw++;
	atomic_signal_fence(memory_order_seq_cst);
	t->fbusy = 1;
}

void btrace_funcs_flush_(struct tstate *t)
{
	/* A handler may add records while this runs (fbusy is 1): the loop
	 * takes them too. Their ticks are before the record just written when
	 * the signal came before its clock read: they are moved up to it
	 * (btrace_funcs_slow_ keeps a thread's times from going back). */
	while (t->fpr != t->fpw) {
		uint32_t i = t->fpr % BT_FPEND;
		btrace_fpoint_(t, t->fpend_fn[i], t->fpend_kind[i], t->fpend_tk[i]);
		atomic_signal_fence(memory_order_seq_cst);
		t->fpr++;
	}
}

/* Thread exit (TSD destructor; also when an instrumented destructor ran
 * after it and opened a batch again: the value is set at every claim). */
static BT_NOINSTR void thread_end(void *arg)
{
	(void)arg;
	struct tstate *t = &btrace_tls_;
	t->fbusy = 1;
	btrace_funcs_flush_(t);
	close_batch(t);
	/* Calls after this point (other destructors) open a new batch and
	 * set the key again: the destructor runs once more. */
	t->fbusy = 0;
}

static BT_NOINSTR void make_key(void)
{
	pthread_key_create(&exit_key, thread_end);
}

/* Claim a new batch starting with this record. */
static BT_NOINSTR void open_batch(struct tstate *t, uint64_t fn, unsigned kind, uint64_t now)
{
	/* Acquire: pairs with the release store in publish() (btrace_app.c). */
	struct app_buf *b = atomic_load_explicit(&btrace_buf_, memory_order_acquire);
	if (!b)
		return;
	if (__builtin_expect(!t->tid, 0))
		t->tid = (uint32_t)syscall(SYS_gettid);
	int cpu = sched_getcpu();
	if (cpu < 0)
		cpu = 0;
	uint32_t len;
	struct bt_app_meta *mt;
	uint8_t *p = (uint32_t)cpu < b->ncores ? btrace_reserve_(b, (uint32_t)cpu, BATCH_MIN, BATCH_MAX, &len, &mt)
					       : NULL;
	if (!p) {
		if ((uint32_t)cpu >= b->ncores)
			atomic_fetch_add_explicit(&b->shm->stats.dropped, 1, memory_order_relaxed);
		t->seq++; /* the record is lost: the gap shows it */
		return;
	}
	pthread_once(&key_once, make_key);
	pthread_setspecific(exit_key, (void *)1);
	uint64_t tk, ns, m;
	pair(&tk, &ns);
	refine_rate(tk, ns);
	m = atomic_load_explicit(&mult_q32, memory_order_relaxed);
	/* Move the pair back to this record's tick (taken before the pair). */
	if (tk > now)
		ns -= (uint64_t)(((unsigned __int128)(tk - now) * m) >> 32);
	/* A thread's times never go back from one batch to the next (two
	 * pairs disagree by their jitter, tens of ns). */
	if (ns < t->fprev_ns)
		ns = t->fprev_ns;
	struct bt_ev_app_funcs *f = (struct bt_ev_app_funcs *)(p + BT_ENTRY_HDR);
	f->h.ts_ns = ns;
	f->h.seq = t->seq;
	f->h.tid = t->tid;
	f->h.tgid = b->shm->pid;
	f->h.cpu = (uint16_t)cpu;
	f->h.type = BT_EV_APP_FUNCS;
	f->tsc0 = now;
	f->addr0 = fn;
	f->mult_q32 = m;
	f->cap = (len - BT_ENTRY_HDR - (uint32_t)sizeof(*f)) / 8u;
	f->words[0] = btrace_fword_(0, kind, 0);
	t->seq++;
	__atomic_store_n(&f->count, 1, __ATOMIC_RELAXED);
	/* Release: pairs with the reader's acquire loads of the block copy; an
	 * entry header seen non-zero comes with the batch header above. */
	struct bt_entry_hdr e = { .size = len, .kind = BT_ENTRY_DATA };
	uint64_t ew;
	memcpy(&ew, &e, sizeof(ew));
	__atomic_store_n((uint64_t *)p, ew, __ATOMIC_RELEASE);
	t->fbat = f;
	t->fwords = (uint64_t *)f->words;
	t->fbuf = b;
	t->fmeta = mt;
	t->flen = len;
	t->fcap = f->cap;
	t->fw = 1;
	t->ftsc0 = t->flast = now;
	t->fend = now + __atomic_load_n(&age_ticks, __ATOMIC_RELAXED);
	t->faddr0 = fn;
}

void btrace_funcs_slow_(struct tstate *t, uint64_t fn, unsigned kind, uint64_t now)
{
	/* Migrated to a CPU whose counter is a few ticks behind: no going back. */
	if (t->fbat && (int64_t)(now - t->flast) < 0)
		now = t->flast;
	int64_t d = (int64_t)(fn - t->faddr0);
	if (t->fbat && t->fw < t->fcap && d >= -BT_FDELTA_MAX && d < BT_FDELTA_MAX && now < t->fend &&
	    t->fbuf == atomic_load_explicit(&btrace_buf_, memory_order_relaxed)) {
		t->fwords[t->fw] = btrace_fword_(now - t->flast, kind, d);
		t->flast = now;
		t->seq++;
		/* Release: as in btrace_fpoint_() (funcs_write.h). */
		__atomic_store_n(&t->fbat->count, ++t->fw, __ATOMIC_RELEASE);
		return;
	}
	/* Only the address is far (another object file): a long record. */
	if (t->fbat && t->fw + 2 <= t->fcap && now < t->fend &&
	    t->fbuf == atomic_load_explicit(&btrace_buf_, memory_order_relaxed)) {
		t->fwords[t->fw] = btrace_fword_(now - t->flast, kind | BT_FREC_ENTRY_LONG, 0);
		t->fwords[t->fw + 1] = fn;
		t->fw += 2;
		t->flast = now;
		t->seq++;
		/* Release: pairs with the reader's acquire copy (see btrace_fpoint_()). */
		__atomic_store_n(&t->fbat->count, t->fw, __ATOMIC_RELEASE);
		return;
	}
	close_batch(t);
	open_batch(t, fn, kind, now);
}

