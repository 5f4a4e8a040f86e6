/* SPDX-License-Identifier: MIT */
/*
 * stack_symbols.h - names for the frames of a dump's stack table, looked
 * up when the dump is written in what was loaded before (symbol_cache.h: a
 * background thread loads each file as stacks first reference it): kernel
 * frames from a kallsyms snapshot, user frames from the ELF symbols
 * (.symtab, .dynsym, C++ demangled; a separate debug file
 * /usr/lib/debug/.build-id/xx/yyyy.debug when the binary is stripped) and
 * DWARF source lines of the file each mapping was captured from, read
 * through the descriptor the recorder kept (so an exited process or a
 * deleted binary still symbolizes). A dump never waits for a file: frames
 * of files still loading stay unnamed and are counted
 * (BT_STKC_NOT_LOADED_*). Only the symbols some frame references go into
 * the dump.
 *
 * Also marks user stacks the frame-pointer walk did not follow to a
 * thread's start (main's caller in libc, start_thread, clone) as truncated,
 * and cuts what follows such a start (frame-pointer-less libc code leaves
 * garbage above it); not for stacks with frames of files not loaded yet.
 *
 * bt_symbolize: one dump at a time (the recorder's dump lock).
 */
#ifndef BTRACE_STACK_SYMBOLS_H
#define BTRACE_STACK_SYMBOLS_H
#include "dump_stacks.h"

#include <stdint.h>

struct bt_stack_table;
struct bt_symbolizer;
struct bt_symcache_stats;
/* Starts loading the files of t as they appear. debug_dirs: colon-separated
 * directories of separate debug files searched before /usr/lib/debug
 * (--debug-dir), or NULL; source_lines: also the source lines of user
 * frames (SLOC); cache_bytes: memory bound of what is loaded
 * (--symbol-cache, 0 the default). */
struct bt_symbolizer *bt_symbolizer_new(struct bt_stack_table *t, const char *debug_dirs, int source_lines,
					uint64_t cache_bytes);
void bt_symbolizer_free(struct bt_symbolizer *z);
/* Fill s->syms and every frame's sym from what is loaded. Source lines
 * cost DWARF work a loaded file may still need (a unit's line table and
 * functions decoded on first use, its pages read): at most lines_ns of it
 * (0: no bound); past that, frames go without lines, counted
 * (BT_STKC_LINES_LATE). 0 or -ENOMEM. */
int bt_symbolize(struct bt_symbolizer *z, struct bt_dump_stacks *s, uint64_t lines_ns);
/* Wait up to timeout_ms for the files queued now to be loaded (a dump
 * that may wait: asked for by a user, or the last one); 0 or -ETIMEDOUT. */
int bt_symbolizer_settle(struct bt_symbolizer *z, unsigned timeout_ms);
/* The background loads run at the caller's priority while on (a dump's
 * length): see bt_symcache_boost. */
void bt_symbolizer_boost(struct bt_symbolizer *z, int on);
/* What the background loading has done (ctl status). */
void bt_symbolizer_stats(struct bt_symbolizer *z, struct bt_symcache_stats *out);
#endif
