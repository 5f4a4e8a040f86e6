/* SPDX-License-Identifier: MIT */
/*
 * dwarf_lines.h - source locations of code addresses from DWARF, through
 * elfutils' libdwfl: the line table gives the innermost file:line, the
 * scopes around the address give the chain of inlined calls out to the
 * function that holds them. The debug information is looked for in the
 * file itself, then, as gdb and perf do, in a separate debug file found by
 * build-id (DIR/.build-id/xx/yyyy.debug) or .gnu_debuglink in the
 * directories given, /usr/lib/debug by default; dwz's shared files are
 * followed.
 */
#ifndef BTRACE_DWARF_LINES_H
#define BTRACE_DWARF_LINES_H
#include <stdint.h>

struct bt_dwarf;

/* Open the debug information of the ELF file at descriptor fd (not taken;
 * `name` names it in searches, usually its path). debug_dirs: a
 * colon-separated list of directories searched before /usr/lib/debug, or
 * NULL. NULL if the file cannot be read as ELF; an opened file may still
 * have no DWARF (bt_dwarf_lookup then finds nothing). */
struct bt_dwarf *bt_dwarf_open(int fd, const char *name, const char *debug_dirs);
void bt_dwarf_close(struct bt_dwarf *dw);
/* Whether DWARF was found (in the file or a debug file). */
int bt_dwarf_has_info(const struct bt_dwarf *dw);
/* The separate debug file found for it, NULL if none (the file itself has
 * its DWARF, or nothing was found). Valid until close. */
const char *bt_dwarf_debug_file(struct bt_dwarf *dw);

struct bt_src_line {
	const char *file; /* as DWARF names it (joined to the compilation directory) */
	const char *func; /* the function this line is in: inlined callee, last the outer one; NULL unknown */
	uint32_t line, col;
};

/* The locations of link-time address vaddr, innermost first, at most max;
 * their count, 0 if DWARF does not cover it. Strings stay valid until
 * close. Names are demangled (C++). *entry: the link-time entry address of
 * the outermost function, 0 unknown. */
int bt_dwarf_lookup(struct bt_dwarf *dw, uint64_t vaddr, struct bt_src_line *out, int max, uint64_t *entry);
#endif
