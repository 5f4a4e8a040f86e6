// SPDX-License-Identifier: MIT
/*
 * drain.c - the drain threads: the BPF rings into the block buffer, the
 * task table, the stack table and the live window; flushes for dumps.
 * Opened and attached by loader.c; the design (draining, task events held
 * back) is loader.c's opening comment.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "events.h"
#include "trigger.h"
#include "btrace_buffer.h"
#include "tasks.h"
#include "loader.h"
#include "loader_int.h"
#include "kernel_features.h"
#include "compact.h"
#include "ringbuf.h"
#include "prog_misses.h"
#include "util.h"
#include "stack_table.h"
#include "stack_copies.h"
#include "py_codes.h"
#include "cold_tier.h"
#include "record.skel.h"

/* ---- stack reclamation: the kernel side (stack_table.h) ----------------------- */

/* The table freed these stacks: their next occurrence must send its frames. */
static void stacks_forget(void *ctx, const uint64_t *hashes, size_t n)
{
	struct bt_loader *l = ctx;
	int fd = bpf_map__fd(l->skel->maps.stack_seen);

	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &hashes[i]); /* -ENOENT: the LRU dropped it already */
}

/* The hashes of the blocks off-CPU being followed: their events come when
 * the task runs again, maybe long after the stack's last event. */
static long stacks_held(void *ctx, uint64_t **out)
{
	struct bt_loader *l = ctx;
	int fd = bpf_map__fd(l->skel->maps.offcpu_pending);
	uint32_t max = bpf_map__max_entries(l->skel->maps.offcpu_pending), key, next, *prev = NULL;
	uint64_t *h = malloc(2 * (size_t)max * sizeof(*h));
	struct bt_offcpu_pending v;
	long n = 0;

	if (!h)
		return -ENOMEM;
	/* Bounded: tasks come and go meanwhile, and a key deleted under the
	 * walk restarts it from the first. */
	for (uint32_t steps = 0; steps < 2 * max && bpf_map_get_next_key(fd, prev, &next) == 0; steps++) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v) || n + 2 > 2 * (long)max)
			continue;
		h[n++] = v.khash;
		h[n++] = v.uhash;
	}
	*out = h;
	return n;
}

/* ---- drain ------------------------------------------------------------------- */

static inline void add_to(_Atomic uint64_t *c, uint64_t n)
{
	/* Single writer: a relaxed load and store, no locked instruction. */
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

static inline void bump(_Atomic uint64_t *c)
{
	add_to(c, 1);
}

static int cmp_task_event(const void *a, const void *b)
{
	const struct bt_event_hdr *x = a, *y = b;

	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Apply the held-back task events older than `horizon` (all: UINT64_MAX) in
 * time order, keep the others. */
static void apply_task_events(struct bt_drain *d, uint64_t horizon)
{
	size_t i, k = 0;

	if (!d->npending)
		return;
	qsort(d->pending, d->npending, sizeof(*d->pending), cmp_task_event);
	for (i = 0; i < d->npending && d->pending[i].h.ts_ns < horizon; i++) {
		bt_tasks_apply(d->l->tasks, &d->pending[i].h, sizeof(d->pending[i]));
		if (d->l->stacks) /* after the pass: its stack definitions came first */
			bt_stack_table_task_event(d->l->stacks, &d->pending[i].h);
	}
	for (; i < d->npending; i++)
		d->pending[k++] = d->pending[i];
	d->npending = k;
}

static void task_event(struct bt_drain *d, const struct bt_event_hdr *h, uint32_t len)
{
	if (!d->pending || len != sizeof(*d->pending)) {
		bt_tasks_apply(d->l->tasks, h, len);
		if (d->l->stacks)
			bt_stack_table_task_event(d->l->stacks, h);
		return;
	}
	/* Full (a storm of forks in one pass): apply what is there, in order. */
	if (d->npending == BT_TASK_PENDING)
		apply_task_events(d, UINT64_MAX);
	memcpy(&d->pending[d->npending++], h, len);
}

/* Write the batch being filled into the buffer: one entry, which the batch
 * was sized to fit in the core's block (batch_start). */
static void flush_batch(struct bt_drain *d)
{
	uint32_t n = d->bcount;

	if (!n)
		return;
	if (bt_write(d->l->buf, d->bcore, d->batch, d->blen) == 0) {
		add_to(&d->events, n);
		/* Events not stored are not reported: their seqs make the gap. */
		bt_live_add(d->l->live, d->bcore, d->runs, d->nruns);
		/* Within the pass too: one pass over full rings can write more
		 * than the whole buffer, which the compressor must follow. */
		if (d->l->cold)
			bt_cold_nudge(d->l->cold, bt_buffer_blocks_used(d->l->buf), d->nblocks);
	} else
		add_to(&d->rejected, n);
	d->blen = d->bcount = d->nruns = 0;
}

/* A tail of a block smaller than this is left as padding: a batch there
 * would hold two or three events for an 8-byte entry header. */
#define TAIL_MIN 32u

/* Start a batch of CPU core's events: at most what the core's block still
 * takes, so the batch is one entry there and never split (a next-event
 * form needs the form before it in its entry). A batch that does not fit
 * would leave the tail as padding, half a batch a block on average (~12%
 * of the buffer with 4 KiB blocks and 1 KiB batches). The drain is its
 * cores' only writer. */
static void batch_start(struct bt_drain *d, uint32_t core)
{
	uint32_t room = bt_room(d->l->buf, core);

	d->bcore = core;
	d->bcap = room >= TAIL_MIN && room < d->batch_limit ? room : d->batch_limit;
	d->bprev = (struct bt_compact_prev){ 0 };
}

/* Events of programs that never flush their CPU's batch of system-call
 * pairs (uprobe.bpf.c: uprobes, USDT, their stacks): any number of them
 * may reach the ring before the batch does. Every other program flushes
 * it before its event. */
static inline uint32_t overtakes(uint32_t type)
{
	return bt_event_is_uprobe(type) || type == BT_EV_PROBE_STACK;
}

/* The form of h just put at the batch's end, rec bytes: its seq and time
 * for the live window (flush_batch). */
static inline void batch_took(struct bt_drain *d, const struct bt_event_hdr *h, uint32_t rec)
{
	d->blen += rec;
	d->bcount++;
	bt_live_run_take(d->runs, &d->nruns, h->seq, h->ts_ns, overtakes(h->type));
}

/* The event a BT_RAW_STACKS record stands for, its stacks as table ids;
 * its length, 0 if malformed. */
static uint32_t stack_event(struct bt_stack_table *t, const struct bt_raw_stacks *r, struct bt_ev_offcpu *out)
{
	struct bt_ev_sample *s = (struct bt_ev_sample *)out;

	memset(out, 0, sizeof(*out));
	out->h = r->h;
	out->h.type = r->ev_type;
	bt_stack_table_note(t, r->h.cpu, r->h.ts_ns); /* before the refs: what a free's epoch covers */
	s->kstack = bt_stack_table_ref(t, r->khash);
	s->ustack = bt_stack_table_ref(t, r->uhash);
	switch (r->ev_type) {
	case BT_EV_CPU_SAMPLE:
		return sizeof(struct bt_ev_sample);
	case BT_EV_OFFCPU:
		out->offcpu_ns = r->aux64;
		return sizeof(struct bt_ev_offcpu);
	case BT_EV_WAKER:
		((struct bt_ev_waker *)out)->wakee = r->aux32;
		return sizeof(struct bt_ev_waker);
	case BT_EV_PROBE_STACK:
		((struct bt_ev_probe_stack *)out)->probe_id = r->aux32;
		return sizeof(struct bt_ev_probe_stack);
	}
	return 0;
}

/* Into the batch of the event's CPU (compact.h), which is how readers get
 * the CPU back. */
static void drain_store(struct bt_drain *d, const struct bt_event_hdr *h, uint32_t len)
{
	if (d->l->tasks && h->type >= BT_EV_PROCESS_FORK && h->type <= BT_EV_TASK_RENAME)
		task_event(d, h, len);
	if (d->bcount && (h->cpu != d->bcore || d->bcount == BATCH_EVENTS_MAX))
		flush_batch(d);
	if (!d->bcount)
		batch_start(d, h->cpu);
	uint32_t rec = bt_compact_batch_put(d->batch + d->blen, h, len, &d->bprev);
	if (rec && d->blen + rec > d->bcap) {
		/* Does not fit: write the batch, start the next with it (a full
		 * header now: it is the first of its entry). */
		flush_batch(d);
		batch_start(d, h->cpu);
		rec = bt_compact_batch_put(d->batch, h, len, &d->bprev);
		if (rec > d->bcap) /* not even alone in the tail: the next block */
			d->bcap = d->batch_limit;
	}
	if (!rec || rec > d->bcap)
		bump(&d->rejected); /* cannot happen with a block of 256 bytes or more */
	else
		batch_took(d, h, rec);
	if (d->l->hook && (h->type == BT_EV_UPROBE_ENTRY || h->type == BT_EV_USDT))
		d->l->hook(d->l->hook_ctx, h, len);
}

/* drain_store() of a system call from a pair record, when it joins the
 * batch being filled in its narrow form: no generic encoder, no type
 * dispatch. At 500k calls a second that path was half the drain's CPU. */
static void drain_sys(struct bt_drain *d, const struct bt_ev_syscall *s)
{
	uint32_t n;

	if (d->bcount && d->bcore == s->h.cpu && d->bcount < BATCH_EVENTS_MAX &&
	    d->blen + BT_COMPACT_SYS_MAX <= d->bcap && (n = bt_compact_sys_put(d->batch + d->blen, s, &d->bprev))) {
		batch_took(d, &s->h, n);
		return;
	}
	drain_store(d, &s->h, sizeof(*s));
}

/* Both halves of a pair record straight into the batch being filled, when
 * they join it in their narrow forms: no split into two events, no live
 * window entry of their own (they extend the batch's run of seqs). */
static inline bool drain_pair(struct bt_drain *d, const struct bt_raw_sys_pair *p)
{
	uint32_t n;

	if (d->bcount && (d->bcore != p->h.cpu || d->bcount + 2 > BATCH_EVENTS_MAX))
		flush_batch(d);
	if (!d->bcount)
		batch_start(d, p->h.cpu);
	/* Near the block's end, the exact fit is drain_store()'s. */
	if (d->blen + 2 * BT_COMPACT_SYS_MAX > d->bcap || !(n = bt_compact_sys_pair_put(d->batch + d->blen, p, &d->bprev)))
		return false;
	d->blen += n;
	d->bcount += 2;
	bt_live_run_take(d->runs, &d->nruns, p->enter_seq, p->enter_ts, 0);
	bt_live_run_take(d->runs, &d->nruns, p->h.seq, p->h.ts_ns, 0);
	return true;
}

static int drain_sample(void *ctx, void *data, size_t len)
{
	struct bt_drain *d = ctx;
	const struct bt_event_hdr *h = data;

	if (len < sizeof(*h) || len > UINT32_MAX || h->cpu >= d->l->ncpus) {
		bump(&d->malformed);
		return 0;
	}
	switch (h->type) {
	case BT_RAW_STACK_DEF:
		/* The frames of a new stack: into the stack table, not the buffer. */
		if (d->l->stacks)
			bt_stack_table_define(d->l->stacks, data, (uint32_t)len);
		return 0;
	case BT_RAW_PY_CODE:
		/* A Python code object's names: kept to name its frames. */
		if (d->l->stacks)
			bt_pycodes_add(bt_stack_table_pycodes(d->l->stacks), data, (uint32_t)len);
		return 0;
	case BT_RAW_STACK_COPY:
		/* A stack's bytes where its walk stopped: finished later. */
		if (d->l->copies)
			bt_stack_copies_add(d->l->copies, data, (uint32_t)len);
		return 0;
	case BT_RAW_STACKS: {
		struct bt_ev_offcpu ev; /* the largest stack event */

		if (!d->l->stacks || len < sizeof(struct bt_raw_stacks) ||
		    !(len = stack_event(d->l->stacks, data, &ev))) {
			bump(&d->malformed);
			return 0;
		}
		drain_store(d, &ev.h, (uint32_t)len);
		return 0;
	}
	case BT_RAW_SYS_PAIR: {
		const struct bt_raw_sys_pair *p = data;
		struct bt_ev_syscall in, out;

		/* One CPU's batch (bpf/events.h: struct bt_sys_batch). */
		if (len % sizeof(*p)) {
			bump(&d->malformed);
			return 0;
		}
		for (size_t i = 0; i < len / sizeof(*p); i++) {
			if (p[i].h.type != BT_RAW_SYS_PAIR || p[i].h.cpu != h->cpu) {
				bump(&d->malformed);
				return 0;
			}
			/* The enter may have been stored from its slot already. */
			const struct bt_event_hdr enter = { .seq = p[i].enter_seq, .tid = p[i].h.tid, .cpu = p[i].h.cpu };
			bool dup = bt_sys_landed_dup(&d->landed, &enter);

			if (!dup && drain_pair(d, &p[i]))
				continue;
			bt_sys_pair_split(&p[i], &in, &out);
			if (!dup)
				drain_sys(d, &in);
			drain_sys(d, &out);
		}
		bump(&d->sys_pair_records);
		add_to(&d->sys_pairs, len / sizeof(*p));
		return 0;
	}
	case BT_EV_SYS_ENTER:
		if (bt_sys_landed_dup(&d->landed, h))
			return 0;
		break;
	}
	drain_store(d, h, (uint32_t)len);
	return 0;
}

/* The system calls batched on the drain's CPUs (emit.bpf.h) into their
 * rings, for a dump or the last pass: the flush program run on each CPU. */
static void flush_sys_batches(struct bt_drain *d)
{
	if (d->l->sys_batch_fd < 0)
		return;
	for (uint32_t c = d->ring_first; c < d->ring_first + d->ring_count; c++) {
		LIBBPF_OPTS(bpf_test_run_opts, run, .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = c);

		if (bpf_prog_test_run_opts(d->l->sys_batch_fd, &run) && errno != ENXIO)
			bt_warn("cannot flush CPU %u's system calls: %s", c, strerror(errno));
	}
}

/* The enters still held in the kernel's slots (sys_pairs.h), for a dump or
 * the last pass: read, the batches flushed and the rings consumed again
 * (what their CPUs emitted before the read goes first), then stored. */
static void land_held_enters(struct bt_drain *d)
{
	struct bt_ev_syscall *ev;
	int n;

	if (!(d->l->groups & (1u << BT_GROUP_SYSCALLS)) || !d->landed.cpu)
		return;
	n = bt_sys_held_read(&d->landed, bpf_map__fd(d->l->skel->maps.cpu_state), d->l->ncpus);
	if (n < 0)
		bt_warn("cannot read the system calls in progress: %s", strerror(-n));
	if (n <= 0)
		return;
	/* Pairs batched since the pass's flush are older than the enters
	 * just read: into the rings too, or the dump has a hole before them. */
	flush_sys_batches(d);
	bt_rings_consume(d->rb, drain_sample, d);
	ev = calloc(d->ring_count, sizeof(*ev));
	n = ev ? bt_sys_held_take(&d->landed, ev) : 0;
	for (int i = 0; i < n; i++)
		drain_store(d, &ev[i].h, sizeof(ev[i]));
	free(ev);
}

/* Nice level of the drain thread (see drain_main()). */
#define DRAIN_NICE BT_DRAIN_NICE

/* Blocks whose events may still be retained: the buffer's, and with a cold
 * tier the span of positions it holds (positions count at least every
 * block used, so the span bounds how far back its events reach). */
void bt_loader_set_cold(struct bt_loader *l, struct bt_cold *cold)
{
	l->cold = cold;
}

void bt_loader_set_pass_hook(struct bt_loader *l, bt_pass_hook fn, void *ctx)
{
	l->pass_hook = fn;
	l->pass_ctx = ctx;
}

/* On a quiet machine the wait between passes doubles from drain_ms up to
 * this: a pass costs ~90 us of a CPU on a VM (the wakeup, epoll, the
 * pass's bookkeeping), and 50 passes a second were half an idle
 * recorder's CPU. Nothing needs the short period there: a ring past
 * wakeup_bytes, a flush (a dump, the stop: bt_rings_wake) and an exec
 * (drain_asleep, record.bpf.c) end a wait at once. */
#define DRAIN_IDLE_MS 200u
/* A pass of at least this many records keeps the next wait at drain_ms. */
#define DRAIN_BUSY_RECORDS 256u
/* So does a pass whose events filled this share of the buffer's blocks or
 * more (1/16): in a small buffer the stack table's reclaim and the cold
 * tier's nudges, both made per pass, must see it turn over in steps. */
#define DRAIN_BUSY_TURNOVER 16u

/* The wait after a pass: drain_ms after a busy pass, a flush or an exec,
 * else twice the last, at most DRAIN_IDLE_MS. Always drain_ms where no
 * exec can end a quiet wait (the exec program not attached: the sched
 * group off) and where the drain finds uprobe triggers' hits (the hook):
 * a hit must not wait 200 ms for its dump. */
static unsigned next_wait(const struct bt_drain *d, unsigned wait, uint64_t records, uint64_t blocks,
			  int woken)
{
	const struct bt_loader *l = d->l;
	unsigned lo = l->drain_ms, hi = lo > DRAIN_IDLE_MS ? lo : DRAIN_IDLE_MS;

	if (records >= DRAIN_BUSY_RECORDS || blocks * DRAIN_BUSY_TURNOVER >= d->nblocks || woken ||
	    !l->exec_ends_waits || l->hook || !l->skel->bss)
		return lo;
	return wait >= hi / 2 ? hi : wait * 2;
}

static void *drain_main(void *arg)
{
	struct bt_drain *d = arg;
	unsigned wait = d->l->drain_ms;
	uint64_t blocks_seen = 0;
	int ret;

	pthread_setname_np(pthread_self(), "btrace-drain");
	/* A saturated machine must not starve the drain (the rings would
	 * overflow): raise its share. Nice, not real-time: under an event
	 * flood a real-time drain could take a CPU from the workload. */
	bt_thread_nice(DRAIN_NICE, "drain thread");
	/* Pairs with the release store in bt_loader_stop(). */
	while (!atomic_load_explicit(&d->stop, memory_order_acquire)) {
		uint64_t req, horizon, records;
		int long_wait = wait > d->l->drain_ms, exec_seen = 0;

		/* Relaxed both ways: a plain flag; its partners are the exec
		 * program's read and clear (record.bpf.c, drain_asleep), and a
		 * race costs a wakeup or a wait, never an event. long_wait
		 * implies skel->bss (next_wait). */
		if (long_wait)
			__atomic_store_n(&d->l->skel->bss->drain_asleep, 1, __ATOMIC_RELAXED);
		ret = bt_rings_poll(d->rb, (int)wait);
		if (long_wait)
			exec_seen = !__atomic_exchange_n(&d->l->skel->bss->drain_asleep, 0, __ATOMIC_RELAXED);
		if (ret < 0 && ret != -EINTR) {
			bt_warn("ring buffer poll failed: %s", strerror(-ret));
			usleep(d->l->drain_ms * 1000);
		}
		/* Read the flush request before consuming: this pass then covers
		 * every event submitted before the request was made. */
		pthread_mutex_lock(&d->lock);
		req = d->flush_req;
		pthread_mutex_unlock(&d->lock);
		/* A poll that timed out consumed nothing: events are submitted
		 * without wakeups. Every ring is consumed past `horizon`. */
		horizon = bt_boottime_ns(); /* the clock of bpf_ktime_get_boot_ns() */
		if (req != d->flush_done)
			flush_sys_batches(d);
		records = bt_rings_consume(d->rb, drain_sample, d);
		if (exec_seen && ret > 0) /* its forced wakeup, not the timeout, ended the wait */
			bump(&d->exec_wakes);
		if (req != d->flush_done) /* a dump: with the calls in progress */
			land_held_enters(d);
		flush_batch(d);
		struct bt_stats bs;
		bt_buffer_stats(d->l->buf, &bs);
		uint64_t cold_from = d->l->cold ? bt_cold_kept_from(d->l->cold) : UINT64_MAX;
		/* the tier's blocks count in the window too (ctl status) */
		bt_live_pass(d->l->live, bs.blocks_used, bt_cold_retained_span(cold_from, &bs));
		uint64_t pass_blocks = bs.blocks_used - blocks_seen; /* handed out since the last pass */
		blocks_seen = bs.blocks_used;
		d->nblocks = bs.nblocks;
		if (d->l->cold) /* the compressor, before writers come round to these blocks */
			bt_cold_nudge(d->l->cold, bs.blocks_used, bs.nblocks);
		if (d->l->stacks) /* the pass's events are in the buffer: retire older stacks */
			bt_stack_table_pass(d->l->stacks, bs.blocks_used, bs.nblocks,
					    cold_from, bs.active);
		/* copies whose tables came: before a dump copies the table */
		bt_stack_copies_pass(d->l->copies, d->l->stacks, req != d->flush_done);
		if (d->l->stacks) /* the pass's new frames and files: the symbol loader's work */
			bt_stack_table_wake(d->l->stacks);
		apply_task_events(d, horizon);
		int hook_busy = d->l->pass_hook ? d->l->pass_hook(d->l->pass_ctx) : 0;
		wait = next_wait(d, wait, records, pass_blocks, exec_seen || hook_busy || req != d->flush_done);
		/* Relaxed: numbers for ctl status, read by bt_loader_drain_stats. */
		atomic_store_explicit(&d->wait_ms, wait, memory_order_relaxed);
		atomic_store_explicit(&d->ring_peak, bt_rings_peak(d->rb), memory_order_relaxed);
		bump(&d->wakeups);
		if (req != d->flush_done) {
			pthread_mutex_lock(&d->lock);
			d->flush_done = req;
			pthread_cond_broadcast(&d->cond);
			pthread_mutex_unlock(&d->lock);
		}
	}
	flush_sys_batches(d);
	bt_rings_consume(d->rb, drain_sample, d);
	land_held_enters(d); /* the programs are detached: the slots stay as they are */
	flush_batch(d);
	apply_task_events(d, UINT64_MAX);
	pthread_mutex_lock(&d->lock);
	d->flush_done = d->flush_req;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* The rings of a drain, in one epoll set (ringbuf.c: batch consumer). */
static int drain_open(struct bt_drain *d)
{
	struct bt_loader *l = d->l;
	char err[256];

	d->rb = bt_rings_new(&l->ring_fds[d->ring_first], d->ring_count, l->ring_size, err, sizeof(err));
	if (!d->rb) {
		int e = errno;
		bt_err("%s", err);
		return -e;
	}
	return 0;
}

int bt_loader_start(struct bt_loader *l, struct bt_buffer *buf, struct bt_task_table *tasks,
		    struct bt_stack_table *stacks)
{
	sigset_t all, old;
	int ret = 0;

	l->buf = buf;
	l->tasks = tasks;
	l->stacks = stacks;
	if (!l->live && !(l->live = bt_live_new(l->ncpus)))
		return -ENOMEM;
	if (stacks) {
		struct bt_stack_reclaim_ops ops = { stacks_forget, stacks_held, l, l->ncpus };
		bt_stack_table_set_reclaim(stacks, &ops); /* one drain: the table's only writer */
	}
	ret = bt_loader_copies_open(l);
	if (ret)
		bt_warn("stack copies off (stacks cut where a table is not built yet): %s", strerror(-ret));
	ret = 0;
	l->ndrains = 1;
	for (unsigned i = 0; i < l->ndrains; i++) {
		struct bt_drain *d = &l->drains[i];

		d->l = l;
		struct bt_stats bs;
		bt_buffer_stats(buf, &bs);
		d->batch_limit = BT_MAX_PAYLOAD(bs.block_size) < BT_BATCH_MAX ? BT_MAX_PAYLOAD(bs.block_size) : BT_BATCH_MAX;
		d->nblocks = bs.nblocks;
		d->ring_first = i * l->ncpus / l->ndrains;
		d->ring_count = (i + 1) * l->ncpus / l->ndrains - d->ring_first;
		pthread_mutex_init(&d->lock, NULL);
		pthread_cond_init(&d->cond, NULL);
		/* Without it task events are applied as they come (see the top). */
		d->pending = malloc(BT_TASK_PENDING * sizeof(*d->pending));
		ret = bt_sys_landed_init(&d->landed, d->ring_first, d->ring_count);
		if (ret) {
			bt_warn("out of memory");
			goto fail;
		}
		ret = drain_open(d);
		if (ret) {
			bt_warn("cannot map the BPF ring buffers: %s", strerror(-ret));
			goto fail;
		}
	}
	/* Drain threads take no signals: the main thread handles them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 0; i < l->ndrains; i++) {
		struct bt_drain *d = &l->drains[i];

		ret = -pthread_create(&d->thread, NULL, drain_main, d);
		if (ret) {
			bt_warn("cannot start the drain thread: %s", strerror(-ret));
			break;
		}
		pthread_mutex_lock(&d->lock);
		d->running = 1;
		pthread_mutex_unlock(&d->lock);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		goto fail;
	return 0;
fail:
	bt_loader_stop(l);
	return ret;
}

int bt_loader_flush(struct bt_loader *l, unsigned timeout_ms)
{
	struct timespec deadline;
	int ret = 0;

	bt_deadline_after(CLOCK_REALTIME, timeout_ms * 1000000ull, &deadline);
	for (unsigned i = 0; i < l->ndrains; i++) {
		struct bt_drain *d = &l->drains[i];
		uint64_t want;

		pthread_mutex_lock(&d->lock);
		want = ++d->flush_req;
		/* The pass now, not after the drain's wait. Written under the
		 * lock after ++flush_req; the drain reads flush_req under it
		 * after its poll returns, so the pass this wake starts sees the
		 * request. Only while running: stop frees rb after running = 0. */
		if (d->running)
			bt_rings_wake(d->rb);
		while (d->flush_done < want && d->running && !ret)
			if (pthread_cond_timedwait(&d->cond, &d->lock, &deadline) == ETIMEDOUT)
				ret = -ETIMEDOUT;
		pthread_mutex_unlock(&d->lock);
	}
	return ret;
}
