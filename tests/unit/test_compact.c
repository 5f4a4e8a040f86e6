// SPDX-License-Identifier: MIT
/* Unit tests of the stored form of kernel events (user/dump/compact.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "compact.h"
#include "event_names.h"
#include "harness.h"

static uint32_t roundtrip(const void *ev, uint32_t len, uint32_t cpu, uint64_t ref, uint8_t *dec)
{
	uint8_t st[BT_COMPACT_MAX];
	struct bt_compact_prev prev = { 0 };
	uint32_t n = bt_compact_encode(ev, len, NULL, st);
	if (!n)
		return 0;
	uint32_t m = bt_compact_decode(st, n, cpu, ref, &prev, dec);
	return m == len && memcmp(ev, dec, len) == 0 ? n : 0;
}

static void test_narrow_sizes(void)
{
	uint8_t dec[BT_EVENT_MAX];
	struct bt_ev_syscall sc = { .h = { .ts_ns = 123456789, .seq = 7, .tid = 42, .tgid = 42, .cpu = 1,
					   .type = BT_EV_SYS_ENTER }, .id = 39 };
	CHECK(roundtrip(&sc, sizeof(sc), 1, 200000000, dec) == 20, "sys_enter stored in 20 bytes");
	sc.h.type = BT_EV_SYS_EXIT;
	sc.ret = -11;
	CHECK(roundtrip(&sc, sizeof(sc), 1, 200000000, dec) == 24, "sys_exit stored in 24 bytes");
	sc.h.tgid = 40; /* a thread: tgid stored */
	CHECK(roundtrip(&sc, sizeof(sc), 1, 200000000, dec) == 28, "a thread's sys_exit: 28 bytes");
	sc.ret = 0x7f0012345678ll; /* a pointer: wide */
	CHECK(roundtrip(&sc, sizeof(sc), 1, 200000000, dec) == 16 + 4 + 4 + 16, "wide sys_exit keeps 64 bits (and its length)");
	struct bt_ev_sched_switch sw = { .h = { .ts_ns = 5, .seq = 1, .tid = 9, .tgid = 9, .cpu = 0,
						.type = BT_EV_SCHED_SWITCH },
					 .prev_tid = 9, .next_tid = 0, .prev_state = 0x402, .prev_prio = 120, .next_prio = 139 };
	CHECK(roundtrip(&sw, sizeof(sw), 0, 10, dec) == 28, "sched_switch stored in 28 bytes");
	sw.prev_state = 0x10000;
	CHECK(roundtrip(&sw, sizeof(sw), 0, 10, dec) == 16 + 4 + 16, "odd prev_state: wide");
	struct bt_ev_uprobe up = { .h = { .ts_ns = 77, .seq = 3, .tid = 5, .tgid = 4, .type = BT_EV_UPROBE_ENTRY },
				   .probe_id = 2, .nargs = 6, .args = { 1, 2, 3, 4, 5, 6 } };
	CHECK(roundtrip(&up, sizeof(up), 0, 100, dec) == 16 + 4 + sizeof(up) - 24, "other types: ABI payload");
	struct bt_ev_sample smp = { .h = { .ts_ns = 9, .seq = 4, .tid = 6, .tgid = 6, .type = BT_EV_CPU_SAMPLE },
				    .kstack = 3, .ustack = BT_STACK_LOST };
	CHECK(roundtrip(&smp, sizeof(smp), 0, 100, dec) == 20, "cpu_sample stored in 20 bytes (a lost stack too)");
	smp.h.tgid = 5;
	CHECK(roundtrip(&smp, sizeof(smp), 0, 100, dec) == 24, "a thread's cpu_sample: 24 bytes");
	smp.ustack = 0xffff; /* a real id that looks like the lost marker */
	CHECK(roundtrip(&smp, sizeof(smp), 0, 100, dec) == 16 + 4 + 4 + 8, "stack id 0xffff: wide");
	struct bt_ev_offcpu off = { .h = { .ts_ns = 9, .seq = 4, .tid = 6, .tgid = 6, .type = BT_EV_OFFCPU },
				    .kstack = 0xfffe, .ustack = 0, .offcpu_ns = 123456789012ull };
	CHECK(roundtrip(&off, sizeof(off), 0, 100, dec) == 28, "offcpu stored in 28 bytes");
	struct bt_ev_waker wk = { .h = { .ts_ns = 9, .seq = 4, .tid = 6, .tgid = 6, .type = BT_EV_WAKER },
				  .kstack = 1, .ustack = 2, .wakee = 77 };
	CHECK(roundtrip(&wk, sizeof(wk), 0, 100, dec) == 24, "waker stored in 24 bytes");
	wk.reserved = 1;
	CHECK(roundtrip(&wk, sizeof(wk), 0, 100, dec) == 16 + 4 + 16, "a non-zero reserved word is kept: wide");
}

static void test_every_type_roundtrips(void)
{
	uint8_t ev[BT_EVENT_MAX], dec[BT_EVENT_MAX];
	srand(7);
	for (int i = 0; i < 20000; i++) {
		static const uint32_t nkinds = BT_EV_KERNEL_MAX - 1 + (BT_EV_MAX - BT_EV_CPU_SAMPLE);
		uint32_t type = 1 + (uint32_t)i % nkinds;
		if (type >= BT_EV_KERNEL_MAX)
			type += BT_EV_CPU_SAMPLE - BT_EV_KERNEL_MAX; /* the stack events */
		uint32_t len = bt_event_min_size(type);
		for (uint32_t k = 0; k < len; k++)
			ev[k] = (uint8_t)rand();
		struct bt_event_hdr *h = (struct bt_event_hdr *)ev;
		if (type >= BT_EV_CPU_SAMPLE && i % 4) {
			/* table ids as the drain writes them: small, sometimes lost, 0 reserved */
			struct bt_ev_sample *s = (struct bt_ev_sample *)ev;
			s->kstack = i % 7 ? s->kstack % 70000 : BT_STACK_LOST;
			s->ustack = i % 5 ? s->ustack % 70000 : BT_STACK_LOST;
			if (type == BT_EV_WAKER || type == BT_EV_PROBE_STACK)
				memset(ev + len - 4, 0, 4);
		}
		h->type = (uint16_t)type;
		h->ts_ns &= (1ull << 50) - 1;
		h->cpu = (uint16_t)(i % 4);
		if (i % 2)
			h->tgid = h->tid;
		if (type == BT_EV_SYS_ENTER && i % 3)
			((struct bt_ev_syscall *)ev)->ret = 0;
		if (type == BT_EV_UPROBE_ENTRY || type == BT_EV_UPROBE_RETURN || type == BT_EV_USDT)
			((struct bt_ev_uprobe *)ev)->nargs %= BT_MAX_UARGS + 1;
		if (!roundtrip(ev, len, h->cpu, h->ts_ns + 1000, dec)) {
			CHECK(0, "type %u (%s) event %d does not round-trip", type, bt_event_name(type), i);
			return;
		}
	}
}

/* Batches of random events where about half follow the one before (same
 * thread, next seq, a little later): every one back, in order. The same
 * batch put by the drain's system-call path (bt_compact_sys_put, the
 * general one where it has no narrow form) is the same bytes. */
static void test_chains_roundtrip(void)
{
	uint8_t batch[BT_BATCH_MAX + BT_COMPACT_MAX], batch2[sizeof(batch)], dec[BT_EVENT_MAX];
	struct bt_ev_syscall evs[64];
	uint64_t fast = 0, slow = 0;
	srand(11);
	for (int round = 0; round < 2000; round++) {
		struct bt_compact_prev prev = { 0 }, prev2 = { 0 };
		uint32_t blen = 0, n = 0, off = 0, rlen, got = 0;
		const uint8_t *rec;
		uint64_t ts = 1ull << 45;
		uint32_t seq = (uint32_t)rand(), tid = 100, tgid = 100;

		while (n < 64 && blen + BT_COMPACT_MAX <= sizeof(batch)) {
			struct bt_ev_syscall *e = &evs[n];
			int r = rand();
			ts += r % 3 ? (uint64_t)(r % 5000) : (uint64_t)r << 4; /* now and then >= 2^24 */
			seq += r % 7 ? 1 : 1 + (uint32_t)(r % 3);                /* gaps */
			if (r % 11 == 0)
				tid = 100 + (uint32_t)(r % 4), tgid = r % 2 ? tid : 100;
			*e = (struct bt_ev_syscall){ .h = { .ts_ns = ts - (r % 13 == 0 ? 3 : 0), .seq = seq, .tid = tid,
							    .tgid = tgid, .type = r % 2 ? BT_EV_SYS_EXIT : BT_EV_SYS_ENTER },
						     .id = r % 400, .ret = r % 2 ? (r % 5 ? -(r % 30) : (int64_t)r << 20) : 0 };
			uint32_t k = bt_compact_batch_put(batch + blen, &e->h, sizeof(*e), &prev);
			REQUIRE(k, "encode");
			uint32_t k2 = bt_compact_sys_put(batch2 + blen, e, &prev2);
			if (k2)
				fast++;
			else
				slow++, k2 = bt_compact_batch_put(batch2 + blen, &e->h, sizeof(*e), &prev2);
			if (k2 != k || memcmp(batch2 + blen, batch + blen, k) != 0) {
				CHECK(0, "round %d: event %u put by the system-call path differs", round, n);
				return;
			}
			blen += k;
			n++;
		}
		prev = (struct bt_compact_prev){ 0 };
		while (bt_compact_batch_next(batch, blen, &off, &rec, &rlen) == 1) {
			if (bt_compact_decode(rec, rlen, 0, ts + 10, &prev, dec) != sizeof(evs[0]) ||
			    memcmp(dec, &evs[got], sizeof(evs[0])) != 0) {
				CHECK(0, "round %d: event %u of %u not back as written", round, got, n);
				return;
			}
			got++;
		}
		if (got != n) {
			CHECK(0, "round %d: %u of %u events back", round, got, n);
			return;
		}
	}
	CHECK(1, "2000 batches of chained events round-trip");
	CHECK(fast > 5 * slow && slow > 0, "system-call path: %llu narrow forms, %llu left to the general one",
	      (unsigned long long)fast, (unsigned long long)slow);
}

/* A pair record put by the drain's pair path (bt_compact_sys_pair_put) is
 * the bytes of its enter then its exit put one at a time; a pair with a
 * value too wide for the narrow forms writes nothing and leaves prev. */
static void test_pairs_same_bytes(void)
{
	uint8_t a[2 * BT_COMPACT_MAX], b[2 * BT_COMPACT_MAX];
	uint64_t ts = 1ull << 40, both = 0, neither = 0;
	uint32_t seq = UINT32_MAX - 500, tid = 7;
	struct bt_compact_prev prev = { 0 }, ref = { 0 };
	srand(12);
	for (int i = 0; i < 20000; i++) {
		int r = rand();
		struct bt_raw_sys_pair p = { 0 };
		if (r % 17 == 0)
			tid = 7 + (uint32_t)(r % 3);
		seq += r % 9 ? 1 : 3;
		p.enter_seq = seq;
		p.enter_ts = ts += (uint64_t)(r % 700) + (r % 101 == 0 ? 1ull << 30 : 0);
		p.enter_id = r % 53 == 0 ? 1ll << 33 : r % 400;
		p.h = (struct bt_event_hdr){ .ts_ns = ts += (uint64_t)(r % 300), .seq = seq += r % 23 ? 1 : 2, .tid = tid,
					     .tgid = r % 5 ? tid : 7, .cpu = 1, .type = BT_RAW_SYS_PAIR };
		p.id = p.enter_id;
		p.ret = r % 47 == 0 ? -(1ll << 40) : r % 2 ? -(r % 30) : r % 1000;
		struct bt_ev_syscall in = { .h = p.h, .id = p.enter_id }, out = { .h = p.h, .id = p.id, .ret = p.ret };
		in.h.type = BT_EV_SYS_ENTER, in.h.ts_ns = p.enter_ts, in.h.seq = p.enter_seq;
		out.h.type = BT_EV_SYS_EXIT;
		struct bt_compact_prev before = prev;
		uint32_t n = bt_compact_sys_pair_put(a, &p, &prev);
		uint32_t k = bt_compact_batch_put(b, &in.h, sizeof(in), &ref);
		k += bt_compact_batch_put(b + k, &out.h, sizeof(out), &ref);
		if (!n) {
			if (memcmp(&before, &prev, sizeof(prev))) {
				CHECK(0, "pair %d: no narrow forms, yet prev moved", i);
				return;
			}
			prev = ref; /* the drain puts them the general way */
			neither++;
			continue;
		}
		if (n != k || memcmp(a, b, n) || memcmp(&prev, &ref, sizeof(prev))) {
			CHECK(0, "pair %d: %u bytes by the pair path, %u one at a time", i, n, k);
			return;
		}
		both++;
	}
	CHECK(both > 10 * neither && neither > 0, "%llu pairs in narrow forms, %llu left to the general path",
	      (unsigned long long)both, (unsigned long long)neither);
}

static void test_time_epochs(void)
{
	uint8_t st[BT_COMPACT_MAX], dec[BT_EVENT_MAX];
	const uint64_t E = 1ull << 56;
	struct bt_compact_prev prev = { 0 };
	struct bt_ev_irq irq = { .h = { .ts_ns = 3 * E - 10, .seq = 1, .tid = 0, .tgid = 0, .type = BT_EV_IRQ_ENTRY } };
	uint32_t n = bt_compact_encode(&irq.h, sizeof(irq), NULL, st);
	REQUIRE(n, "encode");
	/* the dump started just after the next 2^56 ns epoch began */
	CHECK(bt_compact_decode(st, n, 0, 3 * E + 5, &prev, dec) && ((struct bt_event_hdr *)dec)->ts_ns == 3 * E - 10,
	      "event from the previous epoch");
	/* the event was written while the dump ran (newer than its reference) */
	irq.h.ts_ns = 3 * E + 10;
	n = bt_compact_encode(&irq.h, sizeof(irq), NULL, st);
	CHECK(bt_compact_decode(st, n, 0, 3 * E - 5, &prev, dec) && ((struct bt_event_hdr *)dec)->ts_ns == 3 * E + 10,
	      "event a little newer than the reference, across an epoch");
	uint64_t ts;
	uint32_t seq, type;
	CHECK(bt_compact_peek(st, n, 3 * E - 5, &prev, &ts, &seq, &type) && ts == 3 * E + 10 && seq == 1 &&
		      type == BT_EV_IRQ_ENTRY,
	      "peek");
}

static void test_malformed(void)
{
	uint8_t st[BT_COMPACT_MAX], dec[BT_EVENT_MAX];
	struct bt_compact_prev prev = { 0 };
	struct bt_ev_syscall sc = { .h = { .ts_ns = 1, .tid = 1, .tgid = 1, .type = BT_EV_SYS_EXIT }, .id = 1, .ret = 2 };
	uint32_t n = bt_compact_encode(&sc.h, sizeof(sc), NULL, st);
	REQUIRE(n == 24, "encode");
	for (uint32_t k = 0; k < n; k++)
		CHECK(bt_compact_decode(st, k, 0, 10, &prev, dec) == 0, "truncated to %u bytes: refused", k);
	CHECK(bt_compact_decode(st, n + 4, 0, 10, &prev, dec) == 0, "trailing bytes after a narrow form: refused");
	st[0] = (uint8_t)((st[0] & ~0x1fu) | BT_EV_APP_INSTANT); /* not a kernel type */
	CHECK(bt_compact_decode(st, n, 0, 10, &prev, dec) == 0, "unknown type refused");
	sc.h.type = BT_EV_APP_INSTANT;
	CHECK(bt_compact_encode(&sc.h, sizeof(sc), NULL, st) == 0, "application types are not stored here");
	sc.h.type = BT_EV_SYS_EXIT;
	CHECK(bt_compact_encode(&sc.h, 20, NULL, st) == 0, "short ABI event refused");
}

static void test_batches(void)
{
	uint8_t batch[BT_BATCH_MAX + BT_COMPACT_MAX], dec[BT_EVENT_MAX];
	uint32_t blen = 0, n = 0;
	struct bt_compact_prev prev = { 0 };
	struct bt_ev_syscall sc = { .h = { .ts_ns = 1000, .tid = 7, .tgid = 7, .type = BT_EV_SYS_ENTER }, .id = 39 };
	/* fill a batch the way the drain does: one thread's calls */
	while (blen + 24 <= BT_BATCH_MAX) {
		sc.h.seq = 100 + n;
		sc.h.ts_ns = 1000 + 333 * n;
		sc.h.type = n % 2 ? BT_EV_SYS_EXIT : BT_EV_SYS_ENTER;
		sc.ret = n % 2 ? (int64_t)n : 0;
		uint32_t k = bt_compact_batch_put(batch + blen, &sc.h, sizeof(sc), &prev);
		REQUIRE(k, "encode");
		blen += k;
		n++;
	}
	uint32_t off = 0, rlen, got = 0;
	const uint8_t *rec;
	int r;
	prev = (struct bt_compact_prev){ 0 };
	while ((r = bt_compact_batch_next(batch, blen, &off, &rec, &rlen)) > 0) {
		struct bt_ev_syscall *d = (struct bt_ev_syscall *)dec;
		CHECK(bt_compact_decode(rec, rlen, 0, 1ull << 40, &prev, dec) == sizeof(*d) && d->h.seq == 100 + got &&
			      d->h.ts_ns == 1000 + 333 * got && d->h.tid == 7 && d->h.tgid == 7 &&
			      d->ret == (got % 2 ? (int64_t)got : 0),
		      "event %u of the batch", got);
		got++;
	}
	CHECK(r == 0 && got == n, "all %u events back (%u), clean end", n, got);
	/* the first in full (20), then next-event forms: 8 a sys_enter, 12 a sys_exit */
	CHECK(blen == 20 + n / 2 * 12 + (n - 1) / 2 * 8, "%u events in %u bytes: a pair in 20 after the first", n, blen);
	/* a form running past the entry is malformed, never followed */
	off = 0;
	CHECK(bt_compact_batch_next(batch, 16, &off, &rec, &rlen) == -1, "form cut short by the entry's end refused");
	off = 0;
	CHECK(bt_compact_batch_next(batch, 2, &off, &rec, &rlen) == -1, "truncated header refused");
	batch[0] = (uint8_t)((batch[0] & ~0x1fu) | BT_EV_APP_INSTANT); /* no size known */
	off = 0;
	CHECK(bt_compact_batch_next(batch, blen, &off, &rec, &rlen) == -1, "unknown type refused");
	/* a WIDE form's own length is checked against the entry */
	struct bt_ev_syscall w = { .h = { .ts_ns = 1, .tid = 7, .tgid = 7, .type = BT_EV_SYS_EXIT }, .id = 1,
				   .ret = 0x7f0012345678ll };
	uint32_t k = bt_compact_batch_put(batch, &w.h, sizeof(w), NULL);
	REQUIRE(k == 16 + 4 + 16, "wide encode: %u", k);
	uint32_t plen = 200;
	memcpy(batch + 16, &plen, 4);
	off = 0;
	CHECK(bt_compact_batch_next(batch, k, &off, &rec, &rlen) == -1, "WIDE length past the entry refused");
	plen = 0xffffffffu;
	memcpy(batch + 16, &plen, 4);
	off = 0;
	CHECK(bt_compact_batch_next(batch, k, &off, &rec, &rlen) == -1, "WIDE length overflowing refused");
	plen = 8; /* shorter than a sys_exit's payload: within the entry, refused by decode */
	memcpy(batch + 16, &plen, 4);
	off = 0;
	prev = (struct bt_compact_prev){ 0 };
	CHECK(bt_compact_batch_next(batch, k, &off, &rec, &rlen) == 1 && rlen == 28 &&
		      bt_compact_decode(rec, rlen, 0, 10, &prev, dec) == 0,
	      "WIDE payload shorter than its type's: refused");
}

/* An event longer than its type's ABI size (trailing words): WIDE, with
 * its length, and back whole. */
static void test_variable_length(void)
{
	uint8_t ev[BT_EVENT_MAX] = { 0 }, st[BT_COMPACT_MAX], dec[BT_EVENT_MAX];
	struct bt_ev_uprobe up = { .h = { .ts_ns = 77, .seq = 3, .tid = 5, .tgid = 5, .type = BT_EV_UPROBE_ENTRY },
				   .probe_id = 2, .nargs = 1, .args = { 9 } };
	uint32_t base = bt_event_min_size(BT_EV_UPROBE_ENTRY);

	memcpy(ev, &up, sizeof(up));
	for (uint32_t k = base; k < base + 16; k++)
		ev[k] = (uint8_t)(k * 7);
	for (uint32_t extra = 0; extra <= 16; extra += 8) {
		struct bt_compact_prev prev = { 0 };
		uint32_t len = base + extra, n = bt_compact_encode((struct bt_event_hdr *)ev, len, NULL, st);
		uint32_t want = 16 + (extra ? 4 : 0) + len - 24;
		CHECK(n == want, "uprobe of %u bytes stored in %u, expected %u", len, n, want);
		CHECK(bt_compact_decode(st, n, 0, 100, &prev, dec) == len && memcmp(dec, ev, len) == 0,
		      "uprobe of %u bytes round-trips", len);
	}
}

/* When an event is stored as the next after the one before it, and when in
 * full: the same thread, the next seq, 0 to 2^24 - 1 ns later. */
static void test_next_forms(void)
{
	struct bt_ev_syscall a = { .h = { .ts_ns = 5000, .seq = 9, .tid = 7, .tgid = 6, .type = BT_EV_SYS_ENTER },
				   .id = 1 };
	struct bt_ev_syscall b = a;
	uint8_t st[BT_COMPACT_MAX];
	struct bt_compact_prev prev;
	static const struct {
		const char *what;
		uint64_t dts;
		uint32_t dseq, tid, tgid, want;
	} cases[] = {
		{ "the next event of the thread: 8 bytes", 100, 1, 7, 6, 8 },
		{ "at the same time", 0, 1, 7, 6, 8 },
		{ "2^24 - 1 ns later", (1u << 24) - 1, 1, 7, 6, 8 },
		{ "2^24 ns later: in full", 1u << 24, 1, 7, 6, 24 },
		{ "a seq gap (a lost event): in full", 100, 2, 7, 6, 24 },
		{ "the same seq (a duplicate): in full", 100, 0, 7, 6, 24 },
		{ "another thread: in full", 100, 1, 8, 6, 24 },
		{ "another process with the same tid: in full", 100, 1, 7, 5, 24 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		prev = (struct bt_compact_prev){ 0 };
		REQUIRE(bt_compact_encode(&a.h, sizeof(a), &prev, st) == 24, "first in full");
		b.h.ts_ns = a.h.ts_ns + cases[i].dts;
		b.h.seq = a.h.seq + cases[i].dseq;
		b.h.tid = cases[i].tid;
		b.h.tgid = cases[i].tgid;
		CHECK(bt_compact_encode(&b.h, sizeof(b), &prev, st) == cases[i].want, "%s", cases[i].what);
	}
	prev = (struct bt_compact_prev){ 0 };
	bt_compact_encode(&a.h, sizeof(a), &prev, st);
	b.h.ts_ns = a.h.ts_ns - 1;
	b.h.seq = a.h.seq + 1;
	b.h.tid = 7;
	b.h.tgid = 6;
	CHECK(bt_compact_encode(&b.h, sizeof(b), &prev, st) == 24, "an earlier time (an interrupt's nested event): in full");
}

/* A next-event form is read only after the form it follows: first in an
 * entry, or after a malformed form, it is refused, never placed after the
 * wrong event. */
static void test_next_needs_its_prev(void)
{
	uint8_t batch[BT_BATCH_MAX + BT_COMPACT_MAX], dec[BT_EVENT_MAX];
	struct bt_compact_prev prev = { 0 };
	struct bt_ev_syscall sc = { .h = { .ts_ns = 1000, .seq = 1, .tid = 7, .tgid = 7, .type = BT_EV_SYS_EXIT },
				    .id = 1, .ret = 2 };
	uint32_t blen = 0, off = 0, rlen, got = 0;
	const uint8_t *rec;
	uint64_t ts;
	uint32_t seq, type;

	for (int i = 0; i < 3; i++, sc.h.seq++, sc.h.ts_ns += 10)
		blen += bt_compact_batch_put(batch + blen, &sc.h, sizeof(sc), &prev);
	REQUIRE(blen == 24 + 12 + 12, "a full form and two next ones (%u bytes)", blen);
	prev = (struct bt_compact_prev){ 0 };
	CHECK(bt_compact_decode(batch + 24, 12, 0, 5000, &prev, dec) == 0, "a next-event form first: refused");
	CHECK(bt_compact_peek(batch + 24, 12, 5000, &prev, &ts, &seq, &type) == 0, "peek refuses it too");
	/* the second form, a next one, with a WIDE length running past it:
	 * decode refuses it and the next form after it */
	uint32_t bad[2] = { 10u << 8 | BT_EV_SYS_EXIT | 0x60u, 200 }; /* NEXT | WIDE, a length */
	memcpy(batch + 24, bad, 8);
	prev = (struct bt_compact_prev){ 0 };
	CHECK(bt_compact_decode(batch, 24, 0, 5000, &prev, dec) == sizeof(sc), "the full form decodes");
	CHECK(bt_compact_decode(batch + 24, 12, 0, 5000, &prev, dec) == 0, "a malformed next form refused");
	CHECK(bt_compact_decode(batch + 36, 12, 0, 5000, &prev, dec) == 0, "the next form after it refused too");
	/* a next form whose header reads but whose payload does not: a WIDE
	 * sys_exit of 4 bytes (its type needs 16); the next form after it is
	 * refused too */
	uint32_t w[3] = { 10u << 8 | BT_EV_SYS_EXIT | 0x60u, 4, 0 }; /* NEXT | WIDE, length, payload */
	uint8_t good[12];
	memcpy(good, batch + 36, 12);
	memcpy(batch + 24, w, 12);
	prev = (struct bt_compact_prev){ 0 };
	CHECK(bt_compact_decode(batch, 24, 0, 5000, &prev, dec) == sizeof(sc), "the full form decodes");
	CHECK(bt_compact_decode(batch + 24, 12, 0, 5000, &prev, dec) == 0, "a next form with a short payload refused");
	CHECK(bt_compact_decode(good, 12, 0, 5000, &prev, dec) == 0, "a good next form after it refused too");
	/* peek checks the payload as decode does */
	prev = (struct bt_compact_prev){ 0 };
	CHECK(bt_compact_peek(batch, 24, 5000, &prev, &ts, &seq, &type) == 1, "peek: the full form");
	CHECK(bt_compact_peek(batch + 24, 12, 5000, &prev, &ts, &seq, &type) == 0, "peek: the short payload refused");
	CHECK(bt_compact_peek(good, 12, 5000, &prev, &ts, &seq, &type) == 0, "peek: the good next form after it too");
	/* peek follows the chain as decode does */
	blen = 0;
	prev = (struct bt_compact_prev){ 0 };
	sc.h.seq = 50;
	sc.h.ts_ns = 7000;
	for (int i = 0; i < 4; i++, sc.h.seq++, sc.h.ts_ns += 1000)
		blen += bt_compact_batch_put(batch + blen, &sc.h, sizeof(sc), &prev);
	prev = (struct bt_compact_prev){ 0 };
	while (bt_compact_batch_next(batch, blen, &off, &rec, &rlen) == 1) {
		CHECK(bt_compact_peek(rec, rlen, 1ull << 30, &prev, &ts, &seq, &type) && seq == 50 + got &&
			      ts == 7000 + 1000 * got && type == BT_EV_SYS_EXIT,
		      "peek %u: seq %u ts %llu", got, seq, (unsigned long long)ts);
		got++;
	}
	CHECK(got == 4, "4 peeked");
}

int main(void)
{
	RUN(test_batches);
	RUN(test_next_forms);
	RUN(test_next_needs_its_prev);
	RUN(test_narrow_sizes);
	RUN(test_variable_length);
	RUN(test_every_type_roundtrips);
	RUN(test_chains_roundtrip);
	RUN(test_pairs_same_bytes);
	RUN(test_time_epochs);
	RUN(test_malformed);
	return h_done();
}
