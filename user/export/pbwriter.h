/* SPDX-License-Identifier: MIT */
/*
 * pbwriter.h - a minimal protocol-buffers encoder (wire format only, no
 * schema): varints, fixed64/double, length-delimited strings and nested
 * messages, into a growable byte buffer that the caller flushes (e.g. once
 * per TracePacket) and reuses.
 *
 * Nested messages: pbw_begin() writes the tag and reserves one byte for the
 * length; pbw_end() back-patches it with the minimal varint, moving the body
 * forward when the length needs more than one byte (only outer messages of
 * 128 bytes or more pay that memmove). The output is canonical protobuf:
 * every length is a minimal varint, so files are no larger than protoc's.
 *
 * Errors (out of memory, nesting too deep, unbalanced begin/end) are sticky:
 * calls after the first error do nothing, pbw_error() reports -ENOMEM or
 * -EINVAL, and the buffer must then be discarded.
 */
#ifndef BTRACE_PBWRITER_H
#define BTRACE_PBWRITER_H
#include <stddef.h>
#include <stdint.h>

#define PBW_MAX_DEPTH 16

/* wire types */
#define PBW_VARINT 0
#define PBW_I64 1
#define PBW_LEN 2
#define PBW_I32 5

struct pbw {
	uint8_t *buf;
	size_t len, cap;
	int err;   /* 0 or -errno, sticky */
	int depth; /* open nested messages */
	size_t open[PBW_MAX_DEPTH]; /* offset of the reserved length byte of each */
};

void pbw_init(struct pbw *w);
void pbw_free(struct pbw *w);
/* Empty the buffer (keeps the memory). Fails (-EINVAL) if messages are open. */
void pbw_reset(struct pbw *w);
static inline int pbw_error(const struct pbw *w) { return w->err; }
static inline const uint8_t *pbw_data(const struct pbw *w) { return w->buf; }
static inline size_t pbw_len(const struct pbw *w) { return w->len; }

/* Bytes a varint of v takes (1..10). */
unsigned pbw_varint_size(uint64_t v);

/* Fields. int32/int64 fields take pbw_int (negative values: 10 bytes, as
 * protobuf encodes them); uint32/uint64/bool/enum take pbw_uint. */
void pbw_uint(struct pbw *w, uint32_t field, uint64_t v);
void pbw_int(struct pbw *w, uint32_t field, int64_t v);
void pbw_sint(struct pbw *w, uint32_t field, int64_t v); /* sint32/sint64 (zigzag) */
void pbw_bool(struct pbw *w, uint32_t field, int v);
void pbw_fixed64(struct pbw *w, uint32_t field, uint64_t v);
void pbw_bytes(struct pbw *w, uint32_t field, const void *p, size_t n);
void pbw_string(struct pbw *w, uint32_t field, const char *s);
/* At most maxlen bytes of s, stopping at a NUL (fixed-size comm fields). */
void pbw_stringn(struct pbw *w, uint32_t field, const char *s, size_t maxlen);

/* A name: at most maxlen bytes of s, stopping at a NUL, escaped as report
 * escapes names (bt_escape_text: control characters and bytes that do not
 * start valid UTF-8 as "\xNN", backslash doubled), so the field is valid
 * UTF-8 (as protobuf requires) and prints safely. For names from the kernel
 * (comm) and from programs' files, which are arbitrary bytes. */
void pbw_utf8(struct pbw *w, uint32_t field, const char *s, size_t maxlen);

/* Nested message (or packed repeated field): begin, write its fields, end. */
void pbw_begin(struct pbw *w, uint32_t field);
void pbw_end(struct pbw *w);
/* Inside a packed repeated field: one bare varint element. */
void pbw_raw_varint(struct pbw *w, uint64_t v);
/* Append pre-encoded bytes (a message built in another buffer: interned
 * data gathered while a packet is written, a pprof Location). */
void pbw_raw(struct pbw *w, const void *p, size_t n);
#endif
