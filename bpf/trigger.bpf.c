// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * trigger.bpf.c - dump triggers evaluated where the data is: in the kernel
 * (`record --trigger`, bpf/trigger.h for the ABI).
 *
 * A separate object from record.bpf.c: it is loaded only when a kernel
 * condition is configured, and only the programs of the configured kinds
 * (autoload), so a recorder without triggers runs exactly the code it ran
 * before. Inside a program every trigger slot is a loop iteration over
 * read-only data the verifier knows, so slots of other kinds are pruned.
 *
 *   sched-latency  not here: record.bpf.c's own sched_switch program reads
 *                  how long next waited from the kernel (trigger_fire.bpf.h)
 *   offcpu         sched_switch stamps prev when it blocks; measures next's
 *                  time away when it comes back
 *   syscall        sys_enter stamps (time, nr); sys_exit measures
 *   func           uprobe stamps (a small per-thread stack, recursion);
 *                  uretprobe measures; the attach cookie is the trigger slot
 *   crash          signal_deliver of a signal in the set with the default
 *                  action (it kills the process)
 *   oom            mark_victim: the OOM killer chose a victim
 *
 * A hit passes the slot's filter (pid=, comm=), then its holdoff: one hit per
 * holdoff_ns is sent (CAS on last_ns), the others only counted, so a storm
 * of hits costs a few atomics each and never floods the ring or the
 * recorder. The recorder's own tasks never trigger (its dump thread blocks
 * in system calls by design).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "events.h"
#include "trigger.h"
#include "core_fixes.bpf.h"
#include "task.bpf.h"
#include "trigger_fire.bpf.h"

const volatile __u32 self_tgid = 0; /* the recorder */

/* Per task: when it blocked, when its system call began. */
struct bt_task_times {
	__u64 off_ts;
	__u64 sys_ts;
	__s64 sys_nr;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bt_task_times);
} task_times SEC(".maps");

struct bt_func_key {
	__u32 tid;
	__u32 trig;
};

struct bt_func_stack {
	__u32 depth;
	__u32 pad;
	__u64 ts[BT_TRIG_FUNC_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct bt_func_key);
	__type(value, struct bt_func_stack);
} func_entry SEC(".maps");

static __always_inline struct bt_task_times *bt_times(struct task_struct *t, bool create)
{
	return bpf_task_storage_get(&task_times, t, 0, create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/* ---- offcpu ------------------------------------------------------------------- */

/* Three arguments on every kernel (prev_state, the 4th since 5.18, is read
 * from the task instead: core_fixes.bpf.h), so one program fits all. */
SEC("tp_btf/sched_switch")
int BPF_PROG(trig_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct bt_task_times *tt;
	__u64 now = bpf_ktime_get_boot_ns();

	if (!preempt && bt_task_state(prev) && !(self_tgid && prev->tgid == self_tgid)) {
		tt = bt_times(prev, true);
		if (tt)
			tt->off_ts = now;
	}
	if (!next->pid || (self_tgid && next->tgid == self_tgid))
		return 0;
	tt = bt_times(next, false);
	if (!tt || !tt->off_ts)
		return 0;
	__u64 d = now - tt->off_ts;

	tt->off_ts = 0;
	bt_check_task(BT_TRIG_OFFCPU, now, d, -1, next);
	return 0;
}

/* ---- syscall ------------------------------------------------------------------ */

SEC("tp_btf/sys_enter")
int BPF_PROG(trig_sys_enter, struct pt_regs *regs, long id)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct bt_task_times *tt;

	if (self_tgid && t->tgid == self_tgid)
		return 0;
	tt = bt_times(t, true);
	if (tt) {
		tt->sys_ts = bpf_ktime_get_boot_ns();
		tt->sys_nr = id;
	}
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(trig_sys_exit, struct pt_regs *regs, long ret)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct bt_task_times *tt = bt_times(t, false);
	__u64 now, d;

	if (!tt || !tt->sys_ts)
		return 0;
	now = bpf_ktime_get_boot_ns();
	d = now - tt->sys_ts;
	tt->sys_ts = 0;
	bt_check_task(BT_TRIG_SYSCALL, now, d, tt->sys_nr, t);
	return 0;
}

/* ---- func (user-space probe) ------------------------------------------------- */

/* An index into bt_func_stack.ts the verifier can bound: the barrier hides
 * the earlier range check from the compiler, so the mask stays. */
static __always_inline __u32 bt_slot(__u32 depth)
{
	asm volatile("" : "+r"(depth));
	return depth & (BT_TRIG_FUNC_DEPTH - 1);
}

SEC("uprobe")
int trig_func_entry(struct pt_regs *ctx)
{
	struct bt_func_key k = { .tid = (__u32)bpf_get_current_pid_tgid(), .trig = (__u32)bpf_get_attach_cookie(ctx) };
	struct bt_func_stack *s = bpf_map_lookup_elem(&func_entry, &k);

	if (!s) {
		struct bt_func_stack zero = {};

		bpf_map_update_elem(&func_entry, &k, &zero, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&func_entry, &k);
		if (!s)
			return 0;
	}
	/* Deeper recursion is not timed; its returns are matched by depth. */
	if (s->depth < BT_TRIG_FUNC_DEPTH)
		s->ts[bt_slot(s->depth)] = bpf_ktime_get_boot_ns();
	s->depth++;
	return 0;
}

SEC("uretprobe")
int trig_func_return(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 i = (__u32)bpf_get_attach_cookie(ctx);
	struct bt_func_key k = { .tid = (__u32)pid_tgid, .trig = i };
	struct bt_func_stack *s = bpf_map_lookup_elem(&func_entry, &k);
	char comm[BT_COMM_LEN];
	__u64 now, d;
	__u32 depth;

	if (!s || !s->depth)
		return 0;
	depth = --s->depth;
	if (depth >= BT_TRIG_FUNC_DEPTH || i >= BT_TRIG_MAX)
		return 0;
	now = bpf_ktime_get_boot_ns();
	d = now - s->ts[bt_slot(depth)];
	if (!depth)
		bpf_map_delete_elem(&func_entry, &k);
	/* i is a run-time value here: check it against each constant slot. */
#pragma unroll
	for (__u32 j = 0; j < BT_TRIG_MAX; j++) {
		if (trig_conf[j].kind != BT_TRIG_FUNC || j != i || d <= trig_conf[j].threshold_ns)
			continue;
		bt_task_comm((struct task_struct *)bpf_get_current_task(), comm);
		if (bt_trig_match(j, pid_tgid >> 32, comm))
			bt_fire(j, now, d, -1, (__u32)pid_tgid, pid_tgid >> 32, comm);
	}
	return 0;
}

/* ---- crash -------------------------------------------------------------------- */

SEC("tp_btf/signal_deliver")
int BPF_PROG(trig_signal_deliver, int sig, struct kernel_siginfo *info, struct k_sigaction *ka)
{
	struct task_struct *t;

	/* A handler catches it: not fatal (yet). The default action of every
	 * signal in a crash set kills the process. */
	if (sig <= 0 || sig >= 64 || BPF_CORE_READ(ka, sa.sa_handler))
		return 0;
	t = bpf_get_current_task_btf();
#pragma unroll
	for (__u32 i = 0; i < BT_TRIG_MAX; i++) {
		char comm[BT_COMM_LEN];

		if (trig_conf[i].kind != BT_TRIG_CRASH || !(trig_conf[i].sigmask & (1ull << sig)))
			continue;
		bt_task_comm(t, comm);
		if (bt_trig_match(i, t->tgid, comm))
			bt_fire(i, bpf_ktime_get_boot_ns(), sig, -1, t->pid, t->tgid, comm);
	}
	return 0;
}

/* ---- oom ---------------------------------------------------------------------- */

static __always_inline void bt_oom(__u32 tid, __u32 tgid, const char *comm)
{
#pragma unroll
	for (__u32 i = 0; i < BT_TRIG_MAX; i++)
		if (trig_conf[i].kind == BT_TRIG_OOM && bt_trig_match(i, tgid, comm))
			bt_fire(i, bpf_ktime_get_boot_ns(), 0, -1, tid, tgid, comm);
}

/* Since 6.8 (commit 72ba14deb40a, "mm: oom: add the victim's uid"): the
 * victim task itself. */
SEC("tp_btf/mark_victim")
int BPF_PROG(trig_mark_victim, struct task_struct *task)
{
	char comm[BT_COMM_LEN];

	bt_task_comm(task, comm);
	bt_oom(task->pid, task->tgid, comm);
	return 0;
}

/* Before: only the victim's pid. The loader picks this one from the
 * kernel's BTF and refuses comm=/pid= filters with it (no task to test). */
SEC("raw_tp/mark_victim")
int BPF_PROG(trig_mark_victim_pid, int pid)
{
	char comm[BT_COMM_LEN] = {};

	bt_oom((__u32)pid, (__u32)pid, comm);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
