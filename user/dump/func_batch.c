// SPDX-License-Identifier: MIT
/*
 * func_batch.c - decode function batches (encoding: bpf/events.h, writer:
 * user/lib/btrace_funcs.c). Batches come from an untrusted application:
 * every count is checked against the bytes there are.
 */
#include "func_batch.h"

#include <string.h>

int64_t bt_funcs_count(const struct bt_ev_app_funcs *f, uint32_t len)
{
	if (len < sizeof(*f) || f->count > f->cap || (uint64_t)f->count * 8 > len - sizeof(*f))
		return -1;
	int64_t n = 0;
	for (uint32_t i = 0; i < f->count; i++, n++) {
		uint64_t w;
		memcpy(&w, (const uint8_t *)f->words + 8u * i, 8);
		if (((w >> 32) & 3) >= BT_FREC_ENTRY_LONG && ++i >= f->count)
			return -1;
	}
	return n;
}

void bt_funcs_decode(const struct bt_ev_app_funcs *f, uint32_t len, struct bt_func_rec *out)
{
	struct bt_funcs_iter it;
	uint64_t addr;
	unsigned exit;
	uint32_t k = 0;
	bt_funcs_iter_init(&it, f, len);
	while (bt_funcs_iter_next(&it, &addr, &exit)) {
		out[k].ts_ns = bt_funcs_ts(f, it.tk);
		out[k].addr = addr;
		out[k].seq = f->h.seq + k;
		out[k].exit = exit;
		k++;
	}
}

uint32_t bt_funcs_trimmed_len(const struct bt_ev_app_funcs *f, uint32_t len)
{
	return (uint32_t)sizeof(*f) + 8u * bt_funcs_words_in(f, len);
}
