/* SPDX-License-Identifier: MIT */
/*
 * manifest.h - X.btd.json next to each dump X.btd: what a fleet index needs
 * without opening the dump (host, kernel, recorder version, time range,
 * latest continuous window, reason and trigger event, event counts, every
 * loss counter, file size and SHA-256). Numbers come from the reader's own
 * section checks and the analysis of `btrace-bpf report --stats`, run on
 * the body as it is written (a summary, dump.h), so the two agree and a
 * manifest exists only for a dump whose body passes them; memory is one
 * section and 16 bytes per kernel event, whatever the number of calls.
 * Format: docs/manifest.md.
 */
#ifndef BTRACE_MANIFEST_H
#define BTRACE_MANIFEST_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BT_MANIFEST_VERSION 1
#define BT_MANIFEST_SUFFIX ".json"                 /* X.btd -> X.btd.json */
#define BT_MANIFEST_HEAD "{\"btrace_manifest\":" /* how a manifest starts */

/* The hit that started a --trigger-uprobe dump (reason "trigger"). */
struct bt_manifest_trigger {
	const char *spec;
	uint32_t tid;
	uint64_t ts_ns; /* CLOCK_BOOTTIME */
};

/* The recorder's own counters when the dump was written. */
struct bt_manifest_recorder {
	uint64_t dumps_written, dumps_failed, dumps_skipped_space, dumps_rate_limited;
	uint64_t dumps_removed_quota;
	uint64_t on_dump_failed, on_dump_skipped;
};

/*
 * Write the manifest of the dump at dump_path to dump_path + ".json"
 * atomically (mode 0600): its counts from sum, the dump's summary as the
 * writer made it (bt_dump_args.summary), or with sum NULL from one read of
 * the file (bt_dump_open_summary). trig and rec may be NULL. 0, or -errno
 * with a message in err (no manifest is left behind).
 */
struct bt_dump;
int bt_manifest_write(const char *dump_path, const struct bt_dump *sum, const struct bt_manifest_trigger *trig,
		      const struct bt_manifest_recorder *rec, char *err, size_t errlen);

/* The manifest of the dump at dump_path, on out (for `report --manifest`). */
int bt_manifest_print(FILE *out, const char *dump_path, const struct bt_manifest_trigger *trig,
		      const struct bt_manifest_recorder *rec, char *err, size_t errlen);
#endif
