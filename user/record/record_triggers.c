// SPDX-License-Identifier: MIT
/*
 * record_triggers.c - the recorder's side of `record --trigger`: start the
 * trigger thread, queue the dumps it asks for to the dump thread (each hit
 * its own dump), put the trigger table into every dump, answer
 * `ctl trigger NAME`, and take application triggers (BTRACE_TRIGGER).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "loader.h"
#include "recorder.h"
#include "record_triggers.h"
#include "triggers.h"
#include "util.h"

/* Trigger thread: a hit's delay is over; the dump thread writes it. */
static void on_trigger_dump(void *ctx, const struct bt_trigger_fired *f)
{
	struct recorder *r = ctx;

	pthread_mutex_lock(&r->lock);
	if (r->ntq == RECORDER_TRIGGER_QUEUE) {
		/* The dump thread is this far behind: the hit is counted, not dumped. */
		r->tq_dropped++;
		pthread_mutex_unlock(&r->lock);
		bt_warn("trigger %s: %d trigger dumps already wait for the dump thread; this one is skipped (%" PRIu64
			" so far)", f->name, RECORDER_TRIGGER_QUEUE, r->tq_dropped);
		return;
	}
	r->tq[r->ntq++] = *f;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
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
	bt_triggers_stop(r->triggers);
}

void recorder_triggers_free(struct recorder *r)
{
	bt_triggers_free(r->triggers);
	r->triggers = NULL;
}

int recorder_triggers_pop(struct recorder *r, struct bt_trigger_fired *out)
{
	if (!r->ntq)
		return 0;
	*out = r->tq[0];
	memmove(r->tq, r->tq + 1, --r->ntq * sizeof(r->tq[0]));
	return 1;
}

int recorder_triggers_info(struct recorder *r, const struct bt_trigger_fired *f, struct bt_dump_info *info,
			   struct bt_dump_trigger **tab)
{
	size_t n = bt_triggers_count(r->triggers);
	struct bt_dump_trigger *t;

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
	info->triggers = t;
	info->ntriggers = n;
	info->fired = f;
	info->nfired = f ? 1 : 0;
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
		fprintf(out, "  %s: %s, %" PRIu64 " hits, %" PRIu64 " dumps, %" PRIu64 " skipped, %" PRIu64 " lost\n",
			s->name, s->cond, st.hits, st.dumps, st.skipped, st.lost);
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
