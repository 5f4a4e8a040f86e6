// SPDX-License-Identifier: MIT
/*
 * report_apps.c - the application part of `report --stats`: per traced
 * process, what its buffers held, what was lost and why, and the latest
 * window in which none of its threads misses an event (app events carry a
 * per-thread seq, so a gap proves loss exactly like the kernel's per-CPU seq).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "report_apps.h"
#include "util.h"

struct thr {
	uint32_t tid;
	uint64_t events, gaps, missing;
	uint64_t last_seq; /* unwrapped */
	uint64_t start_ts; /* continuous from here (0: from its first event, seq 0 retained) */
};

static struct thr *thr_get(struct thr **t, size_t *n, size_t *cap, uint32_t tid)
{
	for (size_t i = 0; i < *n; i++)
		if ((*t)[i].tid == tid)
			return &(*t)[i];
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct thr *x = realloc(*t, c * sizeof(*x));
		if (!x)
			return NULL;
		*t = x;
		*cap = c;
	}
	memset(&(*t)[*n], 0, sizeof(**t));
	(*t)[*n].tid = tid;
	return &(*t)[(*n)++];
}

int bt_report_apps(const struct bt_dump *d, FILE *out)
{
	size_t napps, n;
	const struct bt_dump_app *apps = bt_dump_apps(d, &napps);
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	if (!napps)
		return 0;
	fprintf(out, "applications (in-process tracing): %zu\n", napps);
	for (size_t a = 0; a < napps; a++) {
		const struct bt_dump_app *x = &apps[a];
		struct thr *t = NULL;
		size_t nt = 0, cap = 0;
		uint64_t first = 0, last = 0, events = 0, gaps = 0, missing = 0, cont = 0, cont_events = 0;
		for (size_t i = 0; i < n; i++) {
			if (ev[i].app != (int32_t)a)
				continue;
			const struct bt_event_hdr *h = ev[i].ev;
			struct thr *p = thr_get(&t, &nt, &cap, h->tid);
			if (!p) {
				free(t);
				return -1;
			}
			if (!events++)
				first = h->ts_ns;
			last = h->ts_ns;
			if (!p->events++) {
				p->last_seq = h->seq;
				p->start_ts = h->seq == 0 ? 0 : h->ts_ns; /* older events existed */
				continue;
			}
			uint64_t s = p->last_seq + (uint64_t)(int64_t)(int32_t)(h->seq - (uint32_t)p->last_seq);
			if (s > p->last_seq + 1) {
				p->gaps++;
				p->missing += s - p->last_seq - 1;
				p->start_ts = h->ts_ns;
			}
			if (s > p->last_seq)
				p->last_seq = s;
		}
		for (size_t i = 0; i < nt; i++) {
			gaps += t[i].gaps;
			missing += t[i].missing;
			if (t[i].start_ts > cont)
				cont = t[i].start_ts;
		}
		if (events && !cont)
			cont = first;
		for (size_t i = 0; i < n && events; i++)
			if (ev[i].app == (int32_t)a && ev[i].ev->ts_ns >= cont)
				cont_events++;
		char en[BT_ESCAPED_LEN(sizeof(x->name))];
		fprintf(out, "  %s pid %u (%s): %" PRIu64 " events from %zu threads",
			bt_escape_text(x->name, sizeof(x->name), en, sizeof(en)), x->pid,
			x->flags & BT_APP_EXITED ? "exited" : "alive", events, nt);
		if (events)
			fprintf(out, " over %.6f s", (double)(last - first) / 1e9);
		fputc('\n', out);
		if (events)
			fprintf(out, "    latest continuous window: %.6f s, %" PRIu64 " events (no thread misses an event)\n",
				(double)(last - cont) / 1e9, cont_events);
		fprintf(out, "    per-thread seq gaps: %" PRIu64 " gaps, %" PRIu64 " events missing\n", gaps, missing);
		fprintf(out, "    buffers:");
		for (int c = 0; c < BT_APPC_MAX; c++)
			fprintf(out, " %s %" PRIu64, bt_app_counter_name(c), x->counters[c]);
		fputc('\n', out);
		if (x->counters[BT_APPC_BLOCKS_BAD])
			fprintf(out, "    WARNING: %" PRIu64 " blocks failed validation (the application wrote over its buffer): dropped\n",
				x->counters[BT_APPC_BLOCKS_BAD]);
		if (x->counters[BT_APPC_NAMES_LOST])
			fprintf(out, "    WARNING: %" PRIu64 " event names never reached the recorder: their events show name#ID\n",
				x->counters[BT_APPC_NAMES_LOST]);
		if (x->counters[BT_APPC_BLOCKS_BUSY] && (x->flags & BT_APP_EXITED))
			fprintf(out, "    note: %" PRIu64 " blocks held unconfirmed writes (a thread died or stopped mid-write): not dumped\n",
				x->counters[BT_APPC_BLOCKS_BUSY]);
		if (x->counters[BT_APPC_BLOCKS_PARTIAL])
			fprintf(out, "    note: %" PRIu64 " blocks dumped up to a write in flight (or a thread that died mid-write): the events after it are missing (seq gaps)\n",
				x->counters[BT_APPC_BLOCKS_PARTIAL]);
		free(t);
	}
	return 0;
}
