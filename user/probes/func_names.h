/* SPDX-License-Identifier: MIT */
/*
 * func_names.h - names of code addresses of one process, through its
 * executable mappings (captured while it lives, kept after it exits) and
 * the ELF symbols of the mapped files (elf_symbols.c), C++ demangled.
 */
#ifndef BTRACE_FUNC_NAMES_H
#define BTRACE_FUNC_NAMES_H
#include <stdint.h>

struct bt_func_names;

/* Capture pid's executable mappings now. NULL if out of memory (a process
 * already gone gives an empty table). */
struct bt_func_names *bt_func_names_new(int pid);
/* Read the mappings again (libraries loaded since); keeps the old ones if
 * the process is gone. 0 or -errno. */
int bt_func_names_refresh(struct bt_func_names *fn);
/* A forked child gone before its mappings were read: its parent's, which
 * it had at fork. Only when fn has none; 0 or -errno. */
int bt_func_names_inherit(struct bt_func_names *fn, const struct bt_func_names *from);
/* The function starting at or containing addr ("ns::f(int)", or
 * "sym+0x10"); NULL if no mapping or symbol covers it. Valid until free. */
const char *bt_func_names_get(struct bt_func_names *fn, uint64_t addr);
void bt_func_names_free(struct bt_func_names *fn);
#endif
