/* SPDX-License-Identifier: MIT */
/*
 * func_batch.h - decoding the function batches of -finstrument-functions
 * tracing (struct bt_ev_app_funcs, bpf/events.h) into entries and exits on
 * the kernel events' clock.
 */
#ifndef BTRACE_FUNC_BATCH_H
#define BTRACE_FUNC_BATCH_H
#include <stdint.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"

struct bt_func_rec {
	uint64_t ts_ns; /* CLOCK_BOOTTIME */
	uint64_t addr;
	uint32_t seq;
	uint32_t exit; /* 0 entry, 1 exit */
};

/* The records of a batch one at a time, with their time in ticks: a
 * reader that needs the time of a few converts those (bt_funcs_ts), the
 * costly part of decoding. */
struct bt_funcs_iter {
	const struct bt_ev_app_funcs *f;
	uint32_t nw, i; /* words in the batch; the next one */
	uint64_t tk;    /* ticks of the last record */
};

/* Words of a batch of len bytes: its count, or what len has room for. */
static inline uint32_t bt_funcs_words_in(const struct bt_ev_app_funcs *f, uint32_t len)
{
	uint64_t room = len >= sizeof(*f) ? (len - sizeof(*f)) / 8 : 0;
	return f->count < room ? f->count : (uint32_t)room;
}

static inline void bt_funcs_iter_init(struct bt_funcs_iter *it, const struct bt_ev_app_funcs *f, uint32_t len)
{
	it->f = f;
	it->nw = bt_funcs_words_in(f, len);
	it->i = 0;
	it->tk = f->tsc0;
}

/* The next record (0: none left; a long record cut off ends the batch). */
static inline int bt_funcs_iter_next(struct bt_funcs_iter *it, uint64_t *addr, unsigned *exit)
{
	if (it->i >= it->nw)
		return 0;
	uint64_t w;
	memcpy(&w, (const uint8_t *)it->f->words + 8u * it->i++, 8);
	unsigned kind = (unsigned)(w >> 32) & 3;
	if (kind >= BT_FREC_ENTRY_LONG) {
		if (it->i >= it->nw)
			return 0;
		memcpy(addr, (const uint8_t *)it->f->words + 8u * it->i++, 8);
	} else {
		*addr = it->f->addr0 + (uint64_t)((int64_t)w >> 34);
	}
	it->tk += (uint32_t)w;
	*exit = kind & 1;
	return 1;
}

/* CLOCK_BOOTTIME of a record of batch f at tk ticks. */
static inline uint64_t bt_funcs_ts(const struct bt_ev_app_funcs *f, uint64_t tk)
{
	return f->h.ts_ns + (uint64_t)(((unsigned __int128)(tk - f->tsc0) * f->mult_q32) >> 32);
}

/* Records in a batch of len bytes (words past count or len ignored), or -1
 * if it is malformed (count past its room, a long record cut off). */
int64_t bt_funcs_count(const struct bt_ev_app_funcs *f, uint32_t len);
/* Decode them into out[bt_funcs_count()]. */
void bt_funcs_decode(const struct bt_ev_app_funcs *f, uint32_t len, struct bt_func_rec *out);
/* Bytes of the batch holding its count words only (what a dump stores). */
uint32_t bt_funcs_trimmed_len(const struct bt_ev_app_funcs *f, uint32_t len);
#endif
