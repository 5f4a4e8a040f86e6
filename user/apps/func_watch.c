// SPDX-License-Identifier: MIT
/*
 * func_watch.c - time the calls of watched functions from an application's
 * function records (`--trigger app-func:NAME>T`), in the recorder.
 *
 * Each scan reads the buffer with the validating reader (app_reader.c),
 * skipping the complete blocks an earlier scan took (a complete block never
 * changes until its position does), and re-reading the ones still open.
 * Each batch is a run of consecutive seqs of one thread; the runs are put
 * in each thread's seq order, and the records of watched functions are
 * replayed on a per-thread stack of (function, entry time); records an
 * earlier scan took are skipped by seq. A gap in a thread's seq (records
 * lost, or a batch of another CPU not seen yet) empties its stack: those
 * calls are not timed (counted), so a missing record never makes up a
 * duration. A run of seq 0 newer than the thread's last record is a new
 * thread reusing the tid.
 */
#include "func_watch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "app_reader.h"
#include "events.h"
#include "func_batch.h"
#include "func_names.h"
#include "tid_table.h"
#include "u64map.h"
#include "util.h"

struct frame {
	uint64_t addr, ts;
};

struct wthr {
	uint32_t tid; /* 0: free slot */
	uint32_t last_seq;
	uint64_t last_ts;
	int fresh;    /* no record replayed yet */
	struct frame *st; /* the watched calls open, innermost last */
	uint32_t n, cap;
};

/* One batch (or one other event) of a thread: records of consecutive seqs. */
struct wrun {
	uint32_t tid, seq; /* its first record */
	uint32_t n;        /* its records */
	uint32_t first, nw; /* its records of watched functions: rec[first, first + nw) */
	uint64_t ts0, ts1; /* its first and last record's time */
};

/* A record of a watched function. */
struct wrec {
	uint64_t ts, addr;
	uint32_t seq;
	uint32_t mask; /* the watched functions it is (bit i: cfg entry i) */
	uint32_t exit;
};

struct bt_func_watch {
	struct bt_func_watch_cfg cfg;
	struct bt_func_watch_stats st;
	struct bt_tid_table threads; /* struct wthr */
	struct bt_u64map am;         /* address -> the watched functions it is (bit i: cfg entry i) */
	uint64_t last_addr; /* the last address looked up, and its mask */
	uint32_t last_mask;
	uint64_t *done, *ndone; /* complete positions taken: sorted; being built */
	size_t ndone_n, done_n, done_cap;
	const void *base;       /* the buffer the positions are of */
	struct wrun *run;
	size_t nrun, runcap;
	struct wrec *rec;
	size_t nrec, rcap;
	struct bt_func_names *names; /* this scan's */
	int refreshed; /* names read again in this scan */
	int err;
};


int bt_func_watch_match(const char *name, const char *sym)
{
	size_t n = strlen(name);
	return strncmp(name, sym, n) == 0 && (sym[n] == '\0' || (sym[n] == '(' && !strchr(name, '(')));
}

struct bt_func_watch *bt_func_watch_new(const struct bt_func_watch_cfg *cfg)
{
	struct bt_func_watch *w = calloc(1, sizeof(*w));
	if (w) {
		w->cfg = *cfg;
		w->threads = (struct bt_tid_table)BT_TID_TABLE_INIT(struct wthr);
	}
	return w;
}

void bt_func_watch_free(struct bt_func_watch *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->threads.cap; i++) {
		struct wthr *t = bt_tid_table_slot(&w->threads, i);
		if (t)
			free(t->st);
	}
	bt_tid_table_free(&w->threads);
	bt_u64map_free(&w->am);
	free(w->done);
	free(w->ndone);
	free(w->run);
	free(w->rec);
	free(w);
}

void bt_func_watch_stats(const struct bt_func_watch *w, struct bt_func_watch_stats *out)
{
	*out = w->st;
}

static struct wthr *thr_get(struct bt_func_watch *w, uint32_t tid)
{
	int fresh;
	struct wthr *t = bt_tid_table_get(&w->threads, tid, &fresh);

	if (t && fresh)
		t->fresh = 1;
	return t;
}

/* The watched functions addr is (bit i: cfg.names[i]), resolved once. */
static uint32_t watched(struct bt_func_watch *w, uint64_t addr)
{
	struct bt_func_names *names = w->names;
	if (!addr)
		return 0;
	size_t known = w->am.n;
	uint32_t *slot = bt_u64map_slot(&w->am, addr);
	if (!slot)
		return 0; /* out of memory: not timed this time */
	if (w->am.n == known)
		return *slot;
	uint32_t m = 0;
	const char *sym = names ? bt_func_names_get(names, addr) : NULL;
	if (!sym && names && !w->refreshed) {
		/* a library loaded since the mappings were read */
		w->refreshed = 1;
		if (bt_func_names_refresh(names) == 0)
			sym = bt_func_names_get(names, addr);
	}
	for (size_t i = 0; sym && i < w->cfg.n && i < 32; i++)
		if (bt_func_watch_match(w->cfg.names[i], sym))
			m |= 1u << i;
	*slot = m;
	return m;
}

static inline uint32_t watched_cached(struct bt_func_watch *w, uint64_t addr)
{
	if (addr == w->last_addr)
		return w->last_mask; /* a hot function's records come in runs */
	uint32_t m = watched(w, addr);
	w->last_addr = addr;
	w->last_mask = m;
	return m;
}

static int cmp_run(const void *a, const void *b)
{
	const struct wrun *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int note_done(struct bt_func_watch *w, uint64_t pos)
{
	if (w->ndone_n == w->done_cap) {
		size_t nc = w->done_cap ? w->done_cap * 2 : 256;
		uint64_t *a = realloc(w->done, nc * 8), *b = a ? realloc(w->ndone, nc * 8) : NULL;
		if (a)
			w->done = a;
		if (!a || !b)
			return -ENOMEM;
		w->ndone = b;
		w->done_cap = nc;
	}
	w->ndone[w->ndone_n++] = pos;
	return 0;
}

static int skip_block(uint64_t pos, void *ctx)
{
	struct bt_func_watch *w = ctx;
	if (!w->done_n || !bsearch(&pos, w->done, w->done_n, 8, bt_cmp_u64))
		return 0;
	if (note_done(w, pos) < 0)
		w->err = -ENOMEM;
	return 1;
}

/* arr (elem bytes each, *cap of them) doubled (first: the first size), or
 * NULL (arr kept). */
static void *grow(void *arr, size_t *cap, size_t elem, size_t first)
{
	size_t nc = *cap ? *cap * 2 : first;
	void *q = realloc(arr, nc * elem);
	if (q)
		*cap = nc;
	return q;
}

static int add_run(struct bt_func_watch *w, struct wrun r)
{
	if (w->nrun == w->runcap) {
		struct wrun *q = grow(w->run, &w->runcap, sizeof(*q), 1024);
		if (!q)
			return -ENOMEM;
		w->run = q;
	}
	w->run[w->nrun++] = r;
	return 0;
}

static int add_rec(struct bt_func_watch *w, struct wrec r)
{
	if (w->nrec == w->rcap) {
		struct wrec *q = grow(w->rec, &w->rcap, sizeof(*q), 256);
		if (!q)
			return -ENOMEM;
		w->rec = q;
	}
	w->rec[w->nrec++] = r;
	return 0;
}

/* Each batch becomes a run; of its records only the watched functions' are
 * kept (a scan sees ~10^6 records, of which a handful are watched: sorting
 * every record by thread and seq cost ~150 ms a scan, longer than the
 * buffer of a busy program lasts). */
static int take_block(const struct bt_block_view *blk, void *ctx)
{
	struct bt_func_watch *w = ctx;
	uint32_t off = 0, len;
	const void *p;
	if (blk->complete && note_done(w, blk->pos) < 0)
		return -ENOMEM;
	while ((p = bt_block_next(blk, &off, &len))) {
		const struct bt_ev_app *e = p;
		if (len < sizeof(e->h))
			continue;
		if (e->h.type != BT_EV_APP_FUNCS) {
			/* another event takes a seq of the thread too */
			if (add_run(w, (struct wrun){ e->h.tid, e->h.seq, 1, 0, 0, e->h.ts_ns, e->h.ts_ns }) < 0)
				return -ENOMEM;
			continue;
		}
		const struct bt_ev_app_funcs *f = p; /* validated by the reader */
		if (len < sizeof(*f))
			continue;
		struct wrun r = { f->h.tid, f->h.seq, 0, (uint32_t)w->nrec, 0, f->h.ts_ns, 0 };
		struct bt_funcs_iter it;
		uint64_t addr;
		unsigned ex;
		bt_funcs_iter_init(&it, f, len);
		while (bt_funcs_iter_next(&it, &addr, &ex)) {
			uint32_t m = watched_cached(w, addr);
			if (m && add_rec(w, (struct wrec){ bt_funcs_ts(f, it.tk), addr, r.seq + r.n, m, ex }) < 0)
				return -ENOMEM;
			r.n++;
		}
		if (!r.n)
			continue;
		r.ts1 = bt_funcs_ts(f, it.tk);
		r.nw = (uint32_t)w->nrec - r.first;
		if (add_run(w, r) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* A watched record, on its thread's stack of watched calls. */
static void replay_rec(struct bt_func_watch *w, struct wthr *t, const struct wrec *r)
{
	if (!r->exit) {
		if (t->n == t->cap) {
			uint32_t nc = t->cap ? t->cap * 2 : 32;
			void *q = nc <= 65536 ? realloc(t->st, nc * sizeof(*t->st)) : NULL;
			if (!q) {
				t->n = 0; /* too deep to follow: start again, the calls open are not timed */
				w->st.untimed++;
				return;
			}
			t->st = q;
			t->cap = nc;
		}
		t->st[t->n++] = (struct frame){ r->addr, r->ts };
		return;
	}
	uint32_t s = t->n;
	while (s > 0 && t->st[s - 1].addr != r->addr)
		s--;
	if (!s) {
		w->st.untimed++;
		return;
	}
	t->n = s - 1; /* calls above it left without an exit (longjmp, exceptions) */
	uint64_t dur = r->ts > t->st[s - 1].ts ? r->ts - t->st[s - 1].ts : 0;
	for (uint32_t i = 0; i < w->cfg.n && i < 32; i++)
		if ((r->mask & (1u << i)) && dur > w->cfg.ns[i]) {
			w->st.hits++;
			w->cfg.hit(w->cfg.ctx, w->cfg.trig[i], r->ts, dur, t->tid);
		}
}

/* Replay one run on its thread: seq continuity first (a gap empties the
 * stack: the calls open across it are not timed), then its watched records
 * not taken by an earlier scan. */
static int replay_run(struct bt_func_watch *w, const struct wrun *r)
{
	struct wthr *t = thr_get(w, r->tid);
	if (!t)
		return -ENOMEM;
	if (r->seq == 0 && !t->fresh && r->ts0 > t->last_ts) {
		t->n = 0; /* a new thread with this tid */
		t->fresh = 1;
	}
	uint32_t from = r->seq, last = r->seq + r->n - 1;
	if (t->fresh) {
		t->fresh = 0;
	} else {
		uint32_t dl = last - t->last_seq, d = r->seq - t->last_seq;
		if (dl == 0 || dl > (1u << 31))
			return 0; /* taken by an earlier scan */
		if (d == 0 || d > (1u << 31)) {
			from = t->last_seq + 1; /* an open batch read again: its new records */
		} else if (d > 1) {
			w->st.gaps += d - 1;
			t->n = 0;
		}
	}
	w->st.records += last - from + 1;
	t->last_seq = last;
	t->last_ts = r->ts1;
	for (uint32_t i = 0; i < r->nw; i++) {
		const struct wrec *x = &w->rec[r->first + i];
		if (x->seq - from <= last - from)
			replay_rec(w, t, x);
	}
	return 0;
}

int bt_func_watch_scan(struct bt_func_watch *w, const struct bt_app_view *v, struct bt_func_names *names)
{
	int ret;
	if (w->base != v->base) {
		w->done_n = 0; /* positions of another buffer */
		w->base = v->base;
	}
	w->nrun = w->nrec = 0;
	w->ndone_n = 0;
	w->err = 0;
	w->names = names;
	w->refreshed = 0;
	w->last_addr = 0;
	w->last_mask = 0; /* address 0 is no function */
	w->st.scans++;
	ret = bt_app_read_skip(v, skip_block, take_block, w, NULL);
	if (!ret)
		ret = w->err;
	/* the complete blocks seen are the ones to skip next time */
	uint64_t *t = w->done;
	w->done = w->ndone;
	w->ndone = t;
	w->done_n = ret ? 0 : w->ndone_n;
	if (w->done_n)
		qsort(w->done, w->done_n, 8, bt_cmp_u64);
	if (w->nrun)
		qsort(w->run, w->nrun, sizeof(*w->run), cmp_run);
	for (size_t i = 0; i < w->nrun && !ret; i++)
		ret = replay_run(w, &w->run[i]);
	return ret;
}
