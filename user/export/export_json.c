// SPDX-License-Identifier: MIT
/*
 * export_json.c - a dump in the Chrome JSON trace event format (object form):
 *
 *   {"displayTimeUnit":"ns","metadata":{...loss counters...},"traceEvents":[
 *   {"ph":"M",...},
 *   ...]}
 *
 * Timestamps are CLOCK_BOOTTIME in microseconds with nanosecond decimals.
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
 *     BEGIN/END as "B"/"E" (a BEGIN open at the end of the dump as a "B"
 *     with open_at_dump_end), instants and unmatched BEGIN/END as "i",
 *     counters as "C" (per process and name), cat the event type; a
 *     per-thread seq gap as an "i" of cat "btrace_app_loss";
 *   - the trigger hit that caused the dump: an "i" of cat "btrace_trigger"
 *     on the thread it is about and one on "triggers" (process "CPUs"),
 *     and metadata.trigger.
 * So every dump event is counted exactly once by splitting each event's cat
 * on ',' and counting the names that are event types.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export.h"
#include "event_names.h"
#include "pbwriter.h"
#include "json_str.h"
#include "util.h"

#define JSON_CPU_PID 0x7fff0000u /* above any kernel pid (PID_MAX_LIMIT is 2^22) */
#define CPU_TID(c) (JSON_CPU_PID + (c))
#define IRQ_TID(c) (JSON_CPU_PID + 0x2000u + (c))
#define LOSS_TID(c) (JSON_CPU_PID + 0x4000u + (c))
/* the "btrace-bpf" thread: dump info and CPU counters; apart from every CPU's
 * (CPU_TID(0) is JSON_CPU_PID itself) so each pseudo-thread has one name */
#define INFO_TID (JSON_CPU_PID + 0x6000u)
#define TRIGGER_TID (JSON_CPU_PID + 0x6001u) /* the "triggers" pseudo-thread */
_Static_assert(BT_DUMP_MAX_CPUS <= 0x2000, "CPU pseudo-thread ranges do not overlap");
#define IRQ_STACK 16
#define PROGRESS_EVERY 16384
/* write a string literal */
#define JW(j, lit) bt_sink_write((j)->out, lit, sizeof(lit) - 1)

struct jirq {
	uint16_t type; /* BT_EV_IRQ_ENTRY or BT_EV_SOFTIRQ_ENTRY */
	uint32_t irq;
	uint64_t ts;
};

struct jcpu {
	int run_valid;      /* run_start is when the running task is known to have run from */
	uint64_t run_start;
	int have_run_tid;   /* run_tid: next of the CPU's last switch */
	uint32_t run_tid;
	uint64_t last_ts;
	int have_ts;
	struct jirq irq[IRQ_STACK];
	uint32_t nirq;
};

struct jthread {
	uint32_t tid, tgid;
	int sys_open;
	int64_t sys_id;
	uint64_t sys_ts;
	const struct bt_ev_uprobe **ust; /* open matched uprobe entries */
	uint32_t nu, cap;
};

struct jx {
	const struct bt_export_prep *p;
	const struct bt_export_opts *o;
	struct bt_sink *out;
	struct bt_export_stats *st;
	struct bt_namer *nm;
	struct jcpu *cpu;
	uint32_t ncpus;
	struct bt_u32map tmap; /* tid -> index into th */
	struct jthread *th;
	size_t nth, capth;
	size_t uslot;
	size_t aslot;          /* next index into p->arole */
	int nevents_out;
	int nargs;             /* args written in the open event */
	char *err;
	size_t errlen;
};

/* ---- JSON text -------------------------------------------------------------- */

/* A JSON string of at most maxlen bytes of s (stops at NUL): escapes quotes,
 * backslashes and control characters, replaces invalid UTF-8 with U+FFFD. */
static void jstr(struct jx *j, const char *s, size_t maxlen)
{
	char buf[512];
	size_t o = 0;
	size_t n = s ? strnlen(s, maxlen) : 0;
	const unsigned char *u = (const unsigned char *)s;

	buf[o++] = '"';
	for (size_t i = 0; i < n;) {
		if (o > sizeof(buf) - 16) {
			bt_sink_write(j->out, buf, o);
			o = 0;
		}
		unsigned c = u[i];
		if (c == '"' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)c;
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "\\u%04x", c);
			i++;
		} else {
			size_t l = bt_utf8_seq_len(u + i, n - i);
			if (!l) {
				memcpy(buf + o, "\\ufffd", 6);
				o += 6;
				i++;
			} else {
				memcpy(buf + o, u + i, l);
				o += l;
				i += l;
			}
		}
	}
	buf[o++] = '"';
	bt_sink_write(j->out, buf, o);
}

/* microseconds with three decimals from ns */
static void jts(struct jx *j, const char *key, uint64_t ns)
{
	bt_sink_printf(j->out, ",\"%s\":%" PRIu64 ".%03u", key, ns / 1000, (unsigned)(ns % 1000));
}

static void ev_open(struct jx *j, const char *ph, const char *name, const char *cat, uint64_t ts, uint32_t pid,
		    uint32_t tid)
{
	if (j->nevents_out)
		JW(j, ",\n{\"ph\":\"");
	else
		JW(j, "\n{\"ph\":\"");
	bt_sink_write(j->out, ph, strlen(ph));
	JW(j, "\",\"name\":");
	jstr(j, name, 256);
	if (cat) {
		JW(j, ",\"cat\":");
		jstr(j, cat, 128);
	}
	jts(j, "ts", ts);
	bt_sink_printf(j->out, ",\"pid\":%u,\"tid\":%u", pid, tid);
	j->nevents_out = 1;
	j->nargs = -1;
	j->st->records++;
}

static void ev_dur(struct jx *j, uint64_t from, uint64_t to)
{
	jts(j, "dur", to >= from ? to - from : 0);
}

static void arg_key(struct jx *j, const char *k)
{
	if (j->nargs < 0) {
		JW(j, ",\"args\":{");
		j->nargs = 0;
	}
	if (j->nargs++)
		JW(j, ",");
	jstr(j, k, 128);
	JW(j, ":");
}

static void arg_u(struct jx *j, const char *k, uint64_t v)
{
	arg_key(j, k);
	bt_sink_printf(j->out, "%" PRIu64, v);
}

static void arg_i(struct jx *j, const char *k, int64_t v)
{
	arg_key(j, k);
	bt_sink_printf(j->out, "%" PRId64, v);
}

static void arg_hex(struct jx *j, const char *k, uint64_t v)
{
	arg_key(j, k);
	bt_sink_printf(j->out, "\"0x%" PRIx64 "\"", v);
}

static void arg_s(struct jx *j, const char *k, const char *v, size_t maxlen)
{
	arg_key(j, k);
	jstr(j, v, maxlen);
}

static void arg_b(struct jx *j, const char *k, int v)
{
	arg_key(j, k);
	if (v)
		JW(j, "true");
	else
		JW(j, "false");
}

static void ev_close(struct jx *j)
{
	if (j->nargs >= 0)
		JW(j, "}");
	JW(j, "}");
}

static void meta(struct jx *j, const char *what, uint32_t pid, uint32_t tid, const char *key, const char *sval,
		 int64_t ival)
{
	if (j->nevents_out)
		JW(j, ",\n");
	else
		JW(j, "\n");
	bt_sink_printf(j->out, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,\"args\":{\"%s\":", what, pid, tid,
		       key);
	if (sval)
		jstr(j, sval, 256);
	else
		bt_sink_printf(j->out, "%" PRId64, ival);
	JW(j, "}}");
	j->nevents_out = 1;
	j->st->records++;
}

/* ---- helpers ------------------------------------------------------------------ */

static uint32_t pid_of(struct jx *j, uint32_t tid, uint32_t tgid_hint)
{
	if (tgid_hint)
		return tgid_hint;
	const struct bt_xthread *t = bt_export_thread(j->p, tid);
	return t && t->tgid ? t->tgid : tid;
}

static const char *comm(struct jx *j, uint32_t tid, uint32_t cpu)
{
	return bt_namer_comm(j->nm, tid, cpu);
}

static struct jthread *thread_state(struct jx *j, uint32_t tid)
{
	uint32_t idx;
	if (bt_u32map_get(&j->tmap, tid, &idx))
		return &j->th[idx];
	if (j->nth == j->capth) {
		size_t cap = j->capth ? j->capth * 2 : 256;
		void *q = realloc(j->th, cap * sizeof(*j->th));
		if (!q)
			return NULL;
		j->th = q;
		j->capth = cap;
	}
	if (bt_u32map_put(&j->tmap, tid, (uint32_t)j->nth) < 0)
		return NULL;
	memset(&j->th[j->nth], 0, sizeof(j->th[j->nth]));
	j->th[j->nth].tid = tid;
	return &j->th[j->nth++];
}

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
		arg_u(lc->j, key, v);
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
			arg_u(j, key, val);                                                     \
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
	ev_open(j, "i", irq_name(name, sizeof(name), soft, irq), bt_event_name(type), ts, JSON_CPU_PID, IRQ_TID(cpu));
	JW(j, ",\"s\":\"t\"");
	arg_u(j, soft ? "vec" : "irq", irq);
	if (has_ret)
		arg_i(j, "ret", ret);
	arg_b(j, "unmatched", 1);
	ev_close(j);
}

static void irq_flush(struct jx *j, uint32_t c)
{
	struct jcpu *cs = &j->cpu[c];
	for (uint32_t i = 0; i < cs->nirq; i++)
		irq_instant(j, c, cs->irq[i].type, cs->irq[i].irq, cs->irq[i].ts, 0, 0);
	cs->nirq = 0;
}

static void put_irq(struct jx *j, const struct bt_event_hdr *h)
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
	ev_open(j, "X", irq_name(name, sizeof(name), soft, e->irq),
		soft ? "softirq_entry,softirq_exit" : "irq_handler_entry,irq_handler_exit", o->ts, JSON_CPU_PID,
		IRQ_TID(h->cpu));
	ev_dur(j, o->ts, h->ts_ns);
	arg_u(j, soft ? "vec" : "irq", e->irq);
	if (!soft)
		arg_s(j, "ret", e->ret == 1 ? "handled" : e->ret == 0 ? "unhandled" : "other", 16);
	ev_close(j);
}

static void put_switch(struct jx *j, const struct bt_ev_sched_switch *e, int had_start)
{
	const struct bt_event_hdr *h = &e->h;
	struct jcpu *cs = &j->cpu[h->cpu];
	char st[32];

	if (had_start) {
		ev_open(j, "X", comm(j, e->prev_tid, h->cpu), "sched_switch", cs->run_start, JSON_CPU_PID,
			CPU_TID(h->cpu));
		ev_dur(j, cs->run_start, h->ts_ns);
	} else {
		ev_open(j, "i", comm(j, e->prev_tid, h->cpu), "sched_switch", h->ts_ns, JSON_CPU_PID, CPU_TID(h->cpu));
		JW(j, ",\"s\":\"t\"");
	}
	arg_u(j, "tid", e->prev_tid);
	arg_u(j, "pid", pid_of(j, e->prev_tid, 0));
	arg_u(j, "prio", e->prev_prio);
	arg_s(j, "end_state", bt_prev_state_str(e->prev_state, st, sizeof(st)), sizeof(st));
	arg_u(j, "next_tid", e->next_tid);
	arg_s(j, "next_comm", comm(j, e->next_tid, h->cpu), BT_TASK_COMM_LEN);
	ev_close(j);
	cs->run_start = h->ts_ns;
	cs->run_valid = 1;
	cs->run_tid = e->next_tid;
	cs->have_run_tid = 1;
}

/* The run of the CPU's current task up to `to` (a gap or the end). */
static void run_tail(struct jx *j, uint32_t c, uint64_t to, int truncated)
{
	struct jcpu *cs = &j->cpu[c];
	if (!cs->have_run_tid || !cs->run_valid)
		return;
	ev_open(j, "X", comm(j, cs->run_tid, c), "sched", cs->run_start, JSON_CPU_PID, CPU_TID(c));
	ev_dur(j, cs->run_start, to);
	arg_u(j, "tid", cs->run_tid);
	arg_u(j, "pid", pid_of(j, cs->run_tid, 0));
	arg_b(j, truncated ? "cut_by_lost_events" : "running_at_end", 1);
	ev_close(j);
}

static void thread_instant(struct jx *j, const struct bt_event_hdr *h, uint32_t tid, uint32_t tgid)
{
	ev_open(j, "i", bt_event_name(h->type), bt_event_name(h->type), h->ts_ns, pid_of(j, tid, tgid), tid);
	JW(j, ",\"s\":\"t\"");
	arg_u(j, "cpu", h->cpu);
}

static int put_task_event(struct jx *j, const struct bt_event_hdr *h)
{
	char c1[BT_COMM_LEN + 1];
	switch (h->type) {
	case BT_EV_SCHED_WAKEUP:
	case BT_EV_SCHED_WAKEUP_NEW:
	case BT_EV_SCHED_WAKING: {
		const struct bt_ev_sched_wakeup *e = (const void *)h;
		thread_instant(j, h, e->tid, 0);
		arg_s(j, "comm", comm(j, e->tid, e->target_cpu), BT_TASK_COMM_LEN);
		arg_u(j, "prio", e->prio);
		arg_u(j, "target_cpu", e->target_cpu);
		arg_u(j, "waker_tid", h->tid);
		break;
	}
	case BT_EV_SCHED_MIGRATE: {
		const struct bt_ev_sched_migrate *e = (const void *)h;
		thread_instant(j, h, e->tid, 0);
		arg_u(j, "orig_cpu", e->orig_cpu);
		arg_u(j, "dest_cpu", e->dest_cpu);
		break;
	}
	case BT_EV_PROCESS_FORK: {
		const struct bt_ev_task *e = (const void *)h;
		thread_instant(j, h, h->tid, h->tgid);
		memcpy(c1, e->comm, BT_COMM_LEN);
		c1[BT_COMM_LEN] = '\0';
		arg_u(j, "child_tid", e->tid);
		arg_u(j, "child_pid", e->tgid);
		arg_s(j, "child_comm", c1, BT_COMM_LEN);
		break;
	}
	case BT_EV_PROCESS_EXEC:
	case BT_EV_TASK_RENAME: {
		const struct bt_ev_task *e = (const void *)h;
		uint32_t tid = h->type == BT_EV_PROCESS_EXEC ? h->tid : e->tid;
		thread_instant(j, h, tid, h->type == BT_EV_PROCESS_EXEC ? h->tgid : e->tgid);
		arg_s(j, "oldcomm", comm(j, tid, h->cpu), BT_TASK_COMM_LEN);
		arg_s(j, "newcomm", e->comm, BT_COMM_LEN);
		if (h->type == BT_EV_PROCESS_EXEC)
			arg_u(j, "old_tid", e->tid);
		break;
	}
	case BT_EV_PROCESS_EXIT: {
		const struct bt_ev_task *e = (const void *)h;
		thread_instant(j, h, e->tid, e->tgid);
		arg_s(j, "comm", comm(j, e->tid, h->cpu), BT_TASK_COMM_LEN);
		break;
	}
	default:
		return 0;
	}
	ev_close(j);
	return 0;
}

static void sys_instant(struct jx *j, uint16_t type, uint32_t tid, uint32_t tgid, uint64_t ts, int64_t id,
			int64_t ret, int has_ret)
{
	char name[48];
	snprintf(name, sizeof(name), "syscall %" PRId64, id);
	ev_open(j, "i", name, bt_event_name(type), ts, pid_of(j, tid, tgid), tid);
	JW(j, ",\"s\":\"t\"");
	arg_i(j, "id", id);
	if (has_ret)
		arg_i(j, "ret", ret);
	arg_b(j, "unmatched", 1);
	ev_close(j);
}

static int put_syscall(struct jx *j, const struct bt_event_hdr *h)
{
	const struct bt_ev_syscall *e = (const void *)h;
	struct jthread *t = thread_state(j, h->tid);
	char name[48];
	if (!t)
		return -ENOMEM;
	if (h->type == BT_EV_SYS_ENTER) {
		if (t->sys_open)
			sys_instant(j, BT_EV_SYS_ENTER, h->tid, h->tgid, t->sys_ts, t->sys_id, 0, 0);
		t->sys_open = 1;
		t->tgid = h->tgid;
		t->sys_id = e->id;
		t->sys_ts = h->ts_ns;
		return 0;
	}
	if (!t->sys_open || t->sys_id != e->id) {
		if (t->sys_open)
			sys_instant(j, BT_EV_SYS_ENTER, h->tid, h->tgid, t->sys_ts, t->sys_id, 0, 0);
		t->sys_open = 0;
		sys_instant(j, BT_EV_SYS_EXIT, h->tid, h->tgid, h->ts_ns, e->id, e->ret, 1);
		return 0;
	}
	t->sys_open = 0;
	snprintf(name, sizeof(name), "syscall %" PRId64, (int64_t)e->id);
	ev_open(j, "X", name, "sys_enter,sys_exit", t->sys_ts, pid_of(j, h->tid, h->tgid), h->tid);
	ev_dur(j, t->sys_ts, h->ts_ns);
	arg_i(j, "id", e->id);
	arg_i(j, "ret", e->ret);
	ev_close(j);
	return 0;
}

static void uprobe_args(struct jx *j, const struct bt_ev_uprobe *u)
{
	static const char *const names[BT_MAX_UARGS] = { "arg1", "arg2", "arg3", "arg4", "arg5", "arg6" };
	uint32_t n = u->nargs < BT_MAX_UARGS ? u->nargs : BT_MAX_UARGS;
	for (uint32_t i = 0; i < n; i++)
		arg_hex(j, names[i], u->args[i]);
}

static int put_uprobe(struct jx *j, const struct bt_event_hdr *h)
{
	const struct bt_ev_uprobe *u = (const void *)h;
	int role = j->uslot < j->p->nurole ? j->p->urole[j->uslot] : BT_UR_USDT;
	char nb[32], name[160];
	const char *fn = bt_export_probe_name(j->p, u->probe_id, nb, sizeof(nb));
	uint32_t pid = pid_of(j, h->tid, h->tgid);
	struct jthread *t = thread_state(j, h->tid);

	j->uslot++;
	if (!t)
		return -ENOMEM;
	if (role == BT_UR_BEGIN) {
		if (t->nu == t->cap) {
			uint32_t cap = t->cap ? t->cap * 2 : 8;
			void *q = realloc(t->ust, cap * sizeof(*t->ust));
			if (!q)
				return -ENOMEM;
			t->ust = q;
			t->cap = cap;
		}
		t->ust[t->nu++] = u;
		j->st->uprobe_slices++;
		return 0;
	}
	if (role == BT_UR_END && t->nu) {
		const struct bt_ev_uprobe *b = t->ust[--t->nu];
		const char *bn = bt_export_probe_name(j->p, b->probe_id, nb, sizeof(nb));
		ev_open(j, "X", bn, "uprobe,uretprobe", b->h.ts_ns, pid, h->tid);
		ev_dur(j, b->h.ts_ns, h->ts_ns);
		uprobe_args(j, b);
		arg_i(j, "ret", (int64_t)u->ret);
		arg_hex(j, "ret_hex", u->ret);
		if (u->duration_ns)
			arg_u(j, "duration_ns", u->duration_ns);
		ev_close(j);
		return 0;
	}
	if (role == BT_UR_USDT || role == BT_UR_ENTRY_ONLY) {
		/* a USDT hit, or a call of a function probed without %return */
		ev_open(j, "i", fn, role == BT_UR_USDT ? "usdt" : "uprobe", h->ts_ns, pid, h->tid);
		JW(j, ",\"s\":\"t\"");
		uprobe_args(j, u);
		ev_close(j);
		j->st->uprobe_calls += role == BT_UR_ENTRY_ONLY;
		return 0;
	}
	if (role == BT_UR_RETURN_ONLY) {
		/* %return alone: the call, from the duration the return carries */
		ev_open(j, "X", fn, "uretprobe", h->ts_ns - u->duration_ns, pid, h->tid);
		ev_dur(j, h->ts_ns - u->duration_ns, h->ts_ns);
		arg_i(j, "ret", (int64_t)u->ret);
		arg_hex(j, "ret_hex", u->ret);
		arg_u(j, "duration_ns", u->duration_ns);
		ev_close(j);
		j->st->uprobe_return_slices++;
		return 0;
	}
	if (role == BT_UR_RETURN_UNTIMED) {
		snprintf(name, sizeof(name), "%s (return, not timed)", fn);
		ev_open(j, "i", name, "uretprobe", h->ts_ns, pid, h->tid);
		JW(j, ",\"s\":\"t\"");
		arg_i(j, "ret", (int64_t)u->ret);
		arg_hex(j, "ret_hex", u->ret);
		arg_b(j, "untimed", 1);
		ev_close(j);
		j->st->uprobe_untimed++;
		return 0;
	}
	int entry = h->type == BT_EV_UPROBE_ENTRY;
	snprintf(name, sizeof(name), "%s (%s)", fn, entry ? "entry, no return" : "return, no entry");
	ev_open(j, "i", name, entry ? "uprobe" : "uretprobe", h->ts_ns, pid, h->tid);
	JW(j, ",\"s\":\"t\"");
	if (entry) {
		uprobe_args(j, u);
	} else {
		arg_i(j, "ret", (int64_t)u->ret);
		arg_hex(j, "ret_hex", u->ret);
		if (u->duration_ns)
			arg_u(j, "duration_ns", u->duration_ns);
	}
	arg_b(j, "unmatched", 1);
	ev_close(j);
	j->st->uprobe_unmatched++;
	return 0;
}

static void put_power(struct jx *j, const struct bt_event_hdr *h)
{
	const struct bt_ev_power *e = (const void *)h;
	char name[48];
	int freq = h->type == BT_EV_CPU_FREQUENCY;
	snprintf(name, sizeof(name), "cpu %u %s", e->cpu_id, freq ? "freq" : "idle");
	ev_open(j, "C", name, bt_event_name(h->type), h->ts_ns, JSON_CPU_PID, INFO_TID);
	if (freq)
		arg_u(j, "kHz", e->state);
	else
		arg_i(j, "state", (int32_t)e->state);
	ev_close(j);
}

static void put_gap(struct jx *j, const struct bt_seq_gap *g, uint64_t ts)
{
	struct jcpu *cs = &j->cpu[g->cpu];
	uint64_t from = cs->have_ts ? cs->last_ts : ts;
	char name[48];

	/* what was open on this CPU cannot be paired across the hole */
	run_tail(j, g->cpu, from, 1);
	cs->run_valid = 0;
	cs->have_run_tid = 0;
	irq_flush(j, g->cpu);
	snprintf(name, sizeof(name), "LOST %" PRIu64 " events", g->missing);
	ev_open(j, "X", name, "btrace_loss", from, JSON_CPU_PID, LOSS_TID(g->cpu));
	ev_dur(j, from, ts);
	arg_u(j, "cpu", g->cpu);
	arg_u(j, "first_missing_seq", g->from_seq);
	arg_u(j, "missing", g->missing);
	ev_close(j);
	j->st->gaps++;
	j->st->missing += g->missing;
}

/* ---- application events (in-process tracing) ------------------------------------------ */

static void app_args(struct jx *j, const struct bt_ev_app *a)
{
	static const char *const names[BT_APP_MAX_ARGS] = { "arg1", "arg2", "arg3", "arg4" };
	uint32_t n = a->nargs < BT_APP_MAX_ARGS ? a->nargs : BT_APP_MAX_ARGS;
	for (uint32_t i = 0; i < n; i++)
		arg_i(j, names[i], a->args[i]);
}

/* A function entry/exit (-finstrument-functions): each call one "X" at its
 * entry (cat "func_entry,func_exit"), so the calls nest as they ran; a call
 * open at the end of the dump lasts to the dump's last event (cat
 * "func_entry", open_at_dump_end); an entry whose exit is lost an "i"; an
 * exit whose entry is before the window not drawn (counted). */
static void put_func(struct jx *j, const struct bt_dump_event *de, int role, size_t end)
{
	const struct bt_event_hdr *h = de->ev;
	const struct bt_ev_app *a = (const void *)h;
	const struct bt_export_prep *p = j->p;
	char nb[32], name[160];
	const char *nm = bt_export_func_name(p, de->app, a, nb, sizeof(nb));

	switch (role) {
	case BT_AR_FUNC_ENTRY:
	case BT_AR_FUNC_OPEN: {
		int open = role == BT_AR_FUNC_OPEN || end >= p->nev;
		ev_open(j, "X", nm, open ? "func_entry" : "func_entry,func_exit", h->ts_ns, h->tgid, h->tid);
		ev_dur(j, h->ts_ns, open ? p->last_ts : p->ev[end].ev->ts_ns);
		arg_hex(j, "addr", (uint64_t)a->args[0]);
		if (open) {
			arg_b(j, "open_at_dump_end", 1);
			j->st->func_open++;
		} else {
			j->st->func_slices++;
		}
		break;
	}
	case BT_AR_FUNC_ENTRY_ALONE:
		snprintf(name, sizeof(name), "%s (entry, exit lost)", nm);
		ev_open(j, "i", name, "func_entry", h->ts_ns, h->tgid, h->tid);
		JW(j, ",\"s\":\"t\"");
		arg_hex(j, "addr", (uint64_t)a->args[0]);
		arg_b(j, "unmatched", 1);
		j->st->func_unmatched++;
		break;
	case BT_AR_FUNC_EXIT_ALONE:
		j->st->func_exits_dropped++;
		return;
	default: /* the exit of a matched call: drawn with its entry */
		return;
	}
	ev_close(j);
}

/* B/E for matched pairs (and a B still open at the end of the dump), i for
 * instants and for a BEGIN or END without partner, C for counters (one per
 * process and name, as the format keys them); cat is the event's type, so
 * each dump event is counted once. */
static void put_app(struct jx *j, const struct bt_dump_event *de)
{
	const struct bt_event_hdr *h = de->ev;
	const struct bt_ev_app *a = (const void *)h;
	const struct bt_export_prep *p = j->p;
	char nb[32], name[128];
	int role = j->aslot < p->narole ? p->arole[j->aslot] : BT_AR_FOREIGN;
	size_t begin = j->aslot < p->narole ? p->abegin[j->aslot] : SIZE_MAX;
	const char *cat = bt_event_name(h->type);
	const char *nm = bt_export_app_name(p, de->app, a->name_id, nb, sizeof(nb));

	j->aslot++;
	if (role >= BT_AR_FUNC_ENTRY) {
		put_func(j, de, role, j->aslot - 1 < p->narole ? p->aend[j->aslot - 1] : SIZE_MAX);
		return;
	}
	switch (role) {
	case BT_AR_FOREIGN:
		j->st->app_dropped++;
		return;
	case BT_AR_COUNTER:
		ev_open(j, "C", nm, cat, h->ts_ns, h->tgid, h->tid);
		arg_i(j, "value", a->nargs ? a->args[0] : 0);
		j->st->app_counters++;
		break;
	case BT_AR_BEGIN:
	case BT_AR_BEGIN_OPEN:
		ev_open(j, "B", nm, cat, h->ts_ns, h->tgid, h->tid);
		app_args(j, a);
		if (role == BT_AR_BEGIN) {
			j->st->app_slices++;
		} else {
			arg_b(j, "open_at_dump_end", 1);
			j->st->app_open++;
		}
		break;
	case BT_AR_END:
		/* the name of its BEGIN (ENDs carry none) */
		if (begin < p->nev)
			nm = bt_export_app_name(p, de->app, ((const struct bt_ev_app *)(const void *)p->ev[begin].ev)->name_id,
						nb, sizeof(nb));
		ev_open(j, "E", nm, cat, h->ts_ns, h->tgid, h->tid);
		app_args(j, a);
		break;
	case BT_AR_BEGIN_ALONE:
	case BT_AR_END_ALONE:
		if (role == BT_AR_BEGIN_ALONE)
			snprintf(name, sizeof(name), "%s (begin, no end)", nm);
		else
			snprintf(name, sizeof(name), "end (no begin)");
		ev_open(j, "i", name, cat, h->ts_ns, h->tgid, h->tid);
		JW(j, ",\"s\":\"t\"");
		app_args(j, a);
		arg_b(j, "unmatched", 1);
		j->st->app_unmatched++;
		break;
	default:
		ev_open(j, "i", nm, cat, h->ts_ns, h->tgid, h->tid);
		JW(j, ",\"s\":\"t\"");
		app_args(j, a);
		j->st->app_instants++;
		break;
	}
	ev_close(j);
}

/* A per-thread seq gap of application events: an instant on the thread. */
static void put_app_gap(struct jx *j, const struct bt_app_gap *g, const struct bt_event_hdr *h)
{
	char name[48];
	snprintf(name, sizeof(name), "LOST %" PRIu64 " events", g->missing);
	ev_open(j, "i", name, "btrace_app_loss", h->ts_ns, h->tgid, g->tid);
	JW(j, ",\"s\":\"t\"");
	arg_u(j, "tid", g->tid);
	arg_u(j, "first_missing_seq", g->from_seq);
	arg_u(j, "missing", g->missing);
	arg_u(j, "since_ts_ns", g->prev_ts);
	ev_close(j);
	j->st->app_gaps++;
	j->st->app_missing += g->missing;
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
	jstr(j, t->name, sizeof(t->name));
	JW(j, ",\"condition\":");
	jstr(j, t->cond, sizeof(t->cond));
	JW(j, ",\"event\":");
	jstr(j, bt_trigger_describe(t, d, sizeof(d)), sizeof(d));
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
	meta(j, "thread_name", JSON_CPU_PID, TRIGGER_TID, "name", "triggers", 0);
	meta(j, "thread_sort_index", JSON_CPU_PID, TRIGGER_TID, "sort_index", NULL, -1);
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "trigger %s: %s", t[i].name, bt_trigger_describe(&t[i], d, sizeof(d)));
		for (int k = 0; k < 2; k++) {
			if (k == 1 && !t[i].tid)
				break;
			ev_open(j, "i", name, "btrace_trigger", t[i].ts_ns, k ? pid_of(j, t[i].tid, t[i].tgid) : JSON_CPU_PID,
				k ? t[i].tid : TRIGGER_TID);
			arg_s(j, "trigger", t[i].name, sizeof(t[i].name));
			arg_s(j, "condition", t[i].cond, sizeof(t[i].cond));
			arg_u(j, "value", t[i].value);
			arg_u(j, "tid", t[i].tid);
			ev_close(j);
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
	jstr(j, h->hostname, sizeof(h->hostname));
	JW(j, ",\"kernel\":");
	jstr(j, h->kernel, sizeof(h->kernel));
	JW(j, ",\"reason\":");
	jstr(j, h->reason, sizeof(h->reason));
	JW(j, ",\"clock\":\"CLOCK_BOOTTIME\",");
	trigger_members(j);
	loss_members(j, 0);
	JW(j, "},\"traceEvents\":[");

	meta(j, "process_name", JSON_CPU_PID, 0, "name", "CPUs", 0);
	meta(j, "process_sort_index", JSON_CPU_PID, 0, "sort_index", NULL, -1);
	meta(j, "thread_name", JSON_CPU_PID, INFO_TID, "name", "btrace-bpf", 0);
	meta(j, "thread_sort_index", JSON_CPU_PID, INFO_TID, "sort_index", NULL, -1);
	put_triggers(j);
	for (uint32_t c = 0; c < h->ncpus; c++) {
		if (!p->percpu || !p->percpu[c].events)
			continue;
		snprintf(name, sizeof(name), "CPU %u", c);
		meta(j, "thread_name", JSON_CPU_PID, CPU_TID(c), "name", name, 0);
		meta(j, "thread_sort_index", JSON_CPU_PID, CPU_TID(c), "sort_index", NULL, (int64_t)c);
		snprintf(name, sizeof(name), "CPU %u irq", c);
		meta(j, "thread_name", JSON_CPU_PID, IRQ_TID(c), "name", name, 0);
		meta(j, "thread_sort_index", JSON_CPU_PID, IRQ_TID(c), "sort_index", NULL, (int64_t)c + 0x2000);
		if (p->percpu[c].gaps) {
			snprintf(name, sizeof(name), "CPU %u lost events", c);
			meta(j, "thread_name", JSON_CPU_PID, LOSS_TID(c), "name", name, 0);
			meta(j, "thread_sort_index", JSON_CPU_PID, LOSS_TID(c), "sort_index", NULL,
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
		meta(j, "process_name", pid, 0, "name", pname, 0);
		if (bt_u32map_put(&seen, pid, 1) < 0)
			break; /* out of memory: some processes stay unnamed */
	}
	bt_u32map_free(&seen);
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct bt_xthread *t = &p->threads[i];
		meta(j, "thread_name", t->tgid ? t->tgid : t->tid, t->tid, "name", t->name, 0);
	}
	/* where the dump came from and every loss counter, also as an event */
	ev_open(j, "i", "btrace-bpf dump info", "btrace", p->first_ts ? p->first_ts : h->created_boottime_ns,
		JSON_CPU_PID, INFO_TID);
	JW(j, ",\"s\":\"g\"");
	loss_members(j, 1);
	ev_close(j);
}

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
	if (!j.cpu || !j.nm)
		goto oom;

	write_header(&j);
	size_t gi = 0, agi = 0;
	for (size_t i = 0; i < p->nev; i++) {
		const struct bt_event_hdr *h = p->ev[i].ev;
		if (o->progress && i % PROGRESS_EVERY == 0 && o->progress(i, p->nev, o->progress_ctx)) {
			r = -EINTR;
			snprintf(err, errlen, "interrupted");
			goto out;
		}
		while (gi < p->ngaps && p->gaps[gi].index < i)
			gi++;
		for (; gi < p->ngaps && p->gaps[gi].index == i; gi++)
			if (p->gaps[gi].cpu < j.ncpus)
				put_gap(&j, &p->gaps[gi], h->ts_ns);
		if (p->ev[i].app >= 0) {
			/* application events: on their thread, never part of
			 * the CPU's view (their cpu and seq are the thread's) */
			for (; agi < p->nagaps && p->agaps[agi].index == i; agi++)
				put_app_gap(&j, &p->agaps[agi], h);
			put_app(&j, &p->ev[i]);
			j.st->events++;
			if (h->type < BT_EV_MAX)
				j.st->per_type[h->type]++;
			if (bt_sink_error(out))
				break;
			continue;
		}
		if (h->type >= BT_EV_MAX || h->cpu >= j.ncpus)
			continue;
		struct jcpu *cs = &j.cpu[h->cpu];
		int had_start = cs->run_valid;
		if (!cs->run_valid) {
			cs->run_valid = 1;
			cs->run_start = h->ts_ns;
		}
		r = 0;
		switch (h->type) {
		case BT_EV_SCHED_SWITCH:
			put_switch(&j, (const void *)h, had_start);
			break;
		case BT_EV_IRQ_ENTRY:
		case BT_EV_IRQ_EXIT:
		case BT_EV_SOFTIRQ_ENTRY:
		case BT_EV_SOFTIRQ_EXIT:
			put_irq(&j, h);
			break;
		case BT_EV_CPU_FREQUENCY:
		case BT_EV_CPU_IDLE:
			put_power(&j, h);
			break;
		case BT_EV_SYS_ENTER:
		case BT_EV_SYS_EXIT:
			r = put_syscall(&j, h);
			break;
		case BT_EV_UPROBE_ENTRY:
		case BT_EV_UPROBE_RETURN:
		case BT_EV_USDT:
			r = put_uprobe(&j, h);
			break;
		default:
			r = put_task_event(&j, h);
			break;
		}
		if (r < 0)
			goto oom;
		bt_namer_apply(j.nm, h, p->ev[i].len);
		cs->last_ts = h->ts_ns;
		cs->have_ts = 1;
		j.st->events++;
		j.st->per_type[h->type]++;
		if (bt_sink_error(out))
			break;
	}
	/* what is still open at the end of the dump */
	for (uint32_t c = 0; c < j.ncpus; c++) {
		if (j.cpu[c].have_ts)
			run_tail(&j, c, j.cpu[c].last_ts, 0);
		irq_flush(&j, c);
	}
	for (size_t t = 0; t < j.nth; t++) {
		struct jthread *th = &j.th[t];
		if (th->sys_open)
			sys_instant(&j, BT_EV_SYS_ENTER, th->tid, th->tgid, th->sys_ts, th->sys_id, 0, 0);
	}
	JW(&j, "\n]}\n");
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
	return r;
}
