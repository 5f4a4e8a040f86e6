// SPDX-License-Identifier: MIT
/*
 * export_prep.c - the pre-pass over a dump that both exporters
 * (export_perfetto.c, export_json.c, export_pprof.c) share, see
 * export_prep.h: the events kept by a filter, the steps in order (threads:
 * export_threads.c; pairing: export_pair_uprobes.c, export_pair_apps.c),
 * the seq gaps and window, and the names and arguments of probes,
 * applications and functions. The loss counters: export_losses.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_prep_steps.h"
#include "event_filter.h"
#include "event_names.h"

/* ---- the pre-pass ----------------------------------------------------------- */

/* The events f keeps (convert --time, --pid) in p->own_ev; the seq gaps
 * found on all of the dump's events, each at the first kept event after
 * it (gaps before the first kept event left out: outside the window). */
static int filter_events(struct bt_export_prep *p, const struct bt_event_filter *f)
{
	size_t n, k = 0, g = 0;
	const struct bt_dump_event *all = bt_dump_events(p->d, &n);
	size_t *first_kept = malloc((n + 1) * sizeof(*first_kept)); /* original index -> kept index at or after */

	p->own_ev = malloc((n ? n : 1) * sizeof(*p->own_ev));
	if (!first_kept || !p->own_ev) {
		free(first_kept);
		return -ENOMEM;
	}
	struct bt_event_filter ff = *f;
	if (n)
		bt_filter_resolve(&ff, all[0].ev->ts_ns, all[n - 1].ev->ts_ns);
	size_t orig_first = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		first_kept[i] = k;
		if (bt_filter_match(&ff, all[i].ev)) {
			if (orig_first == SIZE_MAX)
				orig_first = i;
			p->own_ev[k++] = all[i];
		}
	}
	first_kept[n] = k;
	if (bt_seq_gaps(all, n, p->hdr->ncpus, &p->gaps, &p->ngaps) < 0) {
		free(first_kept);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->ngaps; i++) {
		if (p->gaps[i].index <= orig_first || first_kept[p->gaps[i].index] >= k)
			continue;
		p->gaps[g] = p->gaps[i];
		p->gaps[g++].index = first_kept[p->gaps[i].index];
	}
	p->ngaps = g;
	p->ev = p->own_ev;
	p->nev = k;
	free(first_kept);
	return 0;
}

int bt_export_prepare(const struct bt_dump *d, struct bt_export_prep *p)
{
	return bt_export_prepare_filtered(d, p, NULL);
}

int bt_export_prepare_filtered(const struct bt_dump *d, struct bt_export_prep *p, const struct bt_event_filter *f)
{
	int r = -ENOMEM;

	memset(p, 0, sizeof(*p));
	p->d = d;
	p->hdr = bt_dump_header(d);
	p->ev = bt_dump_events(d, &p->nev);
	if (f && bt_filter_active(f) && filter_events(p, f) < 0)
		goto out;
	p->pidf = f && f->npids ? f : NULL;
	p->tasks = bt_dump_tasks(d, &p->ntasks);
	p->probes = bt_dump_probes(d, &p->nprobes);
	if (p->nev) {
		p->first_ts = p->ev[0].ev->ts_ns;
		p->last_ts = p->ev[p->nev - 1].ev->ts_ns;
	}

	p->win_end = UINT64_MAX;
	if (f && bt_filter_active(f)) {
		size_t n;
		const struct bt_dump_event *all = bt_dump_events(d, &n);
		struct bt_event_filter ff = *f;
		if (n)
			bt_filter_resolve(&ff, all[0].ev->ts_ns, all[n - 1].ev->ts_ns);
		if (n && ff.t1)
			p->win_end = ff.t1;
	}
	if (bt_export_collect_threads(p) < 0 || (f && bt_export_seed_enclosing(p, f) < 0))
		goto out;
	if (!p->win_start) { /* the dump's own start */
		size_t n;
		const struct bt_dump_event *all = bt_dump_events(d, &n);
		p->win_start = n ? all[0].ev->ts_ns : 0;
	}
	size_t nu = 0;
	for (size_t i = 0; i < p->nev; i++)
		nu += bt_event_is_uprobe(p->ev[i].ev->type) && p->ev[i].ev->cpu < p->hdr->ncpus;
	p->urole = calloc(nu ? nu : 1, 1);
	if (!p->urole)
		goto out;
	p->nurole = nu;
	if (bt_export_pair_uprobes(p) < 0)
		goto out;

	p->apps = bt_dump_apps(d, &p->napps);
	size_t na = 0;
	for (size_t i = 0; i < p->nev; i++)
		na += p->ev[i].app >= 0;
	p->narole = na;
	p->arole = calloc(na ? na : 1, 1);
	p->abegin = calloc(na ? na : 1, sizeof(*p->abegin));
	p->aend = calloc(na ? na : 1, sizeof(*p->aend));
	p->app_gaps = calloc(p->napps ? p->napps : 1, sizeof(*p->app_gaps));
	p->app_missing = calloc(p->napps ? p->napps : 1, sizeof(*p->app_missing));
	if (!p->arole || !p->abegin || !p->aend || !p->app_gaps || !p->app_missing || bt_export_pair_apps(p) < 0)
		goto out;
	bt_export_encl_finish(p);

	p->percpu = calloc(p->hdr->ncpus ? p->hdr->ncpus : 1, sizeof(*p->percpu));
	if (!p->percpu)
		goto out;
	if (bt_seq_analyze_dump(p->d, p->ev, p->nev, p->hdr->ncpus, &p->win, p->percpu) < 0 ||
	    (!p->own_ev && bt_seq_gaps(p->ev, p->nev, p->hdr->ncpus, &p->gaps, &p->ngaps) < 0))
		goto out;
	r = 0;
out:
	if (r)
		bt_export_prep_free(p);
	return r;
}

void bt_export_prep_free(struct bt_export_prep *p)
{
	free(p->threads);
	free(p->urole);
	free(p->gaps);
	free(p->percpu);
	free(p->arole);
	free(p->abegin);
	free(p->aend);
	bt_u32map_free(&p->func_unwound);
	free(p->agaps);
	free(p->app_gaps);
	free(p->app_missing);
	free(p->own_ev);
	free(p->encl);
	free(p->tends);
	bt_u32map_free(&p->func_tids);
	memset(p, 0, sizeof(*p));
}


int bt_export_is_exit(const struct bt_export_prep *p, size_t i)
{
	return i < p->nev && p->ev[i].ev->type == BT_EV_PROCESS_EXIT;
}

uint64_t bt_export_stack_open_from(const struct bt_export_prep *p, uint32_t tid, uint64_t ts)
{
	const struct bt_xthread *t = bt_export_thread(p, tid);
	if (!tid || p->win_start >= ts || bt_u32map_get(&p->func_tids, tid, NULL) ||
	    (t && t->born_ts && t->born_ts <= ts))
		return 0;
	return p->win_start;
}

int bt_export_selected(const struct bt_export_prep *p, uint32_t tid)
{
	if (!p->pidf)
		return 1;
	if (!tid)
		return 0;
	const struct bt_xthread *t = bt_export_thread(p, tid);
	return bt_filter_pid_ok(p->pidf, tid) || (t && t->tgid && bt_filter_pid_ok(p->pidf, t->tgid));
}

const char *bt_export_probe_name(const struct bt_export_prep *p, uint32_t probe_id, char *buf, size_t len)
{
	const struct bt_probe_desc *d = bt_probe_find(p->probes, p->nprobes, probe_id);
	if (d && d->func[0])
		return d->func;
	if (d && d->spec[0])
		return d->spec;
	snprintf(buf, len, "probe#%u", probe_id);
	return buf;
}

const char *bt_export_app_name(const struct bt_export_prep *p, int32_t app, uint32_t name_id, char *buf,
			       size_t len)
{
	const char *n = bt_dump_app_event_name(p->d, app, name_id);
	if (n)
		return n;
	snprintf(buf, len, "name#%u", name_id);
	return buf;
}

const char *bt_export_func_name(const struct bt_export_prep *p, int32_t app, const struct bt_ev_app *a, char *buf,
				size_t len)
{
	const char *n = bt_dump_app_event_name(p->d, app, a->name_id);
	if (n)
		return n;
	snprintf(buf, len, "0x%" PRIx64, a->nargs ? (uint64_t)a->args[0] : 0);
	return buf;
}

const char *bt_export_encl_name(const struct bt_export_prep *p, const struct bt_encl *x, char *buf, size_t len)
{
	if (x->func)
		return bt_export_func_name(p, x->app, x->ev, buf, len);
	const char *n = bt_dump_app_event_name(p->d, x->app, x->ev->name_id);
	return n ? n : "slice begun before the window"; /* an END carries no name */
}

void bt_export_uprobe_args(const struct bt_ev_uprobe *u, void (*emit)(void *ctx, const char *name, uint64_t v),
			   void *ctx)
{
	static const char *const names[BT_MAX_UARGS] = { "arg1", "arg2", "arg3", "arg4", "arg5", "arg6" };
	uint32_t n = u->nargs < BT_MAX_UARGS ? u->nargs : BT_MAX_UARGS;
	for (uint32_t i = 0; i < n; i++)
		emit(ctx, names[i], u->args[i]);
}

void bt_export_app_args(const struct bt_ev_app *a, void (*emit)(void *ctx, const char *name, int64_t v), void *ctx)
{
	static const char *const names[BT_APP_MAX_ARGS] = { "arg1", "arg2", "arg3", "arg4" };
	uint32_t n = a->nargs < BT_APP_MAX_ARGS ? a->nargs : BT_APP_MAX_ARGS;
	for (uint32_t i = 0; i < n; i++)
		emit(ctx, names[i], a->args[i]);
}
