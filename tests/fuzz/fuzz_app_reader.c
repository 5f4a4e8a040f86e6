// SPDX-License-Identifier: MIT
/*
 * fuzz_app_reader.c - libFuzzer target for the recorder's reader of an
 * application's shared buffer (app_reader.c), which must survive anything
 * an application can write into its own memory.
 *
 * Each input patches a valid buffer (every block complete, full of valid
 * events, one active block): the input is a list of (offset, 8 bytes)
 * patches anywhere in the shared region: header, meta words, core words,
 * block headers, entries. The reader must not crash or read out of bounds
 * (ASan), and every block it hands over must be valid: framed entries of
 * well-formed events of this process (checked again here).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "app_reader.h"
#include "func_batch.h"
#include "event_names.h"

#define BS 256u
#define NCORES 2u
#define NA 4u
#define NN 8u
#define PID 4242u

static uint8_t *base;
static uint64_t total, meta_off, cores_off, data_off;
static volatile uint64_t sink;

static void build_valid(void)
{
	memset(base, 0, total);
	bt_app_shm_init(base, BS, NA, NN, NCORES, PID);
	struct bt_app_meta *m = (struct bt_app_meta *)(base + meta_off);
	/* Rounds 1 and 2 of every meta: round 1 complete, round 2 complete
	 * except meta 3's, which is active (all reserved bytes confirmed). */
	for (uint32_t r = 1; r <= 2; r++)
		for (uint32_t k = 0; k < NA; k++) {
			uint64_t pos = (uint64_t)r * NA + k;
			uint8_t *blk = base + data_off + (size_t)((r % (NN / NA)) * NA + k) * BS;
			struct bt_block_hdr h = { .pos = pos, .prev_pos = BT_NO_POS, .core = k % NCORES };
			memcpy(blk, &h, sizeof(h));
			uint32_t off = BT_BLOCK_HDR, end = (r == 2 && k == 3) ? BS / 2 : BS;
			uint32_t seq = 0;
			while (off + bt_app_entry_size(2) <= end) {
				uint32_t len = bt_app_entry_size(2);
				struct bt_entry_hdr e = { .size = len, .kind = BT_ENTRY_DATA };
				uint8_t ev[sizeof(struct bt_ev_app) + 16] = { 0 };
				struct bt_ev_app *a = (struct bt_ev_app *)ev;
				a->h.ts_ns = pos * 1000 + seq;
				a->h.seq = seq++;
				a->h.tid = PID + k;
				a->h.tgid = PID;
				a->h.cpu = (uint16_t)(k % NCORES);
				a->h.type = BT_EV_APP_INSTANT;
				a->name_id = 1;
				a->nargs = 2;
				a->args[0] = (int64_t)pos;
				a->args[1] = seq;
				memcpy(blk + off, &e, sizeof(e));
				memcpy(blk + off + BT_ENTRY_HDR, ev, sizeof(ev));
				off += len;
			}
			if (off < end) {
				struct bt_entry_hdr pad = { .size = end - off, .kind = BT_ENTRY_PAD };
				memcpy(blk + off, &pad, sizeof(pad));
			}
			m[k].alloc = BT_APP_RP(r, end);
			m[k].conf = BT_APP_RP(r, end);
		}
}

static int on_block(const struct bt_block_view *blk, void *ctx)
{
	uint32_t off = 0, len;
	const void *p;
	char buf[256];
	(void)ctx;
	while ((p = bt_block_next(blk, &off, &len))) {
		const struct bt_ev_app *a = p;
		if (len >= sizeof(*a) && a->h.type == BT_EV_APP_FUNCS) {
			/* a function batch: its records decode within its bytes */
			if (a->h.tgid != PID || bt_funcs_count(p, len) < 0)
				abort();
			continue;
		}
		if (len < sizeof(*a) || a->h.tgid != PID || a->nargs > BT_APP_MAX_ARGS ||
		    len != sizeof(*a) + 8u * a->nargs || a->h.type < BT_EV_APP_INSTANT || a->h.type > BT_EV_APP_COUNTER)
			abort(); /* the reader delivered an invalid event */
		bt_format_app_fields(buf, sizeof(buf), &a->h, len, "name");
		sink += strlen(buf) + a->h.ts_ns;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!base) {
		total = bt_app_shm_layout(BS, NA, NN, NCORES, &meta_off, &cores_off, &data_off);
		base = aligned_alloc(4096, (total + 4095) & ~4095ull);
	}
	build_valid();
	/* patches: u16 offset (scaled to the region) + 8 bytes */
	for (size_t i = 0; i + 10 <= size; i += 10) {
		uint64_t off = ((uint64_t)data[i] | (uint64_t)data[i + 1] << 8) * (total - 8) / 65535;
		memcpy(base + (off & ~7ull), data + i + 2, 8);
	}
	struct bt_app_view v = { .base = base, .size = total, .bsize = BS, .A = NA, .N = NN, .R = NN / NA,
				 .ncores = NCORES, .pid = PID };
	struct bt_app_read_stats st;
	bt_app_read(&v, on_block, NULL, &st);
	if (size == 0 && (st.blocks_read != NN || st.blocks_bad))
		abort(); /* the unpatched buffer must read back whole */
	sink += st.blocks_read + st.blocks_bad + st.blocks_lost + st.blocks_busy + st.entries;
	return 0;
}
