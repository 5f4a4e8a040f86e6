// SPDX-License-Identifier: MIT
/*
 * cmd_report.c - `btrace-bpf report FILE`: opens the dump and prints what
 * the options ask for: the events one line each (report_list.c), --stats
 * (report_stats.c), --functions/--hot, --stacks/--profile/--folded.
 * Options: report_opts.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "commands.h"
#include "dump.h"
#include "manifest.h"
#include "event_names.h"
#include "event_filter.h"
#include "report_opts.h"
#include "report_list.h"
#include "report_stats.h"
#include "report_functions.h"
#include "report_stacks.h"
#include "report_hot.h"
#include "util.h"

/* The filter's window in this dump. */
static void filt_init(struct bt_event_filter *f, const struct bt_dump *d)
{
	uint64_t t0, t1;
	bt_dump_time_span(d, &t0, &t1);
	bt_filter_resolve(f, t0, t1);
}

/* Filters that cannot match anything in this dump: say so instead of
 * printing an empty report that looks like "nothing happened". */
static void warn_empty_filters(const struct bt_dump *d, const struct ropts *o)
{
	const struct bt_dump_header *h = bt_dump_header(d);
	uint64_t t0, t1;
	const struct bt_event_filter *f = &o->f;
	int any = 0;

	bt_dump_time_span(d, &t0, &t1);
	if (f->cpus) {
		for (uint32_t c = 0; c < h->ncpus; c++)
			any |= bt_filter_cpu_ok(f, c);
		if (!any)
			bt_warn("--cpu selects none of this dump's CPUs (0-%u)", h->ncpus - 1);
	}
	if ((f->since.set || f->until.set) && (t0 || t1)) {
		if (f->t0 > f->t1 || f->t0 > t1 || f->t1 < t0)
			bt_warn("--since/--until/--time select no event (events span %" PRIu64 ".%06" PRIu64
				" .. %" PRIu64 ".%06" PRIu64 ")",
				t0 / 1000000000, t0 % 1000000000 / 1000, t1 / 1000000000, t1 % 1000000000 / 1000);
	}
}

/* ---- functions ----------------------------------------------------------- */

static int func_keep(const struct bt_event_hdr *h, void *ctx)
{
	return bt_filter_match(ctx, h);
}

static int func_cpu(uint32_t cpu, void *ctx)
{
	return bt_filter_cpu_ok(ctx, cpu);
}

/* report --functions/--hot with report's filters, named in the window line */
static int print_functions(const struct bt_dump *d, const struct ropts *o, FILE *out)
{
	const struct bt_event_filter *ft = &o->f;
	char what[256] = "";
	size_t w = 0;

	if (ft->npids) {
		w += (size_t)snprintf(what + w, sizeof(what) - w, "-p ");
		for (size_t i = 0; i < ft->npids && w < sizeof(what); i++)
			w += (size_t)snprintf(what + w, sizeof(what) - w, "%s%u", i ? "," : "", ft->pids[i]);
	}
	if (ft->cpus && w < sizeof(what)) { /* as ranges: -c 0,2-3 */
		w += (size_t)snprintf(what + w, sizeof(what) - w, "%s-c ", w ? " " : "");
		for (uint32_t c = 0, k = 0; c < BT_DUMP_MAX_CPUS && w < sizeof(what); c++) {
			if (!bt_filter_cpu_ok(ft, c) || (c && bt_filter_cpu_ok(ft, c - 1)))
				continue;
			uint32_t e = c;
			while (e + 1 < BT_DUMP_MAX_CPUS && bt_filter_cpu_ok(ft, e + 1))
				e++;
			if (e == c)
				w += (size_t)snprintf(what + w, sizeof(what) - w, "%s%u", k++ ? "," : "", c);
			else
				w += (size_t)snprintf(what + w, sizeof(what) - w, "%s%u-%u", k++ ? "," : "", c, e);
		}
	}
	if (ft->types && w < sizeof(what)) {
		w += (size_t)snprintf(what + w, sizeof(what) - w, "%s-e ", w ? " " : "");
		for (int t = 1, k = 0; t < BT_EV_MAX && w < sizeof(what); t++)
			if (ft->types & (1u << t))
				w += (size_t)snprintf(what + w, sizeof(what) - w, "%s%s", k++ ? "," : "",
						      bt_event_name((uint32_t)t));
	}
	struct bt_func_filter ff = {
		.keep = func_keep, .cpu_ok = func_cpu, .ctx = (void *)ft,
		.timed = ft->since.set || ft->until.set, .t0 = ft->t0, .t1 = ft->t1,
		.what = what[0] ? what : NULL, .stream = o->func_batches, .err = o->err, .errlen = o->errlen,
	};
	return o->hot ? bt_report_hot(d, &ff, o->top ? o->top : 10, out) : bt_report_functions(d, &ff, out);
}

static int run(const struct bt_dump *d, const char *path, struct ropts *o, FILE *out)
{
	int r;

	filt_init(&o->f, d);
	if (path)
		warn_empty_filters(d, o);
	struct bt_stack_filter sf = { .keep = func_keep, .ctx = &o->f, .offcpu = o->offcpu };
	r = o->profile ? bt_report_profile(d, &sf, out)
		: o->folded ? bt_report_folded(d, &sf, out)
		: o->functions || o->hot ? print_functions(d, o, out)
		: o->stats   ? bt_report_stats(d, path, o, out)
			     : bt_report_list(d, o, out);
	if (fflush(out) != 0 || ferror(out))
		return r ? r : -EIO;
	return r;
}

int bt_dump_report(const struct bt_dump *d, int stats, FILE *out)
{
	char err[256] = "";
	struct ropts o = { .stats = stats, .err = err, .errlen = sizeof(err) };
	int r = run(d, NULL, &o, out);
	if (r < 0 && err[0])
		bt_err("%s", err);
	return r;
}

int cmd_report(int argc, char **argv)
{
	struct ropts o = { 0 };
	char err[512], rerr[256] = "";
	int r;

	bt_report_parse_args(argc, argv, &o);
	/* before any output: a listing of millions of lines wrote 4 KiB at a
	 * time, a fifth of its time in write() */
	setvbuf(stdout, NULL, _IOFBF, 1u << 20);
	const char *path = o.path;
	if (o.manifest) {
		/* The recorder's manifest of this dump (docs/manifest.md). */
		r = bt_manifest_print(stdout, path, NULL, NULL, err, sizeof(err));
		if (r)
			bt_err("%s", err);
		bt_report_opts_free(&o);
		return r ? 1 : 0;
	}
	/* The listing, --stats, --functions and --hot read the applications'
	 * blocks again from the file one at a time, merged in time order
	 * (--functions and --hot take function batches whole and fold them
	 * as they go): memory per function, thread and open call, not per
	 * call, nor the body. */
	o.func_batches = (o.functions || o.hot) && !o.profile && !o.folded;
	unsigned flags = !o.profile && !o.folded ? BT_DUMP_OPEN_APP_STREAM : 0;
	struct bt_dump *d = bt_dump_open_flags(path, flags, err, sizeof(err));
	if (!d) {
		bt_err("%s: %s", path, err);
		bt_report_opts_free(&o);
		return 1;
	}
	o.err = rerr;
	o.errlen = sizeof(rerr);
	r = run(d, path, &o, stdout);
	/* once: the report says why its read failed, not where */
	if (r == -EIO && !rerr[0])
		bt_err("write error on standard output");
	else if (r < 0)
		bt_err("%s: %s", path, rerr[0] ? rerr : strerror(-r));
	else if (!o.stats && !o.functions && !o.hot && !o.no_lost && !o.profile && !o.folded) {
		size_t n;
		struct bt_seq_window w;
		const struct bt_dump_event *ev = bt_dump_events(d, &n);
		if (bt_seq_analyze(ev, n, bt_dump_header(d)->ncpus, &w, NULL) == 0 && w.missing)
			bt_warn("%s: %" PRIu64 " events missing in %" PRIu64 " seq gap(s) (see --stats)", path, w.missing,
				w.gaps);
	}
	bt_dump_close(d);
	bt_report_opts_free(&o);
	return r < 0 ? 1 : 0;
}
