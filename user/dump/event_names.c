// SPDX-License-Identifier: MIT
/*
 * event_names.c - names and trace-cmd-style field text of events (see
 * event_names.h). Output follows the kernel tracepoints' print formats
 * (/sys/kernel/tracing/events/GROUP/NAME/format) for the fields an event
 * carries; fields the BPF side does not record are left out.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "event_names.h"
#include "trigger_spec.h"
#include "util.h"

_Static_assert(sizeof(struct bt_event_hdr) == 24, "event ABI");

static const struct {
	const char *name;
	uint32_t size;
	int group;
} ev_info[BT_EV_MAX] = {
	[BT_EV_SCHED_SWITCH] = { "sched_switch", sizeof(struct bt_ev_sched_switch), BT_GROUP_SCHED },
	[BT_EV_SCHED_WAKEUP] = { "sched_wakeup", sizeof(struct bt_ev_sched_wakeup), BT_GROUP_SCHED },
	[BT_EV_SCHED_WAKEUP_NEW] = { "sched_wakeup_new", sizeof(struct bt_ev_sched_wakeup), BT_GROUP_SCHED },
	[BT_EV_SCHED_WAKING] = { "sched_waking", sizeof(struct bt_ev_sched_wakeup), BT_GROUP_SCHED },
	[BT_EV_SCHED_MIGRATE] = { "sched_migrate_task", sizeof(struct bt_ev_sched_migrate), BT_GROUP_SCHED },
	[BT_EV_PROCESS_FORK] = { "sched_process_fork", sizeof(struct bt_ev_task), BT_GROUP_SCHED },
	[BT_EV_PROCESS_EXEC] = { "sched_process_exec", sizeof(struct bt_ev_task), BT_GROUP_SCHED },
	[BT_EV_PROCESS_EXIT] = { "sched_process_exit", sizeof(struct bt_ev_task), BT_GROUP_SCHED },
	[BT_EV_TASK_RENAME] = { "task_rename", sizeof(struct bt_ev_task), BT_GROUP_SCHED },
	[BT_EV_IRQ_ENTRY] = { "irq_handler_entry", sizeof(struct bt_ev_irq), BT_GROUP_IRQ },
	[BT_EV_IRQ_EXIT] = { "irq_handler_exit", sizeof(struct bt_ev_irq), BT_GROUP_IRQ },
	[BT_EV_SOFTIRQ_ENTRY] = { "softirq_entry", sizeof(struct bt_ev_irq), BT_GROUP_IRQ },
	[BT_EV_SOFTIRQ_EXIT] = { "softirq_exit", sizeof(struct bt_ev_irq), BT_GROUP_IRQ },
	[BT_EV_CPU_FREQUENCY] = { "cpu_frequency", sizeof(struct bt_ev_power), BT_GROUP_POWER },
	[BT_EV_CPU_IDLE] = { "cpu_idle", sizeof(struct bt_ev_power), BT_GROUP_POWER },
	[BT_EV_SYS_ENTER] = { "sys_enter", sizeof(struct bt_ev_syscall), BT_GROUP_SYSCALLS },
	[BT_EV_SYS_EXIT] = { "sys_exit", sizeof(struct bt_ev_syscall), BT_GROUP_SYSCALLS },
	[BT_EV_UPROBE_ENTRY] = { "uprobe", sizeof(struct bt_ev_uprobe), BT_GROUP_UPROBE },
	[BT_EV_UPROBE_RETURN] = { "uretprobe", sizeof(struct bt_ev_uprobe), BT_GROUP_UPROBE },
	[BT_EV_USDT] = { "usdt", sizeof(struct bt_ev_uprobe), BT_GROUP_UPROBE },
	[BT_EV_APP_INSTANT] = { "app_instant", sizeof(struct bt_ev_app), -1 },
	[BT_EV_APP_BEGIN] = { "app_begin", sizeof(struct bt_ev_app), -1 },
	[BT_EV_APP_END] = { "app_end", sizeof(struct bt_ev_app), -1 },
	[BT_EV_APP_COUNTER] = { "app_counter", sizeof(struct bt_ev_app), -1 },
	[BT_EV_CPU_SAMPLE] = { "cpu_sample", sizeof(struct bt_ev_sample), BT_GROUP_STACKS },
	[BT_EV_OFFCPU] = { "offcpu", sizeof(struct bt_ev_offcpu), BT_GROUP_STACKS },
	[BT_EV_WAKER] = { "waker", sizeof(struct bt_ev_waker), BT_GROUP_STACKS },
	[BT_EV_PROBE_STACK] = { "probe_stack", sizeof(struct bt_ev_probe_stack), BT_GROUP_STACKS },
	[BT_EV_APP_FUNCS] = { "app_funcs", sizeof(struct bt_ev_app_funcs), -1 },
	[BT_EV_APP_FUNC_ENTRY] = { "func_entry", sizeof(struct bt_ev_app) + 8, -1 },
	[BT_EV_APP_FUNC_EXIT] = { "func_exit", sizeof(struct bt_ev_app) + 8, -1 },
};

static const char *const group_names[BT_GROUP_MAX] = {
	[BT_GROUP_SCHED] = "sched",
	[BT_GROUP_IRQ] = "irq",
	[BT_GROUP_POWER] = "power",
	[BT_GROUP_SYSCALLS] = "syscalls",
	[BT_GROUP_UPROBE] = "uprobe",
	[BT_GROUP_STACKS] = "stacks",
};

const char *bt_event_name(uint32_t type)
{
	return type < BT_EV_MAX ? ev_info[type].name : NULL;
}

int bt_event_type(const char *name)
{
	for (int t = 1; t < BT_EV_MAX; t++)
		if (ev_info[t].name && strcmp(ev_info[t].name, name) == 0)
			return t;
	return -1;
}

uint32_t bt_event_min_size(uint32_t type)
{
	return type < BT_EV_MAX && ev_info[type].name ? ev_info[type].size : 0;
}

int bt_event_group(uint32_t type)
{
	return type < BT_EV_MAX && ev_info[type].name ? ev_info[type].group : -1;
}

const char *bt_group_name(int group)
{
	return group >= 0 && group < BT_GROUP_MAX ? group_names[group] : NULL;
}

int bt_group_from_name(const char *name)
{
	for (int g = 0; g < BT_GROUP_MAX; g++)
		if (strcmp(group_names[g], name) == 0)
			return g;
	return -1;
}

/* TASK_* bits as in include/linux/sched.h (stable since 4.14). */
#define T_INTERRUPTIBLE 0x0001
#define T_UNINTERRUPTIBLE 0x0002
#define T_NOLOAD 0x0400
#define T_REPORT 0x007f   /* S D T t X Z P */
#define T_REPORT_IDLE 0x0080 /* tracepoint encoding of TASK_IDLE */
#define T_REPORT_MAX 0x0100  /* tracepoint encoding of "preempted" */

const char *bt_prev_state_str(uint32_t state, char *buf, size_t len)
{
	static const char letters[] = "SDTtXZPI";
	size_t o = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	if (state == 0 || state == T_REPORT_MAX) {
		snprintf(buf, len, "R+");
		return buf;
	}
	/* Raw TASK_IDLE (UNINTERRUPTIBLE|NOLOAD) reads as I, as the kernel's
	 * task_state_index() does. */
	if ((state & (T_NOLOAD | T_UNINTERRUPTIBLE)) == (T_NOLOAD | T_UNINTERRUPTIBLE) &&
	    !(state & (T_REPORT & ~T_UNINTERRUPTIBLE)))
		state = T_REPORT_IDLE;
	uint32_t bits = state & (T_REPORT | T_REPORT_IDLE);
	if (!bits) {
		snprintf(buf, len, "R%s", (state & T_REPORT_MAX) ? "+" : "");
		return buf;
	}
	for (int i = 0; i < 8; i++) {
		if (!(bits & (1u << i)))
			continue;
		if (o && o + 1 < len)
			buf[o++] = '|';
		if (o + 1 < len)
			buf[o++] = letters[i];
	}
	buf[o] = '\0';
	return buf;
}

const char *bt_softirq_name(uint32_t vec)
{
	static const char *const names[] = { "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK",
					      "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU" };
	return vec < sizeof(names) / sizeof(names[0]) ? names[vec] : NULL;
}

/* ---- task names ---------------------------------------------------------- */

struct namer_slot {
	uint32_t tid;
	uint32_t used;
	char comm[BT_TASK_COMM_LEN];
};

struct bt_namer {
	const struct bt_task *tasks;
	size_t ntasks;
	struct namer_slot *slots; /* open addressing, overrides from events */
	size_t cap, n;
	char swapper[2][24];
	int swap_i;
};

struct bt_namer *bt_namer_new(const struct bt_task *tasks, size_t ntasks)
{
	struct bt_namer *nm = calloc(1, sizeof(*nm));
	if (!nm)
		return NULL;
	nm->tasks = tasks;
	nm->ntasks = tasks ? ntasks : 0;
	return nm;
}

void bt_namer_free(struct bt_namer *nm)
{
	if (!nm)
		return;
	free(nm->slots);
	free(nm);
}

static size_t slot_hash(uint32_t tid, size_t cap)
{
	return (size_t)((tid * 2654435761u) & (cap - 1));
}

static struct namer_slot *namer_lookup(struct bt_namer *nm, uint32_t tid)
{
	if (!nm->cap)
		return NULL;
	for (size_t i = slot_hash(tid, nm->cap);; i = (i + 1) & (nm->cap - 1)) {
		if (!nm->slots[i].used)
			return NULL;
		if (nm->slots[i].tid == tid)
			return &nm->slots[i];
	}
}

static int namer_grow(struct bt_namer *nm)
{
	size_t cap = nm->cap ? nm->cap * 2 : 256;
	struct namer_slot *s = calloc(cap, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < nm->cap; i++) {
		if (!nm->slots[i].used)
			continue;
		size_t j = slot_hash(nm->slots[i].tid, cap);
		while (s[j].used)
			j = (j + 1) & (cap - 1);
		s[j] = nm->slots[i];
	}
	free(nm->slots);
	nm->slots = s;
	nm->cap = cap;
	return 0;
}

static void namer_set(struct bt_namer *nm, uint32_t tid, const char *comm)
{
	struct namer_slot *s = namer_lookup(nm, tid);
	if (!s) {
		if ((nm->n + 1) * 2 > nm->cap && namer_grow(nm) < 0)
			return; /* out of memory: keep the table's name */
		size_t i = slot_hash(tid, nm->cap);
		while (nm->slots[i].used)
			i = (i + 1) & (nm->cap - 1);
		s = &nm->slots[i];
		s->used = 1;
		s->tid = tid;
		nm->n++;
	}
	/* comm in events is not necessarily NUL-terminated */
	memcpy(s->comm, comm, BT_TASK_COMM_LEN);
	s->comm[BT_TASK_COMM_LEN - 1] = '\0';
}

const char *bt_namer_comm(struct bt_namer *nm, uint32_t tid, uint32_t cpu)
{
	if (nm) {
		struct namer_slot *s = namer_lookup(nm, tid);
		if (s)
			return s->comm;
		/* binary search of the table (sorted by tid) */
		size_t lo = 0, hi = nm->ntasks;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (nm->tasks[mid].tid == tid)
				return nm->tasks[mid].comm;
			if (nm->tasks[mid].tid < tid)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (tid == 0) {
			char *b = nm->swapper[nm->swap_i ^= 1];
			snprintf(b, sizeof(nm->swapper[0]), "swapper/%u", cpu);
			return b;
		}
	}
	return "<...>";
}

void bt_namer_apply(struct bt_namer *nm, const struct bt_event_hdr *ev, uint32_t len)
{
	if (!nm || len < sizeof(struct bt_ev_task))
		return;
	const struct bt_ev_task *t = (const void *)ev;
	switch (ev->type) {
	case BT_EV_PROCESS_FORK:
		namer_set(nm, t->tid, t->comm);
		break;
	case BT_EV_PROCESS_EXEC:
		namer_set(nm, ev->tid, t->comm);
		break;
	case BT_EV_TASK_RENAME:
		namer_set(nm, t->tid, t->comm);
		break;
	default:
		break;
	}
}

const struct bt_probe_desc *bt_probe_find(const struct bt_probe_desc *p, size_t n, uint32_t id)
{
	if (!p)
		return NULL;
	if (id < n && p[id].id == id)
		return &p[id];
	for (size_t i = 0; i < n; i++)
		if (p[i].id == id)
			return &p[i];
	return NULL;
}

/* ---- field text ---------------------------------------------------------- */

struct sbuf {
	char *p;
	size_t len, o; /* o counts the full length, even past len */
};

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sbuf *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t room = s->o < s->len ? s->len - s->o : 0;
	int r = vsnprintf(room ? s->p + s->o : NULL, room, fmt, ap);
	va_end(ap);
	if (r > 0)
		s->o += (size_t)r;
}

/* Names in field text are escaped (bt_escape_text): a comm or an
 * application's name with a newline must not split the event's line. */
typedef char escbuf[BT_ESCAPED_LEN(BT_TASK_COMM_LEN > BT_COMM_LEN ? BT_TASK_COMM_LEN : BT_COMM_LEN)];

/* comm from an event (16 bytes, maybe without NUL), escaped */
static const char *ev_comm(const char comm[BT_COMM_LEN], escbuf out)
{
	return bt_escape_text(comm, BT_COMM_LEN, out, sizeof(escbuf));
}

/* a task's name, escaped */
static const char *comm_of(struct bt_namer *nm, uint32_t tid, uint32_t cpu, escbuf out)
{
	return bt_escape_text(bt_namer_comm(nm, tid, cpu), BT_TASK_COMM_LEN, out, sizeof(escbuf));
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static void fmt_probe(struct sbuf *s, const struct bt_ev_uprobe *u, const struct bt_probe_desc *probes,
		      size_t nprobes)
{
	const struct bt_probe_desc *p = bt_probe_find(probes, nprobes, u->probe_id);
	if (!p) {
		sb_printf(s, "probe#%u", u->probe_id);
		return;
	}
	const char *name = p->func[0] ? p->func : p->spec[0] ? p->spec : NULL;
	char e[BT_ESCAPED_LEN(255)];
	if (name)
		sb_printf(s, "%s", bt_escape_text(name, 128, e, sizeof(e)));
	else
		sb_printf(s, "probe#%u", u->probe_id);
	if (p->binary[0] && u->h.type != BT_EV_UPROBE_RETURN)
		sb_printf(s, " (%s)", bt_escape_text(base_name(p->binary), 255, e, sizeof(e)));
}

int bt_format_fields(char *buf, size_t len, const struct bt_event_hdr *ev, uint32_t evlen,
		     struct bt_namer *nm, const struct bt_probe_desc *probes, size_t nprobes)
{
	struct sbuf s = { buf, len, 0 };
	char st[32];
	escbuf c1, c2;

	if (len)
		buf[0] = '\0';
	if (!ev || evlen < bt_event_min_size(ev->type) || !bt_event_min_size(ev->type))
		return 0;
	switch (ev->type) {
	case BT_EV_SCHED_SWITCH: {
		const struct bt_ev_sched_switch *e = (const void *)ev;
		sb_printf(&s, "prev_comm=%s prev_pid=%u prev_prio=%u prev_state=%s",
			  comm_of(nm, e->prev_tid, ev->cpu, c1), e->prev_tid, e->prev_prio,
			  bt_prev_state_str(e->prev_state, st, sizeof(st)));
		sb_printf(&s, " ==> next_comm=%s next_pid=%u next_prio=%u",
			  comm_of(nm, e->next_tid, ev->cpu, c2), e->next_tid, e->next_prio);
		break;
	}
	case BT_EV_SCHED_WAKEUP:
	case BT_EV_SCHED_WAKEUP_NEW:
	case BT_EV_SCHED_WAKING: {
		const struct bt_ev_sched_wakeup *e = (const void *)ev;
		sb_printf(&s, "comm=%s pid=%u prio=%u target_cpu=%03u", comm_of(nm, e->tid, e->target_cpu, c1),
			  e->tid, e->prio, e->target_cpu);
		break;
	}
	case BT_EV_SCHED_MIGRATE: {
		const struct bt_ev_sched_migrate *e = (const void *)ev;
		sb_printf(&s, "comm=%s pid=%u orig_cpu=%u dest_cpu=%u", comm_of(nm, e->tid, e->orig_cpu, c1),
			  e->tid, e->orig_cpu, e->dest_cpu);
		break;
	}
	case BT_EV_PROCESS_FORK: {
		const struct bt_ev_task *e = (const void *)ev;
		sb_printf(&s, "comm=%s pid=%u child_comm=%s child_pid=%u", comm_of(nm, ev->tid, ev->cpu, c1),
			  ev->tid, ev_comm(e->comm, c2), e->tid);
		break;
	}
	case BT_EV_PROCESS_EXEC: {
		const struct bt_ev_task *e = (const void *)ev;
		sb_printf(&s, "comm=%s pid=%u old_pid=%u", ev_comm(e->comm, c1), ev->tid, e->tid);
		break;
	}
	case BT_EV_PROCESS_EXIT: {
		const struct bt_ev_task *e = (const void *)ev;
		sb_printf(&s, "comm=%s pid=%u", comm_of(nm, e->tid, ev->cpu, c1), e->tid);
		break;
	}
	case BT_EV_TASK_RENAME: {
		const struct bt_ev_task *e = (const void *)ev;
		sb_printf(&s, "pid=%u oldcomm=%s newcomm=%s", e->tid, comm_of(nm, e->tid, ev->cpu, c1),
			  ev_comm(e->comm, c2));
		break;
	}
	case BT_EV_IRQ_ENTRY: {
		const struct bt_ev_irq *e = (const void *)ev;
		sb_printf(&s, "irq=%u", e->irq);
		break;
	}
	case BT_EV_IRQ_EXIT: {
		const struct bt_ev_irq *e = (const void *)ev;
		sb_printf(&s, "irq=%u ret=%s", e->irq, e->ret ? "handled" : "unhandled");
		break;
	}
	case BT_EV_SOFTIRQ_ENTRY:
	case BT_EV_SOFTIRQ_EXIT: {
		const struct bt_ev_irq *e = (const void *)ev;
		const char *n = bt_softirq_name(e->irq);
		if (n)
			sb_printf(&s, "vec=%u [action=%s]", e->irq, n);
		else
			sb_printf(&s, "vec=%u [action=%u]", e->irq, e->irq);
		break;
	}
	case BT_EV_CPU_FREQUENCY:
	case BT_EV_CPU_IDLE: {
		const struct bt_ev_power *e = (const void *)ev;
		sb_printf(&s, "state=%u cpu_id=%u", e->state, e->cpu_id);
		break;
	}
	case BT_EV_SYS_ENTER: {
		const struct bt_ev_syscall *e = (const void *)ev;
		const char *sc = bt_syscall_name((long)e->id); /* this machine's numbers */
		if (sc)
			sb_printf(&s, "%s (NR %" PRId64 ")", sc, (int64_t)e->id);
		else
			sb_printf(&s, "NR %" PRId64, (int64_t)e->id);
		break;
	}
	case BT_EV_SYS_EXIT: {
		const struct bt_ev_syscall *e = (const void *)ev;
		const char *sc = bt_syscall_name((long)e->id);
		if (sc)
			sb_printf(&s, "%s (NR %" PRId64 ") = %" PRId64, sc, (int64_t)e->id, (int64_t)e->ret);
		else
			sb_printf(&s, "NR %" PRId64 " = %" PRId64, (int64_t)e->id, (int64_t)e->ret);
		break;
	}
	case BT_EV_UPROBE_ENTRY:
	case BT_EV_USDT: {
		const struct bt_ev_uprobe *e = (const void *)ev;
		fmt_probe(&s, e, probes, nprobes);
		uint32_t na = e->nargs < BT_MAX_UARGS ? e->nargs : BT_MAX_UARGS;
		for (uint32_t i = 0; i < na; i++)
			sb_printf(&s, " arg%u=0x%" PRIx64, i + 1, (uint64_t)e->args[i]);
		break;
	}
	case BT_EV_UPROBE_RETURN: {
		const struct bt_ev_uprobe *e = (const void *)ev;
		fmt_probe(&s, e, probes, nprobes);
		sb_printf(&s, " ret=0x%" PRIx64, (uint64_t)e->ret);
		if (e->duration_ns)
			sb_printf(&s, " duration=%" PRIu64 ".%03" PRIu64 "us", (uint64_t)e->duration_ns / 1000,
				  (uint64_t)e->duration_ns % 1000);
		break;
	}
	case BT_EV_CPU_SAMPLE:
	case BT_EV_OFFCPU:
	case BT_EV_PROBE_STACK:
	case BT_EV_WAKER: {
		const struct bt_ev_sample *e = (const void *)ev; /* the common prefix */
		char k[16], u[16];
		if (ev->type == BT_EV_OFFCPU)
			sb_printf(&s, "offcpu=%" PRIu64 ".%03" PRIu64 "us ",
				  (uint64_t)((const struct bt_ev_offcpu *)ev)->offcpu_ns / 1000,
				  (uint64_t)((const struct bt_ev_offcpu *)ev)->offcpu_ns % 1000);
		if (ev->type == BT_EV_PROBE_STACK) {
			const struct bt_ev_probe_stack *ps = (const void *)ev;
			const struct bt_probe_desc *pd = bt_probe_find(probes, nprobes, ps->probe_id);
			sb_printf(&s, "probe=%s ", pd && pd->func[0] ? pd->func : "?");
		}
		if (ev->type == BT_EV_WAKER) {
			const struct bt_ev_waker *w = (const void *)ev;
			sb_printf(&s, "woke comm=%s pid=%u ", comm_of(nm, w->wakee, ev->cpu, c1), w->wakee);
		}
		if (e->kstack == BT_STACK_LOST)
			snprintf(k, sizeof(k), "lost");
		else if (e->kstack == BT_STACK_RECLAIMED)
			snprintf(k, sizeof(k), "reclaimed");
		else
			snprintf(k, sizeof(k), "%u", e->kstack);
		if (e->ustack == BT_STACK_LOST)
			snprintf(u, sizeof(u), "lost");
		else if (e->ustack == BT_STACK_RECLAIMED)
			snprintf(u, sizeof(u), "reclaimed");
		else
			snprintf(u, sizeof(u), "%u", e->ustack);
		sb_printf(&s, "kstack=%s ustack=%s", k, u);
		break;
	}
	default:
		break;
	}
	return (int)(s.o > INT32_MAX ? INT32_MAX : s.o);
}

int bt_format_app_fields(char *buf, size_t len, const struct bt_event_hdr *ev, uint32_t evlen, const char *name)
{
	struct sbuf s = { buf, len, 0 };
	const struct bt_ev_app *a = (const void *)ev;
	if (len)
		buf[0] = '\0';
	if (evlen < sizeof(*a) || a->nargs > BT_APP_MAX_ARGS || evlen < sizeof(*a) + 8u * a->nargs)
		return 0;
	if ((ev->type == BT_EV_APP_FUNC_ENTRY || ev->type == BT_EV_APP_FUNC_EXIT) && a->nargs == 1) {
		char e[BT_ESCAPED_LEN(512)];
		if (name)
			return sb_printf(&s, "%s", bt_escape_text(name, 512, e, sizeof(e))), (int)s.o;
		return sb_printf(&s, "0x%" PRIx64, (uint64_t)a->args[0]), (int)s.o;
	}
	if (ev->type != BT_EV_APP_END) {
		char e[BT_ESCAPED_LEN(64)];
		if (name)
			sb_printf(&s, "%s", bt_escape_text(name, 64, e, sizeof(e)));
		else
			sb_printf(&s, "name#%u", a->name_id);
	}
	if (ev->type == BT_EV_APP_COUNTER && a->nargs >= 1) {
		sb_printf(&s, " value=%" PRId64, (int64_t)a->args[0]);
	} else {
		for (uint32_t i = 0; i < a->nargs; i++)
			sb_printf(&s, " arg%u=%" PRId64, i + 1, (int64_t)a->args[i]);
	}
	return (int)(s.o > INT32_MAX ? INT32_MAX : s.o);
}

const char *bt_format_ts(uint64_t ns, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64 ".%06" PRIu64, ns / 1000000000u, (ns % 1000000000u) / 1000u);
	return buf;
}
