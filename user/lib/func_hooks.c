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

/* A program with the hooks registers as a function-tracing one, which gets
 * the larger default buffer (a record per call fills 4 MiB in a fraction
 * of a second). Priority 101: before btrace_app.c's constructor starts the
 * registration. */
__attribute__((constructor(101))) static BT_NOINSTR void mark_linked(void)
{
	btrace_funcs_linked_ = 1;
}

/* How far above the innermost open call a new frame may be and still be
 * on the same stack: a frame further up is another stack (a handler on
 * sigaltstack, a coroutine), not a longjmp. The default stack's size. */
#define FRAME_JUMP_MAX (8u << 20)

/* Close the open calls a longjmp abandoned. Entering (at sp): those whose
 * frame is at or below sp's (a call's frame is always below its caller's,
 * so they are no longer on the stack). Leaving fn: those above the
 * innermost open call of fn, if one is kept. Exits are matched by function,
 * not by frame: gcc tail-calls the exit hook after the epilogue, so its
 * frame is the function's CFA, above the entry's. Each gets an exit record
 * at `now`, innermost first, so every reader pairs them as returns. Beyond
 * BT_FRAMES open calls the deeper ones are not kept: the exit of the
 * deepest kept one closes them too (a reader pops every call above the one
 * an exit names). Out of line: the hooks only test the innermost frame. */
static __attribute__((noinline, cold)) BT_NOINSTR void close_abandoned(struct tstate *t, uint64_t fn, uintptr_t sp,
									  int leaving, uint64_t now)
{
	uint32_t kept = t->fdepth <= BT_FRAMES ? t->fdepth : BT_FRAMES;

	if (leaving) {
		uint32_t i = kept;
		while (i && t->ffn[i - 1] != fn)
			i--;
		if (!i || t->fdepth > BT_FRAMES)
			return; /* not kept (or not the innermost kept): nothing known */
		while (t->fdepth > i) {
			btrace_fpoint_(t, t->ffn[t->fdepth - 1], BT_FREC_EXIT, now);
			t->fdepth--;
		}
		return;
	}
	while (t->fdepth) {
		uint32_t top = t->fdepth <= BT_FRAMES ? t->fdepth - 1 : BT_FRAMES - 1;
		uintptr_t f = t->fsp[top];
		if (f > sp)
			return; /* an enclosing call */
		if (sp - f >= FRAME_JUMP_MAX)
			return; /* another stack */
		btrace_fpoint_(t, t->ffn[top], BT_FREC_EXIT, now);
		t->fdepth = top;
	}
}

/* Inlined into each hook, where kind is a constant. */
static inline __attribute__((always_inline)) BT_NOINSTR void record(uint64_t fn, unsigned kind, uintptr_t sp)
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
	uint64_t now = btrace_ticks_();
	uint32_t d = t->fdepth;
	if (__builtin_expect(d != 0, 1)) {
		/* A call whose frame is not below the innermost open call's, or
		 * an exit of another function than it: a longjmp left it */
		uint32_t top = d <= BT_FRAMES ? d - 1 : BT_FRAMES - 1;
		if (__builtin_expect(kind == BT_FREC_EXIT ? d <= BT_FRAMES && t->ffn[top] != fn : t->fsp[top] <= sp, 0)) {
			close_abandoned(t, fn, sp, kind == BT_FREC_EXIT, now);
			d = t->fdepth;
		}
	}
	/* Before the record: nothing of this stays live across its slow path */
	if (kind == BT_FREC_ENTRY) {
		if (d < BT_FRAMES) {
			t->fsp[d] = sp;
			t->ffn[d] = fn;
		}
		t->fdepth = d + 1;
	} else {
		t->fdepth = d ? d - 1 : 0;
	}
	btrace_fpoint_(t, fn, kind, now);
	atomic_signal_fence(memory_order_seq_cst);
	if (__builtin_expect(t->fpw != t->fpr, 0))
		btrace_funcs_flush_(t);
	atomic_signal_fence(memory_order_seq_cst);
	t->fbusy = 0;
}

/* The instrumented function's stack pointer at its call of the hook (the
 * hook's CFA: no frame pointer needed); clang: the hook's frame, right
 * below it. Only entries compare it (see close_abandoned). */
#if defined(__clang__)
#define CALLER_SP() ((uintptr_t)__builtin_frame_address(0))
#else
#define CALLER_SP() ((uintptr_t)__builtin_dwarf_cfa())
#endif

BT_NOINSTR void __cyg_profile_func_enter(void *fn, void *site)
{
	(void)site;
	if (__builtin_expect(__atomic_load_n(&btrace_funcs_on_, __ATOMIC_RELAXED) != 0, 0))
		record((uint64_t)(uintptr_t)fn, BT_FREC_ENTRY, CALLER_SP());
}

BT_NOINSTR void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	if (__builtin_expect(__atomic_load_n(&btrace_funcs_on_, __ATOMIC_RELAXED) != 0, 0))
		record((uint64_t)(uintptr_t)fn, BT_FREC_EXIT, CALLER_SP());
}
