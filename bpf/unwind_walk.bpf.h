/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * unwind_walk.bpf.h - user stacks walked from the binaries' call-frame
 * information (.eh_frame compiled into rows by the recorder, bpf/unwind.h),
 * so code built without frame pointers (Debian's packages) shows its
 * callers. Included by stacks_emit.bpf.h in record.bpf.c only (uprobe
 * stacks keep the kernel's frame-pointer walk).
 *
 * Each frame: the mapping of pc (binary search over the process's sorted
 * executable mappings), its row (binary search over its binary's rows), the
 * CFA from the row, the return address read at CFA - 8, rbp restored if the
 * row says where it was saved. A pc in no executable mapping ends the walk
 * marked truncated (never a frame: junk from a broken chain), as do
 * anonymous code (JIT) and signal frames, each counted. Where a binary has
 * no row for pc, frame pointers are followed if rbp looks like one. Frames
 * are steps of bpf_loop (no unrolled loop, any depth up to BT_MAX_FRAMES).
 *
 * A process without mappings here (new, or exec'd since) gets its leaf
 * only, truncated, and is put in `unwind_want`: the recorder loads it
 * (user/stacks/unwind_procs.c), as it does again when a pc falls in no
 * known mapping (a library dlopen'ed since).
 */
#ifndef BTRACE_UNWIND_WALK_BPF_H
#define BTRACE_UNWIND_WALK_BPF_H
#include "unwind.h"

const volatile __u32 unwind_on = 0; /* set by the loader (not --no-unwind) */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by the loader: --unwind-mem */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct bt_unwind_row);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct bt_unwind_proc);
} unwind_procs SEC(".maps");

/* Processes whose mappings the recorder should (re)read: tgid -> when asked. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} unwind_want SEC(".maps");

struct bt_uw {
	__u64 pc, sp, bp;
	__u32 tgid, slot, n, flags;
};

/* Bumped after each entry put in unwind_want: the recorder polls this
 * word (mmap'ed .bss) and walks the map only when it moved, instead of a
 * map walk (a scan of every bucket) 100 times a second. */
__u64 unwind_want_seq = 0;

/* An ask's time is even; an exec's is odd and overwrites an ask, so the
 * recorder can tell its read of /proc/PID/maps may predate an exec. */
static __always_inline void bt_uw_ask(__u32 tgid)
{
	__u64 now = bpf_ktime_get_boot_ns() & ~1ull;

	if (bpf_map_update_elem(&unwind_want, &tgid, &now, BPF_NOEXIST) == 0)
		__sync_fetch_and_add(&unwind_want_seq, 1); /* after the entry: see serve_wants */
}

/* Binary search of a binary's rows: after it, lo = 1 + the last row whose pc <= x. */
struct bt_uw_search {
	__u64 x;
	__u32 lo, hi, first;
};
static long bt_uw_search_step(__u32 i, void *arg)
{
	struct bt_uw_search *q = arg;
	struct bt_unwind_row *row;
	__u32 mid, idx;

	if (q->lo >= q->hi)
		return 1;
	mid = (q->lo + q->hi) / 2;
	idx = q->first + mid;
	row = bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!row)
		return 1;
	if (row->pc <= q->x)
		q->lo = mid + 1;
	else
		q->hi = mid;
	return 0;
}

static long bt_uw_step(__u32 i, void *arg)
{
	struct bt_uw *w = arg;
	struct bt_stack_stats *ss = bt_stack_stats_get();
	struct bt_stack_buf *b = bpf_map_lookup_elem(&stack_scratch, &w->slot);
	struct bt_unwind_proc *p = bpf_map_lookup_elem(&unwind_procs, &w->tgid);
	struct bt_unwind_map *m;
	struct bt_unwind_row *row;
	__u32 k, base, np, idx, first, count, n = w->n;
	__u64 x, cfa, ra, nbp, pc = w->pc;
	int kind = BT_UROW_NONE, off = 0, bpo = 0;

	if (!b || !p || !ss || n >= BT_MAX_FRAMES)
		return 1;
	/* The last mapping starting at or below pc: strides 64, 32, ... 1
	 * (a fixed, branch-light search the verifier walks once). */
	np = p->n < BT_UNWIND_MAPS ? p->n : BT_UNWIND_MAPS;
	if (!np || p->m[0].start > pc)
		goto no_map;
	base = 0;
#pragma unroll
	for (k = BT_UNWIND_MAPS / 2; k; k >>= 1)
		if (base + k < np && p->m[(base + k) & (BT_UNWIND_MAPS - 1)].start <= pc)
			base += k;
	m = &p->m[base & (BT_UNWIND_MAPS - 1)];
	if (pc - m->start >= m->len) {
no_map:
		/* Not code we know: junk from a broken chain, or a library
		 * mapped since the recorder read the mappings. */
		__sync_fetch_and_add(&ss->unw_no_map, 1);
		w->flags |= BT_STACKDEF_CUT;
		bt_uw_ask(w->tgid);
		return 1;
	}
	b->ips[n] = pc;
	w->n = n + 1;
	if (m->kind == BT_UMAP_ANON) {
		__sync_fetch_and_add(&ss->unw_anon, 1);
		w->flags |= BT_STACKDEF_CUT;
		return 1;
	}
	/* A return address is after its call: look up the call. */
	x = pc - m->start + m->elf_start - (n ? 1 : 0);
	first = m->first;
	count = m->count;
	if (count && m->kind == BT_UMAP_ROWS) {
		struct bt_uw_search q = { .x = x, .lo = 0, .hi = count, .first = first };

		bpf_loop(BT_UNWIND_ROW_STEPS, bt_uw_search_step, &q, 0);
		if (q.lo) {
			idx = first + q.lo - 1;
			row = bpf_map_lookup_elem(&unwind_rows, &idx);
			if (!row)
				return 1;
			kind = row->kind;
			off = row->cfa_off8;
			bpo = row->bp_off8;
		}
	}
	switch (kind) {
	case BT_UROW_SP:
		cfa = w->sp + (__u64)off * 8;
		break;
	case BT_UROW_BP:
		cfa = w->bp + (__u64)off * 8;
		break;
	case BT_UROW_PLT:
		cfa = w->sp + 8 + ((int)(pc & 15) >= off ? 8 : 0);
		break;
	case BT_UROW_END:
		return 1; /* the outermost frame: complete */
	case BT_UROW_SIGNAL:
		__sync_fetch_and_add(&ss->unw_signal, 1);
		w->flags |= BT_STACKDEF_CUT;
		return 1;
	default:
		/* No call-frame information: frame pointers, if rbp can be one. */
		__sync_fetch_and_add(m->kind == BT_UMAP_NOTABLE ? &ss->unw_no_table : &ss->unw_fp, 1);
		if (w->bp <= w->sp || (w->bp & 7) || w->bp - w->sp > (64u << 20)) {
			__sync_fetch_and_add(&ss->unw_bad, 1);
			w->flags |= BT_STACKDEF_CUT;
			return 1;
		}
		cfa = w->bp + 16;
		bpo = -2;
	}
	if (cfa <= w->sp || bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8))) {
		__sync_fetch_and_add(&ss->unw_bad, 1);
		w->flags |= BT_STACKDEF_CUT;
		return 1;
	}
	if (bpo) {
		if (bpf_probe_read_user(&nbp, sizeof(nbp), (void *)(cfa + (__s64)bpo * 8))) {
			__sync_fetch_and_add(&ss->unw_bad, 1);
			w->flags |= BT_STACKDEF_CUT;
			return 1;
		}
		w->bp = nbp;
	}
	w->sp = cfa;
	w->pc = ra;
	return ra == 0; /* a zero return address ends a chain (thread starts) */
}

/* The current task's user stack into b->ips: frames, or -1 (no registers).
 * *flags gets BT_STACKDEF_CUT where the walk stopped early. */
static __always_inline long bt_unwind_user(struct bt_stack_buf *b, __u32 slot, struct bt_stack_stats *ss,
					   __u32 *flags)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct pt_regs *r;
	struct bt_uw w = {};

	if (!t || (t->flags & 0x00200000 /* PF_KTHREAD */) || !t->mm)
		return 0;
	r = (struct pt_regs *)bpf_task_pt_regs(t);
	if (!r)
		return -1;
	w.pc = r->ip;
	w.sp = r->sp;
	w.bp = r->bp;
	w.tgid = t->tgid;
	w.slot = slot;
	if (!bpf_map_lookup_elem(&unwind_procs, &w.tgid)) {
		/* Mappings not loaded yet (a process exec'd a moment ago): the
		 * leaf only, and ask for them. Not the kernel's frame-pointer
		 * walk: on code without frame pointers it follows rbp into
		 * data and shows it as frames (test_unwind's garbage stack
		 * caught that). A fork's child has its parent's entry. */
		__sync_fetch_and_add(&ss->unw_no_proc, 1);
		bt_uw_ask(w.tgid);
		b->ips[0] = w.pc;
		*flags |= BT_STACKDEF_CUT;
		return 1;
	}
	__sync_fetch_and_add(&ss->unw_walks, 1);
	bpf_loop(BT_MAX_FRAMES, bt_uw_step, &w, 0);
	*flags |= w.flags;
	return w.n;
}

/* A new process has its parent's mappings: walkable at once (a fork's
 * child often lives shorter than a load from /proc takes). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_unwind_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	struct bt_unwind_proc *p;

	if (ptgid == ctgid)
		return 0; /* a thread */
	p = bpf_map_lookup_elem(&unwind_procs, &ptgid);
	if (p)
		bpf_map_update_elem(&unwind_procs, &ctgid, p, BPF_ANY);
	return 0;
}

/* exec replaces the mappings; exit ends them. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_unwind_exec, struct task_struct *p)
{
	__u32 tgid = p->tgid;
	__u64 now = bpf_ktime_get_boot_ns() | 1;

	bpf_map_delete_elem(&unwind_procs, &tgid);
	if (bpf_map_update_elem(&unwind_want, &tgid, &now, BPF_ANY) == 0) /* a mark, not an ask (unwind_procs.c) */
		__sync_fetch_and_add(&unwind_want_seq, 1);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_unwind_exit, struct task_struct *p)
{
	__u32 tgid = p->tgid;

	if (p->pid == p->tgid)
		bpf_map_delete_elem(&unwind_procs, &tgid);
	return 0;
}
#endif
