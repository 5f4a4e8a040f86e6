// SPDX-License-Identifier: MIT
/*
 * report_list.c - `report`'s default output: the events of a dump in time
 * order, one line each in the trace-cmd report format, with LOST lines
 * where a CPU or an application thread missed events, and function
 * entries/exits indented by their call depth.
 *
 *   cpus=2
 *         pingpong-1234  [001]  1234.567890: sched_switch: prev_comm=...
 *   CPU:1 [LOST 12 EVENTS]
 */
#include "report_list.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "event_names.h"
#include "report_stacks.h"
#include "util.h"

const char *bt_report_fmt_wall(const struct bt_dump_header *h, uint64_t ts, char *buf, size_t len)
{
	/* wall = ts + (realtime - boottime), in wrapping unsigned arithmetic */
	int64_t w = (int64_t)(ts + (h->created_realtime_ns - h->created_boottime_ns));
	time_t sec = (time_t)(w / 1000000000);
	long us = (long)((w % 1000000000) / 1000);
	if (us < 0)
		us += 1000000, sec--;
	struct tm tm;
	char d[40];
	if (!localtime_r(&sec, &tm) || !strftime(d, sizeof(d), "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(d, sizeof(d), "%lld", (long long)sec);
	snprintf(buf, len, "%s.%06ld", d, us);
	return buf;
}

const char *bt_report_fmt_secs(uint64_t ns, char *buf, size_t len)
{
	return bt_format_ts(ns, buf, len);
}

/* Per thread the functions entered and not yet left, for the indentation
 * of function entries/exits: paired as report --functions and convert pair
 * them (func_calls.c), so that after a longjmp or an exception the depth
 * is right again. */
/* An open call's entry, for --time's enclosing calls. */
struct open_at {
	uint64_t ts;
	uint32_t cpu, name_id;
	int32_t app;
};
struct fstack {
	uint64_t *fn;
	struct open_at *at;      /* each open call's entry */
	uint32_t n, cap;
	uint32_t last_seq, seen; /* the thread's application records' seq */
	uint8_t shown;           /* a line of the thread was listed (--time: its enclosing calls too) */
};
struct depths {
	uint32_t *tid; /* tid + 1, 0: free */
	struct fstack *st;
	size_t cap, n;
};

static struct fstack *stack_of(struct depths *m, uint32_t tid)
{
	if (2 * (m->n + 1) > m->cap) {
		struct depths g = { .cap = m->cap ? m->cap * 2 : 256 };
		g.tid = calloc(g.cap, sizeof(*g.tid));
		g.st = calloc(g.cap, sizeof(*g.st));
		if (!g.tid || !g.st) {
			free(g.tid);
			free(g.st);
			return NULL;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->tid[i])
				*stack_of(&g, m->tid[i] - 1) = m->st[i];
		free(m->tid);
		free(m->st);
		*m = g;
	}
	size_t i = (tid * 2654435761u) & (m->cap - 1);
	while (m->tid[i] && m->tid[i] != tid + 1)
		i = (i + 1) & (m->cap - 1);
	if (!m->tid[i]) {
		m->tid[i] = tid + 1;
		m->n++;
	}
	return &m->st[i];
}

/* Records of this application thread missing before e (its seq gap). */
static uint32_t app_gap(struct depths *m, const struct bt_event_hdr *e)
{
	struct fstack *s = stack_of(m, e->tid);
	if (!s)
		return 0;
	uint32_t miss = s->seen && (int32_t)(e->seq - s->last_seq) > 1 ? e->seq - s->last_seq - 1 : 0;
	s->seen = 1;
	s->last_seq = e->seq;
	return miss;
}

static void depths_free(struct depths *m)
{
	for (size_t i = 0; i < m->cap; i++) {
		free(m->st[i].fn);
		free(m->st[i].at);
	}
	free(m->tid);
	free(m->st);
}

/* The depth to show a function entry/exit at: an entry one below its
 * caller; an exit at its entry's depth, leaving every call above it (left
 * by longjmp); an exit whose entry is not open (before the dump's window)
 * at the depth it comes at, leaving the stack as it is. */
static int func_depth(struct depths *m, const struct bt_dump_event *de)
{
	const struct bt_event_hdr *e = de->ev;
	uint32_t len = de->len;
	struct fstack *s = stack_of(m, e->tid);
	if (!s || len < sizeof(struct bt_ev_app) + 8)
		return 0;
	uint64_t fn = (uint64_t)((const struct bt_ev_app *)e)->args[0];
	if (e->type == BT_EV_APP_FUNC_ENTRY) {
		if (s->n == s->cap) {
			uint32_t nc = s->cap ? s->cap * 2 : 64;
			uint64_t *q = nc <= 1u << 20 ? realloc(s->fn, nc * sizeof(*q)) : NULL;
			struct open_at *qa = q ? realloc(s->at, nc * sizeof(*qa)) : NULL;
			if (q)
				s->fn = q;
			if (!qa)
				return (int)s->n; /* shown at the deepest depth kept */
			s->at = qa;
			s->cap = nc;
		}
		s->fn[s->n] = fn;
		s->at[s->n] = (struct open_at){ .ts = e->ts_ns, .cpu = e->cpu, .app = de->app,
						.name_id = ((const struct bt_ev_app *)e)->name_id };
		return (int)s->n++;
	}
	uint32_t k = s->n;
	while (k > 0 && s->fn[k - 1] != fn)
		k--;
	if (!k)
		return (int)s->n;
	s->n = k - 1;
	return (int)s->n;
}

/* The first line of a thread in --time's window: the calls it had open at
 * the window's start first, each at its depth, marked (the listing pairs
 * from the dump's start, so the window keeps its enclosing calls). */
static void list_enclosing(const struct bt_dump *d, struct fstack *s, const char *comm, uint32_t tid, const char *tb,
			   FILE *out)
{
	char e[BT_ESCAPED_LEN(512)], b[32];
	s->shown = 1;
	for (uint32_t k = 0; k < s->n; k++) {
		const struct open_at *en = &s->at[k];
		const char *name = bt_dump_app_event_name(d, en->app, en->name_id);
		int ind = k > 64 ? 128 : 2 * (int)k;
		fprintf(out, "%16s-%-5u [%03u] %s: func_entry: %*s", comm, tid, en->cpu, tb, ind, "");
		if (name)
			fputs(bt_escape_text(name, 512, e, sizeof(e)), out);
		else
			fprintf(out, "0x%" PRIx64, s->fn[k]);
		fprintf(out, " [begun before the window, at %s]\n", bt_format_ts(en->ts, b, sizeof(b)));
	}
}

/* Escaped function names, by the name's address (they live as long as
 * the dump): escaping each of 60 M lines was a tenth of report's time. */
#define NAME_CACHE 256
struct name_cache {
	const char *raw[NAME_CACHE];
	char *esc[NAME_CACHE];
	size_t len[NAME_CACHE];
};

static const char *cached_name(struct name_cache *c, const char *name, size_t *len)
{
	size_t i = ((uintptr_t)name >> 3) % NAME_CACHE;
	if (c->raw[i] != name) {
		char e[BT_ESCAPED_LEN(512)];
		char *x = strdup(bt_escape_text(name, 512, e, sizeof(e)));
		if (!x)
			return NULL;
		free(c->esc[i]);
		c->esc[i] = x;
		c->raw[i] = name;
		c->len[i] = strlen(x);
	}
	*len = c->len[i];
	return c->esc[i];
}

/* Appends v in decimal, at least w digits (zero-padded) */
static char *put_u64(char *o, uint64_t v, int w)
{
	char t[24];
	int n = 0;
	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10) || n < w);
	while (n)
		*o++ = t[--n];
	return o;
}

/* The listing's own output buffer: function lines are composed in it and
 * written in large pieces (fwrite per line was a tenth of the time, and
 * stdout's 4 KiB buffer a write(2) per 4 KiB); everything else written to
 * the stream flushes it first, so the order stays. */
#define OBUF (1u << 16)
#define LINE_MAX_LEN (BT_ESCAPED_LEN(512) + 512)
struct obuf {
	FILE *out;
	size_t n;
	char b[OBUF];
};

static void ob_flush(struct obuf *o)
{
	if (o->n)
		fwrite(o->b, 1, o->n, o->out);
	o->n = 0;
}

/* The line prefix "%16s-%-5u [%03u] " of a thread's function lines,
 * kept while the same thread on the same CPU runs. */
struct prefix {
	int valid;
	uint32_t tid, cpu;
	size_t len;
	char s[BT_ESCAPED_LEN(BT_TASK_COMM_LEN) + 32];
};

static void make_prefix(struct prefix *p, const char *comm, uint32_t tid, uint32_t cpu)
{
	char *o = p->s;
	size_t cl = strlen(comm);
	for (size_t k = cl; k < 16; k++)
		*o++ = ' ';
	memcpy(o, comm, cl);
	o += cl;
	*o++ = '-';
	char *t0 = o;
	o = put_u64(o, tid, 1);
	while (o - t0 < 5)
		*o++ = ' ';
	memcpy(o, " [", 2);
	o = put_u64(o + 2, cpu, 3);
	memcpy(o, "] ", 2);
	o += 2;
	p->len = (size_t)(o - p->s);
	p->tid = tid;
	p->cpu = cpu;
	p->valid = 1;
}

/* A function entry or exit line, composed by hand: the same bytes as the
 * general "%16s-%-5u [%03u] %s: %s: %s" line, without fprintf's parsing
 * (most of a listing's time with millions of records). */
static void func_line(struct obuf *ob, const struct prefix *p, const struct bt_event_hdr *e, int ind,
		      const char *name, size_t nl, uint64_t addr)
{
	if (OBUF - ob->n < LINE_MAX_LEN)
		ob_flush(ob);
	char *o = ob->b + ob->n;
	memcpy(o, p->s, p->len);
	o += p->len;
	uint64_t sec = e->ts_ns / 1000000000u;
	char *s0 = o;
	o = put_u64(o, sec, 1);
	if (o - s0 < 5) { /* %5: right-aligned */
		size_t n = (size_t)(o - s0), pad = 5 - n;
		memmove(s0 + pad, s0, n);
		memset(s0, ' ', pad);
		o += pad;
	}
	*o++ = '.';
	o = put_u64(o, (e->ts_ns % 1000000000u) / 1000u, 6);
	if (e->type == BT_EV_APP_FUNC_ENTRY) {
		memcpy(o, ": func_entry: ", 14);
		o += 14;
	} else {
		memcpy(o, ": func_exit: ", 13);
		o += 13;
	}
	memset(o, ' ', (size_t)ind);
	o += ind;
	if (name) {
		memcpy(o, name, nl);
		o += nl;
	} else {
		o += snprintf(o, 24, "0x%" PRIx64, addr);
	}
	*o++ = '\n';
	ob->n = (size_t)(o - ob->b);
}

/* What the listing carries from one event to the next. */
struct lister {
	const struct bt_dump *d;
	const struct bt_dump_header *h;
	const struct ropts *o;
	const struct bt_event_filter *f;
	const struct bt_dump_event *kev; /* bt_dump_events(): the seq gaps' indexes */
	size_t nkev;
	const struct bt_probe_desc *probes;
	size_t nprobes;
	struct bt_seq_gap *gaps;
	size_t ngaps, gi;
	struct bt_namer *nm;
	struct depths dm;
	struct name_cache names;
	char comm_raw[BT_TASK_COMM_LEN], comm_esc[BT_ESCAPED_LEN(BT_TASK_COMM_LEN)];
	/* the last listed event's thread, while only application events
	 * came since (they never rename a thread): its comm_esc stands */
	uint32_t comm_tid;
	int comm_ok;
	struct prefix pre;
	struct obuf ob;
	FILE *out;
	char fields[4096], tb[64]; /* escaped names take up to 4 bytes a byte */
};

static int list_one(const struct bt_dump_event *de, void *ctx)
{
	struct lister *L = ctx;
	const struct bt_event_filter *f = L->f;
	const struct bt_event_hdr *e = de->ev;
	FILE *out = L->out;
	char *fields = L->fields, *tb = L->tb;
	/* --time: the thread's open calls before this event, listed
	 * before its first line in the window (pops leave them in place) */
	struct fstack *fs = de->app >= 0 && f->since.set ? stack_of(&L->dm, e->tid) : NULL;
	uint32_t open_before = fs ? fs->n : 0;
	int list_open = fs && !fs->shown;
	int depth = e->type == BT_EV_APP_FUNC_ENTRY || e->type == BT_EV_APP_FUNC_EXIT ? func_depth(&L->dm, de) : -1;
	if (de->app < 0) /* a kernel event (fork, exec, rename) may name a thread anew */
		L->comm_ok = 0;
	/* a kernel CPU's seq gaps come before the event they end at */
	if (de >= L->kev && de < L->kev + L->nkev) {
		size_t i = (size_t)(de - L->kev);
		ob_flush(&L->ob);
		for (; L->gi < L->ngaps && L->gaps[L->gi].index == i; L->gi++)
			if (bt_filter_cpu_ok(f, L->gaps[L->gi].cpu) && bt_filter_time_ok(f, e->ts_ns))
				fprintf(out, "CPU:%u [LOST %" PRIu64 " EVENTS]\n", L->gaps[L->gi].cpu, L->gaps[L->gi].missing);
	}
	/* an application thread's records missing: shown with the
	 * thread's other lines (-p), like a CPU's */
	uint32_t miss = de->app >= 0 ? app_gap(&L->dm, e) : 0;
	if (miss && !L->o->no_lost && bt_filter_time_ok(f, e->ts_ns) &&
	    (bt_filter_pid_ok(f, e->tid) || bt_filter_pid_ok(f, e->tgid))) {
		ob_flush(&L->ob);
		fprintf(out, "TID:%u [LOST %u EVENTS]\n", e->tid, miss);
	}
	if (e->type == BT_EV_PROCESS_EXEC)
		bt_namer_apply(L->nm, e, de->len);
	if (bt_filter_match(f, e)) {
		const char *comm = "<idle>";
		if (!e->tid) {
			L->pre.valid = 0;
		} else if (!L->comm_ok || L->comm_tid != e->tid) {
			/* escaped once per name (a thread's lines run in a row) */
			const char *raw = bt_namer_comm(L->nm, e->tid, e->cpu);
			if (strncmp(raw, L->comm_raw, BT_TASK_COMM_LEN) != 0 || !L->comm_esc[0]) {
				size_t rl = strnlen(raw, BT_TASK_COMM_LEN);
				memset(L->comm_raw, 0, sizeof(L->comm_raw));
				memcpy(L->comm_raw, raw, rl);
				bt_escape_text(raw, BT_TASK_COMM_LEN, L->comm_esc, sizeof(L->comm_esc));
			}
			L->pre.valid = 0;
			L->comm_tid = e->tid;
			L->comm_ok = de->app >= 0;
		}
		if (e->tid)
			comm = L->comm_esc;
		const struct bt_ev_app *a = (const void *)e;
		if (depth >= 0 && !L->o->wall && !L->o->stacks && !list_open && de->len >= sizeof(*a) + 8 &&
		    a->nargs == 1) {
			/* function entries/exits indented by their depth (up to 64) */
			const char *name = bt_dump_app_event_name(L->d, de->app, a->name_id);
			size_t nl = 0;
			const char *en = name ? cached_name(&L->names, name, &nl) : NULL;
			if (!name || en) {
				if (!L->pre.valid || L->pre.tid != e->tid || L->pre.cpu != e->cpu)
					make_prefix(&L->pre, comm, e->tid, e->cpu);
				func_line(&L->ob, &L->pre, e, depth > 64 ? 128 : 2 * depth, en, nl, (uint64_t)a->args[0]);
				goto applied;
			}
		}
		ob_flush(&L->ob);
		if (L->o->wall)
			bt_report_fmt_wall(L->h, e->ts_ns, tb, sizeof(L->tb));
		else
			snprintf(tb, sizeof(L->tb), "%5" PRIu64 ".%06" PRIu64, (uint64_t)e->ts_ns / 1000000000u,
				 ((uint64_t)e->ts_ns % 1000000000u) / 1000u);
		if (list_open && (fs = stack_of(&L->dm, e->tid))) { /* the table may have grown */
			uint32_t n0 = fs->n;
			fs->n = open_before;
			list_enclosing(L->d, fs, comm, e->tid, tb, out);
			fs->n = n0;
		}
		if (de->app >= 0) {
			/* function entries/exits indented by their depth (up to 64) */
			int ind = depth < 0 ? 0 : depth > 64 ? 128 : 2 * depth;
			memset(fields, ' ', (size_t)ind);
			bt_format_app_fields(fields + ind, sizeof(L->fields) - (size_t)ind, e, de->len,
					     bt_dump_app_event_name(L->d, de->app, ((const struct bt_ev_app *)e)->name_id));
		}
		else
			bt_format_fields(fields, sizeof(L->fields), e, de->len, L->nm, L->probes, L->nprobes);
		fprintf(out, "%16s-%-5u [%03u] %s: %s: %s\n", comm, e->tid, e->cpu, tb, bt_event_name(e->type), fields);
		if (L->o->stacks)
			bt_print_event_stacks(out, L->d, e, L->o->verbose);
	}
applied:
	if (e->type != BT_EV_PROCESS_EXEC)
		bt_namer_apply(L->nm, e, de->len);
	return 0;
}

int bt_report_list(const struct bt_dump *d, const struct ropts *o, FILE *out)
{
	size_t ntasks;
	const struct bt_task *tasks = bt_dump_tasks(d, &ntasks);
	struct lister *L = calloc(1, sizeof(*L));
	char err[256];
	int r;

	if (!L || !(L->nm = bt_namer_new(tasks, ntasks))) {
		free(L);
		return -ENOMEM;
	}
	L->d = d;
	L->h = bt_dump_header(d);
	L->o = o;
	L->f = &o->f;
	L->out = out;
	L->kev = bt_dump_events(d, &L->nkev);
	L->probes = bt_dump_probes(d, &L->nprobes);
	if (!o->no_lost && bt_seq_gaps(L->kev, L->nkev, L->h->ncpus, &L->gaps, &L->ngaps) < 0) {
		bt_namer_free(L->nm);
		free(L);
		return -ENOMEM;
	}
	fprintf(out, "cpus=%u\n", L->h->ncpus);
	L->ob.out = out;
	r = bt_dump_each_event(d, 1, list_one, L, err, sizeof(err));
	ob_flush(&L->ob);
	for (size_t i = 0; i < NAME_CACHE; i++)
		free(L->names.esc[i]);
	if (r < 0 && o->err && o->errlen)
		snprintf(o->err, o->errlen, "%s", err);
	free(L->gaps);
	depths_free(&L->dm);
	bt_namer_free(L->nm);
	free(L);
	return r;
}
