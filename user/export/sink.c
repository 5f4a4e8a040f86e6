// SPDX-License-Identifier: MIT
/*
 * sink.c - the exporters' output: buffered write(2) to an fd, optionally
 * through gzip (zlib), with a sticky first error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "sink.h"
#include "util.h"

#define SINK_BUF (256u << 10)

/* ---- output sink ---------------------------------------------------------- */

struct bt_sink {
	int fd;
	int gzip;
	int err;
	z_stream z;
	uint8_t *in;   /* pending input bytes */
	size_t inlen;
	uint8_t *zout; /* gzip: compressed output chunk */
	uint64_t bytes;
	uint64_t raw;  /* bytes given, before compression */
};

static int sink_out(struct bt_sink *s, const uint8_t *p, size_t n)
{
	int r = bt_write_full(s->fd, p, n);
	if (r < 0)
		return s->err = r;
	s->bytes += n;
	return 0;
}

/* Compress (gzip) or write n bytes; flush: Z_NO_FLUSH or Z_FINISH. */
static int sink_emit(struct bt_sink *s, const uint8_t *p, size_t n, int flush)
{
	if (s->err)
		return s->err;
	if (!s->gzip)
		return n ? sink_out(s, p, n) : 0;
	s->z.next_in = (Bytef *)p;
	s->z.avail_in = (uInt)n; /* n <= SINK_BUF */
	for (;;) {
		s->z.next_out = s->zout;
		s->z.avail_out = SINK_BUF;
		int r = deflate(&s->z, flush);
		if (r == Z_STREAM_ERROR)
			return s->err = -EIO;
		size_t have = SINK_BUF - s->z.avail_out;
		if (have && sink_out(s, s->zout, have) < 0)
			return s->err;
		if (flush == Z_FINISH ? r == Z_STREAM_END : s->z.avail_in == 0 && s->z.avail_out != 0)
			return 0;
	}
}

struct bt_sink *bt_sink_new(int fd, int gzip)
{
	struct bt_sink *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->fd = fd;
	s->gzip = gzip;
	s->in = malloc(SINK_BUF);
	s->zout = gzip ? malloc(SINK_BUF) : NULL;
	/* windowBits 15 + 16: a gzip wrapper, as gzip(1) writes */
	if (!s->in || (gzip && (!s->zout || deflateInit2(&s->z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK))) {
		free(s->in);
		free(s->zout);
		free(s);
		return NULL;
	}
	return s;
}

int bt_sink_write(struct bt_sink *s, const void *p, size_t n)
{
	const uint8_t *b = p;
	if (s->err)
		return s->err;
	s->raw += n;
	if (!s->gzip && n >= SINK_BUF) { /* large: straight through */
		if (s->inlen && sink_emit(s, s->in, s->inlen, Z_NO_FLUSH) < 0)
			return s->err;
		s->inlen = 0;
		return sink_out(s, b, n);
	}
	while (n) {
		size_t k = SINK_BUF - s->inlen < n ? SINK_BUF - s->inlen : n;
		memcpy(s->in + s->inlen, b, k);
		s->inlen += k;
		b += k;
		n -= k;
		if (s->inlen == SINK_BUF) {
			if (sink_emit(s, s->in, s->inlen, Z_NO_FLUSH) < 0)
				return s->err;
			s->inlen = 0;
		}
	}
	return 0;
}

int bt_sink_printf(struct bt_sink *s, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return s->err ? s->err : (s->err = -EINVAL);
	if ((size_t)n < sizeof(small))
		return bt_sink_write(s, small, (size_t)n);
	char *big = malloc((size_t)n + 1);
	if (!big)
		return s->err ? s->err : (s->err = -ENOMEM);
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	int r = bt_sink_write(s, big, (size_t)n);
	free(big);
	return r;
}

uint64_t bt_sink_raw_bytes(const struct bt_sink *s)
{
	return s->raw;
}

int bt_sink_error(const struct bt_sink *s)
{
	return s->err;
}

int bt_sink_finish(struct bt_sink *s, uint64_t *bytes)
{
	int r;
	if (s->gzip)
		sink_emit(s, s->in, s->inlen, Z_FINISH);
	else
		sink_emit(s, s->in, s->inlen, Z_NO_FLUSH);
	s->inlen = 0;
	r = s->err;
	if (bytes)
		*bytes = s->bytes;
	bt_sink_free(s);
	return r;
}

void bt_sink_free(struct bt_sink *s)
{
	if (!s)
		return;
	if (s->gzip)
		deflateEnd(&s->z);
	free(s->in);
	free(s->zout);
	free(s);
}
