/* SPDX-License-Identifier: MIT */
/*
 * dump_dir.h - the dumps of an output directory: which files are ours, the
 * quota (--max-dumps, --max-dump-bytes: the oldest removed first) and the
 * free-space check before a dump (--keep-free).
 *
 * Ours: a regular file named btrace-*.btd that starts with the dump magic
 * and belongs to our user, and its manifest (the same name + ".json", a
 * regular file starting with the manifest's first key). Dumps written
 * earlier into the directory (by a recorder that was restarted) count as
 * well. Nothing else is ever counted or removed, and a file is removed only
 * if it is still the file (device, inode) that was counted.
 *
 * Not thread-safe: the recorder calls it under its dump lock.
 */
#ifndef BTRACE_DUMP_DIR_H
#define BTRACE_DUMP_DIR_H
#include <stddef.h>
#include <stdint.h>
#include "manifest.h" /* BT_MANIFEST_SUFFIX, BT_MANIFEST_HEAD */

#define BT_KEEP_FREE_AUTO UINT64_MAX /* 5% of the file system, at most 1 GiB */

struct bt_dump_dir_opts {
	const char *dir;
	uint64_t max_dumps;  /* 0: no limit */
	uint64_t max_bytes;  /* 0: no limit; dumps and their manifests */
	uint64_t keep_free;  /* bytes left free; BT_KEEP_FREE_AUTO */
};

struct bt_dump_dir_stats {
	uint64_t count, bytes;        /* our dumps in the directory now (manifests included in bytes) */
	uint64_t adopted;             /* of them, found at start (earlier runs) */
	uint64_t removed, removed_bytes; /* removed by the quota */
	uint64_t skipped_space;       /* dumps not written: not enough free space */
	uint64_t over_quota;          /* dumps removed at once: alone larger than --max-dump-bytes */
	uint64_t last_estimate;       /* bytes the last dump was expected to take */
};

struct bt_dump_dir;

/* Scan dir for our dumps (oldest first, by modification time). NULL with a
 * message in err if dir cannot be read. */
struct bt_dump_dir *bt_dump_dir_open(const struct bt_dump_dir_opts *o, char *err, size_t errlen);
void bt_dump_dir_close(struct bt_dump_dir *d);

/*
 * Before writing a dump whose uncompressed contents (blocks and tables) are
 * raw_bytes: estimate
 * its size (from the ratio of the last dump, else raw_bytes), remove the
 * oldest dumps until the new one fits the quota, and check the free space.
 * 0: write it. -ENOSPC: skip it (counted; why says how much is free and
 * needed). -errno if the file system cannot be queried.
 */
int bt_dump_dir_prepare(struct bt_dump_dir *d, uint64_t raw_bytes, char *why, size_t whylen);

/*
 * A dump was written at path (its manifest, if any, is next to it): count
 * it, then remove the oldest dumps beyond the limits. A dump larger than
 * --max-dump-bytes by itself is removed at once: -EFBIG. Else the number of
 * dumps removed.
 */
int bt_dump_dir_added(struct bt_dump_dir *d, const char *path);

void bt_dump_dir_get_stats(const struct bt_dump_dir *d, struct bt_dump_dir_stats *st);
#endif
