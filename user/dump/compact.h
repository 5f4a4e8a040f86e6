/* SPDX-License-Identifier: MIT */
/*
 * compact.h - how kernel events are stored in the recorder's buffer.
 *
 * The BPF side emits the full ABI (bpf/events.h: a 24-byte header, fixed
 * 8-byte fields); dumps carry the full ABI too. In between, in memory, the
 * drain stores each event compactly, because bytes per event decide how many
 * seconds the buffer holds. A form starts with a full header, or with a
 * next-event header when it follows, in the same batch entry, an event of
 * the same thread with the previous seq, less than 2^24 ns (16.7 ms) before
 * it (flag NEXT; a thread's system calls and samples, mostly):
 *
 *   full:  u64 type (5 bits) | flags (3 bits) << 5 | ts (low 56 bits) << 8
 *          u32 seq
 *          u32 tid
 *          u32 tgid               only if it differs from tid (flag TGID)
 *   next:  u32 type | flags << 5 | (ts - the previous event's ts) << 8
 *          (seq: the previous + 1; tid and tgid: the previous event's)
 *   then:  u32 payload length     only with flag WIDE
 *          payload                narrow forms below, else the ABI payload
 *
 * A form has no length of its own: its type and flags give it (a narrow
 * form, or a type's ABI payload), and a WIDE form holds its payload's.
 * Readers decode a batch entry's forms in order, from its first (always
 * full) with a struct bt_compact_prev; a form that does not check out
 * makes the next-event forms after it unreadable, and they are counted as
 * malformed, never placed after the wrong event.
 * The CPU is not stored: the drain writes CPU c's events into buffer core c,
 * and the reader takes it from the block. Narrow forms (flag WIDE clear):
 *   sys_enter     s32 id
 *   sys_exit      s32 id, s32 ret
 *   sched_switch  u32 prev_tid, u32 next_tid, u16 prev_state, u8 prev_prio, u8 next_prio
 *   stack events  u16 kstack, u16 ustack (0xffff = BT_STACK_LOST), then the
 *                 ABI fields after them without the reserved word: nothing
 *                 (cpu_sample), u64 offcpu_ns, u32 wakee, u32 probe_id
 * used when the values fit; otherwise (WIDE) the ABI payload is stored as
 * is, after its length. Types without a narrow form store their ABI payload
 * (WIDE only when an event is longer than its type: a probe's arguments).
 * A sys_enter/sys_exit pair takes 20 bytes as next events (44 with full
 * headers; 96 in the ABI with the buffer's entry headers), a sched_switch
 * 28 (48), a CPU sample 20, or 24 in a process's other threads (40).
 * Timestamps: 56 bits of nanoseconds are 2.28 years; the reader takes the high bits from a reference time (the
 * dump's), valid for events younger than that.
 */
#ifndef BTRACE_COMPACT_H
#define BTRACE_COMPACT_H
#include <stdint.h>
#include <linux/types.h>
#include "events.h"

#define BT_COMPACT_MAX 256 /* largest stored form; larger events are rejected */
#define BT_EVENT_MAX 256   /* largest ABI event the decoder rebuilds */
/* A dump writes an event in its ABI form with an 8-byte entry header: at
 * most 6 times its stored form (an 8-byte next-event sys_enter becomes 48
 * bytes), counted in halves. */
#define BT_DUMP_GROWTH_X2 12

/*
 * Batches: the drain writes the events of one CPU in batches of up to
 * BT_BATCH_MAX bytes, one buffer entry per batch (one reservation and one
 * confirmation per batch instead of per event, and no per-event header):
 *   repeated: a stored form, zero padding to 4
 * Stored forms are multiples of 4 bytes, so the padding is empty today.
 * A block's worth (4 KiB blocks: one entry a block at a system-call load):
 * at 1 KiB the reservations and copies were 7 of the drain's 47 ns a call.
 */
#define BT_BATCH_MAX 4096u

/* The event a next-event form follows: what the encoder stored last, or a
 * reader decoded last, in the same batch entry. Zero it at each entry's
 * start. */
struct bt_compact_prev {
	uint64_t ts;
	uint32_t seq, tid, tgid;
	uint32_t valid;
};

/* Append ev's stored form at at, which has room for BT_COMPACT_MAX bytes,
 * after prev's event (NULL: a full header; prev is advanced). Returns its
 * size with padding, the next form's offset from at; 0 if the event cannot
 * be stored. */
uint32_t bt_compact_batch_put(uint8_t *at, const struct bt_event_hdr *ev, uint32_t len, struct bt_compact_prev *prev);

/* bt_compact_batch_put() for a system call (struct bt_ev_syscall) whose
 * narrow form fits: the drain's path for the pairs, most of what it stores
 * under a system-call load. 0 if it has none (then put it as any event);
 * at most BT_COMPACT_SYS_MAX bytes. */
#define BT_COMPACT_SYS_MAX 28u
uint32_t bt_compact_sys_put(uint8_t *at, const struct bt_ev_syscall *s, struct bt_compact_prev *prev);
/* Both halves of a pair record (the enter, then the exit) in their narrow
 * forms, at most 2 * BT_COMPACT_SYS_MAX bytes; 0 (nothing written, prev
 * unchanged) if they have none. */
uint32_t bt_compact_sys_pair_put(uint8_t *at, const struct bt_raw_sys_pair *p, struct bt_compact_prev *prev);

/* Next stored event of a batch entry (ent, elen bytes) at *off: 1 with
 * rec and rlen set and *off advanced, 0 at the end, -1 if malformed (the
 * rest of the entry cannot be trusted). */
int bt_compact_batch_next(const uint8_t *ent, uint32_t elen, uint32_t *off, const uint8_t **rec, uint32_t *rlen);

/* Encode the ABI event ev (len bytes) into out (BT_COMPACT_MAX bytes),
 * after prev's event (NULL: a full header; prev is advanced). Returns the
 * stored size, or 0 if the event is malformed or too large. */
uint32_t bt_compact_encode(const struct bt_event_hdr *ev, uint32_t len, struct bt_compact_prev *prev, void *out);

/* Rebuild the ABI event from a stored form of len bytes written for CPU cpu,
 * after prev's (advanced; left invalid if the form is malformed); ref_ts is
 * a CLOCK_BOOTTIME time not older than the event (the high bits of its
 * timestamp come from it). out has BT_EVENT_MAX bytes. Returns the ABI
 * length, or 0 if the stored form is malformed. */
uint32_t bt_compact_decode(const void *in, uint32_t len, uint32_t cpu, uint64_t ref_ts, struct bt_compact_prev *prev,
			   void *out);

/* Time, sequence and type of a stored form, after prev's (advanced); 0 if
 * malformed, checked as bt_compact_decode checks it (prev left invalid). */
int bt_compact_peek(const void *in, uint32_t len, uint64_t ref_ts, struct bt_compact_prev *prev, uint64_t *ts,
		    uint32_t *seq, uint32_t *type);

struct bt_capture;
/* The oldest and newest event time among the compact forms of a captured
 * buffer, at or before ref_ts (boot clock: later stamps are not
 * believed); both 0 when it holds none. */
void bt_compact_capture_span(const struct bt_capture *c, uint64_t ref_ts, uint64_t *oldest, uint64_t *newest);
#endif
