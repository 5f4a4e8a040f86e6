/* SPDX-License-Identifier: MIT */
/*
 * handover_int.h - the handed file's on-memory layout (handover.h), shared
 * by its writer (handover_shm.c) and its validating reader (handover_read.c).
 */
#ifndef BTRACE_HANDOVER_INT_H
#define BTRACE_HANDOVER_INT_H
#include <stdatomic.h>
#include <stdint.h>
#include "handover.h"
#include "task_list.h"

#define BT_HO_PAGE 4096u
#define BT_HO_LIVE_OFF 512u

/* Page 0: written once by the recorder that lays the file out. */
struct bt_ho_header {
	uint64_t magic;
	uint32_t version, header_bytes;  /* sizeof(struct bt_ho_header) */
	uint32_t block_size, active, ncores, ncpus;
	uint64_t max_size;               /* data bytes */
	uint64_t meta_off, meta_bytes;
	uint64_t state_off, state_bytes; /* two slots of state_bytes */
	uint64_t data_off, file_size;
	uint64_t sum;                    /* bt_ho_sum of the fields above */
};

/* At BT_HO_LIVE_OFF of page 0: what the running recorder changes. */
struct bt_ho_live {
	_Atomic uint32_t pid;
	_Atomic uint32_t state;     /* enum bt_ho_state */
	_Atomic uint64_t state_gen; /* the last complete state slot: gen % 2 */
	_Atomic uint64_t recorders; /* recorders that wrote this memory */
	/* The binary that wrote it: another one at the next start (a package
	 * upgrade or reinstall, then a restart) makes the reason "upgrade". */
	uint64_t exe_dev, exe_ino, exe_mtime_ns;
	char version[32];
};

/* At BT_HO_STACKS_DESC_OFF of page 0, written once at layout (files of
 * recorders before it hold zeros there: no stacks): where the two slots
 * of the stack table's snapshot lie, after the data part. */
#define BT_HO_STACKS_DESC_OFF 1024u
#define BT_HO_STACKS_MAGIC 0x314b545348544221ull /* "!BTHSTK1" */
#define BT_HO_STACKS_SLOT (32ull << 20)          /* a snapshot larger is not saved (counted) */
struct bt_ho_stacks_desc {
	uint64_t magic;
	uint64_t off, slot_bytes; /* two slots of slot_bytes from off */
	uint64_t sum;             /* bt_ho_sum of the three above */
	_Atomic uint64_t gen;     /* the last complete slot: gen % 2; 0 none */
};

/* A stacks slot: this, then the packed stack table (as a dump's STKP),
 * padded to 8, then the births (bt_stack_births_arrays): slot[nids] u32
 * padded to 8, ep_ts[nring * ncpus] u64, hi_ts[ncpus] u64. */
struct bt_ho_stacks_slot {
	uint64_t gen;
	uint64_t sum;         /* bt_ho_sum, seeded with gen, of the fields after it and the payload */
	uint64_t saved_boot_ns;
	uint64_t stacks_len;
	uint32_t nids, ncpus, nring, reserved;
};

/* The slot's layout, one place for its writer and its readers: where
 * the births start, where ep_ts starts, and the whole slot's bytes. */
static inline uint64_t bt_ho_pad8(uint64_t x)
{
	return (x + 7) & ~7ull;
}
static inline uint64_t bt_ho_stacks_slot_off(uint64_t stacks_len)
{
	return sizeof(struct bt_ho_stacks_slot) + bt_ho_pad8(stacks_len);
}
static inline uint64_t bt_ho_stacks_ep_off(uint64_t stacks_len, uint32_t nids)
{
	return bt_ho_stacks_slot_off(stacks_len) + bt_ho_pad8((uint64_t)nids * 4);
}
static inline uint64_t bt_ho_stacks_bytes(uint64_t stacks_len, uint32_t nids, uint32_t nring, uint32_t ncpus)
{
	return bt_ho_stacks_ep_off(stacks_len, nids) + ((uint64_t)nring + 1) * ncpus * 8;
}

/* This process's binary (/proc/self/exe); zeros if unknown. */
void bt_ho_exe_identity(uint64_t *dev, uint64_t *ino, uint64_t *mtime_ns);

/* A state slot: this, then ntasks struct bt_task. */
struct bt_ho_slot {
	uint64_t gen;
	uint64_t ntasks;
	uint64_t sum; /* bt_ho_sum of cnt and the tasks, seeded with gen */
	uint64_t pad;
	struct bt_ho_counters cnt;
};

#define BT_HO_STATE_BYTES(ntasks) (sizeof(struct bt_ho_slot) + (uint64_t)(ntasks) * sizeof(struct bt_task))

/* A 64-bit checksum of len bytes (any alignment), seeded. */
uint64_t bt_ho_sum(uint64_t seed, const void *p, size_t len);
#endif
