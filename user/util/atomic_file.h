/* SPDX-License-Identifier: MIT */
/*
 * atomic_file.h - write a file so that readers see the old file, or the
 * complete new one, never a part: a temporary file next to it (mode 0600),
 * fsync, rename, fsync of the directory. Nothing is left behind on failure.
 */
#ifndef BTRACE_ATOMIC_FILE_H
#define BTRACE_ATOMIC_FILE_H
#include <stddef.h>

/* Create the temporary file for path (".NAME.XXXXXX" next to it, its name
 * into tmp): an fd, or -errno with a message in err. */
int bt_atomic_create(const char *path, char *tmp, size_t tmplen, char *err, size_t errlen);
/* Sync and close fd, and rename tmp to path: 0, or -errno with a message in
 * err (tmp removed). */
int bt_atomic_commit(int fd, const char *tmp, const char *path, char *err, size_t errlen);
/* Give up: close fd and remove tmp. */
void bt_atomic_abort(int fd, const char *tmp);

/* The whole file at once: 0, or -errno with a message in err. */
int bt_write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);
#endif
