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

void bt_report_trigger_fired(const struct bt_dump *d, FILE *out)
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
	}
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
		fprintf(out,
			"  %-16s %-32s after %s, limit %s: %" PRIu64 " hits, %" PRIu64 " dumps, %" PRIu64
			" skipped (rate limit), %" PRIu64 " lost\n",
			t[i].name, t[i].cond, format_duration(t[i].after_ns, a, sizeof(a)),
			format_duration(t[i].limit_ns, l, sizeof(l)), t[i].st.hits, t[i].st.dumps, t[i].st.skipped,
			t[i].st.lost);
	}
}
