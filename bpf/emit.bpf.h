/* SPDX-License-Identifier: MIT */
/*
 * emit.bpf.h - how every program emits an event: the maps they share (the
 * per-CPU ring buffers and the per-CPU state: seq, drops, emitted) and the
 * fast path that takes a sequence number, reserves, and submits without a
 * wakeup. record.bpf.c owns the maps; uprobe.bpf.c declares the same ones so
 * its loader can reuse record's (bpf_map__reuse_fd): one header keeps the
 * definitions and the loss accounting identical.
 */
#ifndef BTRACE_EMIT_BPF_H
#define BTRACE_EMIT_BPF_H

/* Read-only, set by the loader: force a wakeup past this fill; 0: never. */
const volatile __u64 wakeup_bytes = 0;

#define BT_WAKEUP_CHECK_MASK 63 /* check the ring's fill every 64th event of a CPU */

/* Set by user space just before it detaches the programs (loader.c,
 * uprobes.c): links go one at a time, and an entry program gone while its
 * exit program still runs (irq, softirq, sys_enter/exit, a function's
 * uprobe and uretprobe) would leave halves of pairs in the final dump,
 * without a seq gap. From then on nothing is emitted and no seq taken. */
__u32 bt_stopped = 0;

/* The inner map prototype: the verifier checks every program against it, the
 * rings the loader puts in `rings` match it (only the size may differ). */
struct bt_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* possible CPUs, set by the loader */
	__type(key, __u32);
	__array(values, struct bt_ring);
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bt_cpu_state);
} cpu_state SEC(".maps");

/* ---- deferred sys_enter ------------------------------------------------------ *
 *
 * Most system calls return on the CPU they entered, with no other event of
 * that CPU in between. sys_enter therefore only fills its CPU's slot
 * (bt_cpu_state.sys, seq and time taken then); sys_exit, finding its own
 * thread's enter there, takes it and emits both in one ring record
 * (BT_RAW_SYS_PAIR): one reservation and one drain record a call instead of
 * two. Every other event of the CPU first puts a held enter into the ring
 * (bt_sys_flush, from bt_begin_at), so the ring keeps the CPU's order; so
 * does sched_switch, recorded or not, when the thread blocks in its call
 * (loader.c attaches it whenever system calls are recorded). Uprobe
 * programs do not (uprobe.bpf.c: BT_EMIT_NO_SYS_FLUSH): they may be
 * preempted, and their thread is not inside a call. What is held when a
 * dump is taken or recording stops, the drain reads from the map and stores
 * itself, after what its CPU emitted before (sys_pairs.h).
 *
 * Batched pairs: a pair's reservation and submit were a quarter of a
 * traced call's cost, so sys_exit puts the pair in its CPU's batch
 * (struct bt_sys_batch) and the ring gets the batch as one record when it
 * is full, and before anything else the CPU emits (bt_sys_flush: first the
 * batch, then a held enter, which is newer). Only sys_exit adds to a batch,
 * in task context; a program nesting in it (an interrupt) may flush the
 * batch, never add to it. For a dump and the last pass the drain runs
 * handle_sys_batch_flush on every CPU first. */

/* Per CPU, the forced wakeups (struct bt_wake_state). Apart from
 * bt_cpu_state, whose layout a restarting recorder adopts (handover), and
 * looked up only on the checking path. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bt_wake_state);
} wake_state SEC(".maps");

/* Submit flags for a record standing for n events, the last with seq seq:
 * the ring's fill is checked when one of their seqs is a multiple of 64 (a
 * pair's exit seq is odd whenever its enter's is even; with calls that
 * block, flushed enters take the even seqs: every kind of record must
 * check, over all its seqs, or the drain is never woken early). A forced
 * wakeup is an interrupt (irq_work, a VM exit under a hypervisor, ~1-2 us
 * of the traced thread's time): once per consumer position is enough, so
 * a ring the drain has not reached yet (a storm, a starved drain) does not
 * interrupt every 64th event until it does. A program nesting here may
 * wake once more: harmless. Counted for ctl status (uprobe.bpf.c's
 * programs keep a map of their own, not shown). */
static __always_inline __u64 bt_submit_flags(void *ring, __u32 seq, __u32 n)
{
	struct bt_wake_state *w;
	__u32 zero = 0;
	__u64 cons;

	if (!wakeup_bytes || (seq & BT_WAKEUP_CHECK_MASK) >= n ||
	    bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) < wakeup_bytes)
		return BPF_RB_NO_WAKEUP;
	cons = bpf_ringbuf_query(ring, BPF_RB_CONS_POS);
	w = bpf_map_lookup_elem(&wake_state, &zero);
	if (!w)
		return BPF_RB_FORCE_WAKEUP;
	if (w->cons == cons + 1) {
		w->held++;
		return BPF_RB_NO_WAKEUP;
	}
	w->cons = cons + 1; /* + 1: a ring never consumed is at 0, the map's initial value */
	w->forced++;
	return BPF_RB_FORCE_WAKEUP;
}

#ifndef BT_EMIT_NO_SYS_FLUSH
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bt_sys_batch);
} sys_batch SEC(".maps");

/* Pairs a batch holds before it goes into the ring; 0, no batching, until
 * the loader has seen handle_sys_batch_flush run: without it a dump could
 * not have the newest calls. */
__u32 sys_batch_max = 0;

/* n pairs of this CPU (the last with seq last_seq) into its ring as one
 * record, counted as emitted or dropped. */
static __always_inline void bt_sys_pairs_out(struct bt_cpu_state *st, const struct bt_raw_sys_pair *p, __u64 n,
					     __u32 last_seq)
{
	__u32 cpu = bpf_get_smp_processor_id();
	void *ring = bpf_map_lookup_elem(&rings, &cpu);

	if (!ring || bpf_ringbuf_output(ring, (void *)p, n * sizeof(*p), bt_submit_flags(ring, last_seq, 2 * n)))
		__sync_fetch_and_add(&st->drops[BT_GROUP_SYSCALLS], 2 * n);
	else
		__sync_fetch_and_add(&st->emitted[BT_GROUP_SYSCALLS], 2 * n);
}

/* Put this CPU's batched pairs, if any, into the ring as one record.
 * Taking them is an exchange, partner of the compare-and-swap that adds a
 * pair in handle_sys_exit: a program nesting between our test and our take
 * finds them gone, or takes them and we find none. A global function, not
 * inlined: its stack would add to every caller's, and sched_switch's with
 * the Python walk's must stay within 512 bytes for 6.1 (test_bpf_stack). */
__noinline int bt_sys_batch_flush(void)
{
	struct bt_sys_batch *b;
	struct bt_cpu_state *st;
	__u32 zero = 0;
	__u64 n, last;

	b = bpf_map_lookup_elem(&sys_batch, &zero);
	if (!b || !b->count)
		return 0;
	st = bpf_map_lookup_elem(&cpu_state, &zero);
	if (!st)
		return 0;
	n = __sync_lock_test_and_set(&b->count, 0);
	/* 1..BT_SYS_BATCH, bounded as the index of the last: 6.1's verifier
	 * learns nothing from n != 0. */
	last = n - 1;
	barrier_var(last);
	if (last >= BT_SYS_BATCH)
		return 0;
	bt_sys_pairs_out(st, b->pairs, last + 1, b->pairs[last].h.seq);
	return 0;
}

/* Put this CPU's batched pairs and its held sys_enter, if any, into the
 * ring, in that (their seq) order, the enter as the event it would have
 * been. Taking it is an exchange: a program nesting here (an interrupt)
 * may take it between our test and our take, never both. */
static __always_inline void bt_sys_flush(struct bt_cpu_state *st)
{
	struct bt_ev_syscall *e = NULL;
	__u32 cpu;
	void *ring;

	bt_sys_batch_flush();
	if (!st->sys.armed || !__sync_lock_test_and_set(&st->sys.armed, 0))
		return;
	cpu = bpf_get_smp_processor_id();
	ring = bpf_map_lookup_elem(&rings, &cpu);
	if (ring)
		e = bpf_ringbuf_reserve(ring, sizeof(*e), 0);
	if (!e) {
		/* Counted even if user space stored this enter for a dump from
		 * the slot already: drops may then exceed the seq gaps by one. */
		__sync_fetch_and_add(&st->drops[BT_GROUP_SYSCALLS], 1);
		return;
	}
	e->h.ts_ns = st->sys.ts_ns;
	e->h.seq = st->sys.seq;
	e->h.tid = st->sys.tid;
	e->h.tgid = st->sys.tgid;
	e->h.cpu = cpu;
	e->h.type = BT_EV_SYS_ENTER;
	e->id = st->sys.id;
	e->ret = 0;
	bpf_ringbuf_submit(e, bt_submit_flags(ring, e->h.seq, 1));
	__sync_fetch_and_add(&st->emitted[BT_GROUP_SYSCALLS], 1);
}

/* bt_sys_flush() for a program that emits nothing itself. */
static __always_inline void bt_sys_flush_cpu(void)
{
	struct bt_cpu_state *st;
	__u32 zero = 0;

	if (bt_stopped)
		return;
	st = bpf_map_lookup_elem(&cpu_state, &zero);
	if (st)
		bt_sys_flush(st);
}
#endif

/* ---- fast path ------------------------------------------------------------ */

/* Whether the calling program runs with interrupts disabled (see the top). */
#define BT_IRQS_ON 0
#define BT_IRQS_OFF 1

/* Take a sequence number and reserve `size` bytes in this CPU's ring; fill
 * the header, timestamp `ts` (0: read the clock now). NULL if the reservation
 * failed or the CPU has no ring (both counted), or the state map is
 * unreachable. *ringp: the ring, for bt_commit.
 *
 * Callers test the result for NULL exactly once and submit in that same
 * block, with nothing in between that tests it again: older verifiers
 * (6.1's; 6.18's knows better) do not know that a checked reservation is
 * non-NULL, follow a second `if (!e) return` as if it could be taken, and
 * reject the program ("Unreleased reference"). Work that needs no event
 * (uprobe.bpf.c's stamps) goes before the reservation, so the compiler has
 * no reason to test the pointer again. */
static __always_inline void *bt_begin_at(__u32 size, __u32 group, __u16 type, int irqs_off, __u64 ts,
					 struct bt_cpu_state **stp, void **ringp)
{
	struct bt_cpu_state *st;
	struct bt_event_hdr *h = NULL;
	__u32 zero = 0, cpu;
	__u64 seq, pid_tgid;
	void *ring;

	if (bt_stopped)
		return NULL;
	st = bpf_map_lookup_elem(&cpu_state, &zero);
	if (!st)
		return NULL;
#ifndef BT_EMIT_NO_SYS_FLUSH
	bt_sys_flush(st);
#endif
	if (irqs_off)
		seq = st->seq++;
	else
		seq = __sync_fetch_and_add(&st->seq, 1);
	cpu = bpf_get_smp_processor_id();
	ring = bpf_map_lookup_elem(&rings, &cpu);
	if (ring)
		h = bpf_ringbuf_reserve(ring, size, 0);
	if (!h) {
		__sync_fetch_and_add(&st->drops[group], 1);
		return NULL;
	}
	h->ts_ns = ts ? ts : bpf_ktime_get_boot_ns();
	h->seq = (__u32)seq;
	pid_tgid = bpf_get_current_pid_tgid();
	h->tid = (__u32)pid_tgid;
	h->tgid = pid_tgid >> 32;
	h->cpu = cpu;
	h->type = type;
	*stp = st;
	*ringp = ring;
	return h;
}

static __always_inline void *bt_begin(__u32 size, __u32 group, __u16 type, int irqs_off,
				      struct bt_cpu_state **stp, void **ringp)
{
	return bt_begin_at(size, group, type, irqs_off, 0, stp, ringp);
}

/* Submit ev with these ring flags, standing for n events of group. */
static __always_inline void bt_commit_flags(void *ev, struct bt_cpu_state *st, __u32 group, int irqs_off,
					    __u64 n, __u64 flags)
{
	bpf_ringbuf_submit(ev, flags);
	if (irqs_off)
		st->emitted[group] += n;
	else
		__sync_fetch_and_add(&st->emitted[group], n);
}

/* Submit ev, standing for n events of group, the last of which has ev's seq. */
static __always_inline void bt_commit_n(void *ev, struct bt_cpu_state *st, void *ring, __u32 group,
					int irqs_off, __u64 n)
{
	bt_commit_flags(ev, st, group, irqs_off, n, bt_submit_flags(ring, ((struct bt_event_hdr *)ev)->seq, n));
}

static __always_inline void bt_commit(void *ev, struct bt_cpu_state *st, void *ring, __u32 group,
				      int irqs_off)
{
	bt_commit_n(ev, st, ring, group, irqs_off, 1);
}

#endif
