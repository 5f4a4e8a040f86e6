// SPDX-License-Identifier: MIT
/*
 * export_json_kernel.c - kernel events in the JSON trace: each thread run as
 * an "X" on its CPU (ending at the switch that switched it out), IRQ and
 * softirq entry/exit pairs, wakeups/migrations/fork/exec/exit/rename as
 * instants, syscalls as "X" per enter/exit pair, CPU frequency and idle
 * counters, and each seq gap as a "LOST n events" slice.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_json_int.h"

/* ---- events ------------------------------------------------------------------------ */

static const char *irq_name(char *buf, size_t len, int soft, uint32_t irq)
{
	const char *sn = soft ? bt_softirq_name(irq) : NULL;
	if (sn)
		snprintf(buf, len, "%s", sn);
	else
		snprintf(buf, len, "%s %u", soft ? "softirq" : "IRQ", irq);
	return buf;
}

static void irq_instant(struct jx *j, uint32_t cpu, uint16_t type, uint32_t irq, uint64_t ts, int ret, int has_ret)
{
	char name[48];
	int soft = type == BT_EV_SOFTIRQ_ENTRY || type == BT_EV_SOFTIRQ_EXIT;
	jx_ev_open(j, "i", irq_name(name, sizeof(name), soft, irq), bt_event_name(type), ts, JSON_CPU_PID, IRQ_TID(cpu));
	JW(j, ",\"s\":\"t\"");
	jx_arg_u(j, soft ? "vec" : "irq", irq);
	if (has_ret)
		jx_arg_i(j, "ret", ret);
	jx_arg_b(j, "unmatched", 1);
	jx_ev_close(j);
}

void jx_irq_flush(struct jx *j, uint32_t c)
{
	struct jcpu *cs = &j->cpu[c];
	for (uint32_t i = 0; i < cs->nirq; i++)
		irq_instant(j, c, cs->irq[i].type, cs->irq[i].irq, cs->irq[i].ts, 0, 0);
	cs->nirq = 0;
}

void jx_put_irq(struct jx *j, const struct bt_event_hdr *h)
{
	const struct bt_ev_irq *e = (const void *)h;
	struct jcpu *cs = &j->cpu[h->cpu];
	int entry = h->type == BT_EV_IRQ_ENTRY || h->type == BT_EV_SOFTIRQ_ENTRY;
	int soft = h->type == BT_EV_SOFTIRQ_ENTRY || h->type == BT_EV_SOFTIRQ_EXIT;
	uint16_t etype = soft ? BT_EV_SOFTIRQ_ENTRY : BT_EV_IRQ_ENTRY;

	if (entry) {
		if (cs->nirq == IRQ_STACK) {
			irq_instant(j, h->cpu, h->type, e->irq, h->ts_ns, 0, 0);
			return;
		}
		cs->irq[cs->nirq++] = (struct jirq){ .type = etype, .irq = e->irq, .ts = h->ts_ns };
		return;
	}
	if (!cs->nirq || cs->irq[cs->nirq - 1].type != etype || cs->irq[cs->nirq - 1].irq != e->irq) {
		irq_instant(j, h->cpu, h->type, e->irq, h->ts_ns, e->ret, !soft);
		return;
	}
	struct jirq *o = &cs->irq[--cs->nirq];
	char name[48];
	jx_ev_open(j, "X", irq_name(name, sizeof(name), soft, e->irq),
		soft ? "softirq_entry,softirq_exit" : "irq_handler_entry,irq_handler_exit", o->ts, JSON_CPU_PID,
		IRQ_TID(h->cpu));
	jx_ev_dur(j, o->ts, h->ts_ns);
	jx_arg_u(j, soft ? "vec" : "irq", e->irq);
	if (!soft)
		jx_arg_s(j, "ret", e->ret == 1 ? "handled" : e->ret == 0 ? "unhandled" : "other", 16);
	jx_ev_close(j);
}

void jx_put_switch(struct jx *j, const struct bt_ev_sched_switch *e, int had_start)
{
	const struct bt_event_hdr *h = &e->h;
	struct jcpu *cs = &j->cpu[h->cpu];
	char st[32];

	/* A run is drawn from what says when prev began running: the switch
	 * to it, or the CPU's first event if that was prev's. Anything else
	 * (a dump of --comm tasks only: the switches in between are not
	 * there) would be a run of another task's time. */
	if (had_start && (cs->have_run_tid ? cs->run_tid : cs->first_tid) != e->prev_tid)
		had_start = 0;
	if (had_start) {
		jx_ev_open(j, "X", jx_comm(j, e->prev_tid, h->cpu), "sched_switch", cs->run_start, JSON_CPU_PID,
			CPU_TID(h->cpu));
		jx_ev_dur(j, cs->run_start, h->ts_ns);
	} else {
		jx_ev_open(j, "i", jx_comm(j, e->prev_tid, h->cpu), "sched_switch", h->ts_ns, JSON_CPU_PID, CPU_TID(h->cpu));
		JW(j, ",\"s\":\"t\"");
	}
	jx_arg_u(j, "tid", e->prev_tid);
	jx_arg_u(j, "pid", jx_pid_of(j, e->prev_tid, 0));
	jx_arg_u(j, "prio", e->prev_prio);
	jx_arg_s(j, "end_state", bt_prev_state_str(e->prev_state, st, sizeof(st)), sizeof(st));
	jx_arg_u(j, "next_tid", e->next_tid);
	jx_arg_s(j, "next_comm", jx_comm(j, e->next_tid, h->cpu), BT_TASK_COMM_LEN);
	jx_ev_close(j);
	cs->run_start = h->ts_ns;
	cs->run_valid = 1;
	cs->run_tid = e->next_tid;
	cs->have_run_tid = 1;
}

/* The run of the CPU's current task up to `to` (a gap or the end). */
void jx_run_tail(struct jx *j, uint32_t c, uint64_t to, int truncated)
{
	struct jcpu *cs = &j->cpu[c];
	if (!cs->have_run_tid || !cs->run_valid)
		return;
	jx_ev_open(j, "X", jx_comm(j, cs->run_tid, c), "sched", cs->run_start, JSON_CPU_PID, CPU_TID(c));
	jx_ev_dur(j, cs->run_start, to);
	jx_arg_u(j, "tid", cs->run_tid);
	jx_arg_u(j, "pid", jx_pid_of(j, cs->run_tid, 0));
	jx_arg_b(j, truncated ? "cut_by_lost_events" : "running_at_end", 1);
	jx_ev_close(j);
}

static void thread_instant(struct jx *j, const struct bt_event_hdr *h, uint32_t tid, uint32_t tgid)
{
	jx_ev_open(j, "i", bt_event_name(h->type), bt_event_name(h->type), h->ts_ns, jx_pid_of(j, tid, tgid), tid);
	JW(j, ",\"s\":\"t\"");
	jx_arg_u(j, "cpu", h->cpu);
}

int jx_put_task_event(struct jx *j, const struct bt_event_hdr *h)
{
	char c1[BT_COMM_LEN + 1];
	switch (h->type) {
	case BT_EV_SCHED_WAKEUP:
	case BT_EV_SCHED_WAKEUP_NEW:
	case BT_EV_SCHED_WAKING: {
		const struct bt_ev_sched_wakeup *e = (const void *)h;
		thread_instant(j, h, e->tid, 0);
		jx_arg_s(j, "comm", jx_comm(j, e->tid, e->target_cpu), BT_TASK_COMM_LEN);
		jx_arg_u(j, "prio", e->prio);
		jx_arg_u(j, "target_cpu", e->target_cpu);
		jx_arg_u(j, "waker_tid", h->tid);
		break;
	}
	case BT_EV_SCHED_MIGRATE: {
		const struct bt_ev_sched_migrate *e = (const void *)h;
		thread_instant(j, h, e->tid, 0);
		jx_arg_u(j, "orig_cpu", e->orig_cpu);
		jx_arg_u(j, "dest_cpu", e->dest_cpu);
		break;
	}
	case BT_EV_PROCESS_FORK: {
		const struct bt_ev_task *e = (const void *)h;
		thread_instant(j, h, h->tid, h->tgid);
		memcpy(c1, e->comm, BT_COMM_LEN);
		c1[BT_COMM_LEN] = '\0';
		jx_arg_u(j, "child_tid", e->tid);
		jx_arg_u(j, "child_pid", e->tgid);
		jx_arg_s(j, "child_comm", c1, BT_COMM_LEN);
		break;
	}
	case BT_EV_PROCESS_EXEC:
	case BT_EV_TASK_RENAME: {
		const struct bt_ev_task *e = (const void *)h;
		uint32_t tid = h->type == BT_EV_PROCESS_EXEC ? h->tid : e->tid;
		thread_instant(j, h, tid, h->type == BT_EV_PROCESS_EXEC ? h->tgid : e->tgid);
		jx_arg_s(j, "oldcomm", jx_comm(j, tid, h->cpu), BT_TASK_COMM_LEN);
		jx_arg_s(j, "newcomm", e->comm, BT_COMM_LEN);
		if (h->type == BT_EV_PROCESS_EXEC)
			jx_arg_u(j, "old_tid", e->tid);
		break;
	}
	case BT_EV_PROCESS_EXIT: {
		const struct bt_ev_task *e = (const void *)h;
		thread_instant(j, h, e->tid, e->tgid);
		jx_arg_s(j, "comm", jx_comm(j, e->tid, h->cpu), BT_TASK_COMM_LEN);
		break;
	}
	default:
		return 0;
	}
	jx_ev_close(j);
	return 0;
}

void jx_sys_instant(struct jx *j, uint16_t type, uint32_t tid, uint32_t tgid, uint64_t ts, int64_t id,
		    int64_t ret, int has_ret)
{
	char name[48];
	snprintf(name, sizeof(name), "syscall %" PRId64, id);
	jx_ev_open(j, "i", name, bt_event_name(type), ts, jx_pid_of(j, tid, tgid), tid);
	JW(j, ",\"s\":\"t\"");
	jx_arg_i(j, "id", id);
	if (has_ret)
		jx_arg_i(j, "ret", ret);
	jx_arg_b(j, "unmatched", 1);
	jx_ev_close(j);
}

int jx_put_syscall(struct jx *j, const struct bt_event_hdr *h)
{
	const struct bt_ev_syscall *e = (const void *)h;
	struct jthread *t = jx_thread_state(j, h->tid);
	char name[48];
	if (!t)
		return -ENOMEM;
	if (h->type == BT_EV_SYS_ENTER) {
		if (t->sys_open)
			jx_sys_instant(j, BT_EV_SYS_ENTER, h->tid, h->tgid, t->sys_ts, t->sys_id, 0, 0);
		t->sys_open = 1;
		t->tgid = h->tgid;
		t->sys_id = e->id;
		t->sys_ts = h->ts_ns;
		return 0;
	}
	if (!t->sys_open || t->sys_id != e->id) {
		if (t->sys_open)
			jx_sys_instant(j, BT_EV_SYS_ENTER, h->tid, h->tgid, t->sys_ts, t->sys_id, 0, 0);
		t->sys_open = 0;
		jx_sys_instant(j, BT_EV_SYS_EXIT, h->tid, h->tgid, h->ts_ns, e->id, e->ret, 1);
		return 0;
	}
	t->sys_open = 0;
	snprintf(name, sizeof(name), "syscall %" PRId64, (int64_t)e->id);
	jx_ev_open(j, "X", name, "sys_enter,sys_exit", t->sys_ts, jx_pid_of(j, h->tid, h->tgid), h->tid);
	jx_ev_dur(j, t->sys_ts, h->ts_ns);
	jx_arg_i(j, "id", e->id);
	jx_arg_i(j, "ret", e->ret);
	jx_ev_close(j);
	return 0;
}

void jx_put_power(struct jx *j, const struct bt_event_hdr *h)
{
	const struct bt_ev_power *e = (const void *)h;
	char name[48];
	int freq = h->type == BT_EV_CPU_FREQUENCY;
	snprintf(name, sizeof(name), "cpu %u %s", e->cpu_id, freq ? "freq" : "idle");
	jx_ev_open(j, "C", name, bt_event_name(h->type), h->ts_ns, JSON_CPU_PID, INFO_TID);
	if (freq)
		jx_arg_u(j, "kHz", e->state);
	else
		jx_arg_i(j, "state", (int32_t)e->state);
	jx_ev_close(j);
}

void jx_put_gap(struct jx *j, const struct bt_seq_gap *g, uint64_t ts)
{
	struct jcpu *cs = &j->cpu[g->cpu];
	uint64_t from = cs->have_ts ? cs->last_ts : ts;
	char name[48];

	/* what was open on this CPU cannot be paired across the hole */
	jx_run_tail(j, g->cpu, from, 1);
	cs->run_valid = 0;
	cs->have_run_tid = 0;
	jx_irq_flush(j, g->cpu);
	snprintf(name, sizeof(name), "LOST %" PRIu64 " events", g->missing);
	jx_ev_open(j, "X", name, "btrace_loss", from, JSON_CPU_PID, LOSS_TID(g->cpu));
	jx_ev_dur(j, from, ts);
	jx_arg_u(j, "cpu", g->cpu);
	jx_arg_u(j, "first_missing_seq", g->from_seq);
	jx_arg_u(j, "missing", g->missing);
	jx_ev_close(j);
	j->st->gaps++;
	j->st->missing += g->missing;
}
