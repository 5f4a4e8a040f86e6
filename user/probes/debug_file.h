/* SPDX-License-Identifier: MIT */
/*
 * debug_file.h - the separate debug file of a stripped ELF file, found the
 * way gdb and perf look for it, but without trusting the binary: by
 * build-id in DIR/.build-id/xx/yyyy.debug for each DIR of --debug-dir then
 * /usr/lib/debug, else by .gnu_debuglink (a plain file name, never a path)
 * next to the binary, in its .debug/ and under /usr/lib/debug, checked to
 * carry the same build-id, or the CRC the link records when the binary has
 * none. Only regular files are ever opened (trusted_file.h). Never asks a
 * debuginfod server.
 */
#ifndef BTRACE_DEBUG_FILE_H
#define BTRACE_DEBUG_FILE_H
#include <stdint.h>

/* The debug file of the binary at `path` (as its process mapped it; NULL:
 * by build-id only) with that build-id (len 0: none; at most 20 bytes
 * compared, as captured) and debug link (NULL: none) with its crc;
 * debug_dirs: colon-separated, or NULL. A read-only descriptor, its path
 * in *found (malloc'd; found may be NULL), or -errno (-ENOENT: none found). */
int bt_debug_file_open(const char *path, const uint8_t *build_id, uint32_t len, const char *debuglink,
		       uint32_t crc, const char *debug_dirs, char **found);
#endif
