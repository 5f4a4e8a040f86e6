/* SPDX-License-Identifier: MIT */
/*
 * unwind_procs.h - the recorder's side of the BPF unwinder
 * (bpf/unwind_walk.bpf.h, docs/unwinding.md): a thread that compiles each
 * binary's .eh_frame once (by device and inode, shared with every file of
 * the same build-id) into the rows array the BPF programs read, publishes
 * it under the file's identity (the BPF side keeps the processes' mappings
 * itself from exec on, and asks for the files it meets without a table),
 * and writes the executable mappings of the processes running at start
 * into the per-process map, and of each one the BPF side asks for (a
 * process it has no entry for, or running code in a mapping it did not
 * know).
 */
#ifndef BTRACE_UNWIND_PROCS_H
#define BTRACE_UNWIND_PROCS_H
#include <stdint.h>

#define BT_DEFAULT_UNWIND_MEM (32ull << 20) /* 4 M rows: a busy machine's binaries take a few MiB */

#define BT_UNWINDER_NAMED 8 /* binaries that lost their table, named: the latest ones */
struct bt_unwinder_refusal {
	char path[256];
	char why[64];
};
/* A binary whose table has rules the walker cannot follow. */
struct bt_unwinder_unsupported {
	char path[256];
	uint32_t ranges;    /* address ranges of rules not followed (NONE rows: frame pointers there) */
	uint32_t leaf_rows; /* rows whose CFA register only the leaf frame has */
};
struct bt_unwinder_stats {
	uint64_t binaries;     /* binaries with a table */
	uint64_t rows, max_rows; /* rows used, room (--unwind-mem / 8) */
	uint64_t mem_full;     /* binaries left without a table: --unwind-mem reached (named below) */
	uint64_t no_eh_frame;  /* binaries without a usable .eh_frame (frame pointers used) */
	uint64_t procs;        /* process loads written */
	uint64_t procs_full;   /* process loads refused: the per-process map was full */
	uint64_t maps_dropped; /* executable mappings beyond BT_UNWIND_MAPS in a process */
	uint64_t files_asked;  /* files the BPF side asked a table for (met in a new mapping) */
	uint64_t files_unopened; /* ... that could not be opened (process gone, path changed) */
	uint64_t load_races;   /* process loads read again: the BPF side changed the entry meanwhile */
	uint64_t files_full;   /* tables not published: the files map was full */
	uint64_t files_waiting; /* files asked for and not served yet, plus the one being built */
	uint64_t slow;         /* binaries past their first build budget, with the builder thread */
	uint64_t refused;      /* binaries refused: too many FDEs or bytes, past the slow budget (named below) */
	uint64_t nrefusals;    /* refused or over --unwind-mem, noted; the latest in refusals[n % NAMED] */
	struct bt_unwinder_refusal refusals[BT_UNWINDER_NAMED];
	uint64_t unsupported;      /* rule ranges of the tables the walker cannot follow (all binaries) */
	uint64_t unsupported_bins; /* binaries with any */
	uint64_t leaf_rows;        /* rows whose CFA register only the leaf frame has (all binaries) */
	struct bt_unwinder_unsupported unsupp[4]; /* the binaries with the most of both, most first */
	uint64_t build_ns;     /* time spent compiling or loading tables */
	uint64_t cache_hits;   /* tables read from the cache on disk */
	uint64_t cache_stored; /* tables written to it */
	uint64_t cache_bad;    /* cached tables refused (and removed): cut short, another format */
	uint64_t ready_ns;     /* time the processes running at start took to load (0: not yet) */
	uint64_t run_ns;       /* time since the unwinder started */
	uint64_t proc_bytes;   /* bytes of the per-process map in use (entries x value size) */
	uint64_t py_interps;   /* CPython interpreters found (binaries exporting _PyRuntime) */
	uint64_t py_unknown;   /* ... of a version without offsets (py_offsets.c): frames native only */
	uint64_t py_full;      /* ... not published: py_files was full */
};

struct bt_unwinder;
struct bt_unwind_cache;
/* The BPF side's maps (bpf/unwind_walk.bpf.h): the mmap-able array of rows
 * (max_rows entries), the per-process map, the process requests, the
 * files' tables and the file requests; want_seq: the BPF side's count of
 * requests made (NULL: look at the maps every poll). */
struct bt_unwind_maps {
	int rows_fd, procs_fd, want_fd, files_fd, fwant_fd;
	int py_fd; /* CPython interpreters found in the binaries (py_files), -1: none */
	struct bt_unwind_row *rows; /* rows_fd mapped read-write, max_rows long; the caller's, kept past stop */
	uint32_t max_rows;
	const uint64_t *want_seq;
};
/* cache: tables on disk (NULL: none), the unwinder's from then on, even on
 * failure. Starts the threads. NULL with errno. */
struct bt_unwinder *bt_unwinder_start(const struct bt_unwind_maps *maps, struct bt_unwind_cache *cache);
void bt_unwinder_stop(struct bt_unwinder *u);
/* One thread at a time (the drain, after each pass; NULL-safe): wake the
 * worker if the BPF side asked for processes since the last kick (1), else
 * 0. Without kicks it looks every second. */
int bt_unwinder_kick(struct bt_unwinder *u);
/* Any thread. */
void bt_unwinder_stats(struct bt_unwinder *u, struct bt_unwinder_stats *s);
/* A path the file (dev, ino) was opened by for its table, into buf: 0, or
 * -1 (any thread; a bt_mapcap_path_fn, arg the unwinder). */
int bt_unwinder_file_path(void *arg, uint64_t dev, uint64_t ino, char *buf, size_t size);
#endif
