/* SPDX-License-Identifier: MIT */
/*
 * export_perfetto_int.h - what the Perfetto exporter's files share (private
 * to user/export/export_perfetto*.c): the exporter's state (struct pf), the
 * packet sequences, the track uuids, and the writers each file offers the
 * others. export_perfetto.c has the order of the output and the main loop;
 * export_perfetto_packets.c packets, annotations and track descriptors;
 * export_perfetto_meta.c the metadata packets; export_perfetto_ftrace.c the
 * per-CPU FtraceEventBundles and seq gaps; export_perfetto_tracks.c uprobe,
 * application and function events as TrackEvents.
 */
#ifndef BTRACE_EXPORT_PERFETTO_INT_H
#define BTRACE_EXPORT_PERFETTO_INT_H
#include <stddef.h>
#include <stdint.h>
#include "export.h"
#include "event_names.h"
#include "pbwriter.h"
#include "perfetto_proto.h"
#include "string_set.h"

#define SEQ_FTRACE 1
#define SEQ_TRACK 2
/* The interned stacks, the PerfSamples that use them, and every TrackEvent
 * (off-CPU blocks and wakers refer to callstacks too): one sequence, so one
 * interned state. */
#define SEQ_STACKS SEQ_TRACK

/* Track uuids: the tid, CPU or app shifted by 4, 1 + a kind in the low 4
 * bits (one enum, so no two kinds can share a value; never 0). Small
 * numbers: every TrackEvent repeats its track's uuid as a varint. */
enum uuid_kind { UK_ROOT, UK_LOSS, UK_THREAD, UK_APP_THREAD, UK_APP_PROCESS, UK_UPROBES, UK_FUNCS, UK_OFFCPU,
		 UK_CHART, UK_TRIG_THREAD };
#define UUID_OF(kind, low) (((uint64_t)(uint32_t)(low) << 4) | (uint64_t)((kind) + 1))
#define UUID_ROOT UUID_OF(UK_ROOT, 0)
#define UUID_INFO UUID_OF(UK_ROOT, 1)
#define UUID_TRIGGERS UUID_OF(UK_ROOT, 2)
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

enum { PF_ICAT, PF_INAME, PF_IANN, PF_NINTERN };

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
	struct bt_u32map func_depth;    /* tid -> calls open on its functions track (drawn or not) */
	struct bt_u32map func_hidden;   /* tid -> calls hidden in its open depth marker */
	struct bt_u32map app_depth;     /* tid -> application slices open on its "app events" track */
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
	/* interned on the track sequence: categories, event names, debug
	 * annotation names; strings -> iid, and what the open packet adds */
	struct bt_strset istr[PF_NINTERN];
	struct bt_u32map iids[PF_NINTERN]; /* offset in istr -> iid */
	struct pbw idata;
	char *err;
	size_t errlen;
};

static inline const char *pf_comm_of(struct pf *f, uint32_t tid, uint32_t cpu)
{
	return bt_namer_comm(f->nm, tid, cpu);
}

/* export_perfetto_packets.c: packets (a TracePacket in w, written out by
 * pf_packet_flush), debug annotations of the open TrackEvent, TrackEvents and
 * TrackDescriptors */
void pf_packet_begin(struct pf *f, struct pbw *w, uint32_t seq, uint64_t ts);
int pf_packet_flush(struct pf *f, struct pbw *w);
uint64_t pf_intern(struct pf *f, int kind, const char *str);
void pf_intern_free(struct pf *f);
/* an annotation of f's open TrackEvent (f: a struct pf, void for callbacks) */
void pf_ann_uint(void *f, const char *name, uint64_t v);
void pf_ann_int(void *f, const char *name, int64_t v);
void pf_ann_ptr(void *f, const char *name, uint64_t v);
void pf_ann_str(void *f, const char *name, const char *v);
void pf_ann_bool(void *f, const char *name, int v);
void pf_te_begin(struct pf *f, uint64_t ts, uint64_t uuid, int type, const char *name, const char *cat);
int pf_track_descriptor(struct pf *f, uint64_t uuid, uint64_t parent, const char *name);
int pf_named_child_track(struct pf *f, struct bt_u32map *m, uint64_t uuid, uint32_t tid, uint32_t tgid,
			 const char *name);
enum { TRACK_UPROBES, TRACK_APP, TRACK_FUNCS };
int pf_child_track(struct pf *f, uint32_t tid, uint32_t tgid, int kind);

/* export_perfetto_meta.c: what precedes and follows the events */
int pf_write_clock_snapshot(struct pf *f);
int pf_write_system_info(struct pf *f);
int pf_write_process_tree(struct pf *f);
int pf_write_ftrace_stats(struct pf *f, int end);
int pf_write_dump_info(struct pf *f);
int pf_put_triggers(struct pf *f);

/* export_perfetto_ftrace.c: kernel events in per-CPU bundles, seq gaps */
int pf_put_ftrace(struct pf *f, const struct bt_event_hdr *h);
int pf_put_gap(struct pf *f, const struct bt_seq_gap *g, uint64_t ts);
struct pbw *pf_bundle_for(struct pf *f, uint32_t c);
int pf_flush_all(struct pf *f);
void pf_compact_free(struct compact *cs);

/* export_perfetto_tracks.c: uprobe and application events */
int pf_put_uprobe(struct pf *f, const struct bt_event_hdr *h);
int pf_write_app_processes(struct pf *f);
int pf_put_app(struct pf *f, const struct bt_dump_event *de);
int pf_put_app_gap(struct pf *f, const struct bt_app_gap *g, const struct bt_event_hdr *h);
int pf_close_open_funcs(struct pf *f);
int pf_close_thread(struct pf *f, uint32_t tid, uint64_t ts);
int pf_put_enclosing(struct pf *f);
#endif
