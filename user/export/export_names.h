/* SPDX-License-Identifier: MIT */
/*
 * export_names.h - a dump's call stacks as every exporter (Perfetto, pprof,
 * JSON) sees them: a frame's function named as report --profile names it,
 * without its ELF symbol version ("memcpy@@GLIBC_2.14" is memcpy: profiles
 * merge by name, and a version is not part of the function), and which
 * stack ids are lost.
 */
#ifndef BTRACE_EXPORT_NAMES_H
#define BTRACE_EXPORT_NAMES_H
#include <stddef.h>
#include <stdint.h>
#include "dump_stacks.h"

/* Length of name without a trailing "@VER" or "@@VER" (VER: an upper-case
 * letter, then letters, digits, '_' and '.'). */
size_t bt_export_sym_len(const char *name);
/* The last part of a path. */
const char *bt_export_base_name(const char *path);
/* Stack id -> its stack; NULL for none (0), lost (BT_STACK_LOST) or out of range. */
const struct bt_dump_stack *bt_export_stack(const struct bt_dump_stacks *s, uint32_t id);
/* Whether id names a stack that could not be had: lost, or its frames never came. */
int bt_export_stack_lost(const struct bt_dump_stacks *s, uint32_t id);
/* The CPU samples' period in ns (--sample's rate; 10 ms where not known). */
uint64_t bt_export_sample_period(const struct bt_dump_stacks *s);
/* Whether a (kernel, user) pair is drawn under a label: a stack lost, or no frame at all. */
int bt_export_pair_labelled(const struct bt_dump_stacks *s, uint32_t kstack, uint32_t ustack);
#endif
