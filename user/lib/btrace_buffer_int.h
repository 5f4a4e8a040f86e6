/* SPDX-License-Identifier: MIT */
/*
 * btrace_buffer_int.h - the block buffer's internals, shared by the buffer
 * (btrace_buffer.c: writers, readers, resize) and its bulk capture
 * (btrace_capture.c). Nothing outside user/lib includes this but the
 * buffer's unit test, to stage a writer preempted inside an advance.
 */
#ifndef BTRACE_BUFFER_INT_H
#define BTRACE_BUFFER_INT_H
#include "btrace_buffer.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define CACHELINE 128 /* two lines: the adjacent-line prefetcher pairs them */

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BT_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define BT_TSAN 1
#endif

/* [rnd:32 | pos:32] words of alloc and conf */
#define RND(x) ((uint32_t)((x) >> 32))
#define POS(x) ((uint32_t)(x))
#define RP(r, p) (((uint64_t)(uint32_t)(r) << 32) | (uint32_t)(p))

/* global word [gen:8 | pos:56] */
#define GEN_SHIFT 56
#define GPOS(g) ((g) & ((1ull << GEN_SHIFT) - 1))
#define GGEN(g) ((uint32_t)((g) >> GEN_SHIFT))
#define GWORD(gen, pos) (((uint64_t)((gen) & 0xff) << GEN_SHIFT) | (pos))

/* conf's low word [entries | bytes]: bytes take the low cbits bits */
#define CBYTES(b, x) ((uint32_t)(x) & ((1u << (b)->cbits) - 1))
#define CCOUNT(b, x) ((uint32_t)(x) >> (b)->cbits)

/* per-core word [rnd:32 | slot:16 | meta:16] */
#define CORE_NONE UINT64_MAX
#define CW(r, slot, m) RP(r, ((uint32_t)(slot) << 16) | (m))
#define CW_SLOT(c) ((uint32_t)((c) >> 16) & 0xffff)
#define CW_META(c) ((uint32_t)(c)&0xffff)

#define NLAYOUTS 4 /* generations whose layout may still be read */
#define PREFETCH_AHEAD 128 /* bytes past the entry being written */
#define MAX_SLOTS 0xfffe

static inline bool rnd_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

struct bt_meta {
	_Atomic uint64_t alloc;
	_Atomic uint64_t conf;
	_Atomic uint32_t didx; /* data block of the current round */
} __attribute__((aligned(CACHELINE)));

struct bt_core {
	_Atomic uint64_t cur; /* ratio_and_pos: the block this core writes */
} __attribute__((aligned(CACHELINE)));

struct bt_layout {
	_Atomic uint64_t base_round; /* 64-bit round that maps to order[0] */
	_Atomic uint32_t nslots;     /* R */
	_Atomic uint16_t *order;     /* physical slot of virtual slot i */
};

struct bt_reader {
	_Atomic uint32_t claimed;
	_Atomic uint64_t epoch; /* 0 = not reading */
} __attribute__((aligned(CACHELINE)));

struct bt_buffer {
	/* read-mostly geometry */
	uint8_t *data;
	uint32_t bsize, bshift, cbits, A, ncores, max_slots;
	uint64_t first_pos; /* the first position handed out (start_round * A) */
	size_t max_size;
	struct bt_meta *meta;
	struct bt_core *cores;
	struct bt_layout layouts[NLAYOUTS];
	bool prefault;
	int shm_fd;           /* -1: private memory; else meta and data live in this file */
	uint64_t shm_data_off;

	_Atomic uint64_t global __attribute__((aligned(CACHELINE)));

	/* slow-path counters */
	_Atomic uint64_t padding __attribute__((aligned(CACHELINE)));
	_Atomic uint64_t rejected, dropped, blocks_used, closed, skipped, stale, core_races;
	/* conf words of finished rounds, folded when their meta moves on */
	_Atomic uint64_t folded_entries, folded_bytes, phantom_bytes;
	/* Folds in progress (begun != done): stats retry rather than see a
	 * round in neither the totals nor its conf word, or in both. */
	_Atomic uint64_t folds_begun, folds_done;

	/* resize state (one resizer at a time) */
	atomic_flag resizing;
	_Atomic uint32_t nslots; /* current R, for stats */
	_Atomic uint64_t resizes;
	uint8_t *mapped;         /* [max_slots] slot has memory (resizer only) */
	_Atomic uint32_t nmapped; /* slots with memory, for stats from any thread */
	uint16_t *pending;       /* slots to release once safe */
	uint32_t npending;
	uint8_t *is_pending;     /* [max_slots] slot is in pending[] */
	bool retire_unfinished;  /* a shrink's retire timed out: finish it first */
	uint64_t retire_P;       /* ... at this generation start */
	struct bt_reader readers[BT_MAX_READERS];
	_Atomic uint64_t epoch __attribute__((aligned(CACHELINE)));
};

static inline uint8_t *block_at(const struct bt_buffer *b, uint32_t d)
{
	return b->data + ((size_t)d << b->bshift);
}

static inline struct bt_block_hdr *hdr_at(const struct bt_buffer *b, uint32_t d)
{
	return (struct bt_block_hdr *)block_at(b, d);
}

/* The header's pos is the block's sequence word (seqlock-style). */
static inline _Atomic uint64_t *hdr_pos(const struct bt_buffer *b, uint32_t d)
{
	return (_Atomic uint64_t *)&hdr_at(b, d)->pos;
}

static inline size_t slot_bytes(const struct bt_buffer *b)
{
	return (size_t)b->A << b->bshift;
}

/* Readers (btrace_buffer.c): an epoch slot keeps resized-away memory
 * mapped while a reader copies from it. */
int bt_reader_enter_(struct bt_buffer *b);
/* A read's start: *st (NULL: local) cleared, nothing busy or unpublished
 * yet, and bt_reader_enter_()'s slot, or -errno. */
int bt_read_begin_(struct bt_buffer *b, struct bt_read_stats **st, struct bt_read_stats *local);
void bt_reader_exit_(struct bt_buffer *b, int i);

enum bt_read_result { BT_READ_OK, BT_READ_LOST, BT_READ_BUSY };
/* Copy block d, expected at position expect, into scratch (block size,
 * 8-aligned) and describe it in v, validated by its sequence word. */
enum bt_read_result bt_read_block_(struct bt_buffer *b, uint32_t d, uint64_t expect, uint8_t *scratch,
				   struct bt_block_view *v);
#endif
