// SPDX-License-Identifier: MIT
/*
 * dump_dir.c - our dumps in the output directory: quota and free space
 * (dump_dir.h).
 *
 * The list is kept oldest first. Before a dump, the quota makes room for
 * the estimated size, but only if the free space then suffices: a dump that
 * will be skipped costs no old dump. After a dump, its real size is counted
 * and the limits are enforced again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "dump_dir.h"
#include "dump_format.h"
#include "log.h"
#include "util.h"

#define EST_SLACK (16u << 10) /* header, section framing, the manifest */
#define AUTO_KEEP_FREE_MAX (1ull << 30)

struct entry {
	char *path;
	dev_t dev, mdev;
	ino_t ino, mino; /* mino 0: no manifest */
	uint64_t size;   /* dump + manifest */
	struct timespec mtime;
};

struct bt_dump_dir {
	struct bt_dump_dir_opts o;
	char *dir;
	struct entry *e;
	size_t n, cap;
	uint64_t bytes;
	uint64_t last_raw, last_size; /* the last dump: raw contents and file size */
	uint64_t pending_raw;         /* raw contents of the dump being written */
	struct bt_dump_dir_stats st;
};

static int starts_with(int dirfd, const char *name, const void *head, size_t len, struct stat *st)
{
	char buf[64];
	int fd;
	ssize_t r;

	if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st->st_mode) || st->st_uid != geteuid())
		return 0;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	r = pread(fd, buf, len, 0);
	close(fd);
	return r == (ssize_t)len && memcmp(buf, head, len) == 0;
}

static int name_is_dump(const char *name)
{
	size_t n = strlen(name);

	return n > 11 && strncmp(name, "btrace-", 7) == 0 && strcmp(name + n - 4, ".btd") == 0;
}

/* Fill e for path (dump and manifest); 0 or -errno if the dump is not ours. */
static int describe(const char *path, struct entry *e)
{
	const char *slash = strrchr(path, '/');
	char mpath[PATH_MAX + 8];
	struct stat st, mst;

	if (!starts_with(AT_FDCWD, path, BTD_MAGIC, BTD_MAGIC_LEN, &st))
		return -ENOENT;
	if (!name_is_dump(slash ? slash + 1 : path))
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->size = (uint64_t)st.st_size;
	e->mtime = st.st_mtim;
	snprintf(mpath, sizeof(mpath), "%s%s", path, BT_MANIFEST_SUFFIX);
	if (starts_with(AT_FDCWD, mpath, BT_MANIFEST_HEAD, strlen(BT_MANIFEST_HEAD), &mst)) {
		e->mdev = mst.st_dev;
		e->mino = mst.st_ino;
		e->size += (uint64_t)mst.st_size;
	}
	e->path = strdup(path);
	return e->path ? 0 : -ENOMEM;
}

static int push(struct bt_dump_dir *d, const struct entry *e)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		struct entry *ne = realloc(d->e, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		d->e = ne;
		d->cap = cap;
	}
	d->e[d->n++] = *e;
	d->bytes += e->size;
	return 0;
}

static int by_age(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->path, y->path);
}

struct bt_dump_dir *bt_dump_dir_open(const struct bt_dump_dir_opts *o, char *err, size_t errlen)
{
	struct bt_dump_dir *d = calloc(1, sizeof(*d));
	struct dirent *de;
	DIR *dir;

	if (!d || !(d->dir = strdup(o->dir))) {
		free(d);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->o = *o;
	d->o.dir = d->dir;
	dir = opendir(d->dir);
	if (!dir && errno == ENOENT)
		return d; /* created once nothing can fail any more (recorder.c): no dumps yet */
	if (!dir) {
		snprintf(err, errlen, "cannot read %s: %s", d->dir, strerror(errno));
		bt_dump_dir_close(d);
		return NULL;
	}
	while ((de = readdir(dir))) {
		char path[PATH_MAX];
		struct entry e;

		if (!name_is_dump(de->d_name) ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", d->dir, de->d_name) >= sizeof(path))
			continue;
		if (describe(path, &e))
			continue;
		if (push(d, &e)) {
			free(e.path);
			break;
		}
	}
	closedir(dir);
	if (d->n)
		qsort(d->e, d->n, sizeof(*d->e), by_age);
	d->st.adopted = d->n;
	return d;
}

void bt_dump_dir_close(struct bt_dump_dir *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->e[i].path);
	free(d->e);
	free(d->dir);
	free(d);
}

/* Unlink path only if it is still the file we counted. */
static void remove_if_same(const char *path, dev_t dev, ino_t ino)
{
	struct stat st;

	if (lstat(path, &st))
		return;
	if (st.st_dev != dev || st.st_ino != ino) {
		bt_log(BT_LOG_WARNING, "not removing %s: it was replaced since the recorder counted it", path);
		return;
	}
	if (unlink(path) && errno != ENOENT)
		bt_log(BT_LOG_WARNING, "cannot remove old dump %s: %s", path, strerror(errno));
}

/* Remove dump i (0 the oldest); why names the limit. */
static void remove_entry(struct bt_dump_dir *d, size_t i, const char *why)
{
	struct entry *e = &d->e[i];
	char mpath[PATH_MAX + 8], s1[32], s2[32];

	remove_if_same(e->path, e->dev, e->ino);
	if (e->mino) {
		snprintf(mpath, sizeof(mpath), "%s%s", e->path, BT_MANIFEST_SUFFIX);
		remove_if_same(mpath, e->mdev, e->mino);
	}
	d->bytes -= e->size;
	d->st.removed++;
	d->st.removed_bytes += e->size;
	bt_log(BT_LOG_NOTICE, "removed dump %s (%s; %s): %zu dump%s, %s kept", e->path,
	       format_size(e->size, s1, sizeof(s1)), why, d->n - 1, d->n == 2 ? "" : "s",
	       format_size(d->bytes, s2, sizeof(s2)));
	free(e->path);
	memmove(d->e + i, d->e + i + 1, (d->n - i - 1) * sizeof(*d->e));
	d->n--;
}

static uint64_t estimate(const struct bt_dump_dir *d, uint64_t raw)
{
	if (d->last_raw && d->last_size) {
		/* The last dump's compression ratio, with a quarter to spare. */
		double r = (double)d->last_size / (double)d->last_raw;
		return (uint64_t)((double)raw * r * 1.25) + EST_SLACK;
	}
	return raw + EST_SLACK;
}

int bt_dump_dir_prepare(struct bt_dump_dir *d, uint64_t raw_bytes, char *why, size_t whylen)
{
	uint64_t est = estimate(d, raw_bytes), avail, total, keep, freed = 0;
	char s1[32], s2[32], s3[32];
	struct statvfs sv;
	size_t evict = 0;

	d->pending_raw = raw_bytes;
	d->st.last_estimate = est;
	if (statvfs(d->dir, &sv)) {
		snprintf(why, whylen, "cannot query the file system of %s: %s", d->dir, strerror(errno));
		return -errno;
	}
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	total = (uint64_t)sv.f_blocks * sv.f_frsize;
	keep = d->o.keep_free;
	if (keep == BT_KEEP_FREE_AUTO) {
		keep = total / 20;
		if (keep > AUTO_KEEP_FREE_MAX)
			keep = AUTO_KEEP_FREE_MAX;
	}
	/* Old dumps the byte quota will remove to make room: their space counts
	 * as free. None for a dump expected to break the quota by itself. */
	if (d->o.max_bytes && est <= d->o.max_bytes)
		while (evict < d->n && d->bytes - freed + est > d->o.max_bytes)
			freed += d->e[evict++].size;
	if (avail + freed < est + keep) {
		d->st.skipped_space++;
		snprintf(why, whylen,
			 "not enough space in %s: %s free%s, the dump needs about %s and %s must stay free (--keep-free)",
			 d->dir, format_size(avail, s1, sizeof(s1)), freed ? " after removing old dumps" : "",
			 format_size(est, s2, sizeof(s2)), format_size(keep, s3, sizeof(s3)));
		return -ENOSPC;
	}
	while (evict--)
		remove_entry(d, 0, "--max-dump-bytes, room for the next dump");
	return 0;
}

int bt_dump_dir_added(struct bt_dump_dir *d, const char *path)
{
	struct entry e;
	char s1[32], s2[32];
	int removed = 0, ret;

	ret = describe(path, &e);
	if (ret)
		return ret;
	d->last_raw = d->pending_raw;
	d->last_size = e.size;
	ret = push(d, &e);
	if (ret) {
		free(e.path);
		return ret;
	}
	if (d->o.max_bytes && e.size > d->o.max_bytes) {
		/* Keeping it would break the quota; the older ones fit. */
		bt_log(BT_LOG_ERR, "dump %s is %s, more than --max-dump-bytes %s by itself: raise the quota",
		       path, format_size(e.size, s1, sizeof(s1)), format_size(d->o.max_bytes, s2, sizeof(s2)));
		d->st.over_quota++;
		remove_entry(d, d->n - 1, "larger than --max-dump-bytes");
		return -EFBIG;
	}
	while ((d->o.max_dumps && d->n > d->o.max_dumps) || (d->o.max_bytes && d->bytes > d->o.max_bytes)) {
		remove_entry(d, 0, d->o.max_dumps && d->n > d->o.max_dumps ? "--max-dumps" : "--max-dump-bytes");
		removed++;
	}
	return removed;
}

void bt_dump_dir_get_stats(const struct bt_dump_dir *d, struct bt_dump_dir_stats *st)
{
	*st = d->st;
	st->count = d->n;
	st->bytes = d->bytes;
}
