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

#include "app_registry.h"
#include "btrace_buffer.h"
#include "dump_capture.h"
#include "dump.h"
#include "loader.h"
#include "recorder_state.h"
#include "record_triggers.h"
#include "triggers.h"
#include "util.h"

/* Trigger thread (or the stop): f[0]'s delay is over, f[1..n) and
 * `unnamed` came during it. Into the pending dump: the dump thread takes it
 * whole when it starts one.
 *
 * An application at full speed overwrites its buffer in a fraction of a
 * second, and a dump queued behind another starts seconds later: the
 * application buffers are copied at the pending dump's first hit, for it
 * (dump_capture_apps). Hits after that copy would not be in it: they wait
 * for the next dump (tq2), which copies at its own first hit; beyond that
 * they merge into it. Three copies at most: the dump being written's and
 * the two pending. While stopping, everything merges into the final dump,
 * which copies at once. */
static void on_trigger_dump(void *ctx, const struct bt_trigger_fired *f, size_t n, uint64_t unnamed)
{
	struct recorder *r = ctx;
	struct bt_apps_capture *c = NULL;

	if (!n)
		return;
	/* Only live applications overwrite their buffers: without one, the
	 * dump copies at its start as it always did. */
	size_t live = 0;
	if (r->apps)
		bt_apps_count(r->apps, &live);
	pthread_mutex_lock(&r->lock);
	struct recorder_hits *q = r->tq.apps && !r->hold_dumps ? &r->tq2 : &r->tq;
	int want = live && !q->n && !r->hold_dumps;
	pthread_mutex_unlock(&r->lock);
	uint64_t t0 = bt_boottime_ns();
	if (want) {
		c = dump_capture_apps(r);
		if (!c)
			bt_warn("trigger %s: cannot copy the application buffers now (%s): copied when its dump starts",
				f[0].name, strerror(errno));
	}
	pthread_mutex_lock(&r->lock);
	/* Only this thread and the stop (after it) add hits: q is still the
	 * queue chosen, unless the dump thread took tq meanwhile (then tq2
	 * moved into it, or it was empty). */
	if (q == &r->tq2 && !r->tq.apps)
		q = &r->tq;
	if (c && !q->n && !q->apps && !r->hold_dumps) {
		q->apps = c;
		q->apps_ns = bt_boottime_ns();
		q->apps_t0 = t0;
		c = NULL;
	}
	for (size_t k = 0; k < n; k++) {
		if (q->n < RECORDER_HITS)
			q->f[q->n++] = f[k];
		else if (f[k].trig < BT_TRIG_MAX)
			q->unnamed[f[k].trig]++; /* in the dump all the same, only counted */
	}
	if (f[0].trig < BT_TRIG_MAX)
		q->unnamed[f[0].trig] += unnamed;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	bt_apps_capture_free(c); /* the dump thread or a stop came first */
}

/* b's hits merged into a (whose copy of the applications is kept). */
static void hits_merge(struct recorder_hits *a, struct recorder_hits *b)
{
	for (size_t k = 0; k < b->n; k++) {
		if (a->n < RECORDER_HITS)
			a->f[a->n++] = b->f[k];
		else if (b->f[k].trig < BT_TRIG_MAX)
			a->unnamed[b->f[k].trig]++;
	}
	for (size_t i = 0; i < BT_TRIG_MAX; i++)
		a->unnamed[i] += b->unnamed[i];
	if (!a->apps) {
		a->apps = b->apps;
		a->apps_ns = b->apps_ns;
		a->apps_t0 = b->apps_t0;
		b->apps = NULL;
	}
	bt_apps_capture_free(b->apps);
	memset(b, 0, sizeof(*b));
}

int recorder_triggers_take(struct recorder *r, struct recorder_hits *out)
{
	if (!r->tq.n)
		return 0;
	/* The final dump is for every hit still waiting. */
	if (r->pending && strcmp(r->reason, "exit") == 0)
		hits_merge(&r->tq, &r->tq2);
	*out = r->tq;
	r->tq = r->tq2;
	memset(&r->tq2, 0, sizeof(r->tq2));
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
 * said in the log (report --stats says it from the dump). oldest: the
 * oldest event of the window captured (0 unknown). Not with a cold tier:
 * its older history may hold the event. */
static void check_windows(struct recorder *r, const struct recorder_hits *h, uint64_t oldest)
{
	if (!h->n || !oldest || r->cold)
		return;
	for (size_t k = 0; k < h->n; k++)
		if (h->f[k].ts_ns < oldest)
			bt_warn("trigger %s: its event at %.6f is %.3f ms older than the oldest event the buffer still holds "
				"(%.6f): this dump does not hold it (a larger buffer, or a shorter after=, keeps it)",
				h->f[k].name, (double)h->f[k].ts_ns / 1e9, (double)(oldest - h->f[k].ts_ns) / 1e6,
				(double)oldest / 1e9);
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

int recorder_triggers_info(struct recorder *r, const struct bt_trigger_fired *f, uint64_t oldest,
			   struct bt_dump_info *info, struct bt_dump_trigger **tab)
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
			t[i].unnamed = h->unnamed[i];
		}
		check_windows(r, h, oldest);
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
			"  %s: %s, %" PRIu64 " hits, %" PRIu64 " dumps, %" PRIu64 " rate-limited, %" PRIu64
			" merged, %" PRIu64 " lost in the kernel; %" PRIu64 " dumped + %" PRIu64 " merged + %" PRIu64
			" rate-limited + %" PRIu64 " dropped + %" PRIu64 " pending\n",
			s->name, s->cond, st.hits, st.dumps, st.limited, st.merged, st.lost, st.dumps, st.merged, st.limited,
			st.dropped, st.pending);
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
