/* SPDX-License-Identifier: MIT */
/*
 * stack_srclines.h - the source lines a dump's stack table carries (SLOC),
 * gathered while its frames are symbolized: each distinct (mapping, lookup
 * offset) is asked of its file's DWARF once per dump, and what DWARF says
 * is copied, so the DWARF handle may be closed before the dump is written.
 */
#ifndef BTRACE_STACK_SRCLINES_H
#define BTRACE_STACK_SRCLINES_H
#include <stdint.h>

struct bt_dump_stacks;
struct bt_dwarf;
struct bt_srclines;

struct bt_srclines *bt_srclines_new(void);
/* The lines of (map, off), off being link-time address vaddr in dw's file.
 * 1 if DWARF knows it: *func is the function holding it (valid until the
 * next call), *entry the file offset of its entry (0 unknown); else 0. */
int bt_srclines_add(struct bt_srclines *ls, struct bt_dwarf *dw, uint32_t map, uint64_t off, uint64_t vaddr,
		    uint64_t *entry, const char **func);
/* Whether (map, off) was added: then *func and *entry as above. */
int bt_srclines_find(struct bt_srclines *ls, uint32_t map, uint64_t off, uint64_t *entry, const char **func);
/* Move what was gathered into s (sorted, owned by s) and free ls. 0, or
 * -errno: s then has no source lines. s NULL: only free ls. */
int bt_srclines_finish(struct bt_srclines *ls, struct bt_dump_stacks *s);
#endif
