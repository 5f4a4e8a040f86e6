/* SPDX-License-Identifier: MIT */
/*
 * prog_misses.h - runs of loaded BPF programs that the kernel skipped: it
 * does not run a program on a CPU where the same program is already running
 * (its tracepoint fired again inside it), and counts the skipped run in the
 * program's recursion_misses. The event is never emitted and takes no seq.
 */
#ifndef BTRACE_PROG_MISSES_H
#define BTRACE_PROG_MISSES_H
#include <stddef.h>
#include <stdint.h>
#include "probe_table.h" /* struct bt_prog_miss: a row of the dump's PMIS section */

struct bpf_object;
/* Name, id and recursion_misses (bpf_obj_get_info_by_fd) of each loaded
 * program of obj, at most max; returns how many were written. */
size_t bt_obj_prog_misses(const struct bpf_object *obj, struct bt_prog_miss *out, size_t max);
#endif
