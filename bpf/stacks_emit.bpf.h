/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * stacks_emit.bpf.h - taking and interning a call stack, and emitting an
 * event that names stacks (the mechanism is described at the top of
 * record_stacks.bpf.h). Shared by record.bpf.c (samples, off-CPU, wakers)
 * and uprobe.bpf.c (--ustack): the maps are record's, the uprobe loader
 * reuses them (bpf_map__reuse_fd), so both intern into one table.
 * Included after emit.bpf.h.
 */
#ifndef BTRACE_STACKS_EMIT_BPF_H
#define BTRACE_STACKS_EMIT_BPF_H


/* Scratch slots: one per program kind. A program never nests into itself on
 * a CPU (the kernel skips such runs), but the sampling program's timer
 * interrupt can come inside the waking program: different slots. */
#define BT_STK_SLOT_SAMPLE 0
#define BT_STK_SLOT_SWITCH 1
#define BT_STK_SLOT_WAKEUP 2
#define BT_STK_SLOT_PROBE 3 /* uprobe.bpf.c */
#define BT_STK_SLOTS 4

struct bt_stack_buf {
	struct bt_event_hdr h; /* the layout of struct bt_raw_stack_def */
	__u64 hash;
	__u32 nframes;
	__u32 flags;
	__u64 ips[BT_MAX_FRAMES * 3]; /* BT_STACKDEF_FILES: struct bt_stack_frame_file each */
	__u64 stop[3]; /* not sent: pc, sp, bp where the unwinder stopped */
	/* not sent: frames the unwinder found in a CPython interpreter's
	 * _PyEval_EvalFrameDefault (bit i: frame i), the interpreter's file and
	 * the bias from its ELF addresses to the process's (python_frames.bpf.h) */
	__u64 pymask[2];
	__u64 pybias;
	__u64 pyino;
	__u32 pydev;
	__u32 pypad;
};
#define BT_STACKDEF_HDR 40u

_Static_assert(sizeof(struct bt_raw_stack_def) == BT_STACKDEF_HDR, "stack definition header");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BT_STK_SLOTS);
	__type(key, __u32);
	__type(value, struct bt_stack_buf);
} stack_scratch SEC(".maps");

/* Hashes whose frames were sent (value unused). Sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32768);
	__type(key, __u64);
	__type(value, __u32);
} stack_seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bt_stack_stats);
} stack_stats SEC(".maps");

static __always_inline struct bt_stack_stats *bt_stack_stats_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&stack_stats, &zero);
}

#ifdef BT_WITH_UNWIND
#include "python_frames.bpf.h"
#include "unwind_walk.bpf.h"
#include "stack_copy.bpf.h"
#endif

/* The hash of the current task's kernel (user = 0) or user stack, its frames
 * sent first if new. BT_HASH_NONE: no such stack; BT_HASH_LOST: not taken
 * (counted in ss). */
static __always_inline __u64 bt_stack_take(void *ctx, __u32 slot, int user, struct bt_stack_stats *ss)
{
	struct bt_stack_buf *b;
	__u64 h, pid_tgid, v = 0;
	__u32 cpu, nf, i, st, seen = 1;
	void *ring;
	long n;

	b = bpf_map_lookup_elem(&stack_scratch, &slot);
	if (!b)
		return BT_HASH_LOST;
	b->flags = 0;
#ifdef BT_WITH_UNWIND
	if (user && unwind_on) {
		b->pymask[0] = b->pymask[1] = 0;
		n = bt_unwind_user(b, slot, ss, &b->flags);
		if (py_frames_on && n > 0 && (b->pymask[0] | b->pymask[1]))
			n = bt_py_frames(slot, (__u32)n);
		n *= 8;
	} else
#endif
		n = bpf_get_stack(ctx, b->ips, BT_MAX_FRAMES * 8, user ? BPF_F_USER_STACK : 0);
	if (n < 0) {
		if (user)
			__sync_fetch_and_add(&ss->user_err, 1);
		else
			__sync_fetch_and_add(&ss->kernel_err, 1);
		return BT_HASH_LOST;
	}
	nf = (__u32)n / 8;
	if (nf == 0)
		return BT_HASH_NONE;
#ifdef BT_WITH_UNWIND
	if ((b->flags & BT_STACKDEF_COPY) && !bt_stack_copy_budget())
		b->flags &= ~BT_STACKDEF_COPY; /* stays cut, counted */
#else
	b->flags &= ~BT_STACKDEF_COPY;
#endif
	if (nf > BT_MAX_FRAMES)
		nf = BT_MAX_FRAMES;
	pid_tgid = bpf_get_current_pid_tgid();
	h = 0xcbf29ce484222325ull;
	if (user)
		h = (h ^ ((pid_tgid >> 32) << 1 | 1)) * 0x100000001b3ull;
	st = (b->flags & BT_STACKDEF_FILES) ? 3 : 1;
	for (i = 0; i < BT_MAX_FRAMES; i++) {
		__u32 k = i * st;

		barrier_var(k);
		if (i >= nf || k >= BT_MAX_FRAMES * 3)
			break;
		h = (h ^ b->ips[k]) * 0x100000001b3ull;
	}
	h = (h ^ b->flags) * 0x100000001b3ull; /* a cut stack is another stack */
	h ^= h >> 31;
	if (h <= BT_HASH_LOST)
		h += 2;
	if (b->flags & BT_STACKDEF_COPY)
		/* This event's own stack: its copy finishes it alone. */
		h = (h ^ (bpf_ktime_get_ns() << 8 | bpf_get_smp_processor_id())) * 0x100000001b3ull | 2;
	else if (bpf_map_lookup_elem(&stack_seen, &h))
		return h;
	cpu = bpf_get_smp_processor_id();
	ring = bpf_map_lookup_elem(&rings, &cpu);
	b->h.ts_ns = 0;
	b->h.seq = 0;
	b->h.tid = (__u32)pid_tgid;
	b->h.tgid = pid_tgid >> 32;
	b->h.cpu = cpu;
	b->h.type = BT_RAW_STACK_DEF;
	b->hash = h;
	b->nframes = nf;
	b->flags |= (user ? BT_STACKDEF_USER : 0) | (nf == BT_MAX_FRAMES ? BT_STACKDEF_FULL : 0);
	if (!ring || bpf_ringbuf_output(ring, b, BT_STACKDEF_HDR + (__u64)nf * 8 * st, BPF_RB_NO_WAKEUP)) {
		__sync_fetch_and_add(&ss->def_drops, 1);
		return BT_HASH_LOST;
	}
#ifdef BT_WITH_UNWIND
	if (b->flags & BT_STACKDEF_COPY) {
		bt_stack_copy_send(h, slot, nf);
		return h;
	}
#endif
	bpf_map_update_elem(&stack_seen, &h, &seen, BPF_ANY);
	(void)v;
	return h;
}

/* Emit a BT_RAW_STACKS record (ev_type, the hashes) as the current task,
 * or as `tid`/`tgid` when non-zero. */
static __always_inline void bt_stacks_emit(__u16 ev_type, __u64 khash, __u64 uhash, __u32 aux32, __u64 aux64,
					   __u32 tid, __u32 tgid, int irqs_off)
{
	struct bt_raw_stacks *e;
	struct bt_cpu_state *st;
	void *ring;

	e = bt_begin(sizeof(*e), BT_GROUP_STACKS, BT_RAW_STACKS, irqs_off, &st, &ring);
	if (!e)
		return;
	if (tid) {
		e->h.tid = tid;
		e->h.tgid = tgid;
	}
	e->ev_type = ev_type;
	e->reserved = 0;
	e->aux32 = aux32;
	e->khash = khash;
	e->uhash = uhash;
	e->aux64 = aux64;
	bt_commit(e, st, ring, BT_GROUP_STACKS, irqs_off);
}

#endif
