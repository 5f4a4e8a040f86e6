/* SPDX-License-Identifier: MIT */
/*
 * btrace_buffer.h - the block-partitioned flight-recorder buffer (libbtrace).
 *
 * One global buffer of N equally sized data blocks, handed out to cores one
 * block at a time and overwritten oldest-first (the BTrace design, ASPLOS'25,
 * sections 3 and 4). See btrace_buffer.c for the design comment.
 *
 * Concurrency contract:
 *   bt_write()          any number of threads, for any core, at once;
 *                       lock-free, never blocks, never waits for another writer.
 *   bt_read()           up to BT_MAX_READERS readers at once, concurrently with
 *                       writers; never blocks writers (speculative reads).
 *   bt_resize()         one resizer at a time (others get -EBUSY); concurrent
 *                       with writers and readers.
 *   bt_buffer_destroy() only when nobody else uses the buffer.
 *
 * Errors: functions return 0 or a negative errno; constructors return NULL and
 * set errno (and fill an optional error message).
 */
#ifndef BTRACE_BUFFER_H
#define BTRACE_BUFFER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BT_MAX_READERS 8
#define BT_MAX_CORES 4096
#define BT_MIN_BLOCK_SIZE 256u
#define BT_MAX_BLOCK_SIZE (1u << 16) /* conf packs bytes and entries in 32 bits */
#define BT_DEFAULT_BLOCK_SIZE 4096u
#define BT_NO_POS UINT64_MAX /* "no block": first block of a core, etc. */

/* Every block starts with this header; entries follow at offset BT_BLOCK_HDR. */
struct bt_block_hdr {
	uint64_t pos;      /* global position of the block (round * A + meta); 0 = never used */
	uint64_t prev_pos; /* position of the same core's previous block, BT_NO_POS if none */
	uint32_t core;     /* core that owns the block, BT_RESIZER_CORE for internal blocks */
	uint32_t flags;    /* reserved, 0 */
};
#define BT_BLOCK_HDR ((uint32_t)sizeof(struct bt_block_hdr))
#define BT_RESIZER_CORE UINT32_MAX

/* Every entry in a block starts with this header; payload follows. */
struct bt_entry_hdr {
	uint32_t size; /* header + payload bytes; the next entry starts 8-aligned after it */
	uint32_t kind; /* BT_ENTRY_DATA or BT_ENTRY_PAD */
};
#define BT_ENTRY_HDR ((uint32_t)sizeof(struct bt_entry_hdr))
#define BT_ENTRY_DATA 0x44415441u /* "DATA" */
#define BT_ENTRY_PAD 0x50414444u  /* "PADD": dummy data, never returned */

/* Largest payload bt_write() accepts for a given block size. */
#define BT_MAX_PAYLOAD(block_size) ((block_size) - BT_BLOCK_HDR - BT_ENTRY_HDR)

/* Where a buffer's state lives when it must outlive its process (the
 * recorder's hand-over, user/handover/): the metadata words at meta_off
 * and the data blocks at data_off of file fd (a memfd), mapped shared.
 * The buffer zeroes both at create; the file must be that large. */
struct bt_shm_place {
	int fd;
	uint64_t meta_off; /* page-aligned, bt_buffer_meta_bytes(A) bytes */
	uint64_t data_off; /* page-aligned, max_size bytes */
};

struct bt_config {
	const struct bt_shm_place *shm; /* NULL: private anonymous memory */
	size_t size;          /* initial capacity in bytes (data blocks only) */
	size_t max_size;      /* virtual reservation; 0 = same as size */
	uint32_t block_size;  /* power of two, BT_MIN_BLOCK_SIZE..BT_MAX_BLOCK_SIZE; 0 = 4 KiB */
	uint32_t ncores;      /* cores that write (core ids 0..ncores-1) */
	uint32_t active;      /* A, number of active (metadata) blocks; 0 = 16 * ncores */
	uint32_t start_round; /* first round number, 0 = 1 (tests start near 2^32 to test wrap) */
	unsigned prefault:1;  /* back the initial size at create so writes never page-fault
			       * (a grow is backed lazily: see map_slot()) */
};

/* Counters, snapshot by bt_buffer_stats(): exact when writers are quiescent;
 * while they run, entries/bytes are within the blocks being written. */
struct bt_stats {
	uint64_t entries_written;   /* entries confirmed in a block */
	uint64_t bytes_written;     /* space those entries take (headers, 8-byte alignment) */
	uint64_t entries_rejected;  /* larger than a block: -EMSGSIZE */
	uint64_t entries_dropped;   /* -EAGAIN: every candidate block held by stalled writers */
	uint64_t padding_bytes;     /* dummy data (block ends, closing, stale reservations) */
	uint64_t blocks_used;       /* blocks locked for writing (each advance) */
	uint64_t blocks_closed;     /* blocks closed early by block closing (not filled by their core) */
	uint64_t blocks_skipped;    /* positions skipped because a lagging writer held the block */
	uint64_t positions_stale;   /* positions skipped because another producer got there first */
	uint64_t core_races;        /* advances that lost the race for the core (block closed empty) */
	uint64_t resizes;           /* completed bt_resize() calls */
	size_t size;                /* current capacity (bytes of data blocks) */
	size_t max_size;            /* reserved capacity */
	size_t resident;            /* bytes of data blocks backed by memory now */
	size_t metadata_bytes;      /* fixed metadata (never reclaimed) */
	uint32_t block_size, nblocks, active, ncores;
};

/* What a reader was handed for one block. */
struct bt_block_view {
	uint64_t pos;      /* global position, increasing with time of locking */
	uint64_t prev_pos; /* the same core's previous block, BT_NO_POS if none */
	uint32_t core;
	uint32_t used;     /* bytes of entries (from BT_BLOCK_HDR), padding included */
	int complete;      /* 1: block closed; 0: active block read up to its confirmed prefix */
	const uint8_t *data; /* whole block copy; valid only during the callback */
};

/* Reader accounting for one bt_read() pass. */
struct bt_read_stats {
	uint64_t blocks_read;        /* delivered to the callback */
	uint64_t blocks_lost;        /* overwritten while being read: dropped, never torn */
	uint64_t blocks_busy;        /* active block with a write in flight: not delivered */
	uint64_t blocks_empty;       /* never used since creation */
	uint64_t entries;            /* data entries in delivered blocks */
	uint64_t first_busy;         /* lowest position not delivered as busy, BT_NO_POS if none */
	uint64_t first_unpublished;  /* BT_READ_COMPLETE: lowest position a writer holds whose block
				      * is not published yet, BT_NO_POS if none (see bt_read_range) */
};

struct bt_buffer;

/* Create a buffer; on failure returns NULL, sets errno, and (if err != NULL)
 * writes a one-line reason to err[0..errlen). */
struct bt_buffer *bt_buffer_create(const struct bt_config *cfg, char *err, size_t errlen);
void bt_buffer_destroy(struct bt_buffer *b);

/* The geometry bt_buffer_create(cfg) would choose: A, the size (cfg->size
 * rounded down to whole slots of A blocks) and the reserved size, each
 * where not NULL; 0, or -EINVAL with a reason in err. */
int bt_buffer_geometry(const struct bt_config *cfg, uint32_t *A, size_t *size, size_t *max_size, char *err,
		       size_t errlen);
/* Bytes of the metadata words of A active blocks (bt_shm_place.meta_off). */
size_t bt_buffer_meta_bytes(uint32_t A);

/* Append one entry for `core`. Returns 0, -EMSGSIZE (entry can never fit a
 * block; counted), -EINVAL (core out of range), -EAGAIN (every candidate
 * block was held by a stalled writer for 2*A advances; counted, only with
 * pathological settings such as A close to the number of threads). Never
 * blocks, never waits for another writer. */
int bt_write(struct bt_buffer *b, uint32_t core, const void *data, uint32_t len);

/* Reserve/commit form for callers that build the entry in place. The pointer
 * is valid until bt_commit(); commit exactly once. */
struct bt_reservation {
	void *data;
	void *meta_;     /* internal */
	uint32_t size_;  /* internal */
	uint32_t core_;  /* internal */
};
int bt_reserve(struct bt_buffer *b, uint32_t core, uint32_t len, struct bt_reservation *r);
void bt_commit(struct bt_buffer *b, struct bt_reservation *r);

/* Payload bytes the next entry for `core` can take without padding the
 * core's current block and moving on: BT_MAX_PAYLOAD when that block is
 * (nearly) full or there is none, as the entry then starts a new one. A
 * hint for a core's only writer splitting what it writes at the block's
 * end; with several writers another may take the room first (the entry
 * then goes to the next block, as it would have). */
uint32_t bt_room(const struct bt_buffer *b, uint32_t core);

/* Speculatively read every retained block, oldest position first, handing a
 * private copy of each valid block to cb. A non-zero return from cb stops the
 * walk and is returned. Blocks overwritten during the read are dropped and
 * counted in st. Never blocks writers. */
typedef int (*bt_block_cb)(const struct bt_block_view *blk, void *ctx);
int bt_read(struct bt_buffer *b, bt_block_cb cb, void *ctx, struct bt_read_stats *st);

/* The same for the blocks at positions >= min_pos only. With BT_READ_COMPLETE
 * an active block is not waited for nor delivered: it counts as busy and the
 * lowest such position is st->first_busy (a follower such as the cold tier
 * comes back for it once it completes). So also, in st->first_unpublished,
 * a position handed out to a writer that has not published its block yet
 * (it may still be preempted between the two): the follower waits for it
 * rather than step past it. Only the newest half of the buffer's positions
 * are waited for: an older one (a writer stalled that long, or a position
 * its writer skipped) is let go, and its block, if it ever comes, breaks
 * its core's chain. */
#define BT_READ_COMPLETE 0x1u
int bt_read_range(struct bt_buffer *b, uint64_t min_pos, unsigned flags, bt_block_cb cb, void *ctx,
		  struct bt_read_stats *st);

/* A follower's pass (the cold tier's): the complete blocks at positions
 * [from, to), in order, as bt_read_range(b, from, BT_READ_COMPLETE, ...)
 * would deliver them below `to`, with the same first_busy and
 * first_unpublished, but each block found from its position (no scan of
 * every header) and copied straight to dst(ctx), asked before each block
 * (v->data is then that pointer; the bytes there are the caller's again
 * after a block not delivered). After a resize since `from` it is
 * bt_read_range (v->data a private copy, positions past `to` delivered:
 * the callback stops the walk). btrace_follow.c. */
typedef uint8_t *(*bt_follow_dst)(void *ctx);
int bt_read_follow(struct bt_buffer *b, uint64_t from, uint64_t to, bt_follow_dst dst, bt_block_cb cb, void *ctx,
		   struct bt_read_stats *st);

/* A capture: every retained block copied at one moment, so a slow reader
 * (a dump compressing and writing) works on it while writers go on.
 * bt_capture() copies the blocks slot by slot, oldest round first (the
 * ones writers overwrite next), each slot with one bulk copy between two
 * reads of its blocks' sequence words: a block overwritten during its copy
 * is dropped and counted in st->blocks_lost, never kept torn. The buffer's
 * counters (bt_buffer_stats) are taken right after the copy. Returns NULL
 * and sets errno (ENOMEM, EBUSY: BT_MAX_READERS readers already). */
struct bt_capture;
struct bt_capture *bt_capture(struct bt_buffer *b, struct bt_read_stats *st);
/* Hand the captured blocks to cb, oldest position first (as bt_read()). */
int bt_capture_read(const struct bt_capture *c, bt_block_cb cb, void *ctx);
/* The oldest position captured, BT_NO_POS if none (where a cold tier's
 * history ends: cold_tier.h). */
uint64_t bt_capture_oldest_pos(const struct bt_capture *c);
/* prev[core] = the prev_pos of each core's oldest captured block (the
 * block a cold tier must end on to join it), BT_NO_POS if none, for cores
 * 0..ncores-1. */
void bt_capture_first_prev(const struct bt_capture *c, uint64_t *prev, uint32_t ncores);
/* The counters at the capture, and how long the copy took (ns, reader
 * entry to exit; allocation not included). */
const struct bt_stats *bt_capture_stats(const struct bt_capture *c);
/* What the capture kept and lost (as bt_capture's st). */
const struct bt_read_stats *bt_capture_read_stats(const struct bt_capture *c);
uint64_t bt_capture_copy_ns(const struct bt_capture *c);
void bt_capture_free(struct bt_capture *c);

/* What bt_capture_salvage found in a dead buffer's memory. */
struct bt_salvage_stats {
	uint64_t blocks_used;    /* blocks with a position */
	uint64_t blocks_kept;    /* handed to the capture */
	uint64_t blocks_bad;     /* refused: core, round or position not believable */
	uint64_t blocks_torn;    /* the open block of a round with a write in flight: kept to its confirmed bytes */
	uint64_t blocks_dup;     /* a position seen twice: the later copy refused */
	uint64_t entries_bad;    /* entries (event batches) refused by the caller's check (bt_capture_filter) */
};
/* A capture of a buffer whose writer is gone (it died or stopped), read
 * from its shared memory (bt_shm_place) as untrusted input: meta and data
 * as mapped, nblocks data blocks of bsize bytes, A metadata words. Every
 * block is checked against its metadata word; what is refused is counted
 * in ss, never read past its block. NULL with errno (EINVAL: bad geometry,
 * ENOMEM). present: per slot of A blocks, 0 if it has no memory (never
 * read: reading a hole of a memfd would allocate it), NULL all have.
 * The capture's counters are zero but for the geometry: set them with
 * bt_capture_set_stats. */
struct bt_capture *bt_capture_salvage(const void *meta, const void *data, uint32_t bsize, uint32_t A,
				      uint32_t ncores, uint32_t nblocks, const uint8_t *present,
				      struct bt_salvage_stats *ss);
void bt_capture_set_stats(struct bt_capture *c, const struct bt_stats *st);
/* Turn every entry keep() refuses (returns 0) into padding: what a
 * salvage's reader could not believe. Returns how many. */
typedef int (*bt_entry_keep_cb)(const struct bt_block_view *blk, const void *ent, uint32_t len, void *ctx);
uint64_t bt_capture_filter(struct bt_capture *c, bt_entry_keep_cb keep, void *ctx);

/* Iterate data entries of a block view: returns the next payload or NULL.
 * *off starts at 0. Padding is skipped; a malformed block ends the walk. */
const void *bt_block_next(const struct bt_block_view *blk, uint32_t *off, uint32_t *len);

/* Grow or shrink to `size` bytes (rounded down to a whole number of
 * A blocks). Memory released by a shrink is returned to the kernel before
 * this returns. -EINVAL bad size (msg in err), -E2BIG over max_size,
 * -EBUSY another resize is running, -ETIMEDOUT a writer stalled inside a
 * released block for over timeout_ms (the logical size changed; memory is
 * released by the next successful call). */
int bt_resize(struct bt_buffer *b, size_t size, unsigned timeout_ms, char *err, size_t errlen);

void bt_buffer_stats(const struct bt_buffer *b, struct bt_stats *st);

/* st.blocks_used alone, one relaxed load: for a writer's per-entry checks. */
uint64_t bt_buffer_blocks_used(const struct bt_buffer *b);

/* Size helpers: the capacity bt_resize(size) would give, and the granule. */
size_t bt_round_size(const struct bt_buffer *b, size_t size);
size_t bt_size_granule(const struct bt_buffer *b);

#ifdef __cplusplus
}
#endif
#endif /* BTRACE_BUFFER_H */
