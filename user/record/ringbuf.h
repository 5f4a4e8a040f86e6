/* SPDX-License-Identifier: MIT */
/*
 * ringbuf.h - batch consumer of BPF ring buffers (BPF_MAP_TYPE_RINGBUF).
 *
 * libbpf's consumer publishes the consumer position after every record: a
 * store to the page the producing CPU reads on every reservation, so at
 * millions of events per second the line moves between the CPUs once per
 * event, slowing the traced CPU and the drain alike. This one walks every
 * committed record of a ring and publishes the position once per batch
 * (and every eighth of the ring, so a long batch frees space as it goes).
 * The memory layout is the kernel's ring-buffer ABI (the one libbpf maps):
 * a consumer page (read-write), then a producer page and the data area
 * mapped twice in a row (read-only), records with an 8-byte header
 * (length with busy and discard bits, page offset), 8-byte aligned.
 */
#ifndef BTRACE_RINGBUF_H
#define BTRACE_RINGBUF_H
#include <stddef.h>
#include <stdint.h>

struct bt_rings;

/* Map n rings (map fds, each size bytes of data) into one epoll set.
 * NULL + errno on failure (message in err). */
struct bt_rings *bt_rings_new(const int *fds, size_t n, uint64_t size, char *err, size_t errlen);
void bt_rings_free(struct bt_rings *rs);

/* Wait up to timeout_ms for a ring to signal data (a BPF program asked for
 * a wakeup) or for bt_rings_wake(). Returns what ended the wait (0 on
 * timeout) or -errno. */
int bt_rings_poll(struct bt_rings *rs, int timeout_ms);

/* End the current or the next bt_rings_poll() at once; any thread. */
void bt_rings_wake(struct bt_rings *rs);

/* Hand every committed record of every ring to cb (data, len), oldest
 * first per ring. Returns records consumed. */
typedef int (*bt_ring_cb)(void *ctx, void *data, size_t len);
uint64_t bt_rings_consume(struct bt_rings *rs, bt_ring_cb cb, void *ctx);

/* The most bytes a bt_rings_consume() found waiting in one ring: how near
 * the rings came to full (a reservation failing). The consuming thread's. */
uint64_t bt_rings_peak(const struct bt_rings *rs);
#endif
