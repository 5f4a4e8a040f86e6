// SPDX-License-Identifier: MIT
/* live_window.c - the latest continuous window of a live buffer, kept by the
 * drain as it writes (see live_window.h). Reading the buffer instead took
 * seconds for a 256 MiB buffer (tens under load) and held the control
 * socket meanwhile. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>
#include "events.h" /* BT_SYS_BATCH */
#include "live_window.h"

#define LIVE_CKPTS 256 /* per CPU; decimated (and taken less often) when full */
/* Missing seqs waiting for late events: a nested program's, or a CPU's
 * batch of system-call pairs that uprobe events (which never flush it,
 * uprobe.bpf.c) overtook, one hole between each two pairs. */
#define LIVE_HOLES 40
#define LIVE_GAPS 64   /* newest gaps per CPU, for the counts in the window */
/* A missing seq is a gap after HOLE_SLACK events that flush their CPU's
 * batch (every program's but the uprobe ones, drain.c: overtakes),
 * or after HOLE_SLACK_ALL events of any kind: a
 * CPU with uprobe events alone still has its losses shown. */
#define HOLE_SLACK 64
#define HOLE_SLACK_ALL 4096

_Static_assert(LIVE_HOLES > 2 * BT_SYS_BATCH, "a batch overtaken after each pair fits in the holes");
/* The batch comes before the first event that flushes it, a nested
 * program's few apart, however many uprobe events came between its pairs
 * (up to HOLE_SLACK_ALL); before that, test_batch_overtaken_long. */
_Static_assert(HOLE_SLACK >= 4 * BT_SYS_BATCH, "a batch comes before its holes expire");

struct ckpt {
	uint64_t pos;    /* blocks taken before this event was written */
	uint64_t ts;     /* the event's time */
	uint64_t before; /* events of the CPU before it */
	uint32_t seq;    /* its seq */
};

struct hole {
	uint64_t from, to; /* unwrapped seqs missing */
	uint64_t ts;       /* the event after them */
	uint64_t at;       /* events of the CPU when it opened */
	uint64_t at_flush; /* of them, events that flush a batch (struct live_cpu) */
};

struct gap {
	uint64_t ts, missing;
};

struct live_cpu {
	uint64_t next; /* unwrapped seq after the highest seen */
	uint64_t events, last_ts;
	uint64_t flushing; /* of events, those not overtaking (drain.c: overtakes) */
	struct hole holes[LIVE_HOLES];
	uint32_t nholes;
	struct gap gaps[LIVE_GAPS]; /* ring, newest at (gap_head - 1) */
	uint32_t gap_head, ngaps;
	struct ckpt ck[LIVE_CKPTS]; /* oldest first */
	uint32_t nck;
	int pending;       /* an event since the last checkpoint */
	struct ckpt pend;  /* the first of them */
	uint32_t passes;   /* passes since the last checkpoint */
	uint32_t stride;   /* passes per checkpoint */
};

struct bt_live {
	pthread_mutex_t lock; /* drain (per batch, per pass) and status */
	uint32_t ncpus;
	uint64_t last_pos; /* blocks_used at the end of the last pass */
	uint64_t cut;      /* positions before this are overwritten (never decreases) */
	struct live_cpu **c; /* allocated on a CPU's first event */
};

struct bt_live *bt_live_new(uint32_t ncpus)
{
	struct bt_live *lv = calloc(1, sizeof(*lv));
	if (!lv)
		return NULL;
	lv->c = calloc(ncpus ? ncpus : 1, sizeof(*lv->c));
	if (!lv->c) {
		free(lv);
		return NULL;
	}
	lv->ncpus = ncpus;
	pthread_mutex_init(&lv->lock, NULL);
	return lv;
}

void bt_live_free(struct bt_live *lv)
{
	if (!lv)
		return;
	for (uint32_t i = 0; i < lv->ncpus; i++)
		free(lv->c[i]);
	free(lv->c);
	pthread_mutex_destroy(&lv->lock);
	free(lv);
}

static void gap_push(struct live_cpu *c, const struct hole *h)
{
	c->gaps[c->gap_head] = (struct gap){ .ts = h->ts, .missing = h->to - h->from + 1 };
	c->gap_head = (c->gap_head + 1) % LIVE_GAPS;
	if (c->ngaps < LIVE_GAPS)
		c->ngaps++;
}

static void hole_drop(struct live_cpu *c, uint32_t i)
{
	memmove(&c->holes[i], &c->holes[i + 1], (c->nholes - i - 1) * sizeof(c->holes[0]));
	c->nholes--;
}

/* A seq below the highest seen: fills (part of) a hole, else a duplicate. */
static void late_seq(struct live_cpu *c, uint64_t s)
{
	for (uint32_t i = 0; i < c->nholes; i++) {
		struct hole *h = &c->holes[i];
		if (s < h->from || s > h->to)
			continue;
		if (h->from == h->to) {
			hole_drop(c, i);
		} else if (s == h->from) {
			h->from++;
		} else if (s == h->to) {
			h->to--;
		} else if (c->nholes < LIVE_HOLES) {
			memmove(&c->holes[i + 2], &c->holes[i + 1], (c->nholes - i - 1) * sizeof(*h));
			c->holes[i + 1] = *h;
			c->holes[i + 1].from = s + 1;
			h->to = s - 1;
			c->nholes++;
		}
		return;
	}
}

/* Nested programs reach the ring a few events late, never 64; a held
 * batch before the next event that flushes it. */
static void expire_holes(struct live_cpu *c)
{
	while (c->nholes && (c->holes[0].at_flush + HOLE_SLACK <= c->flushing ||
			     c->holes[0].at + HOLE_SLACK_ALL <= c->events)) {
		gap_push(c, &c->holes[0]);
		hole_drop(c, 0);
	}
}

/* seq unwrapped: the 64-bit seq nearest the next one expected. */
static uint64_t unwrap(const struct live_cpu *c, uint32_t seq)
{
	return c->events ? c->next + (uint64_t)(int64_t)(int32_t)(seq - (uint32_t)c->next) : seq;
}

static void add_one(struct live_cpu *c, uint32_t seq, uint64_t ts, uint64_t pos, uint32_t overtaking)
{
	uint64_t s = unwrap(c, seq);

	if (!c->events) {
		c->next = s + 1;
	} else if (s >= c->next) {
		if (s > c->next) {
			if (c->nholes == LIVE_HOLES) {
				gap_push(c, &c->holes[0]);
				hole_drop(c, 0);
			}
			c->holes[c->nholes++] = (struct hole){ .from = c->next, .to = s - 1, .ts = ts, .at = c->events,
							       .at_flush = c->flushing };
		}
		c->next = s + 1;
	} else {
		late_seq(c, s);
	}
	if (!c->pending) {
		c->pending = 1;
		c->pend = (struct ckpt){ .pos = pos, .ts = ts, .before = c->events, .seq = seq };
	}
	c->events++;
	c->flushing += !overtaking;
	if (ts > c->last_ts)
		c->last_ts = ts;
	expire_holes(c);
}

/* A run: its first as any event; the rest, if that one was the newest,
 * are too, in one step (no hole can open between consecutive seqs, and
 * the holes that expire are the same as one at a time); else one by one. */
static void add_run(struct live_cpu *c, const struct bt_live_run *r, uint64_t pos)
{
	uint64_t s = unwrap(c, r->seq);

	add_one(c, r->seq, r->ts, pos, r->overtaking);
	if (r->n < 2)
		return;
	if (c->next != s + 1) {
		for (uint32_t i = 1; i < r->n; i++)
			add_one(c, r->seq + i, r->max_ts, pos, r->overtaking);
		return;
	}
	c->next += r->n - 1;
	c->events += r->n - 1;
	if (!r->overtaking)
		c->flushing += r->n - 1;
	if (r->max_ts > c->last_ts)
		c->last_ts = r->max_ts;
	expire_holes(c);
}

void bt_live_add(struct bt_live *lv, uint32_t cpu, const struct bt_live_run *runs, uint32_t nruns)
{
	if (cpu >= lv->ncpus || !nruns)
		return;
	pthread_mutex_lock(&lv->lock);
	struct live_cpu *c = lv->c[cpu];
	if (!c) {
		c = lv->c[cpu] = calloc(1, sizeof(*c));
		if (c)
			c->stride = 1;
	}
	if (c)
		for (uint32_t i = 0; i < nruns; i++)
			add_run(c, &runs[i], lv->last_pos);
	pthread_mutex_unlock(&lv->lock);
}

/* Index of the first checkpoint at or after position cut (nck if none). */
static uint32_t first_kept(const struct live_cpu *c, uint64_t cut)
{
	uint32_t i = 0;
	while (i < c->nck && c->ck[i].pos < cut)
		i++;
	return i;
}

/* Room for one more checkpoint: forget the overwritten ones, then, if
 * still full, every other one (and take them half as often). */
static void ckpt_room(struct live_cpu *c, uint64_t cut)
{
	uint32_t k = first_kept(c, cut);
	if (k > 1) {
		/* keep one before the cut: the base of the retained count */
		memmove(&c->ck[0], &c->ck[k - 1], (c->nck - k + 1) * sizeof(c->ck[0]));
		c->nck -= k - 1;
	}
	if (c->nck < LIVE_CKPTS)
		return;
	uint32_t j = 0;
	for (uint32_t i = 0; i < c->nck; i += 2)
		c->ck[j++] = c->ck[i];
	c->nck = j;
	c->stride *= 2;
}

static uint64_t cut_of(struct bt_live *lv, uint64_t blocks_used, uint64_t nblocks)
{
	uint64_t cut = blocks_used > nblocks ? blocks_used - nblocks : 0;
	/* Growing the buffer brings nothing overwritten back. */
	if (cut > lv->cut)
		lv->cut = cut;
	return lv->cut;
}

void bt_live_pass(struct bt_live *lv, uint64_t blocks_used, uint64_t nblocks)
{
	pthread_mutex_lock(&lv->lock);
	uint64_t cut = cut_of(lv, blocks_used, nblocks);
	for (uint32_t i = 0; i < lv->ncpus; i++) {
		struct live_cpu *c = lv->c[i];
		if (!c || !c->pending || ++c->passes < c->stride)
			continue;
		if (c->nck == LIVE_CKPTS)
			ckpt_room(c, cut);
		c->ck[c->nck++] = c->pend;
		c->pending = 0;
		c->passes = 0;
	}
	lv->last_pos = blocks_used;
	pthread_mutex_unlock(&lv->lock);
}

/* The oldest retained checkpoint of c (NULL: nothing retained). */
static const struct ckpt *oldest(const struct live_cpu *c, uint64_t cut)
{
	uint32_t i = first_kept(c, cut);
	if (i < c->nck)
		return &c->ck[i];
	return c->pending && c->pend.pos >= cut ? &c->pend : NULL;
}

/* Events of c at or after time t (to a checkpoint: a lower bound). */
static uint64_t events_since(const struct live_cpu *c, uint64_t cut, uint64_t t)
{
	for (uint32_t i = first_kept(c, cut); i < c->nck; i++)
		if (c->ck[i].ts >= t)
			return c->events - c->ck[i].before;
	if (c->pending && c->pend.ts >= t)
		return c->events - c->pend.before;
	return 0;
}

void bt_live_window(struct bt_live *lv, uint64_t blocks_used, uint64_t nblocks, struct bt_seq_window *w)
{
	memset(w, 0, sizeof(*w));
	w->limit_cpu = -1;
	w->first_ts = UINT64_MAX;
	pthread_mutex_lock(&lv->lock);
	uint64_t cut = cut_of(lv, blocks_used, nblocks);
	uint64_t *start = calloc(lv->ncpus ? lv->ncpus : 1, sizeof(*start));
	for (uint32_t i = 0; start && i < lv->ncpus; i++) {
		const struct live_cpu *c = lv->c[i];
		const struct ckpt *o = c ? oldest(c, cut) : NULL;
		if (!o)
			continue;
		/* as the dump's analysis: the oldest retained event limits the
		 * window unless it is seq 0 (the recording starts there) */
		uint64_t st = o->seq != 0 || o->before ? o->ts : 0;
		for (uint32_t k = 0; k < c->ngaps; k++) {
			const struct gap *g = &c->gaps[(c->gap_head + LIVE_GAPS - 1 - k) % LIVE_GAPS];
			if (g->ts < o->ts)
				continue;
			w->gaps++;
			w->missing += g->missing;
			if (g->ts > st)
				st = g->ts;
		}
		start[i] = st;
		w->events += c->events - o->before;
		w->cpus_with_events++;
		if (o->ts < w->first_ts)
			w->first_ts = o->ts;
		if (c->last_ts > w->last_ts)
			w->last_ts = c->last_ts;
	}
	if (!w->events) {
		w->first_ts = 0;
	} else {
		uint64_t cont = w->first_ts;
		for (uint32_t i = 0; i < lv->ncpus; i++)
			if (start[i] && (w->limit_cpu < 0 ? start[i] >= cont : start[i] > cont)) {
				cont = start[i];
				w->limit_cpu = (int32_t)i;
			}
		w->cont_start_ts = cont;
		for (uint32_t i = 0; i < lv->ncpus; i++)
			if (lv->c[i])
				w->cont_events += events_since(lv->c[i], cut, cont);
	}
	pthread_mutex_unlock(&lv->lock);
	free(start);
}
