// SPDX-License-Identifier: MIT
/*
 * atomic_file.c - files that are never seen half written (atomic_file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "atomic_file.h"
#include "util.h"

int bt_atomic_create(const char *path, char *tmp, size_t tmplen, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	int fd, n;

	/* Next to the target, so rename() stays within one file system. */
	if (slash)
		n = snprintf(tmp, tmplen, "%.*s/.%s.XXXXXX", (int)(slash - path), path, slash + 1);
	else
		n = snprintf(tmp, tmplen, ".%s.XXXXXX", path);
	if (n < 0 || (size_t)n >= tmplen) {
		snprintf(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		n = -errno;
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(-n));
		return n;
	}
	return fd;
}

void bt_atomic_abort(int fd, const char *tmp)
{
	if (fd >= 0)
		close(fd);
	unlink(tmp);
}

int bt_atomic_commit(int fd, const char *tmp, const char *path, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	int r = 0, dfd;

	if (fsync(fd) < 0 && errno != EINVAL && errno != EROFS)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (r) {
		snprintf(err, errlen, "write error on %s: %s", tmp, strerror(-r));
		unlink(tmp);
		return r;
	}
	if (rename(tmp, path) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(-r));
		unlink(tmp);
		return r;
	}
	/* The rename itself reaches the disk (a file system that cannot sync a
	 * directory still has the file complete). */
	snprintf(dir, sizeof(dir), "%.*s", slash ? (slash == path ? 1 : (int)(slash - path)) : 1,
		 slash ? path : ".");
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		if (fsync(dfd) < 0) {
			/* nothing to undo */
		}
		close(dfd);
	}
	return 0;
}

int bt_write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	int fd = bt_atomic_create(path, tmp, sizeof(tmp), err, errlen), r;

	if (fd < 0)
		return fd;
	r = bt_write_full(fd, data, len);
	if (r) {
		snprintf(err, errlen, "write error on %s: %s", tmp, strerror(-r));
		bt_atomic_abort(fd, tmp);
		return r;
	}
	return bt_atomic_commit(fd, tmp, path, err, errlen);
}
