// SPDX-License-Identifier: MIT
/*
 * export_prep.c - what both exporters (export_perfetto.c, export_json.c)
 * share, see export_prep.h: the pre-pass over the dump (every thread with its
 * name and process, the pairing of uprobe entries with their returns, one byte
 * per uprobe event, application BEGIN/END pairing, the seq gaps), the names
 * of probes and applications, the loss counters, and a small uint32 map.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "export_prep.h"
#include "event_filter.h"
#include "event_names.h"
#include "switch_chain.h"
#include "dump_stacks.h"

/* ---- uint32 map ------------------------------------------------------------ */

static size_t map_slot(const struct bt_u32map *m, uint32_t key)
{
	size_t i = (size_t)((key * 2654435761u) ^ (key >> 16)) & (m->cap - 1);
	while (m->used[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

int bt_u32map_put(struct bt_u32map *m, uint32_t key, uint32_t val)
{
	if ((m->n + 1) * 2 > m->cap) {
		struct bt_u32map g = { .cap = m->cap ? m->cap * 2 : 64 };
		g.keys = malloc(g.cap * sizeof(*g.keys));
		g.vals = malloc(g.cap * sizeof(*g.vals));
		g.used = calloc(g.cap, 1);
		if (!g.keys || !g.vals || !g.used) {
			free(g.keys);
			free(g.vals);
			free(g.used);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->used[i])
				continue;
			size_t j = map_slot(&g, m->keys[i]);
			g.used[j] = 1;
			g.keys[j] = m->keys[i];
			g.vals[j] = m->vals[i];
		}
		g.n = m->n;
		bt_u32map_free(m);
		*m = g;
	}
	size_t i = map_slot(m, key);
	if (!m->used[i]) {
		m->used[i] = 1;
		m->keys[i] = key;
		m->n++;
	}
	m->vals[i] = val;
	return 0;
}

int bt_u32map_get(const struct bt_u32map *m, uint32_t key, uint32_t *val)
{
	if (!m->cap)
		return 0;
	size_t i = map_slot(m, key);
	if (!m->used[i])
		return 0;
	if (val)
		*val = m->vals[i];
	return 1;
}

void bt_u32map_free(struct bt_u32map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

/* ---- pre-pass ------------------------------------------------------------- */

static int is_uprobe_type(uint32_t t)
{
	return t == BT_EV_UPROBE_ENTRY || t == BT_EV_UPROBE_RETURN || t == BT_EV_USDT;
}

/* Threads: collected in a map tid -> index into a growing array. */
struct tcoll {
	struct bt_u32map map;
	struct bt_xthread *t;
	size_t n, cap;
};

static int tcoll_add(struct tcoll *c, uint32_t tid, uint32_t tgid)
{
	uint32_t idx;
	if (tid == 0)
		return 0;
	if (bt_u32map_get(&c->map, tid, &idx)) {
		if (!c->t[idx].tgid && tgid)
			c->t[idx].tgid = tgid;
		return 0;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		void *p = realloc(c->t, cap * sizeof(*c->t));
		if (!p)
			return -ENOMEM;
		c->t = p;
		c->cap = cap;
	}
	memset(&c->t[c->n], 0, sizeof(c->t[c->n]));
	c->t[c->n].tid = tid;
	c->t[c->n].tgid = tgid;
	if (bt_u32map_put(&c->map, tid, (uint32_t)c->n) < 0)
		return -ENOMEM;
	c->n++;
	return 0;
}

static int cmp_thread(const void *a, const void *b)
{
	const struct bt_xthread *x = a, *y = b;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Probe equivalence class: an entry probe and the return probe of the same
 * function (same binary, offset and symbol) pair up; without a table entry
 * only the same probe id does. */
static uint32_t probe_class(const struct bt_export_prep *p, uint32_t id)
{
	const struct bt_probe_desc *d = bt_probe_find(p->probes, p->nprobes, id);
	if (!d)
		return 0x80000000u | id;
	for (size_t i = 0; i < p->nprobes; i++) {
		const struct bt_probe_desc *q = &p->probes[i];
		if (q == d || (q->offset == d->offset && !strcmp(q->binary, d->binary) && !strcmp(q->func, d->func)))
			return (uint32_t)i;
	}
	return (uint32_t)(d - p->probes);
}

#define USTACK_MAX 256

struct ustack {
	uint32_t n;
	struct { uint32_t cls; uint32_t slot; } e[USTACK_MAX];
};

static int pair_uprobes(struct bt_export_prep *p)
{
	struct bt_u32map map = { 0 };   /* tid -> index into stacks */
	struct ustack **stk = NULL;
	size_t nstk = 0, cap = 0;
	uint32_t *cls = NULL;
	uint8_t *kinds = NULL; /* per class: PK_ENTRY | PK_RETURN probes in the table */
	int r = 0;
	enum { PK_ENTRY = 1, PK_RETURN = 2 };

	/* class per probe id, computed once (probe tables are small) */
	if (p->nprobes) {
		cls = malloc(p->nprobes * sizeof(*cls));
		kinds = calloc(p->nprobes, 1);
		if (!cls || !kinds) {
			free(cls);
			free(kinds);
			return -ENOMEM;
		}
		for (size_t i = 0; i < p->nprobes; i++) {
			const struct bt_probe_desc *d = &p->probes[i];
			cls[i] = probe_class(p, d->id);
			if (!(d->flags & BT_PROBE_USDT))
				kinds[cls[i]] |= d->flags & BT_PROBE_RETURN ? PK_RETURN : PK_ENTRY;
		}
	}
	size_t k = 0;
	for (size_t i = 0; i < p->nev && r == 0; i++) {
		const struct bt_event_hdr *h = p->ev[i].ev;
		/* the exporters skip what this skips: roles stay aligned */
		if (!is_uprobe_type(h->type) || h->cpu >= p->hdr->ncpus)
			continue;
		const struct bt_ev_uprobe *u = (const void *)h;
		size_t slot = k++;
		if (h->type == BT_EV_USDT) {
			p->urole[slot] = BT_UR_USDT;
			continue;
		}
		const struct bt_probe_desc *d = bt_probe_find(p->probes, p->nprobes, u->probe_id);
		uint32_t c = d ? cls[d - p->probes] : 0x80000000u | u->probe_id;
		uint32_t si;
		/* A function probed at one end only has no partner to miss: an
		 * entry is a call, a return carries its call's duration. */
		if (d && h->type == BT_EV_UPROBE_ENTRY && !(kinds[c] & PK_RETURN)) {
			p->urole[slot] = BT_UR_ENTRY_ONLY;
			continue;
		}
		if (d && h->type == BT_EV_UPROBE_RETURN && !(kinds[c] & PK_ENTRY)) {
			p->urole[slot] = u->duration_ns && u->duration_ns <= h->ts_ns ? BT_UR_RETURN_ONLY
										: BT_UR_RETURN_UNTIMED;
			continue;
		}
		if (!bt_u32map_get(&map, h->tid, &si)) {
			if (h->type == BT_EV_UPROBE_RETURN) {
				p->urole[slot] = BT_UR_RETURN_ALONE;
				continue;
			}
			if (nstk == cap) {
				size_t nc = cap ? cap * 2 : 16;
				void *q = realloc(stk, nc * sizeof(*stk));
				if (!q) {
					r = -ENOMEM;
					break;
				}
				stk = q;
				cap = nc;
			}
			stk[nstk] = calloc(1, sizeof(struct ustack));
			if (!stk[nstk] || bt_u32map_put(&map, h->tid, (uint32_t)nstk) < 0) {
				free(stk[nstk]);
				r = -ENOMEM;
				break;
			}
			si = (uint32_t)nstk++;
		}
		struct ustack *s = stk[si];
		if (h->type == BT_EV_UPROBE_ENTRY) {
			p->urole[slot] = BT_UR_ENTRY_ALONE; /* until its return shows up */
			if (s->n == USTACK_MAX) { /* the oldest stays unmatched */
				memmove(&s->e[0], &s->e[1], (USTACK_MAX - 1) * sizeof(s->e[0]));
				s->n--;
			}
			s->e[s->n].cls = c;
			s->e[s->n].slot = (uint32_t)slot;
			s->n++;
			continue;
		}
		/* a return: the innermost open entry of the same function */
		uint32_t j = s->n;
		while (j > 0 && s->e[j - 1].cls != c)
			j--;
		if (!j) {
			p->urole[slot] = BT_UR_RETURN_ALONE;
			continue;
		}
		/* entries above it never returned (in the dump): they stay alone */
		p->urole[s->e[j - 1].slot] = BT_UR_BEGIN;
		p->urole[slot] = BT_UR_END;
		s->n = j - 1;
	}
	for (size_t i = 0; i < nstk; i++)
		free(stk[i]);
	free(stk);
	free(cls);
	free(kinds);
	bt_u32map_free(&map);
	return r;
}

/* Application events: per thread (tid), BEGIN/END pairing on a stack and
 * the per-thread seq gaps, in time order. A gap means events of the thread
 * are missing: any of them may have been an END, so the BEGINs open before
 * it can no longer be paired (they stay alone) and an END without an open
 * BEGIN is alone. BEGINs still open at the thread's last event are open at
 * the end of the dump. Seqs are unwrapped and compared as report does. */
#define APP_STACK_MAX 256

struct athread {
	int32_t app;
	int have_seq;
	uint64_t last_seq, last_ts;
	uint32_t n, cap;
	struct { size_t slot, idx; } *stk;
	uint32_t fn, fcap;                  /* open function calls */
	struct { size_t slot, idx; uint64_t addr; } *fstk;
};

/* Every BEGIN open on the thread takes `role`; every open call: FUNC_OPEN
 * at the dump's end, else an entry without exit. */
static void athread_cut(struct bt_export_prep *p, struct athread *t, uint8_t role)
{
	for (uint32_t j = 0; j < t->n; j++)
		p->arole[t->stk[j].slot] = role;
	t->n = 0;
	for (uint32_t j = 0; j < t->fn; j++)
		p->arole[t->fstk[j].slot] = role == BT_AR_BEGIN_OPEN ? BT_AR_FUNC_OPEN : BT_AR_FUNC_ENTRY_ALONE;
	t->fn = 0;
}

/* A function entry: onto the thread's call stack (role set when it ends). */
static int func_entry(struct athread *t, size_t slot, size_t i, uint64_t addr)
{
	if (t->fn == t->fcap) {
		uint32_t nc = t->fcap ? t->fcap * 2 : 16;
		void *q = realloc(t->fstk, nc * sizeof(*t->fstk));
		if (!q)
			return -ENOMEM;
		t->fstk = q;
		t->fcap = nc;
	}
	t->fstk[t->fn].slot = slot;
	t->fstk[t->fn].idx = i;
	t->fstk[t->fn].addr = addr;
	t->fn++;
	return 0;
}

/* A function exit closes the innermost open call of its function; calls
 * opened above it never returned through their exit hook (longjmp, an
 * exception) and end with it, as report --functions (func_calls.c) and
 * uftrace close them. None open: its entry is before the window (or
 * lost), the exit dropped. */
static int func_exit(struct bt_export_prep *p, struct athread *t, size_t slot, size_t i, uint64_t addr)
{
	uint32_t j = t->fn;
	while (j > 0 && t->fstk[j - 1].addr != addr)
		j--;
	if (!j) {
		p->arole[slot] = BT_AR_FUNC_EXIT_ALONE;
		p->func_exits_dropped++;
		return 0;
	}
	if (j < t->fn && bt_u32map_put(&p->func_unwound, (uint32_t)slot, t->fn - j) < 0)
		return -ENOMEM;
	for (uint32_t k = j; k < t->fn; k++) {
		p->arole[t->fstk[k].slot] = BT_AR_FUNC_ENTRY;
		p->aend[t->fstk[k].slot] = i;
	}
	t->fn = j - 1;
	p->arole[t->fstk[t->fn].slot] = BT_AR_FUNC_ENTRY;
	p->aend[t->fstk[t->fn].slot] = i;
	p->arole[slot] = BT_AR_FUNC_EXIT;
	p->abegin[slot] = t->fstk[t->fn].idx;
	return 0;
}

static int pair_apps(struct bt_export_prep *p)
{
	struct bt_u32map map = { 0 }; /* tid -> index into th */
	struct athread *th = NULL;
	size_t nth = 0, capth = 0, capg = 0, k = 0;
	int r = 0;

	for (size_t i = 0; i < p->nev && r == 0; i++) {
		const struct bt_dump_event *de = &p->ev[i];
		if (de->app < 0)
			continue;
		const struct bt_event_hdr *h = de->ev;
		size_t slot = k++;
		const struct bt_xthread *xt = bt_export_thread(p, h->tid);
		p->abegin[slot] = p->aend[slot] = SIZE_MAX;
		/* the application writes its own tid: one of another process
		 * (or 0) would put its events on that process's threads */
		if (!h->tid || (xt && xt->tgid && xt->tgid != h->tgid)) {
			p->arole[slot] = BT_AR_FOREIGN;
			continue;
		}
		uint32_t ti;
		if (!bt_u32map_get(&map, h->tid, &ti)) {
			if (nth == capth) {
				size_t nc = capth ? capth * 2 : 64;
				void *q = realloc(th, nc * sizeof(*th));
				if (!q) {
					r = -ENOMEM;
					break;
				}
				th = q;
				capth = nc;
			}
			if (bt_u32map_put(&map, h->tid, (uint32_t)nth) < 0) {
				r = -ENOMEM;
				break;
			}
			memset(&th[nth], 0, sizeof(th[nth]));
			th[nth].app = de->app;
			ti = (uint32_t)nth++;
		}
		struct athread *t = &th[ti];
		if (t->app != de->app) { /* the tid now belongs to another traced process */
			athread_cut(p, t, BT_AR_BEGIN_ALONE);
			t->app = de->app;
			t->have_seq = 0;
		}
		/* per-thread seq */
		if (!t->have_seq) {
			t->have_seq = 1;
			t->last_seq = h->seq;
		} else {
			uint64_t sq = t->last_seq + (uint64_t)(int64_t)(int32_t)(h->seq - (uint32_t)t->last_seq);
			if (sq > t->last_seq + 1) {
				if (p->nagaps == capg) {
					size_t nc = capg ? capg * 2 : 64;
					void *q = realloc(p->agaps, nc * sizeof(*p->agaps));
					if (!q) {
						r = -ENOMEM;
						break;
					}
					p->agaps = q;
					capg = nc;
				}
				struct bt_app_gap *g = &p->agaps[p->nagaps++];
				g->index = i;
				g->tid = h->tid;
				g->app = de->app;
				g->from_seq = (uint32_t)(t->last_seq + 1);
				g->missing = sq - t->last_seq - 1;
				g->prev_ts = t->last_ts;
				if ((size_t)de->app < p->napps) {
					p->app_gaps[de->app]++;
					p->app_missing[de->app] += g->missing;
				}
				athread_cut(p, t, BT_AR_BEGIN_ALONE);
			}
			if (sq > t->last_seq)
				t->last_seq = sq;
		}
		t->last_ts = h->ts_ns;
		switch (h->type) {
		case BT_EV_APP_BEGIN:
			p->arole[slot] = BT_AR_BEGIN_ALONE; /* until its END shows up */
			if (t->n == APP_STACK_MAX) { /* the oldest stays unmatched */
				p->arole[t->stk[0].slot] = BT_AR_BEGIN_ALONE;
				memmove(&t->stk[0], &t->stk[1], (APP_STACK_MAX - 1) * sizeof(t->stk[0]));
				t->n--;
			}
			if (t->n == t->cap) {
				uint32_t nc = t->cap ? t->cap * 2 : 8;
				void *q = realloc(t->stk, nc * sizeof(*t->stk));
				if (!q) {
					r = -ENOMEM;
					break;
				}
				t->stk = q;
				t->cap = nc;
			}
			t->stk[t->n].slot = slot;
			t->stk[t->n].idx = i;
			t->n++;
			break;
		case BT_EV_APP_END:
			if (!t->n) {
				p->arole[slot] = BT_AR_END_ALONE;
				p->app_unmatched_ends++;
				break;
			}
			t->n--;
			p->arole[t->stk[t->n].slot] = BT_AR_BEGIN;
			p->arole[slot] = BT_AR_END;
			p->abegin[slot] = t->stk[t->n].idx;
			break;
		case BT_EV_APP_COUNTER:
			p->arole[slot] = BT_AR_COUNTER;
			break;
		case BT_EV_APP_FUNC_ENTRY:
			p->arole[slot] = BT_AR_FUNC_ENTRY_ALONE; /* until its exit shows up */
			r = func_entry(t, slot, i, (uint64_t)((const struct bt_ev_app *)(const void *)h)->args[0]);
			break;
		case BT_EV_APP_FUNC_EXIT:
			r = func_exit(p, t, slot, i, (uint64_t)((const struct bt_ev_app *)(const void *)h)->args[0]);
			break;
		default:
			p->arole[slot] = BT_AR_INSTANT;
			break;
		}
	}
	for (size_t i = 0; i < nth; i++) {
		if (r == 0)
			athread_cut(p, &th[i], BT_AR_BEGIN_OPEN);
		free(th[i].stk);
		free(th[i].fstk);
	}
	free(th);
	bt_u32map_free(&map);
	return r;
}

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
	struct tcoll tc = { 0 };
	struct bt_namer *nm = NULL;
	int r = -ENOMEM;

	memset(p, 0, sizeof(*p));
	p->d = d;
	p->hdr = bt_dump_header(d);
	p->ev = bt_dump_events(d, &p->nev);
	if (f && bt_filter_active(f) && filter_events(p, f) < 0)
		goto out;
	p->tasks = bt_dump_tasks(d, &p->ntasks);
	p->probes = bt_dump_probes(d, &p->nprobes);
	if (p->nev) {
		p->first_ts = p->ev[0].ev->ts_ns;
		p->last_ts = p->ev[p->nev - 1].ev->ts_ns;
	}

	for (size_t i = 0; i < p->ntasks; i++)
		if (tcoll_add(&tc, p->tasks[i].tid, p->tasks[i].tgid) < 0)
			goto out;
	size_t nu = 0;
	for (size_t i = 0; i < p->nev; i++) {
		const struct bt_event_hdr *h = p->ev[i].ev;
		int e = tcoll_add(&tc, h->tid, h->tgid);
		switch (h->type) {
		case BT_EV_SCHED_SWITCH: {
			const struct bt_ev_sched_switch *s = (const void *)h;
			e |= tcoll_add(&tc, s->prev_tid, 0) | tcoll_add(&tc, s->next_tid, 0);
			break;
		}
		case BT_EV_SCHED_WAKEUP:
		case BT_EV_SCHED_WAKEUP_NEW:
		case BT_EV_SCHED_WAKING:
			e |= tcoll_add(&tc, ((const struct bt_ev_sched_wakeup *)(const void *)h)->tid, 0);
			break;
		case BT_EV_SCHED_MIGRATE:
			e |= tcoll_add(&tc, ((const struct bt_ev_sched_migrate *)(const void *)h)->tid, 0);
			break;
		case BT_EV_PROCESS_FORK:
		case BT_EV_PROCESS_EXEC:
		case BT_EV_PROCESS_EXIT:
		case BT_EV_TASK_RENAME: {
			const struct bt_ev_task *t = (const void *)h;
			e |= tcoll_add(&tc, t->tid, t->tgid);
			/* a new process: its parent is the forking process */
			if (!e && h->type == BT_EV_PROCESS_FORK && t->tid == t->tgid && t->tgid != h->tgid && h->tgid) {
				uint32_t idx;
				if (bt_u32map_get(&tc.map, t->tid, &idx))
					tc.t[idx].ppid = h->tgid;
			}
			break;
		}
		default:
			if (is_uprobe_type(h->type) && h->cpu < p->hdr->ncpus)
				nu++;
			break;
		}
		if (e < 0)
			goto out;
	}

	/* names: the task table's, else the last one events gave, else "<...>" */
	nm = bt_namer_new(NULL, 0);
	if (!nm)
		goto out;
	for (size_t i = 0; i < p->nev; i++)
		bt_namer_apply(nm, p->ev[i].ev, p->ev[i].len);
	for (size_t i = 0; i < tc.n; i++) {
		struct bt_xthread *t = &tc.t[i];
		const struct bt_task *tk = bt_tasks_find(p->tasks, p->ntasks, t->tid);
		if (tk && tk->comm[0]) {
			t->in_table = 1;
			if (tk->tgid)
				t->tgid = tk->tgid;
			snprintf(t->name, sizeof(t->name), "%s", tk->comm);
		} else {
			snprintf(t->name, sizeof(t->name), "%s", bt_namer_comm(nm, t->tid, 0));
		}
		if (!t->name[0])
			snprintf(t->name, sizeof(t->name), "<...>");
	}
	if (tc.n)
		qsort(tc.t, tc.n, sizeof(*tc.t), cmp_thread);
	p->threads = tc.t;
	p->nthreads = tc.n;
	tc.t = NULL;

	p->urole = calloc(nu ? nu : 1, 1);
	if (!p->urole)
		goto out;
	p->nurole = nu;
	if (pair_uprobes(p) < 0)
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
	if (!p->arole || !p->abegin || !p->aend || !p->app_gaps || !p->app_missing || pair_apps(p) < 0)
		goto out;

	p->percpu = calloc(p->hdr->ncpus ? p->hdr->ncpus : 1, sizeof(*p->percpu));
	if (!p->percpu)
		goto out;
	if (bt_seq_analyze(p->ev, p->nev, p->hdr->ncpus, &p->win, p->percpu) < 0 ||
	    (!p->own_ev && bt_seq_gaps(p->ev, p->nev, p->hdr->ncpus, &p->gaps, &p->ngaps) < 0))
		goto out;
	r = 0;
out:
	bt_namer_free(nm);
	bt_u32map_free(&tc.map);
	free(tc.t);
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
	memset(p, 0, sizeof(*p));
}

const struct bt_xthread *bt_export_thread(const struct bt_export_prep *p, uint32_t tid)
{
	size_t lo = 0, hi = p->nthreads;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->threads[mid].tid == tid)
			return &p->threads[mid];
		if (p->threads[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
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

uint64_t bt_export_cpu_drops(const struct bt_export_prep *p, uint32_t cpu)
{
	const uint64_t *drops = bt_dump_rb_drops(p->d);
	uint64_t sum = 0;
	if (!drops || cpu >= p->hdr->ncpus)
		return 0;
	for (uint32_t g = 0; g < p->hdr->ngroups; g++)
		sum += drops[(size_t)cpu * p->hdr->ngroups + g];
	return sum;
}

void bt_export_losses(const struct bt_export_prep *p, void (*emit)(void *ctx, const char *key, uint64_t v),
		      void *ctx)
{
	const struct bt_dump_header *h = p->hdr;
	const struct bt_stats *bs = bt_dump_buffer_stats(p->d);
	const struct bt_read_stats *rs = bt_dump_read_stats(p->d);
	const uint64_t *drops = bt_dump_rb_drops(p->d);
	uint64_t total = 0;
	char k[96];

	for (uint32_t c = 0; drops && c < h->ncpus; c++)
		for (uint32_t g = 0; g < h->ngroups; g++) {
			uint64_t v = drops[(size_t)c * h->ngroups + g];
			const char *gn = bt_group_name((int)g);

			total += v;
			if (!v)
				continue;
			if (gn)
				snprintf(k, sizeof(k), "loss.rb_drops.cpu%u.%s", c, gn);
			else
				snprintf(k, sizeof(k), "loss.rb_drops.cpu%u.group%u", c, g);
			emit(ctx, k, v);
		}
	emit(ctx, "loss.rb_drops", total);
	emit(ctx, "loss.seq_gaps", p->win.gaps);
	emit(ctx, "loss.seq_missing", p->win.missing);
	emit(ctx, "loss.seq_dups", p->win.dups);
	emit(ctx, "loss.buffer_entries_rejected", bs->entries_rejected);
	emit(ctx, "loss.buffer_entries_dropped", bs->entries_dropped);
	emit(ctx, "loss.buffer_blocks_skipped", bs->blocks_skipped);
	emit(ctx, "loss.buffer_positions_stale", bs->positions_stale);
	emit(ctx, "loss.dump_blocks_lost", rs->blocks_lost);
	emit(ctx, "loss.dump_blocks_busy", rs->blocks_busy);
	emit(ctx, "loss.drain_rejected", h->drain_rejected);
	emit(ctx, "loss.unknown_events", bt_dump_unknown_events(p->d));
	/* Events missing without a seq gap: runs the kernel skipped
	 * (PMIS; absent from dumps of older recorders) and switch-aways it
	 * never reported (sched_switch chain). */
	size_t npm;
	const struct bt_prog_miss *pm = bt_dump_prog_misses(p->d, &npm);
	if (pm) {
		emit(ctx, "loss.kernel_skipped_runs", bt_dump_prog_misses_total(p->d));
		for (size_t i = 0; i < npm; i++)
			if (pm[i].misses) {
				snprintf(k, sizeof(k), "loss.kernel_skipped_runs.%s", pm[i].name);
				emit(ctx, k, pm[i].misses);
			}
	}
	/* stacks: what the table, the kernel and the unwinder lost */
	const struct bt_dump_stacks *st = bt_dump_stacks(p->d);
	if (st) {
		static const struct { int c; const char *k; } sl[] = {
			{ BT_STKC_OVERFLOW, "loss.stacks.table_full" },
			{ BT_STKC_DEF_DROPS, "loss.stacks.ring_full" },
			{ BT_STKC_KERNEL_ERR, "loss.stacks.kernel_errors" },
			{ BT_STKC_USER_ERR, "loss.stacks.user_errors" },
			{ BT_STKC_UNDEFINED, "loss.stacks.frames_never_arrived" },
			{ BT_STKC_TRUNCATED, "loss.stacks.truncated" },
			{ BT_STKC_OFFCPU_NOMEM, "loss.stacks.offcpu_not_followed" },
			{ BT_STKC_UNW_NO_PROC, "loss.unwind.process_not_loaded" },
			{ BT_STKC_UNW_NO_MAP, "loss.unwind.no_executable_mapping" },
			{ BT_STKC_UNW_ANON, "loss.unwind.anonymous_code" },
			{ BT_STKC_UNW_SIGNAL, "loss.unwind.signal_frame" },
			{ BT_STKC_UNW_BAD, "loss.unwind.bad_frame" },
			{ BT_STKC_UNW_NO_TABLE, "loss.unwind.frames_without_table" },
			{ BT_STKC_UNW_MEM_FULL, "loss.unwind.binaries_over_unwind_mem" },
			{ BT_STKC_UNW_NO_EH, "loss.unwind.binaries_without_eh_frame" },
			{ BT_STKC_UNW_PROCS_FULL, "loss.unwind.processes_over_map" },
			{ BT_STKC_UNW_MAPS_DROP, "loss.unwind.mappings_dropped" },
		};
		for (size_t i = 0; i < sizeof(sl) / sizeof(sl[0]); i++)
			if (sl[i].c < BT_STKC_UNW_WALKS || st->counters[BT_STKC_UNW_MAX_ROWS])
				emit(ctx, sl[i].k, st->counters[sl[i].c]);
	}
	struct bt_switch_chain ch;
	if (bt_switch_chain(p->ev, p->nev, h->ncpus, &ch) == 0 && ch.switches)
		emit(ctx, "loss.switch_chain_breaks_without_gap", ch.unexplained);

	/* applications: their per-thread seq gaps and what their buffers lost;
	 * keyed by pid (the process track carries the name) */
	static const int app_loss[] = { BT_APPC_BLOCKS_BAD, BT_APPC_BLOCKS_LOST, BT_APPC_BLOCKS_BUSY,
					BT_APPC_DROPPED,    BT_APPC_REJECTED,    BT_APPC_SKIPPED,
					BT_APPC_NAMES_BAD,  BT_APPC_NAMES_LOST };
	uint64_t gaps = 0, missing = 0;
	for (size_t a = 0; a < p->napps; a++) {
		gaps += p->app_gaps ? p->app_gaps[a] : 0;
		missing += p->app_missing ? p->app_missing[a] : 0;
	}
	if (!p->napps)
		return;
	emit(ctx, "loss.app_seq_gaps", gaps);
	emit(ctx, "loss.app_seq_missing", missing);
	emit(ctx, "loss.app_unmatched_ends", p->app_unmatched_ends);
	emit(ctx, "loss.app_func_exits_without_entry", p->func_exits_dropped);
	for (size_t a = 0; a < p->napps; a++) {
		const struct bt_dump_app *x = &p->apps[a];
		char id[32];
		size_t b = 0;
		while (b < a && p->apps[b].pid != x->pid)
			b++;
		/* a pid seen twice (reused by another traced process): add the index */
		if (b < a)
			snprintf(id, sizeof(id), "%u-%zu", x->pid, a);
		else
			snprintf(id, sizeof(id), "%u", x->pid);
		snprintf(k, sizeof(k), "loss.app.%s.seq_gaps", id);
		emit(ctx, k, p->app_gaps ? p->app_gaps[a] : 0);
		snprintf(k, sizeof(k), "loss.app.%s.seq_missing", id);
		emit(ctx, k, p->app_missing ? p->app_missing[a] : 0);
		for (size_t i = 0; i < sizeof(app_loss) / sizeof(app_loss[0]); i++) {
			snprintf(k, sizeof(k), "loss.app.%s.%s", id, bt_app_counter_name(app_loss[i]));
			emit(ctx, k, x->counters[app_loss[i]]);
		}
	}
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
