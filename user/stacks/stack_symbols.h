/* SPDX-License-Identifier: MIT */
/*
 * stack_symbols.h - names for the frames of a dump's stack table, resolved
 * when the dump is written: kernel frames from the kallsyms snapshot taken
 * at start, user frames from the ELF symbols (.symtab, .dynsym, C++
 * demangled; a separate debug file /usr/lib/debug/.build-id/xx/yyyy.debug
 * when the binary is stripped) of the file each mapping was captured from,
 * read through the descriptor the recorder kept (so an exited process or a
 * deleted binary still symbolizes). Only the symbols some frame references
 * go into the dump.
 *
 * Also marks user stacks the frame-pointer walk did not follow to a
 * thread's start (main's caller in libc, start_thread, clone) as truncated,
 * and cuts what follows such a start (frame-pointer-less libc code leaves
 * garbage above it).
 *
 * Dump thread only (it caches the loaded files between dumps).
 */
#ifndef BTRACE_STACK_SYMBOLS_H
#define BTRACE_STACK_SYMBOLS_H
#include "dump_stacks.h"

struct bt_stack_table;
struct bt_symbolizer;
/* debug_dirs: colon-separated directories of separate debug files searched
 * before /usr/lib/debug (--debug-dir), or NULL; source_lines: also the
 * source lines of user frames (SLOC). */
struct bt_symbolizer *bt_symbolizer_new(const char *debug_dirs, int source_lines);
void bt_symbolizer_free(struct bt_symbolizer *z);
/* Fill s->syms and every frame's sym; t provides the files' descriptors.
 * 0 or -ENOMEM. */
int bt_symbolize(struct bt_symbolizer *z, struct bt_stack_table *t, struct bt_dump_stacks *s);
#endif
