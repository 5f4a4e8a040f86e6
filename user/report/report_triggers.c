// SPDX-License-Identifier: MIT
/*
 * report_triggers.c - `report --stats`: which trigger caused the dump, its
 * condition and the triggering event, and every trigger's counts.
 */
#include <inttypes.h>
#include <stdio.h>

#include "dump.h"
#include "report_triggers.h"
#include "util.h"

void bt_report_trigger_fired(const struct bt_dump *d, const struct bt_seq_window *w, FILE *out)
{
	const struct bt_dump_header *h = bt_dump_header(d);
	size_t n;
	const struct bt_trigger_fired *f = bt_dump_fired(d, &n);
	char desc[320];

	for (size_t i = 0; i < n; i++) {
		fprintf(out, "trigger:    %s (%s) fired: %s\n", f[i].name, f[i].cond,
			bt_trigger_describe(&f[i], desc, sizeof(desc)));
		fprintf(out, "            event at %.6f", (double)f[i].ts_ns / 1e9);
		if (f[i].cpu != UINT32_MAX)
			fprintf(out, " on CPU %u", f[i].cpu);
		fprintf(out, ", seen %.3f ms later, dump asked for at %.6f, started %.3f ms after that\n",
			(double)(f[i].seen_ns - f[i].ts_ns) / 1e6, (double)f[i].due_ns / 1e9,
			h->created_boottime_ns > f[i].due_ns ? (double)(h->created_boottime_ns - f[i].due_ns) / 1e6 : 0.0);
		if (i)
			fprintf(out, "            merged into this dump (a dump was pending when it came)\n");
		/* Honest windows: say when the dump cannot hold what it is for. */
		if (w && w->events && f[i].ts_ns < w->first_ts)
			fprintf(out, "            NOT IN THE DUMP: its window starts %.3f ms after this event (the buffer "
				     "no longer held it)\n", (double)(w->first_ts - f[i].ts_ns) / 1e6);
		else if (w && w->events && f[i].ts_ns < w->cont_start_ts)
			fprintf(out, "            before the latest continuous window (starts %.3f ms later): events "
				     "around it may be missing\n", (double)(w->cont_start_ts - f[i].ts_ns) / 1e6);
	}
}

/* Hits that ended: each counted as exactly one of these. */
static uint64_t ended(const struct bt_trigger_stats *s)
{
	return s->dumps + s->merged + s->limited + s->dropped;
}

void bt_report_triggers(const struct bt_dump *d, FILE *out)
{
	size_t n;
	const struct bt_dump_trigger *t = bt_dump_triggers(d, &n);

	if (!n)
		return;
	fprintf(out, "\ntriggers (counts since the recorder started):\n");
	for (size_t i = 0; i < n; i++) {
		char a[32], l[32];
		const struct bt_trigger_stats *s = &t[i].st;

		fprintf(out,
			"  %-16s %-32s after %s, limit %s: %" PRIu64 " hits, %" PRIu64 " dumps, %" PRIu64
			" rate-limited, %" PRIu64 " merged, %" PRIu64 " lost in the kernel\n",
			t[i].name, t[i].cond, format_duration(t[i].after_ns, a, sizeof(a)),
			format_duration(t[i].limit_ns, l, sizeof(l)), s->hits, s->dumps, s->limited, s->merged, s->lost);
		fprintf(out,
			"  %-16s hits %" PRIu64 " = %" PRIu64 " dumped + %" PRIu64 " merged + %" PRIu64
			" rate-limited + %" PRIu64 " dropped + %" PRIu64 " pending%s\n",
			"", s->hits, s->dumps, s->merged, s->limited, s->dropped, s->pending,
			ended(s) + s->pending == s->hits ? "" : " (DO NOT ADD UP: a damaged table)");
		if (t[i].unnamed)
			fprintf(out, "  %-16s this dump holds %" PRIu64 " more hits of it than it names (64 named at most)\n", "",
				t[i].unnamed);
	}
}
