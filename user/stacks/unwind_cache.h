/* SPDX-License-Identifier: MIT */
/*
 * unwind_cache.h - compiled unwind tables kept on disk by build-id, so a
 * binary's .eh_frame is compiled once per machine rather than once per
 * recorder start (a second of CPU for a machine's binaries natively,
 * seconds per big binary under an emulated CPU, and until a process's
 * tables are in, its stacks have their leaf only).
 *
 * One file per build: DIR/<build-id in hex>.uw, written to a temporary
 * name and renamed, checked whole before use (size, format, build-id, CRC,
 * rows in order) and used only for a binary whose call-frame information
 * has the CRC it was compiled from (a build-id is a note anyone can
 * write); a bad file is removed and the table built again. DIR is used
 * only if it is ours (owned by our user, mode 0700), and only our file
 * names in it are ever read, written or removed. Past
 * the byte budget the least recently used files go (a load marks a file
 * used), so tables of binaries since upgraded away do not pile up.
 */
#ifndef BTRACE_UNWIND_CACHE_H
#define BTRACE_UNWIND_CACHE_H
#include <stddef.h>
#include <stdint.h>
#include "unwind_table.h"

#define BT_UNWIND_CACHE_DIR "/var/cache/btrace-bpf/unwind"
#define BT_UNWIND_CACHE_BUDGET (256ull << 20) /* a machine's binaries take a few MiB */

struct bt_unwind_cache;

/* Open (creating it and its parent, mode 0700) the cache in dir. NULL with
 * a message in err: not creatable (a read-only /var), or not ours. */
struct bt_unwind_cache *bt_unwind_cache_open(const char *dir, uint64_t budget, char *err, size_t errlen);
void bt_unwind_cache_close(struct bt_unwind_cache *c);

/* The rows stored for this build-id, compiled from call-frame information
 * whose bt_unwind_source_crc was src_crc: 0 with out filled (free with
 * bt_unwind_rows_free), -ENOENT if none, -EFBIG if more than max_rows,
 * -ESTALE if stored for another source (a file claiming the same
 * build-id), -EBADMSG if the file was bad (it is removed), -EPERM if the
 * name is not a file we wrote (left alone), other -errno (-ELOOP: a
 * symbolic link, never followed). */
int bt_unwind_cache_load(struct bt_unwind_cache *c, const uint8_t *bid, uint32_t bidlen, uint32_t src_crc,
			 uint32_t max_rows, struct bt_unwind_rows *out);
/* Store rows for this build-id and source: 0 or -errno (nothing left
 * behind; counted, bt_unwind_cache_failures). */
int bt_unwind_cache_store(struct bt_unwind_cache *c, const uint8_t *bid, uint32_t bidlen, uint32_t src_crc,
			  const struct bt_unwind_rows *r);
/* Tables that could not be stored (a full disk or budget, an I/O error),
 * and in *last_err the errno of the latest (0: none). Any thread. */
uint64_t bt_unwind_cache_failures(const struct bt_unwind_cache *c, int *last_err);
#endif
