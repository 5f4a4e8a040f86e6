/* SPDX-License-Identifier: MIT */
/*
 * app_shm.h - layout of an application's shared-memory block buffer, shared
 * by the application library (btrace_app.c, the writers) and the recorder
 * (app_reader.c, a reader that trusts nothing in it).
 *
 * The recorder creates one memfd per registered process, sizes and seals it
 * (no shrink, no grow: the application can never make the recorder's mapping
 * fault), writes the geometry into the header and hands the fd over the
 * control socket. The application maps it and writes; the recorder reads
 * with its own copy of the geometry and validates every block it takes.
 *
 *   offset 0          struct bt_app_shm (geometry + the global position word)
 *   meta_off          struct bt_app_meta[A]     alloc/conf words per active block
 *   cores_off         struct bt_app_core[ncores] the block each CPU writes
 *   data_off          N = R * A blocks of block_size bytes
 *
 * The algorithm is the block buffer's (btrace_buffer.c, BTrace sections 3-4)
 * with a fixed geometry: position p (handed out by FAA on `global`, starting
 * at A) is meta m = p % A in round r = p / A, stored in data block
 * (r % R) * A + m. alloc/conf are [rnd:32 | bytes:32]; a round is complete
 * when conf's bytes reach block_size; a meta is locked for a later round by
 * CAS on conf only when its current round is complete (implicit reclaiming),
 * otherwise the position is skipped. Resizing replaces the whole buffer (the
 * recorder sends a new memfd; see app_registry.c).
 */
#ifndef BTRACE_APP_SHM_H
#define BTRACE_APP_SHM_H
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "events.h"
#include "btrace_buffer.h" /* struct bt_block_hdr, struct bt_entry_hdr, BT_ENTRY_* */

#define BT_APP_SHM_MAGIC 0x314d485341544221ull /* "!BTASHM1" */
#define BT_APP_SHM_VERSION 1
#define BT_APP_LINE 128         /* one cache-line pair per shared word */
#define BT_APP_NAME_MAX 63      /* longest event name (bytes, no NUL) */
#define BT_APP_MAX_NAMES 65535  /* name ids 1..65535 */
#define BT_APP_MAX_CORES 1024
#define BT_APP_MIN_BLOCKS_PER_META 2 /* R >= 2: a reader can tell a reused block */
/* The buffer a starting process writes in before the recorder answers its
 * registration (app_early.c); recorders take early buffers up to this
 * size even when theirs are smaller (app_registry.c: buf_adopt). */
#define BT_APP_EARLY_SIZE (4ull << 20)
#define BT_APP_EARLY_BLOCK 16384u

#define BT_APP_RP(r, b) (((uint64_t)(uint32_t)(r) << 32) | (uint32_t)(b))
#define BT_APP_RND(x) ((uint32_t)((x) >> 32))
#define BT_APP_BYTES(x) ((uint32_t)(x))

struct bt_app_shm {
	/* written once by the recorder before the fd is handed over */
	uint64_t magic;
	uint32_t version;
	uint32_t block_size;  /* power of two, 256..64K */
	uint32_t active;      /* A */
	uint32_t nblocks;     /* N = R * A */
	uint32_t ncores;
	uint32_t pid;         /* the process the buffer belongs to */
	uint64_t meta_off, cores_off, data_off, total_size;
	uint64_t reserved[6];
	/* written by the application (untrusted, informational) */
	_Atomic uint64_t global __attribute__((aligned(BT_APP_LINE))); /* next position */
	struct {
		_Atomic uint64_t dropped;   /* no block could be taken (every candidate busy), or
					     * written by a signal handler inside the thread's own write */
		_Atomic uint64_t rejected;  /* larger than a block */
		_Atomic uint64_t skipped;   /* positions skipped: block held by a lagging writer */
		_Atomic uint64_t races;     /* blocks locked by two threads of one CPU at once */
		_Atomic uint64_t names;     /* names interned (ids 1..names): the recorder
					     * counts those it never received as lost */
	} stats __attribute__((aligned(BT_APP_LINE)));
};

struct bt_app_meta {
	_Atomic uint64_t alloc; /* [rnd | bytes reserved] */
	_Atomic uint64_t conf;  /* [rnd | bytes confirmed] */
} __attribute__((aligned(BT_APP_LINE)));

struct bt_app_core {
	_Atomic uint64_t cur; /* [rnd | meta] of the block this CPU writes; 0 = none */
} __attribute__((aligned(BT_APP_LINE)));

/* Library internal, for tests without a recorder (stress_app): write into
 * the buffer of this fd from now on (as a resize would). 0 or -EINVAL. */
int btrace_attach_fd_(int fd);

/* Geometry for a buffer of about `size` bytes of data: block size, A and N.
 * 0 or -EINVAL (message in err). */
int bt_app_geometry(uint64_t size, uint32_t block_size, uint32_t ncores, uint32_t *A, uint32_t *N, char *err,
		    size_t errlen);

/* Write a fresh header and zeroed state into base (size bytes, zero-filled). */
void bt_app_shm_init(void *base, uint32_t bsize, uint32_t A, uint32_t N, uint32_t ncores, uint32_t pid);

/* Offsets of a buffer with this geometry; returns the total size. */
static inline uint64_t bt_app_shm_layout(uint32_t block_size, uint32_t active, uint32_t nblocks,
					 uint32_t ncores, uint64_t *meta_off, uint64_t *cores_off,
					 uint64_t *data_off)
{
	uint64_t off = (sizeof(struct bt_app_shm) + 4095) & ~4095ull;
	*meta_off = off;
	off += (uint64_t)active * sizeof(struct bt_app_meta);
	*cores_off = off;
	off += (uint64_t)ncores * sizeof(struct bt_app_core);
	off = (off + 4095) & ~4095ull;
	*data_off = off;
	return off + (uint64_t)nblocks * block_size;
}

/* Bytes one event with nargs arguments takes in a block (entry header included). */
static inline uint32_t bt_app_entry_size(unsigned nargs)
{
	return (uint32_t)(BT_ENTRY_HDR + sizeof(struct bt_ev_app) + 8u * nargs);
}
#endif
