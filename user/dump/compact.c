// SPDX-License-Identifier: MIT
/*
 * compact.c - stored form of kernel events in the recorder's buffer (see
 * compact.h): encoded by the drain thread, decoded by the dump writer and
 * the live window. Everything is validated on decode; a stored form that
 * does not check out is reported as malformed, never guessed at.
 */
#include "compact.h"
#include "event_names.h"
#include "btrace_buffer.h"

#include <string.h>

#define TS_BITS 56
#define TS_MASK ((1ull << TS_BITS) - 1)
#define DTS_BITS 24
#define F_TGID 0x80u
#define F_WIDE 0x40u
#define F_NEXT 0x20u
#define TYPE_MASK 0x1fu
#define HDR 16u     /* a full header */
#define HDR_NEXT 4u /* a next-event header */

_Static_assert(BT_EV_MAX <= TYPE_MASK + 1, "kernel types fit in 5 bits");

struct chdr {
	uint64_t tf_ts; /* type and flags (low byte), ts << 8 */
	uint32_t seq;
	uint32_t tid;
};

/* Whether ev may be stored as the next event after prev: same thread, the
 * next seq, a little later. */
static inline int is_next_at(const struct bt_compact_prev *prev, uint64_t ts, uint32_t seq, uint32_t tid,
			     uint32_t tgid)
{
	return prev && prev->valid && tid == prev->tid && tgid == prev->tgid && seq == (uint32_t)(prev->seq + 1) &&
	       ts >= prev->ts && ts - prev->ts < (1ull << DTS_BITS);
}

static inline int is_next(const struct bt_compact_prev *prev, const struct bt_event_hdr *ev)
{
	return is_next_at(prev, ev->ts_ns, ev->seq, ev->tid, ev->tgid);
}

static int fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

static int is_stack_event(uint32_t type)
{
	return type >= BT_EV_CPU_SAMPLE && type <= BT_EV_PROBE_STACK;
}

/* A stack id in 16 bits (BT_STACK_LOST as 0xffff); 0 if it does not fit. */
static int stack16(uint32_t id, uint16_t *out)
{
	if (id == BT_STACK_LOST)
		*out = 0xffff;
	else if (id < 0xffff)
		*out = (uint16_t)id;
	else
		return 0;
	return 1;
}

/* Bytes after the two 16-bit stack ids in the narrow form of a stack event
 * (what follows kstack and ustack in the ABI, without the reserved word). */
static uint32_t stack_tail(uint32_t type)
{
	return type == BT_EV_OFFCPU ? 8u : type == BT_EV_CPU_SAMPLE ? 0u : 4u;
}

/* A form's header flags after prev's event: the next-event form, else a
 * full header, with the tgid of a thread that is not its process's leader. */
static inline uint32_t header_flags(const struct bt_compact_prev *prev, const struct bt_event_hdr *ev)
{
	return is_next(prev, ev) ? F_NEXT : ev->tgid != ev->tid ? F_TGID : 0;
}

static inline uint32_t header_size(uint32_t flags)
{
	return flags & F_NEXT ? HDR_NEXT : HDR + (flags & F_TGID ? 4u : 0u);
}

/* Write the header of an event's form at o and make it the one the next
 * follows: its fields given one by one (a pair record's halves have no
 * ABI event of their own), or ev's (put_header). */
static inline void put_header_at(uint8_t *o, uint64_t ts, uint32_t seq, uint32_t tid, uint32_t tgid, uint32_t type,
				 uint32_t flags, struct bt_compact_prev *prev)
{
	if (flags & F_NEXT) {
		uint32_t w = (uint32_t)(ts - prev->ts) << 8 | type | flags;
		memcpy(o, &w, 4);
	} else {
		struct chdr h = { .tf_ts = (ts & TS_MASK) << 8 | type | flags, .seq = seq, .tid = tid };
		memcpy(o, &h, sizeof(h));
		if (flags & F_TGID)
			memcpy(o + HDR, &tgid, 4);
	}
	if (prev)
		*prev = (struct bt_compact_prev){ ts, seq, tid, tgid, 1 };
}

static inline void put_header(uint8_t *o, const struct bt_event_hdr *ev, uint32_t flags, struct bt_compact_prev *prev)
{
	put_header_at(o, ev->ts_ns, ev->seq, ev->tid, ev->tgid, ev->type, flags, prev);
}

/* A system call's narrow form (s32 id, and for an exit s32 ret); 0 if its
 * values do not fit it. */
static inline uint32_t sys_form(const struct bt_ev_syscall *s, struct bt_compact_prev *prev, uint8_t *o)
{
	int exit = s->h.type == BT_EV_SYS_EXIT;

	if (!fits32(s->id) || (exit ? !fits32(s->ret) : s->ret != 0))
		return 0;
	uint32_t flags = header_flags(prev, &s->h), n = header_size(flags);
	int32_t v[2] = { (int32_t)s->id, (int32_t)s->ret };

	memcpy(o + n, v, exit ? 8 : 4);
	put_header(o, &s->h, flags, prev);
	return n + (exit ? 8 : 4);
}

uint32_t bt_compact_sys_put(uint8_t *at, const struct bt_ev_syscall *s, struct bt_compact_prev *prev)
{
	if (s->h.type != BT_EV_SYS_ENTER && s->h.type != BT_EV_SYS_EXIT)
		return 0;
	return sys_form(s, prev, at); /* whole words: no padding */
}

/* One half of a pair record in its narrow form (sys_form() on the fields,
 * without building the ABI event first): nv value words after the header. */
static inline uint32_t pair_half(uint8_t *o, struct bt_compact_prev *prev, uint64_t ts, uint32_t seq,
				 const struct bt_event_hdr *h, uint32_t type, const int32_t *v, uint32_t nv)
{
	uint32_t flags = is_next_at(prev, ts, seq, h->tid, h->tgid) ? F_NEXT : h->tgid != h->tid ? F_TGID : 0;
	uint32_t n = header_size(flags);

	memcpy(o + n, v, 4 * nv);
	put_header_at(o, ts, seq, h->tid, h->tgid, type, flags, prev);
	return n + 4 * nv;
}

uint32_t bt_compact_sys_pair_put(uint8_t *at, const struct bt_raw_sys_pair *p, struct bt_compact_prev *prev)
{
	/* Both narrow forms or neither: sys_form() fails only on these. */
	if (!fits32(p->enter_id) || !fits32(p->id) || !fits32(p->ret))
		return 0;
	const int32_t in = (int32_t)p->enter_id, out[2] = { (int32_t)p->id, (int32_t)p->ret };
	uint32_t n = pair_half(at, prev, p->enter_ts, p->enter_seq, &p->h, BT_EV_SYS_ENTER, &in, 1);

	return n + pair_half(at + n, prev, p->h.ts_ns, p->h.seq, &p->h, BT_EV_SYS_EXIT, out, 2);
}

uint32_t bt_compact_encode(const struct bt_event_hdr *ev, uint32_t len, struct bt_compact_prev *prev, void *out)
{
	uint8_t *o = out;
	uint32_t type = ev->type, flags, n, min;
	if (len < sizeof(*ev) || !bt_event_is_kernel(type) || len < (min = bt_event_min_size(type)))
		return 0;
	if ((type == BT_EV_SYS_ENTER || type == BT_EV_SYS_EXIT) && len == sizeof(struct bt_ev_syscall) &&
	    (n = sys_form((const struct bt_ev_syscall *)ev, prev, o)))
		return n;
	flags = header_flags(prev, ev);
	n = header_size(flags);
	uint8_t *p = o + n;
	const uint8_t *payload = (const uint8_t *)(ev + 1);
	uint32_t plen = len - (uint32_t)sizeof(*ev);

	if (type == BT_EV_SCHED_SWITCH) {
		const struct bt_ev_sched_switch *s = (const void *)ev;
		if (len == sizeof(*s) && s->prev_state <= UINT16_MAX && s->prev_prio <= UINT8_MAX &&
		    s->next_prio <= UINT8_MAX) {
			uint16_t st = (uint16_t)s->prev_state;
			uint8_t pp = (uint8_t)s->prev_prio, np = (uint8_t)s->next_prio;
			memcpy(p, &s->prev_tid, 4);
			memcpy(p + 4, &s->next_tid, 4);
			memcpy(p + 8, &st, 2);
			p[10] = pp;
			p[11] = np;
			n += 12;
			goto done;
		}
	} else if (is_stack_event(type)) {
		/* All stack events start with u32 kstack, u32 ustack; the waker's
		 * and the probe stack's last word is reserved (0). */
		const struct bt_ev_sample *s = (const void *)ev;
		uint32_t tail = stack_tail(type), resv = 0;
		uint16_t k, u;
		if (type == BT_EV_WAKER || type == BT_EV_PROBE_STACK)
			memcpy(&resv, (const uint8_t *)ev + len - 4, 4);
		if (len == min && !resv && stack16(s->kstack, &k) && stack16(s->ustack, &u)) {
			memcpy(p, &k, 2);
			memcpy(p + 2, &u, 2);
			memcpy(p + 4, s + 1, tail);
			n += 4 + tail;
			goto done;
		}
	} else if (type != BT_EV_SYS_ENTER && type != BT_EV_SYS_EXIT && plen == min - sizeof(*ev)) {
		/* no narrow form: the ABI payload as is, sized by its type */
		if (n + plen > BT_COMPACT_MAX)
			return 0;
		memcpy(p, payload, plen);
		n += plen;
		goto done;
	}
	/* WIDE: the ABI payload after its length (a narrow form's values did
	 * not fit, or the event is longer than its type: arguments) */
	flags |= F_WIDE;
	if (n + 4 + plen > BT_COMPACT_MAX)
		return 0;
	memcpy(p, &plen, 4);
	memcpy(p + 4, payload, plen);
	n += 4 + plen;
done:
	put_header(o, ev, flags, prev);
	return n;
}

/* Payload bytes of a type's form without WIDE: its narrow form, or for a
 * type without one its ABI payload. */
static uint32_t fixed_payload(uint32_t type)
{
	if (type == BT_EV_SYS_ENTER)
		return 4;
	if (type == BT_EV_SYS_EXIT)
		return 8;
	if (type == BT_EV_SCHED_SWITCH)
		return 12;
	if (is_stack_event(type))
		return 4 + stack_tail(type);
	return bt_event_min_size(type) - (uint32_t)sizeof(struct bt_event_hdr);
}

/* Size of the stored form at in, from its own header (forms carry no
 * length: type and flags give it, WIDE forms hold their payload's), when
 * it fits in avail bytes; 0 if malformed. */
static uint32_t form_size(const uint8_t *in, uint32_t avail)
{
	uint32_t tf, n, plen;

	if (avail < HDR_NEXT)
		return 0;
	tf = in[0];
	if (!bt_event_is_kernel(tf & TYPE_MASK) || (tf & F_NEXT && tf & F_TGID))
		return 0;
	n = tf & F_NEXT ? HDR_NEXT : HDR + (tf & F_TGID ? 4u : 0u);
	if (tf & F_WIDE) {
		if (avail < n + 4)
			return 0;
		memcpy(&plen, in + n, 4);
		if (plen > BT_COMPACT_MAX)
			return 0;
		n += 4 + plen;
	} else {
		n += fixed_payload(tf & TYPE_MASK);
	}
	return n <= avail && n <= BT_COMPACT_MAX ? n : 0;
}

/* The time nearest ref with these low 56 bits (events written while a dump
 * runs are a little newer than its reference time). */
static uint64_t full_ts(uint64_t ts56, uint64_t ref)
{
	uint64_t ts = (ref & ~TS_MASK) | ts56;
	if (ts > ref + (1ull << (TS_BITS - 1)) && ts >= (1ull << TS_BITS))
		ts -= 1ull << TS_BITS; /* written before ref's 2^56 ns epoch began */
	else if (ts + (1ull << (TS_BITS - 1)) < ref)
		ts += 1ull << TS_BITS; /* just after the next epoch began */
	return ts;
}

/* The header of the stored form at in (len bytes, its whole size) into
 * ev's time, seq, thread and type, prev advanced to it; the header's size,
 * 0 if malformed (a next-event form needs a valid prev). */
static uint32_t read_header(const uint8_t *in, uint32_t len, uint64_t ref_ts, struct bt_compact_prev *prev,
			    struct bt_event_hdr *ev)
{
	uint32_t tf, n;

	if (form_size(in, len) != len) /* also a known kernel type */
		return 0;
	tf = in[0];
	if (tf & F_NEXT) {
		uint32_t w;

		if (!prev->valid)
			return 0;
		memcpy(&w, in, 4);
		ev->ts_ns = prev->ts + (w >> 8);
		ev->seq = prev->seq + 1;
		ev->tid = prev->tid;
		ev->tgid = prev->tgid;
		n = HDR_NEXT;
	} else {
		struct chdr h;

		memcpy(&h, in, sizeof(h));
		ev->ts_ns = full_ts(h.tf_ts >> 8, ref_ts);
		ev->seq = h.seq;
		ev->tid = h.tid;
		ev->tgid = h.tid;
		n = HDR;
		if (tf & F_TGID) {
			memcpy(&ev->tgid, in + n, 4);
			n += 4;
		}
	}
	ev->type = (uint16_t)(tf & TYPE_MASK);
	*prev = (struct bt_compact_prev){ ev->ts_ns, ev->seq, ev->tid, ev->tgid, 1 };
	return n;
}

/* The payload after a header of n bytes (read_header) into the ABI event. */
static uint32_t decode_payload(const uint8_t *i, uint32_t len, uint32_t n, void *out)
{
	struct bt_event_hdr *ev = out;
	uint32_t tf = i[0], type = ev->type;
	if (tf & F_WIDE)
		n += 4; /* its length: form_size() checked it */
	const uint8_t *p = i + n;
	uint32_t rest = len - n, need = bt_event_min_size(type);
	if (!(tf & F_WIDE) && (type == BT_EV_SYS_ENTER || type == BT_EV_SYS_EXIT)) {
		struct bt_ev_syscall *s = out;
		int32_t id, ret = 0;
		if (rest != (type == BT_EV_SYS_EXIT ? 8u : 4u))
			return 0;
		memcpy(&id, p, 4);
		if (type == BT_EV_SYS_EXIT)
			memcpy(&ret, p + 4, 4);
		s->id = id;
		s->ret = ret;
		return sizeof(*s);
	}
	if (!(tf & F_WIDE) && type == BT_EV_SCHED_SWITCH) {
		struct bt_ev_sched_switch *s = out;
		uint16_t st;
		if (rest != 12)
			return 0;
		memcpy(&s->prev_tid, p, 4);
		memcpy(&s->next_tid, p + 4, 4);
		memcpy(&st, p + 8, 2);
		s->prev_state = st;
		s->prev_prio = p[10];
		s->next_prio = p[11];
		return sizeof(*s);
	}
	if (!(tf & F_WIDE) && is_stack_event(type)) {
		struct bt_ev_sample *s = out;
		uint16_t k, u;
		if (rest != 4 + stack_tail(type))
			return 0;
		memcpy(&k, p, 2);
		memcpy(&u, p + 2, 2);
		s->kstack = k == 0xffff ? BT_STACK_LOST : k;
		s->ustack = u == 0xffff ? BT_STACK_LOST : u;
		memcpy(s + 1, p + 4, stack_tail(type));
		return need;
	}
	/* the ABI payload as stored */
	if (sizeof(*ev) + rest < need || sizeof(*ev) + rest > BT_EVENT_MAX)
		return 0;
	memcpy((uint8_t *)out + sizeof(*ev), p, rest);
	return (uint32_t)sizeof(*ev) + rest;
}

/* Header and payload into out (BT_EVENT_MAX bytes); the ABI length, 0 if
 * malformed, and then prev invalid: the forms after it cannot be placed. */
static uint32_t decode_form(const uint8_t *in, uint32_t len, uint64_t ref_ts, struct bt_compact_prev *prev, void *out)
{
	uint32_t n = read_header(in, len, ref_ts, prev, out);

	if (n)
		n = decode_payload(in, len, n, out);
	if (!n)
		prev->valid = 0;
	return n;
}

int bt_compact_peek(const void *in, uint32_t len, uint64_t ref_ts, struct bt_compact_prev *prev, uint64_t *ts,
		    uint32_t *seq, uint32_t *type)
{
	uint8_t ev[BT_EVENT_MAX]; /* the payload is checked as decode checks it */
	const struct bt_event_hdr *h = (const struct bt_event_hdr *)ev;

	if (!decode_form(in, len, ref_ts, prev, ev))
		return 0;
	*ts = h->ts_ns;
	*seq = h->seq;
	*type = h->type;
	return 1;
}

uint32_t bt_compact_decode(const void *in, uint32_t len, uint32_t cpu, uint64_t ref_ts, struct bt_compact_prev *prev,
			   void *out)
{
	memset(out, 0, BT_EVENT_MAX);
	((struct bt_event_hdr *)out)->cpu = (uint16_t)cpu;
	return decode_form(in, len, ref_ts, prev, out);
}

uint32_t bt_compact_batch_put(uint8_t *at, const struct bt_event_hdr *ev, uint32_t len, struct bt_compact_prev *prev)
{
	uint32_t n = bt_compact_encode(ev, len, prev, at), r = (n + 3) & ~3u;

	if (r != n) /* forms are whole words today */
		memset(at + n, 0, r - n);
	return r;
}

int bt_compact_batch_next(const uint8_t *ent, uint32_t elen, uint32_t *off, const uint8_t **rec, uint32_t *rlen)
{
	uint32_t n;

	if (*off >= elen)
		return 0;
	n = form_size(ent + *off, elen - *off);
	if (!n || ((n + 3) & ~3u) > elen - *off)
		return -1;
	*rec = ent + *off;
	*rlen = n;
	*off += (n + 3) & ~3u;
	return 1;
}

struct span {
	uint64_t ref, oldest, newest;
};

static int span_cb(const struct bt_block_view *v, void *arg)
{
	struct span *sp = arg;
	uint32_t off = 0, len;
	const uint8_t *ent;

	while ((ent = bt_block_next(v, &off, &len))) {
		uint32_t roff = 0, rlen, seq, type;
		struct bt_compact_prev prev = { 0 };
		const uint8_t *rec;
		uint64_t ts;

		while (bt_compact_batch_next(ent, len, &roff, &rec, &rlen) == 1) {
			if (!bt_compact_peek(rec, rlen, sp->ref, &prev, &ts, &seq, &type) || !ts || ts > sp->ref)
				continue;
			if (ts < sp->oldest)
				sp->oldest = ts;
			if (ts > sp->newest)
				sp->newest = ts;
		}
	}
	return 0;
}

void bt_compact_capture_span(const struct bt_capture *c, uint64_t ref_ts, uint64_t *oldest, uint64_t *newest)
{
	struct span sp = { ref_ts, UINT64_MAX, 0 };

	bt_capture_read(c, span_cb, &sp);
	if (oldest)
		*oldest = sp.oldest == UINT64_MAX ? 0 : sp.oldest;
	if (newest)
		*newest = sp.newest;
}
