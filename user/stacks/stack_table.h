/* SPDX-License-Identifier: MIT */
/*
 * stack_table.h - the recorder's call-stack table: 64-bit stack hashes from
 * the BPF side (bpf/record_stacks.bpf.h) -> small ids the stored events
 * carry, and each stack's frames, user frames already turned into (file,
 * offset) at record time (mapping_capture.h). Bounded by --max-stacks; a
 * stack met when the table is full is counted and its events say
 * BT_STACK_LOST. Lives outside the block buffer (like the task table) and
 * goes whole into every dump (section STKP, stack_symbols.h).
 *
 * The drain thread adds; a dump copies the table under the lock.
 *
 * Reclamation: the table follows the window, the buffer's and the cold
 * tier's. Time is counted in the buffer's blocks (blocks_used): every 1/8
 * of the window a generation ends, and a stack remembers the newest
 * generation whose events named it. Once every block up to a generation's
 * end (plus slack for the cores' active blocks) is gone from both (the
 * buffer has taken N blocks more; the tier holds no position that old, nor
 * may still take one: bt_cold_kept_from), no event of it is
 * retained: its stacks are doomed and their hashes forgotten by the kernel
 * side (ops->forget), so a later occurrence sends its frames again. One
 * drain pass later (events that were in flight in the BPF rings when the
 * hash was forgotten are drained by then, and refresh their stack) a doomed
 * stack nobody named meanwhile, and that no task blocked off-CPU still holds
 * (ops->held), is freed and its id goes back to a free list.
 *
 * When the table is nearly full before the window has moved on (a big
 * buffer, many new stacks), the newest stacks must still get ids: the
 * stacks named longest ago (by drain pass, an LRU) are doomed the same way,
 * when the room (free and doomed) falls below four times the last pass's
 * new stacks (at least 1/8 of the table, at most half), as many as make
 * it up and 1/16 of the table more (never past half the table), though
 * retained events still name them. Those events must then not show
 * the frames of the stack their id goes to next: each free is an epoch,
 * which remembers per CPU the newest time of a stack event drained so far,
 * and a freed id remembers its epoch. An event of CPU c at time ts naming
 * an id freed in epoch E is older than the free if ts <= E's time of c: a
 * dump writes BT_STACK_RECLAIMED for it (bt_stack_births). (Events drained
 * after the free name the id's new stack and come later on their CPU; one
 * that a program interrupted by a sample emitted out of order is called
 * reclaimed too: an error on the safe side.) An epoch is forgotten once the
 * window has moved past it (its ids' older events are overwritten).
 *
 * While a dump holds the table (bt_stack_table_hold), nothing is freed: the
 * births it took stay true, and every id an event it copies names still
 * means the stack the event was taken with, or says reclaimed.
 */
#ifndef BTRACE_STACK_TABLE_H
#define BTRACE_STACK_TABLE_H
#include <stddef.h>
#include <stdint.h>
#include "mapping_capture.h"
#include <linux/types.h>
#include "events.h"
#include "dump_stacks.h"

#define BT_DEFAULT_MAX_STACKS 16384u

struct bt_stack_table;
struct bt_stack_table *bt_stack_table_new(uint32_t max_stacks);
void bt_stack_table_free(struct bt_stack_table *t);

/* Drain thread. The id of a hash (BT_HASH_NONE -> 0, BT_HASH_LOST ->
 * BT_STACK_LOST); a hash seen for the first time gets an id now and its
 * frames when its definition arrives (rings are drained one CPU after the
 * other: another CPU's definition may come later in the same pass). */
uint32_t bt_stack_table_ref(struct bt_stack_table *t, uint64_t hash);
/* Drain thread, for every stack event before its refs: its CPU and time
 * (what a free's epoch remembers). */
void bt_stack_table_note(struct bt_stack_table *t, uint32_t cpu, uint64_t ts);
/* Where frames of a process gone before its maps were read find their
 * files' paths (the unwinder's, bt_unwinder_file_path); NULL: nowhere. */
void bt_stack_table_set_path_source(struct bt_stack_table *t, bt_mapcap_path_fn fn, void *arg);
/* A BT_RAW_STACK_DEF record of len bytes. */
void bt_stack_table_define(struct bt_stack_table *t, const struct bt_raw_stack_def *d, uint32_t len);
/* A user stack defined cut (nframes frames) finished from its stack copy
 * (stack_copies.h): more frames after its last, and why it ends now (0:
 * the outermost frame, else enum bt_stack_why). stop (or NULL): the last
 * frame's file, named now if its definition could not (the process gone
 * before the recorder knew the file's path). 0, -ENOENT if hash is not
 * such a stack (reclaimed since, or cut by the recorder), -ENOMEM. Drain
 * thread. */
int bt_stack_table_finish(struct bt_stack_table *t, uint64_t hash, uint32_t nframes,
			  const struct bt_stack_frame_file *stop, const struct bt_stack_frame_file *more,
			  uint32_t nmore, uint32_t why);
/* What reclamation asks of the kernel side (the loader's BPF maps). */
struct bt_stack_reclaim_ops {
	/* Drop hashes from the kernel's set of stacks already sent. */
	void (*forget)(void *ctx, const uint64_t *hashes, size_t n);
	/* Hashes the kernel holds for events still to come (blocked tasks):
	 * a malloc'd array in *out, its length, or -errno. */
	long (*held)(void *ctx, uint64_t **out);
	void *ctx;
	uint32_t ncpus; /* the CPUs events come from (0: one) */
};
/* Before the drain starts. Without it nothing is ever reclaimed. */
void bt_stack_table_set_reclaim(struct bt_stack_table *t, const struct bt_stack_reclaim_ops *ops);
/* Drain thread, after each pass, once its events are in the buffer: the
 * buffer's blocks_used and nblocks (bt_stats), slack = its active blocks;
 * cold_from: the oldest position the cold tier holds or may still take
 * (bt_cold_kept_from), UINT64_MAX without a tier. */
void bt_stack_table_pass(struct bt_stack_table *t, uint64_t blocks_used, uint64_t nblocks, uint64_t cold_from,
			 uint64_t slack);
/* Before the drain starts, or once it is gone: wake(arg) is called by
 * bt_stack_table_wake when new frames or files were queued, the first
 * stack included (the symbol loader's work), at most every
 * BT_STACK_WAKE_NS; it returns 0 when it could not wake now (called again
 * next pass). The loader then sleeps while the machine is idle instead of
 * polling. NULL: none. */
#define BT_STACK_WAKE_NS 50000000ull
void bt_stack_table_set_waker(struct bt_stack_table *t, int (*wake)(void *arg), void *arg);
/* Drain thread, at the end of each pass (after the stack copies, which
 * add frames and files too). */
void bt_stack_table_wake(struct bt_stack_table *t);
/* Any thread: a dump, from before it copies the buffer until it has copied
 * the table. No stack is freed meanwhile. Returns the token to release
 * with; holds may overlap. */
uint64_t bt_stack_table_hold(struct bt_stack_table *t);
void bt_stack_table_release(struct bt_stack_table *t, uint64_t token);
/* While held: which ids each event of the dump may still name (free with
 * bt_stack_births_free). NULL when out of memory. */
struct bt_stack_births;
struct bt_stack_births *bt_stack_table_births(struct bt_stack_table *t);
/* id as a dump writes it for an event of cpu at ts: id, or
 * BT_STACK_RECLAIMED if its stack was freed after the event (the id may
 * name another stack now); counted. b NULL (no births): BT_STACK_RECLAIMED
 * for every stack id, never a wrong stack. */
uint32_t bt_stack_births_id(struct bt_stack_births *b, uint32_t id, uint32_t cpu, uint64_t ts);
/* References turned into BT_STACK_RECLAIMED so far. */
uint64_t bt_stack_births_reclaimed(const struct bt_stack_births *b);
void bt_stack_births_free(struct bt_stack_births *b);
/* Its arrays (struct bt_stack_births_arrays, dump_stacks.h), valid
 * while b is. */
void bt_stack_births_view(const struct bt_stack_births *b, struct bt_stack_births_arrays *v);
/* Lifecycle events: exec and exit make a process's mappings stale. */
void bt_stack_table_task_event(struct bt_stack_table *t, const struct bt_event_hdr *h);

/* Any thread: copy of the table for a dump (s zeroed by the caller; free
 * with bt_stack_snapshot_free). The kernel-side counters are the caller's
 * to fill (BT_STKC_KERNEL_ERR...). 0 or -ENOMEM. */
int bt_stack_table_snapshot(struct bt_stack_table *t, struct bt_dump_stacks *s);
void bt_stack_snapshot_free(struct bt_dump_stacks *s);
/* For ctl status. */
struct bt_stack_counts {
	uint64_t stacks;    /* in the table now */
	uint64_t overflow;  /* references that found it full (events say lost) */
	uint64_t reclaimed; /* freed: no retained event named them, or evicted */
	uint64_t evicted;   /* of those: freed while the table was full, retained events still naming them */
	uint64_t frames;    /* frames held by the stacks in the table */
	uint64_t pre_exec;  /* user stacks taken before an exec, named from the parent's maps */
};
void bt_stack_table_counts(struct bt_stack_table *t, struct bt_stack_counts *c);
/* A user frame as the symbol loader resolves it: map id and the file
 * offset looked up (a return address's call site, bt_frame_lookup_off). */
struct bt_frame_ref {
	uint32_t map;
	uint64_t off;
};
#define BT_NEW_FRAMES_MAX 65536u /* frames waiting for the loader at most (1 MiB) */
/* From now on the user frames of each stack defined wait for
 * bt_stack_table_take_frames (the symbol loader resolves their source
 * lines before any dump asks): at most BT_NEW_FRAMES_MAX, the oldest
 * dropped past that (counted). 0 or -ENOMEM. */
int bt_stack_table_keep_new_frames(struct bt_stack_table *t);
/* Up to max waiting frames moved into out, oldest first; their count.
 * *left (if not NULL): frames still waiting; *dropped: dropped so far. */
size_t bt_stack_table_take_frames(struct bt_stack_table *t, struct bt_frame_ref *out, size_t max, size_t *left,
				  uint64_t *dropped);
/* Of the n map ids in maps, those a frame has landed in are moved to the
 * front (the order is not kept); their count. One lock for all. */
size_t bt_stack_table_tried_first(struct bt_stack_table *t, uint32_t *maps, size_t n);
/* Mapped files in the table (map ids 1..n), and how many of them a frame
 * has landed in (*tried, if not NULL): every executable mapping of a
 * process is known once its maps are read, but only those are opened. */
size_t bt_stack_table_nmaps(struct bt_stack_table *t, size_t *tried);
/* Map id map into m (its path copied into path), with a duplicate of its
 * descriptor in *fd (-1: kept by path only; the caller closes it). 0,
 * -ENOENT for no such map id, or -EAGAIN while no frame has landed in it
 * (it is not opened yet: a copy now would have no descriptor, and its path
 * may be deleted by the time a frame makes one). */
int bt_stack_table_map_copy(struct bt_stack_table *t, uint32_t map, struct bt_dump_map *m, char *path, size_t pathlen,
			    int *fd);
/* The names of the table's JIT frames (perf_maps.h): wanted as their
 * stacks are defined, read by the symbol loader and each dump. */
/* The Python code objects' names the BPF side sent (py_codes.h). */
struct bt_pycodes *bt_stack_table_pycodes(struct bt_stack_table *t);
struct bt_perfmaps *bt_stack_table_perfmaps(struct bt_stack_table *t);
#endif
