// SPDX-License-Identifier: MIT
/*
 * pbwriter.c - minimal protobuf wire-format encoder (see pbwriter.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "pbwriter.h"
#include "json_str.h"
#include "util.h"

void pbw_init(struct pbw *w)
{
	memset(w, 0, sizeof(*w));
}

void pbw_free(struct pbw *w)
{
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

void pbw_reset(struct pbw *w)
{
	if (w->depth && !w->err)
		w->err = -EINVAL;
	w->len = 0;
}

static int reserve(struct pbw *w, size_t n)
{
	if (w->err)
		return -1;
	if (w->cap - w->len >= n)
		return 0;
	if (n > SIZE_MAX / 2 - w->len) {
		w->err = -ENOMEM;
		return -1;
	}
	size_t cap = w->cap ? w->cap : 256;
	while (cap - w->len < n)
		cap *= 2;
	uint8_t *b = realloc(w->buf, cap);
	if (!b) {
		w->err = -ENOMEM;
		return -1;
	}
	w->buf = b;
	w->cap = cap;
	return 0;
}

unsigned pbw_varint_size(uint64_t v)
{
	unsigned n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* caller reserved 10 bytes */
static inline void put_varint(struct pbw *w, uint64_t v)
{
	uint8_t *p = w->buf + w->len;
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	w->len = (size_t)(p - w->buf);
}

static inline void put_tag(struct pbw *w, uint32_t field, unsigned wt)
{
	put_varint(w, (uint64_t)field << 3 | wt);
}

void pbw_uint(struct pbw *w, uint32_t field, uint64_t v)
{
	if (reserve(w, 20))
		return;
	put_tag(w, field, PBW_VARINT);
	put_varint(w, v);
}

void pbw_int(struct pbw *w, uint32_t field, int64_t v)
{
	pbw_uint(w, field, (uint64_t)v);
}

void pbw_sint(struct pbw *w, uint32_t field, int64_t v)
{
	pbw_uint(w, field, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void pbw_bool(struct pbw *w, uint32_t field, int v)
{
	pbw_uint(w, field, v ? 1 : 0);
}

void pbw_fixed64(struct pbw *w, uint32_t field, uint64_t v)
{
	if (reserve(w, 18))
		return;
	put_tag(w, field, PBW_I64);
	for (int i = 0; i < 8; i++)
		w->buf[w->len++] = (uint8_t)(v >> (8 * i));
}

void pbw_bytes(struct pbw *w, uint32_t field, const void *p, size_t n)
{
	if (reserve(w, 20 + n))
		return;
	put_tag(w, field, PBW_LEN);
	put_varint(w, n);
	if (n)
		memcpy(w->buf + w->len, p, n);
	w->len += n;
}

void pbw_string(struct pbw *w, uint32_t field, const char *s)
{
	pbw_bytes(w, field, s, s ? strlen(s) : 0);
}

void pbw_stringn(struct pbw *w, uint32_t field, const char *s, size_t maxlen)
{
	pbw_bytes(w, field, s, s ? strnlen(s, maxlen) : 0);
}

void pbw_utf8(struct pbw *w, uint32_t field, const char *s, size_t maxlen)
{
	size_t n = s ? strnlen(s, maxlen) : 0;
	char small[BT_ESCAPED_LEN(64)], *e = n <= 64 ? small : malloc(BT_ESCAPED_LEN(n));

	if (!e) {
		w->err = -ENOMEM;
		return;
	}
	/* report's rule: a name with control bytes must not drive the
	 * terminal of whoever prints it (trace_processor, go tool pprof) */
	bt_escape_text(s, n, e, BT_ESCAPED_LEN(n));
	pbw_bytes(w, field, e, strlen(e));
	if (e != small)
		free(e);
}

void pbw_begin(struct pbw *w, uint32_t field)
{
	if (reserve(w, 11))
		return;
	if (w->depth >= PBW_MAX_DEPTH) {
		w->err = -EINVAL;
		return;
	}
	put_tag(w, field, PBW_LEN);
	w->open[w->depth++] = w->len;
	w->buf[w->len++] = 0; /* length, patched by pbw_end */
}

void pbw_end(struct pbw *w)
{
	if (w->err)
		return;
	if (!w->depth) {
		w->err = -EINVAL;
		return;
	}
	size_t at = w->open[--w->depth];
	size_t body = w->len - at - 1;
	unsigned n = pbw_varint_size(body);
	if (n > 1) {
		if (reserve(w, n - 1))
			return;
		memmove(w->buf + at + n, w->buf + at + 1, body);
		w->len += n - 1;
	}
	uint64_t v = body;
	uint8_t *p = w->buf + at;
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p = (uint8_t)v;
}

void pbw_raw_varint(struct pbw *w, uint64_t v)
{
	if (reserve(w, 10))
		return;
	put_varint(w, v);
}


void pbw_raw(struct pbw *w, const void *p, size_t n)
{
	if (reserve(w, n))
		return;
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}
