// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * empty.bpf.c - the overhead floor for the record benchmarks
 * (scripts/bench_record.sh, loaded by bench/floor_attach.c). Not part of the
 * tracer.
 *
 * One tp_btf program on each tracepoint record.bpf.c attaches, each doing
 * nothing: what remains is the price of having a BPF program on the
 * tracepoint at all (the static-key branch, the trampoline into the program,
 * the program's prologue and the RCU/recursion bookkeeping around it). The
 * recorder cannot cost less than this; the benchmark reports how far above it
 * it is.
 *
 * Keep the list in step with record.bpf.c. Group tags in the program names
 * (sched_, irq_, power_, sys_) let the loader pick groups as `record -e` does.
 * The programs read no arguments, so one sched_switch program fits every
 * kernel (record.bpf.c needs two only because it reads prev_state).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#define EMPTY_PROG(group, tp)                        \
	SEC("tp_btf/" #tp)                           \
	int empty_##group##__##tp(void *ctx)         \
	{                                            \
		return 0;                            \
	}

/* sched (default group) */
EMPTY_PROG(sched, sched_switch)
EMPTY_PROG(sched, sched_wakeup)
EMPTY_PROG(sched, sched_wakeup_new)
EMPTY_PROG(sched, sched_waking)
EMPTY_PROG(sched, sched_migrate_task)
EMPTY_PROG(sched, sched_process_fork)
EMPTY_PROG(sched, sched_process_exec)
EMPTY_PROG(sched, sched_process_exit)
EMPTY_PROG(sched, task_rename)

/* irq (default group) */
EMPTY_PROG(irq, irq_handler_entry)
EMPTY_PROG(irq, irq_handler_exit)
EMPTY_PROG(irq, softirq_entry)
EMPTY_PROG(irq, softirq_exit)

/* power (default group) */
EMPTY_PROG(power, cpu_frequency)
EMPTY_PROG(power, cpu_idle)

/* syscalls (record -e syscalls) */
EMPTY_PROG(syscalls, sys_enter)
EMPTY_PROG(syscalls, sys_exit)

char LICENSE[] SEC("license") = "Dual MIT/GPL";
