// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nest_test.bpf.c - a program the kernel must skip, for the test of the
 * recursion-miss counters (tests/kernel/test_prog_misses.c). Not part of the
 * tracer.
 *
 * nest_trigger (sys_enter of target_nr by target_tgid) calls bpf_printk,
 * which fires the bpf_trace_printk tracepoint: nest_inner runs. nest_inner
 * calls bpf_printk too, firing the tracepoint again while nest_inner is
 * still running on this CPU: the kernel skips that nested run and counts it
 * in nest_inner's recursion_misses (bpf_prog_info), exactly once per
 * trigger, which is how a recorder program would lose an event without
 * taking a seq.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

const volatile __u32 target_tgid = 0;
const volatile long target_nr = -1;

__u64 triggers = 0;   /* sys_enter runs that called bpf_printk */
__u64 inner_runs = 0; /* nest_inner runs (the outer ones only) */

SEC("tp_btf/sys_enter")
int BPF_PROG(nest_trigger, struct pt_regs *regs, long id)
{
	if ((bpf_get_current_pid_tgid() >> 32) != target_tgid || id != target_nr)
		return 0;
	__sync_fetch_and_add(&triggers, 1);
	bpf_printk("btrace nest test");
	return 0;
}

SEC("tp_btf/bpf_trace_printk")
int BPF_PROG(nest_inner, const char *buf)
{
	if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	__sync_fetch_and_add(&inner_runs, 1);
	bpf_printk("btrace nest test: nested");
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
