// SPDX-License-Identifier: MIT
/*
 * trusted_file.c - files of other users read without trusting them (see
 * trusted_file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "trusted_file.h"

int bt_open_regular(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOEXEC;
	}
	return fd;
}

/* Only root can truncate or rewrite it (owner root, no group or other
 * write): its mapping cannot be cut under us. */
static int root_only(const struct stat *st)
{
	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

int bt_trusted_fd(int fd)
{
	struct stat st;
	char buf[1 << 16];
	uint64_t done = 0;

	if (fstat(fd, &st) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	if (root_only(&st)) {
		int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		return d < 0 ? -errno : d;
	}
	if ((uint64_t)st.st_size > BT_TRUSTED_COPY_MAX)
		return -EFBIG;
	int m = memfd_create("btrace-copy", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (m < 0)
		return -errno;
	/* pread, not a mapping: a file cut while copied gives a short copy */
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = -errno;
			close(m);
			return e;
		}
		if (n == 0)
			break;
		if (done + (uint64_t)n > BT_TRUSTED_COPY_MAX || write(m, buf, (size_t)n) != n) {
			close(m);
			return done + (uint64_t)n > BT_TRUSTED_COPY_MAX ? -EFBIG : -EIO;
		}
		done += (uint64_t)n;
	}
	/* Sealed: nobody, us included, can change it under a mapping. */
	if (fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
		int e = -errno;
		close(m);
		return e;
	}
	return m;
}
