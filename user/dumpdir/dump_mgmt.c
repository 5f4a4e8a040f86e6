// SPDX-License-Identifier: MIT
/*
 * dump_mgmt.c - space, quota, manifest and --on-dump around each dump
 * (dump_mgmt.h).
 */
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dump_dir.h"
#include "dump_mgmt.h"
#include "log.h"
#include "manifest.h"
#include "on_dump.h"
#include "util.h"

struct bt_dump_mgmt {
	/* dir and manifests_failed: the dump writer changes them, ctl status
	 * reads them; short sections only (never a dump or a manifest). */
	pthread_mutex_t lock;
	struct bt_dump_dir *dir;
	struct bt_hooks *hooks; /* NULL without --on-dump */
	uint64_t manifests_failed;
	uint64_t max_dumps, max_bytes;
};

struct bt_dump_mgmt *bt_dump_mgmt_new(const struct bt_dump_mgmt_opts *o, char *err, size_t errlen)
{
	struct bt_dump_mgmt *m = calloc(1, sizeof(*m));
	struct bt_dump_dir_opts dopts = {
		.dir = o->dir, .max_dumps = o->max_dumps, .max_bytes = o->max_bytes, .keep_free = o->keep_free,
	};

	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	m->max_dumps = o->max_dumps;
	m->max_bytes = o->max_bytes;
	m->dir = bt_dump_dir_open(&dopts, err, errlen);
	if (!m->dir) {
		free(m);
		return NULL;
	}
	if (o->on_dump) {
		m->hooks = bt_hooks_new(o->on_dump, o->on_dump_timeout_ns);
		if (!m->hooks) {
			snprintf(err, errlen, "cannot start the --on-dump thread: %s", strerror(errno));
			bt_dump_dir_close(m->dir);
			free(m);
			return NULL;
		}
	}
	if (o->max_dumps || o->max_bytes) {
		struct bt_dump_dir_stats st;
		char s1[32], s2[32];

		bt_dump_dir_get_stats(m->dir, &st);
		if (st.adopted)
			bt_log(BT_LOG_NOTICE, "%" PRIu64 " earlier dump%s in %s (%s) count toward the quota (%s%s%s)",
			       st.adopted, st.adopted == 1 ? "" : "s", o->dir, format_size(st.bytes, s1, sizeof(s1)),
			       o->max_dumps ? "--max-dumps" : "", o->max_dumps && o->max_bytes ? ", " : "",
			       o->max_bytes ? format_size(o->max_bytes, s2, sizeof(s2)) : "");
	}
	return m;
}

void bt_dump_mgmt_destroy(struct bt_dump_mgmt *m)
{
	if (!m)
		return;
	bt_hooks_destroy(m->hooks);
	bt_dump_dir_close(m->dir);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

int bt_dump_mgmt_before(struct bt_dump_mgmt *m, uint64_t raw_bytes, char *why, size_t whylen)
{
	int r;

	pthread_mutex_lock(&m->lock);
	r = bt_dump_dir_prepare(m->dir, raw_bytes, why, whylen);
	pthread_mutex_unlock(&m->lock);
	return r;
}

int bt_dump_mgmt_after(struct bt_dump_mgmt *m, const char *path, const struct bt_dump *sum, int in_dir,
		       const char *reason, const struct bt_manifest_trigger *trig, struct bt_manifest_recorder *rec)
{
	struct bt_dump_dir_stats ds;
	struct bt_hook_stats hs = { 0 };
	char err[512], mpath[PATH_MAX + 8];
	int have_manifest, r;

	pthread_mutex_lock(&m->lock);
	bt_dump_dir_get_stats(m->dir, &ds);
	pthread_mutex_unlock(&m->lock);
	if (m->hooks)
		bt_hooks_get_stats(m->hooks, &hs);
	rec->dumps_skipped_space = ds.skipped_space;
	rec->dumps_removed_quota = ds.removed;
	rec->on_dump_failed = hs.failed;
	rec->on_dump_skipped = hs.skipped;
	r = bt_manifest_write(path, sum, trig, rec, err, sizeof(err));
	have_manifest = r == 0;
	if (r) {
		pthread_mutex_lock(&m->lock);
		m->manifests_failed++;
		pthread_mutex_unlock(&m->lock);
		bt_log(BT_LOG_ERR, "no manifest for %s: %s", path, err);
	}
	if (in_dir) {
		/* The quota counts the manifest with its dump. */
		pthread_mutex_lock(&m->lock);
		r = bt_dump_dir_added(m->dir, path);
		pthread_mutex_unlock(&m->lock);
		if (r == -EFBIG)
			return r;
	}
	if (m->hooks) {
		snprintf(mpath, sizeof(mpath), "%s%s", path, BT_MANIFEST_SUFFIX);
		bt_hooks_run(m->hooks, path, have_manifest ? mpath : NULL, reason);
	}
	return 0;
}

void bt_dump_mgmt_status(struct bt_dump_mgmt *m, FILE *out)
{
	struct bt_dump_dir_stats ds;
	char s1[32], s2[32], s3[32];

	uint64_t mfailed;

	pthread_mutex_lock(&m->lock);
	bt_dump_dir_get_stats(m->dir, &ds);
	mfailed = m->manifests_failed;
	pthread_mutex_unlock(&m->lock);
	fprintf(out, "dump directory: %" PRIu64 " dump%s, %s", ds.count, ds.count == 1 ? "" : "s",
		format_size(ds.bytes, s1, sizeof(s1)));
	if (m->max_bytes)
		fprintf(out, " of %s (--max-dump-bytes)", format_size(m->max_bytes, s2, sizeof(s2)));
	if (m->max_dumps)
		fprintf(out, ", at most %" PRIu64 " (--max-dumps)", m->max_dumps);
	fprintf(out, "; %" PRIu64 " removed by the quota (%s), %" PRIu64 " larger than the quota, %" PRIu64
		" skipped for lack of space, %" PRIu64 " manifests failed\n",
		ds.removed, format_size(ds.removed_bytes, s3, sizeof(s3)), ds.over_quota, ds.skipped_space,
		mfailed);
	if (m->hooks) {
		struct bt_hook_stats hs;

		bt_hooks_get_stats(m->hooks, &hs);
		fprintf(out, "on-dump: %" PRIu64 " started, %" PRIu64 " succeeded, %" PRIu64 " failed (%" PRIu64
			" timed out), %" PRIu64 " skipped, %u running\n",
			hs.started, hs.succeeded, hs.failed, hs.timed_out, hs.skipped, hs.running);
	}
}

