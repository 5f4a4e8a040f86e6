/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * python_frames.bpf.h - CPython's frames put into a user stack where each
 * _PyEval_EvalFrameDefault stands, so a stack reads
 * main ... _PyEval_EvalFrameDefault a b hot PyObject_Free, not the
 * interpreter loop alone. Included by stacks_emit.bpf.h after the unwinder
 * (record.bpf.c only).
 *
 * The unwind walk marks its frames inside _PyEval_EvalFrameDefault of a
 * file in py_files (bpf/python.h; the recorder finds interpreters in the
 * binaries it builds tables for) and the bias from that file's ELF
 * addresses to the process's. Then bt_py_frames: the thread's
 * PyThreadState (py_tstate remembers it per thread, checked by its
 * native_thread_id, 3.10's pthread_self(); else the interpreter's thread
 * list, BT_PY_THREADS at most), its current frame, and the chain of frames
 * by `previous`, each frame's code object kept as an ip (BT_FRAME_PY_BIT).
 * The frames of one C call of _PyEval_EvalFrameDefault end at the frame
 * marked is_entry (3.11), before a shim frame owned by the C stack (3.12+),
 * or are one frame (3.10): they go just leafward of that native frame, the
 * next ones at the next such native frame. The version's layout and which
 * of these it uses are data (struct bt_py_offsets), one walk for all. A code object met for the first time in a process
 * sends its names (struct bt_raw_py_code) once, as a stack's frames are.
 *
 * Its stack is small on purpose: 6.1's verifier adds up the stack of the
 * program, of bt_py_frames and of a bpf_loop callback (a call there) and
 * refuses more than 512 bytes, so the interpreter's layout and the
 * interning's map keys live in py_scratch and one struct carries the
 * walk and the merge (tests/unit/test_bpf_stack.sh bounds it).
 *
 * A global function: the verifier checks it once, not in each of the
 * sample, off-CPU and waker programs that call it (they are near its bound).
 */
#ifndef BTRACE_PYTHON_FRAMES_BPF_H
#define BTRACE_PYTHON_FRAMES_BPF_H
#include "python.h"
#include "unwind.h"

/* Set by the loader (not --no-python-frames): the walk below runs */
const volatile __u32 py_frames_on = 0;

/* Interpreters, written by the recorder: (dev, ino) -> offsets. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct bt_unwind_fkey);
	__type(value, struct bt_py_file);
} py_files SEC(".maps");

/* tid -> its PyThreadState's address, checked at each use. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} py_tstate SEC(".maps");

struct bt_py_code_key {
	__u32 tgid;
	__u32 pad;
	__u64 ip;
};
/* Code objects whose names were sent (value unused), as stack_seen. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct bt_py_code_key);
	__type(value, __u32);
} py_code_seen SEC(".maps");

/* The walk's state that is not on the BPF stack: the stack a walk may use
 * is bounded by what the callers leave (512 bytes for the whole chain of
 * calls, bpf_loop's callbacks counted as calls by 6.1's verifier). */
struct bt_py_scratch {
	__u64 ips[BT_MAX_FRAMES * 3]; /* the native frames, merged back into the stack */
	__u64 py[BT_PY_MAX_FRAMES];   /* Python frames, leaf first */
	__u64 entry;                  /* bit j: py[j] is its C call's first frame (is_entry) */
	struct bt_py_offsets o;       /* the interpreter's layout */
	struct bt_py_code_key key;    /* py_code_seen's key of the code being sent */
	__u32 cpu, one;               /* the ring's key; py_code_seen's value */
	struct bt_raw_py_code code;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BT_STK_SLOTS);
	__type(key, __u32);
	__type(value, struct bt_py_scratch);
} py_scratch SEC(".maps");

/* The walk's state (a bpf_loop context: on the stack), then the merge's. */
struct bt_py_walk {
	__u64 frame, tstate, want; /* want: the thread's id as tstate_tid holds it */
	__u32 slot, tid, tgid, n, bad;
	/* merge: native frame i, Python frame j, output frame out, of nnat
	 * native ones; done: j's C call has ended */
	__u32 i, j, out, nnat, done;
};

static __always_inline int bt_py_read(void *dst, __u32 len, __u64 addr)
{
	return (int)bpf_probe_read_user(dst, len, (void *)addr);
}

/* One thread state of the list: is it tid's? */
static long bt_py_thread_step(__u32 i, void *arg)
{
	struct bt_py_walk *w = arg;
	struct bt_py_scratch *x = bpf_map_lookup_elem(&py_scratch, &w->slot);
	__u64 tid = 0;

	if (!x || !w->tstate || bt_py_read(&tid, sizeof(tid), w->tstate + x->o.tstate_tid))
		return 1;
	if (tid == w->want) {
		w->frame = 1; /* found */
		return 1;
	}
	if (bt_py_read(&w->tstate, sizeof(w->tstate), w->tstate + x->o.tstate_next))
		w->tstate = 0;
	return 0;
}

/* A place in a code object, its names and line table to the ring, once
 * per (tgid, ip): the recorder computes its line from them. */
static __always_inline void bt_py_intern(struct bt_py_walk *w, struct bt_py_scratch *x, __u64 ip, __u64 code,
					 __u64 name, __u64 file, __u32 line, __s32 instr)
{
	__u64 lt = 0, sz = 0;
	__u32 len;
	struct bt_stack_stats *ss;
	void *ring;

	x->key.tgid = w->tgid;
	x->key.pad = 0;
	x->key.ip = ip;
	if (bpf_map_lookup_elem(&py_code_seen, &x->key))
		return;
	x->code.h.ts_ns = 0;
	x->code.h.seq = 0;
	x->code.h.tid = w->tid;
	x->code.h.tgid = w->tgid;
	x->code.h.cpu = x->cpu = bpf_get_smp_processor_id();
	x->code.h.type = BT_RAW_PY_CODE;
	x->code.key = ip;
	x->code.line = line;
	x->code.flags = (x->o.flags & BT_PY_LASTI_INT) ? BT_PY_CODE_LT_310 : 0;
	x->code.instr = instr;
	x->code.lt_len = 0;
	x->code.pad = 0;
	if (bpf_probe_read_user_str(x->code.name, sizeof(x->code.name), (void *)(name + x->o.str_data)) <= 0) {
		x->code.name[0] = 0;
		x->code.flags |= BT_PY_CODE_NO_NAME;
	}
	if (bpf_probe_read_user_str(x->code.file, sizeof(x->code.file), (void *)(file + x->o.str_data)) <= 0) {
		x->code.file[0] = 0;
		x->code.flags |= BT_PY_CODE_NO_FILE;
	}
	/* co_linetable: a bytes object, its first BT_PY_LT_LEN bytes */
	if (!x->o.code_lines || bt_py_read(&lt, sizeof(lt), code + x->o.code_lines) || !lt ||
	    bt_py_read(&sz, sizeof(sz), lt + x->o.bytes_size) || (__s64)sz < 0) {
		x->code.flags |= BT_PY_CODE_NO_INSTR;
	} else {
		len = sz > BT_PY_LT_LEN ? BT_PY_LT_LEN : (__u32)sz;
		if (sz > BT_PY_LT_LEN)
			x->code.flags |= BT_PY_CODE_LT_CUT;
		if (bpf_probe_read_user(x->code.linetable, len, (void *)(lt + x->o.bytes_data)))
			x->code.flags |= BT_PY_CODE_NO_INSTR;
		else
			x->code.lt_len = len;
	}
	ring = bpf_map_lookup_elem(&rings, &x->cpu);
	if (!ring || bpf_ringbuf_output(ring, &x->code, sizeof(x->code), BPF_RB_NO_WAKEUP)) {
		ss = bt_stack_stats_get();
		if (ss)
			__sync_fetch_and_add(&ss->py_code_drops, 1);
		return;
	}
	x->one = 1;
	bpf_map_update_elem(&py_code_seen, &x->key, &x->one, BPF_ANY);
}

/* One Python frame: its code object kept, on to the previous one. */
static long bt_py_frame_step(__u32 i, void *arg)
{
	struct bt_py_walk *w = arg;
	struct bt_py_scratch *x = bpf_map_lookup_elem(&py_scratch, &w->slot);
	__u64 code = 0, name = 0, file = 0, ip, g, at = 0;
	__u32 line = 0, n = w->n;
	__s32 instr = -1, lasti = -1;
	__u8 entry = 0;

	if (!x || !w->frame)
		return 1;
	if (n >= BT_PY_MAX_FRAMES) {
		w->bad = 2;
		return 1;
	}
	if (!(x->o.flags & BT_PY_ENTRY_EACH) && bt_py_read(&entry, sizeof(entry), w->frame + x->o.frame_entry)) {
		w->bad = 1;
		return 1;
	}
	if (x->o.flags & BT_PY_ENTRY_SHIM) {
		/* 3.12+: entry is the owner; a C call's shim ends the frames before it */
		if (entry == BT_PY_OWNED_BY_CSTACK) {
			if (n)
				x->entry |= 1ull << ((n - 1) & 63);
			if (bt_py_read(&w->frame, sizeof(w->frame), w->frame + x->o.frame_prev))
				w->frame = 0;
			return 0;
		}
		entry = 0;
	} else if (x->o.flags & BT_PY_ENTRY_EACH) {
		entry = 1;
	}
	if (bt_py_read(&code, sizeof(code), w->frame + x->o.frame_code) ||
	    bt_py_read(&name, sizeof(name), code + x->o.code_name) ||
	    bt_py_read(&file, sizeof(file), code + x->o.code_file) ||
	    bt_py_read(&line, sizeof(line), code + x->o.code_line)) {
		w->bad = 1;
		return 1;
	}
	/* the instruction it runs: a byte offset in the code (3.10: f_lasti, an index) */
	if (x->o.flags & BT_PY_LASTI_INT) {
		if (!bt_py_read(&lasti, sizeof(lasti), w->frame + x->o.frame_instr) && lasti >= 0 && lasti < (1 << 24))
			instr = lasti * 2;
	} else if (!bt_py_read(&at, sizeof(at), w->frame + x->o.frame_instr) && at >= code + x->o.code_code &&
		   at - (code + x->o.code_code) < (1u << 25)) {
		instr = (__s32)(at - (code + x->o.code_code));
	}
	g = (name ^ (file << 7) ^ ((__u64)line << 29)) * 0x9e3779b97f4a7c15ull;
	g = (g ^ code ^ ((__u64)(__u32)instr << 32)) * 0xbf58476d1ce4e5b9ull;
	g ^= g >> 31;
	ip = BT_FRAME_PY_BIT | (g >> 1);
	x->py[n & (BT_PY_MAX_FRAMES - 1)] = ip;
	if (entry)
		x->entry |= 1ull << (n & 63);
	w->n = n + 1;
	bt_py_intern(w, x, ip, code, name, file, line, instr);
	if (bt_py_read(&w->frame, sizeof(w->frame), w->frame + x->o.frame_prev))
		w->frame = 0;
	return 0;
}

/* Merge: the output's next frame (the walk's i, j, out, done). */
static long bt_py_merge_step(__u32 k, void *arg)
{
	struct bt_py_walk *m = arg;
	struct bt_py_scratch *x = bpf_map_lookup_elem(&py_scratch, &m->slot);
	struct bt_stack_buf *b = bpf_map_lookup_elem(&stack_scratch, &m->slot);
	__u64 o = (__u64)m->out * 3;
	__u32 i = m->i, j = m->j;

	barrier_var(o); /* the bound below is kept on o itself */
	if (o > BT_MAX_FRAMES * 3 - 3)
		return 1;
	if (!x || !b || i >= m->nnat || i >= BT_MAX_FRAMES)
		return 1;
	if (!m->done && j < m->n && (b->pymask[(i >> 6) & 1] >> (i & 63) & 1)) {
		/* native frame i is _PyEval_EvalFrameDefault: its Python frames first */
		b->ips[o] = x->py[j & (BT_PY_MAX_FRAMES - 1)];
		b->ips[o + 1] = 0;
		b->ips[o + 2] = BT_FRAME_NO_FILE;
		m->done = (x->entry >> (j & 63)) & 1;
		m->j = j + 1;
	} else {
		__u64 s = (__u64)i * 3;

		barrier_var(s);
		if (s > BT_MAX_FRAMES * 3 - 3)
			return 1;
		b->ips[o] = x->ips[s];
		b->ips[o + 1] = x->ips[s + 1];
		b->ips[o + 2] = x->ips[s + 2];
		m->i = i + 1;
		m->done = 0;
	}
	m->out++;
	return 0;
}

/* Python frames into the user stack of stack_scratch[slot] (n native
 * frames, as the unwinder left them): the new frame count. */
__noinline int bt_py_frames(__u32 slot, __u32 n)
{
	struct bt_stack_buf *b = bpf_map_lookup_elem(&stack_scratch, &slot);
	struct bt_py_scratch *x = bpf_map_lookup_elem(&py_scratch, &slot);
	struct bt_stack_stats *ss = bt_stack_stats_get();
	struct bt_unwind_fkey fk = {};
	struct bt_py_walk w = {};
	struct bt_py_file *pf;
	__u64 pid_tgid, cf = 0, *cached, interp = 0;

	if (!b || !x || !ss || n > BT_MAX_FRAMES || !(b->pymask[0] | b->pymask[1]))
		return n;
	if (b->flags & BT_STACKDEF_COPY)
		return n; /* finished in user space from a copy: native frames only */
	fk.ino = b->pyino;
	fk.dev = b->pydev;
	pf = bpf_map_lookup_elem(&py_files, &fk);
	if (!pf)
		return n;
	if (!pf->known) {
		__sync_fetch_and_add(&ss->py_unknown, 1);
		return n;
	}
	x->o = pf->o;
	w.slot = slot;
	pid_tgid = bpf_get_current_pid_tgid();
	w.tid = (__u32)pid_tgid;
	w.tgid = pid_tgid >> 32;
	w.want = w.tid;
	if (x->o.flags & BT_PY_TID_PTHREAD) {
#if defined(__TARGET_ARCH_x86)
		/* glibc's pthread_self() is the thread's TCB, at the fs base */
		w.want = BPF_CORE_READ(bpf_get_current_task_btf(), thread.fsbase);
#else
		__sync_fetch_and_add(&ss->py_unreadable, 1);
		return n;
#endif
	}
	/* The thread's state: remembered, or found in the thread list. */
	cached = bpf_map_lookup_elem(&py_tstate, &w.tid);
	if (cached) {
		w.tstate = *cached;
		bt_py_thread_step(0, &w);
	}
	if (!w.frame) {
		w.tstate = 0;
		if (!bt_py_read(&interp, sizeof(interp), pf->runtime + b->pybias + x->o.interp_head) && interp &&
		    !bt_py_read(&w.tstate, sizeof(w.tstate), interp + x->o.threads_head))
			bpf_loop(BT_PY_THREADS, bt_py_thread_step, &w, 0);
		if (!w.frame) {
			__sync_fetch_and_add(&ss->py_no_thread, 1);
			return n;
		}
		bpf_map_update_elem(&py_tstate, &w.tid, &w.tstate, BPF_ANY);
	}
	w.frame = 0;
	if (bt_py_read(&cf, sizeof(cf), w.tstate + x->o.tstate_frame) || !cf ||
	    ((x->o.flags & BT_PY_CFRAME) && bt_py_read(&w.frame, sizeof(w.frame), cf + x->o.cframe_frame))) {
		__sync_fetch_and_add(&ss->py_unreadable, 1);
		return n;
	}
	if (!(x->o.flags & BT_PY_CFRAME))
		w.frame = cf; /* the thread state holds the frame itself */
	x->entry = 0;
	bpf_loop(BT_PY_MAX_FRAMES, bt_py_frame_step, &w, 0);
	if (w.bad == 1)
		__sync_fetch_and_add(&ss->py_unreadable, 1);
	if (!w.n)
		return n;
	/* The native frames aside, then merged back with the Python ones. */
	/* all of it: clang loses a variable size's bound before the call */
	if (bpf_probe_read_kernel(x->ips, sizeof(x->ips), b->ips))
		return n;
	w.nnat = n;
	bpf_loop(BT_MAX_FRAMES, bt_py_merge_step, &w, 0);
	if (w.bad == 2 || w.i < n || w.j < w.n)
		__sync_fetch_and_add(&ss->py_cut, 1);
	__sync_fetch_and_add(&ss->py_walks, 1);
	__sync_fetch_and_add(&ss->py_frames, w.j);
	return w.out;
}

#endif
