// SPDX-License-Identifier: MIT
/* live_window.c - latest continuous window of a live buffer: copy every
 * event header out of a speculative read, then run the dump's analysis. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include "events.h"
#include "live_window.h"
#include "compact.h"
#include "util.h"

struct hdrs {
	struct bt_event_hdr *h;
	size_t n, cap;
	uint64_t ref_ts; /* CLOCK_BOOTTIME when the read started (compact.h) */
};

/* Keep the header of one stored event (compact.h). */
static int add_hdr(struct hdrs *hs, const uint8_t *rec, uint32_t rlen, uint32_t core)
{
	struct bt_event_hdr h = { .cpu = (uint16_t)core };
	uint64_t ts;
	uint32_t seq, type;

	if (!bt_compact_peek(rec, rlen, hs->ref_ts, &ts, &seq, &type))
		return 0;
	h.ts_ns = ts;
	h.seq = seq;
	h.type = (uint16_t)type;
	if (hs->n == hs->cap) {
		size_t cap = hs->cap ? hs->cap * 2 : 65536;
		void *nh = realloc(hs->h, cap * sizeof(*hs->h));

		if (!nh)
			return -ENOMEM;
		hs->h = nh;
		hs->cap = cap;
	}
	hs->h[hs->n++] = h;
	return 0;
}

static int collect(const struct bt_block_view *v, void *ctx)
{
	struct hdrs *hs = ctx;
	uint32_t off = 0, len;
	const uint8_t *p;

	/* Each buffer entry is a batch of stored events. */
	while ((p = bt_block_next(v, &off, &len))) {
		const uint8_t *rec;
		uint32_t eoff = 0, rlen;

		while (bt_compact_batch_next(p, len, &eoff, &rec, &rlen) > 0)
			if (add_hdr(hs, rec, rlen, v->core) < 0)
				return -ENOMEM;
	}
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct bt_dump_event *x = a, *y = b;

	if (x->ev->ts_ns != y->ev->ts_ns)
		return x->ev->ts_ns < y->ev->ts_ns ? -1 : 1;
	if (x->ev->cpu != y->ev->cpu)
		return x->ev->cpu < y->ev->cpu ? -1 : 1;
	return x->ev->seq < y->ev->seq ? -1 : x->ev->seq > y->ev->seq;
}

int bt_live_window(struct bt_buffer *b, uint32_t ncpus, struct bt_seq_window *w, struct bt_read_stats *rst)
{
	struct hdrs hs = { .ref_ts = bt_boottime_ns() };
	struct bt_dump_event *ev;
	int err = bt_read(b, collect, &hs, rst);

	if (err) {
		free(hs.h);
		return err;
	}
	ev = malloc((hs.n ? hs.n : 1) * sizeof(*ev));
	if (!ev) {
		free(hs.h);
		return -ENOMEM;
	}
	for (size_t i = 0; i < hs.n; i++)
		ev[i] = (struct bt_dump_event){ &hs.h[i], sizeof(struct bt_event_hdr), hs.h[i].cpu, -1 };
	qsort(ev, hs.n, sizeof(*ev), by_time);
	err = bt_seq_analyze(ev, hs.n, ncpus, w, NULL);
	free(ev);
	free(hs.h);
	return err;
}
