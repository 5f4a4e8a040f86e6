/* SPDX-License-Identifier: MIT */
/*
 * debug_file.h - the separate debug file of a stripped ELF file, found the
 * way gdb and perf look for it, but without trusting the binary: by
 * build-id in DIR/.build-id/xx/yyyy.debug for each DIR of --debug-dir then
 * /usr/lib/debug, else by .gnu_debuglink (a plain file name, never a path)
 * next to the binary, in its .debug/ and under /usr/lib/debug, checked to
 * carry the same build-id. Never asks a debuginfod server.
 */
#ifndef BTRACE_DEBUG_FILE_H
#define BTRACE_DEBUG_FILE_H
#include <stdint.h>

/* The debug file of the binary at `path` (as its process mapped it) with
 * that build-id (len 0: none) and debug link (NULL: none); debug_dirs:
 * colon-separated, or NULL. A descriptor safe to map
 * (bt_trusted_fd), its path in *found (malloc'd), or -errno (-ENOENT: none
 * found). */
int bt_debug_file_open(const char *path, const uint8_t *build_id, uint32_t len, const char *debuglink,
		       const char *debug_dirs, char **found);
#endif
