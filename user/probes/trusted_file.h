/* SPDX-License-Identifier: MIT */
/*
 * trusted_file.h - files of other users read without trusting them. A file
 * the recorder maps (libdw maps what it reads) can be truncated by its
 * owner, and a read of the mapping past the new end kills the recorder
 * with SIGBUS; a path found in another process's maps or in a binary's
 * debug link may name a FIFO or a terminal. Files only root can change are
 * used as they are; the others are read through a sealed private copy.
 */
#ifndef BTRACE_TRUSTED_FILE_H
#define BTRACE_TRUSTED_FILE_H
#include <stdint.h>

/* Largest file copied (untrusted files beyond are not read). */
#define BT_TRUSTED_COPY_MAX (256ull << 20)

/* Open path for reading only if it is a regular file: never blocks (FIFO),
 * never becomes a controlling terminal. fd or -errno. */
int bt_open_regular(const char *path);
/* A descriptor of fd's contents that is safe to map: a new descriptor of
 * the same file if only root can change it, else of a sealed memfd copy
 * (at most BT_TRUSTED_COPY_MAX bytes; -EFBIG beyond). fd is not taken.
 * fd or -errno. */
int bt_trusted_fd(int fd);
#endif
