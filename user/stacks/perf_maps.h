/* SPDX-License-Identifier: MIT */
/*
 * perf_maps.h - names of JIT code from the perf maps runtimes write
 * (/tmp/perf-PID.map: node --perf-basic-prof, jcmd PID Compiler.perfmap,
 * python -X perf), one "START SIZE name" line (hex) per piece of code, the
 * format perf reads. A user frame in anonymous executable memory is named
 * from the map of its process.
 *
 * The file belongs to the traced program's user, not to the recorder
 * (root): opened only if no component of its path is a symbolic link, only
 * a regular file owned by the process's owner or root, read by pread up to
 * BT_PERFMAP_MAX_BYTES, each line parsed strictly (a line that is not
 * "hex hex name" is skipped and counted) and its name's control bytes
 * replaced. Runtimes append as they compile, so each read takes only the
 * bytes added since the last one (the whole file again if it shrank or is
 * another file). A process's names are read while it lives (a reader
 * thread of its own, at once when its first anonymous frame comes in and
 * every 200 ms after, once more when it exits, and at each dump) and kept
 * after it exits, so its frames are named after it is gone; an exec or a
 * new process under its pid forgets them. The owner is taken when the
 * process is first wanted, so its last read needs no /proc entry.
 *
 * Thread-safe (one lock).
 */
#ifndef BTRACE_PERF_MAPS_H
#define BTRACE_PERF_MAPS_H
#include <stddef.h>
#include <stdint.h>

#define BT_PERFMAP_MAX_BYTES (64u << 20) /* read of one process's map, at most */
#define BT_PERFMAP_NAME_MAX 255u         /* a name's bytes kept, at most */

struct bt_perfmaps;
/* dir: where the maps are ("/tmp"; tests give their own). NULL: ENOMEM. */
struct bt_perfmaps *bt_perfmaps_new(const char *dir);
void bt_perfmaps_free(struct bt_perfmaps *pm);
/* Start the reader thread (else only bt_perfmaps_refresh reads): 0 or -errno. */
int bt_perfmaps_start(struct bt_perfmaps *pm);
/* tgid has frames in anonymous code: read its map (the reader, at once). */
void bt_perfmaps_want(struct bt_perfmaps *pm, uint32_t tgid);
/* Read what was added to the maps of the live processes wanted. */
void bt_perfmaps_refresh(struct bt_perfmaps *pm);
/* exec, or a new process under the pid: its names are forgotten. */
void bt_perfmaps_forget(struct bt_perfmaps *pm, uint32_t tgid);
/* The process exited: its names are kept, its file read once more, then
 * no longer (the pid may go to another process). */
void bt_perfmaps_exited(struct bt_perfmaps *pm, uint32_t tgid);
/* The name of the code at addr in tgid (the latest entry holding it),
 * copied into buf; *start, *size: its entry. 1 if found, else 0. */
int bt_perfmaps_find(struct bt_perfmaps *pm, uint32_t tgid, uint64_t addr, uint64_t *start, uint64_t *size,
		     char *buf, size_t len);
struct bt_perfmap_stats {
	uint64_t procs;   /* processes with a map read */
	uint64_t entries; /* entries held */
	uint64_t bad;     /* lines refused (not "hex hex name") */
	uint64_t refused; /* files refused: a link, not regular, another owner */
	uint64_t capped;  /* maps read only up to BT_PERFMAP_MAX_BYTES */
};
void bt_perfmaps_stats(struct bt_perfmaps *pm, struct bt_perfmap_stats *out);
#endif
