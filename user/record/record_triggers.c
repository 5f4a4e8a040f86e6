// SPDX-License-Identifier: MIT
/*
 * record_triggers.c - the recorder's side of `record --trigger`: start the
 * trigger thread, merge the hits it hands on into the pending dump (a hit
 * whose delay is over while a dump is pending is named in that dump, not
 * queued behind it: that dump is taken later, so it holds the hit), count
 * how each hit ended, put the trigger table into every dump, say when a
 * dump's window starts after its event, answer `ctl trigger NAME`, and
 * take application triggers (BTRACE_TRIGGER).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btrace_buffer.h"
#include "dump.h"
#include "live_window.h"
#include "loader.h"
#include "recorder.h"
#include "record_triggers.h"
#include "triggers.h"
#include "util.h"

/* Trigger thread (or the stop): f[0]'s delay is over, f[1..n) and
 * `unnamed` came during it. Into the pending dump: the dump thread takes it
 * whole when it starts one. */
static void on_trigger_dump(void *ctx, const struct bt_trigger_fired *f, size_t n, uint64_t unnamed)
{
	struct recorder *r = ctx;
	struct recorder_hits *q = &r->tq;

	pthread_mutex_lock(&r->lock);
	for (size_t k = 0; k < n; k++) {
		if (q->n < RECORDER_HITS)
			q->f[q->n++] = f[k];
		else if (f[k].trig < BT_TRIG_MAX)
			q->unnamed[f[k].trig]++; /* in the dump all the same, only counted */
	}
	if (n && f[0].trig < BT_TRIG_MAX)
		q->unnamed[f[0].trig] += unnamed;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

int recorder_triggers_take(struct recorder *r, struct recorder_hits *out)
{
	if (!r->tq.n)
		return 0;
	*out = r->tq;
	memset(&r->tq, 0, sizeof(r->tq));
	return 1;
}

/* How the hits of h end: in a dump written (the first named started it,
 * the rest were merged), or in none. */
struct hit_ends {
	uint64_t dumps[BT_TRIG_MAX], merged[BT_TRIG_MAX], n[BT_TRIG_MAX];
};

static void hit_ends(const struct recorder_hits *h, struct hit_ends *e)
{
	memset(e, 0, sizeof(*e));
	for (size_t k = 0; k < h->n; k++) {
		uint32_t i = h->f[k].trig;

		if (i >= BT_TRIG_MAX)
			continue;
		if (k == 0)
			e->dumps[i]++;
		else
			e->merged[i]++;
		e->n[i]++;
	}
	for (size_t i = 0; i < BT_TRIG_MAX; i++) {
		e->merged[i] += h->unnamed[i];
		e->n[i] += h->unnamed[i];
	}
}

void recorder_triggers_account(struct recorder *r, const struct recorder_hits *h, int written)
{
	struct hit_ends e;

	hit_ends(h, &e);
	for (size_t i = 0; i < BT_TRIG_MAX; i++) {
		if (!e.n[i])
			continue;
		if (written)
			bt_triggers_account(r->triggers, i, e.dumps[i], e.merged[i], 0);
		else
			bt_triggers_account(r->triggers, i, 0, 0, e.n[i]);
	}
	if (!written && h->n)
		bt_warn("trigger %s: its dump was not written; %" PRIu64 " hit%s counted as dropped", h->f[0].name,
			(uint64_t)h->n, h->n == 1 ? "" : "s");
}

/* The window the dump is about to hold starts after an event it is for:
 * said in the log (report --stats says it from the dump). */
static void check_windows(struct recorder *r, const struct recorder_hits *h)
{
	struct bt_seq_window w;
	struct bt_stats bs;

	if (!h->n || !bt_loader_live(r->loader))
		return;
	bt_buffer_stats(r->buf, &bs);
	bt_live_window(bt_loader_live(r->loader), bs.blocks_used, bs.nblocks, &w);
	for (size_t k = 0; k < h->n; k++)
		if (w.events && h->f[k].ts_ns < w.first_ts)
			bt_warn("trigger %s: its event at %.6f is %.3f ms older than the oldest event the buffer still holds "
				"(%.6f): this dump does not hold it (a larger buffer, or a shorter after=, keeps it)",
				h->f[k].name, (double)h->f[k].ts_ns / 1e9, (double)(w.first_ts - h->f[k].ts_ns) / 1e6,
				(double)w.first_ts / 1e9);
}

int recorder_triggers_start(struct recorder *r, char *err, size_t errlen)
{
	if (!r->o->ntriggers)
		return 0;
	int ring_fd, counts_fd;

	bt_loader_trig_maps(r->loader, &ring_fd, &counts_fd);
	r->triggers = bt_triggers_start(r->o->triggers, r->o->ntriggers, ring_fd, counts_fd, on_trigger_dump, r, err,
					errlen);
	return r->triggers ? 0 : -EINVAL;
}

void recorder_triggers_stop(struct recorder *r)
{
	/* The hits handed on now and the final dump asked for next go into
	 * one dump: none starts in between. */
	pthread_mutex_lock(&r->lock);
	r->hold_dumps = 1;
	pthread_mutex_unlock(&r->lock);
	bt_triggers_stop(r->triggers);
}

void recorder_triggers_free(struct recorder *r)
{
	bt_triggers_free(r->triggers);
	r->triggers = NULL;
}

int recorder_triggers_info(struct recorder *r, const struct bt_trigger_fired *f, struct bt_dump_info *info,
			   struct bt_dump_trigger **tab)
{
	size_t n = bt_triggers_count(r->triggers);
	const struct recorder_hits *h = f ? &r->wr : NULL;
	struct bt_dump_trigger *t;
	struct hit_ends e;

	*tab = NULL;
	if (!n)
		return 0;
	t = calloc(n, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct bt_trigger_spec *s = bt_triggers_spec(r->triggers, i);

		memcpy(t[i].name, s->name, sizeof(t[i].name));
		memcpy(t[i].cond, s->cond, sizeof(t[i].cond));
		t[i].kind = s->kind;
		t[i].threshold_ns = s->threshold_ns;
		t[i].after_ns = s->after_ns;
		t[i].limit_ns = s->limit_ns;
		bt_triggers_stats(r->triggers, i, &t[i].st);
	}
	if (h) {
		/* This dump's own hits, as they end if it is written (no file
		 * shows them otherwise): the table adds up without them pending. */
		hit_ends(h, &e);
		for (size_t i = 0; i < n && i < BT_TRIG_MAX; i++) {
			struct bt_trigger_stats *st = &t[i].st;

			st->dumps += e.dumps[i];
			st->merged += e.merged[i];
			st->skipped += e.merged[i];
			st->pending -= e.n[i] < st->pending ? e.n[i] : st->pending;
		}
		check_windows(r, h);
	}
	info->triggers = t;
	info->ntriggers = n;
	info->fired = h ? h->f : NULL;
	info->nfired = h ? h->n : 0;
	*tab = t;
	return 0;
}

void recorder_triggers_status(struct recorder *r, FILE *out)
{
	size_t n = bt_triggers_count(r->triggers);

	if (!n) {
		fprintf(out, "triggers: none\n");
		return;
	}
	fprintf(out, "triggers: %zu\n", n);
	for (size_t i = 0; i < n; i++) {
		const struct bt_trigger_spec *s = bt_triggers_spec(r->triggers, i);
		struct bt_trigger_stats st;

		bt_triggers_stats(r->triggers, i, &st);
		fprintf(out,
			"  %s: %s, %" PRIu64 " hits, %" PRIu64 " dumps, %" PRIu64 " skipped, %" PRIu64 " lost; %" PRIu64
			" dumped + %" PRIu64 " merged + %" PRIu64 " rate-limited + %" PRIu64 " dropped + %" PRIu64
			" pending\n",
			s->name, s->cond, st.hits, st.dumps, st.skipped, st.lost, st.dumps, st.merged, st.limited, st.dropped,
			st.pending);
	}
}

int record_ctl_trigger(struct recorder *r, int argc, char **argv, FILE *out, char *why, size_t whylen)
{
	int i;

	if (argc != 2) {
		snprintf(why, whylen, "usage: trigger NAME (a --trigger of this recorder)");
		return -EINVAL;
	}
	i = bt_triggers_find(r->triggers, argv[1]);
	if (i < 0) {
		size_t n = bt_triggers_count(r->triggers), o = 0;
		char names[256] = "";

		for (size_t k = 0; k < n; k++)
			o += (size_t)snprintf(names + o, o < sizeof(names) ? sizeof(names) - o : 0, "%s%s", k ? ", " : "",
					      bt_triggers_spec(r->triggers, k)->name);
		snprintf(why, whylen, n ? "no trigger named '%s' (this recorder has: %s)" :
					  "no trigger named '%s': this recorder has none (record --trigger ctl,name=%s)",
			 argv[1], n ? names : argv[1]);
		return -ENOENT;
	}
	bt_triggers_hit(r->triggers, (size_t)i, BT_TRIG_CTL, 0, 0, 0, 0, NULL);
	fprintf(out, "trigger %s fired\n", argv[1]);
	return 0;
}

void recorder_app_trigger(void *ctx, const char *name, uint32_t kind, uint64_t ts_ns, uint64_t value, uint32_t tid,
			  uint32_t tgid, const char *comm)
{
	struct recorder *r = ctx;

	bt_triggers_app(r->triggers, name, kind, ts_ns, value, tid, tgid, comm);
}

void recorder_app_func_trigger(void *ctx, uint32_t trig, uint64_t ts_ns, uint64_t dur, uint32_t tid, uint32_t tgid,
			       const char *comm)
{
	struct recorder *r = ctx;
	const struct bt_trigger_spec *s = bt_triggers_spec(r->triggers, trig);

	/* pid= and comm= (the application's name) narrow it */
	if (!s || (s->tgid && s->tgid != tgid) || (s->comm[0] && strncmp(s->comm, comm, sizeof(s->comm)) != 0))
		return;
	bt_triggers_hit(r->triggers, trig, BT_TRIG_APP_FUNC, ts_ns, dur, tid, tgid, comm);
}
