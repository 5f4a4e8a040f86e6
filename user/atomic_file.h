/* SPDX-License-Identifier: MIT */
/*
 * atomic_file.h - write a whole file so that readers see the old file, or
 * the complete new one, never a part: temporary file next to it, fsync,
 * rename, fsync of the directory. Nothing is left behind on failure.
 */
#ifndef BTRACE_ATOMIC_FILE_H
#define BTRACE_ATOMIC_FILE_H
#include <stddef.h>

/* 0, or -errno with a message in err. The file gets mode 0600. */
int bt_write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);
#endif
