/* SPDX-License-Identifier: MIT */
/*
 * cold_tier.h - the compressed cold tier behind the block buffer.
 *
 * The block buffer (btrace_buffer.h) keeps the latest history raw. Before its
 * oldest blocks are overwritten, a follower thread (bt_cold_pump) copies each
 * block once it is complete, compresses groups of them (lz4 or zstd) and
 * appends them to a second region of the recorder's memory budget, which
 * drops its own oldest groups first. A dump reads the cold tier for the
 * history older than the buffer (bt_cold_read), then the buffer.
 *
 *   writers -> [ hot: raw blocks, oldest overwritten ]
 *                     | pump: complete blocks, in position order
 *                     v
 *              [ cold: compressed groups, oldest dropped ] -> dump (older part)
 *
 * Concurrency contract:
 *   bt_cold_pump()     one thread (the compressor), concurrently with writers
 *                      of the buffer (it reads with bt_read_follow) and with
 *                      readers of the tier; it never blocks the buffer's writers.
 *   bt_cold_read()     any thread; holds the tier's lock only while it copies
 *                      the compressed bytes, decompresses afterwards.
 *   bt_cold_resize(), bt_cold_stats(): any thread.
 *
 * Losses are counted, never silent: a block overwritten in the buffer before
 * the pump copied it breaks its core's chain of blocks (each block names the
 * same core's previous one), and that break is counted in `gaps`; groups
 * dropped for room are the tier's normal oldest-first overwrite (`evicted`).
 * A read never delivers a hole: a core's blocks older than a break in its
 * chain (or older than a break between the tier and the buffer) are left
 * out and counted (blocks_cut), so only the oldest end of a core's history
 * is lost, as in any flight recorder, and never its middle.
 */
#ifndef BTRACE_COLD_TIER_H
#define BTRACE_COLD_TIER_H
#include <stddef.h>
#include <stdint.h>
#include "btrace_buffer.h"

enum bt_codec {
	BT_CODEC_LZ4 = 1,
	BT_CODEC_ZSTD = 2,
};

struct bt_cold_config {
	size_t size;           /* bytes of compressed storage (groups and their headers) */
	enum bt_codec codec;
	int level;             /* lz4: acceleration (1 = default); zstd: level (-5..3 sensible) */
	uint32_t group_blocks; /* blocks compressed together (1..64; 0 = 4) */
};

struct bt_cold_stats {
	uint64_t blocks_in;       /* blocks compressed into the tier */
	uint64_t raw_bytes_in;    /* their bytes */
	uint64_t stored_bytes_in; /* compressed bytes stored for them (headers included) */
	uint64_t blocks_raw;      /* of blocks_in, stored uncompressed: the budget paid for no more */
	uint64_t blocks_held_raw; /* of the blocks held now, those stored uncompressed */
	uint64_t groups_evicted;  /* groups dropped for room (oldest first) */
	uint64_t blocks_evicted;  /* their blocks */
	uint64_t gaps;            /* chain breaks: blocks overwritten before the pump copied them */
	uint64_t pumps;           /* bt_cold_pump calls */
	uint64_t nudges;          /* pumps woken early by the drain (bt_cold_nudge) */
	uint64_t cpu_ns;          /* thread CPU time spent in bt_cold_pump */
	uint64_t copy_ns;         /* apart from cpu_ns: passes that only copied, with their wakeups
				   * (past the budget, not charged; cold_pump.c) */
	/* The compressor's CPU budget (bt_cold_budget_*, set by its thread). */
	uint32_t budget_ppm;      /* share of one CPU, millionths; 0 = unbounded */
	uint64_t held_back;       /* passes the budget cut short or put off with blocks due */
	uint64_t held_back_ago_ns; /* since the last of them, UINT64_MAX if none */
	size_t size;              /* storage bytes */
	size_t used;              /* bytes held by groups now */
	uint32_t groups, blocks;  /* held now in compressed groups */
	uint64_t oldest_pos, newest_pos; /* positions held, BT_NO_POS if none */
	enum bt_codec codec;
	int level;
};

struct bt_cold_read_stats {
	uint64_t blocks_read;   /* delivered */
	uint64_t blocks_bad;    /* a group that did not decompress to whole blocks: dropped, counted */
	uint64_t blocks_unsettled; /* taken early (beyond the settled position): read from the buffer */
	uint64_t blocks_cut;    /* older than a hole in their core's chain: left out (the oldest end) */
};

struct bt_cold;

/* NULL + errno + message on a bad configuration or no memory. */
struct bt_cold *bt_cold_create(const struct bt_cold_config *cfg, uint32_t block_size, char *err,
			       size_t errlen);
void bt_cold_destroy(struct bt_cold *c);

/* The compressor's wakeup. The drain calls bt_cold_nudge() after each pass
 * with the buffer's blocks_used: once a sixteenth of the buffer was used since
 * the pump's last pass began, the thread waiting in bt_cold_wait() wakes at
 * once instead of at the end of its sleep, so it takes the blocks long before
 * writers come round to overwrite them. Cheap when nothing is due (two
 * relaxed loads); a mutex and a signal when it is. bt_cold_wake() always wakes
 * (stopping). bt_cold_wait() returns 1 if woken, 0 on timeout. */
void bt_cold_nudge(struct bt_cold *c, uint64_t blocks_used, uint32_t nblocks);
/* The nudge comes once 1/BT_COLD_NUDGE_DIV of the buffer was used; the
 * pump sleeps no longer than that takes, and takes blocks with a quarter
 * turn to spare (cold_pump.c: take_end), four times this interval. At an
 * eighth (twice), a drain that fills blocks faster left the pump too
 * little of the turn: 1-6 gaps a dd storm beside two busy loops (test_cold_budget),
 * 0 in 4 at a sixteenth, for 0.5 ns more of its CPU a traced call. */
#define BT_COLD_NUDGE_DIV 16
void bt_cold_wake(struct bt_cold *c);
/* The drain's nudges count from blocks_used again: a compressor that waits
 * for its budget is not woken by every drain pass meanwhile. */
void bt_cold_nudge_from(struct bt_cold *c, uint64_t blocks_used);
int bt_cold_wait(struct bt_cold *c, uint64_t timeout_ns);

/* Copy into the tier every block of b completed since the last call
 * (positions in order; a block still being written is taken by a later
 * call). Returns the number of blocks taken or -errno. */
int bt_cold_pump(struct bt_cold *c, struct bt_buffer *b);

/* What one pass did with the groups it closed (a group may hold blocks
 * taken by earlier passes). */
struct bt_cold_pass {
	uint32_t stored_raw; /* blocks stored as they are */
	uint32_t compressed; /* blocks compressed */
	uint64_t codec_ns;   /* the thread's CPU time in the codec */
};

/* The same for positions below `before` only (the newer blocks are left
 * in the buffer for a later call), compressing at most max_compressed
 * blocks, oldest first: the groups past that are stored as they are (a
 * copy), so a CPU budget too small to compress everything still keeps the
 * blocks past the buffer's overwrite. *out (if not NULL) says how. */
int bt_cold_pump_upto(struct bt_cold *c, struct bt_buffer *b, uint64_t before, uint32_t max_compressed,
		      struct bt_cold_pass *out);

/* The compressor thread's budget, for the stats only (cold_pump.c keeps
 * it): its share of one CPU, each time it held the tier back, and the CPU
 * of passes that only copied blocks (not charged to the budget). */
void bt_cold_budget_set(struct bt_cold *c, uint32_t ppm);
void bt_cold_budget_held_back(struct bt_cold *c);
void bt_cold_budget_copied(struct bt_cold *c, uint64_t cpu_ns);

/* Deliver the tier's settled blocks, oldest first, decompressed, as bt_read()
 * does (the view's data is valid during cb only). Settled: below the pump's
 * position, before which every block was taken (or its loss counted in gaps).
 * *hot_from gets that position: the caller then reads the buffer from it on
 * (bt_read_range), so the two tiers join without a duplicate.
 * A non-zero return from cb stops and is returned. */
int bt_cold_read(struct bt_cold *c, bt_block_cb cb, void *ctx, struct bt_cold_read_stats *st,
		 uint64_t *hot_from);

/* A dump's view of the tier: its groups copied at one moment (under the
 * lock, compressed), and which blocks it will deliver: the settled ones
 * below before (a capture's oldest position, bt_capture_oldest_pos), less
 * each core's blocks older than a hole in its chain. join[core] (njoin
 * cores, may be NULL) is the prev_pos of the core's oldest block read after
 * the tier (bt_capture_first_prev), BT_NO_POS if none: a tier whose newest
 * block of that core is older than it does not join the buffer, and that
 * core's tier blocks are left out too. The counts are known before any
 * block is read (a dump writes them ahead of the blocks). NULL: no memory. */
struct bt_cold_snap;
struct bt_cold_snap_info {
	uint64_t blocks;           /* to deliver */
	uint64_t blocks_raw;       /* of them, stored uncompressed (the budget paid for no more) */
	uint64_t blocks_cut;       /* left out: older than a hole in their core's chain */
	uint64_t blocks_unsettled; /* taken early, beyond the settled position */
	uint64_t hot_from;         /* the settled position (or before, if lower) */
};
struct bt_cold_snap *bt_cold_snap_take(struct bt_cold *c, uint64_t before, const uint64_t *join, uint32_t njoin);
const struct bt_cold_snap_info *bt_cold_snap_info(const struct bt_cold_snap *s);
/* Deliver the snapshot's blocks, oldest first, decompressed (as bt_cold_read);
 * st: blocks_read, blocks_bad (a group that did not decompress), and the
 * snapshot's counts. Any number of times. */
int bt_cold_snap_read(struct bt_cold_snap *s, bt_block_cb cb, void *ctx, struct bt_cold_read_stats *st);
void bt_cold_snap_free(struct bt_cold_snap *s);

/* The oldest position the tier holds or may still take (its groups', or
 * the pump's settled position: the blocks waiting to make a group and
 * those it takes later are at or above it); nothing below it will ever be
 * read from the tier again. 0 before the pump's first pass. For the stack
 * table, whose ids must outlive every event that names them. */
uint64_t bt_cold_kept_from(struct bt_cold *c);

/* New storage size; the oldest groups go first. -EINVAL below one group
 * (bt_cold_min_size: the bytes of one group at its largest). */
size_t bt_cold_min_size(const struct bt_cold *c);
int bt_cold_resize(struct bt_cold *c, size_t size, char *err, size_t errlen);

void bt_cold_stats(struct bt_cold *c, struct bt_cold_stats *st);

/* The budget "held the tier back" recently: within this of the last
 * pass it cut short or put off (ctl status, the dump's manifest). */
#define BT_COLD_BOUND_RECENT_NS 2000000000ull

/* Blocks held only by the tier: compressed, and no longer in the buffer
 * (positions below its oldest). What the tier adds to the window. */
uint64_t bt_cold_only_blocks(const struct bt_cold_stats *cs, const struct bt_stats *bs);

/* Blocks of positions whose events the buffer and the tier still hold
 * together, given kept_from (bt_cold_kept_from; UINT64_MAX without a
 * tier): the buffer's nblocks, or more when the tier reaches back further. What the live window
 * (live_window.h) counts back over. */
uint64_t bt_cold_retained_span(uint64_t kept_from, const struct bt_stats *bs);

/* "lz4", "zstd"; 0 or -EINVAL on parsing. */
int bt_codec_parse(const char *s, enum bt_codec *out);
const char *bt_codec_name(enum bt_codec c);

#endif
