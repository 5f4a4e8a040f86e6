// SPDX-License-Identifier: MIT
/*
 * fuzz_handover.c - libFuzzer target for the reader of a handed buffer
 * (handover_read.c, bt_capture_salvage), which must survive whatever a
 * dying or foreign process left in the memfd.
 *
 * Each input patches a valid handed file (tests/handover_fixture.h): byte
 * 0 says whether the header's checksum is made right again after the
 * patches (so the geometry checks are reached), then (offset: 4 bytes,
 * value: 1 byte) patches, offsets taken modulo the header page, metadata,
 * state and data parts by turns. The reader must not crash or read out of
 * bounds (ASan), and every block it keeps must walk cleanly.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "handover_int.h"
#include "../handover_fixture.h"

static struct ho_fixture F;
static uint8_t *base, *copy;
static size_t flen;
static volatile uint64_t sink;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (ho_fixture_make(&F, 4000, 1000000000ull) || !(base = ho_fixture_map(&F, &flen)) || !(copy = malloc(flen)))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct bt_ho_header *h = (const void *)base;
	const uint64_t zones[4][2] = { { 0, 4096 }, { h->meta_off, h->meta_bytes }, { h->state_off, 8192 },
				       { h->data_off, h->max_size } };
	struct bt_ho_found f;
	char err[256];

	if (!size)
		return 0;
	memcpy(copy, base, flen);
	for (size_t i = 1, k = 0; i + 5 <= size; i += 5, k++) {
		uint32_t off;

		memcpy(&off, data + i, 4);
		copy[zones[k % 4][0] + off % zones[k % 4][1]] = data[i + 4];
	}
	if (data[0] & 1) {
		struct bt_ho_header *ch = (void *)copy;

		ch->sum = bt_ho_sum(0, ch, offsetof(struct bt_ho_header, sum));
	}
	if (bt_ho_read(copy, flen, -1, &f, err, sizeof(err)) == 0) {
		uint64_t n = 0;

		bt_capture_read(f.kbuf, ho_count_cb, &n);
		sink += n + f.ntasks;
		bt_ho_found_free(&f);
	}
	return 0;
}
