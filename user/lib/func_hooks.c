// SPDX-License-Identifier: MIT
/*
 * func_hooks.c - the -finstrument-functions hooks: every function entry and
 * exit of an instrumented program, one record each into the thread's batch
 * (btrace_funcs.c claims and closes batches).
 *
 * Per trace point without a recorder: one load and a predicted branch. With
 * one: the thread's state (initial-exec TLS), rdtsc, four compares, two
 * stores. No system call, lock, atomic RMW or clock conversion.
 *
 * A signal handler that runs instrumented code while its thread is inside a
 * hook (or an event write) finds fbusy set: its records are kept aside
 * (btrace_funcs_nested_) and written by the interrupted hook once its own
 * record is in, so neither is lost and the thread's seq has no gap.
 */
#include "btrace.h"
#include "funcs_write.h"

/* A program built with -finstrument-functions and no btrace_* call needs
 * only the hooks from the archive; a static archive's object is linked
 * only when a symbol of it is needed, so the hooks need btrace_app.o,
 * whose constructor registers the process with the recorder (without
 * this, the README's link line gave a program that never registered). */
__attribute__((used)) static int (*const need_registration)(const char *) = btrace_init;

static inline BT_NOINSTR void record(uint64_t fn, unsigned kind)
{
	struct tstate *t = &btrace_tls_;
	if (__builtin_expect(t->fbusy != 0, 0)) {
		btrace_funcs_nested_(t, fn, kind);
		return;
	}
	t->fbusy = 1;
	/* Signal fences: a handler on this thread sees fbusy set before any
	 * of the state below changes, and clear only after. */
	atomic_signal_fence(memory_order_seq_cst);
	btrace_fpoint_(t, fn, kind, btrace_ticks_());
	atomic_signal_fence(memory_order_seq_cst);
	if (__builtin_expect(t->fpw != t->fpr, 0))
		btrace_funcs_flush_(t);
	atomic_signal_fence(memory_order_seq_cst);
	t->fbusy = 0;
}

BT_NOINSTR void __cyg_profile_func_enter(void *fn, void *site)
{
	(void)site;
	if (__builtin_expect(__atomic_load_n(&btrace_funcs_on_, __ATOMIC_RELAXED) != 0, 0))
		record((uint64_t)(uintptr_t)fn, BT_FREC_ENTRY);
}

BT_NOINSTR void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	if (__builtin_expect(__atomic_load_n(&btrace_funcs_on_, __ATOMIC_RELAXED) != 0, 0))
		record((uint64_t)(uintptr_t)fn, BT_FREC_EXIT);
}
