// SPDX-License-Identifier: MIT
/*
 * manifest.c - the JSON manifest of a dump (manifest.h, docs/manifest.md).
 *
 * The dump is read back whole: its SHA-256 is taken over the same bytes
 * the reader then validates and analyzes, so the manifest describes exactly
 * the file next to it.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/types.h>
#include <openssl/evp.h>
#include "events.h"
#include "atomic_file.h"
#include "dump.h"
#include "event_names.h"
#include "json_str.h"
#include "manifest.h"
#include "version.h"

static int sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char md[32];
	unsigned int mdlen = 0;

	if (!EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
		return -EIO;
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return 0;
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
		kv_u64(o, &g, "lost_in_kernel", s->lost);
		fputs("}", o);
	}
	fputs("]", o);
}

/* Everything but file_size and sha256, which the caller knows. */
static int body_json(FILE *o, const struct bt_dump *d, const struct bt_manifest_trigger *trig,
		     const struct bt_manifest_recorder *rec)
{
	const struct bt_dump_header *h = bt_dump_header(d);
	const struct bt_stats *bs = bt_dump_buffer_stats(d);
	const struct bt_read_stats *rs = bt_dump_read_stats(d);
	const uint64_t *drops = bt_dump_rb_drops(d), *emitted = bt_dump_rb_emitted(d);
	size_t n, ntasks, nprobes, napps, nblocks;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	const struct bt_probe_desc *probes = bt_dump_probes(d, &nprobes);
	const struct bt_dump_app *apps = bt_dump_apps(d, &napps);
	uint32_t nc = h->ncpus, ng = h->ngroups;
	uint64_t by_group[BT_GROUP_MAX] = { 0 }, by_type[BT_EV_MAX] = { 0 }, app_events = 0;
	uint64_t alldrops = 0, allemitted = 0, appc[BT_APPC_MAX] = { 0 };
	size_t nfired;
	const struct bt_trigger_fired *fired = bt_dump_fired(d, &nfired);
	struct bt_seq_window w;
	char b1[64], b2[64];
	int f = 1, g1;

	if (!nfired)
		fired = NULL;

	bt_dump_blocks(d, &nblocks);
	bt_dump_tasks(d, &ntasks);
	if (bt_seq_analyze(ev, n, nc, &w, NULL) < 0)
		return -ENOMEM;
	/* Counted as report --stats counts them: CPUs of the dump only. */
	for (size_t i = 0; i < n; i++) {
		const struct bt_event_hdr *e = ev[i].ev;
		int g = bt_event_group(e->type);

		if (ev[i].app >= 0)
			app_events++;
		if (e->type < BT_EV_MAX)
			by_type[e->type]++;
		if (g >= 0 && e->cpu < nc)
			by_group[g]++;
	}
	for (size_t i = 0; i < (size_t)nc * ng; i++) {
		alldrops += drops[i];
		allemitted += emitted ? emitted[i] : 0;
	}
	for (size_t a = 0; a < napps; a++)
		for (int c = 0; c < BT_APPC_MAX; c++)
			appc[c] += apps[a].counters[c];

	kv_u64(o, &f, "format_version", h->version);
	key(o, &f, "recorder");
	fputs("{", o);
	g1 = 1;
	kv_str(o, &g1, "name", "btrace-bpf", 16);
	kv_str(o, &g1, "version", BT_VERSION, 64);
	kv_u64(o, &g1, "pid", h->recorder_pid);
	if (rec) {
		kv_u64(o, &g1, "dumps_written", rec->dumps_written);
		kv_u64(o, &g1, "dumps_failed", rec->dumps_failed);
		kv_u64(o, &g1, "dumps_skipped_no_space", rec->dumps_skipped_space);
		kv_u64(o, &g1, "dumps_rate_limited", rec->dumps_rate_limited);
		kv_u64(o, &g1, "dumps_removed_by_quota", rec->dumps_removed_quota);
		kv_u64(o, &g1, "on_dump_failed", rec->on_dump_failed);
		kv_u64(o, &g1, "on_dump_skipped", rec->on_dump_skipped);
	}
	fputs("}", o);
	kv_str(o, &f, "host", h->hostname, sizeof(h->hostname));
	kv_str(o, &f, "kernel", h->kernel, sizeof(h->kernel));
	kv_u64(o, &f, "ncpus", nc);
	key(o, &f, "created");
	fputs("{", o);
	g1 = 1;
	kv_str(o, &g1, "utc", utc(h, h->created_boottime_ns, b1, sizeof(b1)), 64);
	kv_u64(o, &g1, "realtime_ns", h->created_realtime_ns);
	kv_u64(o, &g1, "boottime_ns", h->created_boottime_ns);
	fputs("}", o);
	kv_u64(o, &f, "dump_seq", h->dump_seq);
	kv_u64(o, &f, "overlaps_dump", h->overlaps_dump);
	kv_str(o, &f, "reason", h->reason, sizeof(h->reason));
	key(o, &f, "trigger");
	if (trig && trig->spec)
		trigger_json(o, d, trig, NULL);
	else if (fired)
		trigger_json(o, d, NULL, fired);
	else
		fputs("null", o);
	triggers_json(o, &f, d);
	kv_str(o, &f, "clock", h->clock_id == 7 ? "boottime" : "unknown", 16);

	key(o, &f, "buffer");
	fputs("{", o);
	g1 = 1;
	kv_u64(o, &g1, "size", h->buffer_size);
	kv_u64(o, &g1, "block_size", h->block_size);
	kv_u64(o, &g1, "blocks", h->nblocks);
	kv_u64(o, &g1, "active", h->active);
	kv_str(o, &g1, "compression", h->compression ? "zlib" : "none", 8);
	kv_u64(o, &g1, "zlevel", h->zlevel);
	kv_u64(o, &g1, "raw_bytes", h->body_raw_len);
	kv_u64(o, &g1, "blocks_stored", nblocks);
	fputs("}", o);
	key(o, &f, "groups");
	fputs("[", o);
	g1 = 1;
	for (int g = 0; g < BT_GROUP_MAX; g++)
		if (h->groups_enabled & (1u << g)) {
			fputs(g1 ? "" : ", ", o);
			bt_json_str(o, bt_group_name(g), 32);
			g1 = 0;
		}
	fputs("]", o);

	key(o, &f, "time_range");
	if (w.events) {
		fputs("{", o);
		g1 = 1;
		kv_u64(o, &g1, "first_ns", w.first_ts);
		kv_u64(o, &g1, "last_ns", w.last_ts);
		kv_str(o, &g1, "first_utc", utc(h, w.first_ts, b1, sizeof(b1)), 64);
		kv_str(o, &g1, "last_utc", utc(h, w.last_ts, b2, sizeof(b2)), 64);
		kv_secs(o, &g1, "seconds", w.first_ts, w.last_ts);
		fputs("}", o);
		key(o, &f, "continuous_window");
		fputs("{", o);
		g1 = 1;
		kv_u64(o, &g1, "start_ns", w.cont_start_ts);
		kv_u64(o, &g1, "end_ns", w.last_ts);
		kv_str(o, &g1, "start_utc", utc(h, w.cont_start_ts, b1, sizeof(b1)), 64);
		kv_secs(o, &g1, "seconds", w.cont_start_ts, w.last_ts);
		kv_u64(o, &g1, "events", w.cont_events);
		key(o, &g1, "limited_by_cpu");
		if (w.limit_cpu >= 0)
			fprintf(o, "%d", w.limit_cpu);
		else
			fputs("null", o);
		fputs("}", o);
	} else {
		fputs("null", o);
		key(o, &f, "continuous_window");
		fputs("null", o);
	}

	key(o, &f, "events");
	fputs("{", o);
	g1 = 1;
	kv_u64(o, &g1, "total", w.events);
	kv_u64(o, &g1, "app_events", app_events);
	key(o, &g1, "by_group");
	fputs("{", o);
	int g2 = 1;
	for (int g = 0; g < BT_GROUP_MAX; g++)
		kv_u64(o, &g2, bt_group_name(g), by_group[g]);
	fputs("}", o);
	key(o, &g1, "by_type");
	fputs("{", o);
	g2 = 1;
	for (uint32_t t = 0; t < BT_EV_MAX; t++)
		if (by_type[t] && bt_event_name(t))
			kv_u64(o, &g2, bt_event_name(t), by_type[t]);
	fputs("}}", o);

	key(o, &f, "losses");
	fputs("{", o);
	g1 = 1;
	kv_u64(o, &g1, "ring_buffer_drops", alldrops);
	key(o, &g1, "ring_buffer_drops_by_group");
	fputs("{", o);
	g2 = 1;
	for (uint32_t g = 0; g < ng; g++) {
		uint64_t s = 0;
		const char *gn = bt_group_name((int)g);
		char gname[32];

		for (uint32_t c = 0; c < nc; c++)
			s += drops[(size_t)c * ng + g];
		if (!gn) {
			snprintf(gname, sizeof(gname), "group%u", g);
			gn = gname;
		}
		kv_u64(o, &g2, gn, s);
	}
	fputs("}", o);
	key(o, &g1, "ring_buffer_submitted");
	if (emitted)
		fprintf(o, "%" PRIu64, allemitted);
	else
		fputs("null", o);
	kv_u64(o, &g1, "seq_gaps", w.gaps);
	kv_u64(o, &g1, "seq_missing", w.missing);
	kv_u64(o, &g1, "seq_duplicates", w.dups);
	kv_u64(o, &g1, "blocks_read", rs->blocks_read);
	kv_u64(o, &g1, "blocks_lost", rs->blocks_lost);
	kv_u64(o, &g1, "blocks_busy", rs->blocks_busy);
	kv_u64(o, &g1, "blocks_empty", rs->blocks_empty);
	kv_u64(o, &g1, "buffer_entries_written", bs->entries_written);
	kv_u64(o, &g1, "buffer_entries_rejected", bs->entries_rejected);
	kv_u64(o, &g1, "buffer_entries_dropped", bs->entries_dropped);
	kv_u64(o, &g1, "drain_events", h->drain_events);
	kv_u64(o, &g1, "drain_rejected", h->drain_rejected);
	kv_u64(o, &g1, "unknown_events", bt_dump_unknown_events(d));
	key(o, &g1, "apps");
	fputs("{", o);
	g2 = 1;
	for (int c = 0; c < BT_APPC_MAX; c++)
		if (c != BT_APPC_BUFFER_SIZE)
			kv_u64(o, &g2, bt_app_counter_name(c), appc[c]);
	fputs("}}", o);

	key(o, &f, "tables");
	fputs("{", o);
	g1 = 1;
	kv_u64(o, &g1, "tasks", ntasks);
	kv_u64(o, &g1, "probes", nprobes);
	kv_u64(o, &g1, "apps", napps);
	fputs("}", o);
	key(o, &f, "probes");
	fputs("[", o);
	for (size_t i = 0; i < nprobes; i++) {
		fputs(i ? ", " : "", o);
		bt_json_str(o, probes[i].spec, sizeof(probes[i].spec));
	}
	fputs("]", o);
	key(o, &f, "apps");
	fputs("[", o);
	for (size_t i = 0; i < napps; i++) {
		fprintf(o, "%s{\"pid\": %u, \"name\": ", i ? ", " : "", apps[i].pid);
		bt_json_str(o, apps[i].name, sizeof(apps[i].name));
		fprintf(o, ", \"events\": %" PRIu64 "}", apps[i].counters[BT_APPC_ENTRIES]);
	}
	fputs("]", o);
	return 0;
}

/* The manifest text of the dump at path into a malloc'd buffer. */
static int build(const char *path, const struct bt_manifest_trigger *trig, const struct bt_manifest_recorder *rec,
		 char **text, size_t *tlen, char *err, size_t errlen)
{
	size_t len = 0;
	unsigned char *data = NULL;
	struct bt_dump *d = NULL;
	char sha[65], derr[256];
	const char *base = strrchr(path, '/');
	FILE *o = NULL;
	int r;

	*text = NULL;
	FILE *f = fopen(path, "rbe");
	if (!f) {
		r = -errno;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-r));
		return r;
	}
	if (fseek(f, 0, SEEK_END) == 0) {
		long l = ftell(f);
		len = l > 0 ? (size_t)l : 0;
		rewind(f);
	}
	data = malloc(len ? len : 1);
	if (!data || fread(data, 1, len, f) != len) {
		r = data ? -EIO : -ENOMEM;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-r));
		fclose(f);
		free(data);
		return r;
	}
	fclose(f);
	if (sha256_hex(data, len, sha)) {
		snprintf(err, errlen, "SHA-256 of %s failed", path);
		free(data);
		return -EIO;
	}
	d = bt_dump_open_mem(data, len, derr, sizeof(derr));
	if (!d) {
		r = -(errno ? errno : EINVAL);
		snprintf(err, errlen, "%s does not read back: %s", path, derr);
		free(data);
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
	fprintf(o, ", \"file_size\": %zu, \"sha256\": \"%s\", ", len, sha);
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
	bt_dump_close(d);
	free(data);
	return r;
}

int bt_manifest_write(const char *dump_path, const struct bt_manifest_trigger *trig,
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
	r = build(dump_path, trig, rec, &text, &tlen, err, errlen);
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
	int r = build(dump_path, trig, rec, &text, &tlen, err, errlen);

	if (r)
		return r;
	if (fwrite(text, 1, tlen, out) != tlen)
		r = -EIO;
	free(text);
	return r;
}
