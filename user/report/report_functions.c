// SPDX-License-Identifier: MIT
/*
 * report_functions.c - `report --functions`: one row per probed function (and
 * process) of a dump: calls, returns, and for return probes the latency
 * distribution of the entry-to-return durations (count, min, p50, p99, max).
 * Probes on the same function and process (`f` and `f%return`) share a row.
 * Targets that ended are named below the table, with the time their exit is
 * in the dump if it is.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "report_functions.h"

struct frow {
	const struct bt_probe_desc *p; /* first probe of the row (names) */
	int usdt;
	int has_entry, has_return;
	uint64_t entries, returns, usdt_hits, unmatched;
	uint64_t *lat;
	size_t nlat, cap;
};

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

static const char *fmt_dur(uint64_t ns, char *buf, size_t len)
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

/* Nearest-rank percentile of sorted v[n]. */
static uint64_t pct(const uint64_t *v, size_t n, unsigned q)
{
	size_t k = (n * q + 99) / 100;

	return v[k ? k - 1 : 0];
}

static int same_func(const struct bt_probe_desc *a, const struct bt_probe_desc *b)
{
	return a->pid == b->pid && (a->flags & BT_PROBE_USDT) == (b->flags & BT_PROBE_USDT) &&
	       strcmp(a->func, b->func) == 0 && strcmp(a->binary, b->binary) == 0;
}

int bt_report_functions(const struct bt_dump *d, FILE *out)
{
	size_t np, nev, nrows = 0;
	const struct bt_probe_desc *probes = bt_dump_probes(d, &np);
	const struct bt_dump_event *ev = bt_dump_events(d, &nev);
	struct frow *rows = calloc(np ? np : 1, sizeof(*rows));
	size_t *row_of = calloc(np ? np : 1, sizeof(*row_of));
	uint64_t unknown = 0;
	int ret = 0;

	if (!rows || !row_of) {
		ret = -ENOMEM;
		goto out;
	}
	if (!np) {
		fprintf(out, "no user-space probes in this dump (record with -u/-U)\n");
		goto out;
	}
	for (size_t i = 0; i < np; i++) {
		size_t r;
		for (r = 0; r < nrows && !same_func(rows[r].p, &probes[i]); r++)
			;
		if (r == nrows)
			rows[nrows++].p = &probes[i];
		row_of[i] = r;
		rows[r].usdt = !!(probes[i].flags & BT_PROBE_USDT);
		if (probes[i].flags & BT_PROBE_RETURN)
			rows[r].has_return = 1;
		else if (!(probes[i].flags & BT_PROBE_USDT))
			rows[r].has_entry = 1;
	}
	for (size_t i = 0; i < nev; i++) {
		const struct bt_event_hdr *h = ev[i].ev;
		const struct bt_ev_uprobe *u = (const void *)h;
		size_t pi;

		if (h->type != BT_EV_UPROBE_ENTRY && h->type != BT_EV_UPROBE_RETURN && h->type != BT_EV_USDT)
			continue;
		if (ev[i].len < sizeof(*u))
			continue;
		/* ids are indexes of the table; search if someone renumbered */
		if (u->probe_id < np && probes[u->probe_id].id == u->probe_id) {
			pi = u->probe_id;
		} else {
			for (pi = 0; pi < np && probes[pi].id != u->probe_id; pi++)
				;
			if (pi == np) {
				unknown++;
				continue;
			}
		}
		struct frow *r = &rows[row_of[pi]];
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
				if (!nl) {
					ret = -ENOMEM;
					goto out;
				}
				r->lat = nl, r->cap = nc;
			}
			r->lat[r->nlat++] = u->duration_ns;
		}
	}

	fprintf(out, "%-32s %-20s %7s %9s %9s  %9s %9s %9s %9s %9s\n", "FUNCTION", "BINARY", "PID", "CALLS",
		"RETURNS", "LAT.COUNT", "MIN", "P50", "P99", "MAX");
	for (size_t i = 0; i < nrows; i++) {
		struct frow *r = &rows[i];
		char pid[16], name[300], c[5][32];
		uint64_t calls = r->usdt ? r->usdt_hits : r->has_entry ? r->entries : r->returns;

		if (r->p->pid < 0)
			snprintf(pid, sizeof(pid), "all");
		else
			snprintf(pid, sizeof(pid), "%d", r->p->pid);
		snprintf(name, sizeof(name), "%s%s", r->p->func[0] ? r->p->func : r->p->spec, r->usdt ? " [usdt]" : "");
		fprintf(out, "%-32s %-20s %7s %9" PRIu64, name, base_name(r->p->binary), pid, calls);
		if (!r->has_return) {
			fprintf(out, " %9s\n", "-");
			continue;
		}
		fprintf(out, " %9" PRIu64, r->returns);
		if (!r->nlat) {
			fprintf(out, "  %9d\n", 0);
			continue;
		}
		qsort(r->lat, r->nlat, sizeof(*r->lat), u64_cmp);
		fprintf(out, "  %9zu %9s %9s %9s %9s", r->nlat, fmt_dur(r->lat[0], c[0], sizeof(c[0])),
			fmt_dur(pct(r->lat, r->nlat, 50), c[1], sizeof(c[1])),
			fmt_dur(pct(r->lat, r->nlat, 99), c[2], sizeof(c[2])),
			fmt_dur(r->lat[r->nlat - 1], c[3], sizeof(c[3])));
		if (r->unmatched)
			fprintf(out, "  (%" PRIu64 " returns without a timed entry)", r->unmatched);
		fputc('\n', out);
	}
	if (unknown)
		fprintf(out, "%" PRIu64 " events name probes missing from the probe table\n", unknown);

	/* Targets that ended: their exit in the dump, or the recorder saw it. */
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
out:
	for (size_t i = 0; i < nrows; i++)
		free(rows[i].lat);
	free(rows);
	free(row_of);
	return ret;
}
