// SPDX-License-Identifier: MIT
/*
 * func_calls.c - pair each thread's function entries and exits into calls.
 *
 * Per thread a stack of open calls. An exit closes the innermost open call
 * of its function: calls above it (left by longjmp or an exception) close
 * at the same time, as uftrace does; an exit of a function not on the stack
 * entered before the dump's window (or before a loss) and is counted.
 * Records carry the thread's seq: a gap means records are missing, so the
 * open calls cannot be trusted to close and are abandoned (counted as cut).
 * Self time is the duration minus the direct children's durations.
 */
#include "func_calls.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "hash_mix.h"
#include "tid_table.h"
#include "util.h"

struct thr {
	uint32_t tid;   /* 0: free slot */
	uint32_t last_seq;
	int32_t *stack; /* open calls (indexes) */
	size_t n, cap;
};

struct build {
	struct bt_calls *out;
	size_t ccap;
	struct bt_tid_table threads; /* struct thr */
	struct bt_fn_index fx;
};


static struct thr *thr_get(struct build *b, uint32_t tid)
{
	int fresh;
	struct thr *t = bt_tid_table_get(&b->threads, tid, &fresh);

	/* first record of the thread: no seq to compare with */
	if (t && fresh)
		t->n = (size_t)-1;
	return t;
}

int64_t bt_calls_fn(struct bt_calls *c, struct bt_fn_index *ix, const struct bt_dump *d, int32_t app,
		    uint64_t addr)
{
	if (2 * (c->nfn + 1) > ix->cap) {
		size_t nc = ix->cap ? ix->cap * 2 : 256;
		uint32_t *h = calloc(nc, sizeof(*h));
		if (!h)
			return -1;
		for (size_t i = 0; i < c->nfn; i++) {
			size_t k = bt_u64_mix(c->fn[i].addr ^ (uint64_t)c->fn[i].app << 48) & (nc - 1);
			while (h[k])
				k = (k + 1) & (nc - 1);
			h[k] = (uint32_t)i + 1;
		}
		free(ix->h);
		ix->h = h;
		ix->cap = nc;
	}
	size_t k = bt_u64_mix(addr ^ (uint64_t)app << 48) & (ix->cap - 1);
	for (; ix->h[k]; k = (k + 1) & (ix->cap - 1)) {
		const struct bt_cfunc *f = &c->fn[ix->h[k] - 1];
		if (f->addr == addr && f->app == app)
			return ix->h[k] - 1;
	}
	if (c->nfn == ix->fcap) {
		size_t nc = ix->fcap ? ix->fcap * 2 : 64;
		void *q = realloc(c->fn, nc * sizeof(*c->fn));
		if (!q)
			return -1;
		c->fn = q;
		ix->fcap = nc;
	}
	size_t na;
	const struct bt_dump_app *apps = bt_dump_apps(d, &na);
	c->fn[c->nfn] = (struct bt_cfunc){ .app = app, .addr = addr,
					    .pid = app >= 0 && (size_t)app < na ? apps[app].pid : 0,
					    .name = bt_dump_app_func_name(d, app, addr) };
	ix->h[k] = (uint32_t)c->nfn + 1;
	return (int64_t)c->nfn++;
}

static int push(struct thr *t, int32_t i)
{
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 32;
		void *q = realloc(t->stack, nc * sizeof(*t->stack));
		if (!q)
			return -1;
		t->stack = q;
		t->cap = nc;
	}
	t->stack[t->n++] = i;
	return 0;
}

/* Close the call on top of t's stack at ts. */
static void pop(struct bt_calls *c, struct thr *t, uint64_t ts)
{
	struct bt_call *x = &c->c[t->stack[--t->n]];
	x->dur = ts >= x->start ? ts - x->start : 0;
	x->open = 0;
	/* self = dur - children's durations: the children were subtracted as
	 * they closed (self holds minus their sum until now) */
	x->self += x->dur;
	if (x->parent >= 0)
		c->c[x->parent].self -= x->dur;
}

static int keep(const struct bt_func_filter *f, const struct bt_event_hdr *h)
{
	return !f || !f->keep || f->keep(h, f->ctx);
}

int bt_calls_build(const struct bt_dump *d, const struct bt_func_filter *f, struct bt_calls *out)
{
	size_t n;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	struct build b = { .out = out, .threads = BT_TID_TABLE_INIT(struct thr) };
	int ret = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		const struct bt_event_hdr *h = ev[i].ev;
		if (ev[i].app < 0)
			continue;
		struct thr *t = thr_get(&b, h->tid);
		if (!t)
			goto nomem;
		/* every application event takes the thread's seq */
		if (t->n == (size_t)-1) {
			t->n = 0;
		} else if (h->seq != t->last_seq + 1) {
			if ((int32_t)(h->seq - t->last_seq) > 1) {
				out->seq_gaps++;
				out->seq_missing += h->seq - t->last_seq - 1;
			}
			out->cut += t->n;
			t->n = 0; /* the open calls stay open: their exit may be in the gap */
		}
		t->last_seq = h->seq;
		if (h->type != BT_EV_APP_FUNC_ENTRY && h->type != BT_EV_APP_FUNC_EXIT)
			continue;
		const struct bt_ev_app *a = (const void *)h;
		if (ev[i].len < sizeof(*a) + 8 || a->nargs != 1)
			continue;
		uint64_t addr = (uint64_t)a->args[0];
		out->records++;
		if (!out->first_ts)
			out->first_ts = h->ts_ns;
		out->last_ts = h->ts_ns;
		int64_t fi = bt_calls_fn(out, &b.fx, d, ev[i].app, addr);
		if (fi < 0)
			goto nomem;
		if (h->type == BT_EV_APP_FUNC_ENTRY) {
			if (out->n == b.ccap) {
				size_t nc = b.ccap ? b.ccap * 2 : 1024;
				void *q = realloc(out->c, nc * sizeof(*out->c));
				if (!q)
					goto nomem;
				out->c = q;
				b.ccap = nc;
			}
			int32_t par = t->n ? t->stack[t->n - 1] : -1;
			size_t s = t->n;
			while (s > 0 && out->c[t->stack[s - 1]].fn != (uint32_t)fi)
				s--;
			out->c[out->n] = (struct bt_call){ .start = h->ts_ns, .tid = h->tid, .fn = (uint32_t)fi,
							   .depth = (uint32_t)t->n, .parent = par, .open = 1,
							   .sel = (uint8_t)keep(f, h), .outer = !s,
							   .up = s ? t->stack[s - 1] : -1 };
			if (push(t, (int32_t)out->n++) < 0)
				goto nomem;
			continue;
		}
		size_t s = t->n;
		while (s > 0 && out->c[t->stack[s - 1]].fn != (uint32_t)fi)
			s--;
		if (!s) {
			if (t->n)
				out->mismatched++;
			else
				out->unmatched_exits++;
			continue;
		}
		while (t->n >= s)
			pop(out, t, h->ts_ns);
	}
	for (size_t i = 0; i < b.threads.cap; i++) {
		struct thr *t = bt_tid_table_slot(&b.threads, i);
		if (t && t->n != (size_t)-1)
			out->running += t->n;
	}
	goto done;
nomem:
	ret = -ENOMEM;
	bt_calls_free(out);
done:
	for (size_t i = 0; i < b.threads.cap; i++) {
		struct thr *t = bt_tid_table_slot(&b.threads, i);
		if (t)
			free(t->stack);
	}
	bt_tid_table_free(&b.threads);
	free(b.fx.h);
	return ret;
}

void bt_calls_free(struct bt_calls *c)
{
	free(c->c);
	free(c->fn);
	memset(c, 0, sizeof(*c));
}

/* Names shown whole up to NAME_SHOWN bytes; a longer one is cut with a
 * marker and a hash of the whole name, so two long names that share their
 * start (C++ instantiations) stay two rows. */
#define NAME_SHOWN 512

const char *bt_cfunc_name(const struct bt_cfunc *f, char *buf, size_t len)
{
	size_t n = f->name ? strlen(f->name) : 0;

	if (f->name && n > NAME_SHOWN && len > 16) {
		bt_escape_text(f->name, NAME_SHOWN - 16, buf, len - 14);
		snprintf(buf + strlen(buf), 15, "...#%08x", (uint32_t)bt_str_hash(f->name, 0));
	} else if (f->name)
		bt_escape_text(f->name, NAME_SHOWN, buf, len); /* symbol names are bytes from the program's files */
	else
		snprintf(buf, len, "0x%" PRIx64, f->addr);
	return buf;
}

const char *bt_fmt_dur(uint64_t ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%" PRIu64 "ns", ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.2fus", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2fms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.2fs", (double)ns / 1e9);
	return buf;
}
