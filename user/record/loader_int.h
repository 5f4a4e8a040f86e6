/* SPDX-License-Identifier: MIT */
/*
 * loader_int.h - what loader.c (open, probe, load, attach) and drain.c
 * (the drain threads) share: the loader's and a drain's state. Not for
 * other files: they use loader.h.
 */
#ifndef BTRACE_LOADER_INT_H
#define BTRACE_LOADER_INT_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <linux/types.h>
#include "events.h"
#include "compact.h"
#include "live_window.h"
#include "loader.h"
#include "sys_pairs.h"

#define BT_MAX_DRAINS 1 /* see loader.h: room for a drain thread per group of CPUs */
#define BT_TASK_PENDING 4096 /* task events held back per drain (see the top) */
/* The programs of record.bpf.c the loader knows (prog_descs in loader.c). */
#define BT_LOADER_NPROGS 25

/* The per-CPU map value layout user space reads: 8-byte slots per CPU. */
_Static_assert(sizeof(struct bt_cpu_state) % 8 == 0, "bt_cpu_state size");

/* Stored events are at least 8 bytes (a next-event sys_enter): a batch
 * holds no more. */
#define BATCH_EVENTS_MAX (BT_BATCH_MAX / 8)

struct bt_drain {
	struct bt_loader *l;
	struct bt_rings *rb;
	/* The batch being filled (compact.h): events of one CPU, drain thread only. */
	uint8_t batch[BT_BATCH_MAX + BT_COMPACT_MAX];
	uint32_t blen, bcount, bcore;
	uint32_t bcap;        /* the batch's bytes at most: what the core's block still takes */
	struct bt_compact_prev bprev; /* the batch's last event (next-event forms) */
	uint32_t batch_limit; /* BT_BATCH_MAX, or less if blocks are that small */
	uint32_t nblocks;     /* the buffer's blocks at the last pass (the cold tier's nudge) */
	/* the batch's events as runs of seqs, for the live window */
	struct bt_live_run runs[BATCH_EVENTS_MAX];
	uint32_t nruns;
	unsigned ring_first, ring_count; /* the rings (CPUs) this drain owns */
	pthread_t thread;
	int running;
	atomic_int stop;
	/* Task events held back until they can be applied in time order
	 * (drain thread only); NULL: applied as they come. */
	struct bt_ev_task *pending;
	size_t npending;
	/* Enters stored from the kernel's slots (sys_pairs.h), drain thread only. */
	struct bt_sys_landed landed;
	/* Flush handshake (bt_loader_flush): under lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t flush_req, flush_done;
	/* Written by the drain thread only (plain load+store), read by others. */
	_Atomic uint64_t events, rejected, malformed, wakeups, exec_wakes;
	_Atomic uint64_t sys_pair_records, sys_pairs; /* BT_RAW_SYS_PAIR records, the pairs in them */
	_Atomic uint32_t wait_ms; /* the current wait between passes */
	_Atomic uint64_t ring_peak; /* bt_rings_peak(), for ctl status */
};

struct bt_loader {
	struct record_bpf *skel;
	struct bpf_link *links[BT_LOADER_NPROGS];
	unsigned nlinks;
	uint32_t groups;
	uint32_t ncpus;
	uint64_t ring_size;     /* per CPU */
	uint64_t wakeup_bytes;  /* per ring */
	int *ring_fds;          /* [ncpus], -1 when not created */
	unsigned drain_ms;
	struct bt_buffer *buf;
	struct bt_task_table *tasks;
	struct bt_drain drains[BT_MAX_DRAINS];
	unsigned ndrains;
	struct bt_stack_table *stacks; /* NULL: no stacks */
	struct bt_unwind_row *unwind_rows; /* the unwind rows map, mapped once; NULL: no tables */
	size_t unwind_rows_len;
	struct bt_stack_copies *copies; /* stack copies waiting for tables (loader_copies.c); NULL: none */
	struct bt_cold *cold;          /* NULL: no cold tier */
	bt_pass_hook pass_hook; /* after each drain pass, NULL: none */
	void *pass_ctx;
	struct bpf_link **sample_links; /* [ncpus]: the sampling program on each CPU's clock */
	int *sample_fds;                /* [ncpus] perf events, -1 none */
	int sampling_refused;           /* errno of a perf event refused by policy, 0: none */
	bt_probe_hook hook; /* uprobe/USDT events, see bt_loader_set_hook() */
	void *hook_ctx;
	int exec_ends_waits; /* the exec program is attached: it ends the drain's quiet waits */
	int sys_batch_fd;    /* handle_sys_batch_flush, run on each CPU for a dump; -1: no batches */
	struct bt_live *live; /* what the buffer holds, for `ctl status` */
};

/* loader_copies.c: open with the drain (0 or -errno; nothing when no
 * stacks are walked with tables), close after it stopped. */
int bt_loader_copies_open(struct bt_loader *l);
void bt_loader_copies_close(struct bt_loader *l);
#endif
