// SPDX-License-Identifier: MIT
/*
 * report_functions.c - `report --functions`: one row per probed function and
 * process (the events' pid, named) of a dump: calls, returns, and for return
 * probes the latency distribution of the entry-to-return durations (count,
 * min, p50, p99, max). Probes on the same function (`f` and `f%return`)
 * share a row. Only the events report's filters select are counted (-p,
 * --since, --until, -c, -e). Below the table: the window the counts cover
 * and every loss that makes them lower bounds, then the targets that ended,
 * with the time their exit is in the dump if it is.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "event_names.h"
#include "report_functions.h"
#include "func_calls.h"
#include "func_stream.h"
#include "util.h"

/* A probed function: probes on the same function (`f` and `f%return`) of
 * the same binary share it. */
struct ffunc {
	const struct bt_probe_desc *p; /* first probe of the function (names) */
	int usdt;
	int has_entry, has_return;
};

/* A function in one process (the events' tgid). */
struct frow {
	uint32_t fn;  /* index into the functions */
	uint32_t pid; /* 0: no event selected (a row of zeros) */
	uint64_t entries, returns, usdt_hits, unmatched;
	uint64_t *lat;
	size_t nlat, cap;
};

/* Rows sorted by (function, pid) for lookup; the array grows, rarely. */
struct frows {
	struct frow *r;
	size_t n, cap;
};

static uint64_t row_key(uint32_t fn, uint32_t pid)
{
	return (uint64_t)fn << 32 | pid;
}

static struct frow *row_get(struct frows *rs, uint32_t fn, uint32_t pid)
{
	uint64_t k = row_key(fn, pid);
	size_t lo = 0, hi = rs->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t m = row_key(rs->r[mid].fn, rs->r[mid].pid);
		if (m == k)
			return &rs->r[mid];
		if (m < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (rs->n == rs->cap) {
		size_t nc = rs->cap ? rs->cap * 2 : 16;
		void *q = realloc(rs->r, nc * sizeof(*rs->r));
		if (!q)
			return NULL;
		rs->r = q;
		rs->cap = nc;
	}
	memmove(&rs->r[lo + 1], &rs->r[lo], (rs->n - lo) * sizeof(*rs->r));
	memset(&rs->r[lo], 0, sizeof(rs->r[lo]));
	rs->r[lo].fn = fn;
	rs->r[lo].pid = pid;
	rs->n++;
	return &rs->r[lo];
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v[n]. */
static uint64_t pct(const uint64_t *v, size_t n, unsigned q)
{
	size_t k = (n * q + 99) / 100;

	return v[k ? k - 1 : 0];
}

static int same_func(const struct bt_probe_desc *a, const struct bt_probe_desc *b)
{
	/* the probes' pids do not matter: rows are per process of the events */
	return (a->flags & BT_PROBE_USDT) == (b->flags & BT_PROBE_USDT) &&
	       strcmp(a->func, b->func) == 0 && strcmp(a->binary, b->binary) == 0;
}

static int filter_keep(const struct bt_func_filter *f, const struct bt_event_hdr *h)
{
	return !f || !f->keep || f->keep(h, f->ctx);
}

static int filter_cpu(const struct bt_func_filter *f, uint32_t cpu)
{
	return !f || !f->cpu_ok || f->cpu_ok(cpu, f->ctx);
}

/* The name of process pid: its main thread's in the task table (names at
 * dump time), else the newest a fork/exec/rename event gave, escaped. */
static const char *proc_name(const struct bt_dump *d, struct bt_namer *nm, uint32_t pid, char *buf, size_t len)
{
	size_t nt;
	const struct bt_task *tasks = bt_dump_tasks(d, &nt);
	const struct bt_task *t = bt_tasks_find(tasks, nt, pid);
	return bt_escape_text(t && t->comm[0] ? t->comm : bt_namer_comm(nm, pid, 0), BT_TASK_COMM_LEN, buf, len);
}

static void print_row(FILE *out, const struct ffunc *fn, struct frow *r, const char *comm)
{
	char pid[16], name[BT_ESCAPED_LEN(256) + 8], bin[BT_ESCAPED_LEN(256)], c[4][32];
	uint64_t calls = fn->usdt ? r->usdt_hits : fn->has_entry ? r->entries : r->returns;

	if (r->pid)
		snprintf(pid, sizeof(pid), "%u", r->pid);
	else
		snprintf(pid, sizeof(pid), "-");
	bt_escape_text(fn->p->func[0] ? fn->p->func : fn->p->spec, 256, name, sizeof(name) - 8);
	if (fn->usdt)
		strcat(name, " [usdt]");
	fprintf(out, "%-32s %-20s %7s %9" PRIu64, name, bt_escape_text(base_name(fn->p->binary), 256, bin, sizeof(bin)),
		pid, calls);
	if (!fn->has_return) {
		fprintf(out, " %9s  %9s %9s %9s %9s %9s  %s\n", "-", "-", "-", "-", "-", "-", comm);
		return;
	}
	fprintf(out, " %9" PRIu64, r->returns);
	if (!r->nlat) {
		fprintf(out, "  %9d %9s %9s %9s %9s  %s", 0, "-", "-", "-", "-", comm);
	} else {
		qsort(r->lat, r->nlat, sizeof(*r->lat), u64_cmp);
		fprintf(out, "  %9zu %9s %9s %9s %9s  %s", r->nlat, bt_fmt_dur(r->lat[0], c[0], sizeof(c[0])),
			bt_fmt_dur(pct(r->lat, r->nlat, 50), c[1], sizeof(c[1])),
			bt_fmt_dur(pct(r->lat, r->nlat, 99), c[2], sizeof(c[2])),
			bt_fmt_dur(r->lat[r->nlat - 1], c[3], sizeof(c[3])), comm);
	}
	if (r->unmatched)
		fprintf(out, "  (%" PRIu64 " returns without a timed entry)", r->unmatched);
	fputc('\n', out);
}

/* The window the counts cover, and every loss that makes them lower bounds.
 * Counts are complete only where no CPU missed an event: the ring buffer
 * dropped none (a drop also leaves a seq gap), no seq gap in the window, the
 * CPUs' history reaches back to the window's start, nothing lost dumping. */
/* Application records lost anywhere in the dump (func_calls.c counts the
 * seq gaps; the readers count blocks): the counts are not complete. */
static int app_losses(const struct bt_dump *d, const struct bt_calls *c)
{
	size_t na;
	const struct bt_dump_app *apps = bt_dump_apps(d, &na);
	int any = c && c->seq_gaps;
	for (size_t i = 0; i < na; i++)
		any |= apps[i].counters[BT_APPC_BLOCKS_BAD] || apps[i].counters[BT_APPC_BLOCKS_LOST] ||
		       apps[i].counters[BT_APPC_BLOCKS_BUSY] || apps[i].counters[BT_APPC_BLOCKS_PARTIAL] ||
		       apps[i].func_batches_bad;
	return any;
}

/* fc: the traced functions' calls; when only they are reported (no probe),
 * the window is their records' span, not the whole dump's. */
static int print_window(const struct bt_dump *d, const struct bt_func_filter *f, const struct bt_calls *fc,
			int funcs_only, FILE *out)
{
	const struct bt_dump_header *h = bt_dump_header(d);
	const struct bt_stats *bs = bt_dump_buffer_stats(d);
	const struct bt_read_stats *rs = bt_dump_read_stats(d);
	const uint64_t *drops = bt_dump_rb_drops(d);
	size_t n, ngaps = 0;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	struct bt_seq_cpu *sc = calloc(h->ncpus, sizeof(*sc));
	struct bt_seq_gap *gaps = NULL;
	struct bt_seq_window w;
	char b1[32], b2[32];
	int nloss = 0;

	if (!sc || bt_seq_analyze_dump(d, ev, n, h->ncpus, &w, sc) < 0 || bt_seq_gaps(ev, n, h->ncpus, &gaps, &ngaps) < 0) {
		free(sc);
		return -ENOMEM;
	}
	uint64_t t0 = w.first_ts, t1 = w.last_ts;
	if (funcs_only && fc && fc->records)
		t0 = fc->first_ts, t1 = fc->last_ts;
	if (f && f->timed) {
		t0 = f->t0 > t0 ? f->t0 : t0;
		t1 = f->t1 < t1 ? f->t1 : t1;
	}
	if (!w.events || t0 > t1) {
		fprintf(out, "window:       no event of the dump in the time asked for%s%s\n", f && f->what ? "; filters: " : "",
			f && f->what ? f->what : "");
		free(sc);
		free(gaps);
		return 0;
	}
	fprintf(out, "window:       the counts cover %s .. %s (%.6f s), %s%s%s\n", bt_format_ts(t0, b1, sizeof(b1)),
		bt_format_ts(t1, b2, sizeof(b2)), (double)(t1 - t0) / 1e9,
		f && f->timed ? "as --since/--until asked"
		: funcs_only  ? "the function records' span"
			      : "the whole dump",
		f && f->what ? "; filters: " : "",
		f && f->what ? f->what : "");

	/* ring-buffer drops of uprobe events (a count over the recording) */
	uint64_t ud = 0;
	for (uint32_t c = 0; drops && c < h->ncpus && BT_GROUP_UPROBE < h->ngroups; c++)
		if (filter_cpu(f, c))
			ud += drops[(size_t)c * h->ngroups + BT_GROUP_UPROBE];
#define LOSS(...)                                                                     \
	do {                                                                          \
		fprintf(out, nloss++ ? "; " : "lower bounds: ");                      \
		fprintf(out, __VA_ARGS__);                                            \
	} while (0)
	if (ud)
		LOSS("%" PRIu64 " uprobe events dropped (ring buffer full) while recording", ud);
	/* seq gaps in the window: any event may be in them */
	uint64_t g = 0, gm = 0;
	for (size_t i = 0; i < ngaps; i++) {
		uint64_t ts = ev[gaps[i].index].ev->ts_ns;
		if (ts >= t0 && ts <= t1 && filter_cpu(f, gaps[i].cpu))
			g++, gm += gaps[i].missing;
	}
	if (g)
		LOSS("%" PRIu64 " seq gap%s in the window, %" PRIu64 " events of any kind missing", g, g == 1 ? "" : "s", gm);
	/* history: a CPU whose oldest retained event is not seq 0 lost older ones */
	int32_t oc = -1;
	for (uint32_t c = 0; c < h->ncpus; c++)
		if (sc[c].events && sc[c].first_seq != 0 && sc[c].first_ts >= t0 && filter_cpu(f, c) &&
		    (oc < 0 || sc[c].first_ts > sc[oc].first_ts))
			oc = (int32_t)c;
	if (oc >= 0)
		LOSS("older events overwritten, the run began before the window (CPU %d holds events from %s on, "
		     "seq %u)",
		     oc, bt_format_ts(sc[oc].first_ts, b1, sizeof(b1)), sc[oc].first_seq);
	if (rs->blocks_lost || rs->blocks_busy)
		LOSS("%" PRIu64 " blocks overwritten while dumping, %" PRIu64 " busy", rs->blocks_lost, rs->blocks_busy);
	/* application buffers: blocks the dump could not keep, events their
	 * writers could not store (a dump is only complete without either) */
	uint64_t al = 0, ab = 0, abad = 0, adrop = 0;
	size_t na;
	const struct bt_dump_app *apps = bt_dump_apps(d, &na);
	for (size_t i = 0; i < na; i++) {
		al += apps[i].counters[BT_APPC_BLOCKS_LOST];
		ab += apps[i].counters[BT_APPC_BLOCKS_BUSY];
		abad += apps[i].counters[BT_APPC_BLOCKS_BAD];
		adrop += apps[i].counters[BT_APPC_DROPPED];
	}
	if (al || ab || abad || adrop)
		LOSS("application blocks: %" PRIu64 " overwritten while dumping, %" PRIu64 " busy, %" PRIu64
		     " refused as malformed; %" PRIu64 " application events dropped (no block free)", al, ab, abad, adrop);
	if (bs->entries_rejected || bs->entries_dropped || bs->blocks_skipped || h->drain_rejected)
		LOSS("%" PRIu64 " buffer entries rejected, %" PRIu64 " dropped, %" PRIu64 " blocks skipped, %" PRIu64
		     " events the drain could not store",
		     bs->entries_rejected, bs->entries_dropped, bs->blocks_skipped, h->drain_rejected);
	if (app_losses(d, fc))
		LOSS("application records lost (\"not counted\" above)");
#undef LOSS
	if (nloss)
		fprintf(out, " (see report --stats)\n");
	else
		fprintf(out, "complete:     no event lost in the window (no ring-buffer drop, no seq gap, nothing "
			     "overwritten)\n");
	free(sc);
	free(gaps);
	return 0;
}

/* Calls of function fn that count: selected and closed. */
struct tfrow {
	uint32_t fn;
	uint64_t calls, total, self, p50, p99, max;
};

static int by_total(const void *a, const void *b)
{
	const struct tfrow *x = a, *y = b;
	return x->total < y->total ? 1 : x->total > y->total ? -1 : (x->fn > y->fn) - (x->fn < y->fn);
}

static int call_by_fn(const void *a, const void *b, void *arg)
{
	const struct bt_call *c = arg;
	uint32_t x = c[*(const uint32_t *)a].fn, y = c[*(const uint32_t *)b].fn;
	return (x > y) - (x < y);
}

/* Per traced function (-finstrument-functions) of each application: calls
 * complete in the selection, total time (outermost calls only: recursion is
 * not counted twice), self time, and the duration distribution. */
static void print_rows(const struct bt_dump *d, const struct bt_calls *c, struct tfrow *rows, size_t nr,
		       FILE *out);

static int print_traced(const struct bt_dump *d, const struct bt_calls *c, FILE *out)
{
	uint32_t *idx = malloc((c->n + 1) * sizeof(*idx));
	uint64_t *durs = malloc((c->n + 1) * sizeof(*durs));
	struct tfrow *rows = calloc(c->nfn + 1, sizeof(*rows));
	uint8_t *covered = malloc(c->n + 1);
	size_t ni = 0, nr = 0;
	if (!idx || !durs || !rows || !covered) {
		free(idx), free(durs), free(rows), free(covered);
		return -ENOMEM;
	}
	/* Total time counts a call unless a counted call of the same function
	 * holds it (recursion counted once). Counted, not merely enclosing: an
	 * outer call entered before --since or still running at the window's
	 * end is not in the total, so the calls inside it are (else SELF, which
	 * they add to, exceeded TOTAL at the window's edges). Parents come
	 * before their children: one pass. */
	for (size_t i = 0; i < c->n; i++) {
		int32_t u = c->c[i].up;
		covered[i] = u >= 0 && ((c->c[u].sel && !c->c[u].open) || covered[u]);
	}
	for (size_t i = 0; i < c->n; i++)
		if (c->c[i].sel && !c->c[i].open)
			idx[ni++] = (uint32_t)i;
	qsort_r(idx, ni, sizeof(*idx), call_by_fn, c->c);
	for (size_t i = 0; i < ni;) {
		struct tfrow *r = &rows[nr++];
		size_t k = 0;
		r->fn = c->c[idx[i]].fn;
		for (; i < ni && c->c[idx[i]].fn == r->fn; i++) {
			const struct bt_call *x = &c->c[idx[i]];
			r->calls++;
			r->self += x->self;
			r->total += covered[idx[i]] ? 0 : x->dur;
			durs[k++] = x->dur;
		}
		qsort(durs, k, sizeof(*durs), u64_cmp);
		r->p50 = pct(durs, k, 50), r->p99 = pct(durs, k, 99), r->max = durs[k - 1];
	}
	print_rows(d, c, rows, nr, out);
	free(idx), free(durs), free(rows), free(covered);
	return 0;
}

/* The rows, by total time, then the calls the counts miss. */
static void print_rows(const struct bt_dump *d, const struct bt_calls *c, struct tfrow *rows, size_t nr, FILE *out)
{
	qsort(rows, nr, sizeof(*rows), by_total);
	size_t na;
	const struct bt_dump_app *apps = bt_dump_apps(d, &na);
	fprintf(out, "%-40s %7s %9s %10s %10s %9s %9s %9s  %s\n", "FUNCTION", "PID", "CALLS", "TOTAL", "SELF", "P50",
		"P99", "MAX", "APP");
	for (size_t i = 0; i < nr; i++) {
		const struct tfrow *r = &rows[i];
		const struct bt_cfunc *fn = &c->fn[r->fn];
		char name[BT_ESCAPED_LEN(512)], v[5][32], an[BT_ESCAPED_LEN(16)];
		fprintf(out, "%-40s %7u %9" PRIu64 " %10s %10s %9s %9s %9s  %s\n", bt_cfunc_name(fn, name, sizeof(name)),
			fn->pid, r->calls, bt_fmt_dur(r->total, v[0], 32), bt_fmt_dur(r->self, v[1], 32),
			bt_fmt_dur(r->p50, v[2], 32), bt_fmt_dur(r->p99, v[3], 32), bt_fmt_dur(r->max, v[4], 32),
			fn->app >= 0 && (size_t)fn->app < na ? bt_escape_text(apps[fn->app].name, 16, an, sizeof(an))
							     : "-");
	}
	if (!nr)
		fprintf(out, "(no call of a traced function complete in the selection)\n");
	bt_report_call_losses(d, c, out);
}

/* The same rows from per-function aggregates (func_stream.c). */
static int print_traced_stream(const struct bt_dump *d, const struct bt_fstream *s, FILE *out)
{
	struct tfrow *rows = calloc(s->c.nfn + 1, sizeof(*rows));
	size_t nr = 0;
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < s->c.nfn; i++) {
		const struct bt_fagg *a = &s->agg[i];
		if (a->calls)
			rows[nr++] = (struct tfrow){ .fn = (uint32_t)i, .calls = a->calls, .total = a->total,
						     .self = a->self, .p50 = bt_fagg_pct(a, 50),
						     .p99 = bt_fagg_pct(a, 99), .max = a->max };
	}
	print_rows(d, &s->c, rows, nr, out);
	free(rows);
	return 0;
}

void bt_report_call_losses(const struct bt_dump *d, const struct bt_calls *c, FILE *out)
{
	size_t na;
	const struct bt_dump_app *apps = bt_dump_apps(d, &na);
	uint64_t bad = 0, lost = 0, busy = 0, partial = 0, batches_bad = 0;
	char b1[32], b2[32];
	int nloss = 0;
	for (size_t i = 0; i < na; i++) {
		bad += apps[i].counters[BT_APPC_BLOCKS_BAD];
		lost += apps[i].counters[BT_APPC_BLOCKS_LOST];
		busy += apps[i].counters[BT_APPC_BLOCKS_BUSY];
		partial += apps[i].counters[BT_APPC_BLOCKS_PARTIAL];
		batches_bad += apps[i].func_batches_bad;
	}
	if (c->records)
		fprintf(out, "functions:    %" PRIu64 " entries/exits, %s .. %s; %" PRIu64 " calls paired\n", c->records,
			bt_format_ts(c->first_ts, b1, sizeof(b1)), bt_format_ts(c->last_ts, b2, sizeof(b2)), c->n);
#define LOSS(...)                                                \
	do {                                                     \
		fprintf(out, nloss++ ? "; " : "not counted:  "); \
		fprintf(out, __VA_ARGS__);                       \
	} while (0)
	if (c->unmatched_exits)
		LOSS("%" PRIu64 " exits of calls entered before the window", c->unmatched_exits);
	if (c->running)
		LOSS("%" PRIu64 " calls still running at the end", c->running);
	if (c->seq_gaps)
		LOSS("%" PRIu64 " calls cut by %" PRIu64 " per-thread seq gaps (%" PRIu64 " records missing)", c->cut,
		     c->seq_gaps, c->seq_missing);
	if (c->mismatched)
		LOSS("%" PRIu64 " exits of functions not on their thread's stack", c->mismatched);
	if (bad || lost || busy || partial || batches_bad)
		LOSS("application blocks: %" PRIu64 " refused as malformed, %" PRIu64 " overwritten while dumping, %" PRIu64
		     " busy, %" PRIu64 " partial; %" PRIu64 " function batches refused",
		     bad, lost, busy, partial, batches_bad);
#undef LOSS
	if (nloss)
		fputc('\n', out);
}

/* Probes of one function (its entry, return, USDT points) share a row
 * group: fns[] the groups, fn_of[probe] its group. Returns the count. */
static size_t group_probes(const struct bt_probe_desc *probes, size_t np, struct ffunc *fns, uint32_t *fn_of)
{
	size_t nfn = 0;

	for (size_t i = 0; i < np; i++) {
		size_t r;
		for (r = 0; r < nfn && !same_func(fns[r].p, &probes[i]); r++)
			;
		if (r == nfn)
			fns[nfn++].p = &probes[i];
		fn_of[i] = (uint32_t)r;
		fns[r].usdt = !!(probes[i].flags & BT_PROBE_USDT);
		if (probes[i].flags & BT_PROBE_RETURN)
			fns[r].has_return = 1;
		else if (!(probes[i].flags & BT_PROBE_USDT))
			fns[r].has_entry = 1;
	}
	return nfn;
}

/* The probe events kept by f, counted into one row per function and
 * process; *unknown: events naming no probe of the table. */
static int collect_probe_rows(const struct bt_func_filter *f, const struct bt_probe_desc *probes, size_t np,
			      const uint32_t *fn_of, const struct bt_dump_event *ev, size_t nev, struct bt_namer *nm,
			      struct frows *rows, uint64_t *unknown)
{
	struct frow *last = NULL;
	for (size_t i = 0; i < nev; i++) {
		const struct bt_event_hdr *h = ev[i].ev;
		const struct bt_ev_uprobe *u = (const void *)h;
		size_t pi;

		bt_namer_apply(nm, h, ev[i].len);
		if (h->type != BT_EV_UPROBE_ENTRY && h->type != BT_EV_UPROBE_RETURN && h->type != BT_EV_USDT)
			continue;
		if (ev[i].len < sizeof(*u) || !filter_keep(f, h))
			continue;
		/* ids are indexes of the table; search if someone renumbered */
		if (u->probe_id < np && probes[u->probe_id].id == u->probe_id) {
			pi = u->probe_id;
		} else {
			for (pi = 0; pi < np && probes[pi].id != u->probe_id; pi++)
				;
			if (pi == np) {
				(*unknown)++;
				continue;
			}
		}
		/* one row per function and process; a tgid of 0 is not a process */
		uint32_t pid = h->tgid ? h->tgid : h->tid;
		struct frow *r = last && last->fn == fn_of[pi] && last->pid == pid ? last : row_get(rows, fn_of[pi], pid);
		if (!r)
			return -ENOMEM;
		last = r;
		if (h->type == BT_EV_UPROBE_ENTRY) {
			r->entries++;
		} else if (h->type == BT_EV_USDT) {
			r->usdt_hits++;
		} else {
			r->returns++;
			if (!u->duration_ns) {
				r->unmatched++;
				continue;
			}
			if (r->nlat == r->cap) {
				size_t nc = r->cap ? r->cap * 2 : 64;
				uint64_t *nl = realloc(r->lat, nc * sizeof(*nl));
				if (!nl)
					return -ENOMEM;
				r->lat = nl, r->cap = nc;
			}
			r->lat[r->nlat++] = u->duration_ns;
		}
	}
	return 0;
}

/* Targets that ended: their exit in the dump, or the recorder saw it. */
static void print_ended_targets(const struct bt_probe_desc *probes, size_t np, const struct bt_dump_event *ev,
				size_t nev, FILE *out)
{
	for (size_t i = 0; i < np; i++) {
		int pid = probes[i].pid, dup = 0;
		uint64_t exit_ts = 0;

		if (pid <= 0)
			continue;
		for (size_t j = 0; j < i && !dup; j++)
			dup = probes[j].pid == pid;
		if (dup)
			continue;
		for (size_t k = 0; k < nev; k++) {
			const struct bt_event_hdr *h = ev[k].ev;
			if (h->type == BT_EV_PROCESS_EXIT && ev[k].len >= sizeof(struct bt_ev_task) &&
			    ((const struct bt_ev_task *)h)->tid == (uint32_t)pid)
				exit_ts = h->ts_ns;
		}
		int ended = exit_ts != 0;
		for (size_t j = 0; j < np && !ended; j++)
			ended = probes[j].pid == pid && (probes[j].flags & BT_PROBE_ENDED);
		if (exit_ts)
			fprintf(out, "process %d ended at %" PRIu64 ".%06" PRIu64 " (recording went on)\n", pid,
				exit_ts / 1000000000u, (exit_ts % 1000000000u) / 1000u);
		else if (ended)
			fprintf(out, "process %d ended while attached (recording went on)\n", pid);
	}
}

int bt_report_functions(const struct bt_dump *d, const struct bt_func_filter *f, FILE *out)
{
	size_t np, nev, nfn = 0;
	const struct bt_probe_desc *probes = bt_dump_probes(d, &np);
	const struct bt_dump_event *ev = bt_dump_events(d, &nev);
	size_t ntasks;
	const struct bt_task *tasks = bt_dump_tasks(d, &ntasks);
	struct ffunc *fns = calloc(np ? np : 1, sizeof(*fns));
	uint32_t *fn_of = calloc(np ? np : 1, sizeof(*fn_of));
	struct frows rows = { 0 };
	struct bt_namer *nm = bt_namer_new(tasks, ntasks);
	uint64_t unknown = 0;
	struct bt_calls calls = { 0 };
	struct bt_fstream fs = { 0 };
	int stream = f && f->stream, ret = 0;

	if (!fns || !fn_of || !nm) {
		ret = -ENOMEM;
		goto out;
	}
	if ((ret = stream ? bt_fstream_build(d, f, 0, &fs) : bt_calls_build(d, f, &calls)) < 0)
		goto out;
	if (stream)
		calls = fs.c; /* the counters (no call is kept); freed with fs */
	if (!np && !calls.records) {
		fprintf(out, "no user-space probes (record with -u/-U) and no traced functions (programs built with "
			     "-finstrument-functions and libbtrace) in this dump\n");
		goto out;
	}
	if (calls.records) {
		if (np)
			fprintf(out, "traced functions (-finstrument-functions, libbtrace):\n");
		if ((ret = stream ? print_traced_stream(d, &fs, out) : print_traced(d, &calls, out)) < 0)
			goto out;
		if (!np)
			goto window;
		fprintf(out, "\nuser-space probes (uprobes, -u/-U):\n");
	}
	nfn = group_probes(probes, np, fns, fn_of);
	if ((ret = collect_probe_rows(f, probes, np, fn_of, ev, nev, nm, &rows, &unknown)) < 0)
		goto out;
	/* a function no selected event hit still gets its row, of zeros */
	for (uint32_t i = 0; i < nfn; i++) {
		size_t k = 0;
		while (k < rows.n && rows.r[k].fn != i)
			k++;
		if (k == rows.n && !row_get(&rows, i, 0)) {
			ret = -ENOMEM;
			goto out;
		}
	}

	fprintf(out, "%-32s %-20s %7s %9s %9s  %9s %9s %9s %9s %9s  %s\n", "FUNCTION", "BINARY", "PID", "CALLS",
		"RETURNS", "LAT.COUNT", "MIN", "P50", "P99", "MAX", "COMM");
	for (size_t i = 0; i < rows.n; i++) {
		char comm[BT_ESCAPED_LEN(BT_TASK_COMM_LEN)];
		print_row(out, &fns[rows.r[i].fn], &rows.r[i],
			  rows.r[i].pid ? proc_name(d, nm, rows.r[i].pid, comm, sizeof(comm)) : "-");
	}
	if (unknown)
		fprintf(out, "%" PRIu64 " events name probes missing from the probe table\n", unknown);
window:
	if ((ret = print_window(d, f, &calls, calls.records && !np, out)) < 0)
		goto out;

	print_ended_targets(probes, np, ev, nev, out);
out:
	for (size_t i = 0; i < rows.n; i++)
		free(rows.r[i].lat);
	free(rows.r);
	free(fns);
	free(fn_of);
	bt_namer_free(nm);
	if (stream)
		bt_fstream_free(&fs);
	else
		bt_calls_free(&calls);
	return ret;
}
