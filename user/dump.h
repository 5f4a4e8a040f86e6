/* SPDX-License-Identifier: MIT */
/*
 * dump.h - flight-recorder dump files: writer (snapshot of a live buffer) and
 * reader (validating parser used by report/convert). Format: docs/dump-format.md.
 */
#ifndef BTRACE_DUMP_H
#define BTRACE_DUMP_H
#include <stddef.h>
#include <stdint.h>
#include "btrace_buffer.h"
#include "tasks.h"
#include "probes.h"

#define BT_DUMP_MAX_CPUS 4096

/* Everything a dump holds besides the blocks. The writer fills the header
 * fields it can compute itself (time, host, kernel); the caller provides the
 * rest. */
struct bt_dump_info {
	uint32_t ncpus;
	uint32_t ngroups;          /* BT_GROUP_MAX */
	const uint64_t *rb_drops;  /* [ncpus * ngroups] ring-buffer reservation failures */
	const uint64_t *rb_emitted;/* [ncpus * ngroups] events submitted, may be NULL */
	const struct bt_task *tasks;   size_t ntasks;
	const struct bt_probe_desc *probes; size_t nprobes;
	uint64_t dump_seq;         /* 1, 2, ... per recorder run */
	uint64_t overlaps_dump;    /* dump_seq of the previous dump whose window may overlap, 0 none */
	const char *reason;        /* "signal", "ctl", "trigger", "exit", "interval" */
	uint64_t drain_events;     /* events the drain wrote into the buffer */
	uint64_t drain_rejected;   /* events the buffer rejected */
	uint32_t groups_enabled;   /* bitmask of enum bt_group */
};

/* Write a dump of `buf` into directory `dir` (created if missing) as
 * btrace-<host>-<YYYYmmdd-HHMMSS>-<seq>.btd, or to `path` if non-NULL.
 * Atomic: written to a temporary name, fsync'd, renamed; mode 0600. On any
 * error the temporary file is removed and -errno returned with a message in err.
 * zlevel: 0 = no compression, 1..9 zlib level. The path written goes to out_path. */
int bt_dump_write(struct bt_buffer *buf, const struct bt_dump_info *info, const char *dir,
		  const char *path, int zlevel, char *out_path, size_t out_len,
		  struct bt_read_stats *rst, char *err, size_t errlen);

/* ---- reading ---- */
struct bt_dump; /* an opened, validated dump */

struct bt_dump_header {
	uint32_t version, ncpus, ngroups, block_size, nblocks, active, zlevel;
	uint64_t created_realtime_ns, created_boottime_ns; /* wall = boot + (realtime - boottime) */
	uint64_t dump_seq, overlaps_dump, buffer_size, recorder_pid;
	char hostname[64], kernel[128], reason[16];
};

/* Open and fully validate a dump. NULL + errno + one-line message on a
 * damaged, truncated or foreign file. */
struct bt_dump *bt_dump_open(const char *path, char *err, size_t errlen);
/* Same from memory (used by the fuzzer). */
struct bt_dump *bt_dump_open_mem(const void *data, size_t len, char *err, size_t errlen);
void bt_dump_close(struct bt_dump *d);

const struct bt_dump_header *bt_dump_header(const struct bt_dump *d);
const struct bt_task *bt_dump_tasks(const struct bt_dump *d, size_t *n);      /* sorted by tid */
const struct bt_probe_desc *bt_dump_probes(const struct bt_dump *d, size_t *n);
const uint64_t *bt_dump_rb_drops(const struct bt_dump *d);                   /* [ncpus*ngroups] */
const struct bt_stats *bt_dump_buffer_stats(const struct bt_dump *d);
const struct bt_read_stats *bt_dump_read_stats(const struct bt_dump *d);

/* Events of the dump in time order across all blocks and CPUs (ties broken by
 * cpu, seq). Each is a pointer to a validated event (size >= its type's size). */
struct bt_dump_event { const struct bt_event_hdr *ev; uint32_t len; uint32_t block_core; };
const struct bt_dump_event *bt_dump_events(const struct bt_dump *d, size_t *n);
#endif
