/* SPDX-License-Identifier: MIT */
/*
 * export.h - `btrace-bpf convert`: a dump as a Perfetto protobuf trace
 * (export_perfetto.c) or a Chrome JSON trace (export_json.c).
 *
 * Both exporters stream: they walk the dump's time-ordered events once and
 * write as they go, so memory beyond the opened dump is bounded by the
 * per-CPU bundles being built, per-thread pairing state, and one small
 * pre-pass table (a byte per uprobe event, the thread list).
 *
 * cmd_convert.c holds the parts both share: the output sink (plain or gzip),
 * the pre-pass (threads and their names, uprobe entry/return pairing, seq
 * gaps), atomic file output and the command line.
 */
#ifndef BTRACE_EXPORT_H
#define BTRACE_EXPORT_H
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"

enum bt_export_format { BT_EXPORT_PERFETTO = 0, BT_EXPORT_JSON = 1 };

struct bt_export_opts {
	int format;             /* enum bt_export_format */
	int gzip;               /* gzip the output (the Perfetto UI opens .gz directly) */
	int compact_sched;      /* perfetto: sched_switch as FtraceEventBundle.compact_sched */
	uint32_t bundle_events; /* perfetto: max events per ftrace bundle packet; 0 = 1000 */
	/* called every few thousand events and once at the end (done == total);
	 * a non-zero return stops the conversion with -EINTR */
	int (*progress)(uint64_t done, uint64_t total, void *ctx);
	void *progress_ctx;
};

struct bt_export_stats {
	uint64_t events;               /* dump events converted */
	uint64_t per_type[BT_EV_MAX];  /* of them, per type */
	uint64_t records;              /* perfetto: TracePackets; json: trace events */
	uint64_t uprobe_slices;        /* matched entry/return pairs */
	uint64_t uprobe_unmatched;     /* entries/returns without partner (instants) */
	uint64_t gaps, missing;        /* seq gaps shown, events missing in them */
	/* application events (in-process tracing, btrace.h) */
	uint64_t app_slices;           /* matched BEGIN/END pairs */
	uint64_t app_open;             /* BEGINs still open at the end of the dump */
	uint64_t app_unmatched;        /* BEGINs/ENDs without partner (instants) */
	uint64_t app_instants, app_counters;
	uint64_t app_gaps, app_missing;/* per-thread seq gaps shown, events missing in them */
	uint64_t app_dropped;          /* events of a thread of another process: not shown */
	uint64_t bytes;                /* output bytes (compressed if gzip) */
	size_t max_pending;            /* largest amount of encoded data held at once */
};

/* ---- output sink: buffered write(2) to an fd, optionally gzip ----------- */
struct bt_sink;
struct bt_sink *bt_sink_new(int fd, int gzip);
/* 0 or the first error (-errno), sticky: later writes do nothing. */
int bt_sink_write(struct bt_sink *s, const void *p, size_t n);
int bt_sink_printf(struct bt_sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int bt_sink_error(const struct bt_sink *s);
uint64_t bt_sink_bytes(const struct bt_sink *s); /* bytes handed to write(2) so far */
/* Flush (and finish the gzip stream), free. Does not close the fd. 0 or
 * -errno; the total bytes written go to *bytes (may be NULL). */
int bt_sink_finish(struct bt_sink *s, uint64_t *bytes);
void bt_sink_free(struct bt_sink *s); /* discard (error path) */

/* ---- the pre-pass both exporters use ------------------------------------ */

/* Role of each uprobe/uretprobe/usdt event, in event order. */
enum bt_uprobe_role {
	BT_UR_ENTRY_ALONE = 0, /* entry whose return is not in the dump */
	BT_UR_BEGIN = 1,       /* entry of a matched pair */
	BT_UR_END = 2,         /* return of a matched pair */
	BT_UR_RETURN_ALONE = 3,/* return whose entry is not in the dump */
	BT_UR_USDT = 4,
};

struct bt_xthread {
	uint32_t tid;
	uint32_t tgid;      /* 0: unknown */
	uint32_t ppid;      /* parent process from a fork event in the dump, 0: unknown */
	int in_table;       /* named by the dump's task table */
	char name[BT_TASK_COMM_LEN];
};

/* Role of each application event (bt_dump_event.app >= 0), in event order. */
enum bt_app_role {
	BT_AR_INSTANT = 0,
	BT_AR_COUNTER = 1,
	BT_AR_BEGIN = 2,       /* BEGIN of a matched pair */
	BT_AR_END = 3,         /* END of a matched pair */
	BT_AR_BEGIN_OPEN = 4,  /* BEGIN still open at the thread's last event: no END in the dump yet */
	BT_AR_BEGIN_ALONE = 5, /* BEGIN whose END is lost (a seq gap of the thread follows) */
	BT_AR_END_ALONE = 6,   /* END whose BEGIN is not in the dump (overwritten or lost) */
	BT_AR_FOREIGN = 7,     /* the tid belongs to another process: not shown (untrusted data) */
};

/* A per-thread seq gap in application events: seqs from_seq.. (missing of
 * them) of thread tid were written by the application but are not in the
 * dump. index: the first event after the gap (into ev); prev_ts: the
 * thread's event before it. */
struct bt_app_gap {
	size_t index;
	uint32_t tid, from_seq;
	int32_t app;
	uint64_t missing, prev_ts;
};

struct bt_export_prep {
	const struct bt_dump *d;
	const struct bt_dump_header *hdr;
	const struct bt_dump_event *ev;
	size_t nev;
	const struct bt_task *tasks;
	size_t ntasks;
	const struct bt_probe_desc *probes;
	size_t nprobes;
	/* every thread of the task table or of any event (tid 0 excluded), by tid */
	struct bt_xthread *threads;
	size_t nthreads;
	/* role of the k-th uprobe-group event (enum bt_uprobe_role) */
	uint8_t *urole;
	size_t nurole;
	/* seq gaps (bt_seq_gaps) and the window analysis */
	struct bt_seq_gap *gaps;
	size_t ngaps;
	struct bt_seq_window win;
	struct bt_seq_cpu *percpu; /* [ncpus] */
	uint64_t first_ts, last_ts;
	/* applications (bt_dump_apps) and their events: role (enum
	 * bt_app_role) of the k-th application event, and for a matched END
	 * the event index of its BEGIN (SIZE_MAX otherwise) */
	const struct bt_dump_app *apps;
	size_t napps;
	uint8_t *arole;
	size_t *abegin;
	size_t narole;
	struct bt_app_gap *agaps; /* by index */
	size_t nagaps;
	uint64_t *app_gaps, *app_missing; /* [napps]: per-thread seq gaps of each application */
	uint64_t app_unmatched_ends;      /* BT_AR_END_ALONE events */
};

int bt_export_prepare(const struct bt_dump *d, struct bt_export_prep *p);
void bt_export_prep_free(struct bt_export_prep *p);
const struct bt_xthread *bt_export_thread(const struct bt_export_prep *p, uint32_t tid);
/* Name of a uprobe event's function: probe func, spec, or "probe#ID". */
const char *bt_export_probe_name(const struct bt_export_prep *p, uint32_t probe_id, char *buf, size_t len);
/* Name of an application event: its name, or "name#ID" (NULL-safe). */
const char *bt_export_app_name(const struct bt_export_prep *p, int32_t app, uint32_t name_id, char *buf,
			       size_t len);
/* Sum of the ring-buffer drops of one CPU over all groups. */
uint64_t bt_export_cpu_drops(const struct bt_export_prep *p, uint32_t cpu);
/* Every loss counter of the dump, as "loss.NAME" keys (ring-buffer drops per
 * CPU and group where non-zero, then the totals, then per application
 * "loss.app.PID.*"), in one order for both exporters. */
void bt_export_losses(const struct bt_export_prep *p, void (*emit)(void *ctx, const char *key, uint64_t v),
		      void *ctx);

/* ---- exporters ----------------------------------------------------------- */
int bt_export_perfetto(const struct bt_export_prep *p, struct bt_sink *out, const struct bt_export_opts *o,
		       struct bt_export_stats *st, char *err, size_t errlen);
int bt_export_json(const struct bt_export_prep *p, struct bt_sink *out, const struct bt_export_opts *o,
		   struct bt_export_stats *st, char *err, size_t errlen);

/* Convert an opened dump to path ("-": standard output). A file is written
 * atomically: a temporary file in the same directory, renamed over path when
 * complete; on any error it is removed and path is untouched. 0 or -errno
 * with a one-line message in err. */
int bt_export_file(const struct bt_dump *d, const char *path, const struct bt_export_opts *o,
		   struct bt_export_stats *st, char *err, size_t errlen);

/* Small open-addressing map uint32 -> uint32 (tid -> index), used by the
 * exporters for per-thread state. Keys are any uint32; values any uint32. */
struct bt_u32map {
	uint32_t *keys, *vals;
	uint8_t *used;
	size_t cap, n;
};
int bt_u32map_put(struct bt_u32map *m, uint32_t key, uint32_t val); /* 0 or -ENOMEM */
int bt_u32map_get(const struct bt_u32map *m, uint32_t key, uint32_t *val); /* 1 found, 0 not */
void bt_u32map_free(struct bt_u32map *m);
#endif
