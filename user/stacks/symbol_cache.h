/* SPDX-License-Identifier: MIT */
/*
 * symbol_cache.h - the symbols and DWARF of the files stacks reference,
 * loaded ahead of the dumps: a background thread at the lowest priority
 * (nice 19) loads each mapped file of the stack table as it
 * first appears (ELF symbols, its separate debug file's, its DWARF), once
 * per build-id whatever the processes mapping it, within a memory bound
 * (least recently used files closed first). A dump only looks up what is
 * loaded: it never reads a big file; a file not loaded yet is reported as
 * such (the dump says how many frames it could not name for that reason).
 *
 * Files are read as stack_symbols.c read them: through the descriptor the
 * recorder kept, or the path if it is still the same regular file with the
 * captured build-id (trusted_file.c, debug_file.c: no mapping of files
 * others can change, bounded reads).
 */
#ifndef BTRACE_SYMBOL_CACHE_H
#define BTRACE_SYMBOL_CACHE_H
#include <stdint.h>

struct bt_stack_table;
struct bt_elf_file;
struct bt_dwarf;
struct bt_kallsyms;

#define BT_SYMCACHE_DEFAULT_BYTES (256ull << 20) /* --symbol-cache */

/* A loaded file. Valid while the caller holds the cache (bt_symcache_hold). */
struct bt_symfile {
	struct bt_elf_file *ef;  /* the mapped file's symbols (NULL: not ELF, or gone) */
	struct bt_elf_file *dbg; /* its separate debug file's, when it has no .symtab */
	struct bt_dwarf *dw;     /* its DWARF (NULL: none found, or source lines off) */
};

struct bt_symcache;
/* Loads the files of table t (debug_dirs: --debug-dir; source_lines: also
 * DWARF) in a thread of its own, within max_bytes. NULL if out of memory
 * or no thread. */
struct bt_symcache *bt_symcache_new(struct bt_stack_table *t, const char *debug_dirs, int source_lines,
				    uint64_t max_bytes);
void bt_symcache_free(struct bt_symcache *c);

/* A dump's lookups: between hold and release nothing is loaded, evicted or
 * freed (the thread waits), and the entries returned stay valid. */
void bt_symcache_hold(struct bt_symcache *c);
void bt_symcache_release(struct bt_symcache *c);
/* Map id map's file: loaded (1, *out filled), loading or queued (0: the
 * dump goes without it), or unreadable (-1: never will be). Under hold. */
int bt_symcache_get(struct bt_symcache *c, uint32_t map, const struct bt_symfile **out);
/* The kernel's symbols (loaded by the thread once stacks arrive), NULL
 * until then (*pending 1) or if unreadable. Under hold. */
struct bt_kallsyms *bt_symcache_kallsyms(struct bt_symcache *c, int *pending);

/* Before a dump that may wait (not a trigger's): wait up to timeout_ms for
 * the files queued now to be loaded, the thread raised to the caller's
 * priority meanwhile. 0 when nothing is left, -ETIMEDOUT (the dump goes
 * with what is loaded). Not under hold. */
int bt_symcache_settle(struct bt_symcache *c, unsigned timeout_ms);

/* on 1: the loading thread runs at the caller's priority until the
 * matching call with on 0 (nested calls count). A dump holds it for its
 * whole length: at nice 19 on a busy machine the loader waits seconds for
 * a CPU, and what it holds meanwhile, the cache's lock or the process's
 * memory-map lock (a fault, an mmap of a load), the dump would wait for
 * too (1.5 s in munmap seen under clang load). One caller at a time. */
void bt_symcache_boost(struct bt_symcache *c, int on);

struct bt_symcache_stats {
	uint64_t files, loaded, failed, evicted, bytes, max_bytes;
	uint64_t lines_ahead;   /* source-line lookups of new frames done before any dump asked */
	uint64_t dump_units;    /* DWARF units dumps had to decode themselves */
	uint64_t lines_dropped; /* new frames not looked up ahead (more came than the queue holds) */
};
void bt_symcache_stats(struct bt_symcache *c, struct bt_symcache_stats *out);
#endif
