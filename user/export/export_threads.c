// SPDX-License-Identifier: MIT
/*
 * export_threads.c - the pre-pass's threads (export_prep.h): every thread of
 * the task table or of any event (tid 0 excluded), with its process, its
 * parent from a fork event, and its name (the task table's, else the last
 * one events gave, else "<...>"), sorted by tid for bt_export_thread().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_prep_steps.h"
#include "event_names.h"

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

/* The threads event h names: its own, and the one it is about. */
static int add_event_threads(struct tcoll *tc, const struct bt_event_hdr *h)
{
	int e = tcoll_add(tc, h->tid, h->tgid);
	switch (h->type) {
	case BT_EV_SCHED_SWITCH: {
		const struct bt_ev_sched_switch *s = (const void *)h;
		e |= tcoll_add(tc, s->prev_tid, 0) | tcoll_add(tc, s->next_tid, 0);
		break;
	}
	case BT_EV_SCHED_WAKEUP:
	case BT_EV_SCHED_WAKEUP_NEW:
	case BT_EV_SCHED_WAKING:
		e |= tcoll_add(tc, ((const struct bt_ev_sched_wakeup *)(const void *)h)->tid, 0);
		break;
	case BT_EV_SCHED_MIGRATE:
		e |= tcoll_add(tc, ((const struct bt_ev_sched_migrate *)(const void *)h)->tid, 0);
		break;
	case BT_EV_PROCESS_FORK:
	case BT_EV_PROCESS_EXEC:
	case BT_EV_PROCESS_EXIT:
	case BT_EV_TASK_RENAME: {
		const struct bt_ev_task *t = (const void *)h;
		e |= tcoll_add(tc, t->tid, t->tgid);
		uint32_t bi;
		/* born (or its program replaced) in the window: its calls began there */
		if (!e && (h->type == BT_EV_PROCESS_FORK || h->type == BT_EV_PROCESS_EXEC) &&
		    bt_u32map_get(&tc->map, t->tid, &bi) && !tc->t[bi].born_ts)
			tc->t[bi].born_ts = h->ts_ns;
		/* a new process: its parent is the forking process */
		if (!e && h->type == BT_EV_PROCESS_FORK && t->tid == t->tgid && t->tgid != h->tgid && h->tgid) {
			uint32_t idx;
			if (bt_u32map_get(&tc->map, t->tid, &idx))
				tc->t[idx].ppid = h->tgid;
		}
		break;
	}
	default:
		break;
	}
	return e < 0 ? -ENOMEM : 0;
}

/* names: the task table's, else the last one events gave up to the
 * window's end (those before convert --time's window too: a thread named
 * before it keeps its name), else "<...>" */
static int name_threads(const struct bt_export_prep *p, struct tcoll *tc)
{
	struct bt_namer *nm = bt_namer_new(NULL, 0);
	size_t n;
	const struct bt_dump_event *all = bt_dump_events(p->d, &n);
	if (!nm)
		return -ENOMEM;
	for (size_t i = 0; i < n && all[i].ev->ts_ns <= p->win_end; i++)
		bt_namer_apply(nm, all[i].ev, all[i].len);
	for (size_t i = 0; i < tc->n; i++) {
		struct bt_xthread *t = &tc->t[i];
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
	bt_namer_free(nm);
	return 0;
}

int bt_export_collect_threads(struct bt_export_prep *p)
{
	struct tcoll tc = { 0 };
	int r = 0;

	for (size_t i = 0; i < p->ntasks && r == 0; i++)
		r = tcoll_add(&tc, p->tasks[i].tid, p->tasks[i].tgid);
	for (size_t i = 0; i < p->nev && r == 0; i++)
		r = add_event_threads(&tc, p->ev[i].ev);
	if (r == 0)
		r = name_threads(p, &tc);
	bt_u32map_free(&tc.map);
	if (r < 0) {
		free(tc.t);
		return r;
	}
	if (tc.n)
		qsort(tc.t, tc.n, sizeof(*tc.t), cmp_thread);
	p->threads = tc.t;
	p->nthreads = tc.n;
	return 0;
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
