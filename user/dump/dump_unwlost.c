// SPDX-License-Identifier: MIT
/*
 * dump_unwlost.c - section UNWL: the binaries whose unwind table was
 * refused (too many FDEs or bytes, past the build budget) or did not fit
 * in --unwind-mem, by path and reason, so a dump says which stacks could
 * not be walked and why, not only how many binaries (the counters in
 * STKP). Layout: {u32 version, u32 count}, then count x {u16 path_len,
 * u16 why_len, path bytes, why bytes}; no terminators.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "dump_stacks.h"

#define UNWL_VERSION 1

static size_t bounded(const char *s)
{
	return s ? strnlen(s, BT_UNWLOST_STR_MAX - 1) : 0;
}

int64_t bt_dump_unwlost_encode(const struct bt_dump_stacks *s, uint8_t **out)
{
	uint32_t n = s->nlost < BT_UNWLOST_MAX ? s->nlost : BT_UNWLOST_MAX;
	uint64_t len = 8;

	if (!n)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		len += 4 + bounded(s->lost[i].path) + bounded(s->lost[i].why);
	uint8_t *p = malloc(len), *o = p + 8;
	if (!p)
		return -ENOMEM;
	uint32_t h[2] = { UNWL_VERSION, n };
	memcpy(p, h, sizeof(h));
	for (uint32_t i = 0; i < n; i++) {
		uint16_t l[2] = { (uint16_t)bounded(s->lost[i].path), (uint16_t)bounded(s->lost[i].why) };
		memcpy(o, l, 4);
		memcpy(o + 4, s->lost[i].path, l[0]);
		memcpy(o + 4 + l[0], s->lost[i].why, l[1]);
		o += 4 + l[0] + l[1];
	}
	*out = p;
	return (int64_t)len;
}

int bt_dump_unwlost_decode(const uint8_t *p, uint64_t len, struct bt_dump_stacks *s, char *err, size_t errlen)
{
	uint32_t h[2];
	uint64_t at = 8, strs = 0;

	if (s->lost)
		return bt_dump_corrupt(err, errlen, "lost unwind tables", "two of them");
	if (len < 8)
		return bt_dump_corrupt(err, errlen, "lost unwind tables", "%" PRIu64 " bytes, shorter than its header",
				       len);
	memcpy(h, p, sizeof(h));
	if (h[0] != UNWL_VERSION)
		return 0; /* a newer writer's: skipped like an unknown optional section */
	if (!h[1] || h[1] > BT_UNWLOST_MAX)
		return bt_dump_corrupt(err, errlen, "lost unwind tables", "%u entries (1 to %u)", h[1], BT_UNWLOST_MAX);
	/* checked whole first: sizes in bounds and adding up to len */
	for (uint32_t i = 0; i < h[1]; i++) {
		uint16_t l[2];
		if (len - at < 4)
			return bt_dump_corrupt(err, errlen, "lost unwind tables", "entry %u cut short", i);
		memcpy(l, p + at, 4);
		if (l[0] >= BT_UNWLOST_STR_MAX || l[1] >= BT_UNWLOST_STR_MAX || len - at - 4 < (uint64_t)l[0] + l[1])
			return bt_dump_corrupt(err, errlen, "lost unwind tables", "entry %u: lengths %u and %u out of range",
					       i, l[0], l[1]);
		at += 4 + (uint64_t)l[0] + l[1];
		strs += (uint64_t)l[0] + l[1] + 2;
	}
	if (at != len)
		return bt_dump_corrupt(err, errlen, "lost unwind tables", "%" PRIu64 " bytes after its entries", len - at);
	struct bt_dump_unwlost *v = calloc(h[1], sizeof(*v));
	char *t = malloc(strs), *o = t;
	if (!v || !t) {
		free(v);
		free(t);
		return -ENOMEM;
	}
	at = 8;
	for (uint32_t i = 0; i < h[1]; i++) {
		uint16_t l[2];
		memcpy(l, p + at, 4);
		v[i].path = o;
		memcpy(o, p + at + 4, l[0]);
		o[l[0]] = '\0';
		o += l[0] + 1;
		v[i].why = o;
		memcpy(o, p + at + 4 + l[0], l[1]);
		o[l[1]] = '\0';
		o += l[1] + 1;
		at += 4 + (uint64_t)l[0] + l[1];
	}
	s->lost = v;
	s->lost_strtab = t;
	s->nlost = h[1];
	return 0;
}
