// SPDX-License-Identifier: MIT
/*
 * export_pair_apps.c - the pre-pass's pairing of application events
 * (export_prep.h): BEGIN/END and function entry/exit per thread, and the
 * per-thread seq gaps, one role byte per application event (enum
 * bt_app_role), so both exporters draw the same slices.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "export_prep_steps.h"

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

/* The application threads met so far, by tid. */
struct athreads {
	struct bt_u32map map; /* tid -> index into t */
	struct athread *t;
	size_t n, cap;
	size_t capg;          /* of p->agaps */
};

/* The thread tid's state, new (of app) if first met; NULL out of memory. */
static struct athread *athread_of(struct athreads *a, uint32_t tid, int32_t app)
{
	uint32_t ti;
	if (bt_u32map_get(&a->map, tid, &ti))
		return &a->t[ti];
	if (a->n == a->cap) {
		size_t nc = a->cap ? a->cap * 2 : 64;
		void *q = realloc(a->t, nc * sizeof(*a->t));
		if (!q)
			return NULL;
		a->t = q;
		a->cap = nc;
	}
	if (bt_u32map_put(&a->map, tid, (uint32_t)a->n) < 0)
		return NULL;
	memset(&a->t[a->n], 0, sizeof(a->t[a->n]));
	a->t[a->n].app = app;
	return &a->t[a->n++];
}

/* The thread's per-thread seq: a hole before event i is a gap (recorded in
 * p->agaps, counted for its application) that cuts the thread's open
 * BEGINs and calls. Seqs are 32-bit on the wire, unwrapped here. */
static int athread_seq(struct bt_export_prep *p, struct athreads *a, struct athread *t, size_t i)
{
	const struct bt_dump_event *de = &p->ev[i];
	const struct bt_event_hdr *h = de->ev;

	if (!t->have_seq) {
		t->have_seq = 1;
		t->last_seq = h->seq;
		return 0;
	}
	uint64_t sq = t->last_seq + (uint64_t)(int64_t)(int32_t)(h->seq - (uint32_t)t->last_seq);
	if (sq > t->last_seq + 1) {
		if (p->nagaps == a->capg) {
			size_t nc = a->capg ? a->capg * 2 : 64;
			void *q = realloc(p->agaps, nc * sizeof(*p->agaps));
			if (!q)
				return -ENOMEM;
			p->agaps = q;
			a->capg = nc;
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
	return 0;
}

/* A BEGIN: onto the thread's stack, alone until its END shows up. */
static int app_begin(struct bt_export_prep *p, struct athread *t, size_t slot, size_t i)
{
	p->arole[slot] = BT_AR_BEGIN_ALONE;
	if (t->n == APP_STACK_MAX) { /* the oldest stays unmatched */
		p->arole[t->stk[0].slot] = BT_AR_BEGIN_ALONE;
		memmove(&t->stk[0], &t->stk[1], (APP_STACK_MAX - 1) * sizeof(t->stk[0]));
		t->n--;
	}
	if (t->n == t->cap) {
		uint32_t nc = t->cap ? t->cap * 2 : 8;
		void *q = realloc(t->stk, nc * sizeof(*t->stk));
		if (!q)
			return -ENOMEM;
		t->stk = q;
		t->cap = nc;
	}
	t->stk[t->n].slot = slot;
	t->stk[t->n].idx = i;
	t->n++;
	return 0;
}

/* An END closes the innermost open BEGIN; none open: alone. */
static void app_end(struct bt_export_prep *p, struct athread *t, size_t slot)
{
	if (!t->n) {
		p->arole[slot] = BT_AR_END_ALONE;
		p->app_unmatched_ends++;
		return;
	}
	t->n--;
	p->arole[t->stk[t->n].slot] = BT_AR_BEGIN;
	p->arole[slot] = BT_AR_END;
	p->abegin[slot] = t->stk[t->n].idx;
}

/* Event i, the slot-th application event, on its thread t. */
static int app_event(struct bt_export_prep *p, struct athread *t, size_t slot, size_t i)
{
	const struct bt_event_hdr *h = p->ev[i].ev;
	const struct bt_ev_app *e = (const void *)h;

	switch (h->type) {
	case BT_EV_APP_BEGIN:
		return app_begin(p, t, slot, i);
	case BT_EV_APP_END:
		app_end(p, t, slot);
		return 0;
	case BT_EV_APP_COUNTER:
		p->arole[slot] = BT_AR_COUNTER;
		return 0;
	case BT_EV_APP_FUNC_ENTRY:
		p->arole[slot] = BT_AR_FUNC_ENTRY_ALONE; /* until its exit shows up */
		return func_entry(t, slot, i, (uint64_t)e->args[0]);
	case BT_EV_APP_FUNC_EXIT:
		return func_exit(p, t, slot, i, (uint64_t)e->args[0]);
	default:
		p->arole[slot] = BT_AR_INSTANT;
		return 0;
	}
}

int bt_export_pair_apps(struct bt_export_prep *p)
{
	struct athreads a = { 0 };
	size_t k = 0;
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
		struct athread *t = athread_of(&a, h->tid, de->app);
		if (!t) {
			r = -ENOMEM;
			break;
		}
		if (t->app != de->app) { /* the tid now belongs to another traced process */
			athread_cut(p, t, BT_AR_BEGIN_ALONE);
			t->app = de->app;
			t->have_seq = 0;
		}
		if ((r = athread_seq(p, &a, t, i)) < 0)
			break;
		t->last_ts = h->ts_ns;
		r = app_event(p, t, slot, i);
	}
	for (size_t i = 0; i < a.n; i++) {
		if (r == 0)
			athread_cut(p, &a.t[i], BT_AR_BEGIN_OPEN);
		free(a.t[i].stk);
		free(a.t[i].fstk);
	}
	free(a.t);
	bt_u32map_free(&a.map);
	return r;
}
