// SPDX-License-Identifier: MIT
/*
 * handover_prior.c - the previous recorder's history joined to this
 * recorder's later dumps (struct bt_dump_prior): the window continues
 * across a restart as if the buffer had, until this recorder's own writing
 * has taken the buffer's size. Its events' seqs are renumbered to end just
 * below this recorder's first (each CPU's programs start at seq 0), the
 * events its rings held at its end (when counted) missing between, so the
 * reader's seq analysis counts that gap as any other.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "handover.h"
#include "dump.h"
#include "dump_format.h"
#include "events.h"
#include "task_list.h"
#include "util.h"

struct bt_ho_prior {
	struct bt_capture *kbuf;
	struct bt_task *tasks;
	size_t ntasks;
	uint32_t ncpus;
	uint32_t *seq_base; /* [ncpus]: its seq that becomes 0 */
	uint64_t *pos;      /* its blocks' positions, ascending */
	size_t npos;
	uint32_t block_size;
	uint32_t reason;    /* enum btd_prior_reason */
	int lost_known;
	uint64_t lost, newest_ts;
};

struct pos_list {
	uint64_t *pos;
	size_t n, cap;
};

static int add_pos(const struct bt_block_view *blk, void *arg)
{
	struct pos_list *l = arg;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		uint64_t *p = realloc(l->pos, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		l->pos = p;
		l->cap = cap;
	}
	l->pos[l->n++] = blk->pos;
	return 0;
}

struct bt_ho_prior *bt_ho_prior_take(struct bt_ho_found *f)
{
	struct bt_ho_prior *h;
	struct pos_list l = { 0 };

	if (!f->kbuf || !f->seq_base || !f->cnt.ncpus)
		return NULL;
	h = calloc(1, sizeof(*h));
	if (!h || bt_capture_read(f->kbuf, add_pos, &l) < 0) {
		free(h);
		free(l.pos);
		return NULL;
	}
	qsort(l.pos, l.n, sizeof(*l.pos), bt_cmp_u64);
	h->pos = l.pos;
	h->npos = l.n;
	h->block_size = bt_capture_stats(f->kbuf)->block_size;
	h->kbuf = f->kbuf;
	h->tasks = f->tasks;
	h->ntasks = f->ntasks;
	h->ncpus = f->cnt.ncpus;
	h->seq_base = f->seq_base;
	/* as bt_ho_reason says it */
	h->reason = f->state == BT_HO_STOPPED ? BTD_PRIOR_RESTART :
		    f->state == BT_HO_EXEC ? BTD_PRIOR_UPGRADE : BTD_PRIOR_DIED;
	h->lost_known = f->tail.known;
	h->lost = f->after_newest;
	h->newest_ts = f->newest_ts;
	f->kbuf = NULL;
	f->tasks = NULL;
	f->ntasks = 0;
	f->seq_base = NULL;
	return h;
}

/* Its event as the later dump writes it: the seq renumbered; the stack
 * table did not outlive it, so its stack ids say reclaimed. */
static void prior_fix(void *ctx, struct bt_event_hdr *ev, uint32_t len)
{
	const struct bt_ho_prior *h = ctx;

	if (ev->cpu < h->ncpus)
		ev->seq -= h->seq_base[ev->cpu];
	bt_ho_forget_stacks(NULL, ev, len);
}

int bt_ho_prior_fill(const struct bt_ho_prior *h, uint64_t capacity, uint64_t used, uint64_t resumed_ts,
		     struct bt_dump_prior *p)
{
	uint64_t keep;

	memset(p, 0, sizeof(*p));
	if (!h || !h->npos || used >= capacity || !h->block_size)
		return 0;
	keep = (capacity - used) / h->block_size;
	if (!keep)
		return 0;
	*p = (struct bt_dump_prior){
		.kbuf = h->kbuf, .min_pos = keep < h->npos ? h->pos[h->npos - keep] : 0,
		.blocks_left = keep < h->npos ? h->npos - keep : 0, .fix_event = prior_fix, .fix_ctx = (void *)h,
		.reason = h->reason, .lost_known = h->lost_known, .lost = h->lost, .newest_ts = h->newest_ts,
		.resumed_ts = resumed_ts,
	};
	return 1;
}

static int cmp_tid(const void *a, const void *b)
{
	const struct bt_task *x = a, *y = b;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int bt_ho_prior_tasks(const struct bt_ho_prior *h, const struct bt_task *t, size_t n, struct bt_task **out,
		      size_t *nout)
{
	size_t m = 0;
	struct bt_task *a = malloc((n + h->ntasks ? n + h->ntasks : 1) * sizeof(*a));

	if (!a)
		return -ENOMEM;
	memcpy(a, t, n * sizeof(*t));
	m = n;
	/* Its names were read from memory it may have died writing: only for
	 * threads this recorder does not know, one name per thread. */
	for (size_t i = 0; i < h->ntasks; i++)
		if (!bt_tasks_find(t, n, h->tasks[i].tid))
			a[m++] = h->tasks[i];
	qsort(a, m, sizeof(*a), cmp_tid);
	size_t k = 0;
	for (size_t i = 0; i < m; i++)
		if (!k || a[k - 1].tid != a[i].tid)
			a[k++] = a[i];
	*out = a;
	*nout = k;
	return 0;
}

void bt_ho_prior_free(struct bt_ho_prior *h)
{
	if (!h)
		return;
	bt_capture_free(h->kbuf);
	free(h->tasks);
	free(h->seq_base);
	free(h->pos);
	free(h);
}
