/* SPDX-License-Identifier: MIT */
/*
 * export.h - `btrace-bpf convert`: a dump as a Perfetto protobuf trace
 * (export_perfetto.c), a Chrome JSON trace (export_json.c) or a pprof
 * profile of its call stacks (export_pprof.c).
 *
 * Both exporters stream: they walk the dump's time-ordered events once and
 * write as they go, so memory beyond the opened dump is bounded by the
 * per-CPU bundles being built, per-thread pairing state, and one small
 * pre-pass table (a byte per uprobe event, the thread list).
 *
 * What both share: the output sink (sink.h: plain or gzip) and the pre-pass
 * (export_prep.h: threads and their names, uprobe entry/return pairing, seq
 * gaps, names, losses). export_file.c runs one to a file; cmd_convert.c is
 * the command line.
 */
#ifndef BTRACE_EXPORT_H
#define BTRACE_EXPORT_H
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "sink.h"
#include "export_prep.h"

enum bt_export_format { BT_EXPORT_PERFETTO = 0, BT_EXPORT_JSON = 1, BT_EXPORT_PPROF = 2 };

struct bt_event_filter;
struct bt_export_opts {
	int format;             /* enum bt_export_format */
	int gzip;               /* gzip the output (the Perfetto UI opens .gz directly) */
	int compact_sched;      /* perfetto: sched_switch as FtraceEventBundle.compact_sched */
	uint32_t bundle_events; /* perfetto: max events per ftrace bundle packet; 0 = 1000 */
	int offcpu;             /* pprof: the off-CPU blocks (time per stack) instead of the CPU samples */
	int process_root;       /* pprof: a root frame per process, "NAME (PID)" */
	uint64_t json_max;      /* json: the size past which a window that fits is worked out
				 * (0: BT_JSON_OPEN_MAX; tests lower it) */
	const struct bt_event_filter *filter; /* --time, --pid (event_filter.h); NULL: every event */
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
	uint64_t uprobe_calls;         /* entries of functions probed without %return (instants) */
	uint64_t uprobe_return_slices; /* returns of %return-only probes, as slices from their duration */
	uint64_t uprobe_untimed;       /* such returns without a duration (instants) */
	uint64_t gaps, missing;        /* seq gaps shown, events missing in them */
	/* application events (in-process tracing, btrace.h) */
	uint64_t app_slices;           /* matched BEGIN/END pairs */
	uint64_t app_open;             /* BEGINs still open at the end of the dump */
	uint64_t app_unmatched;        /* BEGINs/ENDs without partner (instants) */
	uint64_t app_instants, app_counters;
	uint64_t app_gaps, app_missing;/* per-thread seq gaps shown, events missing in them */
	uint64_t func_slices;          /* matched function entry/exit pairs */
	uint64_t func_open;            /* calls open at the end of the dump: closed there, marked */
	uint64_t func_unmatched;       /* entries whose exit is lost (instants) */
	uint64_t func_exits_dropped;   /* exits whose entry is lost (a seq gap, a longjmp): not drawn */
	uint64_t encl_funcs, encl_apps;/* calls / app slices open at the window's start, drawn from it */
	uint64_t encl_lost;            /* such ones whose end fell in a seq gap: not drawn */
	uint64_t encl_frames;          /* call chart (JSON: sample) frames of a thread's first sample drawn
					* from the window's start (no function stream to draw them from) */
	uint64_t closed_at_exit;       /* calls and app slices open at their thread's exit, closed there */
	uint64_t closed_at_last;       /* such open on a thread that died without its exit in the
					* window: closed at its last event */
	uint64_t func_too_deep;        /* perfetto: calls below 511 open ones, in a depth marker slice */
	uint64_t samples_no_stack;     /* CPU samples whose stack is lost or missing (labelled) */
	uint64_t app_dropped;          /* events of a thread of another process: not shown */
	uint64_t triggers;             /* trigger hits marked (the hit that caused the dump) */
	uint64_t bytes;                /* output bytes (compressed if gzip) */
	uint64_t raw_bytes;            /* output bytes before compression (what a reader holds) */
	/* json past json_max: the latest boot time (ns) from which the output
	 * would fit (--time @T.., to the last event at json_last_ns), and its
	 * estimated bytes; 0: none found */
	uint64_t json_fit_from_ns, json_fit_bytes, json_last_ns;
	size_t max_pending;            /* largest amount of encoded data held at once */
};

/* The largest JSON text a browser opens: V8's longest string is ~512 MiB
 * (2^29 - 24 characters); Chrome's and Perfetto's UIs read the file as one. */
#define BT_JSON_OPEN_MAX (512ull << 20)

/* st->json_fit_from_ns as convert --time's argument, "@SECONDS.FRACTION.."
 * (rounded up to the microsecond: never a larger window); "" without one. */
void bt_export_json_fit_arg(const struct bt_export_stats *st, char *buf, size_t len);

/* ---- exporters ----------------------------------------------------------- */
int bt_export_perfetto(const struct bt_export_prep *p, struct bt_sink *out, const struct bt_export_opts *o,
		       struct bt_export_stats *st, char *err, size_t errlen);
int bt_export_json(const struct bt_export_prep *p, struct bt_sink *out, const struct bt_export_opts *o,
		   struct bt_export_stats *st, char *err, size_t errlen);
/* pprof (profile.proto): give it a gzip sink, as pprof readers expect */
int bt_export_pprof(const struct bt_export_prep *p, struct bt_sink *out, const struct bt_export_opts *o,
		    struct bt_export_stats *st, char *err, size_t errlen);

/* Convert an opened dump to path ("-": standard output). A file is written
 * atomically: a temporary file in the same directory, renamed over path when
 * complete; on any error it is removed and path is untouched. 0 or -errno
 * with a one-line message in err. */
int bt_export_file(const struct bt_dump *d, const char *path, const struct bt_export_opts *o,
		   struct bt_export_stats *st, char *err, size_t errlen);

#endif
