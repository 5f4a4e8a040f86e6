// SPDX-License-Identifier: MIT
/*
 * export_enclosing.c - the calls and application slices open at a window's
 * start (export_prep.h, struct bt_encl): seeded from the dump's events
 * before convert --time's window, completed by the pairing
 * (export_pair_apps.c) with exits and ENDs whose entry the dump does not
 * have, then ordered per thread outermost first, so every exporter draws
 * the calls that enclose the window from its start.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "export_prep_steps.h"
#include "event_filter.h"

struct bt_encl *bt_export_encl_add(struct bt_export_prep *p)
{
	if (p->nencl == p->capencl) {
		size_t nc = p->capencl ? p->capencl * 2 : 16;
		void *q = realloc(p->encl, nc * sizeof(*p->encl));
		if (!q)
			return NULL;
		p->encl = q;
		p->capencl = nc;
	}
	memset(&p->encl[p->nencl], 0, sizeof(p->encl[0]));
	return &p->encl[p->nencl++];
}

/* A thread before the window: its open BEGINs and calls (event indices). */
struct sthread {
	uint32_t tid, tgid, last_seq;
	int32_t app;
	int have_seq;
	size_t na, nf, capa, capf;
	size_t *a, *f;
};

static int push(size_t **v, size_t *n, size_t *cap, size_t i)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		void *q = realloc(*v, nc * sizeof(**v));
		if (!q)
			return -ENOMEM;
		*v = q;
		*cap = nc;
	}
	(*v)[(*n)++] = i;
	return 0;
}

/* One application event before the window on its thread, paired as
 * export_pair_apps.c pairs (a seq gap forgets what was open). */
static int seed_event(struct sthread *t, const struct bt_dump_event *all, size_t i)
{
	const struct bt_event_hdr *h = all[i].ev;
	const struct bt_ev_app *e = (const void *)h;

	if (t->app != all[i].app || (t->have_seq && (int32_t)(h->seq - t->last_seq) > 1))
		t->na = t->nf = 0;
	t->app = all[i].app;
	t->tgid = h->tgid;
	if (!t->have_seq || (int32_t)(h->seq - t->last_seq) > 0)
		t->last_seq = h->seq;
	t->have_seq = 1;
	switch (h->type) {
	case BT_EV_APP_BEGIN:
		return push(&t->a, &t->na, &t->capa, i);
	case BT_EV_APP_END:
		t->na -= t->na > 0;
		return 0;
	case BT_EV_APP_FUNC_ENTRY:
		return push(&t->f, &t->nf, &t->capf, i);
	case BT_EV_APP_FUNC_EXIT: {
		size_t j = t->nf;
		while (j > 0 && ((const struct bt_ev_app *)(const void *)all[t->f[j - 1]].ev)->args[0] != e->args[0])
			j--;
		if (j)
			t->nf = j - 1; /* it, and the calls a longjmp left above it */
		return 0;
	}
	default:
		return 0;
	}
}

static int add_seeds(struct bt_export_prep *p, const struct bt_dump_event *all, const struct sthread *t)
{
	for (int func = 0; func < 2; func++) {
		size_t n = func ? t->nf : t->na;
		const size_t *v = func ? t->f : t->a;
		for (size_t k = 0; k < n; k++) {
			struct bt_encl *x = bt_export_encl_add(p);
			if (!x)
				return -ENOMEM;
			x->tid = t->tid;
			x->tgid = t->tgid;
			x->app = t->app;
			x->func = (uint8_t)func;
			x->seeded = 1;
			x->ev = (const void *)all[v[k]].ev;
			x->entry_ts = all[v[k]].ev->ts_ns;
			x->order = (uint32_t)k;
			x->last_seq = t->last_seq;
			x->end = SIZE_MAX;
		}
	}
	return 0;
}

/* Whether the thread died before t0, its exit not in the dump (the task
 * table, or its application, says so): nothing of it is open in the window. */
static int died_before(const struct bt_export_prep *p, const struct sthread *t, uint64_t t0)
{
	const struct bt_task *tk = bt_tasks_find(p->tasks, p->ntasks, t->tid);
	uint64_t exit_ts = tk ? tk->exit_ts : 0;
	size_t na;
	const struct bt_dump_app *apps = bt_dump_apps(p->d, &na);
	if (!exit_ts && t->app >= 0 && (size_t)t->app < na)
		exit_ts = apps[t->app].exit_ts;
	return exit_ts && exit_ts < t0;
}

int bt_export_seed_enclosing(struct bt_export_prep *p, const struct bt_event_filter *f)
{
	size_t n;
	const struct bt_dump_event *all = bt_dump_events(p->d, &n);
	if (!n || !f)
		return 0;
	struct bt_event_filter ff = *f;
	bt_filter_resolve(&ff, all[0].ev->ts_ns, all[n - 1].ev->ts_ns);
	if (ff.t0 <= all[0].ev->ts_ns)
		return 0;
	p->win_start = ff.t0;
	uint64_t t0 = ff.t0;
	ff.t0 = 0;
	ff.t1 = UINT64_MAX;

	struct bt_u32map map = { 0 }; /* tid -> index into th */
	struct sthread *th = NULL;
	size_t nth = 0, cap = 0;
	int r = 0;
	for (size_t i = 0; i < n && all[i].ev->ts_ns < t0 && r == 0; i++) {
		const struct bt_event_hdr *h = all[i].ev;
		uint32_t ti;
		if (all[i].app < 0) {
			/* a thread that exited has nothing open (its tid may come back) */
			if (h->type == BT_EV_PROCESS_EXIT && bt_u32map_get(&map, h->tid, &ti))
				th[ti].na = th[ti].nf = 0, th[ti].have_seq = 0;
			continue;
		}
		const struct bt_xthread *xt = bt_export_thread(p, h->tid);
		if (!h->tid || (xt && xt->tgid && xt->tgid != h->tgid) || !bt_filter_match(&ff, h))
			continue;
		if (!bt_u32map_get(&map, h->tid, &ti)) {
			if (nth == cap) {
				size_t nc = cap ? cap * 2 : 16;
				void *q = realloc(th, nc * sizeof(*th));
				if (!q) {
					r = -ENOMEM;
					break;
				}
				th = q;
				cap = nc;
			}
			ti = (uint32_t)nth;
			if (bt_u32map_put(&map, h->tid, ti) < 0) {
				r = -ENOMEM;
				break;
			}
			memset(&th[nth], 0, sizeof(th[nth]));
			th[nth].tid = h->tid;
			th[nth++].app = all[i].app;
		}
		r = seed_event(&th[ti], all, i);
	}
	for (size_t i = 0; i < nth; i++) {
		if (r == 0 && !died_before(p, &th[i], t0))
			r = add_seeds(p, all, &th[i]);
		free(th[i].a);
		free(th[i].f);
	}
	free(th);
	bt_u32map_free(&map);
	return r;
}

/* Per thread; the one ending last (the outermost) first; at the same end,
 * those begun before the dump first, then by depth. Lost ones last. */
static int encl_cmp(const void *a, const void *b)
{
	const struct bt_encl *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->end_ts != y->end_ts)
		return x->end_ts > y->end_ts ? -1 : 1;
	if (x->seeded != y->seeded)
		return x->seeded < y->seeded ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

void bt_export_encl_finish(struct bt_export_prep *p)
{
	for (size_t i = 0; i < p->nencl; i++) {
		struct bt_encl *x = &p->encl[i];
		if (x->end_kind == BT_ENCL_LOST) {
			x->end_ts = 0;
			p->encl_lost++;
		} else if (x->end_kind == BT_ENCL_OPEN_AT_END || x->end >= p->nev) {
			x->end_kind = BT_ENCL_OPEN_AT_END;
			x->end_ts = p->last_ts;
		} else {
			x->end_ts = p->ev[x->end].ev->ts_ns;
		}
		if (x->end_ts && x->end_ts < p->win_start) /* never: kept events are in the window */
			x->end_ts = p->win_start;
	}
	if (p->nencl > 1)
		qsort(p->encl, p->nencl, sizeof(*p->encl), encl_cmp);
}
