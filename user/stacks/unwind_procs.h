/* SPDX-License-Identifier: MIT */
/*
 * unwind_procs.h - the recorder's side of the BPF unwinder
 * (bpf/unwind_walk.bpf.h, docs/unwinding.md): a thread that compiles each
 * binary's .eh_frame once (by device and inode, shared with every file of
 * the same build-id) into the rows array the BPF programs read, and
 * writes each process's executable mappings into the per-process map: all
 * processes at start, then each one the BPF side asks for (a process seen
 * for the first time, exec'd, or running code in a mapping it did not know:
 * a library dlopen'ed since).
 */
#ifndef BTRACE_UNWIND_PROCS_H
#define BTRACE_UNWIND_PROCS_H
#include <stdint.h>

#define BT_DEFAULT_UNWIND_MEM (32ull << 20) /* 4 M rows: a busy machine's binaries take a few MiB */

struct bt_unwinder_stats {
	uint64_t binaries;     /* binaries with a table */
	uint64_t rows, max_rows; /* rows used, room (--unwind-mem / 8) */
	uint64_t mem_full;     /* binaries left without a table: --unwind-mem reached */
	uint64_t no_eh_frame;  /* binaries without a usable .eh_frame (frame pointers used) */
	uint64_t procs;        /* process loads written */
	uint64_t procs_full;   /* process loads refused: the per-process map was full */
	uint64_t maps_dropped; /* executable mappings beyond BT_UNWIND_MAPS in a process */
	uint64_t build_ns;     /* time spent compiling or loading tables */
	uint64_t cache_hits;   /* tables read from the cache on disk */
	uint64_t cache_stored; /* tables written to it */
	uint64_t cache_bad;    /* cached tables refused (and removed): cut short, another format */
	uint64_t ready_ns;     /* time the processes running at start took to load (0: not yet) */
	uint64_t run_ns;       /* time since the unwinder started */
	uint64_t proc_bytes;   /* bytes of the per-process map in use (entries x value size) */
};

struct bt_unwinder;
struct bt_unwind_cache;
/* rows_fd: the mmap-able array of rows (max_rows entries); procs_fd,
 * want_fd: the per-process map and the requests; want_seq: the BPF side's
 * count of requests made (NULL: look at the map every poll); cache: tables
 * on disk (NULL: none), the unwinder's from then on, even on failure.
 * Starts the thread. NULL with errno. */
struct bt_unwinder *bt_unwinder_start(int rows_fd, uint32_t max_rows, int procs_fd, int want_fd,
				      const uint64_t *want_seq, struct bt_unwind_cache *cache);
void bt_unwinder_stop(struct bt_unwinder *u);
/* One thread at a time (the drain, after each pass; NULL-safe): wake the
 * worker if the BPF side asked for processes since the last kick. Without
 * kicks it looks every second. */
void bt_unwinder_kick(struct bt_unwinder *u);
/* Any thread. */
void bt_unwinder_stats(struct bt_unwinder *u, struct bt_unwinder_stats *s);
/* Wait until the processes running at start are loaded (tests, benchmarks). */
void bt_unwinder_wait_ready(struct bt_unwinder *u);
#endif
