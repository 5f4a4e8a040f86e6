// SPDX-License-Identifier: MIT
/*
 * export_perfetto_tracks.c - events that go on a thread's child tracks as
 * TrackEvents: uprobe/uretprobe/USDT hits (slices where paired, instants
 * where not), application events (slices, instants, counters on a process
 * track per application, per-thread seq gaps) and traced function calls.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_perfetto_int.h"

/* ---- uprobes ------------------------------------------------------------------------ */

/* bt_export_uprobe_args() callback: an argument as a pointer annotation */
static void ann_ptr_arg(void *f, const char *name, uint64_t v)
{
	pf_ann_ptr(f, name, v);
}

static void uprobe_args(struct pf *f, const struct bt_ev_uprobe *u)
{
	bt_export_uprobe_args(u, ann_ptr_arg, f);
}

int pf_put_uprobe(struct pf *f, const struct bt_event_hdr *h)
{
	const struct bt_ev_uprobe *u = (const void *)h;
	struct pbw *w = &f->pkt;
	char nb[32], name[160];
	int role = f->uslot < f->p->nurole ? f->p->urole[f->uslot] : BT_UR_USDT;
	f->uslot++;

	int r = pf_child_track(f, h->tid, h->tgid, TRACK_UPROBES);
	if (r < 0)
		return r;
	const char *fn = bt_export_probe_name(f->p, u->probe_id, nb, sizeof(nb));
	uint64_t uuid = UUID_UPROBES(h->tid);
	switch (role) {
	case BT_UR_BEGIN:
		pf_te_begin(f, h->ts_ns, uuid, TE_TYPE_SLICE_BEGIN, fn, "uprobe");
		uprobe_args(f, u);
		f->st->uprobe_slices++;
		break;
	case BT_UR_END:
		pf_te_begin(f, h->ts_ns, uuid, TE_TYPE_SLICE_END, NULL, "uprobe");
		pf_ann_int(f, "ret", (int64_t)u->ret);
		pf_ann_ptr(f, "ret_hex", u->ret);
		if (u->duration_ns)
			pf_ann_uint(f, "duration_ns", u->duration_ns);
		break;
	case BT_UR_ENTRY_ALONE:
		snprintf(name, sizeof(name), "%s (entry, no return)", fn);
		pf_te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, name, "uprobe");
		uprobe_args(f, u);
		pf_ann_bool(f, "unmatched", 1);
		f->st->uprobe_unmatched++;
		break;
	case BT_UR_RETURN_ALONE:
		snprintf(name, sizeof(name), "%s (return, no entry)", fn);
		pf_te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, name, "uprobe");
		pf_ann_int(f, "ret", (int64_t)u->ret);
		pf_ann_ptr(f, "ret_hex", u->ret);
		if (u->duration_ns)
			pf_ann_uint(f, "duration_ns", u->duration_ns);
		pf_ann_bool(f, "unmatched", 1);
		f->st->uprobe_unmatched++;
		break;
	case BT_UR_ENTRY_ONLY: /* no %return asked for: a call, nothing missing */
		pf_te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, fn, "uprobe");
		uprobe_args(f, u);
		f->st->uprobe_calls++;
		break;
	case BT_UR_RETURN_ONLY:
		/* %return alone: the call, from the duration the return carries
		 * (the importer sorts the earlier begin into place) */
		pf_te_begin(f, h->ts_ns - u->duration_ns, uuid, TE_TYPE_SLICE_BEGIN, fn, "uretprobe");
		pf_ann_uint(f, "probe_id", u->probe_id);
		if ((r = pf_packet_flush(f, w)) < 0)
			return r;
		pf_te_begin(f, h->ts_ns, uuid, TE_TYPE_SLICE_END, NULL, "uretprobe");
		pf_ann_int(f, "ret", (int64_t)u->ret);
		pf_ann_ptr(f, "ret_hex", u->ret);
		pf_ann_uint(f, "duration_ns", u->duration_ns);
		f->st->uprobe_return_slices++;
		break;
	case BT_UR_RETURN_UNTIMED:
		snprintf(name, sizeof(name), "%s (return, not timed)", fn);
		pf_te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, name, "uretprobe");
		pf_ann_int(f, "ret", (int64_t)u->ret);
		pf_ann_ptr(f, "ret_hex", u->ret);
		pf_ann_bool(f, "untimed", 1);
		f->st->uprobe_untimed++;
		break;
	default: /* USDT */
		pf_te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, fn, "usdt");
		uprobe_args(f, u);
		break;
	}
	pf_ann_uint(f, "probe_id", u->probe_id);
	return pf_packet_flush(f, w);
}

/* ---- application events (in-process tracing) ------------------------------------------ */

/* A process track per application, named by the application: its counter
 * tracks hang below it. One per pid: the importer takes a second process
 * descriptor for a pid as pid reuse (an application that registered twice,
 * after an exec say, shares the first one's). */
int pf_write_app_processes(struct pf *f)
{
	const struct bt_export_prep *p = f->p;
	struct pbw *w = &f->pkt;
	struct bt_u32map first = { 0 }; /* pid -> first app of it */
	f->app_proc = calloc(p->napps ? p->napps : 1, sizeof(*f->app_proc));
	if (!f->app_proc) {
		snprintf(f->err, f->errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t a = 0; a < p->napps; a++) {
		uint32_t a0;
		if (!bt_u32map_get(&first, p->apps[a].pid, &a0)) {
			a0 = (uint32_t)a;
			if (bt_u32map_put(&first, p->apps[a].pid, a0) < 0) {
				bt_u32map_free(&first);
				snprintf(f->err, f->errlen, "out of memory");
				return -ENOMEM;
			}
		}
		f->app_proc[a] = a0;
	}
	bt_u32map_free(&first);
	for (size_t a = 0; a < p->napps; a++) {
		const struct bt_dump_app *x = &p->apps[a];
		if (f->app_proc[a] != a)
			continue;
		pf_packet_begin(f, w, SEQ_TRACK, p->first_ts);
		pbw_begin(w, TP_TRACK_DESCRIPTOR);
		pbw_uint(w, TD_UUID, UUID_APP_PROCESS(a));
		pbw_begin(w, TD_PROCESS);
		pbw_int(w, PRD_PID, (int32_t)x->pid);
		pbw_utf8(w, PRD_PROCESS_NAME, x->name, sizeof(x->name));
		pbw_end(w);
		int r = pf_packet_flush(f, w);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The counter track of (application, name), under the application's process. */
static int counter_track(struct pf *f, int32_t app, uint32_t name_id)
{
	uint32_t key = (uint32_t)app << 16 | name_id;
	char nb[32];
	/* name ids are 16-bit (the reader rejects larger tables); a larger,
	 * unknown one gets its descriptor again each time (identical: harmless) */
	int cached = name_id <= 0xffff;
	if (cached && bt_u32map_get(&f->counter_tracks, key, NULL))
		return 0;
	if (cached && bt_u32map_put(&f->counter_tracks, key, 1) < 0) {
		snprintf(f->err, f->errlen, "out of memory");
		return -ENOMEM;
	}
	struct pbw *w = &f->pkt;
	pf_packet_begin(f, w, SEQ_TRACK, f->p->first_ts);
	pbw_begin(w, TP_TRACK_DESCRIPTOR);
	pbw_uint(w, TD_UUID, UUID_APP_COUNTER(app, name_id));
	pbw_uint(w, TD_PARENT_UUID, UUID_APP_PROCESS((size_t)app < f->p->napps ? f->app_proc[app] : (uint32_t)app));
	pbw_utf8(w, TD_NAME, bt_export_app_name(f->p, app, name_id, nb, sizeof(nb)), SIZE_MAX);
	pbw_begin(w, TD_COUNTER);
	pbw_end(w);
	return pf_packet_flush(f, w);
}

/* bt_export_app_args() callback: an argument as an int annotation */
static void ann_int_arg(void *f, const char *name, int64_t v)
{
	pf_ann_int(f, name, v);
}

static void app_args(struct pf *f, const struct bt_ev_app *a)
{
	bt_export_app_args(a, ann_int_arg, f);
}

/* Trace processor keeps at most 512 open slices per track: a deeper BEGIN
 * is dropped and its END then closes the wrong slice (every slice of a
 * deeper recursion would get a wrong duration). The 512th open slice of a
 * thread's functions is therefore a marker standing for every call below
 * it; its END says how many calls it hides (counted in func_too_deep). */
#define MAX_SLICE_DEPTH 512
#define DEEP_MARKER "[deeper calls not drawn: trace processor keeps 512 levels]"

static int func_depth_set(struct pf *f, struct bt_u32map *m, uint32_t tid, uint32_t v)
{
	if (bt_u32map_put(m, tid, v) < 0) {
		snprintf(f->err, f->errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* The END of the marker, with the number of calls it hides. */
static void deep_marker_end(struct pf *f, uint64_t ts, uint32_t tid)
{
	uint32_t hidden = 0;
	bt_u32map_get(&f->func_hidden, tid, &hidden);
	pf_te_begin(f, ts, UUID_FUNCS(tid), TE_TYPE_SLICE_END, NULL, "func");
	pf_ann_uint(f, "calls_not_drawn", hidden);
}

/* The mark of a call or slice open at the window's end ("open_at_dump_end"),
 * at its thread's exit (end: the exit's index), or at the last event of a
 * thread that died without its exit in the window (end: that event). */
static void open_mark(struct pf *f, size_t end)
{
	if (bt_export_is_exit(f->p, end)) {
		pf_ann_bool(f, "closed_at_thread_exit", 1);
		f->st->closed_at_exit++;
	} else if (end < f->p->nev) {
		pf_ann_bool(f, "closed_at_thread_last_event", 1);
		f->st->closed_at_last++;
	} else {
		pf_ann_bool(f, "open_at_dump_end", 1);
	}
}

/* A call's BEGIN at ts on the thread's functions track, one level deeper;
 * the 512th level the marker (*drawn 0), deeper ones hidden in it (*drawn
 * -1: nothing begun). */
static int func_begin(struct pf *f, uint32_t tid, uint64_t ts, const char *nm, uint64_t addr, int *drawn)
{
	uint32_t depth = 0, hidden = 0;
	int r, marker = 0;
	bt_u32map_get(&f->func_depth, tid, &depth);
	bt_u32map_get(&f->func_hidden, tid, &hidden);
	*drawn = -1;
	if ((r = func_depth_set(f, &f->func_depth, tid, depth + 1)) < 0)
		return r;
	if (depth >= MAX_SLICE_DEPTH - 1) {
		f->st->func_too_deep++;
		if ((r = func_depth_set(f, &f->func_hidden, tid, hidden + 1)) < 0 || depth > MAX_SLICE_DEPTH - 1)
			return r;
		marker = 1;
	}
	pf_te_begin(f, ts, UUID_FUNCS(tid), TE_TYPE_SLICE_BEGIN, marker ? DEEP_MARKER : nm, "func");
	if (!marker)
		pf_ann_uint(f, "addr", addr);
	*drawn = !marker;
	return 0;
}

/* A function entry or exit (-finstrument-functions) on the thread's
 * "functions" track: each call a slice, nested as the calls were. A call
 * still open at the end of the dump is closed there (pf_close_open_funcs) and
 * marked open_at_dump_end, one open at its thread's exit closed there
 * (pf_close_thread); an entry whose exit is lost is an instant; an exit
 * whose entry is lost is not drawn (counted). Below 511 open calls,
 * everything is hidden in the marker (above). */
static int put_func(struct pf *f, const struct bt_dump_event *de, int role)
{
	const struct bt_event_hdr *h = de->ev;
	const struct bt_ev_app *a = (const void *)h;
	char nb[32], name[160];
	uint64_t uuid = UUID_FUNCS(h->tid);
	uint32_t depth = 0, hidden = 0;
	int r, drawn;

	if (role == BT_AR_FUNC_EXIT_ALONE) {
		f->st->func_exits_dropped++;
		return 0;
	}
	if ((r = pf_child_track(f, h->tid, h->tgid, TRACK_FUNCS)) < 0)
		return r;
	bt_u32map_get(&f->func_depth, h->tid, &depth);
	bt_u32map_get(&f->func_hidden, h->tid, &hidden);
	const char *nm = bt_export_func_name(f->p, de->app, a, nb, sizeof(nb));
	switch (role) {
	case BT_AR_FUNC_ENTRY:
	case BT_AR_FUNC_OPEN:
		if (role == BT_AR_FUNC_ENTRY)
			f->st->func_slices++;
		else
			f->st->func_open++;
		if ((r = func_begin(f, h->tid, h->ts_ns, nm, (uint64_t)a->args[0], &drawn)) < 0)
			return r;
		if (depth > MAX_SLICE_DEPTH - 1)
			return 0;
		if (role == BT_AR_FUNC_OPEN)
			open_mark(f, f->p->aend[f->aslot - 1]);
		break;
	case BT_AR_FUNC_EXIT: {
		/* The calls a longjmp left end here too (export_prep.c), then
		 * this one; prep pairs every exit drawn here with an entry. */
		uint32_t more = 0;
		bt_u32map_get(&f->p->func_unwound, (uint32_t)(f->aslot - 1), &more);
		for (uint32_t k = 0; k <= more && depth; k++, depth--) {
			if ((r = func_depth_set(f, &f->func_depth, h->tid, depth - 1)) < 0)
				return r;
			if (depth > MAX_SLICE_DEPTH)
				continue;
			if (depth == MAX_SLICE_DEPTH) {
				deep_marker_end(f, h->ts_ns, h->tid);
				if ((r = func_depth_set(f, &f->func_hidden, h->tid, 0)) < 0)
					return r;
			} else {
				pf_te_begin(f, h->ts_ns, uuid, TE_TYPE_SLICE_END, NULL, "func");
			}
			if ((r = pf_packet_flush(f, &f->pkt)) < 0)
				return r;
		}
		return 0;
	}
	default:
		if (depth >= MAX_SLICE_DEPTH) { /* an instant there is dropped too */
			f->st->func_too_deep++;
			f->st->func_unmatched++;
			return func_depth_set(f, &f->func_hidden, h->tid, hidden + 1);
		}
		snprintf(name, sizeof(name), "%s (entry, exit lost)", nm);
		pf_te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, name, "func");
		pf_ann_uint(f, "addr", (uint64_t)a->args[0]);
		pf_ann_bool(f, "unmatched", 1);
		f->st->func_unmatched++;
		break;
	}
	return pf_packet_flush(f, &f->pkt);
}

/* The calls and application slices open on thread tid end at ts. Same
 * category as their BEGIN: the importer matches an END to its BEGIN by
 * category, and leaves the slice open otherwise. */
static int close_thread(struct pf *f, uint32_t tid, uint32_t d, uint32_t ad, uint64_t ts)
{
	int r;
	for (uint32_t k = d < MAX_SLICE_DEPTH ? d : MAX_SLICE_DEPTH; k > 0; k--) {
		if (k == MAX_SLICE_DEPTH)
			deep_marker_end(f, ts, tid);
		else
			pf_te_begin(f, ts, UUID_FUNCS(tid), TE_TYPE_SLICE_END, NULL, "func");
		if ((r = pf_packet_flush(f, &f->pkt)) < 0)
			return r;
	}
	for (uint32_t k = 0; k < ad; k++) {
		pf_te_begin(f, ts, UUID_APP_THREAD(tid), TE_TYPE_SLICE_END, NULL, "app");
		if ((r = pf_packet_flush(f, &f->pkt)) < 0)
			return r;
	}
	return 0;
}

/* A thread exited: what it had open ends there (the pre-pass marked those
 * BEGINs closed_at_thread_exit). */
int pf_close_thread(struct pf *f, uint32_t tid, uint64_t ts)
{
	uint32_t d = 0, ad = 0;
	bt_u32map_get(&f->func_depth, tid, &d);
	bt_u32map_get(&f->app_depth, tid, &ad);
	if (!d && !ad)
		return 0;
	int r = close_thread(f, tid, d, ad, ts);
	if (r < 0 || (r = func_depth_set(f, &f->func_depth, tid, 0)) < 0 ||
	    (r = func_depth_set(f, &f->func_hidden, tid, 0)) < 0 || (r = func_depth_set(f, &f->app_depth, tid, 0)) < 0)
		return r;
	return 0;
}

/* The calls and application slices still open at the end of the dump end
 * there: a slice never ended would have no duration in the UI (dur -1 in
 * trace processor). */
int pf_close_open_funcs(struct pf *f)
{
	uint64_t end = f->p->last_ts;
	for (int app = 0; app < 2; app++) {
		const struct bt_u32map *m = app ? &f->app_depth : &f->func_depth;
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->used[i] || !m->vals[i])
				continue;
			int r = app ? close_thread(f, m->keys[i], 0, m->vals[i], end)
				    : close_thread(f, m->keys[i], m->vals[i], 0, end);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* The calls and application slices open at the window's start, per thread
 * outermost first: each a BEGIN at the window's start, marked
 * begun_before_window (began_ns: its real start where the dump has it),
 * ended by its exit/END in the window or closed as open ones are. */
int pf_put_enclosing(struct pf *f)
{
	const struct bt_export_prep *p = f->p;
	char nb[32];
	int r, drawn;

	for (size_t i = 0; i < p->nencl; i++) {
		const struct bt_encl *x = &p->encl[i];
		if (x->end_kind == BT_ENCL_LOST) {
			f->st->encl_lost++;
			continue;
		}
		if ((r = pf_child_track(f, x->tid, x->tgid, x->func ? TRACK_FUNCS : TRACK_APP)) < 0)
			return r;
		if (x->func) {
			if ((r = func_begin(f, x->tid, p->win_start, bt_export_encl_name(p, x, nb, sizeof(nb)),
					    (uint64_t)x->ev->args[0], &drawn)) < 0)
				return r;
			f->st->encl_funcs++;
		} else {
			uint32_t ad = 0;
			bt_u32map_get(&f->app_depth, x->tid, &ad);
			if ((r = func_depth_set(f, &f->app_depth, x->tid, ad + 1)) < 0)
				return r;
			pf_te_begin(f, p->win_start, UUID_APP_THREAD(x->tid), TE_TYPE_SLICE_BEGIN,
				    bt_export_encl_name(p, x, nb, sizeof(nb)), "app");
			drawn = 1;
			f->st->encl_apps++;
		}
		if (drawn < 0)
			continue;
		if (drawn) {
			pf_ann_bool(f, "begun_before_window", 1);
			if (x->seeded)
				pf_ann_uint(f, "began_ns", x->entry_ts);
			if (x->end_kind == BT_ENCL_THREAD_EXIT)
				open_mark(f, x->end);
			else if (x->end_kind == BT_ENCL_OPEN_AT_END)
				open_mark(f, SIZE_MAX);
		}
		if ((r = pf_packet_flush(f, &f->pkt)) < 0)
			return r;
	}
	return 0;
}

int pf_put_app(struct pf *f, const struct bt_dump_event *de)
{
	const struct bt_event_hdr *h = de->ev;
	const struct bt_ev_app *a = (const void *)h;
	struct pbw *w = &f->pkt;
	char nb[32], name[128];
	int role = f->aslot < f->p->narole ? f->p->arole[f->aslot] : BT_AR_FOREIGN;
	f->aslot++;

	if (role == BT_AR_FOREIGN) {
		f->st->app_dropped++;
		return 0;
	}
	if (role >= BT_AR_FUNC_ENTRY)
		return put_func(f, de, role);
	const char *nm = bt_export_app_name(f->p, de->app, a->name_id, nb, sizeof(nb));
	uint64_t uuid = UUID_APP_THREAD(h->tid);
	int r;
	if (role == BT_AR_COUNTER) {
		if ((r = counter_track(f, de->app, a->name_id)) < 0)
			return r;
		pf_te_begin(f, h->ts_ns, UUID_APP_COUNTER(de->app, a->name_id), TE_TYPE_COUNTER, NULL, NULL);
		pbw_int(w, TE_COUNTER_VALUE, a->nargs ? a->args[0] : 0);
		f->st->app_counters++;
		return pf_packet_flush(f, w);
	}
	if ((r = pf_child_track(f, h->tid, h->tgid, TRACK_APP)) < 0)
		return r;
	uint32_t ad = 0;
	bt_u32map_get(&f->app_depth, h->tid, &ad);
	switch (role) {
	case BT_AR_BEGIN:
	case BT_AR_BEGIN_OPEN:
		if ((r = func_depth_set(f, &f->app_depth, h->tid, ad + 1)) < 0)
			return r;
		pf_te_begin(f, h->ts_ns, uuid, TE_TYPE_SLICE_BEGIN, nm, "app");
		app_args(f, a);
		if (role == BT_AR_BEGIN) {
			f->st->app_slices++;
		} else {
			open_mark(f, f->p->aend[f->aslot - 1]);
			f->st->app_open++;
		}
		break;
	case BT_AR_END:
		if (ad && (r = func_depth_set(f, &f->app_depth, h->tid, ad - 1)) < 0)
			return r;
		pf_te_begin(f, h->ts_ns, uuid, TE_TYPE_SLICE_END, NULL, "app");
		app_args(f, a);
		break;
	case BT_AR_BEGIN_ALONE:
		snprintf(name, sizeof(name), "%s (begin, no end)", nm);
		pf_te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, name, "app");
		app_args(f, a);
		pf_ann_bool(f, "unmatched", 1);
		f->st->app_unmatched++;
		break;
	case BT_AR_END_ALONE:
		pf_te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, "end (no begin)", "app");
		app_args(f, a);
		pf_ann_bool(f, "unmatched", 1);
		f->st->app_unmatched++;
		break;
	default:
		pf_te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, nm, "app");
		app_args(f, a);
		f->st->app_instants++;
		break;
	}
	return pf_packet_flush(f, w);
}

/* A per-thread seq gap of application events: an instant on the thread's
 * application track where the thread's events resume. */
int pf_put_app_gap(struct pf *f, const struct bt_app_gap *g, const struct bt_event_hdr *h)
{
	struct pbw *w = &f->pkt;
	char name[64];
	int r = pf_child_track(f, g->tid, h->tgid, TRACK_APP);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "LOST %" PRIu64 " events", g->missing);
	pf_te_begin(f, h->ts_ns, UUID_APP_THREAD(g->tid), TE_TYPE_INSTANT, name, "btrace");
	pf_ann_uint(f, "tid", g->tid);
	pf_ann_uint(f, "first_missing_seq", g->from_seq);
	pf_ann_uint(f, "missing", g->missing);
	pf_ann_uint(f, "since_ts", g->prev_ts);
	f->st->app_gaps++;
	f->st->app_missing += g->missing;
	return pf_packet_flush(f, w);
}
