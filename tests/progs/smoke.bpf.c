// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * smoke.bpf.c - toolchain smoke test: proves vmlinux.h -> CO-RE object ->
 * skeleton -> load/attach works on this kernel. Not part of the tracer.
 *
 * Counts every sched_switch, and for switches to a task of target_tgid
 * records next->pid/tgid through CO-RE relocated reads.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

/* Set through the skeleton's rodata before load; 0 = every process. The
 * verifier sees the final value, so the filter costs nothing when unused. */
const volatile __u32 target_tgid = 0;

__u64 nr_switches = 0;    /* every sched_switch seen */
__u64 nr_matched = 0;     /* those whose next task is in target_tgid */
__u32 last_next_pid = 0;  /* next->pid of the last matched switch */
__u32 last_next_tgid = 0; /* next->tgid of the last matched switch */

SEC("tp_btf/sched_switch")
int BPF_PROG(smoke_sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	__u32 tgid = BPF_CORE_READ(next, tgid);

	__sync_fetch_and_add(&nr_switches, 1);
	if (target_tgid && tgid != target_tgid)
		return 0;
	__sync_fetch_and_add(&nr_matched, 1);
	last_next_pid = BPF_CORE_READ(next, pid);
	last_next_tgid = tgid;
	return 0;
}

/* BPF_CORE_READ uses bpf_probe_read_kernel(), a GPL-only helper. */
char LICENSE[] SEC("license") = "Dual MIT/GPL";
