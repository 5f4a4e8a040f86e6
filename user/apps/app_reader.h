/* SPDX-License-Identifier: MIT */
/*
 * app_reader.h - the recorder's reader of an application's shared-memory
 * block buffer (layout: app_shm.h). The application is untrusted: every
 * index comes from the recorder's own copy of the geometry, every block is
 * copied before it is looked at, and a block whose header, framing or events
 * do not check out is dropped and counted, never delivered.
 */
#ifndef BTRACE_APP_READER_H
#define BTRACE_APP_READER_H
#include <stddef.h>
#include <stdint.h>
#include "app_shm.h"
#include "btrace_buffer.h"

/* The recorder's trusted view of one buffer. */
struct bt_app_view {
	uint8_t *base;   /* mapping of the whole memfd */
	size_t size;
	uint32_t bsize, A, N, R, ncores, pid;
};

struct bt_app_read_stats {
	uint64_t blocks_read;  /* delivered */
	uint64_t blocks_bad;   /* header, framing or an event failed validation: dropped */
	uint64_t blocks_lost;  /* overwritten while being read: dropped */
	uint64_t blocks_busy;  /* a write in flight (or never confirmed): not delivered */
	uint64_t blocks_empty; /* never used */
	uint64_t blocks_partial; /* delivered up to an entry reserved and never written (a writer
				  * in the middle of it, or dead): the entries after it are not */
	uint64_t entries;      /* events in delivered blocks */
};

/* Deliver every valid block, oldest position first (see bt_block_view; data
 * points at a private copy valid during the callback). cb may stop the walk
 * by returning non-zero, which is returned. */
int bt_app_read(const struct bt_app_view *v, bt_block_cb cb, void *ctx, struct bt_app_read_stats *st);
/* The same, without the blocks whose position skip (given ctx) says the
 * caller has (a reader that follows the buffer: func_watch.c). */
int bt_app_read_skip(const struct bt_app_view *v, int (*skip)(uint64_t pos, void *ctx), bt_block_cb cb, void *ctx,
		     struct bt_app_read_stats *st);

/* A buffer copied at one moment (bt_app_capture: slot by slot, oldest round
 * first, each slot one bulk copy between two reads of its blocks' headers),
 * validated and delivered later by bt_app_capture_read exactly as
 * bt_app_read would have at the moment of the copy. */
struct bt_app_cap_block;
struct bt_app_capture {
	struct bt_app_view v;            /* geometry; base NULL */
	uint8_t *data;                   /* N blocks */
	size_t len;
	struct bt_app_cap_block *blk;    /* [N] */
	struct bt_app_read_stats pre;    /* counted while copying */
	uint64_t copy_ns;                /* how long the copy took */
	uint32_t tries;                  /* passes: a pass the writer outran is repeated */
	uint32_t visited;                /* blocks the pass came to so far */
};
#define BT_APP_CAPTURE_TRIES 3
/* 0 or -ENOMEM. */
int bt_app_capture(const struct bt_app_view *v, struct bt_app_capture *cap);
int bt_app_capture_read(const struct bt_app_capture *cap, bt_block_cb cb, void *ctx, struct bt_app_read_stats *st);
void bt_app_capture_release(struct bt_app_capture *cap);
#endif
