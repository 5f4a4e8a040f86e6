// SPDX-License-Identifier: MIT
/*
 * func_stream.c - the traced functions' calls folded into per-function
 * rows as they close, straight from the function batches (func_stream.h).
 *
 * Per thread a stack of open calls. An exit closes the innermost open call
 * of its function and every call above it (left by longjmp), as
 * func_calls.c does; a per-thread seq gap abandons the open calls (cut); so
 * does the dump's end (running). Total time counts a call unless a counted
 * call of the same function holds it, which is known only when that one
 * closes: each open call carries the total of the counted calls of its
 * function inside it, handed to the next such call below when it closes
 * uncounted, or to the row when there is none.
 */
#include "func_stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "func_batch.h"
#include "tid_table.h"

/* A link of a slowest-chain candidate: a closed call and the heaviest
 * chain below it. Owned by one frame, one link or one kept chain. */
struct link {
	struct bt_call call;
	struct link *next;
};

struct frame {
	uint64_t start, child, inner; /* child: callees' time; inner: see the top */
	uint32_t fn;
	int32_t up; /* stack index of the innermost open call of the same function below, -1 */
	uint8_t sel;
	struct link *heavy; /* --hot: the longest closed callee's chain */
};

struct sthr {
	uint32_t tid; /* 0: free slot */
	uint32_t last_seq;
	int fresh;    /* no record yet: no seq to compare with */
	struct frame *st;
	size_t n, cap;
	/* --hot: the deepest selected call of the current root, as the path
	 * from the root (snapshot; each frame's time filled in as it closes) */
	struct bt_call *dp;
	size_t dlen, dcap;
	size_t dvalid; /* dp[0..dvalid) are still the calls open at those depths */
};

struct sbuild {
	struct bt_fstream *out;
	const struct bt_dump *d;
	const struct bt_func_filter *f;
	struct bt_tid_table threads; /* struct sthr */
	struct bt_fn_index fx;
	unsigned hot;          /* chains kept per summary, 0: none */
	struct link *free_links;
	int nomem;
	int ret;               /* on_event's failure */
	struct bt_func_rec *rec; /* a batch decoded */
	size_t rcap;
};


static struct sthr *thr_get(struct sbuild *b, uint32_t tid)
{
	int fresh;
	struct sthr *t = bt_tid_table_get(&b->threads, tid, &fresh);

	if (t && fresh)
		t->fresh = 1;
	return t;
}

/* The function (app, addr), added if new, with its row; -1 out of memory. */
static int64_t fn_get(struct sbuild *b, int32_t app, uint64_t addr)
{
	struct bt_fstream *o = b->out;
	size_t before = o->c.nfn, cap = b->fx.fcap;
	int64_t fi = bt_calls_fn(&o->c, &b->fx, b->d, app, addr);
	if (fi < 0 || o->c.nfn == before)
		return fi;
	if (b->fx.fcap != cap || !o->agg) {
		void *a = realloc(o->agg, b->fx.fcap * sizeof(*o->agg));
		if (!a)
			return -1;
		o->agg = a;
	}
	memset(&o->agg[fi], 0, sizeof(o->agg[0]));
	return fi;
}

static unsigned bucket(uint64_t v)
{
	if (v < 32)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v);
	return 32u + (e - 5u) * 32u + (unsigned)((v >> (e - 5u)) & 31u);
}

static uint64_t bucket_mid(unsigned i)
{
	if (i < 32)
		return i;
	unsigned e = (i - 32u) / 32u + 5u, sub = (i - 32u) % 32u;
	return ((uint64_t)(32u + sub) << (e - 5u)) + ((1ull << (e - 5u)) >> 1);
}

uint64_t bt_fagg_pct(const struct bt_fagg *a, unsigned q)
{
	uint64_t k = (a->calls * q + 99) / 100, seen = 0;
	if (!a->hist || !a->calls)
		return 0;
	if (!k)
		k = 1;
	for (unsigned i = 0; i < BT_FAGG_BUCKETS; i++)
		if ((seen += a->hist[i]) >= k) {
			uint64_t v = bucket_mid(i);
			return v > a->max ? a->max : v;
		}
	return a->max;
}

/* The total a call hands on when it ends (counted: its whole time, else the
 * counted calls of its function inside it): to the innermost open call of
 * its function below, or to its function's row. */
static void hand_on(struct bt_fstream *o, struct sthr *t, const struct frame *x, uint64_t v)
{
	if (x->up >= 0)
		t->st[x->up].inner += v;
	else
		o->agg[x->fn].total += v;
}

static struct link *link_new(struct sbuild *b)
{
	struct link *l = b->free_links;
	if (l)
		b->free_links = l->next;
	else if (!(l = malloc(sizeof(*l))))
		b->nomem = 1;
	return l;
}

static void chain_free(struct sbuild *b, struct link *l)
{
	while (l) {
		struct link *n = l->next;
		l->next = b->free_links;
		b->free_links = l;
		l = n;
	}
}

/* Keep chain (copied) among the best `hot` of list by key; on ties the
 * root entered first comes first (as report_hot.c ranks calls). */
static void offer(struct sbuild *b, struct bt_fchain **list, size_t *n, const struct bt_call *c, size_t len,
		  uint64_t key)
{
	size_t at = *n;
	while (at > 0 && ((*list)[at - 1].key < key ||
			  ((*list)[at - 1].key == key && len && (*list)[at - 1].c[0].start > c[0].start)))
		at--;
	if (at >= b->hot)
		return;
	if (!*list && !(*list = calloc(b->hot, sizeof(**list)))) {
		b->nomem = 1;
		return;
	}
	struct bt_call *copy = malloc((len ? len : 1) * sizeof(*copy));
	if (!copy) {
		b->nomem = 1;
		return;
	}
	memcpy(copy, c, len * sizeof(*copy));
	if (*n == b->hot)
		free((*list)[--*n].c);
	memmove(&(*list)[at + 1], &(*list)[at], (*n - at) * sizeof(**list));
	(*list)[at] = (struct bt_fchain){ .c = copy, .n = len, .key = key };
	(*n)++;
}

/* The slowest-chain candidate l (a root's call and its heaviest path). */
static void offer_slow(struct sbuild *b, struct link *l)
{
	size_t n = 0;
	for (const struct link *k = l; k; k = k->next)
		n++;
	struct bt_call *path = malloc(n * sizeof(*path));
	if (!path) {
		b->nomem = 1;
		return;
	}
	n = 0;
	for (const struct link *k = l; k; k = k->next)
		path[n++] = k->call;
	offer(b, &b->out->slow, &b->out->nslow, path, n, l->call.dur);
	free(path);
}

/* The current root of t ended: its deepest path is a candidate. */
static void root_done(struct sbuild *b, struct sthr *t)
{
	if (t->dlen)
		offer(b, &b->out->deep, &b->out->ndeep, t->dp, t->dlen, t->dlen);
	t->dlen = t->dvalid = 0;
}

/* A selected call entered at depth t->n - 1: the root's deepest so far? */
static void deep_push(struct sbuild *b, struct sthr *t)
{
	if (t->n <= t->dlen)
		return;
	if (t->n > t->dcap) {
		size_t nc = t->n * 2;
		void *q = realloc(t->dp, nc * sizeof(*t->dp));
		if (!q) {
			b->nomem = 1;
			return;
		}
		t->dp = q;
		t->dcap = nc;
	}
	/* the calls below dvalid are the same ones: only the rest is copied
	 * (a recursion 10^5 deep would copy 10^10 frames otherwise) */
	for (size_t k = t->dvalid; k < t->n; k++)
		t->dp[k] = (struct bt_call){ .start = t->st[k].start, .tid = t->tid, .fn = t->st[k].fn,
					     .depth = (uint32_t)k, .parent = -1, .open = 1, .up = -1 };
	t->dlen = t->dvalid = t->n;
}

/* Close the call on top of t's stack at ts. -ENOMEM (the histogram). */
static int pop_closed(struct sbuild *b, struct sthr *t, uint64_t ts)
{
	struct bt_fstream *o = b->out;
	struct frame *x = &t->st[--t->n];
	uint64_t dur = ts > x->start ? ts - x->start : 0;
	uint64_t self = dur > x->child ? dur - x->child : 0;
	if (t->n)
		t->st[t->n - 1].child += dur;
	if (b->hot) {
		/* a call of the deepest path closes (below dvalid: still it) */
		if (t->n < t->dvalid) {
			t->dp[t->n].open = 0;
			t->dp[t->n].dur = dur;
			t->dp[t->n].self = self;
			t->dvalid = t->n;
		}
		struct link *l = link_new(b);
		if (l) {
			l->call = (struct bt_call){ .start = x->start, .dur = dur, .self = self, .tid = t->tid,
						    .fn = x->fn, .depth = (uint32_t)t->n, .parent = -1, .up = -1 };
			l->next = x->heavy;
		} else {
			chain_free(b, x->heavy);
		}
		x->heavy = NULL;
		if (l && t->n) {
			struct frame *p = &t->st[t->n - 1];
			if (!p->heavy || dur > p->heavy->call.dur) {
				chain_free(b, p->heavy);
				p->heavy = l;
			} else {
				chain_free(b, l);
			}
		} else if (l) {
			if (x->sel)
				offer_slow(b, l);
			chain_free(b, l);
		}
		if (!t->n)
			root_done(b, t);
	}
	if (!x->sel) {
		hand_on(o, t, x, x->inner);
		return 0;
	}
	struct bt_fagg *a = &o->agg[x->fn];
	if (!a->hist && !(a->hist = calloc(BT_FAGG_BUCKETS, sizeof(*a->hist))))
		return -ENOMEM;
	a->calls++;
	a->self += self;
	if (dur > a->max)
		a->max = dur;
	a->hist[bucket(dur)]++;
	hand_on(o, t, x, dur);
	return 0;
}

/* Abandon every open call of t (cut by a gap, or running at the end). */
static void abandon(struct sbuild *b, struct sthr *t)
{
	while (t->n) {
		struct frame *x = &t->st[--t->n];
		hand_on(b->out, t, x, x->inner);
		chain_free(b, x->heavy);
		x->heavy = NULL;
	}
	t->dvalid = 0;
	if (b->hot)
		root_done(b, t);
}

static int keep(const struct bt_func_filter *f, const struct bt_event_hdr *h)
{
	return !f || !f->keep || f->keep(h, f->ctx);
}

/* Every application record takes its thread's seq. */
static void seq_step(struct sbuild *b, struct sthr *t, uint32_t seq)
{
	struct bt_fstream *o = b->out;
	if (t->fresh) {
		t->fresh = 0;
	} else if (seq != t->last_seq + 1) {
		if ((int32_t)(seq - t->last_seq) > 1) {
			o->c.seq_gaps++;
			o->c.seq_missing += seq - t->last_seq - 1;
		}
		o->c.cut += t->n;
		abandon(b, t); /* their exits may be in the gap */
	}
	t->last_seq = seq;
}

static int record(struct sbuild *b, struct sthr *t, const struct bt_ev_app_funcs *bat, int32_t app,
		  const struct bt_func_rec *r)
{
	struct bt_fstream *o = b->out;
	seq_step(b, t, r->seq);
	o->c.records++;
	if (!o->c.first_ts)
		o->c.first_ts = r->ts_ns;
	o->c.last_ts = r->ts_ns;
	int64_t fi = fn_get(b, app, r->addr);
	if (fi < 0)
		return -ENOMEM;
	if (!r->exit) {
		if (t->n == t->cap) {
			size_t nc = t->cap ? t->cap * 2 : 32;
			void *q = realloc(t->st, nc * sizeof(*t->st));
			if (!q)
				return -ENOMEM;
			t->st = q;
			t->cap = nc;
		}
		struct bt_event_hdr h = bat->h;
		h.ts_ns = r->ts_ns;
		h.seq = r->seq;
		h.type = BT_EV_APP_FUNC_ENTRY;
		size_t s = t->n;
		while (s > 0 && t->st[s - 1].fn != (uint32_t)fi)
			s--;
		t->st[t->n++] = (struct frame){ .start = r->ts_ns, .fn = (uint32_t)fi, .up = (int32_t)s - 1,
						.sel = (uint8_t)keep(b->f, &h) };
		o->c.n++;
		if (b->hot && t->st[t->n - 1].sel)
			deep_push(b, t);
		return b->nomem ? -ENOMEM : 0;
	}
	size_t s = t->n;
	while (s > 0 && t->st[s - 1].fn != (uint32_t)fi)
		s--;
	if (!s) {
		if (t->n)
			o->c.mismatched++;
		else
			o->c.unmatched_exits++;
		return 0;
	}
	while (t->n >= s)
		if (pop_closed(b, t, r->ts_ns) < 0)
			return -ENOMEM;
	return b->nomem ? -ENOMEM : 0;
}

/* One event of the walk: application records folded, batches decoded one
 * at a time; non-zero (-errno, kept in b->ret) stops the walk. */
static int on_event(const struct bt_dump_event *e, void *ctx)
{
	struct sbuild *b = ctx;
	const struct bt_event_hdr *h = e->ev;

	if (e->app < 0)
		return 0;
	struct sthr *t = thr_get(b, h->tid);
	if (!t)
		return b->ret = -ENOMEM;
	if (h->type != BT_EV_APP_FUNCS) {
		seq_step(b, t, h->seq);
		return 0;
	}
	const struct bt_ev_app_funcs *bat = (const void *)h;
	int64_t k = bt_funcs_count(bat, e->len);
	if (k <= 0)
		return 0; /* malformed: the reader counted it */
	if ((size_t)k > b->rcap) {
		void *q = realloc(b->rec, (size_t)k * sizeof(*b->rec));
		if (!q)
			return b->ret = -ENOMEM;
		b->rec = q;
		b->rcap = (size_t)k;
	}
	bt_funcs_decode(bat, e->len, b->rec);
	for (int64_t j = 0; j < k && !b->ret; j++)
		b->ret = record(b, t, bat, e->app, &b->rec[j]);
	return b->ret;
}

int bt_fstream_build(const struct bt_dump *d, const struct bt_func_filter *f, unsigned hot, struct bt_fstream *out)
{
	struct sbuild b = { .out = out, .d = d, .f = f, .hot = hot, .threads = BT_TID_TABLE_INIT(struct sthr) };
	char err[256];
	int ret;

	memset(out, 0, sizeof(*out));
	/* batches whole (decode 0): from memory, or read again from the
	 * file one application block at a time (BT_DUMP_OPEN_APP_STREAM) */
	ret = bt_dump_each_event(d, 0, on_event, &b, err, sizeof(err));
	if (b.ret)
		ret = b.ret;
	else if (ret < 0 && f && f->err && f->errlen)
		snprintf(f->err, f->errlen, "%s", err[0] ? err : strerror(-ret));
	for (size_t i = 0; i < b.threads.cap; i++) {
		struct sthr *t = bt_tid_table_slot(&b.threads, i);
		if (!t)
			continue;
		out->c.running += t->n;
		abandon(&b, t);
		free(t->st);
		free(t->dp);
	}
	bt_tid_table_free(&b.threads);
	free(b.fx.h);
	free(b.rec);
	while (b.free_links) {
		struct link *l = b.free_links;
		b.free_links = l->next;
		free(l);
	}
	if (!ret && b.nomem)
		ret = -ENOMEM;
	if (ret)
		bt_fstream_free(out);
	return ret;
}

void bt_fstream_free(struct bt_fstream *s)
{
	for (size_t i = 0; s->agg && i < s->c.nfn; i++)
		free(s->agg[i].hist);
	free(s->agg);
	free(s->c.fn);
	for (size_t i = 0; i < s->ndeep; i++)
		free(s->deep[i].c);
	for (size_t i = 0; i < s->nslow; i++)
		free(s->slow[i].c);
	free(s->deep);
	free(s->slow);
	memset(s, 0, sizeof(*s));
}
