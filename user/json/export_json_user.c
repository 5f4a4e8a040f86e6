// SPDX-License-Identifier: MIT
/*
 * export_json_user.c - events from user space in the JSON trace: uprobe
 * entry/return pairs as "X" (arguments and return value in args), USDT and
 * unpaired hits as instants, application events (B/E, instants, counters,
 * per-thread seq gaps) and traced function calls.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_json_int.h"

/* bt_export_uprobe_args() callback: an argument in hex */
static void arg_hex_cb(void *j, const char *name, uint64_t v)
{
	jx_arg_hex(j, name, v);
}

static void uprobe_args(struct jx *j, const struct bt_ev_uprobe *u)
{
	bt_export_uprobe_args(u, arg_hex_cb, j);
}

int jx_put_uprobe(struct jx *j, const struct bt_event_hdr *h)
{
	const struct bt_ev_uprobe *u = (const void *)h;
	int role = j->uslot < j->p->nurole ? j->p->urole[j->uslot] : BT_UR_USDT;
	char nb[32], name[160];
	const char *fn = bt_export_probe_name(j->p, u->probe_id, nb, sizeof(nb));
	uint32_t pid = jx_pid_of(j, h->tid, h->tgid);
	struct jthread *t = jx_thread_state(j, h->tid);

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
		jx_ev_open(j, "X", bn, "uprobe,uretprobe", b->h.ts_ns, pid, h->tid);
		jx_ev_dur(j, b->h.ts_ns, h->ts_ns);
		uprobe_args(j, b);
		jx_arg_i(j, "ret", (int64_t)u->ret);
		jx_arg_hex(j, "ret_hex", u->ret);
		if (u->duration_ns)
			jx_arg_u(j, "duration_ns", u->duration_ns);
		jx_ev_close(j);
		return 0;
	}
	if (role == BT_UR_USDT || role == BT_UR_ENTRY_ONLY) {
		/* a USDT hit, or a call of a function probed without %return */
		jx_ev_open(j, "i", fn, role == BT_UR_USDT ? "usdt" : "uprobe", h->ts_ns, pid, h->tid);
		JW(j, ",\"s\":\"t\"");
		uprobe_args(j, u);
		jx_ev_close(j);
		j->st->uprobe_calls += role == BT_UR_ENTRY_ONLY;
		return 0;
	}
	if (role == BT_UR_RETURN_ONLY) {
		/* %return alone: the call, from the duration the return carries */
		jx_ev_open(j, "X", fn, "uretprobe", h->ts_ns - u->duration_ns, pid, h->tid);
		jx_ev_dur(j, h->ts_ns - u->duration_ns, h->ts_ns);
		jx_arg_i(j, "ret", (int64_t)u->ret);
		jx_arg_hex(j, "ret_hex", u->ret);
		jx_arg_u(j, "duration_ns", u->duration_ns);
		jx_ev_close(j);
		j->st->uprobe_return_slices++;
		return 0;
	}
	if (role == BT_UR_RETURN_UNTIMED) {
		snprintf(name, sizeof(name), "%s (return, not timed)", fn);
		jx_ev_open(j, "i", name, "uretprobe", h->ts_ns, pid, h->tid);
		JW(j, ",\"s\":\"t\"");
		jx_arg_i(j, "ret", (int64_t)u->ret);
		jx_arg_hex(j, "ret_hex", u->ret);
		jx_arg_b(j, "untimed", 1);
		jx_ev_close(j);
		j->st->uprobe_untimed++;
		return 0;
	}
	int entry = h->type == BT_EV_UPROBE_ENTRY;
	snprintf(name, sizeof(name), "%s (%s)", fn, entry ? "entry, no return" : "return, no entry");
	jx_ev_open(j, "i", name, entry ? "uprobe" : "uretprobe", h->ts_ns, pid, h->tid);
	JW(j, ",\"s\":\"t\"");
	if (entry) {
		uprobe_args(j, u);
	} else {
		jx_arg_i(j, "ret", (int64_t)u->ret);
		jx_arg_hex(j, "ret_hex", u->ret);
		if (u->duration_ns)
			jx_arg_u(j, "duration_ns", u->duration_ns);
	}
	jx_arg_b(j, "unmatched", 1);
	jx_ev_close(j);
	j->st->uprobe_unmatched++;
	return 0;
}

/* ---- application events (in-process tracing) ------------------------------------------ */

/* bt_export_app_args() callback: an argument as a signed number */
static void arg_i_cb(void *j, const char *name, int64_t v)
{
	jx_arg_i(j, name, v);
}

static void app_args(struct jx *j, const struct bt_ev_app *a)
{
	bt_export_app_args(a, arg_i_cb, j);
}

/* Where a call or slice open at the window's end or at its thread's exit
 * (end: the exit's index) ends: its dur, then (args) its mark. */
static uint64_t open_end_ts(const struct jx *j, size_t end)
{
	return end < j->p->nev ? j->p->ev[end].ev->ts_ns : j->p->last_ts;
}

static void open_mark(struct jx *j, size_t end)
{
	if (bt_export_is_exit(j->p, end)) {
		jx_arg_b(j, "closed_at_thread_exit", 1);
		j->st->closed_at_exit++;
	} else if (end < j->p->nev) { /* a thread that died without its exit in the window */
		jx_arg_b(j, "closed_at_thread_last_event", 1);
		j->st->closed_at_last++;
	} else {
		jx_arg_b(j, "open_at_dump_end", 1);
	}
}

/* A function entry/exit (-finstrument-functions): each call one "X" at its
 * entry (cat "func_entry,func_exit"), so the calls nest as they ran; a call
 * open at the end of the dump lasts to the dump's last event (cat
 * "func_entry", open_at_dump_end), one open at its thread's exit to the
 * exit (closed_at_thread_exit); an entry whose exit is lost an "i"; an
 * exit whose entry is lost not drawn (counted). */
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
		size_t oend = role == BT_AR_FUNC_OPEN ? end : SIZE_MAX;
		jx_ev_open(j, "X", nm, open ? "func_entry" : "func_entry,func_exit", h->ts_ns, h->tgid, h->tid);
		jx_ev_dur(j, h->ts_ns, open ? open_end_ts(j, oend) : p->ev[end].ev->ts_ns);
		jx_arg_hex(j, "addr", (uint64_t)a->args[0]);
		if (open) {
			open_mark(j, oend);
			j->st->func_open++;
		} else {
			j->st->func_slices++;
		}
		break;
	}
	case BT_AR_FUNC_ENTRY_ALONE:
		snprintf(name, sizeof(name), "%s (entry, exit lost)", nm);
		jx_ev_open(j, "i", name, "func_entry", h->ts_ns, h->tgid, h->tid);
		JW(j, ",\"s\":\"t\"");
		jx_arg_hex(j, "addr", (uint64_t)a->args[0]);
		jx_arg_b(j, "unmatched", 1);
		j->st->func_unmatched++;
		break;
	case BT_AR_FUNC_EXIT_ALONE:
		j->st->func_exits_dropped++;
		return;
	default: /* the exit of a matched call: drawn with its entry */
		return;
	}
	jx_ev_close(j);
}

/* B/E for matched pairs (and a B still open at the end of the dump), i for
 * instants and for a BEGIN or END without partner, C for counters (one per
 * process and name, as the format keys them); cat is the event's type, so
 * each dump event is counted once. */
void jx_put_app(struct jx *j, const struct bt_dump_event *de)
{
	const struct bt_event_hdr *h = de->ev;
	const struct bt_ev_app *a = (const void *)h;
	const struct bt_export_prep *p = j->p;
	char nb[32], name[128];
	int role = j->aslot < p->narole ? p->arole[j->aslot] : BT_AR_FOREIGN;
	size_t begin = j->aslot < p->narole ? p->abegin[j->aslot] : SIZE_MAX;
	size_t end = j->aslot < p->narole ? p->aend[j->aslot] : SIZE_MAX;
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
		jx_ev_open(j, "C", nm, cat, h->ts_ns, h->tgid, h->tid);
		jx_arg_i(j, "value", a->nargs ? a->args[0] : 0);
		j->st->app_counters++;
		break;
	case BT_AR_BEGIN:
		jx_ev_open(j, "B", nm, cat, h->ts_ns, h->tgid, h->tid);
		app_args(j, a);
		j->st->app_slices++;
		break;
	case BT_AR_BEGIN_OPEN:
		/* no END will come: one X to where it is closed */
		jx_ev_open(j, "X", nm, cat, h->ts_ns, h->tgid, h->tid);
		jx_ev_dur(j, h->ts_ns, open_end_ts(j, end));
		app_args(j, a);
		open_mark(j, end);
		j->st->app_open++;
		break;
	case BT_AR_END:
		if (begin == SIZE_MAX) /* ends a slice begun before the window: drawn whole there */
			return;
		/* the name of its BEGIN (ENDs carry none) */
		if (begin < p->nev)
			nm = bt_export_app_name(p, de->app, ((const struct bt_ev_app *)(const void *)p->ev[begin].ev)->name_id,
						nb, sizeof(nb));
		jx_ev_open(j, "E", nm, cat, h->ts_ns, h->tgid, h->tid);
		app_args(j, a);
		break;
	case BT_AR_BEGIN_ALONE:
	case BT_AR_END_ALONE:
		if (role == BT_AR_BEGIN_ALONE)
			snprintf(name, sizeof(name), "%s (begin, no end)", nm);
		else
			snprintf(name, sizeof(name), "end (no begin)");
		jx_ev_open(j, "i", name, cat, h->ts_ns, h->tgid, h->tid);
		JW(j, ",\"s\":\"t\"");
		app_args(j, a);
		jx_arg_b(j, "unmatched", 1);
		j->st->app_unmatched++;
		break;
	default:
		jx_ev_open(j, "i", nm, cat, h->ts_ns, h->tgid, h->tid);
		JW(j, ",\"s\":\"t\"");
		app_args(j, a);
		j->st->app_instants++;
		break;
	}
	jx_ev_close(j);
}

/* A per-thread seq gap of application events: an instant on the thread. */
void jx_put_app_gap(struct jx *j, const struct bt_app_gap *g, const struct bt_event_hdr *h)
{
	char name[48];
	snprintf(name, sizeof(name), "LOST %" PRIu64 " events", g->missing);
	jx_ev_open(j, "i", name, "btrace_app_loss", h->ts_ns, h->tgid, g->tid);
	JW(j, ",\"s\":\"t\"");
	jx_arg_u(j, "tid", g->tid);
	jx_arg_u(j, "first_missing_seq", g->from_seq);
	jx_arg_u(j, "missing", g->missing);
	jx_arg_u(j, "since_ts_ns", g->prev_ts);
	jx_ev_close(j);
	j->st->app_gaps++;
	j->st->app_missing += g->missing;
}

/* The calls and application slices open at the window's start, per thread
 * outermost first: each an "X" from the window's start to its end (ts +
 * dur nest as the importer sorts them), marked begun_before_window, with
 * its real start (began_ns) where the dump has it. */
void jx_put_enclosing(struct jx *j)
{
	const struct bt_export_prep *p = j->p;
	char nb[32];

	for (size_t i = 0; i < p->nencl; i++) {
		const struct bt_encl *x = &p->encl[i];
		if (x->end_kind == BT_ENCL_LOST) {
			j->st->encl_lost++;
			continue;
		}
		int exit = x->end_kind == BT_ENCL_EXIT;
		const char *nm = bt_export_encl_name(p, x, nb, sizeof(nb));
		/* the category of its end if that is in the window: each event counted once */
		const char *cat = x->func ? (exit ? "func_exit" : "func") : (exit ? "app_end" : "app");
		jx_ev_open(j, "X", nm, cat, p->win_start, x->tgid, x->tid);
		jx_ev_dur(j, p->win_start, x->end_ts);
		if (x->func)
			jx_arg_hex(j, "addr", (uint64_t)x->ev->args[0]);
		jx_arg_b(j, "begun_before_window", 1);
		if (x->seeded)
			jx_arg_u(j, "began_ns", x->entry_ts);
		if (x->end_kind == BT_ENCL_THREAD_EXIT)
			open_mark(j, x->end);
		else if (!exit)
			open_mark(j, SIZE_MAX);
		jx_ev_close(j);
		if (x->func)
			j->st->encl_funcs++;
		else
			j->st->encl_apps++;
	}
}
