// SPDX-License-Identifier: MIT
/*
 * export_json.c - a dump in the Chrome JSON trace event format (object form):
 *
 *   {"displayTimeUnit":"ns","metadata":{...loss counters...},"traceEvents":[
 *   {"ph":"M",...},
 *   ...]}
 *
 * Timestamps are CLOCK_BOOTTIME in microseconds, exact to the nanosecond in
 * the shortest form ("7000001", "7000001.25"); durations the shortest text
 * exact for both trace processor and Chrome (export_json_text.c).
 * Tracks and events:
 *   - process "CPUs" (pid JSON_CPU_PID) with a thread per CPU: a complete
 *     event ("X") per thread run, ending at the sched_switch that switched it
 *     out (cat "sched_switch"; a switch whose run start is not in the dump is
 *     an instant); the run still going at the end of the dump, or cut by a
 *     seq gap, is an "X" of cat "sched";
 *   - "CPU n irq": hardirq and softirq entry/exit pairs as "X" (cat
 *     "irq_handler_entry,irq_handler_exit" / "softirq_entry,softirq_exit");
 *   - counters ("C") "cpu n freq" (kHz) and "cpu n idle" (state, -1 = not idle);
 *   - "CPU n lost events": an "X" of cat "btrace_loss" over each seq gap;
 *   - real processes and threads (names from "M" metadata events): syscalls
 *     as "X" (cat "sys_enter,sys_exit"), uprobe entry/return pairs as "X"
 *     (cat "uprobe,uretprobe", arguments and return value in args), returns
 *     of functions probed with %return alone as "X" ending at the return
 *     (cat "uretprobe", from the duration they carry), and
 *     instants ("i") for wakeups, migrations, fork/exec/exit/rename, USDT,
 *     entries of functions probed without %return, and every
 *     entry/exit/return without its partner (cat: the event's name);
 *   - application events (in-process tracing) on their thread: matched
 *     BEGIN/END as "B"/"E" (a BEGIN open at the end of the dump, or at
 *     its thread's exit, an "X" to there, marked open_at_dump_end or
 *     closed_at_thread_exit: never a B without E), instants and unmatched BEGIN/END as "i",
 *     counters as "C" (per process and name), cat the event type; a
 *     per-thread seq gap as an "i" of cat "btrace_app_loss";
 *   - the trigger hit that caused the dump: an "i" of cat "btrace_trigger"
 *     on the thread it is about and one on "triggers" (process "CPUs"),
 *     and metadata.trigger.
 * So every dump event is counted exactly once by splitting each event's cat
 * on ',' and counting the names that are event types.
 *
 * This file: the metadata (losses, trigger), the header with the track
 * names, and the loop over the events. The rest, one job a file
 * (export_json_int.h is what they share): export_json_text.c (JSON text of
 * events, per-thread state), export_json_kernel.c (scheduling, IRQs,
 * syscalls, power, seq gaps), export_json_user.c (uprobes, application and
 * function events).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_json_int.h"
#include "export_walk.h"

/* Every loss counter of the dump, as JSON members (no braces). */
struct loss_ctx {
	struct jx *j;
	int as_args, first;
};

/* bt_export_losses() callback: an args entry or an object member. */
static void json_loss(void *ctx, const char *key, uint64_t v)
{
	struct loss_ctx *lc = ctx;

	if (lc->as_args) {
		jx_arg_u(lc->j, key, v);
	} else {
		bt_sink_printf(lc->j->out, "%s\"%s\":%" PRIu64, lc->first ? "" : ",", key, v);
		lc->first = 0;
	}
}

static void loss_members(struct jx *j, int as_args)
{
	const struct bt_export_prep *p = j->p;
	const struct bt_dump_header *h = p->hdr;
	int first = 1;
#define MEMBER_U(key, val)                                                                      \
	do {                                                                                    \
		if (as_args)                                                                    \
			jx_arg_u(j, key, val);                                                     \
		else {                                                                          \
			bt_sink_printf(j->out, "%s\"%s\":%" PRIu64, first ? "" : ",", key, (uint64_t)(val)); \
			first = 0;                                                              \
		}                                                                               \
	} while (0)
	{
		struct loss_ctx lc = { j, as_args, first };

		bt_export_losses(p, json_loss, &lc);
		first = lc.first;
	}
	MEMBER_U("window.first_ts_ns", p->win.first_ts);
	MEMBER_U("window.last_ts_ns", p->win.last_ts);
	MEMBER_U("window.continuous_from_ts_ns", p->win.cont_start_ts);
	MEMBER_U("window.continuous_events", p->win.cont_events);
	MEMBER_U("dump_seq", h->dump_seq);
	MEMBER_U("ncpus", h->ncpus);
	MEMBER_U("events", p->nev);
	MEMBER_U("created_realtime_ns", h->created_realtime_ns);
	MEMBER_U("created_boottime_ns", h->created_boottime_ns);
#undef MEMBER_U
}

/* ---- main -------------------------------------------------------------------------------- */

/* The hit that caused the dump, as "trigger":{...} in metadata. */
static void trigger_members(struct jx *j)
{
	size_t n;
	const struct bt_trigger_fired *t = bt_dump_fired(j->p->d, &n);
	char d[300];

	if (!n)
		return;
	JW(j, "\"trigger\":{\"name\":");
	jx_jstr(j, t->name, sizeof(t->name));
	JW(j, ",\"condition\":");
	jx_jstr(j, t->cond, sizeof(t->cond));
	JW(j, ",\"event\":");
	jx_jstr(j, bt_trigger_describe(t, d, sizeof(d)), sizeof(d));
	bt_sink_printf(j->out, ",\"ts_ns\":%" PRIu64 ",\"value\":%" PRIu64 ",\"tid\":%u,\"pid\":%u},", t->ts_ns,
		       t->value, t->tid, t->tgid);
}

/* Instants of the hit on the "triggers" track and on its thread. */
static void put_triggers(struct jx *j)
{
	size_t n;
	const struct bt_trigger_fired *t = bt_dump_fired(j->p->d, &n);
	char name[320], d[300];

	if (!n)
		return;
	jx_meta(j, "thread_name", JSON_CPU_PID, TRIGGER_TID, "name", "triggers", 0);
	jx_meta(j, "thread_sort_index", JSON_CPU_PID, TRIGGER_TID, "sort_index", NULL, -1);
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "trigger %s: %s", t[i].name, bt_trigger_describe(&t[i], d, sizeof(d)));
		for (int k = 0; k < 2; k++) {
			if (k == 1 && !t[i].tid)
				break;
			jx_ev_open(j, "i", name, "btrace_trigger", t[i].ts_ns, k ? jx_pid_of(j, t[i].tid, t[i].tgid) : JSON_CPU_PID,
				k ? t[i].tid : TRIGGER_TID);
			jx_arg_s(j, "trigger", t[i].name, sizeof(t[i].name));
			jx_arg_s(j, "condition", t[i].cond, sizeof(t[i].cond));
			jx_arg_u(j, "value", t[i].value);
			jx_arg_u(j, "tid", t[i].tid);
			jx_ev_close(j);
		}
		j->st->triggers++;
	}
}

static void write_header(struct jx *j)
{
	const struct bt_export_prep *p = j->p;
	const struct bt_dump_header *h = p->hdr;
	char name[48];

	JW(j, "{\"displayTimeUnit\":\"ns\",\"metadata\":{\"source\":\"btrace-bpf\",\"host\":");
	jx_jstr(j, h->hostname, sizeof(h->hostname));
	JW(j, ",\"kernel\":");
	jx_jstr(j, h->kernel, sizeof(h->kernel));
	JW(j, ",\"reason\":");
	jx_jstr(j, h->reason, sizeof(h->reason));
	JW(j, ",\"clock\":\"CLOCK_BOOTTIME\",");
	trigger_members(j);
	loss_members(j, 0);
	JW(j, "},\"traceEvents\":[");

	jx_meta(j, "process_name", JSON_CPU_PID, 0, "name", "CPUs", 0);
	jx_meta(j, "process_sort_index", JSON_CPU_PID, 0, "sort_index", NULL, -1);
	jx_meta(j, "thread_name", JSON_CPU_PID, INFO_TID, "name", "btrace-bpf", 0);
	jx_meta(j, "thread_sort_index", JSON_CPU_PID, INFO_TID, "sort_index", NULL, -1);
	put_triggers(j);
	for (uint32_t c = 0; c < h->ncpus; c++) {
		if (!p->percpu || !p->percpu[c].events)
			continue;
		snprintf(name, sizeof(name), "CPU %u", c);
		jx_meta(j, "thread_name", JSON_CPU_PID, CPU_TID(c), "name", name, 0);
		jx_meta(j, "thread_sort_index", JSON_CPU_PID, CPU_TID(c), "sort_index", NULL, (int64_t)c);
		snprintf(name, sizeof(name), "CPU %u irq", c);
		jx_meta(j, "thread_name", JSON_CPU_PID, IRQ_TID(c), "name", name, 0);
		jx_meta(j, "thread_sort_index", JSON_CPU_PID, IRQ_TID(c), "sort_index", NULL, (int64_t)c + 0x2000);
		if (p->percpu[c].gaps) {
			snprintf(name, sizeof(name), "CPU %u lost events", c);
			jx_meta(j, "thread_name", JSON_CPU_PID, LOSS_TID(c), "name", name, 0);
			jx_meta(j, "thread_sort_index", JSON_CPU_PID, LOSS_TID(c), "sort_index", NULL,
			     (int64_t)c + 0x4000);
		}
	}
	/* processes (named after their main thread), then threads; a thread
	 * whose process is unknown is shown as its own process */
	struct bt_u32map seen = { 0 };
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct bt_xthread *t = &p->threads[i];
		uint32_t pid = t->tgid ? t->tgid : t->tid;
		if (bt_u32map_get(&seen, pid, NULL))
			continue;
		const struct bt_xthread *leader = bt_export_thread(p, pid);
		const char *pname = leader ? leader->name : "<...>";
		for (size_t a = 0; a < p->napps; a++)
			if (p->apps[a].pid == pid) /* a traced application: its own name */
				pname = p->apps[a].name;
		jx_meta(j, "process_name", pid, 0, "name", pname, 0);
		if (bt_u32map_put(&seen, pid, 1) < 0)
			break; /* out of memory: some processes stay unnamed */
	}
	bt_u32map_free(&seen);
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct bt_xthread *t = &p->threads[i];
		jx_meta(j, "thread_name", t->tgid ? t->tgid : t->tid, t->tid, "name", t->name, 0);
	}
	/* where the dump came from and every loss counter, also as an event */
	jx_ev_open(j, "i", "btrace-bpf dump info", "btrace", p->first_ts ? p->first_ts : h->created_boottime_ns,
		JSON_CPU_PID, INFO_TID);
	JW(j, ",\"s\":\"g\"");
	loss_members(j, 1);
	jx_ev_close(j);
}

static int json_gap(void *ctx, const struct bt_seq_gap *g, uint64_t ts)
{
	jx_put_gap(ctx, g, ts);
	return 0;
}

static int json_app_gap(void *ctx, const struct bt_app_gap *g, const struct bt_event_hdr *h)
{
	jx_put_app_gap(ctx, g, h);
	return 0;
}

static int json_app(void *ctx, const struct bt_dump_event *e)
{
	struct jx *j = ctx;
	const struct bt_event_hdr *h = e->ev;

	jx_put_app(j, e);
	j->st->events++;
	if (h->type < BT_EV_MAX)
		j->st->per_type[h->type]++;
	return 0;
}

static int json_kernel(void *ctx, const struct bt_dump_event *e)
{
	struct jx *j = ctx;
	const struct bt_event_hdr *h = e->ev;
	int r;

	if (h->type >= BT_EV_MAX || h->cpu >= j->ncpus)
		return 0;
	struct jcpu *cs = &j->cpu[h->cpu];
	int had_start = cs->run_valid;
	if (!cs->run_valid) {
		cs->run_valid = 1;
		cs->run_start = h->ts_ns;
		cs->first_tid = h->tid;
	}
	r = 0;
	switch (h->type) {
	case BT_EV_SCHED_SWITCH:
		jx_put_switch(j, (const void *)h, had_start);
		break;
	case BT_EV_IRQ_ENTRY:
	case BT_EV_IRQ_EXIT:
	case BT_EV_SOFTIRQ_ENTRY:
	case BT_EV_SOFTIRQ_EXIT:
		jx_put_irq(j, h);
		break;
	case BT_EV_CPU_FREQUENCY:
	case BT_EV_CPU_IDLE:
		jx_put_power(j, h);
		break;
	case BT_EV_SYS_ENTER:
	case BT_EV_SYS_EXIT:
		r = jx_put_syscall(j, h);
		break;
	case BT_EV_UPROBE_ENTRY:
	case BT_EV_UPROBE_RETURN:
	case BT_EV_USDT:
		r = jx_put_uprobe(j, h);
		break;
	default:
		r = jx_put_task_event(j, h);
		break;
	}
	if (r < 0)
		return -ENOMEM;
	bt_namer_apply(j->nm, h, e->len);
	cs->last_ts = h->ts_ns;
	cs->have_ts = 1;
	j->st->events++;
	j->st->per_type[h->type]++;
	return 0;
}

static int json_stop(void *ctx)
{
	return bt_sink_error(((struct jx *)ctx)->out) != 0;
}

static const struct bt_export_visit json_visit = {
	.gap = json_gap, .app_gap = json_app_gap, .app = json_app, .kernel = json_kernel, .stop = json_stop,
};

int bt_export_json(const struct bt_export_prep *p, struct bt_sink *out, const struct bt_export_opts *o,
		   struct bt_export_stats *st, char *err, size_t errlen)
{
	struct bt_export_stats dummy;
	struct jx j = {
		.p = p, .o = o, .out = out, .st = st ? st : &dummy, .ncpus = p->hdr->ncpus, .err = err,
		.errlen = errlen,
	};
	int r = -ENOMEM;

	if (!st)
		memset(&dummy, 0, sizeof(dummy));
	j.cpu = calloc(j.ncpus, sizeof(*j.cpu));
	j.nm = bt_namer_new(p->tasks, p->ntasks);
	if (!j.cpu || !j.nm || jx_size_init(&j) < 0)
		goto oom;

	write_header(&j);
	jx_put_enclosing(&j);
	r = bt_export_walk(p, o, j.ncpus, &json_visit, &j, err, errlen);
	if (r == -ENOMEM)
		goto oom;
	if (r < 0)
		goto out;
	/* what is still open at the end of the dump */
	for (uint32_t c = 0; c < j.ncpus; c++) {
		if (j.cpu[c].have_ts)
			jx_run_tail(&j, c, j.cpu[c].last_ts, 0);
		jx_irq_flush(&j, c);
	}
	for (size_t t = 0; t < j.nth; t++) {
		struct jthread *th = &j.th[t];
		if (th->sys_open)
			jx_sys_instant(&j, BT_EV_SYS_ENTER, th->tid, th->tgid, th->sys_ts, th->sys_id, 0, 0);
	}
	jx_size_pause(&j);
	JW(&j, "\n]");
	if (jx_put_stacks(&j) < 0)
		goto oom;
	JW(&j, "}\n");
	jx_size_finish(&j, o->json_max ? o->json_max : BT_JSON_OPEN_MAX);
	if (o->progress)
		o->progress(p->nev, p->nev, o->progress_ctx);
	r = bt_sink_error(out);
	if (r < 0)
		snprintf(err, errlen, "write error: %s", strerror(-r));
	goto out;
oom:
	r = -ENOMEM;
	snprintf(err, errlen, "out of memory");
out:
	for (size_t t = 0; t < j.nth; t++)
		free(j.th[t].ust);
	free(j.th);
	free(j.cpu);
	bt_u32map_free(&j.tmap);
	bt_namer_free(j.nm);
	free(j.size.bin);
	return r;
}
