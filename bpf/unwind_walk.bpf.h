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
 * signal frames, each counted. Where a binary has no row for pc, and in
 * anonymous code (JIT), frame pointers are followed if rbp looks like one. Frames
 * are steps of bpf_loop (no unrolled loop, any depth up to BT_MAX_FRAMES).
 *
 * Processes' mappings are kept here as the kernel makes them (as perf's
 * MMAP2 side-band records are): an exec gives the process a fresh entry
 * with the binary's, ld.so's and the vDSO's code (sched_process_exec,
 * bpf_find_vma), each mmap adds its mapping if executable (libraries,
 * dlopen, JIT pages; syscalls/sys_exit_mmap), a fork copies its parent's.
 * So a process is walkable from its first sample; a binary's table is
 * looked up by its file at each frame, and a file without one yet is
 * asked for (unwind_fwant, with its path, so the recorder can open it
 * after a short process ends).
 *
 * A process without an entry (running before the recorder started, and
 * not loaded yet) gets its leaf only, truncated, and is put in
 * `unwind_want`: the recorder reads its mappings from /proc
 * (user/stacks/unwind_procs.c). On a kernel without bpf_find_vma (before
 * 5.17), exec deletes the entry and the recorder reloads it from /proc.
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

/* Files' tables, written by the recorder: (dev, ino) -> rows. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct bt_unwind_fkey);
	__type(value, struct bt_unwind_file);
} unwind_files SEC(".maps");

/* Processes whose mappings the recorder should (re)read: tgid -> when asked. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} unwind_want SEC(".maps");

/* Files mapped executable that have no table yet: the recorder builds it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct bt_unwind_fkey);
	__type(value, struct bt_unwind_fwant);
} unwind_fwant SEC(".maps");

/* Scratch of the mapping hooks: an entry rebuilt, a file's request. */
struct bt_uw_scratch {
	struct bt_unwind_proc proc;
	struct bt_unwind_fwant fw;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bt_uw_scratch);
} unwind_scratch SEC(".maps");

/* Set by the recorder once the exec and mmap hooks are attached: exec
 * then keeps the entry they rebuild instead of deleting it. */
__u32 unwind_hooks_live = 0;

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

/* The last of p's first np mappings (sorted) that starts at or below x;
 * 0 if none does (the caller checks). Strides 64, 32, ... 1 without a
 * branch: each test is a sign bit (starts and x are user addresses, below
 * 2^63) and a stride is taken by multiplying, not by `if` (a path per
 * outcome: the verifier carried 2^7 of them through the rest of a frame's
 * step, 473k instructions and 0.6 s of CPU at each recorder start) nor by
 * `-t & k` (which recent verifiers split into two states). */
static __always_inline __u32 bt_uw_map_find(struct bt_unwind_proc *p, __u32 np, __u64 x)
{
	__u64 n = np, base = 0;

	barrier_var(n); /* keeps clang from turning the sign test back into a branch */
#pragma unroll
	for (__u32 k = BT_UNWIND_MAPS / 2; k; k >>= 1) {
		__u64 below = (base + k - n) >> 63;
		__u64 at_or_before = 1 ^ ((x - p->m[(base + k) & (BT_UNWIND_MAPS - 1)].start) >> 63);
		__u64 take = below & at_or_before;

		barrier_var(take);
		base += k * take;
	}
	return (__u32)base & (BT_UNWIND_MAPS - 1);
}

/* A general register of the leaf frame, by DWARF number (not rsp, rbp:
 * the walk has those), from the user registers the kernel saved at entry.
 * struct pt_regs' order is the x86-64 entry code's (and ptrace's
 * user_regs_struct), fixed: r15, r14, r13, r12, rbp, rbx, r11, r10, r9,
 * r8, rax, rcx, rdx, rsi, rdi. Its word for DWARF register k is nibble k
 * of BT_UW_PTREGS_WORD (a constant: no table in memory, no branch). */
#define BT_UW_PTREGS_WORD 0x0123678904ed5bcaull
static __always_inline int bt_uw_leaf_reg(__u32 reg, __u64 *v)
{
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	__u32 word = (BT_UW_PTREGS_WORD >> ((reg & 15) * 4)) & 15;

	return r ? (int)bpf_probe_read_kernel(v, sizeof(*v), (__u64 *)r + word) : -1;
}

static long bt_uw_step(__u32 i, void *arg)
{
	struct bt_uw *w = arg;
	struct bt_stack_stats *ss = bt_stack_stats_get();
	struct bt_stack_buf *b = bpf_map_lookup_elem(&stack_scratch, &w->slot);
	struct bt_unwind_proc *p = bpf_map_lookup_elem(&unwind_procs, &w->tgid);
	struct bt_unwind_map *m;
	struct bt_unwind_row *row;
	__u32 k, np, idx, first, count, n = w->n;
	__u64 x, cfa, ra, nbp, pc = w->pc;
	int kind = BT_UROW_NONE, reg = 0, off = 0, bpo = 0, notable = 0;

	if (!b || !p || !ss || n >= BT_MAX_FRAMES)
		return 1;
	np = p->n < BT_UNWIND_MAPS ? p->n : BT_UNWIND_MAPS;
	if (!np || p->m[0].start > pc)
		goto no_map;
	m = &p->m[bt_uw_map_find(p, np, pc)];
	if (pc - m->start >= m->len) {
no_map:
		/* Not code we know: junk from a broken chain, or a library
		 * mapped since the recorder read the mappings. */
		__sync_fetch_and_add(&ss->unw_no_map, 1);
		w->flags |= BT_STACKDEF_CUT_BY(BT_CUT_NO_MAP);
		bt_uw_ask(w->tgid);
		return 1;
	}
	k = n * 3;
	barrier_var(k); /* the bound below is kept on k itself */
	if (k > BT_MAX_FRAMES * 3 - 3)
		return 1;
	b->ips[k] = pc;
	b->ips[k + 1] = m->ino;
	b->ips[k + 2] = m->kind == BT_UMAP_FILE && pc - m->start + m->off <= 0xffffffffull
		? (__u64)m->dev | (pc - m->start + m->off) << 32 : BT_FRAME_NO_FILE;
	w->n = n + 1;
	/* JIT code has no table: its frame pointers (V8 keeps them; HotSpot
	 * with -XX:+PreserveFramePointer), as a file without one (the same
	 * path below, so the verifier prunes it: the off-CPU and waker
	 * programs are at its bound). */
	if (m->kind == BT_UMAP_ANON)
		__sync_fetch_and_add(&ss->unw_anon, 1);
	/* A return address is after its call: look up the call. */
	x = pc - m->start + m->off - (n ? 1 : 0);
	if (m->kind == BT_UMAP_FILE) {
		struct bt_unwind_fkey fk = { .ino = m->ino, .dev = m->dev };
		struct bt_unwind_file *f = bpf_map_lookup_elem(&unwind_files, &fk);

		if (!f) {
			/* Its table is being built (asked for when it was
			 * mapped; asked again through the process). */
			__sync_fetch_and_add(&ss->unw_pending, 1);
			/* ... the stack from here is copied, to be walked on in
			 * user space once it is (stack_copy.bpf.h) */
			w->flags |= BT_STACKDEF_CUT_BY(BT_CUT_NO_TABLE) | BT_STACKDEF_COPY;
			bt_uw_ask(w->tgid);
			return 1;
		}
		notable = f->kind != BT_UMAP_FILE;
		/* The ELF address: the delta of the segment holding the mapping. */
		k = f->nseg ? 0 : 1;
#pragma unroll
		for (__u32 s = 0; s < BT_UNWIND_SEGS; s++)
			if (!k && s < f->nseg && m->off >= f->seg[s].lo && m->off < f->seg[s].hi) {
				x += f->seg[s].delta;
				k = 1;
			}
		/* A frame in a CPython interpreter's eval loop: marked for
		 * python_frames.bpf.h, with the file's bias */
		if (k && (f->reserved & BT_UNWIND_FILE_PY)) {
			struct bt_py_file *pf = bpf_map_lookup_elem(&py_files, &fk);

			if (pf && x >= pf->eval_lo && x < pf->eval_hi) {
				b->pymask[(n >> 6) & 1] |= 1ull << (n & 63);
				b->pybias = pc - (n ? 1 : 0) - x;
				b->pyino = fk.ino;
				b->pydev = fk.dev;
			}
		}
		first = f->first;
		count = f->count;
		if (k && count && !notable) {
			struct bt_uw_search q = { .x = x, .lo = 0, .hi = count, .first = first };

			bpf_loop(BT_UNWIND_ROW_STEPS, bt_uw_search_step, &q, 0);
			if (q.lo) {
				idx = first + q.lo - 1;
				row = bpf_map_lookup_elem(&unwind_rows, &idx);
				if (!row)
					return 1;
				kind = BT_UROW_KIND(row->kind);
				reg = BT_UROW_REGNO(row->kind);
				off = row->cfa_off8;
				bpo = row->bp_off8;
			}
		}
	} else {
		notable = 1;
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
		w->flags |= BT_STACKDEF_CUT_BY(BT_CUT_SIGNAL);
		return 1;
	case BT_UROW_REG:
	case BT_UROW_DEREF:
		if (reg == 7)
			cfa = w->sp;
		else if (reg == 6)
			cfa = w->bp;
		else if (n || bt_uw_leaf_reg(reg, &cfa))
			goto no_rule; /* a register callers' frames do not restore */
		if (kind == BT_UROW_REG) {
			cfa += (__u64)off * 8;
			break;
		}
		if (bpf_probe_read_user(&cfa, sizeof(cfa), (void *)(cfa + (__s64)BT_UROW_DEREF_OFF8(off) * 8))) {
			__sync_fetch_and_add(&ss->unw_bad, 1);
			w->flags |= BT_STACKDEF_CUT_BY(BT_CUT_BAD_FRAME);
			return 1;
		}
		cfa += BT_UROW_DEREF_ADD8(off) * 8;
		break;
	default:
	no_rule:
		/* No call-frame information: frame pointers, if rbp can be one. */
		__sync_fetch_and_add(notable ? &ss->unw_no_table : &ss->unw_fp, 1);
		if (!w->bp && n)
			return 1; /* rbp 0: the outermost frame (the ABI's mark; ld.so's _start has no FDE) */
		if (w->bp <= w->sp || (w->bp & 7) || w->bp - w->sp > (64u << 20)) {
			__sync_fetch_and_add(&ss->unw_bad, 1);
			w->flags |= BT_STACKDEF_CUT_BY(notable ? BT_CUT_NO_TABLE : BT_CUT_BAD_FRAME);
			return 1;
		}
		cfa = w->bp + 16;
		bpo = -2;
	}
	if (cfa <= w->sp || bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8))) {
		__sync_fetch_and_add(&ss->unw_bad, 1);
		w->flags |= BT_STACKDEF_CUT_BY(BT_CUT_BAD_FRAME);
		return 1;
	}
	if (bpo) {
		if (bpf_probe_read_user(&nbp, sizeof(nbp), (void *)(cfa + (__s64)bpo * 8))) {
			__sync_fetch_and_add(&ss->unw_bad, 1);
			w->flags |= BT_STACKDEF_CUT_BY(BT_CUT_BAD_FRAME);
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
	struct bt_unwind_proc *p;
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
	p = bpf_map_lookup_elem(&unwind_procs, &w.tgid);
	if (!p || (p->mm && p->mm != (__u64)t->mm)) {
		/* Mappings not known (a process running before the recorder
		 * started, not loaded yet): the leaf only, and ask for them.
		 * Not the kernel's frame-pointer walk: on code without frame
		 * pointers it follows rbp into data and shows it as frames
		 * (test_unwind's garbage stack caught that). */
		__sync_fetch_and_add(&ss->unw_no_proc, 1);
		bt_uw_ask(w.tgid);
		b->ips[0] = w.pc;
		b->ips[1] = 0;
		b->ips[2] = BT_FRAME_NO_FILE;
		*flags |= BT_STACKDEF_FILES | BT_STACKDEF_CUT_BY(BT_CUT_NO_PROC);
		return 1;
	}
	__sync_fetch_and_add(&ss->unw_walks, 1);
	bpf_loop(BT_MAX_FRAMES, bt_uw_step, &w, 0);
	b->stop[0] = w.pc; /* where it stopped: a copy starts there */
	b->stop[1] = w.sp;
	b->stop[2] = w.bp;
	*flags |= w.flags | BT_STACKDEF_FILES;
	return w.n;
}

/* ---- keeping the entries current ------------------------------------------- */

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
	if (!p || bpf_map_update_elem(&unwind_procs, &ctgid, p, BPF_ANY))
		return 0;
	/* The child does not run yet: nothing else writes its entry. */
	p = bpf_map_lookup_elem(&unwind_procs, &ctgid);
	if (p && p->mm)
		p->mm = (__u64)child->mm;
	return 0;
}

/* exec replaces the mappings: with the hooks below live,
 * handle_unwind_exec_maps gives the process a fresh entry; without them
 * (a kernel without bpf_find_vma), the entry is deleted and the recorder
 * reloads it from /proc. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_unwind_exec, struct task_struct *p)
{
	__u32 tgid = p->tgid;
	__u64 now = bpf_ktime_get_boot_ns() | 1;

	if (unwind_hooks_live)
		return 0;
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

/* An entry rebuilt into the scratch with [start, end) cut out of the
 * mappings it overlaps (ld.so maps a library whole, then its data over
 * part of it; MAP_FIXED, mprotect), and m inserted in order if insert. */
struct bt_uw_edit {
	__u64 start, end;
	__u32 tgid, j, insert, inserted;
	struct bt_unwind_map m;
};
static __always_inline void bt_uw_emit(struct bt_uw_scratch *sc, struct bt_uw_edit *e, struct bt_unwind_map *m)
{
	if (e->insert && !e->inserted && m->start > e->m.start) {
		if (e->j < BT_UNWIND_MAPS)
			sc->proc.m[e->j & (BT_UNWIND_MAPS - 1)] = e->m;
		e->j++;
		e->inserted = 1;
	}
	if (e->j < BT_UNWIND_MAPS)
		sc->proc.m[e->j & (BT_UNWIND_MAPS - 1)] = *m;
	e->j++;
}
static long bt_uw_edit_step(__u32 i, void *arg)
{
	struct bt_uw_edit *e = arg;
	__u32 zero = 0;
	struct bt_unwind_proc *p = bpf_map_lookup_elem(&unwind_procs, &e->tgid);
	struct bt_uw_scratch *sc = bpf_map_lookup_elem(&unwind_scratch, &zero);
	struct bt_unwind_map piece, *old;
	__u64 oend;
	__u32 k = i;

	barrier_var(k); /* the mask below is kept on k itself */
	if (!p || !sc || k >= p->n)
		return 1;
	old = &p->m[k & (BT_UNWIND_MAPS - 1)];
	oend = old->start + old->len;
	if (old->start >= e->end || e->start >= oend) {
		bt_uw_emit(sc, e, old);
		return 0;
	}
	piece = *old;
	if (old->start < e->start) { /* the part before */
		piece.len = (__u32)(e->start - old->start);
		bt_uw_emit(sc, e, &piece);
	}
	if (oend > e->end) { /* the part after */
		piece.start = e->end;
		piece.len = (__u32)(oend - e->end);
		piece.off = old->off + (__u32)(e->end - old->start);
		bt_uw_emit(sc, e, &piece);
	}
	return 0;
}

/* Does [start, end) overlap a mapping of p? (the search of bt_uw_step) */
static __always_inline int bt_uw_overlaps(struct bt_unwind_proc *p, __u64 start, __u64 end)
{
	__u32 np = p->n < BT_UNWIND_MAPS ? p->n : BT_UNWIND_MAPS;
	struct bt_unwind_map *m;

	if (!np || p->m[0].start >= end)
		return 0;
	m = &p->m[bt_uw_map_find(p, np, end - 1)];
	return m->start + m->len > start;
}

/* One component of a file's path, innermost first, crossing mounts. */
struct bt_uw_path {
	__u64 d, mnt;
	__u32 n, done;
};
static long bt_uw_path_step(__u32 i, void *arg)
{
	struct bt_uw_path *q = arg;
	__u32 zero = 0;
	struct bt_uw_scratch *sc = bpf_map_lookup_elem(&unwind_scratch, &zero);
	struct dentry *d = (struct dentry *)q->d, *parent;
	struct mount *mnt = (struct mount *)q->mnt, *mp;

	if (!sc || !d || !mnt)
		return 1;
	parent = BPF_CORE_READ(d, d_parent);
	if (d == BPF_CORE_READ(mnt, mnt.mnt_root) || d == parent) {
		mp = BPF_CORE_READ(mnt, mnt_parent);
		if (mp == mnt || !mp) {
			q->done = 1; /* the root of the namespace */
			return 1;
		}
		q->d = (__u64)BPF_CORE_READ(mnt, mnt_mountpoint);
		q->mnt = (__u64)mp;
		return 0;
	}
	if (q->n >= BT_UNWIND_PATH_PARTS)
		return 1; /* longer: not done */
	bpf_probe_read_kernel_str(sc->fw.part[q->n & (BT_UNWIND_PATH_PARTS - 1)], BT_UNWIND_PART_LEN,
				  BPF_CORE_READ(d, d_name.name));
	q->n++;
	q->d = (__u64)parent;
	return 0;
}

/* Ask the recorder for the table of a file mapped at [start, end). */
static __always_inline void bt_uw_want_file(struct bt_unwind_fkey *fk, struct file *file, __u32 tgid, __u64 start,
					    __u64 end)
{
	__u32 zero = 0;
	struct bt_uw_scratch *sc;
	struct bt_uw_path q = {};

	if (bpf_map_lookup_elem(&unwind_fwant, fk))
		return; /* asked already */
	sc = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (!sc)
		return;
	q.d = (__u64)BPF_CORE_READ(file, f_path.dentry);
	q.mnt = (__u64)BPF_CORE_READ(file, f_path.mnt) - bpf_core_field_offset(struct mount, mnt);
	bpf_loop(BT_UNWIND_PATH_PARTS + 8, bt_uw_path_step, &q, 0);
	sc->fw.start = start;
	sc->fw.end = end;
	sc->fw.tgid = tgid;
	sc->fw.nparts = q.done ? q.n : BT_UNWIND_PATH_PARTS + 1;
	if (bpf_map_update_elem(&unwind_fwant, fk, &sc->fw, BPF_NOEXIST) == 0)
		__sync_fetch_and_add(&unwind_want_seq, 1); /* after the entry: see serve_wants */
}

#define BT_VM_EXEC 0x4ul
#define BT_AT_BASE 7 /* auxv: ld.so's base address */

/* A mapping as bpf_find_vma's callback saw it. */
struct bt_uw_vma {
	__u64 start, end, pgoff, flags, file, ino;
	__u32 dev, vdso;
};
static long bt_uw_vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *arg)
{
	struct bt_uw_vma *v = arg;
	struct file *f = vma->vm_file;

	v->start = vma->vm_start;
	v->end = vma->vm_end;
	v->pgoff = vma->vm_pgoff;
	v->flags = vma->vm_flags;
	v->file = (__u64)f;
	if (f) {
		v->ino = BPF_CORE_READ(f, f_inode, i_ino);
		v->dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	}
	v->vdso = !f && (__u64)BPF_CORE_READ(task, mm, context.vdso) == v->start;
	return 0;
}

/* The mapping holding addr in the current task; 0 if there is one. */
static __always_inline int bt_uw_find(struct task_struct *t, __u64 addr, struct bt_uw_vma *v)
{
	__builtin_memset(v, 0, sizeof(*v));
	return bpf_find_vma(t, addr, bt_uw_vma_cb, v, 0) || v->end <= v->start ? -1 : 0;
}

/* v into tgid's entry (a new entry, not written in place: a walk on
 * another CPU reads the old one whole): replacing what it overlaps, and
 * inserted in order if executable. */
static __always_inline void bt_uw_put(__u32 tgid, struct bt_uw_vma *v, struct bt_stack_stats *ss)
{
	struct bt_uw_edit e = {};
	struct bt_unwind_fkey fk = {};
	struct bt_unwind_proc *p;
	struct bt_uw_scratch *sc;
	__u32 zero = 0;

	p = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (!p)
		return; /* not known: the recorder loads it from /proc when sampled */
	e.tgid = tgid;
	e.start = v->start;
	e.end = v->end;
	e.insert = (v->flags & BT_VM_EXEC) && v->end - v->start <= 0xffffffffull;
	if (!e.insert && !bt_uw_overlaps(p, e.start, e.end))
		return; /* the common case: data, heap, stacks */
	if (e.insert) {
		e.m.start = v->start;
		e.m.len = (__u32)(v->end - v->start);
		if (v->file) {
			e.m.kind = BT_UMAP_FILE;
			e.m.off = (__u32)(v->pgoff << 12);
			e.m.ino = fk.ino = v->ino;
			e.m.dev = fk.dev = v->dev;
		} else {
			e.m.kind = v->vdso ? BT_UMAP_FILE : BT_UMAP_ANON; /* the vDSO: file { 0, 0 } */
		}
	}
	sc = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (!sc)
		return;
	bpf_loop(BT_UNWIND_MAPS, bt_uw_edit_step, &e, 0);
	if (e.insert && !e.inserted) {
		if (e.j < BT_UNWIND_MAPS)
			sc->proc.m[e.j & (BT_UNWIND_MAPS - 1)] = e.m;
		e.j++;
	}
	if (e.j > BT_UNWIND_MAPS)
		__sync_fetch_and_add(&ss->unw_maps_full, 1);
	p = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (!p)
		return;
	sc->proc.n = e.j < BT_UNWIND_MAPS ? e.j : BT_UNWIND_MAPS;
	sc->proc.mm = p->mm;
	sc->proc.gen = p->gen + 1; /* the recorder's load checks it moved */
	if (bpf_map_update_elem(&unwind_procs, &tgid, &sc->proc, BPF_EXIST))
		return;
	if (!e.insert)
		return;
	__sync_fetch_and_add(&ss->unw_maps_new, 1);
	if (v->file && !bpf_map_lookup_elem(&unwind_files, &fk))
		bt_uw_want_file(&fk, (struct file *)v->file, tgid, v->start, v->end);
}

/* exec: the new image's mappings, read here rather than from /proc later,
 * so the process is walkable from its first sample: the binary's code
 * ([start_code, end_code)), ld.so's (contiguous from its base, AT_BASE in
 * the auxiliary vector) and the vDSO's. Libraries ld.so maps come through
 * mmap (below). */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_unwind_exec_maps, struct task_struct *p)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct bt_stack_stats *ss = bt_stack_stats_get();
	struct mm_struct *mm = t->mm;
	__u32 zero = 0, tgid = t->tgid;
	struct bt_unwind_proc *old;
	struct bt_uw_scratch *sc;
	struct bt_uw_vma v;
	__u64 base = 0, a;

	if (!unwind_on || !unwind_hooks_live || !ss || !mm || p != t)
		return 0;
	sc = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (!sc)
		return 0;
	old = bpf_map_lookup_elem(&unwind_procs, &tgid);
	sc->proc.n = 0; /* the rest is not read */
	sc->proc.gen = (old ? old->gen : 0) + 1;
	sc->proc.mm = (__u64)mm;
	if (bpf_map_update_elem(&unwind_procs, &tgid, &sc->proc, BPF_ANY)) {
		__sync_fetch_and_add(&ss->unw_execs_full, 1);
		return 0;
	}
	__sync_fetch_and_add(&ss->unw_execs, 1);
	if (bt_uw_find(t, mm->start_code, &v) == 0)
		bt_uw_put(tgid, &v, ss);
	for (int i = 0; i < 24; i++)
		if (mm->saved_auxv[2 * i] == BT_AT_BASE) {
			base = mm->saved_auxv[2 * i + 1];
			break;
		} else if (!mm->saved_auxv[2 * i]) {
			break;
		}
	/* ld.so: read-only, code, read-only, data: its code is among the
	 * first few contiguous mappings. */
	a = base;
	for (int i = 0; i < 4 && a; i++) {
		if (bt_uw_find(t, a, &v))
			break;
		if (v.flags & BT_VM_EXEC) {
			bt_uw_put(tgid, &v, ss);
			break;
		}
		a = v.end;
	}
	a = (__u64)BPF_CORE_READ(mm, context.vdso);
	if (a && bt_uw_find(t, a, &v) == 0)
		bt_uw_put(tgid, &v, ss);
	return 0;
}

/* The number of mmap(2), as bt_syscall_nr() reads it at sys_exit. */
#if defined(__TARGET_ARCH_x86)
#define BT_NR_MMAP 9
#elif defined(__TARGET_ARCH_arm64)
#define BT_NR_MMAP 222
#else
#define BT_NR_MMAP -2 /* never a number: the hook sees nothing, first stacks from /proc */
#endif

/* Set by the loader: handle_sys_exit (system calls recorded) runs the mmap
 * hook itself, and handle_unwind_mmap is not attached. */
const volatile __u32 unwind_mmap_in_sys_exit = 0;

/* A new mapping (ld.so loading libraries, dlopen, JIT pages): mmap
 * returns its start; ret is that return value. */
static __always_inline void bt_uw_mmap_done(long ret)
{
	struct task_struct *t;
	struct bt_stack_stats *ss;
	struct bt_uw_vma v;

	if (!unwind_on || (unsigned long)ret >= (unsigned long)-4095)
		return;
	t = bpf_get_current_task_btf();
	ss = bt_stack_stats_get();
	if (!ss || bt_uw_find(t, ret, &v))
		return;
	bt_uw_put(t->tgid, &v, ss);
}

/* On mmap's own tracepoint: of the ways to see every mmap, the cheapest
 * for the other system calls. All syscalls/ tracepoints share the one
 * sys_exit tracepoint, where this puts perf's syscall probe (a bitmap
 * test, ~11 ns a call, measured against ~23 ns for a BPF program on the
 * raw sys_exit); fexit on ksys_mmap_pgoff costs nothing elsewhere but is
 * refused where the kernel is locked down. With system calls recorded,
 * handle_sys_exit runs on every exit anyway and calls the hook itself
 * (unwind_mmap_in_sys_exit), and this one is not attached. */
SEC("tracepoint/syscalls/sys_exit_mmap")
int handle_unwind_mmap(struct trace_event_raw_sys_exit *ctx)
{
	bt_uw_mmap_done(ctx->ret);
	return 0;
}
#endif
