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
 * TrackDescriptors and TrackEvents (no interning, so no incremental state).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export.h"
#include "event_names.h"
#include "pbwriter.h"
#include "dump_stacks.h"
#include "export_perfetto_stacks.h"

/* ---- field numbers (perfetto_trace.proto) -------------------------------- */
/* Trace */
#define TRACE_PACKET 1
/* TracePacket */
#define TP_FTRACE_EVENTS 1
#define TP_PROCESS_TREE 2
#define TP_CLOCK_SNAPSHOT 6
#define TP_TIMESTAMP 8
#define TP_TRUSTED_PACKET_SEQUENCE_ID 10
#define TP_TRACK_EVENT 11
#define TP_SEQUENCE_FLAGS 13
#define TP_FTRACE_STATS 34
#define TP_SYSTEM_INFO 45
#define TP_TRACK_DESCRIPTOR 60
#define TP_INTERNED_DATA 12
#define TP_PERF_SAMPLE 66
#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE 2
/* PerfSample */
#define PS_CPU 1
#define PS_PID 2
#define PS_TID 3
#define PS_CALLSTACK_IID 4
/* ClockSnapshot */
#define CS_CLOCKS 1
#define CS_PRIMARY_TRACE_CLOCK 2
#define CLK_CLOCK_ID 1
#define CLK_TIMESTAMP 2
#define BUILTIN_CLOCK_REALTIME 1
#define BUILTIN_CLOCK_BOOTTIME 6
/* SystemInfo, Utsname */
#define SI_UTSNAME 1
#define SI_NUM_CPUS 8
#define UTS_SYSNAME 1
#define UTS_RELEASE 3
#define UTS_MACHINE 4
/* ProcessTree */
#define PT_PROCESSES 1
#define PT_THREADS 2
#define PT_PROC_PID 1
#define PT_PROC_PPID 2
#define PT_PROC_CMDLINE 3
#define PT_PROC_CMDLINE_IS_COMM 9
#define PT_THREAD_TID 1
#define PT_THREAD_NAME 2
#define PT_THREAD_TGID 3
/* FtraceStats, FtraceCpuStats */
#define FS_PHASE 1
#define FS_CPU_STATS 2
#define FS_START_OF_TRACE 1
#define FS_END_OF_TRACE 2
#define FCS_CPU 1
#define FCS_ENTRIES 2
#define FCS_DROPPED_EVENTS 8
#define FCS_READ_EVENTS 9
/* FtraceEventBundle */
#define FB_CPU 1
#define FB_EVENT 2
#define FB_LOST_EVENTS 3
#define FB_COMPACT_SCHED 4
/* FtraceEventBundle.CompactSched */
#define CSCH_SWITCH_TIMESTAMP 1
#define CSCH_SWITCH_PREV_STATE 2
#define CSCH_SWITCH_NEXT_PID 3
#define CSCH_SWITCH_NEXT_PRIO 4
#define CSCH_INTERN_TABLE 5
#define CSCH_SWITCH_NEXT_COMM_INDEX 6
/* FtraceEvent */
#define FE_TIMESTAMP 1
#define FE_PID 2
#define FE_SCHED_SWITCH 4
#define FE_CPU_FREQUENCY 11
#define FE_CPU_IDLE 13
#define FE_SCHED_WAKEUP 17
#define FE_SCHED_WAKING 20
#define FE_SOFTIRQ_ENTRY 24
#define FE_SOFTIRQ_EXIT 25
#define FE_IRQ_HANDLER_ENTRY 36
#define FE_IRQ_HANDLER_EXIT 37
#define FE_SCHED_WAKEUP_NEW 114
#define FE_TASK_RENAME 236
#define FE_SCHED_PROCESS_EXEC 237
#define FE_SCHED_PROCESS_EXIT 238
#define FE_SCHED_PROCESS_FORK 239
#define FE_SYS_ENTER 329
#define FE_SYS_EXIT 330
#define FE_SCHED_MIGRATE_TASK 491
/* SchedSwitchFtraceEvent */
#define SW_PREV_COMM 1
#define SW_PREV_PID 2
#define SW_PREV_PRIO 3
#define SW_PREV_STATE 4
#define SW_NEXT_COMM 5
#define SW_NEXT_PID 6
#define SW_NEXT_PRIO 7
/* SchedWakeup/SchedWaking/SchedWakeupNew FtraceEvent */
#define WK_COMM 1
#define WK_PID 2
#define WK_PRIO 3
#define WK_TARGET_CPU 5
/* SchedMigrateTaskFtraceEvent */
#define MG_COMM 1
#define MG_PID 2
#define MG_ORIG_CPU 4
#define MG_DEST_CPU 5
/* SchedProcessForkFtraceEvent */
#define FK_PARENT_COMM 1
#define FK_PARENT_PID 2
#define FK_CHILD_COMM 3
#define FK_CHILD_PID 4
/* SchedProcessExecFtraceEvent */
#define EX_FILENAME 1
#define EX_PID 2
#define EX_OLD_PID 3
/* SchedProcessExitFtraceEvent */
#define XT_COMM 1
#define XT_PID 2
#define XT_TGID 3
/* TaskRenameFtraceEvent */
#define RN_PID 1
#define RN_OLDCOMM 2
#define RN_NEWCOMM 3
/* IrqHandlerEntry/Exit, SoftirqEntry/Exit */
#define IRQ_IRQ 1
#define IRQ_NAME 2
#define IRQ_RET 2
#define SIRQ_VEC 1
/* CpuFrequency, CpuIdle */
#define PW_STATE 1
#define PW_CPU_ID 2
/* SysEnter, SysExit */
#define SYS_ID 1
#define SYS_RET 2
/* TrackDescriptor, ThreadDescriptor */
#define TD_UUID 1
#define TD_NAME 2
#define TD_PROCESS 3
#define TD_THREAD 4
#define TD_PARENT_UUID 5
#define TD_COUNTER 8
#define THD_PID 1
#define THD_TID 2
#define THD_THREAD_NAME 5
/* ProcessDescriptor */
#define PRD_PID 1
#define PRD_PROCESS_NAME 6
/* TrackEvent */
#define TE_DEBUG_ANNOTATIONS 4
#define TE_TYPE 9
#define TE_TRACK_UUID 11
#define TE_CATEGORIES 22
#define TE_NAME 23
#define TE_COUNTER_VALUE 30
#define TE_TYPE_SLICE_BEGIN 1
#define TE_TYPE_SLICE_END 2
#define TE_TYPE_INSTANT 3
#define TE_TYPE_COUNTER 4
/* DebugAnnotation */
#define DA_BOOL_VALUE 2
#define DA_UINT_VALUE 3
#define DA_INT_VALUE 4
#define DA_STRING_VALUE 6
#define DA_POINTER_VALUE 7
#define DA_NAME 10

#define SEQ_FTRACE 1
#define SEQ_TRACK 2
#define SEQ_STACKS 3 /* interned stacks and the PerfSamples that use them */

/* Track uuids: a kind in the high word (one enum, so no two kinds can
 * share a value), the tid, CPU or app in the low word. */
enum uuid_kind { UK_ROOT, UK_LOSS, UK_THREAD, UK_APP_THREAD, UK_APP_PROCESS, UK_UPROBES, UK_FUNCS, UK_OFFCPU,
		 UK_CHART, UK_TRIG_THREAD };
#define UUID_OF(kind, low) (((0xb7ace000ull + (kind)) << 32) | (uint32_t)(low))
#define UUID_ROOT UUID_OF(UK_ROOT, 0)
#define UUID_INFO (UUID_ROOT | 1)
#define UUID_TRIGGERS (UUID_ROOT | 2)
#define UUID_LOSS(cpu) UUID_OF(UK_LOSS, cpu)
#define UUID_THREAD(tid) UUID_OF(UK_THREAD, tid)
#define UUID_APP_THREAD(tid) UUID_OF(UK_APP_THREAD, tid)
#define UUID_APP_PROCESS(app) UUID_OF(UK_APP_PROCESS, app)
#define UUID_UPROBES(tid) UUID_OF(UK_UPROBES, tid)
#define UUID_FUNCS(tid) UUID_OF(UK_FUNCS, tid)
#define UUID_OFFCPU(tid) UUID_OF(UK_OFFCPU, tid)
#define UUID_CHART(tid) UUID_OF(UK_CHART, tid)
#define UUID_TRIG_THREAD(tid) UUID_OF(UK_TRIG_THREAD, tid)
#define UUID_APP_COUNTER(app, id) ((0xb7adull << 48) | ((uint64_t)(uint32_t)(app) << 32) | (uint32_t)(id))

#define DEFAULT_BUNDLE_EVENTS 1000
#define MAX_PENDING (8u << 20) /* encoded bytes held in per-CPU bundles before all are flushed */
#define PROCTREE_CHUNK 1000    /* threads per ProcessTree packet */
#define PROGRESS_EVERY 16384

struct compact {
	struct pbw ts, state, pid, prio, comm; /* packed arrays (bare varints) */
	uint32_t n;
	uint64_t last_ts;
	char (*intern)[BT_TASK_COMM_LEN];
	uint32_t nintern, capintern;
};

struct cpub {
	struct pbw w;     /* open: Trace.packet > TracePacket > FtraceEventBundle */
	uint32_t n;       /* events in the open bundle (compact ones included) */
	int open;
	int lost;         /* a seq gap precedes events in this bundle */
	struct compact cs;
	/* last sched_switch written for this CPU (full or compact), for compact */
	int have_last;
	uint32_t last_next_tid, last_next_prio;
	uint64_t last_switch_ts;
	uint64_t last_ts;  /* newest event of this CPU so far (gap slice start) */
	int have_ts;
	size_t held;       /* bytes of this bundle counted in pf.pending */
};

struct pf {
	const struct bt_export_prep *p;
	const struct bt_export_opts *o;
	struct bt_sink *out;
	struct bt_export_stats *st;
	struct pbw pkt; /* standalone packets */
	struct cpub *cpu;
	uint32_t ncpus;
	uint32_t bundle_events;
	size_t pending;
	struct bt_namer *nm;
	struct bt_u32map thread_tracks; /* tids with a thread TrackDescriptor */
	struct bt_u32map uprobe_tracks; /* tids with a "uprobes" child track */
	struct bt_u32map app_tracks;    /* tids with an "app events" child track */
	struct bt_u32map func_tracks;   /* tids with a "functions" child track */
	struct bt_u32map func_open;     /* tid -> calls open at the end of the dump, drawn so far */
	uint32_t *app_proc;             /* [napps]: the app whose process track stands for app a's pid */
	struct bt_u32map counter_tracks;/* app << 16 | name id: counter TrackDescriptor written */
	size_t aslot;                   /* next index into p->arole */
	uint8_t *loss_tracks;           /* [ncpus] descriptor written */
	int seq_track_started;
	size_t uslot;                   /* next index into p->urole */
	struct bt_pf_stacks *stacks;    /* NULL: the dump has no stacks */
	uint64_t sample_period;         /* ns between samples of a CPU (call chart) */
	struct bt_u32map chart_tracks;  /* tids with a "call chart" child track */
	struct bt_u32map offcpu_tracks; /* tids with an "off-CPU" child track */
	struct bt_u32map trig_tracks;   /* tids with a "trigger" child track */
	char *err;
	size_t errlen;
};

/* ---- packets ----------------------------------------------------------------- */

static void packet_begin(struct pf *f, struct pbw *w, uint32_t seq, uint64_t ts)
{
	pbw_begin(w, TRACE_PACKET);
	if (ts)
		pbw_uint(w, TP_TIMESTAMP, ts);
	pbw_uint(w, TP_TRUSTED_PACKET_SEQUENCE_ID, seq);
	if (seq == SEQ_TRACK && !f->seq_track_started) {
		pbw_uint(w, TP_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
		f->seq_track_started = 1;
	}
}

/* Close the packet (the outermost open message) and write the buffer out. */
static int packet_flush(struct pf *f, struct pbw *w)
{
	while (w->depth)
		pbw_end(w);
	if (pbw_error(w)) {
		snprintf(f->err, f->errlen, "out of memory encoding the trace");
		return pbw_error(w);
	}
	if (pbw_len(w) > f->st->max_pending)
		f->st->max_pending = pbw_len(w);
	int r = bt_sink_write(f->out, pbw_data(w), pbw_len(w));
	f->st->records++;
	pbw_reset(w);
	if (r < 0)
		snprintf(f->err, f->errlen, "write error: %s", strerror(-r));
	return r;
}

/* ---- debug annotations --------------------------------------------------------- */

static void ann_uint(struct pbw *w, const char *name, uint64_t v)
{
	pbw_begin(w, TE_DEBUG_ANNOTATIONS);
	pbw_string(w, DA_NAME, name);
	pbw_uint(w, DA_UINT_VALUE, v);
	pbw_end(w);
}

static void ann_int(struct pbw *w, const char *name, int64_t v)
{
	pbw_begin(w, TE_DEBUG_ANNOTATIONS);
	pbw_string(w, DA_NAME, name);
	pbw_int(w, DA_INT_VALUE, v);
	pbw_end(w);
}

static void ann_ptr(struct pbw *w, const char *name, uint64_t v)
{
	pbw_begin(w, TE_DEBUG_ANNOTATIONS);
	pbw_string(w, DA_NAME, name);
	pbw_uint(w, DA_POINTER_VALUE, v);
	pbw_end(w);
}

static void ann_str(struct pbw *w, const char *name, const char *v)
{
	pbw_begin(w, TE_DEBUG_ANNOTATIONS);
	pbw_string(w, DA_NAME, name);
	pbw_utf8(w, DA_STRING_VALUE, v, SIZE_MAX);
	pbw_end(w);
}

static void ann_bool(struct pbw *w, const char *name, int v)
{
	pbw_begin(w, TE_DEBUG_ANNOTATIONS);
	pbw_string(w, DA_NAME, name);
	pbw_bool(w, DA_BOOL_VALUE, v);
	pbw_end(w);
}

/* ---- track events ------------------------------------------------------------------ */

static void te_begin(struct pf *f, uint64_t ts, uint64_t uuid, int type, const char *name, const char *cat)
{
	struct pbw *w = &f->pkt;
	packet_begin(f, w, SEQ_TRACK, ts);
	pbw_begin(w, TP_TRACK_EVENT);
	pbw_uint(w, TE_TYPE, (uint64_t)type);
	pbw_uint(w, TE_TRACK_UUID, uuid);
	if (cat)
		pbw_string(w, TE_CATEGORIES, cat);
	if (name)
		pbw_utf8(w, TE_NAME, name, SIZE_MAX);
}

static int track_descriptor(struct pf *f, uint64_t uuid, uint64_t parent, const char *name)
{
	struct pbw *w = &f->pkt;
	packet_begin(f, w, SEQ_TRACK, f->p->first_ts);
	pbw_begin(w, TP_TRACK_DESCRIPTOR);
	pbw_uint(w, TD_UUID, uuid);
	if (parent)
		pbw_uint(w, TD_PARENT_UUID, parent);
	pbw_utf8(w, TD_NAME, name, SIZE_MAX);
	return packet_flush(f, w);
}

/* Once per tid: a track with the thread's ThreadDescriptor. The importer
 * takes a second thread descriptor for a tid (another uuid) as tid reuse and
 * splits the thread in two, so the thread's uprobe and application events go
 * on named child tracks of this one (child_track). No events go on it: it
 * resolves to the thread's own track, where the syscall slices are. */
static int thread_track(struct pf *f, uint32_t tid, uint32_t tgid)
{
	if (bt_u32map_get(&f->thread_tracks, tid, NULL))
		return 0;
	if (bt_u32map_put(&f->thread_tracks, tid, 1) < 0) {
		snprintf(f->err, f->errlen, "out of memory");
		return -ENOMEM;
	}
	const struct bt_xthread *t = bt_export_thread(f->p, tid);
	struct pbw *w = &f->pkt;
	packet_begin(f, w, SEQ_TRACK, f->p->first_ts);
	pbw_begin(w, TP_TRACK_DESCRIPTOR);
	pbw_uint(w, TD_UUID, UUID_THREAD(tid));
	pbw_begin(w, TD_THREAD);
	pbw_int(w, THD_PID, (int32_t)(tgid ? tgid : t && t->tgid ? t->tgid : tid));
	pbw_int(w, THD_TID, (int64_t)tid);
	if (t)
		pbw_utf8(w, THD_THREAD_NAME, t->name, BT_TASK_COMM_LEN);
	pbw_end(w);
	return packet_flush(f, w);
}

/* A named child track of the thread, described once (m: the threads that
 * have it); the thread's own descriptor too, once, whoever asks first. */
static int named_child_track(struct pf *f, struct bt_u32map *m, uint64_t uuid, uint32_t tid, uint32_t tgid,
			     const char *name)
{
	if (bt_u32map_get(m, tid, NULL))
		return 0;
	int r = thread_track(f, tid, tgid);
	if (r < 0)
		return r;
	if (bt_u32map_put(m, tid, 1) < 0) {
		snprintf(f->err, f->errlen, "out of memory");
		return -ENOMEM;
	}
	return track_descriptor(f, uuid, UUID_THREAD(tid), name);
}

/* A track of its own under the thread for its uprobe slices, (app) its
 * application events, or its traced functions: apart from the syscall
 * slices and from each other, a call whose entry or return was lost can
 * never break the others' nesting. */
enum { TRACK_UPROBES, TRACK_APP, TRACK_FUNCS };
static int child_track(struct pf *f, uint32_t tid, uint32_t tgid, int kind)
{
	static const char *const names[] = { "uprobes", "app events", "functions" };
	struct bt_u32map *m = kind == TRACK_APP ? &f->app_tracks : kind == TRACK_FUNCS ? &f->func_tracks : &f->uprobe_tracks;
	uint64_t uuid = kind == TRACK_APP ? UUID_APP_THREAD(tid) : kind == TRACK_FUNCS ? UUID_FUNCS(tid) : UUID_UPROBES(tid);

	return named_child_track(f, m, uuid, tid, tgid, names[kind]);
}

/* ---- metadata packets ---------------------------------------------------------------- */

static int write_clock_snapshot(struct pf *f)
{
	const struct bt_dump_header *h = f->p->hdr;
	struct pbw *w = &f->pkt;
	if (!h->created_boottime_ns || !h->created_realtime_ns)
		return 0;
	packet_begin(f, w, SEQ_FTRACE, h->created_boottime_ns);
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
	return packet_flush(f, w);
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

static int write_system_info(struct pf *f)
{
	const struct bt_dump_header *h = f->p->hdr;
	struct pbw *w = &f->pkt;
	packet_begin(f, w, SEQ_FTRACE, 0);
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
	return packet_flush(f, w);
}

static int write_process_tree(struct pf *f)
{
	const struct bt_export_prep *p = f->p;
	struct pbw *w = &f->pkt;
	uint64_t ts = p->first_ts ? p->first_ts : p->hdr->created_boottime_ns;
	int r = 0;

	/* processes: every known tgid, named after its main thread if known */
	struct bt_u32map seen = { 0 };
	size_t inpkt = 0;
	for (size_t i = 0; i < p->nthreads && r == 0; i++) {
		uint32_t tgid = p->threads[i].tgid;
		if (!tgid || bt_u32map_get(&seen, tgid, NULL))
			continue;
		if (bt_u32map_put(&seen, tgid, 1) < 0) {
			snprintf(f->err, f->errlen, "out of memory");
			r = -ENOMEM;
			break;
		}
		const struct bt_xthread *leader = bt_export_thread(p, tgid);
		if (!inpkt) {
			packet_begin(f, w, SEQ_FTRACE, ts);
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
			r = packet_flush(f, w);
			inpkt = 0;
		}
	}
	bt_u32map_free(&seen);
	for (size_t i = 0; i < p->nthreads && r == 0; i++) {
		const struct bt_xthread *t = &p->threads[i];
		/* The importer files a thread under its tgid, pid 0 (swapper) when
		 * the field is missing: a thread whose process is unknown is left
		 * out (if it ran, sched_switch comms name it). */
		if (!t->tgid)
			continue;
		if (!inpkt) {
			packet_begin(f, w, SEQ_FTRACE, ts);
			pbw_begin(w, TP_PROCESS_TREE);
		}
		pbw_begin(w, PT_THREADS);
		pbw_int(w, PT_THREAD_TID, (int32_t)t->tid);
		pbw_utf8(w, PT_THREAD_NAME, t->name, BT_TASK_COMM_LEN);
		if (t->tgid)
			pbw_int(w, PT_THREAD_TGID, (int32_t)t->tgid);
		pbw_end(w);
		if (++inpkt == PROCTREE_CHUNK) {
			r = packet_flush(f, w);
			inpkt = 0;
		}
	}
	if (inpkt && r == 0)
		r = packet_flush(f, w);
	return r;
}

static int write_ftrace_stats(struct pf *f, int end)
{
	const struct bt_export_prep *p = f->p;
	struct pbw *w = &f->pkt;
	uint64_t ts = end ? p->last_ts : p->first_ts;
	packet_begin(f, w, SEQ_FTRACE, ts ? ts : p->hdr->created_boottime_ns);
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
	return packet_flush(f, w);
}

/* bt_export_losses() callback: one annotation per counter. */
static void ann_loss(void *ctx, const char *key, uint64_t v)
{
	ann_uint(ctx, key, v);
}

/* The "dump info" instant: where the dump came from and every loss counter. */
static int write_dump_info(struct pf *f)
{
	const struct bt_export_prep *p = f->p;
	const struct bt_dump_header *h = p->hdr;
	const struct bt_stats *bs = bt_dump_buffer_stats(p->d);
	struct pbw *w = &f->pkt;

	te_begin(f, p->first_ts ? p->first_ts : h->created_boottime_ns, UUID_INFO, TE_TYPE_INSTANT, "dump info",
		 "btrace");
	ann_str(w, "host", h->hostname);
	ann_str(w, "kernel", h->kernel);
	ann_str(w, "reason", h->reason);
	ann_uint(w, "dump_seq", h->dump_seq);
	if (h->overlaps_dump)
		ann_uint(w, "overlaps_dump", h->overlaps_dump);
	ann_uint(w, "recorder_pid", h->recorder_pid);
	ann_uint(w, "ncpus", h->ncpus);
	ann_uint(w, "groups_enabled", h->groups_enabled);
	ann_uint(w, "buffer_size", h->buffer_size);
	ann_uint(w, "created_realtime_ns", h->created_realtime_ns);
	ann_uint(w, "created_boottime_ns", h->created_boottime_ns);
	ann_uint(w, "events", p->nev);
	bt_export_losses(p, ann_loss, w);
	ann_uint(w, "window.first_ts", p->win.first_ts);
	ann_uint(w, "window.last_ts", p->win.last_ts);
	ann_uint(w, "window.continuous_from_ts", p->win.cont_start_ts);
	ann_uint(w, "window.continuous_events", p->win.cont_events);
	if (p->win.limit_cpu >= 0)
		ann_int(w, "window.limited_by_cpu", p->win.limit_cpu);
	ann_uint(w, "drain_events", h->drain_events);
	ann_uint(w, "buffer_blocks_closed", bs->blocks_closed);
	ann_uint(w, "buffer_core_races", bs->core_races);
	ann_uint(w, "buffer_entries_written", bs->entries_written);
	return packet_flush(f, w);
}

/* ---- ftrace bundles ---------------------------------------------------------------- */

static void compact_reset(struct compact *cs)
{
	pbw_reset(&cs->ts);
	pbw_reset(&cs->state);
	pbw_reset(&cs->pid);
	pbw_reset(&cs->prio);
	pbw_reset(&cs->comm);
	cs->n = 0;
	cs->nintern = 0;
	cs->last_ts = 0;
}

static void compact_free(struct compact *cs)
{
	pbw_free(&cs->ts);
	pbw_free(&cs->state);
	pbw_free(&cs->pid);
	pbw_free(&cs->prio);
	pbw_free(&cs->comm);
	free(cs->intern);
}

static size_t compact_bytes(const struct compact *cs)
{
	return pbw_len(&cs->ts) + pbw_len(&cs->state) + pbw_len(&cs->pid) + pbw_len(&cs->prio) +
	       pbw_len(&cs->comm) + cs->nintern * BT_TASK_COMM_LEN;
}

static int bundle_flush(struct pf *f, uint32_t c)
{
	struct cpub *b = &f->cpu[c];
	struct compact *cs = &b->cs;
	struct pbw *w = &b->w;
	int r;

	if (!b->open)
		return 0;
	if (b->lost)
		pbw_bool(w, FB_LOST_EVENTS, 1);
	if (cs->n) {
		if (pbw_error(&cs->ts) || pbw_error(&cs->state) || pbw_error(&cs->pid) || pbw_error(&cs->prio) ||
		    pbw_error(&cs->comm)) {
			snprintf(f->err, f->errlen, "out of memory encoding the trace");
			return -ENOMEM;
		}
		pbw_begin(w, FB_COMPACT_SCHED);
		for (uint32_t i = 0; i < cs->nintern; i++)
			pbw_utf8(w, CSCH_INTERN_TABLE, cs->intern[i], BT_TASK_COMM_LEN);
		pbw_bytes(w, CSCH_SWITCH_TIMESTAMP, pbw_data(&cs->ts), pbw_len(&cs->ts));
		pbw_bytes(w, CSCH_SWITCH_PREV_STATE, pbw_data(&cs->state), pbw_len(&cs->state));
		pbw_bytes(w, CSCH_SWITCH_NEXT_PID, pbw_data(&cs->pid), pbw_len(&cs->pid));
		pbw_bytes(w, CSCH_SWITCH_NEXT_PRIO, pbw_data(&cs->prio), pbw_len(&cs->prio));
		pbw_bytes(w, CSCH_SWITCH_NEXT_COMM_INDEX, pbw_data(&cs->comm), pbw_len(&cs->comm));
		pbw_end(w);
	}
	if (f->pending > f->st->max_pending)
		f->st->max_pending = f->pending;
	r = packet_flush(f, w);
	f->pending -= b->held;
	b->held = 0;
	compact_reset(cs);
	b->open = 0;
	b->n = 0;
	b->lost = 0;
	return r;
}

static int flush_all(struct pf *f)
{
	for (uint32_t c = 0; c < f->ncpus; c++) {
		int r = bundle_flush(f, c);
		if (r < 0)
			return r;
	}
	return 0;
}

static struct pbw *bundle_for(struct pf *f, uint32_t c)
{
	struct cpub *b = &f->cpu[c];
	if (!b->open) {
		packet_begin(f, &b->w, SEQ_FTRACE, 0);
		pbw_begin(&b->w, TP_FTRACE_EVENTS);
		pbw_uint(&b->w, FB_CPU, c);
		b->open = 1;
	}
	return &b->w;
}

/* After an event went into CPU c's bundle: account, flush when full. */
static int bundle_added(struct pf *f, uint32_t c)
{
	struct cpub *b = &f->cpu[c];
	size_t now = pbw_len(&b->w) + compact_bytes(&b->cs);
	f->pending += now - b->held;
	b->held = now;
	b->n++;
	if (b->n >= f->bundle_events)
		return bundle_flush(f, c);
	if (f->pending > MAX_PENDING)
		return flush_all(f);
	return 0;
}

static void fe_begin(struct pbw *w, const struct bt_event_hdr *h, uint32_t field)
{
	pbw_begin(w, FB_EVENT);
	/* timestamp, pid, then the event: the importer's fast path expects this order */
	pbw_uint(w, FE_TIMESTAMP, h->ts_ns);
	pbw_uint(w, FE_PID, h->tid);
	pbw_begin(w, field);
}

static void fe_end(struct pbw *w)
{
	pbw_end(w); /* the event */
	pbw_end(w); /* FtraceEvent */
}

/* sched_switch prev_state as the 4.14+ tracepoint reports it: one TASK_REPORT
 * bit (the highest, as __task_state_index() picks), 0x80 idle, 0x100
 * (TASK_REPORT_MAX) preempted. The recorder writes 0 for preempted. */
static int64_t tp_prev_state(uint32_t s)
{
	uint32_t bits = s & 0xff;
	if (!bits)
		return 0x100;
	uint32_t top = 1;
	while (bits >>= 1)
		top <<= 1;
	return top;
}

static const char *comm_of(struct pf *f, uint32_t tid, uint32_t cpu)
{
	return bt_namer_comm(f->nm, tid, cpu);
}

static uint32_t intern_comm(struct compact *cs, const char *comm)
{
	char key[BT_TASK_COMM_LEN] = { 0 };
	strncpy(key, comm, sizeof(key) - 1);
	for (uint32_t i = 0; i < cs->nintern; i++)
		if (!memcmp(cs->intern[i], key, sizeof(key)))
			return i;
	if (cs->nintern == cs->capintern) {
		uint32_t cap = cs->capintern ? cs->capintern * 2 : 64;
		void *p = realloc(cs->intern, cap * sizeof(*cs->intern));
		if (!p)
			return UINT32_MAX;
		cs->intern = p;
		cs->capintern = cap;
	}
	memcpy(cs->intern[cs->nintern], key, sizeof(key));
	return cs->nintern++;
}

static int put_sched_switch(struct pf *f, const struct bt_ev_sched_switch *e)
{
	const struct bt_event_hdr *h = &e->h;
	struct cpub *b = &f->cpu[h->cpu];
	struct pbw *w = bundle_for(f, h->cpu);
	int64_t state = tp_prev_state(e->prev_state);

	/* Compact only when the importer infers prev_* right: the CPU's last
	 * switch (written, in time order, no gap since) switched to this prev.
	 * A strictly later time keeps the importer's order (it sorts the compact
	 * and the full events of a CPU by time) unambiguous. */
	if (f->o->compact_sched && b->have_last && b->last_next_tid == e->prev_tid &&
	    b->last_next_prio == e->prev_prio && h->ts_ns > b->last_switch_ts) {
		struct compact *cs = &b->cs;
		uint32_t ci = intern_comm(cs, comm_of(f, e->next_tid, h->cpu));
		if (ci == UINT32_MAX) {
			snprintf(f->err, f->errlen, "out of memory");
			return -ENOMEM;
		}
		pbw_raw_varint(&cs->ts, h->ts_ns - cs->last_ts); /* first one absolute */
		cs->last_ts = h->ts_ns;
		pbw_raw_varint(&cs->state, (uint64_t)state);
		pbw_raw_varint(&cs->pid, (uint64_t)(int64_t)(int32_t)e->next_tid);
		pbw_raw_varint(&cs->prio, e->next_prio);
		pbw_raw_varint(&cs->comm, ci);
		cs->n++;
	} else {
		fe_begin(w, h, FE_SCHED_SWITCH);
		pbw_utf8(w, SW_PREV_COMM, comm_of(f, e->prev_tid, h->cpu), BT_TASK_COMM_LEN);
		pbw_int(w, SW_PREV_PID, (int32_t)e->prev_tid);
		pbw_int(w, SW_PREV_PRIO, e->prev_prio);
		pbw_int(w, SW_PREV_STATE, state);
		pbw_utf8(w, SW_NEXT_COMM, comm_of(f, e->next_tid, h->cpu), BT_TASK_COMM_LEN);
		pbw_int(w, SW_NEXT_PID, (int32_t)e->next_tid);
		pbw_int(w, SW_NEXT_PRIO, e->next_prio);
		fe_end(w);
	}
	b->have_last = 1;
	b->last_switch_ts = h->ts_ns;
	b->last_next_tid = e->next_tid;
	b->last_next_prio = e->next_prio;
	return bundle_added(f, h->cpu);
}

static int put_ftrace(struct pf *f, const struct bt_event_hdr *h)
{
	struct pbw *w;
	char num[16];

	if (h->type == BT_EV_SCHED_SWITCH)
		return put_sched_switch(f, (const void *)h);
	w = bundle_for(f, h->cpu);
	switch (h->type) {
	case BT_EV_SCHED_WAKEUP:
	case BT_EV_SCHED_WAKEUP_NEW:
	case BT_EV_SCHED_WAKING: {
		const struct bt_ev_sched_wakeup *e = (const void *)h;
		fe_begin(w, h, h->type == BT_EV_SCHED_WAKEUP ? FE_SCHED_WAKEUP
			       : h->type == BT_EV_SCHED_WAKING ? FE_SCHED_WAKING : FE_SCHED_WAKEUP_NEW);
		pbw_utf8(w, WK_COMM, comm_of(f, e->tid, e->target_cpu), BT_TASK_COMM_LEN);
		pbw_int(w, WK_PID, (int32_t)e->tid);
		pbw_int(w, WK_PRIO, e->prio);
		pbw_int(w, WK_TARGET_CPU, e->target_cpu);
		break;
	}
	case BT_EV_SCHED_MIGRATE: {
		const struct bt_ev_sched_migrate *e = (const void *)h;
		fe_begin(w, h, FE_SCHED_MIGRATE_TASK);
		pbw_utf8(w, MG_COMM, comm_of(f, e->tid, h->cpu), BT_TASK_COMM_LEN);
		pbw_int(w, MG_PID, (int32_t)e->tid);
		pbw_int(w, MG_ORIG_CPU, e->orig_cpu);
		pbw_int(w, MG_DEST_CPU, e->dest_cpu);
		break;
	}
	case BT_EV_PROCESS_FORK: {
		const struct bt_ev_task *e = (const void *)h;
		fe_begin(w, h, FE_SCHED_PROCESS_FORK);
		pbw_utf8(w, FK_PARENT_COMM, comm_of(f, h->tid, h->cpu), BT_TASK_COMM_LEN);
		pbw_int(w, FK_PARENT_PID, (int32_t)h->tid);
		pbw_utf8(w, FK_CHILD_COMM, e->comm, BT_COMM_LEN);
		pbw_int(w, FK_CHILD_PID, (int32_t)e->tid);
		break;
	}
	case BT_EV_PROCESS_EXEC: {
		const struct bt_ev_task *e = (const void *)h;
		fe_begin(w, h, FE_SCHED_PROCESS_EXEC);
		/* the recorder keeps the new comm, not the path */
		pbw_utf8(w, EX_FILENAME, e->comm, BT_COMM_LEN);
		pbw_int(w, EX_PID, (int32_t)h->tid);
		pbw_int(w, EX_OLD_PID, (int32_t)e->tid);
		break;
	}
	case BT_EV_PROCESS_EXIT: {
		const struct bt_ev_task *e = (const void *)h;
		fe_begin(w, h, FE_SCHED_PROCESS_EXIT);
		pbw_utf8(w, XT_COMM, comm_of(f, e->tid, h->cpu), BT_TASK_COMM_LEN);
		pbw_int(w, XT_PID, (int32_t)e->tid);
		pbw_int(w, XT_TGID, (int32_t)e->tgid);
		break;
	}
	case BT_EV_TASK_RENAME: {
		const struct bt_ev_task *e = (const void *)h;
		fe_begin(w, h, FE_TASK_RENAME);
		pbw_int(w, RN_PID, (int32_t)e->tid);
		pbw_utf8(w, RN_OLDCOMM, comm_of(f, e->tid, h->cpu), BT_TASK_COMM_LEN);
		pbw_utf8(w, RN_NEWCOMM, e->comm, BT_COMM_LEN);
		break;
	}
	case BT_EV_IRQ_ENTRY: {
		const struct bt_ev_irq *e = (const void *)h;
		fe_begin(w, h, FE_IRQ_HANDLER_ENTRY);
		pbw_int(w, IRQ_IRQ, (int32_t)e->irq);
		/* no handler name recorded: the UI shows "IRQ (<number>)" */
		snprintf(num, sizeof(num), "%u", e->irq);
		pbw_string(w, IRQ_NAME, num);
		break;
	}
	case BT_EV_IRQ_EXIT: {
		const struct bt_ev_irq *e = (const void *)h;
		fe_begin(w, h, FE_IRQ_HANDLER_EXIT);
		pbw_int(w, IRQ_IRQ, (int32_t)e->irq);
		pbw_int(w, IRQ_RET, e->ret);
		break;
	}
	case BT_EV_SOFTIRQ_ENTRY:
	case BT_EV_SOFTIRQ_EXIT: {
		const struct bt_ev_irq *e = (const void *)h;
		fe_begin(w, h, h->type == BT_EV_SOFTIRQ_ENTRY ? FE_SOFTIRQ_ENTRY : FE_SOFTIRQ_EXIT);
		pbw_uint(w, SIRQ_VEC, e->irq);
		break;
	}
	case BT_EV_CPU_FREQUENCY:
	case BT_EV_CPU_IDLE: {
		const struct bt_ev_power *e = (const void *)h;
		fe_begin(w, h, h->type == BT_EV_CPU_FREQUENCY ? FE_CPU_FREQUENCY : FE_CPU_IDLE);
		pbw_uint(w, PW_STATE, e->state);
		pbw_uint(w, PW_CPU_ID, e->cpu_id);
		break;
	}
	case BT_EV_SYS_ENTER: {
		const struct bt_ev_syscall *e = (const void *)h;
		fe_begin(w, h, FE_SYS_ENTER);
		pbw_int(w, SYS_ID, e->id);
		break;
	}
	case BT_EV_SYS_EXIT: {
		const struct bt_ev_syscall *e = (const void *)h;
		fe_begin(w, h, FE_SYS_EXIT);
		pbw_int(w, SYS_ID, e->id);
		pbw_int(w, SYS_RET, e->ret);
		break;
	}
	default:
		return 0;
	}
	fe_end(w);
	return bundle_added(f, h->cpu);
}

/* ---- uprobes ------------------------------------------------------------------------ */

static void uprobe_args(struct pbw *w, const struct bt_ev_uprobe *u)
{
	static const char *const names[BT_MAX_UARGS] = { "arg1", "arg2", "arg3", "arg4", "arg5", "arg6" };
	uint32_t n = u->nargs < BT_MAX_UARGS ? u->nargs : BT_MAX_UARGS;
	for (uint32_t i = 0; i < n; i++)
		ann_ptr(w, names[i], u->args[i]);
}

static int put_uprobe(struct pf *f, const struct bt_event_hdr *h)
{
	const struct bt_ev_uprobe *u = (const void *)h;
	struct pbw *w = &f->pkt;
	char nb[32], name[160];
	int role = f->uslot < f->p->nurole ? f->p->urole[f->uslot] : BT_UR_USDT;
	f->uslot++;

	int r = child_track(f, h->tid, h->tgid, TRACK_UPROBES);
	if (r < 0)
		return r;
	const char *fn = bt_export_probe_name(f->p, u->probe_id, nb, sizeof(nb));
	uint64_t uuid = UUID_UPROBES(h->tid);
	switch (role) {
	case BT_UR_BEGIN:
		te_begin(f, h->ts_ns, uuid, TE_TYPE_SLICE_BEGIN, fn, "uprobe");
		uprobe_args(w, u);
		f->st->uprobe_slices++;
		break;
	case BT_UR_END:
		te_begin(f, h->ts_ns, uuid, TE_TYPE_SLICE_END, NULL, "uprobe");
		ann_int(w, "ret", (int64_t)u->ret);
		ann_ptr(w, "ret_hex", u->ret);
		if (u->duration_ns)
			ann_uint(w, "duration_ns", u->duration_ns);
		break;
	case BT_UR_ENTRY_ALONE:
		snprintf(name, sizeof(name), "%s (entry, no return)", fn);
		te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, name, "uprobe");
		uprobe_args(w, u);
		ann_bool(w, "unmatched", 1);
		f->st->uprobe_unmatched++;
		break;
	case BT_UR_RETURN_ALONE:
		snprintf(name, sizeof(name), "%s (return, no entry)", fn);
		te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, name, "uprobe");
		ann_int(w, "ret", (int64_t)u->ret);
		ann_ptr(w, "ret_hex", u->ret);
		if (u->duration_ns)
			ann_uint(w, "duration_ns", u->duration_ns);
		ann_bool(w, "unmatched", 1);
		f->st->uprobe_unmatched++;
		break;
	case BT_UR_ENTRY_ONLY: /* no %return asked for: a call, nothing missing */
		te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, fn, "uprobe");
		uprobe_args(w, u);
		f->st->uprobe_calls++;
		break;
	case BT_UR_RETURN_ONLY:
		/* %return alone: the call, from the duration the return carries
		 * (the importer sorts the earlier begin into place) */
		te_begin(f, h->ts_ns - u->duration_ns, uuid, TE_TYPE_SLICE_BEGIN, fn, "uretprobe");
		ann_uint(w, "probe_id", u->probe_id);
		if ((r = packet_flush(f, w)) < 0)
			return r;
		te_begin(f, h->ts_ns, uuid, TE_TYPE_SLICE_END, NULL, "uretprobe");
		ann_int(w, "ret", (int64_t)u->ret);
		ann_ptr(w, "ret_hex", u->ret);
		ann_uint(w, "duration_ns", u->duration_ns);
		f->st->uprobe_return_slices++;
		break;
	case BT_UR_RETURN_UNTIMED:
		snprintf(name, sizeof(name), "%s (return, not timed)", fn);
		te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, name, "uretprobe");
		ann_int(w, "ret", (int64_t)u->ret);
		ann_ptr(w, "ret_hex", u->ret);
		ann_bool(w, "untimed", 1);
		f->st->uprobe_untimed++;
		break;
	default: /* USDT */
		te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, fn, "usdt");
		uprobe_args(w, u);
		break;
	}
	ann_uint(w, "probe_id", u->probe_id);
	return packet_flush(f, w);
}

/* ---- seq gaps ------------------------------------------------------------------------ */

static int put_gap(struct pf *f, const struct bt_seq_gap *g, uint64_t ts)
{
	struct cpub *b = &f->cpu[g->cpu];
	struct pbw *w = &f->pkt;
	char name[64];
	int r;

	if (!f->loss_tracks[g->cpu]) {
		snprintf(name, sizeof(name), "btrace-bpf: lost events CPU %u", g->cpu);
		r = track_descriptor(f, UUID_LOSS(g->cpu), UUID_ROOT, name);
		if (r < 0)
			return r;
		f->loss_tracks[g->cpu] = 1;
	}
	uint64_t from = b->have_ts ? b->last_ts : ts;
	snprintf(name, sizeof(name), "LOST %" PRIu64 " events", g->missing);
	te_begin(f, from, UUID_LOSS(g->cpu), TE_TYPE_SLICE_BEGIN, name, "btrace");
	ann_uint(w, "cpu", g->cpu);
	ann_uint(w, "first_missing_seq", g->from_seq);
	ann_uint(w, "missing", g->missing);
	if ((r = packet_flush(f, w)) < 0)
		return r;
	te_begin(f, ts, UUID_LOSS(g->cpu), TE_TYPE_SLICE_END, NULL, "btrace");
	if ((r = packet_flush(f, w)) < 0)
		return r;
	/* the importer flags the CPU's data loss; and compact switches must
	 * not infer prev_* across the hole */
	bundle_for(f, g->cpu);
	b->lost = 1;
	b->have_last = 0;
	f->st->gaps++;
	f->st->missing += g->missing;
	return 0;
}

/* ---- triggers ------------------------------------------------------------------------ */

static void trigger_args(struct pbw *w, const struct bt_trigger_fired *t)
{
	ann_str(w, "trigger", t->name);
	ann_str(w, "condition", t->cond);
	ann_uint(w, "value", t->value);
	if (t->threshold_ns)
		ann_uint(w, "threshold_ns", t->threshold_ns);
	if (t->aux >= 0)
		ann_int(w, "syscall_nr", t->aux);
	ann_uint(w, "tid", t->tid);
	ann_uint(w, "pid", t->tgid);
	ann_uint(w, "dump_asked_ns", t->due_ns);
}

/* What caused the dump: an instant on a global "triggers" track, and one on
 * the thread the condition is about (a "trigger" child track of the thread). */
static int put_triggers(struct pf *f)
{
	size_t n;
	const struct bt_trigger_fired *t = bt_dump_fired(f->p->d, &n);
	struct pbw *w = &f->pkt;
	char name[320], d[300];
	int r;

	if (!n)
		return 0;
	if ((r = track_descriptor(f, UUID_TRIGGERS, UUID_ROOT, "btrace-bpf: triggers")) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "trigger %s: %s", t[i].name, bt_trigger_describe(&t[i], d, sizeof(d)));
		te_begin(f, t[i].ts_ns, UUID_TRIGGERS, TE_TYPE_INSTANT, name, "btrace");
		trigger_args(w, &t[i]);
		if ((r = packet_flush(f, w)) < 0)
			return r;
		f->st->triggers++;
		if (!t[i].tid)
			continue;
		/* Under the thread's one descriptor: samples, probes or app
		 * events of the same tid may describe it too. */
		if ((r = named_child_track(f, &f->trig_tracks, UUID_TRIG_THREAD(t[i].tid), t[i].tid, t[i].tgid,
					   "trigger")) < 0)
			return r;
		te_begin(f, t[i].ts_ns, UUID_TRIG_THREAD(t[i].tid), TE_TYPE_INSTANT, name, "btrace");
		trigger_args(w, &t[i]);
		if ((r = packet_flush(f, w)) < 0)
			return r;
	}
	return 0;
}

/* ---- application events (in-process tracing) ------------------------------------------ */

/* A process track per application, named by the application: its counter
 * tracks hang below it. One per pid: the importer takes a second process
 * descriptor for a pid as pid reuse (an application that registered twice,
 * after an exec say, shares the first one's). */
static int write_app_processes(struct pf *f)
{
	const struct bt_export_prep *p = f->p;
	struct pbw *w = &f->pkt;
	struct bt_u32map first = { 0 }; /* pid -> first app of it */
	f->app_proc = calloc(p->napps ? p->napps : 1, sizeof(*f->app_proc));
	if (!f->app_proc) {
		snprintf(f->err, f->errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t a = 0; a < p->napps; a++) {
		uint32_t a0;
		if (!bt_u32map_get(&first, p->apps[a].pid, &a0)) {
			a0 = (uint32_t)a;
			if (bt_u32map_put(&first, p->apps[a].pid, a0) < 0) {
				bt_u32map_free(&first);
				snprintf(f->err, f->errlen, "out of memory");
				return -ENOMEM;
			}
		}
		f->app_proc[a] = a0;
	}
	bt_u32map_free(&first);
	for (size_t a = 0; a < p->napps; a++) {
		const struct bt_dump_app *x = &p->apps[a];
		if (f->app_proc[a] != a)
			continue;
		packet_begin(f, w, SEQ_TRACK, p->first_ts);
		pbw_begin(w, TP_TRACK_DESCRIPTOR);
		pbw_uint(w, TD_UUID, UUID_APP_PROCESS(a));
		pbw_begin(w, TD_PROCESS);
		pbw_int(w, PRD_PID, (int32_t)x->pid);
		pbw_utf8(w, PRD_PROCESS_NAME, x->name, sizeof(x->name));
		pbw_end(w);
		int r = packet_flush(f, w);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The counter track of (application, name), under the application's process. */
static int counter_track(struct pf *f, int32_t app, uint32_t name_id)
{
	uint32_t key = (uint32_t)app << 16 | name_id;
	char nb[32];
	/* name ids are 16-bit (the reader rejects larger tables); a larger,
	 * unknown one gets its descriptor again each time (identical: harmless) */
	int cached = name_id <= 0xffff;
	if (cached && bt_u32map_get(&f->counter_tracks, key, NULL))
		return 0;
	if (cached && bt_u32map_put(&f->counter_tracks, key, 1) < 0) {
		snprintf(f->err, f->errlen, "out of memory");
		return -ENOMEM;
	}
	struct pbw *w = &f->pkt;
	packet_begin(f, w, SEQ_TRACK, f->p->first_ts);
	pbw_begin(w, TP_TRACK_DESCRIPTOR);
	pbw_uint(w, TD_UUID, UUID_APP_COUNTER(app, name_id));
	pbw_uint(w, TD_PARENT_UUID, UUID_APP_PROCESS((size_t)app < f->p->napps ? f->app_proc[app] : (uint32_t)app));
	pbw_utf8(w, TD_NAME, bt_export_app_name(f->p, app, name_id, nb, sizeof(nb)), SIZE_MAX);
	pbw_begin(w, TD_COUNTER);
	pbw_end(w);
	return packet_flush(f, w);
}

static void app_args(struct pbw *w, const struct bt_ev_app *a)
{
	static const char *const names[BT_APP_MAX_ARGS] = { "arg1", "arg2", "arg3", "arg4" };
	uint32_t n = a->nargs < BT_APP_MAX_ARGS ? a->nargs : BT_APP_MAX_ARGS;
	for (uint32_t i = 0; i < n; i++)
		ann_int(w, names[i], a->args[i]);
}

/* A function entry or exit (-finstrument-functions) on the thread's
 * "functions" track: each call a slice, nested as the calls were. A call
 * still open at the end of the dump is closed there (close_open_funcs) and
 * marked open_at_dump_end; an entry whose exit is lost is an instant; an
 * exit whose entry is before the window is not drawn (counted). */
static int put_func(struct pf *f, const struct bt_dump_event *de, int role)
{
	const struct bt_event_hdr *h = de->ev;
	const struct bt_ev_app *a = (const void *)h;
	struct pbw *w = &f->pkt;
	char nb[32], name[160];
	uint64_t uuid = UUID_FUNCS(h->tid);
	int r;

	if (role == BT_AR_FUNC_EXIT_ALONE) {
		f->st->func_exits_dropped++;
		return 0;
	}
	if ((r = child_track(f, h->tid, h->tgid, TRACK_FUNCS)) < 0)
		return r;
	const char *nm = bt_export_func_name(f->p, de->app, a, nb, sizeof(nb));
	switch (role) {
	case BT_AR_FUNC_ENTRY:
	case BT_AR_FUNC_OPEN:
		te_begin(f, h->ts_ns, uuid, TE_TYPE_SLICE_BEGIN, nm, "func");
		ann_uint(w, "addr", (uint64_t)a->args[0]);
		if (role == BT_AR_FUNC_ENTRY) {
			f->st->func_slices++;
			break;
		}
		ann_bool(w, "open_at_dump_end", 1);
		f->st->func_open++;
		uint32_t n = 0;
		bt_u32map_get(&f->func_open, h->tid, &n);
		if (bt_u32map_put(&f->func_open, h->tid, n + 1) < 0) {
			snprintf(f->err, f->errlen, "out of memory");
			return -ENOMEM;
		}
		break;
	case BT_AR_FUNC_EXIT:
		te_begin(f, h->ts_ns, uuid, TE_TYPE_SLICE_END, NULL, "func");
		break;
	default:
		snprintf(name, sizeof(name), "%s (entry, exit lost)", nm);
		te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, name, "func");
		ann_uint(w, "addr", (uint64_t)a->args[0]);
		ann_bool(w, "unmatched", 1);
		f->st->func_unmatched++;
		break;
	}
	return packet_flush(f, w);
}

/* The calls still open at the end of the dump end there: a slice never
 * ended would have no duration in the UI. */
static int close_open_funcs(struct pf *f)
{
	const struct bt_u32map *m = &f->func_open;
	uint64_t end = f->p->last_ts;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		for (uint32_t k = 0; k < m->vals[i]; k++) {
			te_begin(f, end, UUID_FUNCS(m->keys[i]), TE_TYPE_SLICE_END, NULL, "btrace");
			int r = packet_flush(f, &f->pkt);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int put_app(struct pf *f, const struct bt_dump_event *de)
{
	const struct bt_event_hdr *h = de->ev;
	const struct bt_ev_app *a = (const void *)h;
	struct pbw *w = &f->pkt;
	char nb[32], name[128];
	int role = f->aslot < f->p->narole ? f->p->arole[f->aslot] : BT_AR_FOREIGN;
	f->aslot++;

	if (role == BT_AR_FOREIGN) {
		f->st->app_dropped++;
		return 0;
	}
	if (role >= BT_AR_FUNC_ENTRY)
		return put_func(f, de, role);
	const char *nm = bt_export_app_name(f->p, de->app, a->name_id, nb, sizeof(nb));
	uint64_t uuid = UUID_APP_THREAD(h->tid);
	int r;
	if (role == BT_AR_COUNTER) {
		if ((r = counter_track(f, de->app, a->name_id)) < 0)
			return r;
		te_begin(f, h->ts_ns, UUID_APP_COUNTER(de->app, a->name_id), TE_TYPE_COUNTER, NULL, NULL);
		pbw_int(w, TE_COUNTER_VALUE, a->nargs ? a->args[0] : 0);
		f->st->app_counters++;
		return packet_flush(f, w);
	}
	if ((r = child_track(f, h->tid, h->tgid, TRACK_APP)) < 0)
		return r;
	switch (role) {
	case BT_AR_BEGIN:
	case BT_AR_BEGIN_OPEN:
		te_begin(f, h->ts_ns, uuid, TE_TYPE_SLICE_BEGIN, nm, "app");
		app_args(w, a);
		if (role == BT_AR_BEGIN) {
			f->st->app_slices++;
		} else {
			ann_bool(w, "open_at_dump_end", 1);
			f->st->app_open++;
		}
		break;
	case BT_AR_END:
		te_begin(f, h->ts_ns, uuid, TE_TYPE_SLICE_END, NULL, "app");
		app_args(w, a);
		break;
	case BT_AR_BEGIN_ALONE:
		snprintf(name, sizeof(name), "%s (begin, no end)", nm);
		te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, name, "app");
		app_args(w, a);
		ann_bool(w, "unmatched", 1);
		f->st->app_unmatched++;
		break;
	case BT_AR_END_ALONE:
		te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, "end (no begin)", "app");
		app_args(w, a);
		ann_bool(w, "unmatched", 1);
		f->st->app_unmatched++;
		break;
	default:
		te_begin(f, h->ts_ns, uuid, TE_TYPE_INSTANT, nm, "app");
		app_args(w, a);
		f->st->app_instants++;
		break;
	}
	return packet_flush(f, w);
}

/* A per-thread seq gap of application events: an instant on the thread's
 * application track where the thread's events resume. */
static int put_app_gap(struct pf *f, const struct bt_app_gap *g, const struct bt_event_hdr *h)
{
	struct pbw *w = &f->pkt;
	char name[64];
	int r = child_track(f, g->tid, h->tgid, TRACK_APP);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "LOST %" PRIu64 " events", g->missing);
	te_begin(f, h->ts_ns, UUID_APP_THREAD(g->tid), TE_TYPE_INSTANT, name, "btrace");
	ann_uint(w, "tid", g->tid);
	ann_uint(w, "first_missing_seq", g->from_seq);
	ann_uint(w, "missing", g->missing);
	ann_uint(w, "since_ts", g->prev_ts);
	f->st->app_gaps++;
	f->st->app_missing += g->missing;
	return packet_flush(f, w);
}

/* ---- main ------------------------------------------------------------------------------ */

/* ---- call stacks ----------------------------------------------------------------- */

/* The stack table as interned data, first packet of its sequence. */
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
	f->sample_period = s->counters[BT_STKC_SAMPLE_HZ] ? 1000000000ull / s->counters[BT_STKC_SAMPLE_HZ] : 10000000ull;
	struct pbw *w = &f->pkt;
	pbw_begin(w, TRACE_PACKET);
	pbw_uint(w, TP_TIMESTAMP, f->p->first_ts);
	pbw_uint(w, TP_TRUSTED_PACKET_SEQUENCE_ID, SEQ_STACKS);
	pbw_uint(w, TP_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	bt_pf_stacks_interned(f->stacks, w, TP_INTERNED_DATA);
	return packet_flush(f, w);
}

static int chart_emit(void *ctx, uint32_t tid, uint32_t tgid, uint64_t ts, int begin, const char *name)
{
	struct pf *f = ctx;
	int r = named_child_track(f, &f->chart_tracks, UUID_CHART(tid), tid, tgid, "call chart (samples)");
	if (r < 0)
		return r;
	te_begin(f, ts, UUID_CHART(tid), begin ? TE_TYPE_SLICE_BEGIN : TE_TYPE_SLICE_END, begin ? name : NULL,
		 "stacks");
	return packet_flush(f, &f->pkt);
}

/* A CPU sample: a PerfSample (the UI's CPU profile and flame graph) and
 * the thread's call chart; an off-CPU block: a slice on the thread's
 * "off-CPU" track named by where it blocked, the stacks as an argument;
 * a waker: an instant on the woken thread's "off-CPU" track. */
static int put_stacks(struct pf *f, const struct bt_event_hdr *h)
{
	const struct bt_ev_sample *e = (const void *)h;
	struct pbw *w = &f->pkt;
	int r;

	if (!f->stacks)
		return 0;
	if (h->type == BT_EV_CPU_SAMPLE) {
		uint64_t iid = bt_pf_stacks_iid(f->stacks, e->kstack, e->ustack);
		if (!iid)
			return 0;
		pbw_begin(w, TRACE_PACKET);
		pbw_uint(w, TP_TIMESTAMP, h->ts_ns);
		pbw_uint(w, TP_TRUSTED_PACKET_SEQUENCE_ID, SEQ_STACKS);
		pbw_uint(w, TP_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
		pbw_begin(w, TP_PERF_SAMPLE);
		pbw_uint(w, PS_CPU, h->cpu);
		pbw_uint(w, PS_PID, h->tgid);
		pbw_uint(w, PS_TID, h->tid);
		pbw_uint(w, PS_CALLSTACK_IID, iid);
		if ((r = packet_flush(f, w)) < 0)
			return r;
		return bt_pf_chart_sample(f->stacks, h->tid, h->tgid, h->ts_ns, e->kstack, e->ustack, f->sample_period,
					  chart_emit, f);
	}
	uint32_t tid = h->type == BT_EV_WAKER ? ((const struct bt_ev_waker *)h)->wakee : h->tid;
	uint32_t tgid = h->type == BT_EV_WAKER ? 0 : h->tgid;
	if ((r = named_child_track(f, &f->offcpu_tracks, UUID_OFFCPU(tid), tid, tgid, "off-CPU (stacks)")) < 0)
		return r;
	char *text = bt_pf_stacks_text(f->stacks, e->kstack, e->ustack), name[200];
	if (h->type == BT_EV_OFFCPU) {
		const struct bt_ev_offcpu *o = (const void *)h;
		uint64_t from = o->offcpu_ns < h->ts_ns ? h->ts_ns - o->offcpu_ns : 0;
		snprintf(name, sizeof(name), "blocked in %s", bt_pf_stacks_leaf(f->stacks, e->kstack, e->ustack));
		te_begin(f, from, UUID_OFFCPU(tid), TE_TYPE_SLICE_BEGIN, name, "stacks");
		ann_str(w, "stack", text ? text : "");
		if ((r = packet_flush(f, w)) < 0)
			goto out;
		te_begin(f, h->ts_ns, UUID_OFFCPU(tid), TE_TYPE_SLICE_END, NULL, "stacks");
	} else {
		snprintf(name, sizeof(name), "woken by %s %u in %s", comm_of(f, h->tid, h->cpu), h->tid,
			 bt_pf_stacks_leaf(f->stacks, e->kstack, e->ustack));
		te_begin(f, h->ts_ns, UUID_OFFCPU(tid), TE_TYPE_INSTANT, name, "stacks");
		ann_uint(w, "waker_tid", h->tid);
		ann_str(w, "waker_stack", text ? text : "");
	}
	r = packet_flush(f, w);
out:
	free(text);
	return r;
}

static int is_uprobe(uint32_t t)
{
	return t == BT_EV_UPROBE_ENTRY || t == BT_EV_UPROBE_RETURN || t == BT_EV_USDT;
}

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

	if ((r = write_clock_snapshot(&f)) < 0 || (r = write_system_info(&f)) < 0 ||
	    (r = write_process_tree(&f)) < 0 || (r = write_ftrace_stats(&f, 0)) < 0 ||
	    (r = track_descriptor(&f, UUID_ROOT, 0, "btrace-bpf")) < 0 ||
	    (r = track_descriptor(&f, UUID_INFO, UUID_ROOT, "btrace-bpf: dump")) < 0 || (r = write_dump_info(&f)) < 0 ||
	    (r = write_app_processes(&f)) < 0 || (r = put_triggers(&f)) < 0 || (r = write_interned_stacks(&f)) < 0)
		goto out;

	size_t gi = 0, agi = 0;
	for (size_t i = 0; i < p->nev; i++) {
		const struct bt_event_hdr *h = p->ev[i].ev;
		if (o->progress && i % PROGRESS_EVERY == 0 && o->progress(i, p->nev, o->progress_ctx)) {
			r = -EINTR;
			snprintf(err, errlen, "interrupted");
			goto out;
		}
		while (gi < p->ngaps && p->gaps[gi].index < i)
			gi++;
		for (; gi < p->ngaps && p->gaps[gi].index == i; gi++)
			if (p->gaps[gi].cpu < f.ncpus && (r = put_gap(&f, &p->gaps[gi], h->ts_ns)) < 0)
				goto out;
		if (p->ev[i].app >= 0) {
			/* application events: their cpu is only where the
			 * thread ran, their seq the thread's */
			for (; agi < p->nagaps && p->agaps[agi].index == i; agi++)
				if ((r = put_app_gap(&f, &p->agaps[agi], h)) < 0)
					goto out;
			if ((r = put_app(&f, &p->ev[i])) < 0)
				goto out;
			f.st->events++;
			if (h->type < BT_EV_MAX)
				f.st->per_type[h->type]++;
			continue;
		}
		if (h->type >= BT_EV_MAX || h->cpu >= f.ncpus)
			continue;
		if (is_uprobe(h->type))
			r = put_uprobe(&f, h);
		else if (h->type == BT_EV_CPU_SAMPLE || h->type == BT_EV_OFFCPU || h->type == BT_EV_WAKER)
			r = put_stacks(&f, h);
		else
			r = put_ftrace(&f, h);
		if (r < 0)
			goto out;
		bt_namer_apply(f.nm, h, p->ev[i].len);
		f.cpu[h->cpu].last_ts = h->ts_ns;
		f.cpu[h->cpu].have_ts = 1;
		f.st->events++;
		f.st->per_type[h->type]++;
	}
	if (f.stacks && (r = bt_pf_chart_finish(f.stacks, f.sample_period, chart_emit, &f)) < 0)
		goto out;
	if ((r = close_open_funcs(&f)) < 0 || (r = flush_all(&f)) < 0 || (r = write_ftrace_stats(&f, 1)) < 0)
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
			compact_free(&f.cpu[c].cs);
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
	bt_u32map_free(&f.func_open);
	free(f.app_proc);
	bt_u32map_free(&f.counter_tracks);
	bt_u32map_free(&f.chart_tracks);
	bt_u32map_free(&f.offcpu_tracks);
	bt_u32map_free(&f.trig_tracks);
	bt_pf_stacks_free(f.stacks);
	return r;
}
