/* SPDX-License-Identifier: MIT */
/*
 * kallsyms.h - a snapshot of the kernel's text symbols (/proc/kallsyms,
 * modules included, their names as "func [module]"), taken when recording
 * starts, for naming kernel stack frames at dump time.
 */
#ifndef BTRACE_KALLSYMS_H
#define BTRACE_KALLSYMS_H
#include <stdint.h>
#include <stdio.h>

struct bt_kallsyms;
/* NULL + errno if /proc/kallsyms cannot be read or shows no addresses
 * (kptr_restrict without root). */
struct bt_kallsyms *bt_kallsyms_load(void);
/* The same from a stream in /proc/kallsyms's format (tests). */
struct bt_kallsyms *bt_kallsyms_read(FILE *f);
void bt_kallsyms_free(struct bt_kallsyms *k);
/* The symbol containing addr: its name, start and size (to the next
 * symbol); NULL if none. */
const char *bt_kallsyms_find(const struct bt_kallsyms *k, uint64_t addr, uint64_t *start, uint64_t *size);
#endif
