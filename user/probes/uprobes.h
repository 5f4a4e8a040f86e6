/* SPDX-License-Identifier: MIT */
/*
 * uprobes.h - user-space probes for `record -u/-U`: parse probe specs, resolve
 * them against running processes and ELF files, load bpf/uprobe.bpf.c into
 * record's per-CPU ring buffers and attach everything, all or nothing.
 *
 * Spec syntax (as perf probe / bpftrace users know it):
 *
 *   -u [BINARY:]FUNCTION[+OFFSET][%return]
 *   -u [BINARY:]0xADDRESS[%return]
 *   -U [BINARY:]PROVIDER:NAME
 *
 *   BINARY    a path, or a name looked up in the target's memory maps with -p
 *             ("libc" finds the libc.so.6 that process maps, "myprog" its
 *             executable); without -p, a program on PATH as the shell finds
 *             it (symlinks followed: python3 -> /usr/bin/python3.11), else
 *             a library in the standard library directories.
 *             Omitted: the executable of the -p process.
 *   FUNCTION  a symbol from .symtab or .dynsym; C++ functions mangled
 *             (_ZN3foo3barEi) or demangled (foo::bar, or foo::bar(int) to
 *             pick one overload).
 *   +OFFSET   bytes into the function (decimal or 0x hex), entry probes only;
 *             must start an instruction (the function is decoded to check).
 *   0xADDRESS a virtual address as nm/objdump print it, for stripped binaries.
 *   %return   a return probe: return value and duration since the entry.
 *
 * With pids, each spec is attached once per pid and only that process (all
 * its threads) triggers it; without, every process mapping the binary does,
 * including processes started later. Each (spec, pid) pair is one probe id
 * and one row of the probe table (struct bt_probe_desc) stored in dumps.
 */
#ifndef BTRACE_UPROBES_H
#define BTRACE_UPROBES_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "probe_table.h"
#include "probe_spec.h"
#include "proc_maps.h"
#include "elf_symbols.h"
#include "symbol_names.h"

#define BT_UPROBE_DEFAULT_NARGS 6
#define BT_UPROBE_RING_SIZE (16u << 20) /* the ring made when none is given */

struct bt_uprobe_opts {
	const char *const *specs; size_t nspecs; /* -u */
	const char *const *usdts; size_t nusdts; /* -U */
	const int *pids; size_t npids;           /* -p; none: every process */
	int nargs;                 /* --uargs 0..6; negative: BT_UPROBE_DEFAULT_NARGS */
	uint64_t wakeup_bytes;     /* fill of a CPU's ring that forces a wakeup, as record's
				    * loader (bt_loader_wakeup_bytes); 0: never */
	uint32_t max_threads;      /* entry-timestamp slots (thread x return probe); 0: 8192 */
	int ustack;                /* --ustack: entries and USDT hits take their call stacks */
	int stack_fds[3];          /* with ustack: record's stack maps (bt_loader_stack_fds) */
};

/*
 * Resolve every spec for every pid without touching BPF: the probe table
 * that bt_uprobes_open() would attach (malloc'd, *n rows, ids 0..n-1).
 * 0, or -errno with one line in err: no such process, permission denied,
 * not an ELF file, symbol not found (with the closest names), stripped
 * binary, offset outside the function, ...
 */
int bt_uprobes_resolve(const struct bt_uprobe_opts *o, struct bt_probe_desc **table, size_t *n,
		       char **err);

struct bt_uprobes;

/*
 * Resolve, load bpf/uprobe.bpf.c with record's rings and cpu_state map
 * (bpf_map__reuse_fd; a negative cpu_state_fd: the object creates its own)
 * and attach every probe. rings_fd is one of:
 *   - an ARRAY_OF_MAPS of ring buffers indexed by CPU (record's `rings`,
 *     bt_loader_rings_fd): each CPU writes into its own ring;
 *   - one BPF_MAP_TYPE_RINGBUF: every CPU writes into it;
 *   - negative: the same with a ring of BT_UPROBE_RING_SIZE made here
 *     (bt_uprobes_ringbuf_fd; freed by bt_uprobes_destroy).
 * All or nothing: on any failure whatever was attached is detached again,
 * NULL is returned, errno set and one line written into err.
 */
struct bt_uprobes *bt_uprobes_open(const struct bt_uprobe_opts *o, int rings_fd, int cpu_state_fd,
				   char **err);

/* The probe table for dumps (ids are indexes). Refreshes BT_PROBE_ENDED in
 * place: call it from one thread (the dump writer); the rows stay valid until
 * bt_uprobes_destroy(). */
const struct bt_probe_desc *bt_uprobes_table(struct bt_uprobes *u, size_t *n);

/* A copy of the table with BT_PROBE_ENDED up to date, for any thread
 * (ctl status, while the dump writer may be using the table): malloc'd, *n
 * rows; NULL if out of memory. */
struct bt_probe_desc *bt_uprobes_table_copy(struct bt_uprobes *u, size_t *n);

/* Runs the kernel skipped of each loaded probe program (loader.h:
 * bt_obj_prog_misses), at most max; returns how many were written. */
struct bt_prog_miss;
size_t bt_uprobes_prog_misses(const struct bt_uprobes *u, struct bt_prog_miss *out, size_t max);
/* One line per probe on stderr: the spec, the function and the file chosen
 * for it (what a program name or library name resolved to), the pid. */
void bt_uprobes_print(const struct bt_uprobes *u);

/* Rows of the probe table (one per spec and pid). */
size_t bt_uprobes_nprobes(const struct bt_uprobes *u);

/* BPF links attached (entry, return and USDT attachments; a %return probe
 * has an entry attachment too, shared with an entry probe on the same place). */
size_t bt_uprobes_nattached(const struct bt_uprobes *u);

/* BPF run time of the probe programs (kernel.bpf_stats_enabled, or while a
 * bpf_enable_stats() fd is open): totals over every program. 0 or -errno. */
int bt_uprobes_prog_stats(const struct bt_uprobes *u, uint64_t *run_ns, uint64_t *run_cnt);

/* The single ring the probes write into (given or made by bt_uprobes_open),
 * -1 when they write into per-CPU rings. */
int bt_uprobes_ringbuf_fd(const struct bt_uprobes *u);

/* Targets (-p pids) that ended since the last call: up to max pids into
 * pids, returns how many. Recording goes on; the kernel side simply stops
 * seeing their calls. Non-blocking. */
size_t bt_uprobes_poll_exited(struct bt_uprobes *u, int *pids, size_t max);

/* Detach every probe (no new events after this returns); idempotent. */
void bt_uprobes_detach(struct bt_uprobes *u);
void bt_uprobes_destroy(struct bt_uprobes *u);

/* The building blocks (spec parsing, binary lookup, ELF symbols, demangling)
 * have their own headers, included above for the tests and the recorder. */
#endif
