/* SPDX-License-Identifier: MIT */
/*
 * mapping_capture.h - user addresses made durable at record time: (tgid,
 * address) -> (mapped file, file offset), with the file's path, build-id,
 * device and inode, and an open descriptor that keeps its contents readable
 * after the process exited and after the file was deleted or replaced (the
 * dump symbolizes from it, stack_symbols.h).
 *
 * Only executable file mappings are kept; a file is opened on the first
 * frame in it, within BT_MAPCAP_PIN_MAX (see mapping_capture.c).
 * A process's maps are read on first sight of the process, again when an
 * address falls outside every mapping known, and forgotten at exec, at a
 * fork that reuses its pid, and two seconds after its exit (stacks sampled
 * in do_exit arrive after the exit).
 * Drain thread only, except bt_mapcap_files() (under the table's lock,
 * see stack_table.h).
 */
#ifndef BTRACE_MAPPING_CAPTURE_H
#define BTRACE_MAPPING_CAPTURE_H
#include <stddef.h>
#include <stdint.h>
#include "elf_symbols.h" /* BT_BUILD_ID_MAX */

#define BT_MAP_KERNEL 0u            /* frame map id of kernel addresses */
#define BT_MAP_NONE 0xffffffffu     /* a user address in no file mapping (anonymous, JIT, process gone) */

struct bt_mapfile {
	uint64_t dev, ino;
	char *path;              /* as /proc/PID/maps showed it, " (deleted)" removed */
	uint8_t build_id[BT_BUILD_ID_MAX];
	uint32_t build_id_len;
	uint32_t flags;          /* BT_MAPFILE_* */
	int fd;                  /* -1: none (the path is all there is) */
	uint64_t pinned;         /* bytes fd keeps alive that count against the bound */
};
#define BT_MAPFILE_DELETED 0x1 /* the file was deleted when captured */
#define BT_MAPFILE_TRIED 0x2   /* opened (or tried) on the first frame in it */

/* Allocated bytes that other users' files held open may pin in all (a
 * deleted file's blocks, a memfd's memory); root's own files do not count.
 * Past it a file is kept by path only (counted: files_by_path). */
#define BT_MAPCAP_PIN_MAX (256ull << 20)

struct bt_mapcap;
struct bt_mapcap *bt_mapcap_new(void);
void bt_mapcap_free(struct bt_mapcap *m);

/* Map id (1 + index into the file table) and file offset of addr in process
 * tgid; BT_MAP_NONE (and *off = addr) if no file maps it. */
uint32_t bt_mapcap_resolve(struct bt_mapcap *m, uint32_t tgid, uint64_t addr, uint64_t *off);
/* The same, for an address sampled at seen_ns (CLOCK_BOOTTIME; 0: unknown):
 * maps read young, before it, are read again on a miss. */
uint32_t bt_mapcap_resolve_at(struct bt_mapcap *m, uint32_t tgid, uint64_t addr, uint64_t seen_ns, uint64_t *off);
/* The map id of the file the kernel knows as (dev, ino) (dev as in
 * /proc/PID/maps, major << 20 | minor; { 0, 0 }: the vDSO), for a frame
 * of tgid the BPF unwinder found in it; BT_MAP_NONE if it cannot be had.
 * A file not known yet is found through tgid's maps, or by the path the
 * path source gives (bt_mapcap_set_path_source), checked to be that file. */
uint32_t bt_mapcap_resolve_file(struct bt_mapcap *m, uint32_t tgid, uint32_t dev, uint64_t ino);
/* fn(arg, dev, ino, buf, size): a path of that file into buf, 0; or -1. */
typedef int (*bt_mapcap_path_fn)(void *arg, uint64_t dev, uint64_t ino, char *buf, size_t size);
void bt_mapcap_set_path_source(struct bt_mapcap *m, bt_mapcap_path_fn fn, void *arg);
/* Drain thread, each pass: read once more the maps of processes read
 * while young (the loader still mapping their libraries). */
void bt_mapcap_tick(struct bt_mapcap *m);
/* Pre-exec stacks: a process forked (the last FORKS_MAX forks are kept),
 * and its parent, 0 if not among them. A shell's child samples in the
 * shell's image for a moment before its exec, and those stacks arrive
 * after it, when the child's maps are the new program's (or gone): its
 * parent's maps name them (fork copied them). */
void bt_mapcap_forked(struct bt_mapcap *m, uint32_t child, uint32_t parent);
uint32_t bt_mapcap_parent(const struct bt_mapcap *m, uint32_t child);
/* tgid exec'd, or a new process took its pid: its mappings are stale. */
void bt_mapcap_forget(struct bt_mapcap *m, uint32_t tgid);
/* tgid exited: its mappings still name the stacks sampled while it ends,
 * then are forgotten (no re-read: an exited process has no maps). */
void bt_mapcap_exited(struct bt_mapcap *m, uint32_t tgid);

/* The file table: files[i] is map id i + 1. Entries never move nor change
 * once added (the array may be reallocated: call under the owner's lock). */
const struct bt_mapfile *bt_mapcap_files(const struct bt_mapcap *m, size_t *n);
/* Files a frame has landed in (BT_MAPFILE_TRIED): only they are opened. */
size_t bt_mapcap_ntried(const struct bt_mapcap *m);
/* Files kept without a descriptor (the limit reached, or open failed). */
uint64_t bt_mapcap_no_fd(const struct bt_mapcap *m);
/* How many times a process's /proc/PID/maps was read. */
uint64_t bt_mapcap_maps_reads(const struct bt_mapcap *m);

#endif
