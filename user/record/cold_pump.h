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

/* Start the thread; NULL + message on failure. */
struct bt_cold_pump *bt_cold_pump_start(struct bt_cold *cold, struct bt_buffer *buf, char *err, size_t errlen);
/* Take what the buffer completed last, then stop and join; NULL is a no-op. */
void bt_cold_pump_stop(struct bt_cold_pump *p);

struct recorder;
struct record_opts;
/* The raw buffer's share of a budget (--buffer-size, --max-size, ctl
 * resize): all of it without a tier; the tier gets what the buffer,
 * rounded to its granule, leaves. */
uint64_t recorder_buffer_share(const struct record_opts *o, uint64_t budget);

/* The recorder's tier: what --buffer-size leaves after the buffer r->buf,
 * then its thread (r->cold, r->cold_pump). -1 with a message logged. */
int recorder_cold_start(struct recorder *r);
#endif
