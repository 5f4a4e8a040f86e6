// SPDX-License-Identifier: MIT
/*
 * dump_app_stream.c - the events of a dump in time order without the
 * applications' blocks in memory (BT_DUMP_OPEN_APP_STREAM, issue 36: plain
 * report and --stats of 20 M calls took 3.8 GB).
 *
 * The first read keeps the kernel's events and every table, and of each
 * ABLK only its earliest event time. A walk (bt_dump_each_event) reads the
 * body again, one ABLK at a time: its events, sorted, become a run; after
 * block k every event earlier than the earliest time of the blocks still
 * unread (a suffix minimum of the first read's times) can no longer be
 * preceded by anything, and is handed out, merged with the kernel's events
 * by the comparison the full reader sorts with. What waits is, per thread,
 * the block it was filling when another thread claimed the next: memory
 * follows threads and block size, not records.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "dump_format.h"
#include "func_batch.h"
#include "dump_read_int.h"

int bt_dump_is_app_stream(const struct bt_dump *d)
{
	return d && d->app_stream;
}

/* ---- the first read: each ABLK described --------------------------------- */

int btd_app_stream_note(void *ctx, const struct bt_event_hdr *ev, uint32_t len, int32_t app, uint32_t core)
{
	struct bt_dump *d = ctx;
	uint64_t first = ev->ts_ns, last = ev->ts_ns, n = 1;

	(void)core;
	if (ev->ts_ns < d->ablk_cur) /* as a walk's take() sees it */
		d->ablk_cur = ev->ts_ns;
	if (app > d->app_max)
		d->app_max = app;
	/* each application's process, checked against the application table
	 * at the end (btd_parse_done), as the full reader checks each event */
	if ((size_t)app >= d->cap_app_tgid) {
		size_t c = d->cap_app_tgid ? d->cap_app_tgid : 16;
		while (c <= (size_t)app)
			c *= 2;
		uint32_t *t = realloc(d->app_tgid, c * sizeof(*t));
		if (!t)
			return -ENOMEM;
		memset(t + d->cap_app_tgid, 0, (c - d->cap_app_tgid) * sizeof(*t));
		d->app_tgid = t;
		d->cap_app_tgid = c;
	}
	if (!d->app_tgid[app])
		d->app_tgid[app] = ev->tgid;
	else if (d->app_tgid[app] != ev->tgid && d->tgid_mixed < 0) {
		d->tgid_mixed = app;
		d->tgid_other = ev->tgid;
	}
	if (ev->type == BT_EV_APP_FUNCS) { /* its records: the last one's time */
		const struct bt_ev_app_funcs *f = (const void *)ev;
		struct bt_funcs_iter it;
		uint64_t addr;
		unsigned ex;
		n = 0;
		bt_funcs_iter_init(&it, f, len);
		while (bt_funcs_iter_next(&it, &addr, &ex))
			n++;
		if (!n)
			return 0;
		last = bt_funcs_ts(f, it.tk);
	}
	if (!d->app_events || first < d->app_first)
		d->app_first = first;
	if (last > d->app_last)
		d->app_last = last;
	d->app_events += n;
	return 0;
}

int btd_app_stream_block_done(struct bt_dump *d)
{
	if (d->nablk == d->cap_ablk) {
		size_t c = d->cap_ablk ? d->cap_ablk * 2 : 1024;
		uint64_t *m = realloc(d->ablk_min, c * sizeof(*m));
		if (!m)
			return -ENOMEM;
		d->ablk_min = m;
		d->cap_ablk = c;
	}
	d->ablk_min[d->nablk++] = d->ablk_cur;
	d->ablk_cur = UINT64_MAX;
	return 0;
}

void bt_dump_time_span(const struct bt_dump *d, uint64_t *first, uint64_t *last)
{
	uint64_t f = 0, l = 0;

	if (d->nevents) {
		f = d->events[0].ev->ts_ns;
		l = d->events[d->nevents - 1].ev->ts_ns;
	}
	if (d->app_stream && d->app_events) {
		if (!d->nevents || d->app_first < f)
			f = d->app_first;
		if (d->app_last > l)
			l = d->app_last;
	}
	*first = f;
	*last = l;
}

/* ---- a walk ---------------------------------------------------------------- */

/* The full reader's order (dump_open.c cmp_event) up to equal times, CPUs
 * and seqs, where the kernel's event comes first, then body order. */
static int before(const struct bt_dump_event *x, const struct bt_dump_event *y)
{
	const struct bt_event_hdr *p = x->ev, *q = y->ev;
	if (p->ts_ns != q->ts_ns)
		return p->ts_ns < q->ts_ns;
	if (x->app >= 0 && y->app >= 0 && p->tid == q->tid && p->seq != q->seq)
		return (int32_t)(p->seq - q->seq) < 0;
	if (p->cpu != q->cpu)
		return p->cpu < q->cpu;
	if (p->seq != q->seq)
		return p->seq < q->seq;
	return 0;
}

static int cmp_run_event(const void *a, const void *b)
{
	const struct bt_dump_event *x = a, *y = b;
	if (before(x, y))
		return -1;
	if (before(y, x))
		return 1;
	return (uintptr_t)x->ev < (uintptr_t)y->ev ? -1 : (uintptr_t)x->ev > (uintptr_t)y->ev;
}

/* One ABLK's events, sorted, with the bytes they point into. */
struct run {
	struct bt_dump_event *ev;
	size_t n, i;
	uint64_t order; /* ABLKs before it in the body */
	uint8_t *store;
};

struct walk {
	const struct bt_dump *d;
	struct bt_dump scratch; /* what the block parser may count into */
	int decode;
	bt_dump_event_fn fn;
	void *ctx;
	int stop;               /* fn's non-zero return */
	size_t ki;              /* next kernel event */
	uint64_t *sufmin;       /* [nablk + 1]: earliest time of the ABLKs from k on */
	size_t blk;             /* ABLKs read */
	struct run **heap;
	size_t nheap, capheap;
	/* the ABLK being read: its events as the parser hands them */
	struct bt_dump_event *tmp;
	size_t ntmp, captmp;
	uint64_t tmp_bytes;
	uint64_t tmp_min;
	struct bt_func_rec *rec;
	size_t caprec;
	char msg[256];
};

static int run_before(const struct run *a, const struct run *b)
{
	const struct bt_dump_event *x = &a->ev[a->i], *y = &b->ev[b->i];
	if (before(x, y))
		return 1;
	if (before(y, x))
		return 0;
	return a->order < b->order || (a->order == b->order && a->i < b->i);
}

static void heap_down(struct walk *w, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < w->nheap && run_before(w->heap[l], w->heap[m]))
			m = l;
		if (r < w->nheap && run_before(w->heap[r], w->heap[m]))
			m = r;
		if (m == i)
			return;
		struct run *t = w->heap[i];
		w->heap[i] = w->heap[m];
		w->heap[m] = t;
		i = m;
	}
}

static int heap_push(struct walk *w, struct run *r)
{
	if (w->nheap == w->capheap) {
		size_t c = w->capheap ? w->capheap * 2 : 16;
		struct run **h = realloc(w->heap, c * sizeof(*h));
		if (!h)
			return -ENOMEM;
		w->heap = h;
		w->capheap = c;
	}
	size_t i = w->nheap++;
	w->heap[i] = r;
	while (i && run_before(w->heap[i], w->heap[(i - 1) / 2])) {
		struct run *t = w->heap[i];
		w->heap[i] = w->heap[(i - 1) / 2];
		w->heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
	return 0;
}

static void run_free(struct run *r)
{
	if (!r)
		return;
	free(r->ev);
	free(r->store);
	free(r);
}

/* Hand out, in order, every event earlier than limit. */
static void emit(struct walk *w, uint64_t limit)
{
	const struct bt_dump *d = w->d;

	while (!w->stop) {
		const struct bt_dump_event *k = w->ki < d->nevents ? &d->events[w->ki] : NULL;
		struct run *r = w->nheap ? w->heap[0] : NULL;
		const struct bt_dump_event *a = r ? &r->ev[r->i] : NULL;
		const struct bt_dump_event *e = !a ? k : !k ? a : before(a, k) ? a : k;
		if (!e || e->ev->ts_ns >= limit)
			return;
		w->stop = w->fn(e, w->ctx);
		if (e == k) {
			w->ki++;
			continue;
		}
		if (++r->i < r->n) {
			heap_down(w, 0);
			continue;
		}
		w->heap[0] = w->heap[--w->nheap];
		run_free(r);
		if (w->nheap)
			heap_down(w, 0);
	}
}

/* An event of the ABLK being read, as the parser checked it. */
static int take(void *ctx, const struct bt_event_hdr *ev, uint32_t len, int32_t app, uint32_t core)
{
	struct walk *w = ctx;
	const struct bt_dump *d = w->d;

	if (ev->tgid != d->apps[app].pid) { /* as the full reader says it (parse_apps) */
		snprintf(w->msg, sizeof(w->msg), "corrupt dump: application event of process %u in the buffer of process %u",
			 ev->tgid, d->apps[app].pid);
		return -EBADMSG;
	}
	if (w->ntmp == w->captmp) {
		size_t c = w->captmp ? w->captmp * 2 : 256;
		struct bt_dump_event *t = realloc(w->tmp, c * sizeof(*t));
		if (!t)
			return -ENOMEM;
		w->tmp = t;
		w->captmp = c;
	}
	w->tmp[w->ntmp++] = (struct bt_dump_event){ .ev = ev, .len = len, .block_core = core, .app = app };
	if (ev->ts_ns < w->tmp_min)
		w->tmp_min = ev->ts_ns;
	return 0;
}

/* The parsed ABLK's events as a run of their own (batches decoded). */
static struct run *make_run(struct walk *w)
{
	size_t n = 0, bytes = 0;

	for (size_t i = 0; i < w->ntmp; i++) {
		const struct bt_dump_event *e = &w->tmp[i];
		if (w->decode && e->ev->type == BT_EV_APP_FUNCS) {
			size_t c = (size_t)bt_funcs_count((const void *)e->ev, e->len);
			n += c;
			bytes += c * sizeof(struct btd_func_ev);
		} else {
			n++;
			bytes += btd_pad8(e->len);
		}
	}
	struct run *r = calloc(1, sizeof(*r));
	if (!r || !n)
		return r;
	r->ev = malloc(n * sizeof(*r->ev));
	r->store = malloc(bytes);
	r->order = w->blk;
	if (!r->ev || !r->store) {
		run_free(r);
		return NULL;
	}
	uint8_t *o = r->store;
	for (size_t i = 0; i < w->ntmp; i++) {
		const struct bt_dump_event *e = &w->tmp[i];
		if (!(w->decode && e->ev->type == BT_EV_APP_FUNCS)) {
			memcpy(o, e->ev, e->len);
			r->ev[r->n++] = (struct bt_dump_event){ .ev = (const void *)o, .len = e->len,
								.block_core = e->block_core, .app = e->app };
			o += btd_pad8(e->len);
			continue;
		}
		const struct bt_ev_app_funcs *f = (const void *)e->ev;
		size_t c = (size_t)bt_funcs_count(f, e->len);
		if (c > w->caprec) {
			struct bt_func_rec *x = realloc(w->rec, c * sizeof(*x));
			if (!x) {
				run_free(r);
				return NULL;
			}
			w->rec = x;
			w->caprec = c;
		}
		const struct bt_dump_app *app = &w->d->apps[e->app];
		bt_funcs_decode(f, e->len, w->rec);
		for (size_t j = 0; j < c; j++) {
			struct btd_func_ev *x = (void *)o;
			memset(x, 0, sizeof(*x));
			x->h = f->h;
			x->h.ts_ns = w->rec[j].ts_ns;
			x->h.seq = w->rec[j].seq;
			x->h.type = w->rec[j].exit ? BT_EV_APP_FUNC_EXIT : BT_EV_APP_FUNC_ENTRY;
			x->nargs = 1;
			x->name_id = btd_func_name_id(app, w->rec[j].addr);
			x->addr = (int64_t)w->rec[j].addr;
			r->ev[r->n++] = (struct bt_dump_event){ .ev = &x->h, .len = sizeof(*x),
								.block_core = e->block_core, .app = e->app };
			o += sizeof(*x);
		}
	}
	for (size_t i = 1; i < r->n; i++) /* a thread's block is in order: no sort */
		if (cmp_run_event(&r->ev[i - 1], &r->ev[i]) > 0) {
			qsort(r->ev, r->n, sizeof(*r->ev), cmp_run_event);
			break;
		}
	return r;
}

/* One ABLK of the second read: parsed, made a run, and what it releases
 * handed out. */
static int on_ablk(void *ctx, uint8_t *pl, uint64_t len, uint64_t off)
{
	struct walk *w = ctx;
	const struct bt_dump *d = w->d;
	int r;

	if (w->stop)
		return 0;
	w->ntmp = 0;
	w->tmp_min = UINT64_MAX;
	r = btd_app_block_each(&w->scratch, pl, len, off, take, w, w->msg, sizeof(w->msg));
	if (r)
		return r;
	if (w->blk >= d->nablk || w->tmp_min != d->ablk_min[w->blk]) {
		snprintf(w->msg, sizeof(w->msg), "the dump changed while it was read (application block %zu)", w->blk);
		return -EBADMSG;
	}
	if (w->ntmp) {
		struct run *x = make_run(w);
		if (!x || (x->n && heap_push(w, x))) {
			run_free(x);
			snprintf(w->msg, sizeof(w->msg), "out of memory");
			return -ENOMEM;
		}
		if (!x->n)
			run_free(x);
	}
	w->blk++;
	emit(w, w->sufmin[w->blk]);
	return 0;
}

static int walk_array(const struct bt_dump *d, bt_dump_event_fn fn, void *ctx)
{
	for (size_t i = 0; i < d->nevents; i++) {
		int r = fn(&d->events[i], ctx);
		if (r)
			return r;
	}
	return 0;
}

int bt_dump_each_event(const struct bt_dump *d, int decode, bt_dump_event_fn fn, void *ctx, char *err,
		       size_t errlen)
{
	struct walk w = { .d = d, .decode = decode, .fn = fn, .ctx = ctx };
	int r;

	if (err && errlen)
		err[0] = 0;
	if (!d->app_stream || !d->nablk)
		return walk_array(d, fn, ctx);
	w.scratch = *d; /* the parser's counters go here; nothing of it is freed */
	w.sufmin = malloc((d->nablk + 1) * sizeof(*w.sufmin));
	if (!w.sufmin)
		return btd_rerr(err, errlen, ENOMEM, "out of memory"), -ENOMEM;
	w.sufmin[d->nablk] = UINT64_MAX;
	for (size_t k = d->nablk; k-- > 0;)
		w.sufmin[k] = d->ablk_min[k] < w.sufmin[k + 1] ? d->ablk_min[k] : w.sufmin[k + 1];
	emit(&w, w.sufmin[0]);
	struct bt_dump_stream *st = btd_stream_ablk(on_ablk, &w);
	char e2[256] = "out of memory", e3[256];
	r = st ? d->app_ops->stream_file(d->fd, &d->fhdr, st, e2, sizeof(e2)) : -ENOMEM;
	int r2 = btd_stream_ablk_end(st, e3, sizeof(e3));
	if (!r && r2) {
		r = r2;
		snprintf(e2, sizeof(e2), "%s", e3);
	}
	if (!r && !w.stop && w.blk != d->nablk) {
		snprintf(w.msg, sizeof(w.msg), "the dump changed while it was read (%zu application blocks, %zu before)",
			 w.blk, d->nablk);
		r = -EBADMSG;
	}
	if (!r)
		emit(&w, UINT64_MAX);
	if (r)
		btd_rerr(err, errlen, -r, "%s", w.msg[0] ? w.msg : e2);
	for (size_t i = 0; i < w.nheap; i++)
		run_free(w.heap[i]);
	free(w.heap);
	free(w.tmp);
	free(w.rec);
	free(w.sufmin);
	return r ? r : w.stop;
}
