// SPDX-License-Identifier: MIT
/*
 * atomic_file.c - whole-file writes that are never seen half done
 * (atomic_file.h).
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

int bt_write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	char tmp[PATH_MAX], dir[PATH_MAX];
	int fd, r, n;

	if (slash) {
		n = snprintf(tmp, sizeof(tmp), "%.*s/.%s.XXXXXX", (int)(slash - path), path, slash + 1);
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	} else {
		n = snprintf(tmp, sizeof(tmp), ".%s.XXXXXX", path);
		snprintf(dir, sizeof(dir), ".");
	}
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(-r));
		return r;
	}
	r = bt_write_full(fd, data, len);
	if (!r && fsync(fd) < 0 && errno != EINVAL && errno != EROFS)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (r) {
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(-r));
		unlink(tmp);
		return r;
	}
	if (rename(tmp, path) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(-r));
		unlink(tmp);
		return r;
	}
	/* The rename itself reaches the disk; some file systems cannot fsync a
	 * directory, and the data is synced either way. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		if (fsync(fd) < 0) {
			/* nothing to undo: the file is complete */
		}
		close(fd);
	}
	return 0;
}
