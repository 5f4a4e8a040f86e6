// SPDX-License-Identifier: MIT
/*
 * manifest.c - the JSON manifest of a dump (manifest.h, docs/manifest.md).
 *
 * The counts come from the dump's summary (dump.h, dump_stream.c): the
 * writer's, taken from the body as it was written, or one read of the file
 * that keeps no event. Either passes every section through the reader's
 * checks, so a manifest agrees with `report --stats`; neither holds the
 * body (issue 36: reading it back whole cost 15x the application buffer
 * and seconds after "written"). The SHA-256 is taken over the file a chunk
 * at a time, from the page cache the dump was just written to.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/types.h>
#include <openssl/evp.h>
#include "events.h"
#include "atomic_file.h"
#include "dump.h"
#include "event_names.h"
#include "func_batch.h"
#include "json_str.h"
#include "manifest.h"
#include "version.h"

/* SHA-256 of the file at fd, read a MiB at a time; its length in *len. */
static int sha256_fd(int fd, uint64_t *len, char out[65])
{
	enum { CHUNK = 1 << 20 };
	unsigned char md[32], *buf = malloc(CHUNK);
	unsigned int mdlen = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	uint64_t off = 0;
	int r = -EIO;

	if (!buf || !c) {
		r = -ENOMEM;
		goto out;
	}
	if (!EVP_DigestInit_ex(c, EVP_sha256(), NULL))
		goto out;
	for (;;) {
		ssize_t n = pread(fd, buf, CHUNK, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			goto out;
		}
		if (n == 0)
			break;
		if (!EVP_DigestUpdate(c, buf, (size_t)n))
			goto out;
		off += (uint64_t)n;
	}
	if (!EVP_DigestFinal_ex(c, md, &mdlen) || mdlen != 32)
		goto out;
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	*len = off;
	r = 0;
out:
	EVP_MD_CTX_free(c);
	free(buf);
	return r;
}

/* Event time (CLOCK_BOOTTIME ns) as UTC, ISO 8601 with microseconds. */
static const char *utc(const struct bt_dump_header *h, uint64_t ts, char *buf, size_t len)
{
	int64_t w = (int64_t)(ts + (h->created_realtime_ns - h->created_boottime_ns));
	time_t sec = (time_t)(w / 1000000000);
	long us = (long)((w % 1000000000) / 1000);
	struct tm tm;
	char d[32];

	if (us < 0)
		us += 1000000, sec--;
	if (!gmtime_r(&sec, &tm) || !strftime(d, sizeof(d), "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(d, sizeof(d), "%lld", (long long)sec);
	snprintf(buf, len, "%s.%06ldZ", d, us);
	return buf;
}

static void key(FILE *o, int *first, const char *k)
{
	fprintf(o, "%s\"%s\": ", *first ? "" : ", ", k);
	*first = 0;
}

static void kv_u64(FILE *o, int *first, const char *k, uint64_t v)
{
	key(o, first, k);
	fprintf(o, "%" PRIu64, v);
}

/* v, or null when it was not counted */
static void kv_u64_known(FILE *o, int *first, const char *k, int known, uint64_t v)
{
	key(o, first, k);
	if (known)
		fprintf(o, "%" PRIu64, v);
	else
		fputs("null", o);
}

static void kv_str(FILE *o, int *first, const char *k, const char *v, size_t max)
{
	key(o, first, k);
	bt_json_str(o, v, max);
}

static void kv_secs(FILE *o, int *first, const char *k, uint64_t a, uint64_t b)
{
	uint64_t d = b > a ? b - a : 0;

	key(o, first, k);
	fprintf(o, "%" PRIu64 ".%09" PRIu64, d / 1000000000u, d % 1000000000u);
}

/* The trigger: the recorder's word for it (t), else the hit the dump's TRIG
 * section names (f). */
static void trigger_json(FILE *o, const struct bt_dump *d, const struct bt_manifest_trigger *t,
			 const struct bt_trigger_fired *f)
{
	const struct bt_dump_header *h = bt_dump_header(d);
	size_t ntasks;
	const struct bt_task *tasks = bt_dump_tasks(d, &ntasks);
	const struct bt_task *task = NULL;
	char b[64], desc[256];
	uint32_t tid = t ? t->tid : f->tid;
	uint64_t ts = t ? t->ts_ns : f->ts_ns;
	int first = 1;

	for (size_t i = 0; i < ntasks; i++)
		if (tasks[i].tid == tid)
			task = &tasks[i];
	fputs("{", o);
	kv_str(o, &first, "spec", t ? t->spec : f->cond, 256);
	if (!t) {
		kv_str(o, &first, "name", f->name, sizeof(f->name));
		kv_str(o, &first, "description", bt_trigger_describe(f, desc, sizeof(desc)), sizeof(desc));
		kv_u64(o, &first, "value", f->value);
	}
	key(o, &first, "event");
	fputs("{", o);
	first = 1;
	kv_u64(o, &first, "ts_ns", ts);
	kv_str(o, &first, "utc", utc(h, ts, b, sizeof(b)), 64);
	kv_u64(o, &first, "tid", tid);
	if (task) {
		kv_u64(o, &first, "pid", task->tgid);
		kv_str(o, &first, "comm", task->comm, sizeof(task->comm));
	} else if (!t && f->tgid) {
		kv_u64(o, &first, "pid", f->tgid);
		kv_str(o, &first, "comm", f->comm, sizeof(f->comm));
	}
	fputs("}}", o);
}

/* "trigger_hits": every hit the dump names (the first started it, the
 * others were merged into it); "triggers": how every hit of each trigger
 * ended, as the dump's trigger table counts them. */
static void triggers_json(FILE *o, int *f, const struct bt_dump *d)
{
	size_t nt, nf;
	const struct bt_dump_trigger *t = bt_dump_triggers(d, &nt);
	const struct bt_trigger_fired *fired = bt_dump_fired(d, &nf);

	key(o, f, "trigger_hits");
	fputs("[", o);
	for (size_t i = 0; i < nf; i++) {
		fputs(i ? ", " : "", o);
		trigger_json(o, d, NULL, &fired[i]);
	}
	fputs("]", o);
	/* merged hits past the 64 named: counted, so the list is not taken
	 * for all of them */
	uint64_t unnamed = 0;
	for (size_t i = 0; i < nt; i++)
		unnamed += t[i].unnamed;
	key(o, f, "trigger_hits_not_named");
	fprintf(o, "%" PRIu64, unnamed);
	key(o, f, "triggers");
	fputs("[", o);
	for (size_t i = 0; i < nt; i++) {
		const struct bt_trigger_stats *s = &t[i].st;
		int g = 1;

		fputs(i ? ", {" : "{", o);
		kv_str(o, &g, "name", t[i].name, sizeof(t[i].name));
		kv_str(o, &g, "spec", t[i].cond, sizeof(t[i].cond));
		kv_u64(o, &g, "hits", s->hits);
		kv_u64(o, &g, "dumped", s->dumps);
		kv_u64(o, &g, "merged", s->merged);
		kv_u64(o, &g, "rate_limited", s->limited);
		kv_u64(o, &g, "dropped", s->dropped);
		kv_u64(o, &g, "pending", s->pending);
		kv_u64(o, &g, "hits_not_named", t[i].unnamed);
		kv_u64(o, &g, "lost_in_kernel", s->lost);
		fputs("}", o);
	}
	fputs("]", o);
}

/* "k": { — the caller fills the object with *g (first member) and closes it. */
static void obj_open(FILE *o, int *first, const char *k, int *g)
{
	key(o, first, k);
	fputs("{", o);
	*g = 1;
}

/* What body_json counts over the dump's events, rings and applications. */
struct manifest_counts {
	struct bt_seq_window w;
	uint64_t by_group[BT_GROUP_MAX], by_type[BT_EV_MAX], app_events;
	uint64_t alldrops, allemitted, appc[BT_APPC_MAX];
};

static int count_dump(const struct bt_dump *d, struct manifest_counts *c)
{
	const struct bt_dump_header *h = bt_dump_header(d);
	const struct bt_dump_summary *sum = bt_dump_summary(d);
	const uint64_t *drops = bt_dump_rb_drops(d), *emitted = bt_dump_rb_emitted(d);
	size_t napps;
	const struct bt_dump_app *apps = bt_dump_apps(d, &napps);
	uint32_t nc = h->ncpus, ng = h->ngroups;

	memset(c, 0, sizeof(*c));
	if (!sum)
		return -EINVAL; /* a dump opened whole: the counts are a summary's */
	/* Counted as report --stats counts them (dump_stream.c). */
	c->w = sum->w;
	memcpy(c->by_group, sum->by_group, sizeof(c->by_group));
	memcpy(c->by_type, sum->by_type, sizeof(c->by_type));
	c->app_events = sum->app_events;
	for (size_t i = 0; i < (size_t)nc * ng; i++) {
		c->alldrops += drops[i];
		c->allemitted += emitted ? emitted[i] : 0;
	}
	for (size_t a = 0; a < napps; a++)
		for (int k = 0; k < BT_APPC_MAX; k++)
			c->appc[k] += apps[a].counters[k];
	return 0;
}

static void recorder_json(FILE *o, int *f, const struct bt_dump_header *h, const struct bt_manifest_recorder *rec)
{
	int g;

	obj_open(o, f, "recorder", &g);
	kv_str(o, &g, "name", "btrace-bpf", 16);
	kv_str(o, &g, "version", BT_VERSION, 64);
	kv_u64(o, &g, "pid", h->recorder_pid);
	if (rec) {
		kv_u64(o, &g, "dumps_written", rec->dumps_written);
		kv_u64(o, &g, "dumps_failed", rec->dumps_failed);
		kv_u64(o, &g, "dumps_skipped_no_space", rec->dumps_skipped_space);
		kv_u64(o, &g, "dumps_rate_limited", rec->dumps_rate_limited);
		kv_u64(o, &g, "dumps_removed_by_quota", rec->dumps_removed_quota);
		kv_u64(o, &g, "on_dump_failed", rec->on_dump_failed);
		kv_u64(o, &g, "on_dump_skipped", rec->on_dump_skipped);
	}
	fputs("}", o);
}

/* host ... reason, the trigger and the triggers' table, the clock. */
static void origin_json(FILE *o, int *f, const struct bt_dump *d, const struct bt_manifest_trigger *trig)
{
	const struct bt_dump_header *h = bt_dump_header(d);
	size_t nfired;
	const struct bt_trigger_fired *fired = bt_dump_fired(d, &nfired);
	char b[64];
	int g;

	kv_str(o, f, "host", h->hostname, sizeof(h->hostname));
	kv_str(o, f, "kernel", h->kernel, sizeof(h->kernel));
	kv_u64(o, f, "ncpus", h->ncpus);
	obj_open(o, f, "created", &g);
	kv_str(o, &g, "utc", utc(h, h->created_boottime_ns, b, sizeof(b)), 64);
	kv_u64(o, &g, "realtime_ns", h->created_realtime_ns);
	kv_u64(o, &g, "boottime_ns", h->created_boottime_ns);
	fputs("}", o);
	kv_u64(o, f, "dump_seq", h->dump_seq);
	kv_u64(o, f, "overlaps_dump", h->overlaps_dump);
	kv_str(o, f, "reason", h->reason, sizeof(h->reason));
	key(o, f, "trigger");
	if (trig && trig->spec)
		trigger_json(o, d, trig, NULL);
	else if (nfired)
		trigger_json(o, d, NULL, fired);
	else
		fputs("null", o);
	triggers_json(o, f, d);
	kv_str(o, f, "clock", h->clock_id == 7 ? "boottime" : "unknown", 16);
}

static void buffer_json(FILE *o, int *f, const struct bt_dump *d)
{
	const struct bt_dump_header *h = bt_dump_header(d);
	size_t nblocks;
	int g;

	bt_dump_blocks(d, &nblocks);
	obj_open(o, f, "buffer", &g);
	kv_u64(o, &g, "size", h->buffer_size);
	kv_u64(o, &g, "block_size", h->block_size);
	kv_u64(o, &g, "blocks", h->nblocks);
	kv_u64(o, &g, "active", h->active);
	kv_str(o, &g, "compression", h->compression ? "zlib" : "none", 8);
	kv_u64(o, &g, "zlevel", h->zlevel);
	kv_u64(o, &g, "raw_bytes", h->body_raw_len);
	kv_u64(o, &g, "blocks_stored", nblocks);
	fputs("}", o);
	key(o, f, "groups");
	fputs("[", o);
	g = 1;
	for (int i = 0; i < BT_GROUP_MAX; i++)
		if (h->groups_enabled & (1u << i)) {
			fputs(g ? "" : ", ", o);
			bt_json_str(o, bt_group_name(i), 32);
			g = 0;
		}
	fputs("]", o);
}

/* time_range and continuous_window, both null without events. */
static void window_json(FILE *o, int *f, const struct bt_dump_header *h, const struct bt_seq_window *w)
{
	char b1[64], b2[64];
	int g;

	if (!w->events) {
		key(o, f, "time_range");
		fputs("null", o);
		key(o, f, "continuous_window");
		fputs("null", o);
		return;
	}
	obj_open(o, f, "time_range", &g);
	kv_u64(o, &g, "first_ns", w->first_ts);
	kv_u64(o, &g, "last_ns", w->last_ts);
	kv_str(o, &g, "first_utc", utc(h, w->first_ts, b1, sizeof(b1)), 64);
	kv_str(o, &g, "last_utc", utc(h, w->last_ts, b2, sizeof(b2)), 64);
	kv_secs(o, &g, "seconds", w->first_ts, w->last_ts);
	fputs("}", o);
	obj_open(o, f, "continuous_window", &g);
	kv_u64(o, &g, "start_ns", w->cont_start_ts);
	kv_u64(o, &g, "end_ns", w->last_ts);
	kv_str(o, &g, "start_utc", utc(h, w->cont_start_ts, b1, sizeof(b1)), 64);
	kv_secs(o, &g, "seconds", w->cont_start_ts, w->last_ts);
	kv_u64(o, &g, "events", w->cont_events);
	key(o, &g, "limited_by_cpu");
	if (w->limit_cpu >= 0)
		fprintf(o, "%d", w->limit_cpu);
	else
		fputs("null", o);
	fputs("}", o);
}

static void events_json(FILE *o, int *f, const struct manifest_counts *c)
{
	int g, g2;

	obj_open(o, f, "events", &g);
	kv_u64(o, &g, "total", c->w.events);
	kv_u64(o, &g, "app_events", c->app_events);
	obj_open(o, &g, "by_group", &g2);
	for (int i = 0; i < BT_GROUP_MAX; i++)
		kv_u64(o, &g2, bt_group_name(i), c->by_group[i]);
	fputs("}", o);
	obj_open(o, &g, "by_type", &g2);
	for (uint32_t t = 0; t < BT_EV_MAX; t++)
		if (c->by_type[t] && bt_event_name(t))
			kv_u64(o, &g2, bt_event_name(t), c->by_type[t]);
	fputs("}}", o);
}

/* cold_tier: null without one; else what of the dump it gave and
 * whether its CPU budget held it back (docs/manifest.md). */
static void cold_json(FILE *o, int *f, const struct bt_dump *d, const struct bt_seq_window *w)
{
	const struct bt_dump_cold *c = bt_dump_cold(d);
	struct bt_dump_cold_share sh;
	int g;

	if (!c) {
		key(o, f, "cold_tier");
		fputs("null", o);
		return;
	}
	bt_dump_cold_share(d, w, &sh);
	obj_open(o, f, "cold_tier", &g);
	kv_str(o, &g, "codec", c->codec == 1 ? "lz4" : c->codec == 2 ? "zstd" : "unknown", 16);
	kv_u64(o, &g, "events_from_tier", sh.events);
	key(o, &g, "share_of_events");
	fprintf(o, "%.4f", sh.share_events);
	key(o, &g, "window_seconds_from_tier");
	fprintf(o, "%.6f", sh.tier_window_s);
	key(o, &g, "cpu_budget_pct");
	fprintf(o, "%.2f", (double)c->budget_ppm / 1e4);
	key(o, &g, "budget_bound");
	fputs(sh.budget_bound ? "true" : "false", o);
	kv_u64(o, &g, "held_back", c->held_back);
	kv_u64(o, &g, "blocks_stored_uncompressed", c->blocks_raw);
	kv_u64(o, &g, "gaps", c->gaps);
	if (c->has_parts) {
		kv_u64(o, &g, "blocks_from_tier", c->dumped);
		kv_u64(o, &g, "blocks_from_tier_uncompressed", c->dumped_raw);
		key(o, &g, "share_compressed");
		fprintf(o, "%.4f", sh.share_compressed);
		kv_u64(o, &g, "blocks_cut_behind_hole", c->blocks_cut);
		key(o, &g, "copy_cpu_seconds");
		fprintf(o, "%.6f", (double)c->copy_ns / 1e9);
	}
	fputs("}", o);
}

static void losses_json(FILE *o, int *f, const struct bt_dump *d, const struct manifest_counts *c)
{
	const struct bt_dump_header *h = bt_dump_header(d);
	const struct bt_stats *bs = bt_dump_buffer_stats(d);
	const struct bt_read_stats *rs = bt_dump_read_stats(d);
	const uint64_t *drops = bt_dump_rb_drops(d);
	uint32_t nc = h->ncpus, ng = h->ngroups;
	int g, g2;

	obj_open(o, f, "losses", &g);
	kv_u64(o, &g, "ring_buffer_drops", c->alldrops);
	obj_open(o, &g, "ring_buffer_drops_by_group", &g2);
	for (uint32_t i = 0; i < ng; i++) {
		uint64_t s = 0;
		const char *gn = bt_group_name((int)i);
		char gname[32];

		for (uint32_t cpu = 0; cpu < nc; cpu++)
			s += drops[(size_t)cpu * ng + i];
		if (!gn) {
			snprintf(gname, sizeof(gname), "group%u", i);
			gn = gname;
		}
		kv_u64(o, &g2, gn, s);
	}
	fputs("}", o);
	key(o, &g, "ring_buffer_submitted");
	if (bt_dump_rb_emitted(d))
		fprintf(o, "%" PRIu64, c->allemitted);
	else
		fputs("null", o);
	kv_u64(o, &g, "seq_gaps", c->w.gaps);
	kv_u64(o, &g, "seq_missing", c->w.missing);
	kv_u64(o, &g, "seq_duplicates", c->w.dups);
	kv_u64(o, &g, "blocks_read", rs->blocks_read);
	kv_u64(o, &g, "blocks_lost", rs->blocks_lost);
	kv_u64(o, &g, "blocks_busy", rs->blocks_busy);
	kv_u64(o, &g, "blocks_empty", rs->blocks_empty);
	kv_u64(o, &g, "buffer_entries_written", bs->entries_written);
	kv_u64(o, &g, "buffer_entries_rejected", bs->entries_rejected);
	kv_u64(o, &g, "buffer_entries_dropped", bs->entries_dropped);
	kv_u64(o, &g, "drain_events", h->drain_events);
	kv_u64(o, &g, "drain_rejected", h->drain_rejected);
	kv_u64(o, &g, "unknown_events", bt_dump_unknown_events(d));
	const struct bt_dump_handed *ho = bt_dump_handed(d);
	if (ho) {
		obj_open(o, &g, "handed", &g2);
		kv_u64(o, &g2, "blocks_refused", ho->blocks_refused);
		kv_u64(o, &g2, "blocks_cut", ho->blocks_cut);
		kv_u64(o, &g2, "batches_refused", ho->batches_refused);
		kv_u64_known(o, &g2, "after_newest", ho->tail_known, ho->after_newest);
		fputs("}", o);
	}
	const struct bt_dump_restart *rst = bt_dump_restart(d);
	if (rst) {
		obj_open(o, &g, "restart", &g2);
		kv_str(o, &g2, "reason", rst->reason, 64);
		kv_u64(o, &g2, "prior_events", rst->events);
		kv_u64(o, &g2, "prior_blocks", rst->blocks);
		kv_u64(o, &g2, "blocks_left", rst->blocks_left);
		kv_u64(o, &g2, "not_recording_ns", rst->resumed_ts > rst->newest_ts ? rst->resumed_ts - rst->newest_ts : 0);
		kv_u64_known(o, &g2, "lost", rst->lost_known, rst->lost);
		fputs("}", o);
	}
	obj_open(o, &g, "apps", &g2);
	for (int k = 0; k < BT_APPC_MAX; k++)
		if (k != BT_APPC_BUFFER_SIZE)
			kv_u64(o, &g2, bt_app_counter_name(k), c->appc[k]);
	fputs("}}", o);
}

/* tables, probes, apps. */
static void tables_json(FILE *o, int *f, const struct bt_dump *d)
{
	size_t ntasks, nprobes, napps;
	const struct bt_probe_desc *probes = bt_dump_probes(d, &nprobes);
	const struct bt_dump_app *apps = bt_dump_apps(d, &napps);
	int g;

	bt_dump_tasks(d, &ntasks);
	obj_open(o, f, "tables", &g);
	kv_u64(o, &g, "tasks", ntasks);
	kv_u64(o, &g, "probes", nprobes);
	kv_u64(o, &g, "apps", napps);
	fputs("}", o);
	key(o, f, "probes");
	fputs("[", o);
	for (size_t i = 0; i < nprobes; i++) {
		fputs(i ? ", " : "", o);
		bt_json_str(o, probes[i].spec, sizeof(probes[i].spec));
	}
	fputs("]", o);
	key(o, f, "apps");
	fputs("[", o);
	for (size_t i = 0; i < napps; i++) {
		fprintf(o, "%s{\"pid\": %u, \"name\": ", i ? ", " : "", apps[i].pid);
		bt_json_str(o, apps[i].name, sizeof(apps[i].name));
		fprintf(o, ", \"events\": %" PRIu64 "}", apps[i].counters[BT_APPC_ENTRIES]);
	}
	fputs("]", o);
}

/* Everything but file_size and sha256, which the caller knows, in the
 * order of docs/manifest.md. */
static int body_json(FILE *o, const struct bt_dump *d, const struct bt_manifest_trigger *trig,
		     const struct bt_manifest_recorder *rec)
{
	const struct bt_dump_header *h = bt_dump_header(d);
	struct manifest_counts c;
	int f = 1;

	if (count_dump(d, &c) < 0)
		return -ENOMEM;
	kv_u64(o, &f, "format_version", h->version);
	recorder_json(o, &f, h, rec);
	origin_json(o, &f, d, trig);
	buffer_json(o, &f, d);
	window_json(o, &f, h, &c.w);
	events_json(o, &f, &c);
	losses_json(o, &f, d, &c);
	cold_json(o, &f, d, &c.w);
	tables_json(o, &f, d);
	return 0;
}

/* The manifest text of the dump at path into a malloc'd buffer, from its
 * summary sum (the writer's), else from one read of the file in bounded
 * memory (bt_dump_open_summary). */
static int build(const char *path, const struct bt_dump *sum, const struct bt_manifest_trigger *trig,
		 const struct bt_manifest_recorder *rec, char **text, size_t *tlen, char *err, size_t errlen)
{
	uint64_t len = 0;
	struct bt_dump *opened = NULL;
	const struct bt_dump *d = sum;
	char sha[65], derr[256];
	const char *base = strrchr(path, '/');
	FILE *o = NULL;
	int r;

	*text = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-r));
		return r;
	}
	struct stat st;
	/* Anything but a file: the reader's refusal says what it is. */
	r = fstat(fd, &st) < 0 ? -errno : !S_ISREG(st.st_mode) ? 1 : sha256_fd(fd, &len, sha);
	close(fd);
	if (r == 1) {
		opened = bt_dump_open_summary(path, derr, sizeof(derr));
		bt_dump_close(opened);
		snprintf(err, errlen, "%s does not read back: %s", path, derr);
		return -EINVAL;
	}
	if (r) {
		snprintf(err, errlen, "cannot read %s: %s", path, r == -EIO ? "SHA-256 failed" : strerror(-r));
		return r;
	}
	if (!d) {
		d = opened = bt_dump_open_summary(path, derr, sizeof(derr));
		if (!d) {
			r = -(errno ? errno : EINVAL);
			snprintf(err, errlen, "%s does not read back: %s", path, derr);
			return r;
		}
	}
	if (bt_dump_header(d)->file_size != len) {
		r = -EBUSY; /* the checksum would not be of the file described */
		snprintf(err, errlen, "%s changed while its manifest was made", path);
		bt_dump_close(opened);
		return r;
	}
	o = open_memstream(text, tlen);
	if (!o) {
		r = -ENOMEM;
		goto out;
	}
	/* The first key is what dump_dir.c recognizes a manifest by. */
	fprintf(o, "%s %d, \"dump\": ", BT_MANIFEST_HEAD, BT_MANIFEST_VERSION);
	bt_json_str(o, base ? base + 1 : path, PATH_MAX);
	fprintf(o, ", \"file_size\": %" PRIu64 ", \"sha256\": \"%s\", ", len, sha);
	r = body_json(o, d, trig, rec);
	fputs("}\n", o);
	if (fclose(o) && !r)
		r = -ENOMEM;
	o = NULL;
out:
	if (r) {
		snprintf(err, errlen, "manifest of %s: %s", path, strerror(-r));
		free(*text);
		*text = NULL;
	}
	bt_dump_close(opened);
	return r;
}

int bt_manifest_write(const char *dump_path, const struct bt_dump *sum, const struct bt_manifest_trigger *trig,
		      const struct bt_manifest_recorder *rec, char *err, size_t errlen)
{
	char mpath[PATH_MAX];
	char *text;
	size_t tlen;
	int r;

	if ((size_t)snprintf(mpath, sizeof(mpath), "%s%s", dump_path, BT_MANIFEST_SUFFIX) >= sizeof(mpath)) {
		snprintf(err, errlen, "%s: path too long", dump_path);
		return -ENAMETOOLONG;
	}
	r = build(dump_path, sum, trig, rec, &text, &tlen, err, errlen);
	if (r)
		return r;
	r = bt_write_file_atomic(mpath, text, tlen, err, errlen);
	free(text);
	return r;
}

int bt_manifest_print(FILE *out, const char *dump_path, const struct bt_manifest_trigger *trig,
		      const struct bt_manifest_recorder *rec, char *err, size_t errlen)
{
	char *text;
	size_t tlen;
	int r = build(dump_path, NULL, trig, rec, &text, &tlen, err, errlen);

	if (r)
		return r;
	if (fwrite(text, 1, tlen, out) != tlen)
		r = -EIO;
	free(text);
	return r;
}
