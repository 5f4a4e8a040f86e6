/* SPDX-License-Identifier: MIT */
/*
 * func_calls.h - the calls of traced functions (-finstrument-functions,
 * libbtrace) in a dump: entries and exits (BT_EV_APP_FUNC_*) paired per
 * thread into calls with duration, self time (duration minus the direct
 * children's), depth and parent. Used by `report --functions` and `--hot`.
 */
#ifndef BTRACE_FUNC_CALLS_H
#define BTRACE_FUNC_CALLS_H
#include <stddef.h>
#include <stdint.h>

struct bt_dump;
struct bt_event_hdr;

/* What report's options select; all fields may be zero/NULL (everything). */
struct bt_func_filter {
	int (*keep)(const struct bt_event_hdr *h, void *ctx); /* event selected (time, cpu, pid, type) */
	int (*cpu_ok)(uint32_t cpu, void *ctx);               /* CPU selected (losses are per CPU) */
	void *ctx;
	int timed;          /* t0..t1 (inclusive) narrows the dump's window (--since/--until) */
	uint64_t t0, t1;
	const char *what;   /* the filters in words for the window line ("-p 1234"), NULL: none */
	int stream;         /* the dump keeps its function batches (BT_DUMP_OPEN_FUNC_BATCHES,
			     * or BT_DUMP_OPEN_APP_STREAM: read again from the file):
			     * traced functions folded per function (func_stream.h) */
	char *err;          /* NULL, or where a failed read of the dump says why (the caller prints it) */
	size_t errlen;
};

/* A function of one application (its pid): a row of the reports. */
struct bt_cfunc {
	int32_t app;      /* index into bt_dump_apps() */
	uint32_t pid;
	uint64_t addr;
	const char *name; /* NULL: no symbol (shown as its address) */
};

struct bt_call {
	uint64_t start, dur, self; /* dur, self: 0 while open */
	uint32_t tid, fn;          /* fn indexes bt_calls.fn */
	uint32_t depth;            /* 0: no caller in the window */
	int32_t parent;            /* index of the caller, -1 none */
	uint8_t open;              /* no exit in the dump (running at its end, or cut by a loss) */
	uint8_t sel;               /* its entry passes the report's filters */
	uint8_t outer;             /* not inside another call of the same function (recursion) */
	int32_t up;                /* the innermost call of the same function it is inside, -1 none */
};

struct bt_calls {
	struct bt_call *c; /* in entry order per thread; a parent comes before its children */
	size_t n;
	struct bt_cfunc *fn;
	size_t nfn;
	uint64_t first_ts, last_ts; /* the function records' window (0: none) */
	uint64_t records;           /* entries and exits seen */
	uint64_t unmatched_exits;   /* exits whose entry is not in the dump (before its window) */
	uint64_t mismatched;        /* exits of a function not on the thread's stack */
	uint64_t seq_gaps, seq_missing; /* per-thread records missing (lost while recording or dumping) */
	uint64_t cut;               /* calls left open by a seq gap (their exit may be lost) */
	uint64_t running;           /* calls open at the end of the dump */
};

/* The functions of a bt_calls by (app, addr), for whoever fills it. */
struct bt_fn_index {
	uint32_t *h; /* open addressing: index into fn + 1 */
	size_t cap;  /* slots of h */
	size_t fcap; /* room of c->fn */
};
/* The index in c->fn of function addr of application app, added (named
 * from the dump's function table) if new; -1: out of memory. */
int64_t bt_calls_fn(struct bt_calls *c, struct bt_fn_index *ix, const struct bt_dump *d, int32_t app,
		    uint64_t addr);

/* Pair the dump's function records; f (may be NULL) selects calls by their
 * entry event. 0 or -ENOMEM. */
int bt_calls_build(const struct bt_dump *d, const struct bt_func_filter *f, struct bt_calls *out);
void bt_calls_free(struct bt_calls *c);
/* "name" (escaped; buf of BT_ESCAPED_LEN(512) for all of it) or "0x1234". */
const char *bt_cfunc_name(const struct bt_cfunc *f, char *buf, size_t len);
/* "1.23ms" into buf. */
const char *bt_fmt_dur(uint64_t ns, char *buf, size_t len);
#endif
