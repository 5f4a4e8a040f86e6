// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * record.bpf.c - the kernel side of `btrace-bpf record`.
 *
 * One BTF-enabled raw tracepoint program (tp_btf) per tracepoint, grouped as
 * in enum bt_group; the loader turns groups on and off with autoload, so a
 * group that is off costs nothing. Every program does the same few steps:
 *
 *   filter (rodata, pruned by the verifier when no filter is set)
 *     -> one lookup of this CPU's struct bt_cpu_state
 *     -> seq = state->seq++ (atomic if it can nest) (taken even if the next steps fail)
 *     -> this CPU's ring: rings[cpu]                (missing: ++drops[group], done)
 *     -> bpf_ringbuf_reserve()                      (failure: ++drops[group], done)
 *     -> fill header + payload
 *     -> bpf_ringbuf_submit(BPF_RB_NO_WAKEUP)       (FORCE_WAKEUP past the fill threshold)
 *     -> ++emitted[group]
 *
 * One ring buffer per CPU: `rings` is an array of ring buffers indexed by CPU
 * (the loader creates the rings and fills the array before attaching). A
 * single ring shared by all CPUs made every event ~3x dearer as soon as two
 * CPUs produced at once (reserve and submit contend on the ring's lock and
 * producer position); only its own CPU (and programs nesting there) writes
 * into a per-CPU ring.
 *
 * No wakeup per event: user space drains on a short timer, and is woken early
 * only when this CPU's ring holds more than wakeup_bytes (checked every 64th
 * event of a CPU, bpf_ringbuf_query() is cheap but not free).
 *
 * seq and the counters are per CPU, but programs nest on a CPU: a hardirq
 * (irq_handler_entry, or a timer's sched_wakeup) can fire inside a sys_enter,
 * softirq_entry or sched_process_fork program. A program that runs with
 * interrupts enabled therefore takes seq with an atomic fetch-add (one
 * instruction, so never split by an interrupt); a program that always runs
 * with interrupts disabled cannot be interrupted between its load and store
 * and uses a plain increment, which saves a locked instruction on the
 * hottest events:
 *   irqs off, plain:   sched_switch (inside __schedule), sched_wakeup_new,
 *                      sched_migrate_task (under the rq or pi lock, raw
 *                      spinlocks taken with irqs off), irq_handler_entry/exit
 *                      (hardirq context; hardirqs do not nest)
 *   irqs on, atomic:   everything else, sched_waking and sched_wakeup
 *                      included: try_to_wake_up() emits both with only
 *                      preemption disabled when a task wakes itself
 *                      (p == current)
 * (No NMI program shares these maps.)
 *
 * Filters: sched events pass if any task they name matches (prev or next of
 * a switch, the woken task or the waker, the migrated task); irq and syscall
 * events if the current task matches; power events and the task lifecycle
 * events (fork, exec, exit, rename) always pass: the former are about CPUs,
 * the latter keep user space's task-name table complete so every thread on
 * either side of a switch is named.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "events.h"
#include "core_fixes.bpf.h"
#include "task.bpf.h"
#include "trigger.h"
#include "trigger_fire.bpf.h"

/* Read-only data, set by the loader before load. The verifier sees the final
 * values, so an unused filter costs nothing. */
const volatile __u32 filter_tgid = 0;            /* 0: every process */
const volatile char filter_comm[BT_COMM_LEN] = {}; /* "": every name */
const volatile __u32 self_tgid = 0;              /* the recorder: no syscall events of its own */
const volatile bool record_switch = true;        /* false: sched_switch runs for a trigger only */

#include "emit.bpf.h"


/* ---- filters ----------------------------------------------------------------- */

static __always_inline bool bt_filtering(void)
{
	return filter_tgid || filter_comm[0];
}

/* t: a BTF pointer (tracepoint argument). */
static __always_inline bool bt_task_match(struct task_struct *t)
{
	char comm[BT_COMM_LEN];

	if (filter_tgid && t->tgid != filter_tgid)
		return false;
	if (filter_comm[0]) {
		if (bpf_probe_read_kernel(comm, sizeof(comm), t->comm))
			return false;
		return bt_comm_equal(comm, filter_comm);
	}
	return true;
}

static __always_inline bool bt_current_match(void)
{
	char comm[BT_COMM_LEN];

	if (filter_tgid && (bpf_get_current_pid_tgid() >> 32) != filter_tgid)
		return false;
	if (filter_comm[0]) {
		if (bpf_get_current_comm(comm, sizeof(comm)))
			return false;
		return bt_comm_equal(comm, filter_comm);
	}
	return true;
}

#define BT_WITH_UNWIND
#include "record_stacks.bpf.h"

/* ---- sched ----------------------------------------------------------------- */

/* ---- the sched-latency trigger ------------------------------------------------ */

/* How long next waited on the run queue before getting this CPU, as the
 * kernel's own accounting has it (CONFIG_SCHED_INFO: sched_info.last_queued
 * is stamped with the run queue's clock at enqueue, by a wakeup or a
 * preemption, and cleared only after this tracepoint). No map, no state of
 * our own, no wakeup program: reading two words costs a few ns per switch,
 * which keeps an armed trigger inside the record overhead target. A wait
 * is measured on the CPU the task runs on: time spent queued on another
 * CPU before a migration is not counted (as schedstat's run_delay splits it). */
static __always_inline void bt_check_sched_latency(struct task_struct *next)
{
	__u64 queued, now;

	if (!bt_kind_armed(BT_TRIG_SCHED_LATENCY) || !bpf_core_field_exists(next->sched_info.last_queued) ||
	    !bpf_core_field_exists(next->se.cfs_rq->rq))
		return;
	if (!next->pid || (self_tgid && next->tgid == self_tgid))
		return;
	queued = next->sched_info.last_queued;
	if (!queued)
		return;
	/* This CPU's run queue, through next's group run queue (set for
	 * every task with CONFIG_FAIR_GROUP_SCHED, whatever its class): the
	 * per-CPU variable runqueues needs KALLSYMS_ALL, not every kernel has it. */
	now = next->se.cfs_rq->rq->clock;
	if (now > queued)
		bt_check_task(BT_TRIG_SCHED_LATENCY, 0, now - queued, -1, next);
}

static __always_inline int bt_emit_switch(bool preempt, struct task_struct *prev,
					  struct task_struct *next, __u32 state)
{
	struct bt_ev_sched_switch *e;
	struct bt_cpu_state *st;
	void *ring;

	bt_check_sched_latency(next);
	/* Not recorded (attached for system calls or a trigger only, or
	 * filtered out): the enter of a call that blocks still goes into the
	 * ring before the CPU runs another task. */
	if (!record_switch || (bt_filtering() && !bt_task_match(prev) && !bt_task_match(next))) {
		bt_sys_flush_cpu();
		return 0;
	}
	e = bt_begin(sizeof(*e), BT_GROUP_SCHED, BT_EV_SCHED_SWITCH, BT_IRQS_OFF, &st, &ring);
	if (!e)
		return 0;
	e->prev_tid = prev->pid;
	e->next_tid = next->pid;
	e->prev_state = bt_switch_state(preempt, state, prev->exit_state);
	e->prev_prio = prev->prio;
	e->next_prio = next->prio;
	bt_commit(e, st, ring, BT_GROUP_SCHED, BT_IRQS_OFF);
	return 0;
}

/* >= 5.18: prev_state is the 4th argument. */
SEC("tp_btf/sched_switch")
int BPF_PROG(handle_sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	bt_stacks_switch(ctx, prev, next, bt_switch_state(preempt, prev_state, prev->exit_state));
	return bt_emit_switch(preempt, prev, next, prev_state);
}

/* < 5.18: no prev_state argument; read it from the task (core_fixes.bpf.h). */
SEC("tp_btf/sched_switch")
int BPF_PROG(handle_sched_switch_legacy, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	bt_stacks_switch(ctx, prev, next, bt_switch_state(preempt, bt_task_state(prev), prev->exit_state));
	return bt_emit_switch(preempt, prev, next, bt_task_state(prev));
}

static __always_inline int bt_emit_wakeup(struct task_struct *p, __u16 type, int irqs_off)
{
	struct bt_ev_sched_wakeup *e;
	struct bt_cpu_state *st;
	void *ring;

	if (bt_filtering() && !bt_task_match(p) && !bt_current_match())
		return 0;
	e = bt_begin(sizeof(*e), BT_GROUP_SCHED, type, irqs_off, &st, &ring);
	if (!e)
		return 0;
	e->tid = p->pid;
	e->target_cpu = bt_task_cpu(p);
	e->prio = p->prio;
	bt_commit(e, st, ring, BT_GROUP_SCHED, irqs_off);
	return 0;
}

/* The waker's side, before the woken task is queued: Perfetto derives the
 * runnable state from it. Not always with irqs off (see the top). */
SEC("tp_btf/sched_waking")
int BPF_PROG(handle_sched_waking, struct task_struct *p)
{
	return bt_emit_wakeup(p, BT_EV_SCHED_WAKING, BT_IRQS_ON);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(handle_sched_wakeup, struct task_struct *p)
{
	return bt_emit_wakeup(p, BT_EV_SCHED_WAKEUP, BT_IRQS_ON); /* see p == current above */
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(handle_sched_wakeup_new, struct task_struct *p)
{
	return bt_emit_wakeup(p, BT_EV_SCHED_WAKEUP_NEW, BT_IRQS_OFF);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(handle_sched_migrate_task, struct task_struct *p, int dest_cpu)
{
	struct bt_ev_sched_migrate *e;
	struct bt_cpu_state *st;
	void *ring;

	if (bt_filtering() && !bt_task_match(p))
		return 0;
	e = bt_begin(sizeof(*e), BT_GROUP_SCHED, BT_EV_SCHED_MIGRATE, BT_IRQS_OFF, &st, &ring);
	if (!e)
		return 0;
	e->tid = p->pid;
	e->orig_cpu = bt_task_cpu(p);
	e->dest_cpu = dest_cpu;
	bt_commit(e, st, ring, BT_GROUP_SCHED, BT_IRQS_OFF);
	return 0;
}

/* Task lifecycle: never filtered (see the top of the file). */
static __always_inline struct bt_ev_task *bt_begin_task(__u16 type, struct bt_cpu_state **stp,
							 void **ringp)
{
	return bt_begin(sizeof(struct bt_ev_task), BT_GROUP_SCHED, type, BT_IRQS_ON, stp, ringp);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	struct bt_cpu_state *st;
	void *ring;
	struct bt_ev_task *e = bt_begin_task(BT_EV_PROCESS_FORK, &st, &ring);

	if (!e)
		return 0;
	e->tid = child->pid;
	e->tgid = child->tgid;
	/* task->comm is always BT_COMM_LEN bytes, NUL-padded. */
	if (bpf_probe_read_kernel(e->comm, sizeof(e->comm), child->comm))
		__builtin_memset(e->comm, 0, sizeof(e->comm));
	bt_commit(e, st, ring, BT_GROUP_SCHED, BT_IRQS_ON);
	return 0;
}

/* Set by the drain (drain.c, drain_main) before a long wait on a quiet
 * machine, cleared by it after: an exec then wakes it (and clears it, so a
 * burst of execs wakes it once), and a new program's files are opened
 * while it runs, as on a busy machine. A plain flag: a wakeup missed or
 * doubled costs latency, never an event. */
__u32 drain_asleep = 0;

SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_sched_process_exec, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	struct bt_cpu_state *st;
	void *ring;
	struct bt_ev_task *e = bt_begin_task(BT_EV_PROCESS_EXEC, &st, &ring);
	__u64 flags;

	if (!e)
		return 0;
	e->tid = old_pid;
	e->tgid = p->tgid;
	if (bpf_probe_read_kernel(e->comm, sizeof(e->comm), p->comm))
		__builtin_memset(e->comm, 0, sizeof(e->comm));
	flags = bt_submit_flags(ring, e->h.seq, 1);
	if (drain_asleep) {
		drain_asleep = 0;
		flags = BPF_RB_FORCE_WAKEUP;
	}
	bt_commit_flags(e, st, BT_GROUP_SCHED, BT_IRQS_ON, 1, flags);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_sched_process_exit, struct task_struct *p)
{
	struct bt_cpu_state *st;
	void *ring;
	struct bt_ev_task *e = bt_begin_task(BT_EV_PROCESS_EXIT, &st, &ring);

	if (!e)
		return 0;
	e->tid = p->pid;
	e->tgid = p->tgid;
	__builtin_memset(e->comm, 0, sizeof(e->comm));
	bt_commit(e, st, ring, BT_GROUP_SCHED, BT_IRQS_ON);
	return 0;
}

SEC("tp_btf/task_rename")
int BPF_PROG(handle_task_rename, struct task_struct *task, const char *comm)
{
	struct bt_cpu_state *st;
	void *ring;
	struct bt_ev_task *e = bt_begin_task(BT_EV_TASK_RENAME, &st, &ring);

	if (!e)
		return 0;
	e->tid = task->pid;
	e->tgid = task->tgid;
	/* The new name can be longer than a comm (exec passes the file's base
	 * name): truncate as __set_task_comm() does, pad with NULs. */
	__builtin_memset(e->comm, 0, sizeof(e->comm));
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), comm);
	bt_commit(e, st, ring, BT_GROUP_SCHED, BT_IRQS_ON);
	return 0;
}

/* ---- irq ----------------------------------------------------------------------- */

static __always_inline int bt_emit_irq(__u16 type, __u32 irq, __s32 ret, int irqs_off)
{
	struct bt_ev_irq *e;
	struct bt_cpu_state *st;
	void *ring;

	if (bt_filtering() && !bt_current_match())
		return 0;
	e = bt_begin(sizeof(*e), BT_GROUP_IRQ, type, irqs_off, &st, &ring);
	if (!e)
		return 0;
	e->irq = irq;
	e->ret = ret;
	bt_commit(e, st, ring, BT_GROUP_IRQ, irqs_off);
	return 0;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(handle_irq_handler_entry, int irq, struct irqaction *action)
{
	return bt_emit_irq(BT_EV_IRQ_ENTRY, irq, 0, BT_IRQS_OFF);
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(handle_irq_handler_exit, int irq, struct irqaction *action, int ret)
{
	return bt_emit_irq(BT_EV_IRQ_EXIT, irq, ret, BT_IRQS_OFF);
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(handle_softirq_entry, unsigned int vec_nr)
{
	return bt_emit_irq(BT_EV_SOFTIRQ_ENTRY, vec_nr, 0, BT_IRQS_ON);
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(handle_softirq_exit, unsigned int vec_nr)
{
	return bt_emit_irq(BT_EV_SOFTIRQ_EXIT, vec_nr, 0, BT_IRQS_ON);
}

/* ---- power ------------------------------------------------------------------- */

static __always_inline int bt_emit_power(__u16 type, __u32 state, __u32 cpu_id)
{
	struct bt_ev_power *e;
	struct bt_cpu_state *st;
	void *ring;

	e = bt_begin(sizeof(*e), BT_GROUP_POWER, type, BT_IRQS_ON, &st, &ring);
	if (!e)
		return 0;
	e->state = state;
	e->cpu_id = cpu_id;
	bt_commit(e, st, ring, BT_GROUP_POWER, BT_IRQS_ON);
	return 0;
}

SEC("tp_btf/cpu_frequency")
int BPF_PROG(handle_cpu_frequency, unsigned int frequency, unsigned int cpu_id)
{
	return bt_emit_power(BT_EV_CPU_FREQUENCY, frequency, cpu_id);
}

SEC("tp_btf/cpu_idle")
int BPF_PROG(handle_cpu_idle, unsigned int state, unsigned int cpu_id)
{
	return bt_emit_power(BT_EV_CPU_IDLE, state, cpu_id);
}

/* ---- syscalls ------------------------------------------------------------------ */

/* Whether the current task's system calls are recorded: not the recorder's
 * own (the dump writer's writes above all would push the events it is
 * dumping out of the buffer), and the filter. */
static __always_inline bool bt_syscall_wanted(__u64 pid_tgid)
{
	if (self_tgid && (pid_tgid >> 32) == self_tgid)
		return false;
	return !bt_filtering() || bt_current_match();
}

/* Set by the loader once both halves are attached: an enter recorded while
 * its exit's program was not yet attached would be shown as a call that
 * never returned. A call entered before shows as a lone exit. */
__u32 sys_pairs_live = 0;

/* sys_enter is held in the CPU's slot, not emitted (emit.bpf.h: deferred
 * sys_enter); its seq and time are taken now. */
SEC("tp_btf/sys_enter")
int BPF_PROG(handle_sys_enter, struct pt_regs *regs, long id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct bt_cpu_state *st;
	__u32 zero = 0;

	if (!sys_pairs_live || !bt_syscall_wanted(pid_tgid) || bt_stopped)
		return 0;
	st = bpf_map_lookup_elem(&cpu_state, &zero);
	if (!st)
		return 0;
	/* An enter whose exit never came here (exit, exec, a migration): out,
	 * after the batch. Not the batch alone: the new enter is held, not
	 * emitted, so the batch may wait (flushing it here sent every pair
	 * out alone: batches of one). */
	if (st->sys.armed)
		bt_sys_flush(st);
	st->sys.seq = (__u32)__sync_fetch_and_add(&st->seq, 1);
	st->sys.ts_ns = bpf_ktime_get_boot_ns();
	st->sys.id = id;
	st->sys.tid = (__u32)pid_tgid;
	st->sys.tgid = pid_tgid >> 32;
	/* Armed last: a program nesting here sees a complete slot or none.
	 * Pairs with the exchange in bt_sys_flush() and below. */
	asm volatile("" ::: "memory");
	st->sys.armed = 1;
	return 0;
}

/* A pair record: the exit now, its enter from the CPU's slot. */
static __always_inline void fill_pair(struct bt_raw_sys_pair *p, const struct bt_cpu_state *st, __u64 seq,
				      __u64 pid_tgid, __u32 cpu, long id, long ret)
{
	p->h.ts_ns = bpf_ktime_get_boot_ns();
	p->h.seq = (__u32)seq;
	p->h.tid = (__u32)pid_tgid;
	p->h.tgid = pid_tgid >> 32;
	p->h.cpu = cpu;
	p->h.type = BT_RAW_SYS_PAIR;
	p->id = id;
	p->ret = ret;
	p->enter_ts = st->sys.ts_ns;
	p->enter_id = st->sys.id;
	p->enter_seq = st->sys.seq;
	p->reserved = 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(handle_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct bt_raw_sys_pair *p = NULL;
	struct bt_ev_syscall *e;
	struct bt_cpu_state *st;
	__u32 zero = 0, cpu;
	void *ring;

	if (unwind_mmap_in_sys_exit && bt_syscall_nr(regs) == BT_NR_MMAP)
		bt_uw_mmap_done(ret); /* before the filter: every process's mmap */
	if (!sys_pairs_live || !bt_syscall_wanted(pid_tgid) || bt_stopped)
		return 0;
	st = bpf_map_lookup_elem(&cpu_state, &zero);
	if (!st)
		return 0;
	if (st->sys.armed && st->sys.tid == (__u32)pid_tgid && __sync_lock_test_and_set(&st->sys.armed, 0)) {
		/* Our own enter, taken: both in one record, batched. */
		__u64 seq = __sync_fetch_and_add(&st->seq, 1), i;
		struct bt_sys_batch *b = bpf_map_lookup_elem(&sys_batch, &zero);

		if (b && sys_batch_max > 1 && (i = b->count) < BT_SYS_BATCH) {
			cpu = bpf_get_smp_processor_id();
			p = &b->pairs[i];
			fill_pair(p, st, seq, pid_tgid, cpu, bt_syscall_nr(regs), ret);
			/* Partner of the exchange in bt_sys_batch_flush(): it
			 * fails only if a program nesting here took pairs[0..i). */
			if (__sync_val_compare_and_swap(&b->count, i, i + 1) == i) {
				if (i + 1 >= sys_batch_max)
					bt_sys_batch_flush();
				return 0;
			}
			/* Then this pair goes alone, after them. */
			bt_sys_pairs_out(st, p, 1, p->h.seq);
			return 0;
		}
		p = NULL;
		cpu = bpf_get_smp_processor_id();
		ring = bpf_map_lookup_elem(&rings, &cpu);
		if (ring)
			p = bpf_ringbuf_reserve(ring, sizeof(*p), 0);
		if (!p) {
			__sync_fetch_and_add(&st->drops[BT_GROUP_SYSCALLS], 2);
			return 0;
		}
		fill_pair(p, st, seq, pid_tgid, cpu, bt_syscall_nr(regs), ret);
		bt_commit_n(p, st, ring, BT_GROUP_SYSCALLS, BT_IRQS_ON, 2);
		return 0;
	}
	/* No enter of ours held: it is in the ring already (bt_begin flushes
	 * whatever is held). */
	e = bt_begin(sizeof(*e), BT_GROUP_SYSCALLS, BT_EV_SYS_EXIT, BT_IRQS_ON, &st, &ring);
	if (!e)
		return 0;
	e->id = bt_syscall_nr(regs);
	e->ret = ret;
	bt_commit(e, st, ring, BT_GROUP_SYSCALLS, BT_IRQS_ON);
	return 0;
}

/* Not attached: the drain runs it on each CPU (BPF_PROG_TEST_RUN) before a
 * dump's pass and the last one, so they have the batched pairs (emit.bpf.h).
 * Also when stopped: what the batches hold was emitted before. */
SEC("raw_tp")
int handle_sys_batch_flush(void *ctx)
{
	return bt_sys_batch_flush();
}

/* bpf_probe_read_kernel() is a GPL-only helper. */
char LICENSE[] SEC("license") = "Dual MIT/GPL";
