/* SPDX-License-Identifier: MIT */
/*
 * cold_pump.h - the recorder's compressor thread: keeps the cold tier
 * (user/coldtier/cold_tier.h) following the block buffer the drain writes.
 */
#ifndef BTRACE_COLD_PUMP_H
#define BTRACE_COLD_PUMP_H
#include <stddef.h>
#include <stdint.h>

struct bt_buffer;
struct bt_cold;
struct bt_cold_pump;

/* Take now, on the caller's thread and outside the budget, every complete
 * block older than the newer half of a buffer of nblocks_after blocks,
 * uncompressed (a copy: the resize waits for it):
 * before a shrink drops the oldest slots, which the thread would take
 * later, so the tier joins the smaller buffer without a hole. Blocks taken
 * or -errno; NULL: 0. */
int bt_cold_pump_catch_up(struct bt_cold_pump *p, uint64_t nblocks_after);
/* Take what the buffer completed last, then stop and join; NULL is a no-op. */
void bt_cold_pump_stop(struct bt_cold_pump *p);

struct recorder;
struct record_opts;
/* The raw buffer's share of a budget (--buffer-size, --max-size, ctl
 * resize): all of it without a tier; the tier gets what the buffer,
 * rounded to its granule, leaves. */
uint64_t recorder_buffer_share(const struct record_opts *o, uint64_t budget);

/* The memory budget as the user gives it (-m, --max-size, ctl resize),
 * whatever its split: without a tier (none asked, or the default one gave
 * way) all of it is the buffer's. */
struct recorder_budget {
	uint64_t size, max; /* now, and the most ctl resize may give */
	uint64_t raw, cold; /* size's parts: the buffer's, the tier's */
};
void recorder_budget_now(struct recorder *r, struct recorder_budget *b);
/* The parts of a new total size: the buffer's share, at most the maximum
 * reserved for it at start (rounded down to its granule there), and the
 * tier's the rest. */
void recorder_budget_split(struct recorder *r, uint64_t total, uint64_t *raw, uint64_t *cold);

/* The recorder's tier: what --buffer-size leaves after the buffer r->buf,
 * then its thread (r->cold, r->cold_pump). -1 with a message logged. */
int recorder_cold_start(struct recorder *r);
#endif
