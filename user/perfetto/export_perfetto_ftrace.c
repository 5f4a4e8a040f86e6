// SPDX-License-Identifier: MIT
/*
 * export_perfetto_ftrace.c - kernel events as FtraceEvents in per-CPU
 * FtraceEventBundles (sched_switch in CompactSched where the importer can
 * infer its prev_* fields), and each seq gap as a "LOST n events" slice with
 * the bundle's lost_events flag. The bundles are per CPU and held until full,
 * so this file owns the pending-bytes accounting.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_perfetto_int.h"

/* ---- ftrace bundles ---------------------------------------------------------------- */

static void compact_reset(struct compact *cs)
{
	pbw_reset(&cs->ts);
	pbw_reset(&cs->state);
	pbw_reset(&cs->pid);
	pbw_reset(&cs->prio);
	pbw_reset(&cs->comm);
	cs->n = 0;
	cs->nintern = 0;
	cs->last_ts = 0;
}

void pf_compact_free(struct compact *cs)
{
	pbw_free(&cs->ts);
	pbw_free(&cs->state);
	pbw_free(&cs->pid);
	pbw_free(&cs->prio);
	pbw_free(&cs->comm);
	free(cs->intern);
}

static size_t compact_bytes(const struct compact *cs)
{
	return pbw_len(&cs->ts) + pbw_len(&cs->state) + pbw_len(&cs->pid) + pbw_len(&cs->prio) +
	       pbw_len(&cs->comm) + cs->nintern * BT_TASK_COMM_LEN;
}

static int bundle_flush(struct pf *f, uint32_t c)
{
	struct cpub *b = &f->cpu[c];
	struct compact *cs = &b->cs;
	struct pbw *w = &b->w;
	int r;

	if (!b->open)
		return 0;
	if (b->lost)
		pbw_bool(w, FB_LOST_EVENTS, 1);
	if (cs->n) {
		if (pbw_error(&cs->ts) || pbw_error(&cs->state) || pbw_error(&cs->pid) || pbw_error(&cs->prio) ||
		    pbw_error(&cs->comm)) {
			snprintf(f->err, f->errlen, "out of memory encoding the trace");
			return -ENOMEM;
		}
		pbw_begin(w, FB_COMPACT_SCHED);
		for (uint32_t i = 0; i < cs->nintern; i++)
			pbw_utf8(w, CSCH_INTERN_TABLE, cs->intern[i], BT_TASK_COMM_LEN);
		pbw_bytes(w, CSCH_SWITCH_TIMESTAMP, pbw_data(&cs->ts), pbw_len(&cs->ts));
		pbw_bytes(w, CSCH_SWITCH_PREV_STATE, pbw_data(&cs->state), pbw_len(&cs->state));
		pbw_bytes(w, CSCH_SWITCH_NEXT_PID, pbw_data(&cs->pid), pbw_len(&cs->pid));
		pbw_bytes(w, CSCH_SWITCH_NEXT_PRIO, pbw_data(&cs->prio), pbw_len(&cs->prio));
		pbw_bytes(w, CSCH_SWITCH_NEXT_COMM_INDEX, pbw_data(&cs->comm), pbw_len(&cs->comm));
		pbw_end(w);
	}
	if (f->pending > f->st->max_pending)
		f->st->max_pending = f->pending;
	r = pf_packet_flush(f, w);
	f->pending -= b->held;
	b->held = 0;
	compact_reset(cs);
	b->open = 0;
	b->n = 0;
	b->lost = 0;
	return r;
}

int pf_flush_all(struct pf *f)
{
	for (uint32_t c = 0; c < f->ncpus; c++) {
		int r = bundle_flush(f, c);
		if (r < 0)
			return r;
	}
	return 0;
}

struct pbw *pf_bundle_for(struct pf *f, uint32_t c)
{
	struct cpub *b = &f->cpu[c];
	if (!b->open) {
		pf_packet_begin(f, &b->w, SEQ_FTRACE, 0);
		pbw_begin(&b->w, TP_FTRACE_EVENTS);
		pbw_uint(&b->w, FB_CPU, c);
		b->open = 1;
	}
	return &b->w;
}

/* After an event went into CPU c's bundle: account, flush when full. */
static int bundle_added(struct pf *f, uint32_t c)
{
	struct cpub *b = &f->cpu[c];
	size_t now = pbw_len(&b->w) + compact_bytes(&b->cs);
	f->pending += now - b->held;
	b->held = now;
	b->n++;
	if (b->n >= f->bundle_events)
		return bundle_flush(f, c);
	if (f->pending > MAX_PENDING)
		return pf_flush_all(f);
	return 0;
}

static void fe_begin(struct pbw *w, const struct bt_event_hdr *h, uint32_t field)
{
	pbw_begin(w, FB_EVENT);
	/* timestamp, pid, then the event: the importer's fast path expects this order */
	pbw_uint(w, FE_TIMESTAMP, h->ts_ns);
	pbw_uint(w, FE_PID, h->tid);
	pbw_begin(w, field);
}

static void fe_end(struct pbw *w)
{
	pbw_end(w); /* the event */
	pbw_end(w); /* FtraceEvent */
}

/* sched_switch prev_state as the 4.14+ tracepoint reports it: one TASK_REPORT
 * bit (the highest, as __task_state_index() picks), 0x80 idle, 0x100
 * (TASK_REPORT_MAX) preempted. The recorder writes 0 for preempted. */
static int64_t tp_prev_state(uint32_t s)
{
	uint32_t bits = s & 0xff;
	if (!bits)
		return 0x100;
	uint32_t top = 1;
	while (bits >>= 1)
		top <<= 1;
	return top;
}

static uint32_t intern_comm(struct compact *cs, const char *comm)
{
	char key[BT_TASK_COMM_LEN] = { 0 };
	strncpy(key, comm, sizeof(key) - 1);
	for (uint32_t i = 0; i < cs->nintern; i++)
		if (!memcmp(cs->intern[i], key, sizeof(key)))
			return i;
	if (cs->nintern == cs->capintern) {
		uint32_t cap = cs->capintern ? cs->capintern * 2 : 64;
		void *p = realloc(cs->intern, cap * sizeof(*cs->intern));
		if (!p)
			return UINT32_MAX;
		cs->intern = p;
		cs->capintern = cap;
	}
	memcpy(cs->intern[cs->nintern], key, sizeof(key));
	return cs->nintern++;
}

/* convert -p: the other side of a switch of a selected thread is idle (pid
 * 0), so each CPU's chain stays whole (the importer flags a prev_pid that
 * is not the CPU's previous next_pid: the tasks between were left out). */
static const struct bt_ev_sched_switch *switch_selected(struct pf *f, const struct bt_ev_sched_switch *e,
							 struct bt_ev_sched_switch *buf)
{
	if (!f->p->pidf)
		return e;
	*buf = *e;
	if (!bt_export_selected(f->p, e->prev_tid)) {
		buf->prev_tid = buf->h.tid = buf->h.tgid = 0; /* the event's pid too: no thread for it */
		buf->prev_prio = 120;
		buf->prev_state = 0;
	}
	if (!bt_export_selected(f->p, e->next_tid)) {
		buf->next_tid = 0;
		buf->next_prio = 120;
	}
	return buf;
}

static int put_sched_switch(struct pf *f, const struct bt_ev_sched_switch *e)
{
	struct bt_ev_sched_switch sel;
	e = switch_selected(f, e, &sel);
	const struct bt_event_hdr *h = &e->h;
	struct cpub *b = &f->cpu[h->cpu];
	struct pbw *w = pf_bundle_for(f, h->cpu);
	int64_t state = tp_prev_state(e->prev_state);

	/* Compact only when the importer infers prev_* right: the CPU's last
	 * switch (written, in time order, no gap since) switched to this prev.
	 * A strictly later time keeps the importer's order (it sorts the compact
	 * and the full events of a CPU by time) unambiguous. */
	if (f->o->compact_sched && b->have_last && b->last_next_tid == e->prev_tid &&
	    b->last_next_prio == e->prev_prio && h->ts_ns > b->last_switch_ts) {
		struct compact *cs = &b->cs;
		uint32_t ci = intern_comm(cs, pf_comm_of(f, e->next_tid, h->cpu));
		if (ci == UINT32_MAX) {
			snprintf(f->err, f->errlen, "out of memory");
			return -ENOMEM;
		}
		pbw_raw_varint(&cs->ts, h->ts_ns - cs->last_ts); /* first one absolute */
		cs->last_ts = h->ts_ns;
		pbw_raw_varint(&cs->state, (uint64_t)state);
		pbw_raw_varint(&cs->pid, (uint64_t)(int64_t)(int32_t)e->next_tid);
		pbw_raw_varint(&cs->prio, e->next_prio);
		pbw_raw_varint(&cs->comm, ci);
		cs->n++;
	} else {
		fe_begin(w, h, FE_SCHED_SWITCH);
		pbw_utf8(w, SW_PREV_COMM, pf_comm_of(f, e->prev_tid, h->cpu), BT_TASK_COMM_LEN);
		pbw_int(w, SW_PREV_PID, (int32_t)e->prev_tid);
		pbw_int(w, SW_PREV_PRIO, e->prev_prio);
		pbw_int(w, SW_PREV_STATE, state);
		pbw_utf8(w, SW_NEXT_COMM, pf_comm_of(f, e->next_tid, h->cpu), BT_TASK_COMM_LEN);
		pbw_int(w, SW_NEXT_PID, (int32_t)e->next_tid);
		pbw_int(w, SW_NEXT_PRIO, e->next_prio);
		fe_end(w);
	}
	b->have_last = 1;
	b->last_switch_ts = h->ts_ns;
	b->last_next_tid = e->next_tid;
	b->last_next_prio = e->next_prio;
	return bundle_added(f, h->cpu);
}

int pf_put_ftrace(struct pf *f, const struct bt_event_hdr *h)
{
	struct pbw *w;
	char num[16];

	if (h->type == BT_EV_SCHED_SWITCH)
		return put_sched_switch(f, (const void *)h);
	w = pf_bundle_for(f, h->cpu);
	switch (h->type) {
	case BT_EV_SCHED_WAKEUP:
	case BT_EV_SCHED_WAKEUP_NEW:
	case BT_EV_SCHED_WAKING: {
		const struct bt_ev_sched_wakeup *e = (const void *)h;
		fe_begin(w, h, h->type == BT_EV_SCHED_WAKEUP ? FE_SCHED_WAKEUP
			       : h->type == BT_EV_SCHED_WAKING ? FE_SCHED_WAKING : FE_SCHED_WAKEUP_NEW);
		pbw_utf8(w, WK_COMM, pf_comm_of(f, e->tid, e->target_cpu), BT_TASK_COMM_LEN);
		pbw_int(w, WK_PID, (int32_t)e->tid);
		pbw_int(w, WK_PRIO, e->prio);
		pbw_int(w, WK_TARGET_CPU, e->target_cpu);
		break;
	}
	case BT_EV_SCHED_MIGRATE: {
		const struct bt_ev_sched_migrate *e = (const void *)h;
		fe_begin(w, h, FE_SCHED_MIGRATE_TASK);
		pbw_utf8(w, MG_COMM, pf_comm_of(f, e->tid, h->cpu), BT_TASK_COMM_LEN);
		pbw_int(w, MG_PID, (int32_t)e->tid);
		pbw_int(w, MG_ORIG_CPU, e->orig_cpu);
		pbw_int(w, MG_DEST_CPU, e->dest_cpu);
		break;
	}
	case BT_EV_PROCESS_FORK: {
		const struct bt_ev_task *e = (const void *)h;
		fe_begin(w, h, FE_SCHED_PROCESS_FORK);
		pbw_utf8(w, FK_PARENT_COMM, pf_comm_of(f, h->tid, h->cpu), BT_TASK_COMM_LEN);
		pbw_int(w, FK_PARENT_PID, (int32_t)h->tid);
		pbw_utf8(w, FK_CHILD_COMM, e->comm, BT_COMM_LEN);
		pbw_int(w, FK_CHILD_PID, (int32_t)e->tid);
		break;
	}
	case BT_EV_PROCESS_EXEC: {
		const struct bt_ev_task *e = (const void *)h;
		fe_begin(w, h, FE_SCHED_PROCESS_EXEC);
		/* the recorder keeps the new comm, not the path */
		pbw_utf8(w, EX_FILENAME, e->comm, BT_COMM_LEN);
		pbw_int(w, EX_PID, (int32_t)h->tid);
		pbw_int(w, EX_OLD_PID, (int32_t)e->tid);
		break;
	}
	case BT_EV_PROCESS_EXIT: {
		const struct bt_ev_task *e = (const void *)h;
		fe_begin(w, h, FE_SCHED_PROCESS_EXIT);
		pbw_utf8(w, XT_COMM, pf_comm_of(f, e->tid, h->cpu), BT_TASK_COMM_LEN);
		pbw_int(w, XT_PID, (int32_t)e->tid);
		pbw_int(w, XT_TGID, (int32_t)e->tgid);
		break;
	}
	case BT_EV_TASK_RENAME: {
		const struct bt_ev_task *e = (const void *)h;
		fe_begin(w, h, FE_TASK_RENAME);
		pbw_int(w, RN_PID, (int32_t)e->tid);
		pbw_utf8(w, RN_OLDCOMM, pf_comm_of(f, e->tid, h->cpu), BT_TASK_COMM_LEN);
		pbw_utf8(w, RN_NEWCOMM, e->comm, BT_COMM_LEN);
		break;
	}
	case BT_EV_IRQ_ENTRY: {
		const struct bt_ev_irq *e = (const void *)h;
		fe_begin(w, h, FE_IRQ_HANDLER_ENTRY);
		pbw_int(w, IRQ_IRQ, (int32_t)e->irq);
		/* no handler name recorded: the UI shows "IRQ (<number>)" */
		snprintf(num, sizeof(num), "%u", e->irq);
		pbw_string(w, IRQ_NAME, num);
		break;
	}
	case BT_EV_IRQ_EXIT: {
		const struct bt_ev_irq *e = (const void *)h;
		fe_begin(w, h, FE_IRQ_HANDLER_EXIT);
		pbw_int(w, IRQ_IRQ, (int32_t)e->irq);
		pbw_int(w, IRQ_RET, e->ret);
		break;
	}
	case BT_EV_SOFTIRQ_ENTRY:
	case BT_EV_SOFTIRQ_EXIT: {
		const struct bt_ev_irq *e = (const void *)h;
		fe_begin(w, h, h->type == BT_EV_SOFTIRQ_ENTRY ? FE_SOFTIRQ_ENTRY : FE_SOFTIRQ_EXIT);
		pbw_uint(w, SIRQ_VEC, e->irq);
		break;
	}
	case BT_EV_CPU_FREQUENCY:
	case BT_EV_CPU_IDLE: {
		const struct bt_ev_power *e = (const void *)h;
		fe_begin(w, h, h->type == BT_EV_CPU_FREQUENCY ? FE_CPU_FREQUENCY : FE_CPU_IDLE);
		pbw_uint(w, PW_STATE, e->state);
		pbw_uint(w, PW_CPU_ID, e->cpu_id);
		break;
	}
	case BT_EV_SYS_ENTER: {
		const struct bt_ev_syscall *e = (const void *)h;
		fe_begin(w, h, FE_SYS_ENTER);
		pbw_int(w, SYS_ID, e->id);
		break;
	}
	case BT_EV_SYS_EXIT: {
		const struct bt_ev_syscall *e = (const void *)h;
		fe_begin(w, h, FE_SYS_EXIT);
		pbw_int(w, SYS_ID, e->id);
		pbw_int(w, SYS_RET, e->ret);
		break;
	}
	default:
		return 0;
	}
	fe_end(w);
	return bundle_added(f, h->cpu);
}

/* ---- seq gaps ------------------------------------------------------------------------ */

int pf_put_gap(struct pf *f, const struct bt_seq_gap *g, uint64_t ts)
{
	struct cpub *b = &f->cpu[g->cpu];
	struct pbw *w = &f->pkt;
	char name[64];
	int r;

	if (!f->loss_tracks[g->cpu]) {
		snprintf(name, sizeof(name), "btrace-bpf: lost events CPU %u", g->cpu);
		r = pf_track_descriptor(f, UUID_LOSS(g->cpu), UUID_ROOT, name);
		if (r < 0)
			return r;
		f->loss_tracks[g->cpu] = 1;
	}
	uint64_t from = b->have_ts ? b->last_ts : ts;
	snprintf(name, sizeof(name), "LOST %" PRIu64 " events", g->missing);
	pf_te_begin(f, from, UUID_LOSS(g->cpu), TE_TYPE_SLICE_BEGIN, name, "btrace");
	pf_ann_uint(f, "cpu", g->cpu);
	pf_ann_uint(f, "first_missing_seq", g->from_seq);
	pf_ann_uint(f, "missing", g->missing);
	if ((r = pf_packet_flush(f, w)) < 0)
		return r;
	pf_te_begin(f, ts, UUID_LOSS(g->cpu), TE_TYPE_SLICE_END, NULL, "btrace");
	if ((r = pf_packet_flush(f, w)) < 0)
		return r;
	/* the importer flags the CPU's data loss; and compact switches must
	 * not infer prev_* across the hole */
	pf_bundle_for(f, g->cpu);
	b->lost = 1;
	b->have_last = 0;
	f->st->gaps++;
	f->st->missing += g->missing;
	return 0;
}
