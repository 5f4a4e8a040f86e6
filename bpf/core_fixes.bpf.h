/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * core_fixes.bpf.h - kernel-version differences, isolated here (the bcc
 * libbpf-tools convention). Each helper reads a field whose name or place
 * changed between kernels through CO-RE "flavoured" types: libbpf resolves
 * bpf_core_field_exists() at load time, the verifier sees a constant and
 * drops the branch that does not apply, so the fast path costs one load.
 *
 * Included by the bpf/NAME.bpf.c programs after vmlinux.h and bpf_core_read.h.
 */
#ifndef BTRACE_CORE_FIXES_BPF_H
#define BTRACE_CORE_FIXES_BPF_H

/*
 * task_struct::state was renamed task_struct::__state (and became an
 * unsigned int) in 5.14, commit 2f064a59a11f ("sched: Change
 * task_struct::state").
 */
struct task_struct___pre514 {
	volatile long int state;
} __attribute__((preserve_access_index));

struct task_struct___post514 {
	unsigned int __state;
} __attribute__((preserve_access_index));

static __always_inline __u32 bt_task_state(struct task_struct *t)
{
	struct task_struct___post514 *tn = (void *)t;

	if (bpf_core_field_exists(tn->__state))
		return BPF_CORE_READ(tn, __state);
	return (__u32)BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/*
 * The CPU a task is queued on (task_cpu()): task_struct::cpu moved into
 * thread_info (task_struct::thread_info.cpu) in 5.16 on architectures with
 * THREAD_INFO_IN_TASK (x86, arm64), commit bcf9033e5449 ("sched: move CPU
 * field back into thread_info if THREAD_INFO_IN_TASK=y").
 */
struct thread_info___cpu {
	__u32 cpu;
} __attribute__((preserve_access_index));

struct task_struct___ti {
	struct thread_info___cpu thread_info;
} __attribute__((preserve_access_index));

struct task_struct___cpu {
	unsigned int cpu;
} __attribute__((preserve_access_index));

/* t must be a BTF (trusted) pointer: a tp_btf argument or
 * bpf_get_current_task_btf(). Direct loads, no helper call: this is on the
 * sched_wakeup fast path. */
static __always_inline __u32 bt_task_cpu(struct task_struct *t)
{
	struct task_struct___ti *ti = (void *)t;

	if (bpf_core_field_exists(ti->thread_info.cpu))
		return ti->thread_info.cpu;
	return ((struct task_struct___cpu *)t)->cpu;
}

/*
 * sched_switch's arguments.
 *   < 5.18: (bool preempt, struct task_struct *prev, struct task_struct *next)
 *  >= 5.18: (bool preempt, struct task_struct *prev, struct task_struct *next,
 *            unsigned int prev_state)
 * Commit fa2c3254d7cf ("sched/tracing: Don't re-read p->state when emitting
 * sched_switch event") added prev_state; 9c2136be0878 ("sched/tracing: Append
 * prev_state to tp args instead") moved it to the end before 5.18 shipped.
 * A tp_btf program that touches a 4th argument the kernel does not have is
 * rejected by the verifier, so record.bpf.c has two programs,
 * handle_sched_switch (4 arguments) and handle_sched_switch_legacy (3, state
 * read from the task), and the loader autoloads the one that matches
 * btf_trace_sched_switch in the running kernel's BTF.
 */

/*
 * prev_state as the sched_switch trace event reports it: the TASK_REPORT
 * bits of the state (S 0x1, D 0x2, T 0x4, t 0x8, X 0x10, Z 0x20, P 0x40),
 * 0x80 for TASK_IDLE (I), 0 for a preempted or still runnable task (R).
 * Mirrors __trace_sched_switch_state() in include/trace/events/sched.h.
 */
#define BT_TASK_REPORT 0x7f
#define BT_TASK_REPORT_IDLE 0x80
#define BT_TASK_IDLE_STATE 0x402 /* TASK_UNINTERRUPTIBLE | TASK_NOLOAD */

static __always_inline __u32 bt_switch_state(bool preempt, __u32 state, __u32 exit_state)
{
	if (preempt)
		return 0;
	if (state == BT_TASK_IDLE_STATE)
		return BT_TASK_REPORT_IDLE;
	return (state | exit_state) & BT_TASK_REPORT;
}

#endif /* BTRACE_CORE_FIXES_BPF_H */
