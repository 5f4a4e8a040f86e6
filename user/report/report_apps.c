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
#include "func_batch.h"
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

/* One application event into its thread's seq count (times: first..last). */
static int app_event(struct thr **t, size_t *nt, size_t *cap, uint32_t tid, uint32_t seq, uint64_t ts,
		     uint64_t *events, uint64_t *first, uint64_t *last)
{
	struct thr *p = thr_get(t, nt, cap, tid);
	if (!p)
		return -1;
	if (!(*events)++ || ts < *first)
		*first = ts;
	if (ts > *last)
		*last = ts;
	if (!p->events++) {
		p->last_seq = seq;
		p->start_ts = seq == 0 ? 0 : ts; /* older events existed */
		return 0;
	}
	uint64_t s = p->last_seq + (uint64_t)(int64_t)(int32_t)(seq - (uint32_t)p->last_seq);
	if (s > p->last_seq + 1) {
		p->gaps++;
		p->missing += s - p->last_seq - 1;
		p->start_ts = ts;
	}
	if (s > p->last_seq)
		p->last_seq = s;
	return 0;
}

/* Events of e at or after ts: a function batch kept whole
 * (BT_DUMP_OPEN_FUNC_BATCHES) counts its records. */
static uint64_t events_since(const struct bt_dump_event *e, uint64_t ts)
{
	if (e->ev->type != BT_EV_APP_FUNCS)
		return e->ev->ts_ns >= ts;
	const struct bt_ev_app_funcs *f = (const void *)e->ev;
	struct bt_funcs_iter it;
	uint64_t addr, n = 0;
	unsigned ex;

	bt_funcs_iter_init(&it, f, e->len);
	while (bt_funcs_iter_next(&it, &addr, &ex))
		n += bt_funcs_ts(f, it.tk) >= ts;
	return n;
}

/* One application's threads and counts. */
struct app_count {
	struct thr *t;
	size_t nt, cap;
	uint64_t first, last, events, cont, cont_events;
};

struct bt_report_apps {
	const struct bt_dump *d;
	struct app_count *a; /* [napps] */
	size_t napps;
};

struct bt_report_apps *bt_report_apps_new(const struct bt_dump *d)
{
	struct bt_report_apps *ra = calloc(1, sizeof(*ra));

	if (!ra)
		return NULL;
	ra->d = d;
	bt_dump_apps(d, &ra->napps);
	ra->a = calloc(ra->napps ? ra->napps : 1, sizeof(*ra->a));
	if (!ra->a) {
		free(ra);
		return NULL;
	}
	return ra;
}

void bt_report_apps_free(struct bt_report_apps *ra)
{
	if (!ra)
		return;
	for (size_t i = 0; i < ra->napps; i++)
		free(ra->a[i].t);
	free(ra->a);
	free(ra);
}

int bt_report_apps_event(struct bt_report_apps *ra, const struct bt_dump_event *e)
{
	if (e->app < 0 || (size_t)e->app >= ra->napps)
		return 0;
	struct app_count *c = &ra->a[e->app];
	const struct bt_event_hdr *h = e->ev;
	if (h->type != BT_EV_APP_FUNCS)
		return app_event(&c->t, &c->nt, &c->cap, h->tid, h->seq, h->ts_ns, &c->events, &c->first, &c->last);
	/* kept whole: its records, each its thread's next seq */
	const struct bt_ev_app_funcs *f = (const void *)h;
	struct bt_funcs_iter it;
	uint64_t addr;
	unsigned ex;
	uint32_t k = 0;

	bt_funcs_iter_init(&it, f, e->len);
	while (bt_funcs_iter_next(&it, &addr, &ex))
		if (app_event(&c->t, &c->nt, &c->cap, h->tid, h->seq + k++, bt_funcs_ts(f, it.tk), &c->events, &c->first,
			      &c->last))
			return -1;
	return 0;
}

static int count_since(const struct bt_dump_event *e, void *ctx)
{
	struct bt_report_apps *ra = ctx;
	if (e->app >= 0 && (size_t)e->app < ra->napps && ra->a[e->app].cont > ra->a[e->app].first)
		ra->a[e->app].cont_events += events_since(e, ra->a[e->app].cont);
	return 0;
}

int bt_report_apps(struct bt_report_apps *ra, FILE *out, char *errbuf, size_t errlen)
{
	const struct bt_dump_app *apps = bt_dump_apps(ra->d, &ra->napps);
	size_t napps = ra->napps;
	int again = 0;
	char err[256];

	if (!napps)
		return 0;
	/* each application's latest continuous window: from its latest thread
	 * start after a gap (or a thread whose oldest records were overwritten) */
	for (size_t a = 0; a < napps; a++) {
		struct app_count *c = &ra->a[a];
		for (size_t i = 0; i < c->nt; i++)
			if (c->t[i].start_ts > c->cont)
				c->cont = c->t[i].start_ts;
		if (c->events && !c->cont)
			c->cont = c->first;
		c->cont_events = c->cont > c->first ? 0 : c->events;
		again |= c->events && c->cont > c->first;
	}
	int r = again ? bt_dump_each_event(ra->d, 0, count_since, ra, err, sizeof(err)) : 0;
	if (r < 0) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "%s", err);
		return r;
	}
	fprintf(out, "applications (in-process tracing): %zu\n", napps);
	for (size_t a = 0; a < napps; a++) {
		const struct bt_dump_app *x = &apps[a];
		struct app_count *c = &ra->a[a];
		uint64_t gaps = 0, missing = 0;
		for (size_t i = 0; i < c->nt; i++) {
			gaps += c->t[i].gaps;
			missing += c->t[i].missing;
		}
		char en[BT_ESCAPED_LEN(sizeof(x->name))];
		fprintf(out, "  %s pid %u (%s): %" PRIu64 " events from %zu threads",
			bt_escape_text(x->name, sizeof(x->name), en, sizeof(en)), x->pid,
			x->flags & BT_APP_EXITED ? "exited" : "alive", c->events, c->nt);
		if (c->events)
			fprintf(out, " over %.6f s", (double)(c->last - c->first) / 1e9);
		fputc('\n', out);
		if (c->events)
			fprintf(out, "    latest continuous window: %.6f s, %" PRIu64 " events (no thread misses an event)\n",
				(double)(c->last - c->cont) / 1e9, c->cont_events);
		fprintf(out, "    per-thread seq gaps: %" PRIu64 " gaps, %" PRIu64 " events missing\n", gaps, missing);
		fprintf(out, "    buffers:");
		for (int k = 0; k < BT_APPC_MAX; k++)
			fprintf(out, " %s %" PRIu64, bt_app_counter_name(k), x->counters[k]);
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
		if (x->counters[BT_APPC_EARLY_REFUSED])
			fprintf(out, "    WARNING: the buffer it wrote in before registering was refused (not a sealable memfd, a bad header, too large): its first calls are lost\n");
		if (x->counters[BT_APPC_BLOCKS_PARTIAL])
			fprintf(out, "    note: %" PRIu64 " blocks dumped up to a write in flight (or a thread that died mid-write): the events after it are missing (seq gaps)\n",
				x->counters[BT_APPC_BLOCKS_PARTIAL]);
	}
	return 0;
}
