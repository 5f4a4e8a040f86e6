/* SPDX-License-Identifier: MIT */
/*
 * dump_mgmt.h - what the recorder does around each dump it writes into its
 * output directory: before, the free-space check and room under the quota
 * (dump_dir.c); after, the manifest (manifest.c), the quota again, and the
 * --on-dump command (on_dump.c). Explicit paths (`ctl dump -o FILE`) get a
 * manifest and the command, but are not the quota's to count or remove.
 *
 * Called under the recorder's dump lock (one dump at a time); the status
 * may be read from any thread holding that lock.
 */
#ifndef BTRACE_DUMP_MGMT_H
#define BTRACE_DUMP_MGMT_H
#include <stdint.h>
#include <stdio.h>
#include "manifest.h"

struct bt_dump_mgmt_opts {
	const char *dir;
	uint64_t max_dumps, max_bytes; /* 0: no limit */
	uint64_t keep_free;            /* BT_KEEP_FREE_AUTO (dump_dir.h) by default */
	const char *on_dump;           /* NULL: none */
	uint64_t on_dump_timeout_ns;
};

struct bt_dump_mgmt;

/* NULL with a message in err (directory unreadable, no thread). */
struct bt_dump_mgmt *bt_dump_mgmt_new(const struct bt_dump_mgmt_opts *o, char *err, size_t errlen);
/* Waits for running --on-dump commands (each within its timeout). */
void bt_dump_mgmt_destroy(struct bt_dump_mgmt *m);

/* Before an auto-named dump of raw_bytes (uncompressed contents): 0 write
 * it; -ENOSPC skip it (counted; logged by the caller with why). */
int bt_dump_mgmt_before(struct bt_dump_mgmt *m, uint64_t raw_bytes, char *why, size_t whylen);

/*
 * After a dump was written to path (auto-named: in_dir = 1). sum: its
 * summary as the writer made it, for the manifest (NULL: the manifest reads
 * the file). rec holds the recorder's counters (the rest are filled in
 * here); trig the trigger hit for reason "trigger", else NULL. Returns 0, or -EFBIG if the dump was
 * removed at once for being larger than the quota (no command is run).
 * A manifest that cannot be written is logged and counted, not fatal.
 */
int bt_dump_mgmt_after(struct bt_dump_mgmt *m, const char *path, const struct bt_dump *sum, int in_dir,
		       const char *reason, const struct bt_manifest_trigger *trig, struct bt_manifest_recorder *rec);

/* Lines for `ctl status`. */
void bt_dump_mgmt_status(struct bt_dump_mgmt *m, FILE *out);
#endif
