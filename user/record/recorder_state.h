/* SPDX-License-Identifier: MIT */
/*
 * recorder_state.h - the state a running `btrace-bpf record` shares among
 * its parts: the options (cmd_record.c fills them) and struct recorder,
 * which recorder.c builds and its parts (recorder_dumps.c, record_ctl.c,
 * record_triggers.c, cold_pump.c, dump_capture.c) use. Declares no
 * function: a part includes this, not the header of the file that
 * composes it (recorder.h), so no two files include each other's headers.
 */
#ifndef BTRACE_RECORDER_STATE_H
#define BTRACE_RECORDER_STATE_H
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "events.h"
#include "trigger_spec.h"
#include "handover.h"

struct bt_buffer;
struct bt_cold;
struct bt_cold_pump;
struct bt_loader;
struct bt_uprobes;
struct bt_task_table;
struct bt_ctl_server;
struct bt_apps;
struct bt_triggers;
struct bt_dump_mgmt;
struct bt_unwind_cache;

/* Options whose values are checked when recording starts (sizes against
 * the machine, paths, processes): their errors name the option and, when
 * --config FILE gave it, FILE:LINE (record_checks.c). */
enum record_key {
	RK_BUFFER_SIZE,
	RK_MAX_SIZE,
	RK_BLOCK_SIZE,
	RK_ACTIVE_BLOCKS,
	RK_OUTPUT_DIR,
	RK_PID,
	RK_CTL,
	RK_APP_BUFFER_SIZE,
	RK_APP_BLOCK_SIZE,
	RK_MAX_APPS,
	RK_MAX
};

struct record_opts {
	uint64_t buffer_size;
	uint64_t block_size;
	uint64_t active_blocks;
	const char *output_dir;
	uint32_t groups;
	uint32_t filter_tgid;
	char filter_comm[BT_COMM_LEN];
	uint64_t duration_ns;
	int verbose;
	int final_dump;
	int zlevel;
	uint64_t ring_size;
	int waking;                   /* --waking */
	/* call stacks */
	uint32_t sample_hz;           /* --sample; 0 off */
	int stacks_switch;            /* --stacks switch */
	int stacks_wakeup;            /* --stacks wakeup */
	uint64_t offcpu_min_ns;       /* --offcpu-min */
	uint32_t max_stacks;          /* --max-stacks */
	int ustack;                   /* --ustack */
	char *debug_dirs;             /* --debug-dir, colon-separated; NULL: none */
	int no_source_lines;          /* --no-source-lines */
	int no_python_frames;         /* --no-python-frames */
	uint64_t unwind_mem;          /* --unwind-mem; 0: frame pointers only */
	const char *unwind_cache;     /* --unwind-cache; NULL: none */
	uint64_t symbol_cache;        /* --symbol-cache: bytes of loaded symbols kept; 0 default */
	const char **uspecs, **usdts; /* -u, -U */
	size_t nuspecs, nusdts;
	int uargs;                    /* --uargs; -1: default (6) */
	/* control and automatic dumps */
	const char *ctl_path;         /* --ctl; NULL: /run/btrace-bpf/PID.sock */
	int no_ctl;
	uint64_t max_size;            /* --max-size: largest `ctl resize` */
	uint64_t dump_every_ns;       /* --dump-every */
	uint64_t max_dumps;           /* --max-dumps: files kept, oldest removed */
	uint64_t max_dump_bytes;      /* --max-dump-bytes: bytes kept, oldest removed */
	uint64_t keep_free;           /* --keep-free; BT_KEEP_FREE_AUTO by default */
	const char *on_dump;          /* --on-dump CMD */
	uint64_t on_dump_timeout_ns;  /* --on-dump-timeout */
	const char *trigger_spec;     /* --trigger-uprobe */
	uint64_t trigger_delay_ns;    /* --trigger-delay */
	uint64_t min_dump_interval_ns;/* rate limit of automatic dumps */
	struct bt_trigger_spec *triggers; /* --trigger, parsed */
	size_t ntriggers;
	/* in-process tracing (libbtrace applications) */
	uint64_t app_buffer_size;     /* --app-buffer-size */
	uint64_t app_block_size;      /* --app-block-size */
	uint32_t max_apps;            /* --max-apps */
	int no_apps;                  /* --no-apps */
	/* the compressed cold tier (user/coldtier) */
	uint32_t cold_pct;            /* --cold-tier: % of --buffer-size it gets; 0 off */
	int cold_given;               /* --cold-tier given: a tier that cannot start is an error */
	int cold_codec;               /* --cold-codec: enum bt_codec */
	int cold_level;               /* --cold-codec NAME:LEVEL */
	uint32_t cold_cpu_ppm;        /* --cold-cpu: the compressor's share of one CPU, ppm; 0 unbounded */
	uint32_t cold_group;          /* --cold-group: blocks per compressed group; 0 the tier's default */
	int resume_fd;                /* --resume-fd: the buffer's memfd handed by a parent or an exec; -1 none */
	/* Where each checked option was given: "FILE:LINE" of --config
	 * (malloc'd), NULL for the command line. */
	char *where[RK_MAX];
	char **uwhere, **udwhere;     /* of each -u (uprobe triggers' too), -U */
	char **twhere;                /* of each --trigger */
};

/* Trigger hits one dump is for: named (the first started it, the others
 * were merged into it), and more merged hits of each trigger only counted. */
#define RECORDER_HITS 64
struct bt_apps_capture;
struct recorder_hits {
	struct bt_trigger_fired f[RECORDER_HITS];
	size_t n;
	uint64_t unnamed[BT_TRIG_MAX];
	/* The application buffers copied when the first hit came, for the
	 * dump (which owns it once taken); NULL: copied when the dump starts. */
	struct bt_apps_capture *apps;
	uint64_t apps_ns; /* when (CLOCK_BOOTTIME, as the hits' ts_ns) */
	uint64_t apps_t0; /* when the copy began */
};

/* The stack table goes into the handed memory this often (seconds): a
 * start after a death names the stacks of events drained before it. */
#define RECORDER_STACKS_SAVE_S 2

struct recorder {
	const struct record_opts *o;
	struct bt_buffer *buf;
	struct bt_handover *handover;    /* NULL: the buffer is private memory (handover.h) */
	struct bt_ho_found ho_found;     /* what a previous recorder left: dumped at start, then freed */
	uint64_t start_boot_ns;          /* CLOCK_BOOTTIME at start: the hand-over's gap ends there */
	pthread_t ho_thread;             /* writes ho_found's dump (handed_thread) */
	char ho_summary[4864];            /* what it kept and lost, for status (under lock) */
	int ho_thread_on;
	/* ho_found's blocks after its dump, joined to later dumps while they
	 * fit in the buffer's size (handover_prior.c); set once under lock by
	 * the hand-over's thread, freed by the dump that finds none fits */
	struct bt_ho_prior *prior;
	uint64_t resumed_boot_ns;        /* CLOCK_BOOTTIME when the programs were attached */
	/* the stack table's saves into the handed memory, every
	 * RECORDER_STACKS_SAVE_S (under lock) */
	uint32_t stacks_saved;           /* stacks in the last one */
	uint64_t stacks_save_ns, stacks_save_failed;
	/* ctl upgrade: stop without the final dump, then exec exe_path on the
	 * same memfd (--resume-fd): the next binary dumps it ("upgrade") */
	_Atomic int exec_requested;
	char exe_path[4096];              /* this binary at start (/proc/self/exe) */
	struct bt_cold *cold;            /* NULL: no cold tier */
	struct bt_cold_pump *cold_pump;  /* its compressor thread */
	struct bt_loader *loader;
	struct bt_uprobes *uprobes; /* NULL without -u/-U */
	struct bt_task_table *tasks;
	struct bt_apps *apps;       /* NULL: no in-process tracing */
	struct bt_stack_table *stacks;   /* NULL: no stacks recorded */
	struct bt_symbolizer *symbolizer; /* under dump_serial: names frames at dump time */
	struct bt_unwinder *unwinder;    /* NULL: user stacks by frame pointers */
	struct bt_unwind_cache *unwind_cache; /* the unwinder's (it closes it); NULL: none */
	uint32_t ncpus;

	/* dump thread; fields below under lock */
	pthread_t dump_thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int pending;         /* a dump was asked for */
	const char *reason;  /* of the pending dump */
	int quit;            /* write what is pending, then exit */
	int final_failed;    /* the last "exit" dump failed */
	uint64_t requests_merged; /* requests that found a dump pending */
	/* What status shows, also under lock (written by the dump writer, so
	 * status never waits for a dump to finish). */
	uint64_t ndumps, nfailed;

	/* dump thread only */
	uint64_t last_seq;   /* dump_seq of the last dump written, 0 none */
	uint64_t last_bytes; /* bytes_written + padding_bytes at that dump */

	/* any thread */
	pthread_mutex_t dump_serial; /* one dump at a time: dump thread and ctl */
	/* The buffer's memory: a dump's copy of it (dump_capture_take) and a
	 * resize swapping it exclude each other; the rest of a dump (the
	 * cold tier's read, compression, writing) works on the copy, so a
	 * resize waits for the copy only, never for the dump. Taken inside
	 * dump_serial when both are held. */
	pthread_mutex_t buf_swap;
	struct bt_ctl_server *ctl;
	uint64_t start_ns;
	_Atomic uint64_t rate;       /* events/s over the last second */
	char last_path[4096];        /* under dump_serial and lock */
	uint64_t nskipped;           /* under dump_serial and lock: not written, no space (dump_mgmt.c) */
	struct bt_dump_mgmt *mgmt;   /* under dump_serial: quota, space, manifests, --on-dump */

	/* triggers */
	uint32_t *trigger_ids;       /* (probe id, trigger index) pairs of the uprobe:PROBE triggers */
	size_t ntrigger_ids;

	/* --trigger (record_triggers.c) */
	struct bt_triggers *triggers;
	struct recorder_hits tq;     /* under lock: the hits the pending dump is for */
	struct recorder_hits tq2;    /* under lock: hits after tq's applications were copied: the next dump's */
	struct recorder_hits wr;     /* under dump_serial: the hits of the dump being written */
	uint64_t wr_stacks_ns[2];    /* under dump_serial: that dump's stack table copy, naming */
	/* under dump_serial: the dump's stack table, copied with its births
	 * right after the window, while the table is held (wr_held) */
	struct bt_stack_births *wr_births; /* the dump's stack ids (NULL: all say reclaimed) */
	struct bt_dump_stacks *wr_stacks;  /* NULL: could not be copied */
	uint64_t wr_kind_mismatch;        /* that dump's ids naming a stack of the other kind: said reclaimed */
	int wr_held;
	uint64_t wr_token;
	int hold_dumps;              /* under lock: stopping; the dump thread waits for quit */
	uint64_t last_auto;          /* monotonic ns of the last automatic dump */
	_Atomic uint64_t triggers_suppressed; /* a counter: relaxed, also read by ctl and the dump thread */
};
#endif
