/* SPDX-License-Identifier: MIT */
/*
 * trigger_bpf.h - load bpf/trigger.bpf.c for the --trigger conditions that
 * live in the kernel, attach only the programs those conditions need, and
 * hand their hits to the caller as they come (struct bt_trig_hit, one per
 * hit sent by the kernel; the kernel counts the rest, bt_trig_bpf_count).
 */
#ifndef BTRACE_TRIGGER_BPF_H
#define BTRACE_TRIGGER_BPF_H
#include <stddef.h>
#include <stdint.h>
#include "trigger_spec.h"

struct bt_trig_bpf;

/* Slot i of the kernel side is v[i]; specs of user-space kinds leave their
 * slot empty. ring_fd and counts_fd: the record loader's trigger ring and
 * counters (bt_loader_trig_maps), shared. Returns NULL (nothing attached, errno set, one line in err)
 * when a condition cannot be armed on this kernel, or NULL with errno 0 if
 * no spec needs the kernel. */
struct bt_trig_bpf *bt_trig_bpf_open(const struct bt_trigger_spec *v, size_t n, int ring_fd, int counts_fd, char *err,
				     size_t errlen);
/* The slots record.bpf.c evaluates itself (sched-latency, read inside its
 * sched_switch program), into out[BT_TRIG_MAX] for the record loader, which
 * owns the trigger ring and counters (ring_fd, counts_fd above). 1 if any
 * slot is armed, 0 if none, -errno with one line in err if this kernel
 * cannot arm them. */
int bt_trig_bpf_record_conf(const struct bt_trigger_spec *v, size_t n, struct bt_trig_conf *out, char *err,
			    size_t errlen);
/* Readable when hits are waiting (an epoll fd). */
int bt_trig_bpf_fd(const struct bt_trig_bpf *t);
/* Hand every waiting hit to fn; returns how many, or -errno. */
typedef void (*bt_trig_hit_fn)(void *ctx, const struct bt_trig_hit *h);
int bt_trig_bpf_consume(struct bt_trig_bpf *t, bt_trig_hit_fn fn, void *ctx);
/* The kernel's counters of slot i. 0 or -errno. */
int bt_trig_bpf_count(const struct bt_trig_bpf *t, uint32_t i, struct bt_trig_count *out);
void bt_trig_bpf_detach(struct bt_trig_bpf *t);
void bt_trig_bpf_destroy(struct bt_trig_bpf *t);
#endif
