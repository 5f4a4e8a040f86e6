/* SPDX-License-Identifier: MIT */
/*
 * unwind_builder.h - a second, lower-priority thread that compiles the
 * unwind tables that did not fit in their first build budget (a huge or
 * hostile .eh_frame), so the unwinder's own thread goes on loading every
 * other binary and process meanwhile (unwind_procs.c). Two workers take
 * the smallest job waiting first; only one of them (at the given nice)
 * takes big jobs (over BT_UNWIND_BIG_JOB), the other, at the caller's
 * priority, ordinary ones only, so a hostile binary being built holds back
 * no ordinary table that missed its first budget on a loaded machine.
 * Each job has its
 * own time and size budget and is cut short when the recorder stops; its
 * result goes back to the unwinder, the only writer of the rows array.
 */
#ifndef BTRACE_UNWIND_BUILDER_H
#define BTRACE_UNWIND_BUILDER_H
#include <stdint.h>
#include "unwind_table.h"
#include "elf_symbols.h" /* BT_BUILD_ID_MAX */

#define BT_UNWIND_BUILD_QUEUE 16 /* slow builds waiting at once; past it refused, named */
/* Bytes of call-frame information past which a job is big (~256 k FDEs;
 * libxul has 200 k): such a binary gets no first build either. */
#define BT_UNWIND_BIG_JOB (12ull << 20)

struct bt_unwind_job {
	uint64_t dev, ino;   /* the unwinder's key for the result */
	int fd;              /* the file (owned by the job) */
	uint8_t build_id[BT_BUILD_ID_MAX];
	uint32_t build_id_len; /* for its debug file's .debug_frame; 0: none */
	uint64_t budget_ns;  /* time it may take */
	uint32_t room;       /* rows it may have (what --unwind-mem had left) */
	uint64_t size;       /* bytes of call-frame information: the smallest is built first */
};
struct bt_unwind_built {
	uint64_t dev, ino;
	int ret;              /* 0, -ETIMEDOUT, -E2BIG (over room), -EFBIG, -ECANCELED (stopping), other */
	uint64_t ns;          /* time it took */
	struct bt_unwind_rows rows; /* ret 0: the caller's to free */
};

struct bt_unwind_builder;
/* Starts the threads (the one taking big jobs at the given nice value); done(arg) is called (from it)
 * after each result is ready. NULL with errno. */
struct bt_unwind_builder *bt_unwind_builder_start(int nice, void (*done)(void *), void *arg);
/* Queue a job (takes job->fd, also on failure): 0, or -ENOSPC (queue full). */
int bt_unwind_builder_submit(struct bt_unwind_builder *b, const struct bt_unwind_job *job);
/* A finished job's result: 1, or 0 when none is ready. */
int bt_unwind_builder_take(struct bt_unwind_builder *b, struct bt_unwind_built *out);
/* Jobs queued or being built. */
uint32_t bt_unwind_builder_pending(struct bt_unwind_builder *b);
/* Interrupts the build in progress (within a few hundred FDEs), drops the
 * queue and results, joins. NULL-safe. */
void bt_unwind_builder_stop(struct bt_unwind_builder *b);
#endif
