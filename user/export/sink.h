/* SPDX-License-Identifier: MIT */
/* sink.h - the exporters' output: buffered write(2) to an fd, optionally gzip. */
#ifndef BTRACE_SINK_H
#define BTRACE_SINK_H
#include <stddef.h>
#include <stdint.h>

/* ---- output sink: buffered write(2) to an fd, optionally gzip ----------- */
struct bt_sink;
struct bt_sink *bt_sink_new(int fd, int gzip);
/* 0 or the first error (-errno), sticky: later writes do nothing. */
int bt_sink_write(struct bt_sink *s, const void *p, size_t n);
int bt_sink_printf(struct bt_sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int bt_sink_error(const struct bt_sink *s);
/* The bytes written so far before compression (the text a reader holds). */
uint64_t bt_sink_raw_bytes(const struct bt_sink *s);
/* Flush (and finish the gzip stream), free. Does not close the fd. 0 or
 * -errno; the total bytes written go to *bytes (may be NULL). */
int bt_sink_finish(struct bt_sink *s, uint64_t *bytes);
void bt_sink_free(struct bt_sink *s); /* discard (error path) */
#endif
