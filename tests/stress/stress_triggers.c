// SPDX-License-Identifier: MIT
/*
 * stress_triggers.c - the trigger thread (user/triggers/triggers.c) under
 * concurrent hits: 8 threads fire user-space triggers (ctl, app:NAME) as
 * fast as they can for STRESS_SECONDS while the trigger thread delays, rate
 * limits and hands dumps to a callback (which, like the recorder, tells
 * how the hits ended); statistics are read concurrently. After the stop
 * (which hands on the hits still in their delay) every hit is accounted
 * for exactly once per trigger:
 *   hits == dumps + merged + limited + dropped, nothing pending,
 * the callback saw exactly `dumps` dumps and `merged` merged hits, each for
 * its own trigger, never two dumps of one trigger closer than its limit. Built plain, with TSan and with
 * ASan/UBSan (no kernel needed: only user-space kinds are configured).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "triggers.h"
#include "util.h"

#define NTRIG 3
#define NTHREADS 8

static struct bt_triggers *tr;
static atomic_int stop;
static atomic_ulong seen[NTRIG], seen_merged[NTRIG];
static uint64_t last_due[NTRIG]; /* callback only (the trigger thread) */
static atomic_int too_close, wrong;
static struct bt_trigger_spec spec[NTRIG];

static void on_dump(void *ctx, const struct bt_trigger_fired *f, size_t n, uint64_t unnamed)
{
	(void)ctx;
	if (f->trig >= NTRIG || strcmp(f->name, spec[f->trig].name)) {
		atomic_fetch_add(&wrong, 1);
		return;
	}
	for (size_t k = 1; k < n; k++)
		if (f[k].trig != f->trig)
			atomic_fetch_add(&wrong, 1);
	/* as the recorder does once the dump is written */
	bt_triggers_account(tr, f->trig, 1, n - 1 + unnamed, 0);
	atomic_fetch_add(&seen_merged[f->trig], n - 1 + unnamed);
	if (last_due[f->trig] && f->seen_ns - last_due[f->trig] < spec[f->trig].limit_ns)
		atomic_fetch_add(&too_close, 1);
	last_due[f->trig] = f->seen_ns;
	atomic_fetch_add(&seen[f->trig], 1);
}

static void *firer(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg, n = 0;

	while (!atomic_load(&stop)) {
		if (k & 1)
			bt_triggers_app(tr, "stall", BT_TRIG_APP, 0, 0, k, 1, "firer");
		else
			bt_triggers_hit(tr, n % 2 ? 0 : 2, BT_TRIG_CTL, 0, 0, 0, 0, NULL);
		if (++n % 64 == 0) {
			struct bt_trigger_stats st;

			bt_triggers_stats(tr, n % NTRIG, &st); /* readers race the thread */
		}
	}
	return NULL;
}

static void test_concurrent_hits(void)
{
	const char *sec = getenv("STRESS_SECONDS");
	double secs = sec ? atof(sec) : 2;
	static const char *const specs[NTRIG] = { "ctl,name=a,limit=2ms", "app:stall,limit=5ms,after=1ms",
						  "ctl,name=c,limit=0,after=0" };
	pthread_t th[NTHREADS];
	char err[256];

	if (secs > 3)
		secs = 3;
	for (int i = 0; i < NTRIG; i++)
		REQUIRE(bt_trigger_parse(specs[i], &spec[i], err, sizeof(err)) == 0, "%s", err);
	REQUIRE(bt_trigger_finish(spec, NTRIG, 0, 0, err, sizeof(err)) == 0, "%s", err);
	tr = bt_triggers_start(spec, NTRIG, -1, -1, on_dump, NULL, err, sizeof(err));
	REQUIRE(tr, "start: %s", err);
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, firer, (void *)(uintptr_t)i);
	struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	/* the stop takes what is queued and hands on what waits for after= */
	bt_triggers_stop(tr);
	for (int i = 0; i < NTRIG; i++) {
		struct bt_trigger_stats st;

		bt_triggers_stats(tr, (size_t)i, &st);
		printf("# trigger %s: %lu hits = %lu dumps + %lu merged + %lu limited + %lu dropped + %lu pending; "
		       "callback saw %lu dumps, %lu merged\n",
		       spec[i].name, (unsigned long)st.hits, (unsigned long)st.dumps, (unsigned long)st.merged,
		       (unsigned long)st.limited, (unsigned long)st.dropped, (unsigned long)st.pending,
		       (unsigned long)atomic_load(&seen[i]), (unsigned long)atomic_load(&seen_merged[i]));
		CHECK(st.hits > 100, "%s: only %lu hits", spec[i].name, (unsigned long)st.hits);
		CHECK(st.dumps + st.merged + st.limited + st.dropped == st.hits && st.pending == 0,
		      "%s: %lu dumps + %lu merged + %lu limited + %lu dropped != %lu hits (%lu pending)", spec[i].name,
		      (unsigned long)st.dumps, (unsigned long)st.merged, (unsigned long)st.limited,
		      (unsigned long)st.dropped, (unsigned long)st.hits, (unsigned long)st.pending);
		CHECK(st.skipped == st.merged + st.limited, "%s: skipped is not merged + limited", spec[i].name);
		CHECK(atomic_load(&seen[i]) == st.dumps, "%s: callback saw %lu of %lu dumps", spec[i].name,
		      (unsigned long)atomic_load(&seen[i]), (unsigned long)st.dumps);
		CHECK(atomic_load(&seen_merged[i]) == st.merged, "%s: callback saw %lu of %lu merged", spec[i].name,
		      (unsigned long)atomic_load(&seen_merged[i]), (unsigned long)st.merged);
		CHECK(st.dumps > 0, "%s: no dump", spec[i].name);
	}
	CHECK(!atomic_load(&too_close), "%d dumps closer than their trigger's limit", atomic_load(&too_close));
	CHECK(!atomic_load(&wrong), "%d dumps of an unknown trigger", atomic_load(&wrong));
	bt_triggers_hit(tr, 0, BT_TRIG_CTL, 0, 0, 0, 0, NULL); /* ignored after stop */
	bt_triggers_free(tr);
}

int main(void)
{
	RUN(test_concurrent_hits);
	return h_nfail_tests ? 1 : 0;
}
