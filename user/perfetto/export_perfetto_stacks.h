/* SPDX-License-Identifier: MIT */
/*
 * export_perfetto_stacks.h - call stacks in the Perfetto trace
 * (export_perfetto.c does the packets):
 *   - InternedData of the dump's stack table: function names, mapping paths,
 *     build-ids (raw bytes), mappings, source paths, frames (with their
 *     source line when the dump has them, and a frame of its own for each
 *     call inlined at a frame's address), and one callstack per (kernel,
 *     user) pair the samples, off-CPU blocks and wakers use, frames bottom
 *     (outermost user) first;
 *   - the per-thread call chart (btrace 3.0): consecutive samples of a
 *     thread become nested slices, a frame (inlined calls included) staying
 *     open while the next sample still has it at the same depth, so a
 *     function that ran across many samples is one slice;
 *   - names for off-CPU slices (the innermost user function).
 */
#ifndef BTRACE_EXPORT_PERFETTO_STACKS_H
#define BTRACE_EXPORT_PERFETTO_STACKS_H
#include <stddef.h>
#include <stdint.h>
#include "pbwriter.h"

struct bt_dump_stacks;
struct bt_dump_event;
struct bt_pf_stacks;

/* Collects the (kstack, ustack) pairs of the CPU samples. NULL + -errno in *err. */
struct bt_pf_stacks *bt_pf_stacks_new(const struct bt_dump_stacks *s, const struct bt_dump_event *ev, size_t n,
				      int *err);
void bt_pf_stacks_free(struct bt_pf_stacks *ps);
/* Writes the InternedData message (TracePacket field `field`) into w: 0 or
 * -ENOMEM. */
int bt_pf_stacks_interned(struct bt_pf_stacks *ps, struct pbw *w, uint32_t field);
/* The callstack iid of the pair of a CPU sample, off-CPU block or waker
 * (never 0 for those: a lost stack has a labelled callstack). */
uint64_t bt_pf_stacks_iid(const struct bt_pf_stacks *ps, uint32_t kstack, uint32_t ustack);

/* Whether the pair's callstack is labelled: a stack lost, or no frames. */
int bt_pf_stacks_lost(const struct bt_pf_stacks *ps, uint32_t kstack, uint32_t ustack);

/* Call chart: what to emit on tid's chart track: a slice's end (begin 0),
 * its begin with a name (1), or the begin of one open at the window's
 * start (BT_PF_CHART_BEFORE: marked begun_before_window). */
#define BT_PF_CHART_BEFORE 2
typedef int (*bt_pf_chart_fn)(void *ctx, uint32_t tid, uint32_t tgid, uint64_t ts, int begin, const char *name);
/* A sample of tid at ts; period_ns: the sampling period (a thread not seen
 * for two periods had stopped running: its slices end one period after
 * its last sample). open_from: where the frames of the thread's first
 * sample begin when the thread has nothing else to draw the calls
 * enclosing the window from (the window's start, < ts), 0: at ts. 0 or
 * the callback's error. */
int bt_pf_chart_sample(struct bt_pf_stacks *ps, uint32_t tid, uint32_t tgid, uint64_t ts, uint32_t kstack,
		       uint32_t ustack, uint64_t period_ns, uint64_t open_from, bt_pf_chart_fn fn, void *ctx);

/* End every open slice (one period after each thread's last sample). */
int bt_pf_chart_finish(struct bt_pf_stacks *ps, uint64_t period_ns, bt_pf_chart_fn fn, void *ctx);

/* Name of the innermost user function of a stack pair (else kernel's), for
 * an off-CPU slice; "[unknown]" if none. Its first *len bytes (no symbol
 * version). */
const char *bt_pf_stacks_leaf(const struct bt_pf_stacks *ps, uint32_t kstack, uint32_t ustack, size_t *len);
#endif
