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
 * (user/stacks/stack_table.c) keeps hash -> small id and stores the id.
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

#include "stacks_emit.bpf.h"

/* Tasks switched out sleeping: their stacks until they run again
 * (struct bt_offcpu_pending in events.h: the recorder reads the hashes). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct bt_offcpu_pending);
} offcpu_pending SEC(".maps");

/* ---- CPU sampling ------------------------------------------------------------ */

#ifdef BT_WITH_UNWIND
/* A sample's user half (the unwind walk, Python frames) is a program of
 * its own, tail-called, so each half has the verifier's whole budget:
 * index 0 is handle_cpu_sample_user, put there by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sample_tail SEC(".maps");

/* The kernel half's hash, per CPU, for the user half to emit (a sample
 * does not nest into itself on a CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sample_khash SEC(".maps");
#endif

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
#ifdef BT_WITH_UNWIND
	if (unwind_on) {
		__u32 zero = 0;
		__u64 *slot = bpf_map_lookup_elem(&sample_khash, &zero);

		if (slot) {
			*slot = kh;
			bpf_tail_call(ctx, &sample_tail, 0);
		}
		/* not run: the user stack is lost, counted */
		__sync_fetch_and_add(&ss->user_err, 1);
		bt_stacks_emit(BT_EV_CPU_SAMPLE, kh, BT_HASH_LOST, 0, 0, 0, 0, BT_IRQS_OFF);
		return 0;
	}
#endif
	uh = bt_stack_take(ctx, BT_STK_SLOT_SAMPLE, 1, ss);
	bt_stacks_emit(BT_EV_CPU_SAMPLE, kh, uh, 0, 0, 0, 0, BT_IRQS_OFF);
	return 0;
}

#ifdef BT_WITH_UNWIND
/* The user half of a sample (see sample_tail), never attached. */
SEC("perf_event")
int handle_cpu_sample_user(struct bpf_perf_event_data *ctx)
{
	struct bt_stack_stats *ss = bt_stack_stats_get();
	__u32 zero = 0;
	__u64 *kh = bpf_map_lookup_elem(&sample_khash, &zero);
	__u64 uh;

	if (!ss || !kh)
		return 0;
	uh = bt_stack_take(ctx, BT_STK_SLOT_SAMPLE, 1, ss);
	bt_stacks_emit(BT_EV_CPU_SAMPLE, *kh, uh, 0, 0, 0, 0, BT_IRQS_OFF);
	return 0;
}
#endif

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
