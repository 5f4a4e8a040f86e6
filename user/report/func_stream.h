/* SPDX-License-Identifier: MIT */
/*
 * func_stream.h - per-function aggregates of the traced functions' calls
 * (-finstrument-functions, libbtrace) of a dump opened with its function
 * batches kept (BT_DUMP_OPEN_FUNC_BATCHES) or read again from the file
 * (BT_DUMP_OPEN_APP_STREAM, as report opens it): the batches are decoded
 * one at a time and each call folded into its function's row as it closes,
 * so the memory is per function, thread and open call, never per call
 * (report --functions on 10^7 calls), plus the body with FUNC_BATCHES.
 * Pairing and losses as func_calls.c counts them.
 */
#ifndef BTRACE_FUNC_STREAM_H
#define BTRACE_FUNC_STREAM_H
#include <stddef.h>
#include <stdint.h>
#include "func_calls.h"

struct bt_dump;
struct bt_func_filter;

#define BT_FAGG_BUCKETS 1920 /* log-linear: 32 per power of two, values within 3% */

/* One function's calls that count (selected by their entry and closed). */
struct bt_fagg {
	uint64_t calls, total, self, max; /* total: recursion counted once */
	uint32_t *hist;                   /* [BT_FAGG_BUCKETS] of the durations, NULL: no call */
};

/* A call chain of report --hot, root first (bt_call: fn, start, dur, self,
 * tid, depth, open; parent and up unset). */
struct bt_fchain {
	struct bt_call *c;
	size_t n;
	uint64_t key; /* depth (deepest chains) or duration (slowest) */
};

struct bt_fstream {
	struct bt_calls c;   /* fn[] and the loss counters; c.c is NULL (no call kept), c.n counts entries */
	struct bt_fagg *agg; /* [c.nfn] */
	/* with hot > 0: report --hot's chains, best first, at most hot each */
	struct bt_fchain *deep, *slow;
	size_t ndeep, nslow;
};

/* hot: also keep the hot deepest and slowest call chains (report --hot;
 * 0: none). 0, -ENOMEM, or the read's -errno with its message in f->err. */
int bt_fstream_build(const struct bt_dump *d, const struct bt_func_filter *f, unsigned hot, struct bt_fstream *out);
/* The q-th percentile of a function's durations (within 3%; the max exact). */
uint64_t bt_fagg_pct(const struct bt_fagg *a, unsigned q);
void bt_fstream_free(struct bt_fstream *s);

#endif
