/* SPDX-License-Identifier: MIT */
/*
 * dump.h - flight-recorder dump files: writer (snapshot of a live buffer) and
 * reader (validating parser used by report/convert). Format: docs/dump-format.md.
 */
#ifndef BTRACE_DUMP_H
#define BTRACE_DUMP_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "btrace_buffer.h"
#include "task_list.h"
#include "probe_table.h" /* the PROB and PMIS sections' rows */
#include "trigger_spec.h"

struct bt_event_hdr; /* events.h */

#define BT_DUMP_MAX_CPUS 4096

/* Application buffers (in-process tracing, app_registry.c) in a dump. */
enum bt_app_counter {
	BT_APPC_BLOCKS_READ,  /* blocks of the application's buffers dumped */
	BT_APPC_BLOCKS_BAD,   /* failed validation (corrupted by the application): dropped */
	BT_APPC_BLOCKS_LOST,  /* overwritten while the dump read them: dropped */
	BT_APPC_BLOCKS_BUSY,  /* a write in flight or never confirmed: not dumped */
	BT_APPC_BLOCKS_EMPTY, /* never used */
	BT_APPC_ENTRIES,      /* events dumped */
	BT_APPC_DROPPED,      /* the application's count: no block free (untrusted) */
	BT_APPC_REJECTED,     /* the application's count: event larger than a block */
	BT_APPC_SKIPPED,      /* the application's count: positions skipped */
	BT_APPC_RACES,        /* the application's count: blocks given back after a race */
	BT_APPC_BUFFERS,      /* buffers dumped (a resize leaves the older one readable for a while) */
	BT_APPC_RESIZES,      /* buffers replaced by a resize */
	BT_APPC_BUFFER_SIZE,  /* bytes of data blocks of the current buffer */
	BT_APPC_NAMES_BAD,    /* malformed name registrations ignored */
	BT_APPC_NAMES_LOST,   /* names interned by the application never received: events show name#ID */
	BT_APPC_BLOCKS_PARTIAL, /* dumped up to an entry never written (a writer mid-write or dead) */
	BT_APPC_EARLY_REFUSED,  /* 1: the buffer it wrote in before registering was refused: those calls lost */
	BT_APPC_MAX,
};
#define BT_APP_EXITED 0x1 /* bt_dump_app.flags: the process had exited at dump time */
/* A function of a traced application and its name (AFUN section). */
struct bt_func_name {
	uint64_t addr;
	const char *name;
};
/* Decoded function entries/exits (BT_EV_APP_FUNC_*) carry name ids from
 * here: id - BT_APP_FUNC_ID_BASE indexes the application's funcs. */
#define BT_APP_FUNC_ID_BASE 0x10000u
struct bt_dump_app {
	uint32_t pid, flags;
	uint64_t registered_ts, exit_ts; /* CLOCK_BOOTTIME; exit_ts 0 if alive */
	char name[16];
	uint64_t counters[BT_APPC_MAX];
	uint32_t nnames;                 /* ids 1..nnames */
	const char (*names)[64];         /* names[id - 1], NUL-terminated */
	const struct bt_func_name *funcs; /* sorted by address (reading; writing: ignored) */
	uint32_t nfuncs;
	uint64_t func_records;           /* function entries/exits decoded (reading) */
	uint64_t func_batches_bad;       /* function batches refused as malformed (reading) */
};
const char *bt_app_counter_name(int i);

/* Where application buffers write themselves (the dump writer's state). */
struct bt_dump_sink;
/* One block of application `app` (index into the table passed later). */
int bt_dump_sink_app_block(struct bt_dump_sink *s, uint32_t app, const struct bt_block_view *blk);
/* The application table, after all their blocks. */
int bt_dump_sink_apps(struct bt_dump_sink *s, const struct bt_dump_app *apps, size_t n);
/* Function names of application `app`, after the table (AFUN). */
int bt_dump_sink_app_funcs(struct bt_dump_sink *s, uint32_t app, const struct bt_func_name *f, size_t n);

/* The stack table (section STKP, dump_stacks.h), after every block: every
 * stack id a stored event names is in it. */
struct bt_dump_stacks;
int bt_dump_sink_stacks(struct bt_dump_sink *s, const struct bt_dump_stacks *st);

/* One row of a dump's trigger table (section TRIG). */
struct bt_dump_trigger {
	char name[BT_TRIG_NAME_LEN];
	char cond[160];
	uint32_t kind;
	uint64_t threshold_ns, after_ns, limit_ns;
	struct bt_trigger_stats st;
	uint64_t unnamed; /* this dump's hits of it not in its named hits (counted only) */
};
/* TRIG payload <-> tables (dump_triggers.c). encode: malloc'd payload in
 * *out, its length returned, -errno on failure. decode: 0, or -EINVAL with
 * one line in err; *t and *f malloc'd. */
int64_t bt_dump_triggers_encode(const struct bt_dump_trigger *t, size_t nt, const struct bt_trigger_fired *f,
				size_t nf, uint8_t **out);
int bt_dump_triggers_decode(const uint8_t *p, uint64_t len, struct bt_dump_trigger **t, size_t *nt,
			    struct bt_trigger_fired **f, size_t *nf, char *err, size_t errlen);

/* Everything a dump holds besides the blocks. The writer fills the header
 * fields it can compute itself (time, host, kernel); the caller provides the
 * rest. */
struct bt_cold;
struct bt_dump_handed;
struct bt_dump_info {
	struct bt_cold *cold;      /* optional: the compressed tier behind buf (cold_tier.h) */
	uint32_t ncpus;
	uint32_t ngroups;          /* BT_GROUP_MAX */
	const uint64_t *rb_drops;  /* [ncpus * ngroups] ring-buffer reservation failures */
	const uint64_t *rb_emitted;/* [ncpus * ngroups] events submitted, may be NULL */
	const struct bt_task *tasks;   size_t ntasks;
	const struct bt_probe_desc *probes; size_t nprobes;
	uint64_t dump_seq;         /* 1, 2, ... per recorder run */
	uint64_t overlaps_dump;    /* dump_seq of the previous dump whose window may overlap, 0 none */
	const char *reason;        /* "signal", "ctl", "trigger", "exit", "interval"; handed: "restart", "upgrade", "recorder-died" */
	uint64_t drain_events;     /* events the drain wrote into the buffer */
	uint64_t drain_rejected;   /* events the buffer rejected */
	uint32_t groups_enabled;   /* bitmask of enum bt_group */
	/* optional: the recorder's triggers and the hit(s) this dump is for (TRIG) */
	const struct bt_dump_trigger *triggers; size_t ntriggers;
	const struct bt_trigger_fired *fired; size_t nfired;
	const struct bt_prog_miss *prog_misses; /* every loaded program; NULL: no PMIS section */
	size_t nprog_misses;
	/* optional: writes application buffers (bt_apps_dump) */
	int (*write_apps)(void *ctx, struct bt_dump_sink *s);
	void *apps_ctx;
	/* optional: writes the stack table (bt_dump_sink_stacks) */
	int (*write_stacks)(void *ctx, struct bt_dump_sink *s);
	void *stacks_ctx;
	/* optional: rewrites each kernel event (decoded, len bytes) before it
	 * is written: the stack ids of stacks reclaimed since (stack_table.h) */
	void (*fix_event)(void *ctx, struct bt_event_hdr *ev, uint32_t len);
	void *fix_ctx;
	/* a dump of a previous recorder's history: what its reading refused
	 * and lost (struct bt_dump_handed, below); NULL for a recorder's own */
	const struct bt_dump_handed *handed;
	/* a recorder's own dump whose window continues across its start: the
	 * previous recorder's newest blocks, before the capture; NULL none */
	const struct bt_dump_prior *prior;
};

/* The history a previous recorder left (the hand-over, user/handover), in
 * a later dump of the recorder after it: the window continues across the
 * restart, the gap counted (dump_format.h, BTD_CNT_PRIOR). */
struct bt_dump_prior {
	const struct bt_capture *kbuf; /* its blocks, checked (bt_handover_dump) */
	uint64_t min_pos;              /* only its blocks at this position or later: the buffer's size */
	uint64_t blocks_left;          /* its blocks before min_pos, left out */
	/* rewrites each of its events: seqs renumbered, stack ids reclaimed */
	void (*fix_event)(void *ctx, struct bt_event_hdr *ev, uint32_t len);
	void *fix_ctx;
	uint32_t reason;               /* enum btd_prior_reason (dump_format.h) */
	int lost_known;
	uint64_t lost;                 /* events its programs took after its newest kept (lost_known) */
	uint64_t newest_ts, resumed_ts;
};

/* What bt_dump_write_capture writes, and where. */
struct bt_dump_args {
	const struct bt_capture *capture; /* the kernel buffer's blocks and counters (bt_capture) */
	const struct bt_dump_info *info;
	const char *dir;                  /* directory, for a generated name; or */
	const char *path;                 /* this path (replaced) */
	int zlevel;                       /* 0: stored, 1..9: zlib */
	char *out_path;                   /* the path written, if not NULL */
	size_t out_len;
	struct bt_read_stats *rst;        /* what was kept and lost, if not NULL */
	char *err;                        /* one line on failure */
	size_t errlen;
	/* if not NULL: the dump's summary (bt_dump_summary), counted from the
	 * body as it is written; NULL in it with a line in summary_err when
	 * the body does not pass the reader's checks */
	struct bt_dump **summary;
	char *summary_err;
	size_t summary_errlen;
};
/* Write a dump of a capture (as bt_dump_write below, which captures `buf`
 * itself). 0 or -errno with a message in a->err. */
int bt_dump_write_capture(const struct bt_dump_args *a);

/* Write a dump of `buf` into directory `dir` (created if missing) as
 * btrace-<host>-<YYYYmmdd-HHMMSS>-<seq>.btd (never replacing a file: -2, -3,
 * ... are appended on a clash), or to `path` if non-NULL (replaced).
 * Atomic: written to a temporary name, fsync'd, renamed; mode 0600. On any
 * error the temporary file is removed and -errno returned with a message in err.
 * zlevel: 0 = no compression, 1..9 zlib level. The path written goes to out_path. */
int bt_dump_write(struct bt_buffer *buf, const struct bt_dump_info *info, const char *dir,
		  const char *path, int zlevel, char *out_path, size_t out_len,
		  struct bt_read_stats *rst, char *err, size_t errlen);

/* Temporaries of bt_dump_write are named BT_DUMP_TMP_PREFIX PID.START.NAME.XXXXXX
 * (START: the writer's start time, /proc/PID/stat field 22). */
#define BT_DUMP_TMP_PREFIX ".btrace-tmp."
/* Remove from dir the temporaries of writers that died mid-dump (their pid
 * is gone or belongs to a process started later): regular files of this
 * user only; never those of a live process. Returns how many, or -errno
 * with a message (a missing dir is 0). */
int bt_dump_clean_stale(const char *dir, char *err, size_t errlen);
/* Start time of a process (clock ticks after boot), 0 if it is gone. */
uint64_t bt_proc_start_time(pid_t pid);

/* ---- reading ---- */
struct bt_dump; /* an opened, validated dump */

struct bt_dump_header {
	uint32_t version, ncpus, ngroups, block_size, nblocks, active, zlevel;
	uint64_t created_realtime_ns, created_boottime_ns; /* wall = boot + (realtime - boottime) */
	uint64_t dump_seq, overlaps_dump, buffer_size, recorder_pid;
	char hostname[64], kernel[128], reason[16];
	/* added with the implementation */
	uint32_t groups_enabled;   /* bitmask of enum bt_group */
	uint32_t compression;      /* 0 none, 1 zlib */
	uint32_t clock_id;         /* CLOCK_BOOTTIME */
	uint64_t file_size;        /* bytes of the file (header + body) */
	uint64_t body_len;         /* stored body bytes */
	uint64_t body_raw_len;     /* uncompressed body bytes */
	uint64_t nblocks_stored;   /* blocks in the dump */
	uint64_t nevents_stored;   /* entries in the dump */
	uint64_t drain_events, drain_rejected; /* from bt_dump_info */
};

/* Open and fully validate a dump. NULL + errno + one-line message on a
 * damaged, truncated or foreign file. */
struct bt_dump *bt_dump_open(const char *path, char *err, size_t errlen);
/* Same from memory (used by the fuzzer). */
struct bt_dump *bt_dump_open_mem(const void *data, size_t len, char *err, size_t errlen);
/* With flags: BT_DUMP_OPEN_NOCRC skips the three crc32 checks (so a fuzzer
 * reaches the section parser; everything else is still validated). */
#define BT_DUMP_OPEN_NOCRC 0x1
/* BT_DUMP_OPEN_FUNC_BATCHES keeps function batches (BT_EV_APP_FUNCS) as
 * they are instead of one event per entry and exit: a reader that folds
 * them as it goes (report --functions) needs no memory per record. */
#define BT_DUMP_OPEN_FUNC_BATCHES 0x2
/* BT_DUMP_OPEN_APP_STREAM (a file only) keeps everything but the
 * applications' blocks, which are checked and described, then read again
 * from the file by each bt_dump_each_event: memory does not grow with the
 * function records (report, report --stats). bt_dump_events() then holds
 * the kernel's events only. */
#define BT_DUMP_OPEN_APP_STREAM 0x4
struct bt_dump *bt_dump_open_flags(const char *path, unsigned flags, char *err, size_t errlen);
struct bt_dump *bt_dump_open_mem_flags(const void *data, size_t len, unsigned flags, char *err,
				       size_t errlen);
void bt_dump_close(struct bt_dump *d);

/* Every event of d in time order (the order bt_dump_events() has), fn
 * called on each until it returns non-zero (returned). Function batches are
 * passed as their entries and exits (decode), or whole; events not in
 * bt_dump_events() live until fn returns. For an APP_STREAM dump the
 * kernel's events are merged with the application blocks read again, one
 * at a time (-errno, message in err, if the file fails or changed). */
struct bt_dump_event;
typedef int (*bt_dump_event_fn)(const struct bt_dump_event *e, void *ctx);
int bt_dump_each_event(const struct bt_dump *d, int decode, bt_dump_event_fn fn, void *ctx, char *err,
		       size_t errlen);
/* The times of the dump's first and last event, application records
 * included; 0 without events. */
void bt_dump_time_span(const struct bt_dump *d, uint64_t *first, uint64_t *last);
/* 1: opened with BT_DUMP_OPEN_APP_STREAM. */
int bt_dump_is_app_stream(const struct bt_dump *d);

const struct bt_dump_header *bt_dump_header(const struct bt_dump *d);
const struct bt_task *bt_dump_tasks(const struct bt_dump *d, size_t *n);      /* sorted by tid */
const struct bt_probe_desc *bt_dump_probes(const struct bt_dump *d, size_t *n);
const uint64_t *bt_dump_rb_drops(const struct bt_dump *d);                   /* [ncpus*ngroups] */
const struct bt_stats *bt_dump_buffer_stats(const struct bt_dump *d);
const struct bt_read_stats *bt_dump_read_stats(const struct bt_dump *d);
/* The cold tier at dump start (LOSS counters); NULL when the recorder had none. */
struct bt_dump_cold {
	uint64_t size, codec, blocks_in, raw_bytes, stored_bytes, blocks_evicted, gaps, blocks_held, cpu_ns;
	uint64_t blocks_raw, budget_ppm, held_back, held_ago_ns, hot_from; /* 0 in dumps before the budget */
	/* 0 in dumps before them: held uncompressed now; the CPU of copy-only
	 * passes; this dump's blocks from the tier, of them uncompressed, and
	 * the tier blocks left out behind a hole in their CPU's chain */
	uint64_t blocks_held_raw, copy_ns, dumped, dumped_raw, blocks_cut;
	int has_parts; /* the five above were written */
	/* What the dump holds from the tier: its blocks (below hot_from) */
	uint64_t dump_blocks, dump_events, first_ts, last_ts; /* ts 0: none */
};
const struct bt_dump_cold *bt_dump_cold(const struct bt_dump *d);
/* A dump of the history a previous recorder left (LOSS counters): what the
 * reading of its memory refused, and what its programs emitted after the
 * newest event kept. NULL for a recorder's own dump. */
struct bt_dump_handed {
	uint64_t blocks_refused, blocks_cut, batches_refused;
	int tail_known;        /* its programs' counters were read at the start after it */
	uint64_t after_newest; /* events they took a seq for after the newest kept (tail_known) */
};
const struct bt_dump_handed *bt_dump_handed(const struct bt_dump *d);
/* A recorder's own dump whose window continues across its start: what it
 * holds of the previous recorder, and the gap between. NULL if none. */
struct bt_dump_restart {
	const char *reason;     /* "restart", "upgrade", "recorder-died" */
	uint64_t newest_ts;     /* the previous recorder's newest event */
	uint64_t resumed_ts;    /* this one's programs attached */
	int lost_known;
	uint64_t lost;          /* events its programs emitted after its newest kept (lost_known) */
	uint64_t blocks, events;/* of the previous recorder, in this dump */
	uint64_t blocks_left;   /* its blocks past this dump's window, left out */
};
const struct bt_dump_restart *bt_dump_restart(const struct bt_dump *d);
struct bt_seq_window;
/* How much of the dump the cold tier gave: its events, and the seconds of
 * the latest continuous window w that only its blocks cover (w's start up
 * to the first event read from the buffer, when the window starts in the
 * tier's). budget_bound: the budget held the tier back within
 * BT_COLD_BOUND_RECENT_NS (2 s) before the dump. */
struct bt_dump_cold_share {
	uint64_t events, window_events; /* from the tier; all retained */
	double share_events;            /* events / window_events */
	double window_s, tier_window_s; /* the latest continuous window; of it, the tier's part */
	double share_compressed;        /* of the tier's blocks in the dump, those compressed (0..1) */
	int budget_bound;
};
void bt_dump_cold_share(const struct bt_dump *d, const struct bt_seq_window *w, struct bt_dump_cold_share *out);

/* Events of the dump in time order across all blocks and CPUs (ties broken by
 * cpu, seq). Each is a pointer to a validated event (size >= its type's size). */
struct bt_dump_event {
	const struct bt_event_hdr *ev;
	uint32_t len;
	uint32_t block_core;
	int32_t app; /* index into bt_dump_apps() for application events, -1 for kernel events */
};
/* The applications (in-process tracing) whose buffers the dump holds. */
const struct bt_dump_app *bt_dump_apps(const struct bt_dump *d, size_t *n);
/* Name of an application event (its app index and name id); NULL if unknown. */
const char *bt_dump_app_event_name(const struct bt_dump *d, int32_t app, uint32_t name_id);
/* The name of the function at addr in application app's function table
 * (AFUN: what its function records call), NULL if it has none. */
const char *bt_dump_app_func_name(const struct bt_dump *d, int32_t app, uint64_t addr);
/* Blocks and events of application buffers in the dump. */
uint64_t bt_dump_app_blocks(const struct bt_dump *d);
const struct bt_dump_event *bt_dump_events(const struct bt_dump *d, size_t *n);

/* The recorder's triggers (none without --trigger) and the hit(s) that
 * caused this dump (none for a dump of another reason). */
const struct bt_dump_trigger *bt_dump_triggers(const struct bt_dump *d, size_t *n);
const struct bt_trigger_fired *bt_dump_fired(const struct bt_dump *d, size_t *n);

/* ring-buffer events submitted [ncpus*ngroups], NULL if the recorder gave none */
const uint64_t *bt_dump_rb_emitted(const struct bt_dump *d);
/* The recorder's BPF programs and the runs the kernel skipped (PMIS
 * section); *n = 0 and NULL for a dump without it (older recorder). */
const struct bt_prog_miss *bt_dump_prog_misses(const struct bt_dump *d, size_t *n);
/* Sum of their misses. */
uint64_t bt_dump_prog_misses_total(const struct bt_dump *d);
/* The stack table (STKP, or STCK from earlier recorders); NULL if the dump has none. */
const struct bt_dump_stacks *bt_dump_stacks(const struct bt_dump *d);
/* Entries skipped because their type is newer than this reader (type >= BT_EV_MAX). */
uint64_t bt_dump_unknown_events(const struct bt_dump *d);

/* The blocks as stored (oldest position first). */
struct bt_dump_block {
	uint64_t pos, prev_pos;
	uint32_t core, used, nentries, complete;
};
const struct bt_dump_block *bt_dump_blocks(const struct bt_dump *d, size_t *n);

/*
 * Sequence analysis: per-CPU seq gaps and the latest continuous window.
 *
 * Per CPU (event hdr.cpu), events are put in seq order (32-bit seqs are
 * unwrapped along time order); a gap is a missing run of seqs between two
 * retained events, `missing` counts its seqs. A CPU is continuous from
 * start_ts up to its newest event, where start_ts is
 *   - the time of the first event after its newest gap, if it has gaps;
 *   - else the time of its oldest retained event, if that event's seq is not 0
 *     (older events existed and were overwritten or lost);
 *   - else (seq 0 retained: the recording started there) no limit.
 * The latest continuous window is [start, last_ts] with last_ts the newest
 * event of the dump and start the latest start_ts over all CPUs that have
 * events (at least the oldest event): inside it no CPU is missing an event
 * that seq numbers can reveal. Events after a CPU's newest retained event
 * cannot be proven missing (see blocks_busy and the ring-buffer drops).
 */
enum bt_seq_limit { BT_SEQ_LIMIT_NONE, BT_SEQ_LIMIT_HISTORY, BT_SEQ_LIMIT_GAP };
struct bt_seq_cpu {
	uint64_t events;              /* retained events of the CPU */
	uint64_t first_ts, last_ts;   /* oldest/newest event time */
	uint32_t first_seq, last_seq; /* lowest/highest seq (after unwrapping) */
	uint64_t gaps, missing;       /* seq gaps and the seqs missing in them */
	uint64_t dups;                /* events whose seq was already seen */
	uint64_t start_ts;            /* continuous from here; 0 with BT_SEQ_LIMIT_NONE */
	int limit;                    /* enum bt_seq_limit: what sets start_ts */
	uint32_t gap_from, gap_to;    /* newest gap: seqs gap_from..gap_to missing */
};
struct bt_seq_window {
	uint64_t events, first_ts, last_ts; /* everything analyzed */
	uint64_t gaps, missing, dups;       /* sums over CPUs */
	uint32_t cpus_with_events;
	int32_t limit_cpu;                  /* CPU whose start_ts starts the window, -1 none */
	uint64_t cont_start_ts;             /* latest continuous window: [cont_start_ts, last_ts] */
	uint64_t cont_events;               /* events with ts >= cont_start_ts */
	int restart_limit;                  /* 1: the window starts where a restart resumed recording */
};
/* ev: time-ordered events (as from bt_dump_events); cpus >= ncpus are ignored.
 * percpu: [ncpus] or NULL. Returns 0 or -ENOMEM. */
int bt_seq_analyze(const struct bt_dump_event *ev, size_t n, uint32_t ncpus, struct bt_seq_window *w,
		   struct bt_seq_cpu *percpu);
/* The same for dump d's events: a window continued across a restart
 * (bt_dump_restart) starts no earlier than where recording resumed. */
int bt_seq_analyze_dump(const struct bt_dump *d, const struct bt_dump_event *ev, size_t n, uint32_t ncpus,
			struct bt_seq_window *w, struct bt_seq_cpu *percpu);

/* The same over seq records kept without their events (a summary, below),
 * in any order (each CPU's are put in time order). */
struct bt_seq_rec {
	uint64_t ts;
	uint32_t seq, cpu;
};
int bt_seq_analyze_recs(const struct bt_seq_rec *r, size_t n, uint32_t ncpus, uint64_t resumed_ts, struct bt_seq_window *w);

/* ---- summaries: what a dump holds, counted without keeping its events ----
 * (the manifest's reading, manifest.c). A summary is a struct bt_dump whose
 * tables are all there (tasks, probes, losses, triggers, applications,
 * blocks) but whose events are counted as they pass, never kept:
 * bt_dump_events() gives none, the stack table and function names are not
 * read. Memory: one section at a time plus 16 bytes per kernel event (the
 * seq analysis), whatever the number of function records. */
#define BT_DUMP_NTYPES 64 /* >= BT_EV_MAX (checked in dump_stream.c) */
#define BT_DUMP_NGROUPS 8 /* >= BT_GROUP_MAX */
struct bt_dump_summary {
	uint64_t by_type[BT_DUMP_NTYPES];   /* events by type; function records by entry/exit */
	uint64_t by_group[BT_DUMP_NGROUPS]; /* kernel events by group (of the dump's CPUs) */
	uint64_t app_events;                /* application events, each function record one */
	struct bt_seq_window w;             /* bt_seq_analyze of the kernel events */
};
/* The summary of a dump file: its body inflated a chunk at a time, every
 * check of bt_dump_open made. NULL + errno + message as bt_dump_open. */
struct bt_dump *bt_dump_open_summary(const char *path, char *err, size_t errlen);
/* The counts of a summary; NULL for a dump opened whole, or a stream's
 * summary before bt_dump_summary_finish. */
const struct bt_dump_summary *bt_dump_summary(const struct bt_dump *d);
/* The seq analysis of a stream's summary (the only step whose memory
 * grows with the kernel events: the recorder runs it once its copies of
 * the buffers are freed). 0 or -ENOMEM; bt_dump_open_summary has done it. */
int bt_dump_summary_finish(struct bt_dump *d);
/* A summary of a body as it is written (the writer's tee, dump_write.c):
 * the raw body bytes in order, then the header once written. _put keeps
 * the first error for _finish, which returns the summary (NULL + message on
 * a body that does not parse) and frees the stream in any case. */
struct bt_dump_stream;
struct bt_dump_stream *bt_dump_stream_new(uint32_t ncpus, uint32_t ngroups);
void bt_dump_stream_put(struct bt_dump_stream *s, const void *p, size_t n);
struct bt_dump *bt_dump_stream_finish(struct bt_dump_stream *s, const void *btd_header, uint64_t file_size,
				      char *err, size_t errlen);
void bt_dump_stream_free(struct bt_dump_stream *s);

/* Every seq gap: index (into ev) of the first event after the gap in seq
 * order, the CPU, the first missing seq and how many are missing. *out is
 * malloc'd (free it), sorted by index. Returns 0 or -ENOMEM. */
struct bt_seq_gap {
	size_t index;
	uint32_t cpu;
	uint32_t from_seq;
	uint64_t missing;
};
int bt_seq_gaps(const struct bt_dump_event *ev, size_t n, uint32_t ncpus, struct bt_seq_gap **out,
		size_t *nout);

/* ---- report (user/report/cmd_report.c) ---- */
/* Print the report of an opened dump to out as `btrace-bpf report` does
 * without filters (stats != 0: as with --stats). Returns 0 or -errno. */
int bt_dump_report(const struct bt_dump *d, int stats, FILE *out);
#endif
