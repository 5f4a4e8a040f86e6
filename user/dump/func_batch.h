/* SPDX-License-Identifier: MIT */
/*
 * func_batch.h - decoding the function batches of -finstrument-functions
 * tracing (struct bt_ev_app_funcs, bpf/events.h) into entries and exits on
 * the kernel events' clock.
 */
#ifndef BTRACE_FUNC_BATCH_H
#define BTRACE_FUNC_BATCH_H
#include <stdint.h>
#include <linux/types.h>
#include "events.h"

struct bt_func_rec {
	uint64_t ts_ns; /* CLOCK_BOOTTIME */
	uint64_t addr;
	uint32_t seq;
	uint32_t exit; /* 0 entry, 1 exit */
};

/* Records in a batch of len bytes (words past count or len ignored), or -1
 * if it is malformed (count past its room, a long record cut off). */
int64_t bt_funcs_count(const struct bt_ev_app_funcs *f, uint32_t len);
/* Decode them into out[bt_funcs_count()]. */
void bt_funcs_decode(const struct bt_ev_app_funcs *f, uint32_t len, struct bt_func_rec *out);
/* Bytes of the batch holding its count words only (what a dump stores). */
uint32_t bt_funcs_trimmed_len(const struct bt_ev_app_funcs *f, uint32_t len);
#endif
