// SPDX-License-Identifier: MIT
/*
 * dump_stream.c - a dump's summary (dump.h) from its body as a stream: the
 * raw bytes arrive in any pieces (the writer's tee, or a file inflated a
 * chunk at a time), are cut into sections here, and each section goes
 * through the reader's own checks (dump_sections.c) with its events
 * counted, not kept. So the manifest agrees with `report --stats` by
 * construction, and its memory is the largest section plus 16 bytes per
 * kernel event however many function records the applications wrote
 * (issue 36: reading the dump back cost 15x the application buffer).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "dump_format.h"
#include "dump_read_int.h"
#include "util.h"

_Static_assert(BT_EV_MAX <= BT_DUMP_NTYPES && BT_GROUP_MAX <= BT_DUMP_NGROUPS, "summary counters too small");

/* A section is at most this (a block, a table); larger is a damaged length
 * (the writer's largest, a stack table, is skipped unread). */
#define SECTION_MAX (256ull << 20)

struct bt_dump_stream {
	struct bt_dump *d;
	struct btd_parser ps;
	struct btd_section s; /* the current section's header */
	uint8_t *buf;         /* its payload, padded */
	size_t cap, have, want; /* want: payload bytes (0 while the header is read) */
	uint8_t shdr[sizeof(struct btd_section)];
	size_t shave;
	int skip;             /* a section a summary does not read: bytes dropped */
	uint8_t *dst;         /* where the current payload goes: buf, or d->body (keep) */
	int keep;             /* btd_stream_keep */
	uint64_t kept;        /* keep: bytes of the sections kept, at most d->body_max */
	btd_ablk_fn ablk;     /* btd_stream_ablk: ABLK payloads to ablk, the rest skipped */
	void *ablk_ctx;
	uint64_t off;         /* body offset of the current section */
	int err;              /* first error; its message in errbuf */
	char errbuf[256];
};

const struct bt_dump_summary *bt_dump_summary(const struct bt_dump *d)
{
	return d && d->summary == 2 ? &d->sum : NULL;
}

int bt_dump_summary_finish(struct bt_dump *d)
{
	int r;

	if (!d || !d->summary)
		return -EINVAL;
	if (d->summary == 2)
		return 0;
	r = btd_summary_done(d);
	if (!r)
		d->summary = 2;
	return r;
}

struct bt_dump_stream *bt_dump_stream_new(uint32_t ncpus, uint32_t ngroups)
{
	struct bt_dump_stream *s = calloc(1, sizeof(*s));

	if (!s || !(s->d = calloc(1, sizeof(*s->d)))) {
		free(s);
		return NULL;
	}
	s->d->summary = 1;
	s->d->hdr.ncpus = ncpus; /* the LOSS section is checked against them */
	s->d->hdr.ngroups = ngroups;
	btd_parser_init(&s->ps, s->d, s->errbuf, sizeof(s->errbuf));
	return s;
}

static void stream_fail(struct bt_dump_stream *s, int e, const char *msg)
{
	if (s->err)
		return;
	s->err = e;
	if (msg)
		snprintf(s->errbuf, sizeof(s->errbuf), "%s", msg);
}

/* The section whose header and payload are in: parsed, or dropped. */
static void section_done(struct bt_dump_stream *s)
{
	int r;

	if (s->ablk)
		r = s->skip ? 0 : s->ablk(s->ablk_ctx, s->dst, s->s.len, s->off);
	else
		r = s->skip ? btd_parse_section(&s->ps, &s->s, NULL) : btd_parse_section(&s->ps, &s->s, s->dst);
	s->off += sizeof(s->s) + s->want;
	if (r)
		stream_fail(s, -r, NULL); /* the message is in errbuf */
	s->shave = s->have = s->want = 0;
	s->skip = 0;
}

/* The header is in: how much payload follows and where it goes. */
static void section_start(struct bt_dump_stream *s)
{
	char m[160];

	memcpy(&s->s, s->shdr, sizeof(s->s));
	if (s->s.len > SECTION_MAX) {
		snprintf(m, sizeof(m), "corrupt dump: section at body offset %" PRIu64 " is %" PRIu64 " bytes",
			 s->off, s->s.len);
		stream_fail(s, EBADMSG, m);
		return;
	}
	s->want = (size_t)btd_pad8(s->s.len);
	s->skip = s->ablk ? s->s.type != BTD_SEC_APP_BLOCK : s->d->summary && btd_summary_skips(s->s.type);
	s->dst = s->buf;
	if (s->keep && s->s.type != BTD_SEC_APP_BLOCK) {
		/* in place: the events and names kept point into the body */
		if (s->d->body_len - s->off < sizeof(s->s) || s->d->body_len - s->off - sizeof(s->s) < s->want) {
			snprintf(m, sizeof(m), "corrupt dump: section at body offset %" PRIu64 " is %" PRIu64
				 " bytes, past the body's end", s->off, s->s.len);
			stream_fail(s, EBADMSG, m);
			return;
		}
		/* the application blocks are read again, never kept: what
		 * memory bounds is the rest (kernel events, tables) */
		s->kept += s->want;
		if (s->d->body_max && s->kept > s->d->body_max) {
			char s1[32];
			snprintf(m, sizeof(m), "dump holds over %s besides its application blocks, the most a reader "
				 "takes into memory (BTRACE_DUMP_MAX_BODY=SIZE raises it, up to the memory available)",
				 format_size(s->d->body_max, s1, sizeof(s1)));
			stream_fail(s, EFBIG, m);
			return;
		}
		s->dst = s->d->body + s->off + sizeof(s->s);
	} else if (!s->skip && s->want > s->cap) {
		uint8_t *b = realloc(s->buf, s->want);
		if (!b) {
			stream_fail(s, ENOMEM, "out of memory");
			return;
		}
		s->buf = b;
		s->cap = s->want;
		s->dst = b;
	}
	if (!s->want)
		section_done(s);
}

void bt_dump_stream_put(struct bt_dump_stream *s, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n && !s->err) {
		if (s->shave < sizeof(s->shdr)) {
			size_t k = sizeof(s->shdr) - s->shave < n ? sizeof(s->shdr) - s->shave : n;
			memcpy(s->shdr + s->shave, b, k);
			s->shave += k;
			b += k;
			n -= k;
			if (s->shave == sizeof(s->shdr))
				section_start(s);
			continue;
		}
		size_t k = s->want - s->have < n ? s->want - s->have : n;
		if (!s->skip)
			memcpy(s->dst + s->have, b, k);
		s->have += k;
		b += k;
		n -= k;
		if (s->have == s->want)
			section_done(s);
	}
}

struct bt_dump_stream *btd_stream_keep(struct bt_dump *d)
{
	struct bt_dump_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->d = d;
	s->keep = 1;
	btd_parser_init(&s->ps, d, s->errbuf, sizeof(s->errbuf));
	return s;
}

struct bt_dump_stream *btd_stream_ablk(btd_ablk_fn fn, void *ctx)
{
	struct bt_dump_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ablk = fn;
	s->ablk_ctx = ctx;
	return s;
}

int btd_stream_ablk_end(struct bt_dump_stream *s, char *err, size_t errlen)
{
	int r;

	if (!s)
		return btd_rerr(err, errlen, ENOMEM, "out of memory"), -ENOMEM;
	if (!s->err && s->shave)
		stream_fail(s, EBADMSG, "truncated dump (body ends inside a section)");
	r = -s->err;
	if (r)
		btd_rerr(err, errlen, s->err, "%s", s->errbuf);
	free(s->buf);
	free(s);
	return r;
}

void bt_dump_stream_free(struct bt_dump_stream *s)
{
	if (!s)
		return;
	bt_dump_close(s->d);
	free(s->buf);
	free(s);
}

struct bt_dump *bt_dump_stream_finish(struct bt_dump_stream *s, const void *hdr, uint64_t file_size, char *err,
				      size_t errlen)
{
	struct bt_dump *d;
	int r;

	if (!s)
		return btd_rerr(err, errlen, ENOMEM, "out of memory");
	d = s->d;
	if (!s->err && s->shave)
		stream_fail(s, EBADMSG, "truncated dump (body ends inside a section)");
	if (!s->err) {
		/* the header's counts are checked against the body's */
		btd_header_copy(d, hdr, file_size);
		r = btd_parse_done(&s->ps);
		if (r)
			stream_fail(s, -r, r == -ENOMEM ? "out of memory" : NULL);
	}
	if (s->err) {
		int e = s->err;
		btd_rerr(err, errlen, e, "%s", s->errbuf);
		bt_dump_stream_free(s);
		errno = e;
		return NULL;
	}
	s->d = NULL;
	bt_dump_stream_free(s);
	return d;
}
