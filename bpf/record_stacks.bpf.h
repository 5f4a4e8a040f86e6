/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * record_stacks.bpf.h - call stacks of record.bpf.c: the CPU sampling
 * program (a perf_event program on a software CPU clock per CPU, `record
 * --sample HZ`), off-CPU stacks (`--stacks switch`) and waker stacks
 * (`--stacks wakeup`). Included by record.bpf.c after emit.bpf.h and the
 * filters; the sched_switch and sched_waking programs call the bt_stacks_*
 * helpers, so the stack logic stays out of their own code.
 *
 * Interning. An event carries 64-bit hashes of its stacks, never frames:
 * bpf_get_stack() copies a stack into a per-CPU scratch buffer, the program
 * hashes it (FNV-1a over the return addresses; user stacks also over the
 * tgid, since equal addresses mean other code in another process), and only
 * a hash `stack_seen` does not hold yet sends the frames, once, as a
 * BT_RAW_STACK_DEF record into the CPU's ring ahead of the event. The drain
 * (user/record/stack_table.c) keeps hash -> small id and stores the id.
 * Why not BPF_MAP_TYPE_STACK_TRACE + bpf_get_stackid(): its id is a bucket
 * (hash % buckets) and a second stack landing in a taken bucket fails with
 * -EEXIST for as long as the map lives (BPF_F_REUSE_STACKID instead rewrites
 * the bucket under ids older events still name). Collisions start long before
 * the map is full (birthday bound: with 2,000 stacks in 32,768 buckets about
 * 3% of the stacks are lost for good, always the same ones, a bias in every
 * profile). 64-bit hashes do not collide in practice, and `stack_seen` is an
 * LRU: a stack it forgets is merely sent again.
 *
 * A definition that does not fit in the ring is counted (def_drops) and its
 * event says BT_HASH_LOST; `stack_seen` is then left without it, so the
 * next occurrence tries again.
 */
#ifndef BTRACE_RECORD_STACKS_BPF_H
#define BTRACE_RECORD_STACKS_BPF_H

/* Set by the loader. */
const volatile __u32 stacks_switch = 0;      /* --stacks switch */
const volatile __u64 offcpu_min_ns = 0;      /* --offcpu-min */

/* Scratch slots: one per program kind. A program never nests into itself on
 * a CPU (the kernel skips such runs), but the sampling program's timer
 * interrupt can come inside the waking program: different slots. */
#define BT_STK_SLOT_SAMPLE 0
#define BT_STK_SLOT_SWITCH 1
#define BT_STK_SLOT_WAKEUP 2
#define BT_STK_SLOTS 3

struct bt_stack_buf {
	struct bt_event_hdr h; /* the layout of struct bt_raw_stack_def */
	__u64 hash;
	__u32 nframes;
	__u32 flags;
	__u64 ips[BT_MAX_FRAMES];
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

/* Tasks switched out sleeping: their stacks until they run again. */
struct bt_offcpu_pending {
	__u64 ts;
	__u64 khash, uhash;
};
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct bt_offcpu_pending);
} offcpu_pending SEC(".maps");

static __always_inline struct bt_stack_stats *bt_stack_stats_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&stack_stats, &zero);
}

/* The hash of the current task's kernel (user = 0) or user stack, its frames
 * sent first if new. BT_HASH_NONE: no such stack; BT_HASH_LOST: not taken
 * (counted in ss). */
static __always_inline __u64 bt_stack_take(void *ctx, __u32 slot, int user, struct bt_stack_stats *ss)
{
	struct bt_stack_buf *b;
	__u64 h, pid_tgid, v = 0;
	__u32 cpu, nf, i, seen = 1;
	void *ring;
	long n;

	b = bpf_map_lookup_elem(&stack_scratch, &slot);
	if (!b)
		return BT_HASH_LOST;
	n = bpf_get_stack(ctx, b->ips, sizeof(b->ips), user ? BPF_F_USER_STACK : 0);
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
	if (nf > BT_MAX_FRAMES)
		nf = BT_MAX_FRAMES;
	pid_tgid = bpf_get_current_pid_tgid();
	h = 0xcbf29ce484222325ull;
	if (user)
		h = (h ^ ((pid_tgid >> 32) << 1 | 1)) * 0x100000001b3ull;
	for (i = 0; i < BT_MAX_FRAMES; i++) {
		if (i >= nf)
			break;
		h = (h ^ b->ips[i]) * 0x100000001b3ull;
	}
	h ^= h >> 31;
	if (h <= BT_HASH_LOST)
		h += 2;
	if (bpf_map_lookup_elem(&stack_seen, &h))
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
	b->flags = (user ? BT_STACKDEF_USER : 0) | (nf == BT_MAX_FRAMES ? BT_STACKDEF_FULL : 0);
	if (!ring || bpf_ringbuf_output(ring, b, BT_STACKDEF_HDR + (__u64)nf * 8, BPF_RB_NO_WAKEUP)) {
		__sync_fetch_and_add(&ss->def_drops, 1);
		return BT_HASH_LOST;
	}
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

/* ---- CPU sampling ------------------------------------------------------------ */

/* Attached by the loader to a software CPU clock per CPU (record --sample).
 * The timer runs in hard interrupt context: irqs off. Idle is not sampled. */
SEC("perf_event")
int handle_cpu_sample(struct bpf_perf_event_data *ctx)
{
	struct bt_stack_stats *ss = bt_stack_stats_get();
	__u64 kh, uh;

	if (!ss || bt_stopped || (__u32)bpf_get_current_pid_tgid() == 0)
		return 0;
	if (bt_filtering() && !bt_current_match())
		return 0;
	ss->samples++;
	kh = bt_stack_take(ctx, BT_STK_SLOT_SAMPLE, 0, ss);
	uh = bt_stack_take(ctx, BT_STK_SLOT_SAMPLE, 1, ss);
	bt_stacks_emit(BT_EV_CPU_SAMPLE, kh, uh, 0, 0, 0, 0, BT_IRQS_OFF);
	return 0;
}

/* ---- off-CPU: called by the sched_switch programs ---------------------------- */

/* prev goes to sleep (state: bt_switch_state's, 0 = preempted, runnable):
 * keep its stacks; next comes back: emit its block if long enough. */
static __always_inline void bt_stacks_switch(void *ctx, struct task_struct *prev, struct task_struct *next,
					     __u32 state)
{
	struct bt_offcpu_pending pend, *pp;
	struct bt_stack_stats *ss;
	__u32 ntid;
	__u64 now;

	if (!stacks_switch || bt_stopped)
		return;
	ss = bt_stack_stats_get();
	if (!ss)
		return;
	now = bpf_ktime_get_boot_ns();
	ntid = next->pid;
	if (ntid && (pp = bpf_map_lookup_elem(&offcpu_pending, &ntid))) {
		__u64 d = now - pp->ts, kh = pp->khash, uh = pp->uhash;

		bpf_map_delete_elem(&offcpu_pending, &ntid);
		if (d < offcpu_min_ns)
			ss->offcpu_short++;
		else
			bt_stacks_emit(BT_EV_OFFCPU, kh, uh, 0, d, ntid, next->tgid, BT_IRQS_OFF);
	}
	/* Preempted (runnable) and exiting tasks did not block; idle neither. */
	if (!state || prev->exit_state || !prev->pid)
		return;
	if (bt_filtering() && !bt_task_match(prev))
		return;
	pend.ts = now;
	pend.khash = bt_stack_take(ctx, BT_STK_SLOT_SWITCH, 0, ss);
	pend.uhash = bt_stack_take(ctx, BT_STK_SLOT_SWITCH, 1, ss);
	ntid = prev->pid;
	if (bpf_map_update_elem(&offcpu_pending, &ntid, &pend, BPF_ANY))
		ss->offcpu_nomem++;
}

/* ---- waker ------------------------------------------------------------------- */

/* The current task wakes p: its stacks, if p's block is being followed
 * (--stacks switch keeps it pending) or without --stacks switch always.
 * A program of its own on sched_waking (the waker's context; sched_wakeup
 * may run on the woken task's CPU), loaded with --stacks wakeup only,
 * whether or not --waking records the waking events. */
SEC("tp_btf/sched_waking")
int BPF_PROG(handle_waker_stack, struct task_struct *p)
{
	struct bt_stack_stats *ss;
	__u32 tid = p->pid;
	__u64 kh, uh;

	if (bt_stopped)
		return 0;
	if (stacks_switch && !bpf_map_lookup_elem(&offcpu_pending, &tid))
		return 0;
	if (!stacks_switch && bt_filtering() && !bt_task_match(p))
		return 0;
	ss = bt_stack_stats_get();
	if (!ss)
		return 0;
	kh = bt_stack_take(ctx, BT_STK_SLOT_WAKEUP, 0, ss);
	uh = bt_stack_take(ctx, BT_STK_SLOT_WAKEUP, 1, ss);
	bt_stacks_emit(BT_EV_WAKER, kh, uh, tid, 0, 0, 0, BT_IRQS_ON);
	return 0;
}
#endif
