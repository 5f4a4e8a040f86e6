// SPDX-License-Identifier: MIT
/*
 * export_perfetto_meta.c - the Perfetto trace's metadata packets: the clock
 * snapshot, system info, the process tree, ftrace stats at start and end,
 * the "dump info" instant with every loss counter, and the trigger that
 * caused the dump. Written once each, around the events.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_perfetto_int.h"

/* ---- metadata packets ---------------------------------------------------------------- */

int pf_write_clock_snapshot(struct pf *f)
{
	const struct bt_dump_header *h = f->p->hdr;
	struct pbw *w = &f->pkt;
	if (!h->created_boottime_ns || !h->created_realtime_ns)
		return 0;
	pf_packet_begin(f, w, SEQ_FTRACE, h->created_boottime_ns);
	pbw_begin(w, TP_CLOCK_SNAPSHOT);
	pbw_begin(w, CS_CLOCKS);
	pbw_uint(w, CLK_CLOCK_ID, BUILTIN_CLOCK_BOOTTIME);
	pbw_uint(w, CLK_TIMESTAMP, h->created_boottime_ns);
	pbw_end(w);
	pbw_begin(w, CS_CLOCKS);
	pbw_uint(w, CLK_CLOCK_ID, BUILTIN_CLOCK_REALTIME);
	pbw_uint(w, CLK_TIMESTAMP, h->created_realtime_ns);
	pbw_end(w);
	pbw_uint(w, CS_PRIMARY_TRACE_CLOCK, BUILTIN_CLOCK_BOOTTIME);
	return pf_packet_flush(f, w);
}

static const char *machine_name(void)
{
#if defined(__x86_64__)
	return "x86_64";
#elif defined(__aarch64__)
	return "aarch64";
#elif defined(__arm__)
	return "armv7l";
#elif defined(__i386__)
	return "i686";
#elif defined(__riscv) && __riscv_xlen == 64
	return "riscv64";
#else
	return "";
#endif
}

int pf_write_system_info(struct pf *f)
{
	const struct bt_dump_header *h = f->p->hdr;
	struct pbw *w = &f->pkt;
	pf_packet_begin(f, w, SEQ_FTRACE, 0);
	pbw_begin(w, TP_SYSTEM_INFO);
	pbw_begin(w, SI_UTSNAME);
	pbw_string(w, UTS_SYSNAME, "Linux");
	/* The importer decodes sched_switch prev_state by kernel version; the
	 * recorder always writes the 4.14+ tracepoint encoding (it needs BTF
	 * and tp_btf, 5.5+), so a dump without a release gets a 5.x one. */
	pbw_utf8(w, UTS_RELEASE, h->kernel[0] ? h->kernel : "5.5.0-unknown", sizeof(h->kernel));
	/* The dump does not record the machine; the recorder runs the same
	 * build as this converter in practice. */
	if (machine_name()[0])
		pbw_string(w, UTS_MACHINE, machine_name());
	pbw_end(w);
	pbw_uint(w, SI_NUM_CPUS, h->ncpus);
	return pf_packet_flush(f, w);
}

int pf_write_process_tree(struct pf *f)
{
	const struct bt_export_prep *p = f->p;
	struct pbw *w = &f->pkt;
	uint64_t ts = p->first_ts ? p->first_ts : p->hdr->created_boottime_ns;
	int r = 0;

	/* processes: every known tgid (-p: of a selected thread), named after
	 * its main thread if known */
	struct bt_u32map seen = { 0 };
	size_t inpkt = 0;
	for (size_t i = 0; i < p->nthreads && r == 0; i++) {
		uint32_t tgid = p->threads[i].tgid;
		if (!tgid || bt_u32map_get(&seen, tgid, NULL) || !bt_export_selected(p, p->threads[i].tid))
			continue;
		if (bt_u32map_put(&seen, tgid, 1) < 0) {
			snprintf(f->err, f->errlen, "out of memory");
			r = -ENOMEM;
			break;
		}
		const struct bt_xthread *leader = bt_export_thread(p, tgid);
		if (!inpkt) {
			pf_packet_begin(f, w, SEQ_FTRACE, ts);
			pbw_begin(w, TP_PROCESS_TREE);
		}
		pbw_begin(w, PT_PROCESSES);
		pbw_int(w, PT_PROC_PID, (int32_t)tgid);
		if (leader && leader->ppid)
			pbw_int(w, PT_PROC_PPID, (int32_t)leader->ppid);
		pbw_utf8(w, PT_PROC_CMDLINE, leader ? leader->name : p->threads[i].name, BT_TASK_COMM_LEN);
		pbw_bool(w, PT_PROC_CMDLINE_IS_COMM, 1);
		pbw_end(w);
		if (++inpkt == PROCTREE_CHUNK) {
			r = pf_packet_flush(f, w);
			inpkt = 0;
		}
	}
	bt_u32map_free(&seen);
	for (size_t i = 0; i < p->nthreads && r == 0; i++) {
		const struct bt_xthread *t = &p->threads[i];
		/* The importer files a thread under its tgid, pid 0 (swapper) when
		 * the field is missing: a thread whose process is unknown is left
		 * out (if it ran, sched_switch comms name it). */
		if (!t->tgid || !bt_export_selected(p, t->tid)) /* -p: only the threads asked for */
			continue;
		if (!inpkt) {
			pf_packet_begin(f, w, SEQ_FTRACE, ts);
			pbw_begin(w, TP_PROCESS_TREE);
		}
		pbw_begin(w, PT_THREADS);
		pbw_int(w, PT_THREAD_TID, (int32_t)t->tid);
		pbw_utf8(w, PT_THREAD_NAME, t->name, BT_TASK_COMM_LEN);
		if (t->tgid)
			pbw_int(w, PT_THREAD_TGID, (int32_t)t->tgid);
		pbw_end(w);
		if (++inpkt == PROCTREE_CHUNK) {
			r = pf_packet_flush(f, w);
			inpkt = 0;
		}
	}
	if (inpkt && r == 0)
		r = pf_packet_flush(f, w);
	return r;
}

int pf_write_ftrace_stats(struct pf *f, int end)
{
	const struct bt_export_prep *p = f->p;
	struct pbw *w = &f->pkt;
	uint64_t ts = end ? p->last_ts : p->first_ts;
	pf_packet_begin(f, w, SEQ_FTRACE, ts ? ts : p->hdr->created_boottime_ns);
	pbw_begin(w, TP_FTRACE_STATS);
	pbw_uint(w, FS_PHASE, end ? FS_END_OF_TRACE : FS_START_OF_TRACE);
	for (uint32_t c = 0; c < p->hdr->ncpus; c++) {
		pbw_begin(w, FS_CPU_STATS);
		pbw_uint(w, FCS_CPU, c);
		if (end) {
			uint64_t n = p->percpu ? p->percpu[c].events : 0;
			pbw_uint(w, FCS_ENTRIES, n);
			pbw_uint(w, FCS_DROPPED_EVENTS, bt_export_cpu_drops(p, c));
			pbw_uint(w, FCS_READ_EVENTS, n);
		} else {
			pbw_uint(w, FCS_ENTRIES, 0);
			pbw_uint(w, FCS_DROPPED_EVENTS, 0);
			pbw_uint(w, FCS_READ_EVENTS, 0);
		}
		pbw_end(w);
	}
	return pf_packet_flush(f, w);
}

/* bt_export_losses() callback: one annotation per counter. */
static void ann_loss(void *ctx, const char *key, uint64_t v)
{
	pf_ann_uint(ctx, key, v);
}

/* The "dump info" instant: where the dump came from and every loss counter. */
int pf_write_dump_info(struct pf *f)
{
	const struct bt_export_prep *p = f->p;
	const struct bt_dump_header *h = p->hdr;
	const struct bt_stats *bs = bt_dump_buffer_stats(p->d);
	struct pbw *w = &f->pkt;

	pf_te_begin(f, p->first_ts ? p->first_ts : h->created_boottime_ns, UUID_INFO, TE_TYPE_INSTANT, "dump info",
		 "btrace");
	pf_ann_str(f, "host", h->hostname);
	pf_ann_str(f, "kernel", h->kernel);
	pf_ann_str(f, "reason", h->reason);
	pf_ann_uint(f, "dump_seq", h->dump_seq);
	if (h->overlaps_dump)
		pf_ann_uint(f, "overlaps_dump", h->overlaps_dump);
	pf_ann_uint(f, "recorder_pid", h->recorder_pid);
	pf_ann_uint(f, "ncpus", h->ncpus);
	pf_ann_uint(f, "groups_enabled", h->groups_enabled);
	pf_ann_uint(f, "buffer_size", h->buffer_size);
	pf_ann_uint(f, "created_realtime_ns", h->created_realtime_ns);
	pf_ann_uint(f, "created_boottime_ns", h->created_boottime_ns);
	pf_ann_uint(f, "events", p->nev);
	bt_export_losses(p, ann_loss, f);
	pf_ann_uint(f, "window.first_ts", p->win.first_ts);
	pf_ann_uint(f, "window.last_ts", p->win.last_ts);
	pf_ann_uint(f, "window.continuous_from_ts", p->win.cont_start_ts);
	pf_ann_uint(f, "window.continuous_events", p->win.cont_events);
	if (p->win.limit_cpu >= 0)
		pf_ann_int(f, "window.limited_by_cpu", p->win.limit_cpu);
	pf_ann_uint(f, "drain_events", h->drain_events);
	pf_ann_uint(f, "buffer_blocks_closed", bs->blocks_closed);
	pf_ann_uint(f, "buffer_core_races", bs->core_races);
	pf_ann_uint(f, "buffer_entries_written", bs->entries_written);
	return pf_packet_flush(f, w);
}

/* ---- triggers ------------------------------------------------------------------------ */

static void trigger_args(struct pf *f, const struct bt_trigger_fired *t)
{
	pf_ann_str(f, "trigger", t->name);
	pf_ann_str(f, "condition", t->cond);
	pf_ann_uint(f, "value", t->value);
	if (t->threshold_ns)
		pf_ann_uint(f, "threshold_ns", t->threshold_ns);
	if (t->aux >= 0)
		pf_ann_int(f, "syscall_nr", t->aux);
	pf_ann_uint(f, "tid", t->tid);
	pf_ann_uint(f, "pid", t->tgid);
	pf_ann_uint(f, "dump_asked_ns", t->due_ns);
}

/* What caused the dump: an instant on a global "triggers" track, and one on
 * the thread the condition is about (a "trigger" child track of the thread). */
int pf_put_triggers(struct pf *f)
{
	size_t n;
	const struct bt_trigger_fired *t = bt_dump_fired(f->p->d, &n);
	struct pbw *w = &f->pkt;
	char name[320], d[300];
	int r;

	if (!n)
		return 0;
	if ((r = pf_track_descriptor(f, UUID_TRIGGERS, UUID_ROOT, "btrace-bpf: triggers")) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "trigger %s: %s", t[i].name, bt_trigger_describe(&t[i], d, sizeof(d)));
		pf_te_begin(f, t[i].ts_ns, UUID_TRIGGERS, TE_TYPE_INSTANT, name, "btrace");
		trigger_args(f, &t[i]);
		if ((r = pf_packet_flush(f, w)) < 0)
			return r;
		f->st->triggers++;
		if (!t[i].tid)
			continue;
		/* Under the thread's one descriptor: samples, probes or app
		 * events of the same tid may describe it too. */
		if ((r = pf_named_child_track(f, &f->trig_tracks, UUID_TRIG_THREAD(t[i].tid), t[i].tid, t[i].tgid,
					   "trigger")) < 0)
			return r;
		pf_te_begin(f, t[i].ts_ns, UUID_TRIG_THREAD(t[i].tid), TE_TYPE_INSTANT, name, "btrace");
		trigger_args(f, &t[i]);
		if ((r = pf_packet_flush(f, w)) < 0)
			return r;
	}
	return 0;
}
