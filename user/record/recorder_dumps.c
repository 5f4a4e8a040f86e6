// SPDX-License-Identifier: MIT
/*
 * recorder_dumps.c - writing the recorder's dumps, one at a time (for the
 * dump thread and for the control socket), and rotation of old dump files
 * (--max-dumps).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "events.h"
#include "btrace_buffer.h"
#include "event_names.h"
#include "dump.h"
#include "loader.h"
#include "tasks.h"
#include "uprobes.h"
#include "util.h"
#include "recorder.h"
#include "ctl.h"
#include "app_registry.h"
#include "app_reader.h"

#define FLUSH_TIMEOUT_MS 2000

static int write_dump(struct recorder *r, const char *reason, const char *explicit_path, char *why,
		      size_t whylen);

/* Keep at most --max-dumps of the files this recorder generated. */
static void rotate(struct recorder *r, const char *path)
{
	char **k = realloc(r->kept, (r->nkept + 1) * sizeof(*k));

	if (!k || !(k[r->nkept] = strdup(path))) {
		r->kept = k ? k : r->kept;
		return;
	}
	r->kept = k;
	r->nkept++;
	while (r->o->max_dumps && r->nkept > r->o->max_dumps) {
		if (unlink(r->kept[0]) && errno != ENOENT)
			bt_warn("cannot remove old dump %s: %s", r->kept[0], strerror(errno));
		else
			bt_info("removed old dump %s (--max-dumps %" PRIu64 ")", r->kept[0], r->o->max_dumps);
		free(r->kept[0]);
		memmove(r->kept, r->kept + 1, --r->nkept * sizeof(*r->kept));
	}
}

size_t recorder_prog_misses(struct recorder *r, struct bt_prog_miss **out)
{
	size_t max = 64 + (r->uprobes ? 8 : 0), n;
	struct bt_prog_miss *pm = calloc(max, sizeof(*pm));

	*out = pm;
	if (!pm)
		return 0;
	n = bt_loader_prog_misses(r->loader, pm, max);
	if (r->uprobes)
		n += bt_uprobes_prog_misses(r->uprobes, pm + n, max - n);
	return n;
}

int recorder_write_dump(struct recorder *r, const char *reason, const char *explicit_path, char *out,
			size_t outlen, char *why, size_t whylen)
{
	int ret;

	pthread_mutex_lock(&r->dump_serial);
	ret = write_dump(r, reason, explicit_path, why, whylen);
	if (ret == 0 && out)
		snprintf(out, outlen, "%s", r->last_path);
	pthread_mutex_unlock(&r->dump_serial);
	return ret;
}

static int write_dump(struct recorder *r, const char *reason, const char *explicit_path, char *why, size_t whylen)
{
	size_t ncells = (size_t)r->ncpus * BT_GROUP_MAX, ntasks = 0;
	uint64_t *drops = calloc(ncells, sizeof(*drops));
	uint64_t *emitted = calloc(ncells, sizeof(*emitted));
	struct bt_task *tasks = NULL;
	struct bt_prog_miss *pmiss = NULL;
	struct bt_drain_stats ds;
	struct bt_read_stats rst;
	struct bt_dump_info info;
	struct bt_stats bs;
	char path[PATH_MAX], err[512], sz[32];
	uint64_t t0 = bt_now_ns(), bytes;
	struct stat st;
	int ret;

	memset(&info, 0, sizeof(info));
	memset(&rst, 0, sizeof(rst));
	if (!drops || !emitted) {
		ret = -ENOMEM;
		snprintf(err, sizeof(err), "out of memory");
		goto out;
	}
	/* Events the kernel emitted before the request may still sit in the
	 * BPF ring: bring them into the buffer first. */
	if (bt_loader_flush(r->loader, FLUSH_TIMEOUT_MS))
		bt_warn("the drain is %ums behind under this load: the dump may miss the newest events",
			FLUSH_TIMEOUT_MS);
	ret = bt_loader_read_cpu_state(r->loader, drops, emitted, NULL);
	if (ret)
		bt_warn("cannot read the per-CPU loss counters: %s", strerror(-ret));
	ret = bt_tasks_snapshot(r->tasks, &tasks, &ntasks);
	if (ret) {
		snprintf(err, sizeof(err), "cannot copy the task table: %s", strerror(-ret));
		goto out;
	}
	bt_loader_drain_stats(r->loader, &ds);
	bt_buffer_stats(r->buf, &bs);
	bytes = bs.bytes_written + bs.padding_bytes;

	info.ncpus = r->ncpus;
	info.ngroups = BT_GROUP_MAX;
	info.rb_drops = drops;
	info.rb_emitted = emitted;
	info.tasks = tasks;
	info.ntasks = ntasks;
	info.dump_seq = r->last_seq + 1;
	/* The previous dump's window may overlap this one unless the buffer
	 * has been overwritten completely since. */
	info.overlaps_dump = r->last_seq && bytes - r->last_bytes < bs.size ? r->last_seq : 0;
	info.reason = reason;
	info.drain_events = ds.events;
	info.drain_rejected = ds.rejected;
	info.groups_enabled = bt_loader_groups(r->loader);
	if (r->uprobes) {
		info.probes = bt_uprobes_table(r->uprobes, &info.nprobes);
		info.groups_enabled |= 1u << BT_GROUP_UPROBE;
	}
	if (r->apps) {
		info.write_apps = bt_apps_dump;
		info.apps_ctx = r->apps;
	}
	info.nprog_misses = recorder_prog_misses(r, &pmiss);
	info.prog_misses = pmiss;

	err[0] = '\0';
	ret = bt_dump_write(r->buf, &info, r->o->output_dir, explicit_path, r->o->zlevel, path, sizeof(path),
			    &rst, err, sizeof(err));
out:
	if (ret) {
		pthread_mutex_lock(&r->lock);
		r->nfailed++;
		pthread_mutex_unlock(&r->lock);
		if (why)
			snprintf(why, whylen, "dump failed: %s", err[0] ? err : strerror(-ret));
		bt_warn("dump failed: %s%s%s", err[0] ? err : strerror(-ret),
			ret == -ENOSPC || ret == -EDQUOT ?
				" (free space there or choose another directory with -o)" : "",
			strcmp(reason, "exit") ? "; recording continues" : "");
	} else {
		r->last_seq = info.dump_seq;
		r->last_bytes = bytes;
		pthread_mutex_lock(&r->lock); /* what status shows, without waiting for a dump */
		r->ndumps++;
		snprintf(r->last_path, sizeof(r->last_path), "%s", path);
		pthread_mutex_unlock(&r->lock);
		if (!explicit_path)
			rotate(r, path);
		if (stat(path, &st))
			st.st_size = 0;
		bt_warn("dump %" PRIu64 " written to %s (%s, %" PRIu64 " events, %s, %.2fs)",
			info.dump_seq, path, reason, rst.entries,
			format_size((uint64_t)st.st_size, sz, sizeof(sz)),
			(double)(bt_now_ns() - t0) / 1e9);
	}
	free(tasks);
	free(pmiss);
	free(drops);
	free(emitted);
	return ret;
}
