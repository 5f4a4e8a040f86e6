/* SPDX-License-Identifier: MIT */
/*
 * funcs_write.h - libbtrace internals of function tracing shared by the
 * hooks (func_hooks.c: the per-point fast path) and the batch work
 * (btrace_funcs.c: claiming, closing, calibration, records made inside a
 * signal handler). Not installed.
 */
#ifndef BTRACE_FUNCS_WRITE_H
#define BTRACE_FUNCS_WRITE_H
#include "app_write.h"

#define BT_FDELTA_MAX (1ll << 29) /* address deltas in a record word: 30 bits, signed */

/* The tick counter the records are timed by (TSC; the virtual counter on
 * arm64): no system call, no clock conversion on the hot path. */
static inline BT_NOINSTR uint64_t btrace_ticks_(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return now_boot();
#endif
}

/* One record word (events.h: bt_ev_app_funcs). */
static inline BT_NOINSTR uint64_t btrace_fword_(uint64_t dt, unsigned kind, int64_t delta)
{
	return (dt & 0xffffffffu) | (uint64_t)kind << 32 | (uint64_t)delta << 34;
}

/* Everything the fast path does not handle: a far address (long record),
 * a full or old batch, a new buffer, no batch (btrace_funcs.c). */
void btrace_funcs_slow_(struct tstate *t, uint64_t fn, unsigned kind, uint64_t now) BT_HIDDEN BT_NOINSTR;
/* Inside a hook (fbusy): a signal handler's record, kept for the hook to
 * write when it is done (btrace_funcs.c). */
void btrace_funcs_nested_(struct tstate *t, uint64_t fn, unsigned kind) BT_HIDDEN BT_NOINSTR;
/* Write the records signal handlers left while this thread was in a hook. */
void btrace_funcs_flush_(struct tstate *t) BT_HIDDEN BT_NOINSTR;

/* One record at tick `now` into the thread's batch; t->fbusy is set. */
static inline BT_NOINSTR void btrace_fpoint_(struct tstate *t, uint64_t fn, unsigned kind, uint64_t now)
{
	int64_t d = (int64_t)(fn - t->faddr0);
	/* One unsigned compare for flast <= now < fend: the counter did not go
	 * back (a migration) and the batch is young enough. */
	if (__builtin_expect(t->fw < t->fcap && now - t->flast < t->fend - t->flast && d >= -BT_FDELTA_MAX &&
				     d < BT_FDELTA_MAX &&
				     t->fbuf == atomic_load_explicit(&btrace_buf_, memory_order_relaxed),
			     1)) {
		t->fwords[t->fw] = btrace_fword_(now - t->flast, kind, d);
		t->flast = now;
		t->seq++;
		/* Release: pairs with the acquire loads of the reader's copy
		 * (app_reader.c): count covers only records fully stored. */
		__atomic_store_n(&t->fbat->count, ++t->fw, __ATOMIC_RELEASE);
	} else {
		btrace_funcs_slow_(t, fn, kind, now);
	}
}
#endif
