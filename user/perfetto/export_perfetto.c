// SPDX-License-Identifier: MIT
/*
 * export_perfetto.c - a dump as a Perfetto protobuf trace (a concatenation of
 * Trace.packet fields, i.e. a serialized perfetto.protos.Trace).
 *
 * What is written, in this order:
 *   1. ClockSnapshot (BOOTTIME, REALTIME at dump time) so the UI can show wall
 *      clock time; every timestamp is CLOCK_BOOTTIME, Perfetto's default.
 *   2. SystemInfo: utsname (the importer picks the sched_switch prev_state
 *      encoding from the kernel release, and the syscall table from the
 *      machine), number of CPUs.
 *   3. ProcessTree packets: every process and thread of the task table and of
 *      the events whose process is known, with names (and parents from fork
 *      events), so no track is nameless.
 *   4. FtraceStats (start of trace): zero counters per CPU.
 *   5. TrackDescriptors for the "btrace-bpf" tracks (dump info, lost events
 *      per CPU) and a "dump info" instant carrying every loss counter.
 *   6. The events, streamed in time order:
 *      - kernel events as FtraceEvents in per-CPU FtraceEventBundles of up to
 *        opts.bundle_events events (one TracePacket each); a bundle that
 *        follows a seq gap of its CPU has lost_events set (the importer then
 *        flags the CPU's data loss in Info and stats);
 *      - with opts.compact_sched (convert's default), sched_switch in the
 *        bundle's CompactSched arrays when the importer can infer its prev_*
 *        fields (the CPU's previous switch is in the output, no seq gap since,
 *        and it switched to this prev task), else a full event; a sched-heavy
 *        trace is then about 3x smaller (gzip: 2x);
 *      - uprobe entry/return pairs as TrackEvent slices on a "uprobes" track
 *        of their thread, function name as slice name, arguments and
 *        return value as debug annotations; unmatched entries/returns and
 *        USDT as instants; a function probed without %return: its entries as
 *        instants (calls, nothing unmatched); probed with %return alone: each
 *        return as a slice ending at the return, from its duration. Each
 *        thread with such events gets one TrackDescriptor with its
 *        ThreadDescriptor (the importer takes a second one for the same tid
 *        as tid reuse and splits the thread), and its "uprobes" and "app
 *        events" tracks are children of it, apart from the thread's syscall
 *        slices and from each other;
 *      - each seq gap as a "LOST n events" slice on the CPU's loss track, from
 *        the CPU's last event before the hole to its first event after it;
 *      - application events (in-process tracing) on the "app events" child
 *        track of their thread (like uprobes): matched BEGIN/END as slices (a
 *        BEGIN still open at the end of the dump stays open, marked
 *        open_at_dump_end), instants with their arguments, a BEGIN or END
 *        without partner as an instant (so nesting never breaks), a
 *        "LOST n events" instant where the thread's seq has a hole; counters
 *        as TYPE_COUNTER events on a counter track per (application, name)
 *        under a process track named after the application (one per pid).
 *   7. FtraceStats (end of trace): per CPU events, ring-buffer drops.
 *
 * Field numbers are Perfetto's (protos/perfetto/trace/perfetto_trace.proto);
 * tests/perfetto/perfetto_subset.proto declares the same subset and the unit
 * test decodes our output with it.
 *
 * Sequences: 1 carries the ftrace bundles and the metadata packets, 2 the
 * interned stacks (its first packet), the PerfSamples, TrackDescriptors and
 * TrackEvents. Track events are interned (InternedData event_categories,
 * event_names, debug_annotation_names, added by the packet that first uses
 * one; off-CPU blocks and wakers name their callstack by callstack_iid), so
 * a function slice costs about 30 bytes instead of 46.
 *
 * This file: the order above and the loop over the events, and the call
 * stacks (samples, off-CPU, wakers; export_perfetto_stacks.c builds them).
 * The rest, one job a file (export_perfetto_int.h is what they share):
 * export_perfetto_packets.c (packets, annotations, track descriptors),
 * export_perfetto_meta.c (1-5, 7 and the trigger), export_perfetto_ftrace.c
 * (bundles, CompactSched, seq gaps), export_perfetto_tracks.c (uprobe,
 * application and function events), perfetto_proto.h (field numbers).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_perfetto_int.h"
#include "dump_stacks.h"
#include "export_names.h"
#include "export_perfetto_stacks.h"
#include "export_walk.h"

/* ---- call stacks ----------------------------------------------------------------- */

/* The stack table as interned data: the first packet of the track
 * sequence (it clears the sequence's interned state). */
static int write_interned_stacks(struct pf *f)
{
	const struct bt_dump_stacks *s = bt_dump_stacks(f->p->d);
	int r;

	if (!s)
		return 0;
	f->stacks = bt_pf_stacks_new(s, f->p->ev, f->p->nev, &r);
	if (!f->stacks) {
		snprintf(f->err, f->errlen, "out of memory");
		return r;
	}
	f->sample_period = bt_export_sample_period(s);
	struct pbw *w = &f->pkt;
	pf_packet_begin(f, w, SEQ_STACKS, f->p->first_ts);
	if (bt_pf_stacks_interned(f->stacks, w, TP_INTERNED_DATA)) {
		snprintf(f->err, f->errlen, "out of memory");
		return -ENOMEM;
	}
	return pf_packet_flush(f, w);
}

static int chart_emit(void *ctx, uint32_t tid, uint32_t tgid, uint64_t ts, int begin, const char *name)
{
	struct pf *f = ctx;
	int r = pf_named_child_track(f, &f->chart_tracks, UUID_CHART(tid), tid, tgid, "call chart (samples)");
	if (r < 0)
		return r;
	pf_te_begin(f, ts, UUID_CHART(tid), begin ? TE_TYPE_SLICE_BEGIN : TE_TYPE_SLICE_END, begin ? name : NULL,
		 "stacks");
	if (begin == BT_PF_CHART_BEFORE) {
		pf_ann_bool(f, "begun_before_window", 1);
		f->st->encl_frames++;
	}
	return pf_packet_flush(f, &f->pkt);
}

/* A CPU sample: a PerfSample (the UI's CPU profile and flame graph) and
 * the thread's call chart; an off-CPU block: a slice on the thread's
 * "off-CPU" track named by where it blocked, its stacks as the slice's
 * callstack; a waker: an instant on the woken thread's "off-CPU" track
 * with the waker's callstack. Every one, its stacks lost or not: a lost
 * stack is a labelled callstack (export_perfetto_stacks.c). */
static int put_stacks(struct pf *f, const struct bt_event_hdr *h)
{
	const struct bt_ev_sample *e = (const void *)h;
	struct pbw *w = &f->pkt;
	int r;

	if (!f->stacks)
		return 0;
	uint64_t iid = bt_pf_stacks_iid(f->stacks, e->kstack, e->ustack);
	if (h->type == BT_EV_CPU_SAMPLE) {
		pf_packet_begin(f, w, SEQ_STACKS, h->ts_ns);
		pbw_begin(w, TP_PERF_SAMPLE);
		pbw_uint(w, PS_CPU, h->cpu);
		pbw_uint(w, PS_PID, h->tgid);
		pbw_uint(w, PS_TID, h->tid);
		pbw_uint(w, PS_CALLSTACK_IID, iid);
		f->st->samples_no_stack += (uint64_t)bt_pf_stacks_lost(f->stacks, e->kstack, e->ustack);
		if ((r = pf_packet_flush(f, w)) < 0)
			return r;
		return bt_pf_chart_sample(f->stacks, h->tid, h->tgid, h->ts_ns, e->kstack, e->ustack, f->sample_period,
					  bt_export_stack_open_from(f->p, h->tid, h->ts_ns), chart_emit, f);
	}
	uint32_t tid = h->type == BT_EV_WAKER ? ((const struct bt_ev_waker *)h)->wakee : h->tid;
	uint32_t tgid = h->type == BT_EV_WAKER ? 0 : h->tgid;
	if ((r = pf_named_child_track(f, &f->offcpu_tracks, UUID_OFFCPU(tid), tid, tgid, "off-CPU (stacks)")) < 0)
		return r;
	size_t ll;
	const char *leaf = bt_pf_stacks_leaf(f->stacks, e->kstack, e->ustack, &ll);
	char name[200];
	if (h->type == BT_EV_OFFCPU) {
		const struct bt_ev_offcpu *o = (const void *)h;
		uint64_t from = o->offcpu_ns < h->ts_ns ? h->ts_ns - o->offcpu_ns : 0;
		snprintf(name, sizeof(name), "blocked in %.*s", (int)ll, leaf);
		pf_te_begin(f, from, UUID_OFFCPU(tid), TE_TYPE_SLICE_BEGIN, name, "stacks");
		pbw_uint(w, TE_CALLSTACK_IID, iid);
		if ((r = pf_packet_flush(f, w)) < 0)
			return r;
		pf_te_begin(f, h->ts_ns, UUID_OFFCPU(tid), TE_TYPE_SLICE_END, NULL, "stacks");
	} else {
		snprintf(name, sizeof(name), "woken by %s in %.*s", pf_comm_of(f, h->tid, h->cpu), (int)ll, leaf);
		pf_te_begin(f, h->ts_ns, UUID_OFFCPU(tid), TE_TYPE_INSTANT, name, "stacks");
		pf_ann_uint(f, "waker_tid", h->tid);
		pbw_uint(w, TE_CALLSTACK_IID, iid);
	}
	return pf_packet_flush(f, w);
}

static int perfetto_gap(void *ctx, const struct bt_seq_gap *g, uint64_t ts)
{
	return pf_put_gap(ctx, g, ts);
}

static int perfetto_app_gap(void *ctx, const struct bt_app_gap *g, const struct bt_event_hdr *h)
{
	return pf_put_app_gap(ctx, g, h);
}

static int perfetto_app(void *ctx, const struct bt_dump_event *e)
{
	struct pf *f = ctx;
	const struct bt_event_hdr *h = e->ev;
	int r = pf_put_app(f, e);

	if (r < 0)
		return r;
	f->st->events++;
	if (h->type < BT_EV_MAX)
		f->st->per_type[h->type]++;
	return 0;
}

static int perfetto_kernel(void *ctx, const struct bt_dump_event *e)
{
	struct pf *f = ctx;
	const struct bt_event_hdr *h = e->ev;
	int r;

	if (h->type == BT_EV_PROCESS_EXIT && (r = pf_close_thread(f, h->tid, h->ts_ns)) < 0)
		return r;
	if (h->type >= BT_EV_MAX || h->cpu >= f->ncpus)
		return 0;
	if (bt_event_is_uprobe(h->type))
		r = pf_put_uprobe(f, h);
	else if (h->type == BT_EV_CPU_SAMPLE || h->type == BT_EV_OFFCPU || h->type == BT_EV_WAKER)
		r = put_stacks(f, h);
	else
		r = pf_put_ftrace(f, h);
	if (r < 0)
		return r;
	bt_namer_apply(f->nm, h, e->len);
	f->cpu[h->cpu].last_ts = h->ts_ns;
	f->cpu[h->cpu].have_ts = 1;
	f->st->events++;
	f->st->per_type[h->type]++;
	return 0;
}

/* A thread that died without its exit in the window: closed at its last event. */
static int perfetto_thread_end(void *ctx, uint32_t tid, uint64_t ts)
{
	return pf_close_thread(ctx, tid, ts);
}

static const struct bt_export_visit perfetto_visit = {
	.gap = perfetto_gap, .app_gap = perfetto_app_gap, .app = perfetto_app, .kernel = perfetto_kernel,
	.thread_end = perfetto_thread_end,
};

int bt_export_perfetto(const struct bt_export_prep *p, struct bt_sink *out, const struct bt_export_opts *o,
		       struct bt_export_stats *st, char *err, size_t errlen)
{
	struct bt_export_stats dummy;
	struct pf f = {
		.p = p, .o = o, .out = out, .st = st ? st : &dummy, .ncpus = p->hdr->ncpus,
		.bundle_events = o->bundle_events ? o->bundle_events : DEFAULT_BUNDLE_EVENTS,
		.err = err, .errlen = errlen,
	};
	int r = -ENOMEM;

	if (!st)
		memset(&dummy, 0, sizeof(dummy));
	pbw_init(&f.pkt);
	f.cpu = calloc(f.ncpus, sizeof(*f.cpu));
	f.loss_tracks = calloc(f.ncpus, 1);
	f.nm = bt_namer_new(p->tasks, p->ntasks);
	if (!f.cpu || !f.loss_tracks || !f.nm) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}

	if ((r = pf_write_clock_snapshot(&f)) < 0 || (r = pf_write_system_info(&f)) < 0 ||
	    (r = pf_write_process_tree(&f)) < 0 || (r = pf_write_ftrace_stats(&f, 0)) < 0 ||
	    (r = write_interned_stacks(&f)) < 0 || (r = pf_track_descriptor(&f, UUID_ROOT, 0, "btrace-bpf")) < 0 ||
	    (r = pf_track_descriptor(&f, UUID_INFO, UUID_ROOT, "btrace-bpf: dump")) < 0 || (r = pf_write_dump_info(&f)) < 0 ||
	    (r = pf_write_app_processes(&f)) < 0 || (r = pf_put_triggers(&f)) < 0 || (r = pf_put_enclosing(&f)) < 0)
		goto out;

	if ((r = bt_export_walk(p, o, f.ncpus, &perfetto_visit, &f, err, errlen)) < 0)
		goto out;
	if (f.stacks && (r = bt_pf_chart_finish(f.stacks, f.sample_period, chart_emit, &f)) < 0)
		goto out;
	if ((r = pf_close_open_funcs(&f)) < 0 || (r = pf_flush_all(&f)) < 0 || (r = pf_write_ftrace_stats(&f, 1)) < 0)
		goto out;
	if (o->progress)
		o->progress(p->nev, p->nev, o->progress_ctx);
	r = bt_sink_error(out);
	if (r < 0)
		snprintf(err, errlen, "write error: %s", strerror(-r));
out:
	if (f.cpu) {
		for (uint32_t c = 0; c < f.ncpus; c++) {
			pbw_free(&f.cpu[c].w);
			pf_compact_free(&f.cpu[c].cs);
		}
	}
	free(f.cpu);
	free(f.loss_tracks);
	pbw_free(&f.pkt);
	bt_namer_free(f.nm);
	bt_u32map_free(&f.thread_tracks);
	bt_u32map_free(&f.uprobe_tracks);
	bt_u32map_free(&f.app_tracks);
	bt_u32map_free(&f.func_tracks);
	bt_u32map_free(&f.func_depth);
	bt_u32map_free(&f.func_hidden);
	bt_u32map_free(&f.app_depth);
	free(f.app_proc);
	bt_u32map_free(&f.counter_tracks);
	bt_u32map_free(&f.chart_tracks);
	bt_u32map_free(&f.offcpu_tracks);
	bt_u32map_free(&f.trig_tracks);
	bt_pf_stacks_free(f.stacks);
	pf_intern_free(&f);
	return r;
}
