// SPDX-License-Identifier: MIT
/*
 * report_hot.c - `report --hot`: Hubble's on-device summaries of the traced
 * functions (-finstrument-functions) in a dump's window: the functions with
 * the most self time, the deepest call chains, and the slowest ones (the
 * calls with no caller in the window that took longest, followed down
 * through the longest child at each level), each chain printed as its
 * nested path with durations.
 */
#include "report_hot.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dump.h"
#include "event_names.h"
#include "func_calls.h"
#include "func_stream.h"
#include "report_functions.h"
#include "util.h"

#define RUN_SHOWN 2 /* a recursion run longer than 2 * RUN_SHOWN + 1 frames is shortened */

struct selfrow {
	uint32_t fn;
	uint64_t self, calls;
};

static int by_self(const void *a, const void *b)
{
	const struct selfrow *x = a, *y = b;
	return x->self < y->self ? 1 : x->self > y->self ? -1 : (x->fn > y->fn) - (x->fn < y->fn);
}

static const char *app_name(const struct bt_dump *d, int32_t app, char *buf, size_t len)
{
	size_t na;
	const struct bt_dump_app *apps = bt_dump_apps(d, &na);
	return app >= 0 && (size_t)app < na ? bt_escape_text(apps[app].name, 16, buf, len) : "-";
}

static void print_frame(FILE *out, const struct bt_calls *c, int32_t i, unsigned level)
{
	const struct bt_call *x = &c->c[i];
	char name[BT_ESCAPED_LEN(512)], b1[32], b2[32];
	unsigned ind = level > 40 ? 40 : level;
	if (x->open)
		fprintf(out, "    %*s%s  running (no exit in the dump)\n", (int)(2 * ind), "",
			bt_cfunc_name(&c->fn[x->fn], name, sizeof(name)));
	else
		fprintf(out, "    %*s%s  %s (self %s)\n", (int)(2 * ind), "",
			bt_cfunc_name(&c->fn[x->fn], name, sizeof(name)), bt_fmt_dur(x->dur, b1, sizeof(b1)),
			bt_fmt_dur(x->self, b2, sizeof(b2)));
}

/* The chain path[0..n) (root first), one line per frame, indented by its
 * depth; long runs of one function (recursion) shortened, counted. */
static void print_chain(FILE *out, const struct bt_calls *c, const int32_t *path, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t r = i + 1;
		while (r < n && c->c[path[r]].fn == c->c[path[i]].fn)
			r++;
		if (r - i > 2 * RUN_SHOWN + 1) {
			char name[BT_ESCAPED_LEN(512)];
			for (size_t k = i; k < i + RUN_SHOWN; k++)
				print_frame(out, c, path[k], (unsigned)k);
			fprintf(out, "    %*s... %zu more calls of %s ...\n", (int)(2 * (i + RUN_SHOWN > 40 ? 40 : i + RUN_SHOWN)),
				"", r - i - 2 * RUN_SHOWN, bt_cfunc_name(&c->fn[c->c[path[i]].fn], name, sizeof(name)));
			for (size_t k = r - RUN_SHOWN; k < r; k++)
				print_frame(out, c, path[k], (unsigned)k);
		} else {
			for (size_t k = i; k < r; k++)
				print_frame(out, c, path[k], (unsigned)k);
		}
		i = r;
	}
}

static void chain_head(FILE *out, const struct bt_dump *d, const struct bt_calls *c, unsigned rank, int32_t root,
		       const char *what)
{
	const struct bt_call *x = &c->c[root];
	char an[BT_ESCAPED_LEN(16)], ts[32];
	fprintf(out, "  #%u %s, tid %u (%s, pid %u), from %s\n", rank, what, x->tid,
		app_name(d, c->fn[x->fn].app, an, sizeof(an)), c->fn[x->fn].pid, bt_format_ts(x->start, ts, sizeof(ts)));
}

/* The most self time from per-function rows; their sum for the shares. */
static void print_self(FILE *out, const struct bt_dump *d, const struct bt_calls *c, struct selfrow *rows,
		       uint64_t all_self, unsigned top)
{
	char b1[32];
	qsort(rows, c->nfn, sizeof(*rows), by_self);
	fprintf(out, "\nmost self time:\n  %-40s %7s %9s %10s %6s  %s\n", "FUNCTION", "PID", "CALLS", "SELF", "SHARE",
		"APP");
	for (size_t i = 0; i < c->nfn && i < top && rows[i].calls; i++) {
		const struct bt_cfunc *fn = &c->fn[rows[i].fn];
		char name[BT_ESCAPED_LEN(512)], an[BT_ESCAPED_LEN(16)];
		fprintf(out, "  %-40s %7u %9" PRIu64 " %10s %5.1f%%  %s\n", bt_cfunc_name(fn, name, sizeof(name)), fn->pid,
			rows[i].calls, bt_fmt_dur(rows[i].self, b1, sizeof(b1)),
			all_self ? 100.0 * (double)rows[i].self / (double)all_self : 0.0,
			app_name(d, fn->app, an, sizeof(an)));
	}
}

static void print_window(FILE *out, const struct bt_calls *c)
{
	char b1[32], b2[32];
	fprintf(out, "window:       %s .. %s (%s) of function records; %" PRIu64 " calls complete\n",
		bt_format_ts(c->first_ts, b1, sizeof(b1)), bt_format_ts(c->last_ts, b2, sizeof(b2)),
		bt_fmt_dur(c->last_ts - c->first_ts, (char[32]){ 0 }, 32), c->n - c->running - c->cut);
}

/* Kept chains (func_stream.c) printed as the per-call ones are. */
static void print_kept(FILE *out, const struct bt_dump *d, const struct bt_fstream *s, const struct bt_fchain *ch,
		       size_t n, int slow)
{
	char what[64], b1[32];
	for (size_t i = 0; i < n; i++) {
		struct bt_calls v = s->c;
		int32_t *path = malloc((ch[i].n + 1) * sizeof(*path));
		if (!path)
			return;
		v.c = ch[i].c;
		v.n = ch[i].n;
		for (size_t k = 0; k < ch[i].n; k++)
			path[k] = (int32_t)k;
		if (slow)
			snprintf(what, sizeof(what), "%s", bt_fmt_dur(ch[i].key, b1, sizeof(b1)));
		else
			snprintf(what, sizeof(what), "depth %" PRIu64, ch[i].key);
		chain_head(out, d, &v, (unsigned)i + 1, 0, what);
		print_chain(out, &v, path, ch[i].n);
		free(path);
	}
}

/* --hot from a dump that keeps its function batches: rows and chains
 * folded as the calls close (func_stream.c), nothing per call. */
static int hot_stream(const struct bt_dump *d, const struct bt_func_filter *f, unsigned top, FILE *out)
{
	struct bt_fstream s;
	int ret = bt_fstream_build(d, f, top, &s);
	if (ret < 0)
		return ret;
	if (!s.c.records) {
		fprintf(out, "no traced functions in this dump (programs built with -finstrument-functions and "
			     "linked with libbtrace)\n");
		bt_fstream_free(&s);
		return 0;
	}
	struct selfrow *rows = calloc(s.c.nfn + 1, sizeof(*rows));
	if (!rows) {
		bt_fstream_free(&s);
		return -ENOMEM;
	}
	uint64_t all_self = 0;
	for (uint32_t i = 0; i < s.c.nfn; i++) {
		rows[i] = (struct selfrow){ .fn = i, .self = s.agg[i].self, .calls = s.agg[i].calls };
		all_self += s.agg[i].self;
	}
	print_window(out, &s.c);
	print_self(out, d, &s.c, rows, all_self, top);
	fprintf(out, "\ndeepest call chains:\n");
	print_kept(out, d, &s, s.deep, s.ndeep, 0);
	if (!s.ndeep)
		fprintf(out, "  (none selected)\n");
	fprintf(out, "\nslowest call chains (the longest calls without a caller in the window, down their longest "
		     "callee):\n");
	print_kept(out, d, &s, s.slow, s.nslow, 1);
	if (!s.nslow)
		fprintf(out, "  (no complete call without a caller in the window)\n");
	fputc('\n', out);
	bt_report_call_losses(d, &s.c, out);
	free(rows);
	bt_fstream_free(&s);
	return 0;
}

int bt_report_hot(const struct bt_dump *d, const struct bt_func_filter *f, unsigned top, FILE *out)
{
	if (f && f->stream)
		return hot_stream(d, f, top, out);
	struct bt_calls c;
	int ret = bt_calls_build(d, f, &c);
	if (ret < 0)
		return ret;
	if (!c.records) {
		fprintf(out, "no traced functions in this dump (programs built with -finstrument-functions and "
			     "linked with libbtrace)\n");
		bt_calls_free(&c);
		return 0;
	}
	struct selfrow *rows = calloc(c.nfn + 1, sizeof(*rows));
	int32_t *heavy = malloc((c.n + 1) * sizeof(*heavy)), *path = malloc((c.n + 1) * sizeof(*path));
	uint8_t *used = calloc(c.n + 1, 1);
	uint64_t all_self = 0;
	char b1[32];
	if (!rows || !heavy || !path || !used) {
		ret = -ENOMEM;
		goto out;
	}

	/* functions by self time: the time spent in their own code */
	for (uint32_t i = 0; i < c.nfn; i++)
		rows[i].fn = i;
	for (size_t i = 0; i < c.n; i++)
		if (c.c[i].sel && !c.c[i].open) {
			rows[c.c[i].fn].self += c.c[i].self;
			rows[c.c[i].fn].calls++;
			all_self += c.c[i].self;
		}
	print_window(out, &c);
	print_self(out, d, &c, rows, all_self, top);

	/* deepest chains: the deepest selected call of each root, deepest first */
	fprintf(out, "\ndeepest call chains:\n");
	for (size_t i = 0; i < c.n; i++) /* heavy[] holds each call's root here */
		heavy[i] = c.c[i].parent < 0 ? (int32_t)i : heavy[c.c[i].parent];
	unsigned np = 0;
	for (; np < top; np++) {
		int32_t best = -1;
		for (size_t i = 0; i < c.n; i++) {
			if (!c.c[i].sel || used[heavy[i]])
				continue;
			if (best < 0 || c.c[i].depth > c.c[best].depth)
				best = (int32_t)i;
		}
		if (best < 0)
			break;
		size_t n = 0;
		for (int32_t k = best; k >= 0; k = c.c[k].parent)
			path[n++] = k;
		int32_t root = path[n - 1];
		used[root] = 1; /* one chain per root */
		for (size_t i = 0; i < n / 2; i++) {
			int32_t t = path[i];
			path[i] = path[n - 1 - i], path[n - 1 - i] = t;
		}
		char what[48];
		snprintf(what, sizeof(what), "depth %u", c.c[best].depth + 1);
		chain_head(out, d, &c, np + 1, root, what);
		print_chain(out, &c, path, n);
	}
	if (!np)
		fprintf(out, "  (none selected)\n");

	/* slowest chains: the longest calls with no caller in the window,
	 * followed down the longest child */
	for (size_t i = 0; i < c.n; i++)
		heavy[i] = -1;
	for (size_t i = 0; i < c.n; i++) {
		int32_t p = c.c[i].parent;
		if (p >= 0 && !c.c[i].open && (heavy[p] < 0 || c.c[i].dur > c.c[heavy[p]].dur))
			heavy[p] = (int32_t)i;
	}
	fprintf(out, "\nslowest call chains (the longest calls without a caller in the window, down their longest "
		     "callee):\n");
	memset(used, 0, c.n + 1);
	for (np = 0; np < top; np++) {
		int32_t best = -1;
		for (size_t i = 0; i < c.n; i++)
			if (c.c[i].sel && !c.c[i].open && c.c[i].parent < 0 && !used[i] &&
			    (best < 0 || c.c[i].dur > c.c[best].dur))
				best = (int32_t)i;
		if (best < 0)
			break;
		used[best] = 1;
		size_t n = 0;
		for (int32_t k = best; k >= 0; k = heavy[k])
			path[n++] = k;
		char what[64];
		snprintf(what, sizeof(what), "%s", bt_fmt_dur(c.c[best].dur, b1, sizeof(b1)));
		chain_head(out, d, &c, np + 1, best, what);
		print_chain(out, &c, path, n);
	}
	if (!np)
		fprintf(out, "  (no complete call without a caller in the window)\n");
	fputc('\n', out);
	bt_report_call_losses(d, &c, out);
out:
	free(rows);
	free(heavy);
	free(path);
	free(used);
	bt_calls_free(&c);
	return ret;
}
