// SPDX-License-Identifier: MIT
/*
 * handover_dump.c - the history a previous recorder left in the handed
 * buffer, written out as a dump before this recorder records on (the
 * dump's reason says why it ended: "restart", "upgrade", "recorder-died").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "handover.h"
#include "dump.h"
#include "dump_stacks.h"
#include "handover_int.h"
#include "events.h"
#include "compact.h"
#include "event_names.h"
#include "clocks.h"

struct keep_ctx {
	uint64_t ref_ts;
	uint32_t ncpus;
	struct newest {
		uint64_t ts;
		uint32_t seq, have; /* have: an event of this CPU was kept */
	} *newest; /* [ncpus] */
	uint8_t ev[BT_EVENT_MAX] __attribute__((aligned(8)));
};

/* a after b: later, or at the same time a later seq (32-bit, wrapping) */
static int newer(uint64_t ts_a, uint32_t seq_a, uint64_t ts_b, uint32_t seq_b)
{
	return ts_a != ts_b ? ts_a > ts_b : (int32_t)(seq_a - seq_b) > 0;
}

/* One decoded event as the dump's reader will check it (dump_sections.c:
 * parse_block): an entry with one it would refuse is dropped whole. */
static int event_ok(const struct bt_event_hdr *ev, uint32_t len, uint32_t ncpus)
{
	if (!bt_event_is_kernel(ev->type) || len < bt_event_min_size(ev->type) || ev->cpu >= ncpus)
		return 0;
	if (bt_event_is_uprobe(ev->type))
		return ((const struct bt_ev_uprobe *)ev)->nargs <= BT_MAX_UARGS;
	return 1;
}

static int keep_entry(const struct bt_block_view *blk, const void *ent, uint32_t len, void *arg)
{
	struct keep_ctx *k = arg;
	struct bt_compact_prev prev = { 0 };
	const uint8_t *rec;
	uint32_t off = 0, rlen;
	int r;

	/* the entry's newest event: it counts only if the entry is kept */
	uint64_t nts = 0;
	uint32_t nseq = 0, ncpu = UINT32_MAX;

	if (blk->core >= k->ncpus)
		return 0;
	while ((r = bt_compact_batch_next(ent, len, &off, &rec, &rlen)) == 1) {
		uint32_t n = bt_compact_decode(rec, rlen, blk->core, k->ref_ts, &prev, k->ev);
		const struct bt_event_hdr *h = (const struct bt_event_hdr *)k->ev;

		if (!n || !event_ok(h, n, k->ncpus))
			return 0;
		if (ncpu == UINT32_MAX || newer(h->ts_ns, h->seq, nts, nseq)) {
			nts = h->ts_ns;
			nseq = h->seq;
			ncpu = h->cpu;
		}
	}
	if (r)
		return 0;
	if (ncpu != UINT32_MAX && (!k->newest[ncpu].have || newer(nts, nseq, k->newest[ncpu].ts, k->newest[ncpu].seq)))
		k->newest[ncpu] = (struct newest){ .ts = nts, .seq = nseq, .have = 1 };
	return 1;
}

/* The events the previous recorder's programs took a seq for after the
 * newest one its buffer kept, summed over the CPUs that kept one: in its
 * rings, in its drain's hands, or dropped at reservation when it died. */
static uint64_t after_newest(const struct keep_ctx *k, const struct bt_ho_tail *t)
{
	uint64_t sum = 0;

	for (uint32_t c = 0; c < k->ncpus && c < t->ncpus; c++)
		if (k->newest[c].have)
			sum += (uint32_t)((uint32_t)t->seq_next[c] - 1u - k->newest[c].seq);
	return sum;
}

/* The stack table died with the previous recorder: every stack an event
 * names is "taken, its entry gone before the dump" (BT_STACK_RECLAIMED,
 * counted as such by report). */
void bt_ho_forget_stacks(void *ctx, struct bt_event_hdr *ev, uint32_t len)
{
	struct bt_ev_sample *e = bt_stack_event(ev, len);

	(void)ctx;
	if (!e)
		return;
	if (e->kstack && !BT_STACK_ID_GONE(e->kstack))
		e->kstack = BT_STACK_RECLAIMED;
	if (e->ustack && !BT_STACK_ID_GONE(e->ustack))
		e->ustack = BT_STACK_RECLAIMED;
}

/* Its stack table as last saved (bt_handover_save_stacks), decoded: an
 * event's ids name its stacks when the table's births say so and the
 * event was drained before the save; else reclaimed, never a wrong stack. */
struct saved_stacks {
	struct bt_dump_stacks s;
	uint32_t nids, ncpus, nring;
	const uint32_t *slot;
	const uint64_t *ep_ts, *hi_ts;
	uint64_t reclaimed;
};

/* Events this close before a CPU's newest drained at the save may have
 * been drained after it (a program a sample interrupted emits late). */
#define SAVED_MARGIN_NS 10000000ull

static int saved_decode(const struct bt_ho_found *f, struct saved_stacks *ss, char *err, size_t errlen)
{
	struct bt_ho_stacks_slot sl;
	const uint8_t *p = f->stacks;

	memset(ss, 0, sizeof(*ss));
	memcpy(&sl, p, sizeof(sl)); /* sizes checked against the slot by bt_ho_read */
	if (bt_dump_stacks_decode(p + sizeof(sl), sl.stacks_len, 1, 1ull << 30, &ss->s, err, errlen))
		return -1;
	ss->slot = (const uint32_t *)(p + bt_ho_stacks_slot_off(sl.stacks_len));
	ss->ep_ts = (const uint64_t *)(p + bt_ho_stacks_ep_off(sl.stacks_len, sl.nids));
	ss->hi_ts = ss->ep_ts + (size_t)sl.nring * sl.ncpus;
	ss->nids = sl.nids;
	ss->ncpus = sl.ncpus;
	ss->nring = sl.nring;
	return 0;
}

static uint32_t saved_id(struct saved_stacks *ss, uint32_t id, uint32_t cpu, uint64_t ts, uint16_t kind)
{
	if (!id || BT_STACK_ID_GONE(id))
		return id;
	if (cpu >= ss->ncpus || ts + SAVED_MARGIN_NS > ss->hi_ts[cpu])
		goto gone; /* drained after the save: its id may name a stack born since */
	if (id <= ss->nids && ss->slot[id - 1]) {
		uint32_t e = ss->slot[id - 1] - 1;
		if (e >= ss->nring || ts <= ss->ep_ts[(size_t)e * ss->ncpus + cpu])
			goto gone; /* freed after the event */
	}
	if (id > ss->s.nstacks ||
	    !(ss->s.stacks[id - 1].flags & BT_STACK_F_UNDEFINED || ss->s.stacks[id - 1].kind == kind))
		goto gone;
	return id;
gone:
	ss->reclaimed++;
	return BT_STACK_RECLAIMED;
}

static void saved_fix(void *ctx, struct bt_event_hdr *ev, uint32_t len)
{
	struct saved_stacks *ss = ctx;
	struct bt_ev_sample *e = bt_stack_event(ev, len);

	if (!e)
		return;
	e->kstack = saved_id(ss, e->kstack, ev->cpu, ev->ts_ns, BT_STACK_KERNEL);
	e->ustack = saved_id(ss, e->ustack, ev->cpu, ev->ts_ns, BT_STACK_USER);
}

static int saved_write(void *ctx, struct bt_dump_sink *sink)
{
	struct saved_stacks *ss = ctx;

	ss->s.counters[BT_STKC_RECLAIMED_REFS] = ss->reclaimed;
	return bt_dump_sink_stacks(sink, &ss->s);
}

int bt_handover_dump(struct bt_ho_found *f, const char *dir, int zlevel, char *out_path, size_t out_len,
		     uint64_t *events, char *err, size_t errlen)
{
	struct bt_dump_info info;
	struct bt_read_stats rst;

	memset(&info, 0, sizeof(info));
	memset(&rst, 0, sizeof(rst));
	info.ncpus = f->cnt.ncpus;
	struct keep_ctx *k = calloc(1, sizeof(*k));
	if (k)
		k->newest = calloc(info.ncpus ? info.ncpus : 1, sizeof(*k->newest));
	if (!k || !k->newest) {
		free(k);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	k->ref_ts = bt_boottime_ns();
	k->ncpus = info.ncpus;
	f->ss.entries_bad += bt_capture_filter(f->kbuf, keep_entry, k);
	/* What was refused, and (its counters pinned, for this machine's
	 * CPUs) what its programs dropped and emitted after the newest kept. */
	struct bt_dump_handed handed = {
		.blocks_refused = f->ss.blocks_bad + f->ss.blocks_dup,
		.blocks_cut = f->ss.blocks_torn,
		.batches_refused = f->ss.entries_bad,
	};
	if (f->tail.known && f->tail.ncpus == info.ncpus) {
		handed.tail_known = 1;
		handed.after_newest = after_newest(k, &f->tail);
		info.rb_drops = f->tail.drops;
		info.rb_emitted = f->tail.emitted;
	}
	f->after_newest = handed.after_newest;
	/* Each CPU's next seq at its end, where a later dump's renumbering
	 * puts this recorder's first (handover_prior.c): its counters' if
	 * read, else one past its newest kept (what its rings held uncounted). */
	free(f->seq_base);
	f->seq_base = calloc(info.ncpus ? info.ncpus : 1, sizeof(*f->seq_base));
	for (uint32_t c = 0; f->seq_base && c < info.ncpus; c++)
		f->seq_base[c] = handed.tail_known ? (uint32_t)f->tail.seq_next[c] : k->newest[c].seq + 1u;
	free(k->newest);
	free(k);
	info.handed = &handed;
	info.fix_event = bt_ho_forget_stacks;
	/* Its stack table, if it saved one that decodes; else every stack
	 * says reclaimed. */
	struct saved_stacks ss;
	char serr[200] = "";
	int have_stacks = f->stacks && saved_decode(f, &ss, serr, sizeof(serr)) == 0;
	if (f->stacks && !have_stacks)
		snprintf(f->stacks_err, sizeof(f->stacks_err), "%s", serr);
	if (have_stacks) {
		info.fix_event = saved_fix;
		info.fix_ctx = &ss;
		info.write_stacks = saved_write;
		info.stacks_ctx = &ss;
	}
	info.ngroups = BT_GROUP_MAX;
	info.tasks = f->tasks;
	info.ntasks = f->ntasks;
	info.dump_seq = 1;
	info.reason = bt_ho_reason(f);
	info.drain_events = f->cnt.drain_events;
	info.drain_rejected = f->cnt.drain_rejected;
	info.groups_enabled = f->cnt.groups_enabled;
	struct bt_dump_args da = {
		.capture = f->kbuf, .info = &info, .dir = dir, .zlevel = zlevel, .out_path = out_path,
		.out_len = out_len, .rst = &rst, .err = err, .errlen = errlen,
	};
	int ret = bt_dump_write_capture(&da);

	if (have_stacks) {
		f->stacks_named = ss.s.nstacks;
		f->stacks_reclaimed = ss.reclaimed;
		bt_dump_stacks_release(&ss.s);
	}

	if (!ret && events)
		*events = rst.entries;
	return ret;
}
