// SPDX-License-Identifier: MIT
/*
 * dump_open.c - opening a dump: the header checked on its own first (a
 * foreign file costs 512 bytes), the body read or inflated (allocations
 * bounded by the file size and zlib's maximum expansion), CRCs checked, the
 * sections parsed (dump_sections.c), function batches decoded, and the
 * events sorted into time order. A file that fails any check is refused
 * with a one-line reason; the caller never sees a partial dump.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "func_batch.h"
#include "dump_format.h"
#include "app_shm.h"
#include "event_names.h"
#include "dump_stacks.h"
#include "dump_read_int.h"
#include "util.h"

/* deflate expands at most ~1032:1; anything claiming more is corrupt */
#define ZLIB_MAX_RATIO 1040u

/* The uncompressed body a reader takes into memory, at most: a 3 MiB file
 * may declare 3 GiB within deflate's ratio, and inflating it costs the
 * reader that much memory and a minute. BTRACE_DUMP_MAX_BODY=SIZE raises
 * it (docs/security.md); never above the memory available. */
#define DUMP_BODY_MAX_DEFAULT (1ull << 30)

static uint64_t body_max(void)
{
	const char *e = getenv("BTRACE_DUMP_MAX_BODY");
	uint64_t v = DUMP_BODY_MAX_DEFAULT, avail = bt_mem_available();

	if (e && parse_size(e, &v))
		v = DUMP_BODY_MAX_DEFAULT;
	return avail && avail < v ? avail : v;
}

static uint32_t crc_of(const uint8_t *p, uint64_t len)
{
	uint32_t crc = (uint32_t)crc32(0, Z_NULL, 0);
	while (len) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}

static int cmp_event(const void *a, const void *b)
{
	const struct bt_dump_event *x = a, *y = b;
	const struct bt_event_hdr *p = x->ev, *q = y->ev;
	if (p->ts_ns != q->ts_ns)
		return p->ts_ns < q->ts_ns ? -1 : 1;
	/* one thread's application events: its seq (the CPU may differ) */
	if (x->app >= 0 && y->app >= 0 && p->tid == q->tid && p->seq != q->seq)
		return (int32_t)(p->seq - q->seq) < 0 ? -1 : 1;
	if (p->cpu != q->cpu)
		return p->cpu < q->cpu ? -1 : 1;
	if (p->seq != q->seq)
		return p->seq < q->seq ? -1 : 1;
	/* file order: deterministic */
	return (uintptr_t)p < (uintptr_t)q ? -1 : (uintptr_t)p > (uintptr_t)q;
}

/* ---- open ---------------------------------------------------------------- */

/* Every header field a reader can check on its own, before anything else of
 * the file is read: a foreign or damaged file costs 512 bytes. file_len is
 * the size of the whole file (or memory image). */
/* check_header's flags: BT_DUMP_OPEN_NOCRC, or the body is streamed, not
 * taken whole into memory (no BTRACE_DUMP_MAX_BODY bound on its size). */
#define BTD_HDR_STREAMED 0x80000000u
_Static_assert(!(BTD_HDR_STREAMED & (BT_DUMP_OPEN_NOCRC | BT_DUMP_OPEN_FUNC_BATCHES | BT_DUMP_OPEN_APP_STREAM)),
	       "a reader's flag");

static int check_header(const uint8_t *data, uint64_t file_len, unsigned flags, struct btd_header *h, char *err,
			size_t errlen)
{
	if (file_len == 0)
		return btd_rerr(err, errlen, EINVAL, "empty file, not a btrace-bpf dump"), -EINVAL;
	size_t ml = file_len < BTD_MAGIC_LEN ? (size_t)file_len : BTD_MAGIC_LEN;
	if (memcmp(data, BTD_MAGIC, ml) != 0)
		return btd_rerr(err, errlen, EINVAL, "not a btrace-bpf dump (bad magic)"), -EINVAL;
	if (file_len < BTD_HEADER_SIZE)
		return btd_rerr(err, errlen, EBADMSG, "truncated dump (file ends at %" PRIu64 " of %u header bytes)",
			    file_len, BTD_HEADER_SIZE), -EBADMSG;
	memcpy(h, data, sizeof(*h));
	if (h->version != BTD_VERSION)
		return btd_rerr(err, errlen, ENOTSUP,
			    "unsupported dump format version %u (this btrace-bpf reads version %u)", h->version,
			    BTD_VERSION), -ENOTSUP;
	if (!(flags & BT_DUMP_OPEN_NOCRC)) {
		uint32_t c = crc_of(data, offsetof(struct btd_header, header_crc));
		if (c != h->header_crc)
			return btd_rerr(err, errlen, EBADMSG, "corrupt dump header (checksum %08x, expected %08x)", c,
				    h->header_crc), -EBADMSG;
	}
#define HFAIL(...) (btd_rerr(err, errlen, EBADMSG, "corrupt dump header (" __VA_ARGS__), -EBADMSG)
	if (h->header_size < BTD_HEADER_SIZE || h->header_size % 8 || h->header_size > (1u << 20))
		return HFAIL("header size %u)", h->header_size);
	if (h->compression > BTD_COMP_ZLIB || h->zlevel > 9 || (h->compression == BTD_COMP_NONE) != (h->zlevel == 0))
		return HFAIL("compression %u level %u)", h->compression, h->zlevel);
	if (h->ncpus == 0 || h->ncpus > BTD_MAX_CPUS || h->ngroups == 0 || h->ngroups > BTD_MAX_GROUPS)
		return HFAIL("%u CPUs, %u groups)", h->ncpus, h->ngroups);
	if (h->clock_id != BTD_CLOCK_BOOTTIME)
		return HFAIL("clock id %u; dumps are timed with CLOCK_BOOTTIME, %u)", h->clock_id, BTD_CLOCK_BOOTTIME);
	if (h->flags != 0)
		return HFAIL("flags %#x; version %u defines none)", h->flags, BTD_VERSION);
	if (h->ngroups < 32 && h->groups_enabled >> h->ngroups)
		return HFAIL("groups %#x enabled of %u)", h->groups_enabled, h->ngroups);
	if (h->block_size < BT_MIN_BLOCK_SIZE || h->block_size > BT_MAX_BLOCK_SIZE ||
	    (h->block_size & (h->block_size - 1)))
		return HFAIL("block size %u; a power of two from %u to %u)", h->block_size, BT_MIN_BLOCK_SIZE,
			     BT_MAX_BLOCK_SIZE);
	if (h->nblocks == 0 || h->active == 0 || h->active > h->nblocks ||
	    h->buffer_size != (uint64_t)h->nblocks * h->block_size)
		return HFAIL("%u blocks of %u bytes, %u active, buffer of %" PRIu64 " bytes)", h->nblocks,
			     h->block_size, h->active, h->buffer_size);
	if (h->dump_seq == 0 || h->overlaps_dump >= h->dump_seq)
		return HFAIL("dump #%" PRIu64 " overlapping #%" PRIu64 ")", h->dump_seq, h->overlaps_dump);
	if (h->header_size > file_len)
		return btd_rerr(err, errlen, EBADMSG, "truncated dump (file ends at %" PRIu64 " of %u header bytes)",
			    file_len, h->header_size), -EBADMSG;
	uint64_t room = file_len - h->header_size;
	if (h->body_len > room)
		return btd_rerr(err, errlen, EBADMSG, "truncated dump (file ends at %" PRIu64 " of %" PRIu64 " bytes)",
			    file_len, h->header_size + h->body_len), -EBADMSG;
	if (h->body_len < room)
		return btd_rerr(err, errlen, EBADMSG, "corrupt dump (%" PRIu64 " unexpected bytes after the body)",
			    room - h->body_len), -EBADMSG;
	if (h->body_raw_len % 8 || h->body_raw_len < sizeof(struct btd_section) + sizeof(struct btd_end) ||
	    (h->compression == BTD_COMP_NONE && h->body_raw_len != h->body_len) ||
	    (h->compression == BTD_COMP_ZLIB && h->body_raw_len / ZLIB_MAX_RATIO > h->body_len) ||
	    h->body_raw_len > SIZE_MAX / 2)
		return HFAIL("body of %" PRIu64 " bytes, %" PRIu64 " uncompressed)", h->body_len, h->body_raw_len);
	/* a reader that streams the body (BTD_HDR_STREAMED) holds a bounded
	 * part of it: dump_stream.c checks what it keeps as it goes */
	uint64_t max = body_max();
	if (!(flags & BTD_HDR_STREAMED) && h->body_raw_len > max) {
		char s1[32], s2[32];
		return btd_rerr(err, errlen, EFBIG,
				"dump body of %s uncompressed is over the %s a reader takes into memory "
				"(BTRACE_DUMP_MAX_BODY=SIZE raises it, up to the memory available)",
				format_size(h->body_raw_len, s1, sizeof(s1)), format_size(max, s2, sizeof(s2))), -EFBIG;
	}
	/* A section takes at least its 16-byte header, a stored event 32
	 * bytes; TASK, PROB, LOSS and END are always there. */
	if (h->nsections < 4 || h->nsections > h->body_raw_len / sizeof(struct btd_section) ||
	    h->nblocks_stored > h->nsections || h->nevents_stored > h->body_raw_len / 32)
		return HFAIL("%" PRIu64 " sections, %" PRIu64 " blocks, %" PRIu64 " events in a body of %" PRIu64
			     " bytes)", h->nsections, h->nblocks_stored, h->nevents_stored, h->body_raw_len);
#undef HFAIL
	return 0;
}

static struct bt_dump *dump_new(const struct btd_header *h, uint64_t file_len, char *err, size_t errlen)
{
	struct bt_dump *d = calloc(1, sizeof(*d));
	if (!d)
		return btd_rerr(err, errlen, ENOMEM, "out of memory");
	d->body_max = body_max();
	btd_header_copy(d, h, file_len);
	d->body_len = h->body_raw_len;
	d->body = malloc(d->body_len);
	if (!d->body) {
		free(d);
		return btd_rerr(err, errlen, ENOMEM, "out of memory for a %" PRIu64 "-byte body", h->body_raw_len);
	}
	return d;
}

/* The stored body, piece by piece: from memory, or from the file in
 * READ_CHUNK reads (so memory follows what the header declares and a bad
 * body is found before it is all in memory). crc: of what was delivered. */
#define READ_CHUNK (1u << 20)
struct src {
	const uint8_t *mem; /* memory source; NULL: fd */
	int fd;
	uint64_t off, left;
	uint8_t *buf;       /* READ_CHUNK bytes for fd */
	uint32_t crc;
};

static void src_init(struct src *s, const uint8_t *mem, int fd, uint8_t *buf, uint64_t off, uint64_t len)
{
	*s = (struct src){ .mem = mem, .fd = fd, .off = off, .left = len, .buf = buf };
	s->crc = (uint32_t)crc32(0, Z_NULL, 0);
}

/* 1 with the next piece in *p, *n; 0 at the end; -errno. */
static int src_next(struct src *s, const uint8_t **p, size_t *n)
{
	if (!s->left)
		return 0;
	size_t want = s->left > READ_CHUNK ? READ_CHUNK : (size_t)s->left;
	if (s->mem) {
		*p = s->mem + s->off;
	} else {
		size_t got = 0;
		while (got < want) {
			ssize_t r = pread(s->fd, s->buf + got, want - got, (off_t)(s->off + got));
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return -errno;
			if (r == 0)
				return -ENODATA; /* the file shrank while read */
			got += (size_t)r;
		}
		*p = s->buf;
	}
	s->off += want;
	s->left -= want;
	*n = want;
	s->crc = (uint32_t)crc32(s->crc, *p, (uInt)want);
	return 1;
}

static int src_fail(int r, char *err, size_t errlen)
{
	if (r == -ENODATA)
		btd_rerr(err, errlen, EBADMSG, "truncated dump (the file shrank while it was read)");
	else
		btd_rerr(err, errlen, -r, "read error: %s", strerror(-r));
	return r == -ENODATA ? -EBADMSG : r;
}

static int inflate_body(struct bt_dump *d, struct src *s, char *err, size_t errlen)
{
	z_stream z = { 0 };
	if (inflateInit(&z) != Z_OK) {
		btd_rerr(err, errlen, ENOMEM, "out of memory (zlib)");
		return -ENOMEM;
	}
	uint64_t out_off = 0;
	int r = Z_OK, eof = 0;
	while (r != Z_STREAM_END) {
		if (z.avail_in == 0 && !eof) {
			const uint8_t *p;
			size_t n;
			int k = src_next(s, &p, &n);
			if (k < 0) {
				inflateEnd(&z);
				return src_fail(k, err, errlen);
			}
			if (k == 0) {
				eof = 1;
			} else {
				z.next_in = (Bytef *)p;
				z.avail_in = (uInt)n;
			}
		}
		if (z.avail_out == 0 && out_off < d->body_len) {
			uint64_t n = d->body_len - out_off > (1u << 30) ? (1u << 30) : d->body_len - out_off;
			z.next_out = d->body + out_off;
			z.avail_out = (uInt)n;
			out_off += n;
		}
		uInt before_in = z.avail_in, before_out = z.avail_out;
		r = inflate(&z, Z_NO_FLUSH);
		if (r == Z_STREAM_END)
			break;
		if (r == Z_NEED_DICT || r == Z_DATA_ERROR || r == Z_STREAM_ERROR || r == Z_MEM_ERROR) {
			btd_rerr(err, errlen, EBADMSG, "corrupt dump: compressed body is damaged (zlib: %s)",
			     z.msg ? z.msg : "error");
			inflateEnd(&z);
			return -EBADMSG;
		}
		if (z.avail_in == before_in && z.avail_out == before_out && (eof || z.avail_in)) {
			/* No progress: input exhausted or output full. */
			if (z.avail_out == 0 && out_off >= d->body_len)
				btd_rerr(err, errlen, EBADMSG,
				     "corrupt dump: compressed body is larger than its recorded size (%" PRIu64 " bytes)",
				     d->body_len);
			else
				btd_rerr(err, errlen, EBADMSG, "corrupt dump: compressed body ends early");
			inflateEnd(&z);
			return -EBADMSG;
		}
	}
	uint64_t total = out_off - z.avail_out; /* z.total_out may be 32-bit */
	int trailing = z.avail_in != 0 || s->left != 0;
	inflateEnd(&z);
	if (total != d->body_len) {
		btd_rerr(err, errlen, EBADMSG,
		     "corrupt dump: compressed body holds %" PRIu64 " bytes, header says %" PRIu64, total, d->body_len);
		return -EBADMSG;
	}
	if (trailing) {
		btd_rerr(err, errlen, EBADMSG, "corrupt dump: data after the end of the compressed body");
		return -EBADMSG;
	}
	return 0;
}

/* Copy an uncompressed body. */
static int copy_body(struct bt_dump *d, struct src *s, char *err, size_t errlen)
{
	const uint8_t *p;
	size_t n;
	uint64_t o = 0;
	int k;
	while ((k = src_next(s, &p, &n)) > 0) {
		memcpy(d->body + o, p, n);
		o += n;
	}
	return k < 0 ? src_fail(k, err, errlen) : 0;
}

/* The body is in d->body: check it and parse it. Closes d on failure. */
static struct bt_dump *dump_finish(struct bt_dump *d, const struct btd_header *h, unsigned flags, char *err,
				   size_t errlen)
{
	if (!(flags & BT_DUMP_OPEN_NOCRC) && h->compression != BTD_COMP_NONE) {
		uint32_t c = crc_of(d->body, d->body_len);
		if (c != h->raw_crc) {
			btd_rerr(err, errlen, EBADMSG, "corrupt dump (uncompressed body checksum %08x, expected %08x)", c,
			     h->raw_crc);
			goto fail;
		}
	}
	if (btd_parse_body(d, err, errlen) < 0)
		goto fail;
	if (flags & BT_DUMP_OPEN_FUNC_BATCHES)
		btd_link_funcs(d);
	else if (btd_decode_funcs(d, err, errlen) < 0)
		goto fail;
	if (d->nevents)
		qsort(d->events, d->nevents, sizeof(*d->events), cmp_event);
	return d;
fail: {
	int e = errno;
	bt_dump_close(d);
	errno = e;
	return NULL;
}
}

static struct bt_dump *body_crc_fail(struct bt_dump *d, uint32_t c, uint32_t want, char *err, size_t errlen)
{
	bt_dump_close(d);
	return btd_rerr(err, errlen, EBADMSG, "corrupt dump (body checksum %08x, expected %08x)", c, want);
}

static struct bt_dump *open_buf(const uint8_t *data, size_t len, unsigned flags, char *err, size_t errlen)
{
	struct btd_header h;
	struct src s;

	if (err && errlen)
		err[0] = '\0';
	if (check_header(data, len, flags, &h, err, errlen) < 0)
		return NULL;
	const uint8_t *body = data + h.header_size;
	if (!(flags & BT_DUMP_OPEN_NOCRC)) {
		uint32_t c = crc_of(body, h.body_len);
		if (c != h.body_crc)
			return btd_rerr(err, errlen, EBADMSG, "corrupt dump (body checksum %08x, expected %08x)", c,
				    h.body_crc);
	}
	struct bt_dump *d = dump_new(&h, len, err, errlen);
	if (!d)
		return NULL;
	src_init(&s, data, -1, NULL, h.header_size, h.body_len);
	if ((h.compression == BTD_COMP_NONE ? copy_body(d, &s, err, errlen) : inflate_body(d, &s, err, errlen)) < 0) {
		int e = errno;
		bt_dump_close(d);
		errno = e;
		return NULL;
	}
	return dump_finish(d, &h, flags, err, errlen);
}

struct bt_dump *bt_dump_open_mem_flags(const void *data, size_t len, unsigned flags, char *err, size_t errlen)
{
	if (!data && len)
		return btd_rerr(err, errlen, EINVAL, "no data");
	return open_buf(data ? data : "", len, flags, err, errlen);
}

struct bt_dump *bt_dump_open_mem(const void *data, size_t len, char *err, size_t errlen)
{
	return bt_dump_open_mem_flags(data, len, 0, err, errlen);
}

static const char *file_kind(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" :
	       S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : "not a regular file";
}

/* From a file: header first (512 bytes), then the body in chunks. Memory is
 * what the header declares (the uncompressed body) plus one chunk; a file
 * whose header does not check out costs one read. */
static struct bt_dump *open_fd(int fd, uint64_t file_len, unsigned flags, char *err, size_t errlen)
{
	uint8_t hbuf[BTD_HEADER_SIZE];
	struct btd_header h;
	struct src s;
	size_t got = 0, want = file_len < sizeof(hbuf) ? (size_t)file_len : sizeof(hbuf);

	while (got < want) {
		ssize_t r = pread(fd, hbuf + got, want - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			return btd_rerr(err, errlen, e, "read error: %s", strerror(e));
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if (got < want)
		file_len = got; /* shrank: validation reports the truncation */
	if (check_header(hbuf, file_len, 0, &h, err, errlen) < 0)
		return NULL;
	uint8_t *buf = malloc(READ_CHUNK);
	if (!buf)
		return btd_rerr(err, errlen, ENOMEM, "out of memory");
	struct bt_dump *d = NULL;
	int r = 0;
	if (h.compression == BTD_COMP_NONE) {
		/* The checksum first, one chunk at a time: nothing of a damaged
		 * body is kept. */
		const uint8_t *p;
		size_t n;
		src_init(&s, NULL, fd, buf, h.header_size, h.body_len);
		while ((r = src_next(&s, &p, &n)) > 0)
			;
		if (r < 0) {
			src_fail(r, err, errlen);
			goto out;
		}
		if (s.crc != h.body_crc) {
			d = body_crc_fail(NULL, s.crc, h.body_crc, err, errlen);
			goto out;
		}
	}
	d = dump_new(&h, file_len, err, errlen);
	if (!d)
		goto out;
	src_init(&s, NULL, fd, buf, h.header_size, h.body_len);
	r = h.compression == BTD_COMP_NONE ? copy_body(d, &s, err, errlen) : inflate_body(d, &s, err, errlen);
	if (r == -EBADMSG && h.compression != BTD_COMP_NONE) {
		/* A damaged stream: say so by the checksum when it is the file
		 * that was damaged (read on, one chunk at a time). */
		const uint8_t *p;
		size_t n;
		int k;
		while ((k = src_next(&s, &p, &n)) > 0)
			;
		if (k == 0 && s.crc != h.body_crc)
			r = 0;
	}
	if (r == 0 && s.crc != h.body_crc) {
		d = body_crc_fail(d, s.crc, h.body_crc, err, errlen);
		goto out;
	}
	if (r < 0) {
		int e = errno;
		bt_dump_close(d);
		errno = e;
		d = NULL;
		goto out;
	}
	free(buf);
	return dump_finish(d, &h, flags, err, errlen);
out: {
	int e = errno;
	free(buf);
	errno = e;
	return d;
}
}

int btd_stream_file(int fd, const struct btd_header *hp, struct bt_dump_stream *st, char *err, size_t errlen)
{
	enum { OUT = 1u << 20 };
	const struct btd_header h = *hp;
	struct src s = { 0 };
	z_stream z = { 0 };
	const uint8_t *p;
	size_t n;
	uint64_t raw = 0;
	uint32_t raw_crc = (uint32_t)crc32(0, Z_NULL, 0);
	int r = 0, zinit = 0, zend = 0;
	uint8_t *buf = malloc(READ_CHUNK), *out = malloc(OUT);

	if (!buf || !out || !st) {
		r = -ENOMEM;
		btd_rerr(err, errlen, ENOMEM, "out of memory");
		goto out;
	}
	if (h.compression != BTD_COMP_NONE) {
		if (inflateInit(&z) != Z_OK) {
			r = -ENOMEM;
			btd_rerr(err, errlen, ENOMEM, "out of memory (zlib)");
			goto out;
		}
		zinit = 1;
	}
	src_init(&s, NULL, fd, buf, h.header_size, h.body_len);
	while ((r = src_next(&s, &p, &n)) > 0) {
		if (!zinit) {
			raw += n;
			bt_dump_stream_put(st, p, n);
			continue;
		}
		z.next_in = (Bytef *)p;
		z.avail_in = (uInt)n;
		do { /* until the input is used and the output did not fill */
			z.next_out = out;
			z.avail_out = OUT;
			int k = inflate(&z, Z_NO_FLUSH);
			if (k != Z_OK && k != Z_STREAM_END && k != Z_BUF_ERROR) {
				r = -EBADMSG;
				btd_rerr(err, errlen, EBADMSG, "corrupt dump: compressed body is damaged (zlib: %s)",
					 z.msg ? z.msg : "error");
				goto out;
			}
			size_t made = OUT - z.avail_out;
			raw += made;
			if (raw > h.body_raw_len) {
				r = -EBADMSG;
				btd_rerr(err, errlen, EBADMSG, "corrupt dump: compressed body is larger than its recorded size (%" PRIu64 " bytes)",
					 h.body_raw_len);
				goto out;
			}
			raw_crc = (uint32_t)crc32(raw_crc, out, (uInt)made);
			bt_dump_stream_put(st, out, made);
			zend = k == Z_STREAM_END;
			if (k == Z_BUF_ERROR && !made)
				break;
		} while (!zend && (z.avail_in || z.avail_out == 0));
		if (zend && (z.avail_in || s.left)) {
			r = -EBADMSG;
			btd_rerr(err, errlen, EBADMSG, "corrupt dump: data after the end of the compressed body");
			goto out;
		}
	}
	if (r < 0) {
		r = src_fail(r, err, errlen);
		goto out;
	}
	if (s.crc != h.body_crc) {
		r = -EBADMSG;
		btd_rerr(err, errlen, EBADMSG, "corrupt dump (body checksum %08x, expected %08x)", s.crc, h.body_crc);
		goto out;
	}
	if (raw != h.body_raw_len || (zinit && !zend)) {
		r = -EBADMSG;
		btd_rerr(err, errlen, EBADMSG, "corrupt dump: body holds %" PRIu64 " bytes, header says %" PRIu64, raw,
			 h.body_raw_len);
		goto out;
	}
	if (zinit && raw_crc != h.raw_crc) {
		r = -EBADMSG;
		btd_rerr(err, errlen, EBADMSG, "corrupt dump (uncompressed body checksum %08x, expected %08x)", raw_crc,
			 h.raw_crc);
		goto out;
	}
out:
	if (r == -EBADMSG) {
		/* A damaged stream: say so by the checksum when it is the file
		 * that was damaged (read on, one chunk at a time), as open_fd. */
		int k;
		while ((k = src_next(&s, &p, &n)) > 0)
			;
		if (k == 0 && s.crc != h.body_crc)
			btd_rerr(err, errlen, EBADMSG, "corrupt dump (body checksum %08x, expected %08x)", s.crc, h.body_crc);
	}
	if (zinit)
		inflateEnd(&z);
	free(buf);
	free(out);
	return r;
}

static int read_header(int fd, uint64_t file_len, struct btd_header *h, char *err, size_t errlen)
{
	/* only the streaming readers read a header alone */
	uint8_t hbuf[BTD_HEADER_SIZE];
	size_t got = 0, want = file_len < sizeof(hbuf) ? (size_t)file_len : sizeof(hbuf);

	while (got < want) {
		ssize_t k = pread(fd, hbuf + got, want - got, (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	return check_header(hbuf, got < want ? got : file_len, BTD_HDR_STREAMED, h, err, errlen);
}

/* A summary (dump.h) of the file at fd: the body inflated (or read) a
 * chunk at a time into the stream, both checksums checked as it goes. */
static struct bt_dump *summary_fd(int fd, uint64_t file_len, char *err, size_t errlen)
{
	struct btd_header h;

	if (read_header(fd, file_len, &h, err, errlen) < 0)
		return NULL;
	struct bt_dump_stream *st = bt_dump_stream_new(h.ncpus, h.ngroups);
	int r = btd_stream_file(fd, &h, st, err, errlen);
	if (r < 0) {
		bt_dump_stream_free(st);
		errno = -r;
		return NULL;
	}
	struct bt_dump *d = bt_dump_stream_finish(st, &h, file_len, err, errlen);
	if (d && bt_dump_summary_finish(d)) {
		bt_dump_close(d);
		return btd_rerr(err, errlen, ENOMEM, "out of memory");
	}
	return d;
}

const struct btd_app_stream_ops btd_app_stream_ops = {
	.note = btd_app_stream_note,
	.block_done = btd_app_stream_block_done,
	.stream_file = btd_stream_file,
};

/* BT_DUMP_OPEN_APP_STREAM: the body streamed once, every section kept in
 * place in a body mapped but not touched where the application blocks
 * are (so they cost no memory), those checked and described only; they
 * are read again from the file by each walk (dump_app_stream.c). */
static struct bt_dump *app_stream_fd(int fd, uint64_t file_len, char *err, size_t errlen)
{
	struct btd_header h;
	struct bt_dump *d;

	if (read_header(fd, file_len, &h, err, errlen) < 0)
		return NULL;
	if (!(d = calloc(1, sizeof(*d))))
		return btd_rerr(err, errlen, ENOMEM, "out of memory");
	d->fd = -1;
	d->app_stream = 1;
	d->app_ops = &btd_app_stream_ops;
	d->app_max = -1;
	d->tgid_mixed = -1;
	d->ablk_cur = UINT64_MAX;
	d->fhdr = h;
	d->body_max = body_max();
	btd_header_copy(d, &h, file_len);
	d->body_len = h.body_raw_len;
	void *m = mmap(NULL, d->body_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		free(d);
		return btd_rerr(err, errlen, ENOMEM, "out of memory for a %" PRIu64 "-byte body", h.body_raw_len);
	}
	d->body = m;
	d->body_map = d->body_len;
	struct bt_dump_stream *st = btd_stream_keep(d);
	int r = btd_stream_file(fd, &h, st, err, errlen);
	if (!st || r < 0) {
		bt_dump_stream_free(st); /* closes d */
		if (!st)
			bt_dump_close(d);
		errno = st ? -r : ENOMEM;
		return NULL;
	}
	if (!(d = bt_dump_stream_finish(st, &h, file_len, err, errlen)))
		return NULL;
	btd_link_funcs(d);
	if (d->nevents)
		qsort(d->events, d->nevents, sizeof(*d->events), cmp_event);
	if ((d->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		int e = errno;
		bt_dump_close(d);
		return btd_rerr(err, errlen, e, "cannot keep the file open: %s", strerror(e));
	}
	return d;
}

struct bt_dump *bt_dump_open_summary(const char *path, char *err, size_t errlen)
{
	struct stat st;
	struct bt_dump *d;
	int fd, e;

	if (err && errlen)
		err[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		e = errno;
		return btd_rerr(err, errlen, e, "cannot open: %s", strerror(e));
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		close(fd);
		return btd_rerr(err, errlen, e, "cannot stat: %s", strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return btd_rerr(err, errlen, S_ISDIR(st.st_mode) ? EISDIR : EINVAL,
				"not a regular file (%s): give a dump file", file_kind(st.st_mode));
	}
	d = summary_fd(fd, (uint64_t)st.st_size, err, errlen);
	e = errno;
	close(fd);
	errno = e;
	return d;
}

struct bt_dump *bt_dump_open(const char *path, char *err, size_t errlen)
{
	return bt_dump_open_flags(path, 0, err, errlen);
}

struct bt_dump *bt_dump_open_flags(const char *path, unsigned flags, char *err, size_t errlen)
{
	struct stat st;
	if (err && errlen)
		err[0] = '\0';
	/* O_NONBLOCK: opening a FIFO must not wait for a writer; the type is
	 * checked before anything is read. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		return btd_rerr(err, errlen, e, "cannot open: %s", strerror(e));
	}
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return btd_rerr(err, errlen, e, "cannot stat: %s", strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return btd_rerr(err, errlen, S_ISDIR(st.st_mode) ? EISDIR : EINVAL,
			    "not a regular file (%s): give a dump file", file_kind(st.st_mode));
	}
	struct bt_dump *d = flags & BT_DUMP_OPEN_APP_STREAM ? app_stream_fd(fd, (uint64_t)st.st_size, err, errlen)
								: open_fd(fd, (uint64_t)st.st_size, flags, err, errlen);
	int e = errno;
	close(fd);
	errno = e;
	return d;
}
