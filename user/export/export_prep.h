/* SPDX-License-Identifier: MIT */
/* export_prep.h - the pre-pass over a dump that the exporters use (threads,
 * uprobe and application pairing, seq gaps), names, arguments and losses. */
#ifndef BTRACE_EXPORT_PREP_H
#define BTRACE_EXPORT_PREP_H
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "u32map.h"

/* ---- the pre-pass both exporters use ------------------------------------ */

/* Role of each uprobe/uretprobe/usdt event, in event order. Whether a
 * function has an entry probe, a return probe or both comes from the probe
 * table: only where both were asked for can a partner be missing. */
enum bt_uprobe_role {
	BT_UR_ENTRY_ALONE = 0, /* entry whose return is not in the dump */
	BT_UR_BEGIN = 1,       /* entry of a matched pair */
	BT_UR_END = 2,         /* return of a matched pair */
	BT_UR_RETURN_ALONE = 3,/* return whose entry is not in the dump */
	BT_UR_USDT = 4,
	BT_UR_ENTRY_ONLY = 5,  /* entry of a function probed without %return: a call */
	BT_UR_RETURN_ONLY = 6, /* return of a function probed with %return alone, timed:
				* the call is [ts - duration_ns, ts] */
	BT_UR_RETURN_UNTIMED = 7, /* such a return whose entry the kernel did not time
				   * (attached mid-call, deeper than the stamp stack) */
};

struct bt_xthread {
	uint32_t tid;
	uint32_t tgid;      /* 0: unknown */
	uint32_t ppid;      /* parent process from a fork event in the dump, 0: unknown */
	int in_table;       /* named by the dump's task table */
	uint64_t born_ts;   /* its first fork (as the child) or exec in the window, 0: none */
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
	/* function entries/exits (BT_EV_APP_FUNC_*), paired on a stack of their
	 * own per thread (a BTRACE_BEGIN/END mismatch never breaks them) */
	BT_AR_FUNC_ENTRY = 8,       /* entry of a matched call (aend: its exit) */
	BT_AR_FUNC_EXIT = 9,        /* exit of a matched call */
	BT_AR_FUNC_OPEN = 10,       /* entry still open at the thread's last event: closed at the dump's end */
	BT_AR_FUNC_ENTRY_ALONE = 11,/* entry whose exit is lost (a seq gap of the thread, a longjmp) */
	BT_AR_FUNC_EXIT_ALONE = 12, /* exit whose entry is lost (a seq gap, a longjmp): dropped, counted */
};
/* BEGIN_OPEN and FUNC_OPEN: aend is the index of the thread's exit where it
 * ends (closed_at_thread_exit), or of the last event of a thread that died
 * without its exit in the window (closed_at_thread_last_event: p->tends),
 * SIZE_MAX: open at the window's end. A matched END or exit whose abegin is
 * SIZE_MAX ends an enclosing one. */

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

/* A function call or application slice open at the window's start (convert
 * --time, -p, or the dump's own start): drawn from the window's start,
 * marked begun_before_window. Seeded from the events before --time's
 * window, or an exit/END of a thread without gap whose entry/BEGIN the dump
 * does not have. p->encl holds them per thread, outermost first. */
enum bt_encl_end {
	BT_ENCL_EXIT = 0,        /* its exit/END is ev[end] */
	BT_ENCL_OPEN_AT_END = 1, /* still open at the window's end: closed there */
	BT_ENCL_THREAD_EXIT = 2, /* open when its thread exited (ev[end]: its exit, or the last
				  * event of a thread that died without one): closed there */
	BT_ENCL_LOST = 3,        /* its exit fell in a seq gap: not drawn, counted */
};

struct bt_encl {
	uint32_t tid, tgid;
	int32_t app;
	uint8_t func;            /* 1: a function call, 0: an application slice */
	uint8_t end_kind;        /* enum bt_encl_end */
	uint8_t seeded;          /* its entry is before the window (entry_ts), else before the dump */
	const struct bt_ev_app *ev; /* its entry/BEGIN (seeded) or exit/END: name, address */
	uint64_t entry_ts;       /* seeded: when it began */
	uint64_t end_ts;         /* where it is drawn to */
	size_t end;              /* index into ev of its exit/END or of its thread's exit */
	uint32_t order;          /* seeded: depth; else: rank of its exit on the thread */
	uint32_t last_seq;       /* seeded: the thread's seq before the window */
};

/* A thread that died without its exit event in the window (the task
 * table, or its application, says it exited before the window's end; its
 * sched_process_exit overwritten or lost): what it had open closes at its
 * last event, ev[index]. */
struct bt_tend {
	size_t index;
	uint32_t tid;
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
	size_t *aend;      /* for a matched function entry the event index of its exit (SIZE_MAX otherwise) */
	/* application slot of a function exit -> calls above its own it ends
	 * too (left by longjmp or an exception; only exits that end some) */
	struct bt_u32map func_unwound;
	size_t narole;
	struct bt_app_gap *agaps; /* by index */
	size_t nagaps;
	uint64_t *app_gaps, *app_missing; /* [napps]: per-thread seq gaps of each application */
	uint64_t app_unmatched_ends;      /* BT_AR_END_ALONE events */
	uint64_t func_exits_dropped;      /* BT_AR_FUNC_EXIT_ALONE events */
	struct bt_dump_event *own_ev;     /* filtered: the events kept (ev points here) */
	uint64_t win_start;               /* where enclosing calls are drawn from */
	uint64_t win_end;                 /* --time's end (inclusive), else UINT64_MAX */
	struct bt_tend *tends;            /* by index: threads closed at their last event */
	size_t ntends;
	struct bt_encl *encl;             /* enclosing calls and slices */
	size_t nencl, capencl;
	uint64_t encl_lost;               /* BT_ENCL_LOST ones */
	struct bt_u32map func_tids;       /* threads with a function stream in the window (or open at its start) */
	const struct bt_event_filter *pidf; /* convert -p: the filter (its pids), NULL: none */
};

int bt_export_prepare(const struct bt_dump *d, struct bt_export_prep *p);
/* Only the events f keeps (NULL or inactive: all): convert --time, --pid.
 * Seq gaps are the dump's (found on all its events). */
struct bt_event_filter;
int bt_export_prepare_filtered(const struct bt_dump *d, struct bt_export_prep *p, const struct bt_event_filter *f);
void bt_export_prep_free(struct bt_export_prep *p);
const struct bt_xthread *bt_export_thread(const struct bt_export_prep *p, uint32_t tid);
/* Whether ev[i] is a sched_process_exit (else a thread's last event). */
int bt_export_is_exit(const struct bt_export_prep *p, size_t i);
/* Where the frames of thread tid's first CPU sample (at ts) begin in a
 * call chart: the window's start when that sample is all the dump has to
 * draw the calls enclosing the window from (no function stream, the thread
 * not born or exec'd in the window before it), else 0 (at the sample). */
uint64_t bt_export_stack_open_from(const struct bt_export_prep *p, uint32_t tid, uint64_t ts);
/* Name of a uprobe event's function: probe func, spec, or "probe#ID". */
const char *bt_export_probe_name(const struct bt_export_prep *p, uint32_t probe_id, char *buf, size_t len);
/* Name of an application event: its name, or "name#ID" (NULL-safe). */
const char *bt_export_app_name(const struct bt_export_prep *p, int32_t app, uint32_t name_id, char *buf,
			       size_t len);
/* Name of a function entry/exit: its symbol, or its address in hex. */
const char *bt_export_func_name(const struct bt_export_prep *p, int32_t app, const struct bt_ev_app *a, char *buf,
				size_t len);
/* Name of an enclosing call or slice (an END alone carries none). */
const char *bt_export_encl_name(const struct bt_export_prep *p, const struct bt_encl *x, char *buf, size_t len);
/* convert -p: whether thread tid (or its process) was asked for; 1 without -p. */
int bt_export_selected(const struct bt_export_prep *p, uint32_t tid);
/* Sum of the ring-buffer drops of one CPU over all groups. */
uint64_t bt_export_cpu_drops(const struct bt_export_prep *p, uint32_t cpu);
/* Every loss counter of the dump, as "loss.NAME" keys (ring-buffer drops per
 * CPU and group where non-zero, then the totals, then per application
 * "loss.app.PID.*"), in one order for both exporters. */
/* The arguments of a uprobe hit (as many as it recorded) and of an
 * application event, one emit each, named "arg1", "arg2", ...: the same
 * names and bounds in both exporters. */
void bt_export_uprobe_args(const struct bt_ev_uprobe *u, void (*emit)(void *ctx, const char *name, uint64_t v),
			   void *ctx);
void bt_export_app_args(const struct bt_ev_app *a, void (*emit)(void *ctx, const char *name, int64_t v), void *ctx);
void bt_export_losses(const struct bt_export_prep *p, void (*emit)(void *ctx, const char *key, uint64_t v),
		      void *ctx);
#endif
