// SPDX-License-Identifier: MIT
/*
 * export_json_size.c - how big the JSON is by time, so a text too large for
 * a browser (BT_JSON_OPEN_MAX: V8's longest string) comes with the --time
 * window that would open: each record's bytes go to the bin of its time,
 * and the latest start whose bins, with the bytes no record holds (header,
 * names, stack frames), stay within the limit is the hint.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "export_json_int.h"

int jx_size_init(struct jx *j)
{
	const struct bt_export_prep *p = j->p;
	struct jx_size *z = &j->size;
	if (!p->nev)
		return 0;
	z->bin = calloc(JX_SIZE_BINS, sizeof(*z->bin));
	if (!z->bin)
		return -1;
	z->t0 = p->first_ts;
	z->span = p->last_ts - p->first_ts + 1;
	return 0;
}

static uint32_t bin_of(const struct jx_size *z, uint64_t ts)
{
	if (ts <= z->t0)
		return 0;
	unsigned __int128 k = (unsigned __int128)(ts - z->t0) * JX_SIZE_BINS / z->span;
	return k >= JX_SIZE_BINS ? JX_SIZE_BINS - 1 : (uint32_t)k;
}

/* The bytes since the open record began are its own. */
static void close_record(struct jx_size *z, uint64_t raw)
{
	if (z->open)
		z->bin[z->last_bin] += raw - z->last_raw;
	z->open = 0;
}

void jx_size_mark(struct jx *j, uint64_t ts)
{
	struct jx_size *z = &j->size;
	if (!z->bin)
		return;
	uint64_t raw = bt_sink_raw_bytes(j->out);
	close_record(z, raw);
	z->last_bin = bin_of(z, ts);
	z->last_raw = raw;
	z->open = 1;
}

void jx_size_pause(struct jx *j)
{
	if (j->size.bin)
		close_record(&j->size, bt_sink_raw_bytes(j->out));
}

/* The latest start from which the records and the fixed bytes fit in
 * 15/16 of max (a window adds its enclosing calls and per-window names). */
void jx_size_finish(struct jx *j, uint64_t max)
{
	struct jx_size *z = &j->size;
	uint64_t raw = bt_sink_raw_bytes(j->out);
	if (!z->bin)
		return;
	jx_size_pause(j);
	uint64_t in_bins = 0;
	for (uint32_t k = 0; k < JX_SIZE_BINS; k++)
		in_bins += z->bin[k];
	uint64_t fixed = raw - in_bins, budget = max - max / 16, acc = fixed;
	if (raw > max && fixed < budget) {
		uint32_t k = JX_SIZE_BINS;
		while (k > 0 && acc + z->bin[k - 1] <= budget)
			acc += z->bin[--k];
		if (k < JX_SIZE_BINS && k > 0) {
			/* the first ns of bin k: the smallest ts with bin_of(ts) == k */
			unsigned __int128 s = ((unsigned __int128)k * z->span + JX_SIZE_BINS - 1) / JX_SIZE_BINS;
			j->st->json_fit_from_ns = z->t0 + (uint64_t)s;
			j->st->json_fit_bytes = acc;
			j->st->json_last_ns = j->p->last_ts;
		}
	}
	free(z->bin);
	z->bin = NULL;
}

void bt_export_json_fit_arg(const struct bt_export_stats *st, char *buf, size_t len)
{
	uint64_t us = (st->json_fit_from_ns + 999) / 1000;
	if (!st->json_fit_from_ns) {
		snprintf(buf, len, "%s", "");
		return;
	}
	snprintf(buf, len, "@%" PRIu64 ".%06" PRIu64 "..", us / 1000000, us % 1000000);
}
