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

/* An open BEGIN or call: its role slot and event index, or (encl) the
 * index into p->encl of one open at the window's start. */
struct aopen {
	size_t slot, idx;
	uint64_t addr;
	int encl;
};

struct athread {
	uint32_t tid;
	int32_t app;
	size_t last;   /* index of its last event so far (SIZE_MAX: none) */
	int have_seq;
	int gapped;    /* a seq gap seen: an exit without entry may be lost, not enclosing */
	int boundary;  /* last_seq is the seeded one before the window */
	uint64_t last_seq, last_ts;
	uint32_t n, cap;
	struct aopen *stk;
	uint32_t fn, fcap;                  /* open function calls */
	struct aopen *fstk;
};

/* An open BEGIN or call ends at event `at` (the thread's exit) or, at
 * SIZE_MAX, at the window's end (open) or in a gap (alone). */
static void open_cut(struct bt_export_prep *p, const struct aopen *o, uint8_t role, size_t at)
{
	int alone = role == BT_AR_BEGIN_ALONE || role == BT_AR_FUNC_ENTRY_ALONE;
	if (o->encl) {
		p->encl[o->slot].end_kind = alone ? BT_ENCL_LOST
					    : at == SIZE_MAX ? BT_ENCL_OPEN_AT_END : BT_ENCL_THREAD_EXIT;
		p->encl[o->slot].end = at;
		return;
	}
	p->arole[o->slot] = role;
	p->aend[o->slot] = alone ? SIZE_MAX : at;
}

/* Every BEGIN open on the thread takes `role`; every open call: FUNC_OPEN
 * at the dump's end or the thread's exit, else an entry without exit. */
static void athread_cut(struct bt_export_prep *p, struct athread *t, uint8_t role, size_t at)
{
	for (uint32_t j = 0; j < t->n; j++)
		open_cut(p, &t->stk[j], role, at);
	t->n = 0;
	for (uint32_t j = 0; j < t->fn; j++)
		open_cut(p, &t->fstk[j], role == BT_AR_BEGIN_OPEN ? BT_AR_FUNC_OPEN : BT_AR_FUNC_ENTRY_ALONE, at);
	t->fn = 0;
}

/* An open one (index into p->encl) on top of a thread's stack. */
static int push_open(struct aopen **v, uint32_t *n, uint32_t *cap, size_t slot, size_t i, uint64_t addr, int encl)
{
	if (*n == *cap) {
		uint32_t nc = *cap ? *cap * 2 : 16;
		void *q = realloc(*v, nc * sizeof(**v));
		if (!q)
			return -ENOMEM;
		*v = q;
		*cap = nc;
	}
	(*v)[*n] = (struct aopen){ .slot = slot, .idx = i, .addr = addr, .encl = encl };
	(*n)++;
	return 0;
}

/* An exit or END without entry on a thread that lost nothing and has
 * nothing open: its call began before the window, drawn from its start. */
static int orphan(struct bt_export_prep *p, struct athread *t, size_t slot, size_t i, int func)
{
	const struct bt_event_hdr *h = p->ev[i].ev;
	struct bt_encl *x = bt_export_encl_add(p);
	if (!x)
		return -ENOMEM;
	x->tid = h->tid;
	x->tgid = h->tgid;
	x->app = t->app;
	x->func = (uint8_t)func;
	x->ev = (const void *)h;
	x->end = i;
	x->order = (uint32_t)(SIZE_MAX - i);
	p->arole[slot] = func ? BT_AR_FUNC_EXIT : BT_AR_END;
	p->abegin[slot] = SIZE_MAX;
	return 0;
}

/* A function entry: onto the thread's call stack (role set when it ends). */
static int func_entry(struct athread *t, size_t slot, size_t i, uint64_t addr)
{
	return push_open(&t->fstk, &t->fn, &t->fcap, slot, i, addr, 0);
}

/* An open call or BEGIN ends with event i: its role, or its end. */
static void open_end(struct bt_export_prep *p, const struct aopen *o, uint8_t role, size_t i)
{
	if (o->encl) {
		p->encl[o->slot].end_kind = BT_ENCL_EXIT;
		p->encl[o->slot].end = i;
		return;
	}
	p->arole[o->slot] = role;
	p->aend[o->slot] = i;
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
	if (!j && !t->fn && !t->gapped)
		return orphan(p, t, slot, i, 1);
	if (!j) {
		p->arole[slot] = BT_AR_FUNC_EXIT_ALONE;
		p->func_exits_dropped++;
		return 0;
	}
	if (j < t->fn && bt_u32map_put(&p->func_unwound, (uint32_t)slot, t->fn - j) < 0)
		return -ENOMEM;
	for (uint32_t k = j; k < t->fn; k++)
		open_end(p, &t->fstk[k], BT_AR_FUNC_ENTRY, i);
	t->fn = j - 1;
	open_end(p, &t->fstk[t->fn], BT_AR_FUNC_ENTRY, i);
	p->arole[slot] = BT_AR_FUNC_EXIT;
	p->abegin[slot] = t->fstk[t->fn].encl ? SIZE_MAX : t->fstk[t->fn].idx;
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
	a->t[a->n].tid = tid;
	a->t[a->n].app = app;
	a->t[a->n].last = SIZE_MAX;
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
	if (t->boundary) {
		/* lost right at the window's start: what was open is unknown */
		t->boundary = 0;
		if (sq > t->last_seq + 1) {
			athread_cut(p, t, BT_AR_BEGIN_ALONE, SIZE_MAX);
			t->gapped = 1;
		}
		t->last_seq = sq;
		return 0;
	}
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
		athread_cut(p, t, BT_AR_BEGIN_ALONE, SIZE_MAX);
		t->gapped = 1;
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
		open_cut(p, &t->stk[0], BT_AR_BEGIN_ALONE, SIZE_MAX);
		memmove(&t->stk[0], &t->stk[1], (APP_STACK_MAX - 1) * sizeof(t->stk[0]));
		t->n--;
	}
	return push_open(&t->stk, &t->n, &t->cap, slot, i, 0, 0);
}

/* An END closes the innermost open BEGIN; none open: its BEGIN is before
 * the window (nothing lost) or lost (alone). */
static int app_end(struct bt_export_prep *p, struct athread *t, size_t slot, size_t i)
{
	if (!t->n && !t->gapped)
		return orphan(p, t, slot, i, 0);
	if (!t->n) {
		p->arole[slot] = BT_AR_END_ALONE;
		p->app_unmatched_ends++;
		return 0;
	}
	t->n--;
	open_end(p, &t->stk[t->n], BT_AR_BEGIN, i);
	p->arole[slot] = BT_AR_END;
	p->abegin[slot] = t->stk[t->n].encl ? SIZE_MAX : t->stk[t->n].idx;
	return 0;
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
		return app_end(p, t, slot, i);
	case BT_EV_APP_COUNTER:
		p->arole[slot] = BT_AR_COUNTER;
		return 0;
	case BT_EV_APP_FUNC_ENTRY:
		if (bt_u32map_put(&p->func_tids, h->tid, 1) < 0)
			return -ENOMEM;
		p->arole[slot] = BT_AR_FUNC_ENTRY_ALONE; /* until its exit shows up */
		return func_entry(t, slot, i, (uint64_t)e->args[0]);
	case BT_EV_APP_FUNC_EXIT:
		if (bt_u32map_put(&p->func_tids, h->tid, 1) < 0)
			return -ENOMEM;
		return func_exit(p, t, slot, i, (uint64_t)e->args[0]);
	default:
		p->arole[slot] = BT_AR_INSTANT;
		return 0;
	}
}

/* The calls and slices seeded open at the window's start, outermost first,
 * on their threads' stacks; the thread's seq goes on from before it. */
static int seed(struct bt_export_prep *p, struct athreads *a)
{
	for (size_t e = 0; e < p->nencl; e++) {
		const struct bt_encl *x = &p->encl[e];
		struct athread *t = athread_of(a, x->tid, x->app);
		if (!t)
			return -ENOMEM;
		t->have_seq = t->boundary = 1;
		t->last_seq = x->last_seq;
		if (x->func && bt_u32map_put(&p->func_tids, x->tid, 1) < 0)
			return -ENOMEM;
		int r = x->func ? push_open(&t->fstk, &t->fn, &t->fcap, e, SIZE_MAX, (uint64_t)x->ev->args[0], 1)
				: push_open(&t->stk, &t->n, &t->cap, e, SIZE_MAX, 0, 1);
		if (r < 0)
			return r;
	}
	return 0;
}

static int tend_cmp(const void *x, const void *y)
{
	const struct bt_tend *a = x, *b = y;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* A kernel event i of a thread with application events: its last one so far. */
static void kernel_event(struct athreads *a, const struct bt_event_hdr *h, size_t i)
{
	uint32_t ti;
	if (h->tid && bt_u32map_get(&a->map, h->tid, &ti))
		a->t[ti].last = i;
	if (h->type == BT_EV_SCHED_SWITCH) {
		uint32_t prev = ((const struct bt_ev_sched_switch *)(const void *)h)->prev_tid;
		if (prev && prev != h->tid && bt_u32map_get(&a->map, prev, &ti))
			a->t[ti].last = i;
	}
}

/* Where what thread t still has open at the end ends: at its last event if
 * it died in the window without its exit there (the task table, or its
 * application, says it exited by the window's end), else SIZE_MAX (open at
 * the window's end). */
static size_t died_at(const struct bt_export_prep *p, const struct athread *t)
{
	const struct bt_task *tk = bt_tasks_find(p->tasks, p->ntasks, t->tid);
	uint64_t exit_ts = tk ? tk->exit_ts : 0;
	if (!exit_ts && t->app >= 0 && (size_t)t->app < p->napps)
		exit_ts = p->apps[t->app].exit_ts;
	return exit_ts && exit_ts <= p->win_end ? t->last : SIZE_MAX;
}

/* What the threads still have open at the end: closed at the window's end,
 * or at the last event of a thread that died (noted in p->tends). */
static int close_at_end(struct bt_export_prep *p, struct athreads *a)
{
	size_t nt = 0;
	for (size_t i = 0; i < a->n; i++)
		nt += (a->t[i].n || a->t[i].fn) && died_at(p, &a->t[i]) != SIZE_MAX;
	if (nt && !(p->tends = calloc(nt, sizeof(*p->tends))))
		return -ENOMEM;
	for (size_t i = 0; i < a->n; i++) {
		struct athread *t = &a->t[i];
		size_t at = t->n || t->fn ? died_at(p, t) : SIZE_MAX;
		if (at != SIZE_MAX)
			p->tends[p->ntends++] = (struct bt_tend){ .index = at, .tid = t->tid };
		athread_cut(p, t, BT_AR_BEGIN_OPEN, at);
	}
	if (p->ntends > 1)
		qsort(p->tends, p->ntends, sizeof(*p->tends), tend_cmp);
	return 0;
}

int bt_export_pair_apps(struct bt_export_prep *p)
{
	struct athreads a = { 0 };
	size_t k = 0;
	int r = seed(p, &a);

	for (size_t i = 0; i < p->nev && r == 0; i++) {
		const struct bt_dump_event *de = &p->ev[i];
		uint32_t ti;
		if (de->app < 0) {
			/* what a thread had open ends where it exited */
			if (de->ev->type == BT_EV_PROCESS_EXIT && bt_u32map_get(&a.map, de->ev->tid, &ti)) {
				athread_cut(p, &a.t[ti], BT_AR_BEGIN_OPEN, i);
				a.t[ti].have_seq = a.t[ti].boundary = a.t[ti].gapped = 0;
			}
			kernel_event(&a, de->ev, i);
			continue;
		}
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
			athread_cut(p, t, BT_AR_BEGIN_ALONE, SIZE_MAX);
			t->app = de->app;
			t->have_seq = t->boundary = t->gapped = 0;
		}
		if ((r = athread_seq(p, &a, t, i)) < 0)
			break;
		t->last_ts = h->ts_ns;
		t->last = i;
		r = app_event(p, t, slot, i);
	}
	if (r == 0)
		r = close_at_end(p, &a);
	for (size_t i = 0; i < a.n; i++) {
		free(a.t[i].stk);
		free(a.t[i].fstk);
	}
	free(a.t);
	bt_u32map_free(&a.map);
	return r;
}
