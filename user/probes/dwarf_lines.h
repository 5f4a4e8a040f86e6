/* SPDX-License-Identifier: MIT */
/*
 * dwarf_lines.h - source locations of code addresses from DWARF (elfutils'
 * libdw): the line table gives the innermost file:line, the DIEs around
 * the address the chain of inlined calls out to the function holding them.
 * The DWARF is the file's own or its separate debug file's (debug_file.h);
 * files other users can change are read through a private copy
 * (trusted_file.h).
 */
#ifndef BTRACE_DWARF_LINES_H
#define BTRACE_DWARF_LINES_H
#include <stdint.h>

struct bt_dwarf;

/* The DWARF of the ELF file at descriptor fd (not taken): `path` is where
 * its process mapped it (debug links are looked for next to it), build_id
 * what it was captured with (len 0: none; a file whose build-id is not
 * this one is refused: it changed since), debug_dirs as in debug_file.h.
 * NULL if the file cannot be read or no DWARF is found for it. */
struct bt_dwarf *bt_dwarf_open(int fd, const char *path, const uint8_t *build_id, uint32_t len,
			       const char *debug_dirs);
void bt_dwarf_close(struct bt_dwarf *dw);

struct bt_src_line {
	const char *file; /* as DWARF names it */
	const char *func; /* the function this line is in: inlined callee, last the outer one; NULL unknown */
	uint32_t line, col; /* 0: unknown */
};

/* The locations of link-time address vaddr, innermost first, at most max
 * (a deeper chain keeps its outer end); their count, 0 if DWARF does not
 * cover it. Strings stay valid until close; names are demangled (C++).
 * *entry: the link-time entry address of the outermost function, 0
 * unknown. */
int bt_dwarf_lookup(struct bt_dwarf *dw, uint64_t vaddr, struct bt_src_line *out, int max, uint64_t *entry);
/* Units whose functions and lines a lookup has decoded so far (the first
 * lookup in a unit pays for it; the next ones only search). */
uint64_t bt_dwarf_units_indexed(const struct bt_dwarf *dw);
/* Bytes of debug sections in the files it opened (0 for NULL). */
uint64_t bt_dwarf_debug_bytes(const struct bt_dwarf *dw);
/* Whether a lookup of vaddr only searches (its unit decoded, or no unit
 * holds it): the first lookup in a unit is the one that allocates. */
int bt_dwarf_decoded_at(const struct bt_dwarf *dw, uint64_t vaddr);
#endif
