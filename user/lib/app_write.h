/* SPDX-License-Identifier: MIT */
/*
 * app_write.h - libbtrace internals shared by the event writer
 * (btrace_app.c) and the function tracer (btrace_funcs.c): the mapped
 * buffer, the per-thread state, the block reservation. Not installed.
 */
#ifndef BTRACE_APP_WRITE_H
#define BTRACE_APP_WRITE_H
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "app_shm.h"

#define BT_HIDDEN __attribute__((visibility("hidden")))
/* libbtrace itself is never instrumented: a hook calling an instrumented
 * function would recurse. */
#define BT_NOINSTR __attribute__((no_instrument_function))

struct app_buf {
	struct bt_app_shm *shm;
	struct bt_app_meta *meta;
	struct bt_app_core *cores;
	uint8_t *data;
	uint32_t bsize, A, R, ncores;
	uint32_t rmask; /* R - 1 when R is a power of two (no division per event), else 0 */
	size_t size;
	int fd;
	int early;             /* the process's own buffer, until the recorder's arrives (app_early.c) */
	struct app_buf *older; /* buffers used before this one (kept mapped) */
};

#define BT_FPEND 64   /* records of signal handlers kept per thread until the hook they interrupted is done */
#define BT_FRAMES 64  /* open calls whose frame address a thread keeps (longjmp: func_hooks.c) */
#define SLICE_DEPTH 32 /* nested slices timed per thread for app:NAME>T (deeper: not timed) */
struct tstate {
	uint32_t tid, seq;            /* seq: shared by events and function records */
	uint32_t sdepth;              /* open BEGINs of this thread */
	uint32_t sid[SLICE_DEPTH];    /* their name ids ... */
	uint64_t sts[SLICE_DEPTH];    /* ... and times */
	/* function tracing (btrace_funcs.c): the open batch */
	struct bt_ev_app_funcs *fbat; /* NULL: none */
	uint64_t *fwords;
	struct app_buf *fbuf;         /* the buffer it is in */
	struct bt_app_meta *fmeta;    /* confirmed (flen bytes) when it closes */
	uint64_t ftsc0, flast, faddr0;
	uint64_t fend;                /* ftsc0 + the age bound: records at or after it open a new batch */
	uint64_t fprev_ns;            /* time of the last record of the batch before */
	uint32_t fw, fcap, flen;      /* words written, room, region bytes */
	uint32_t fbusy;               /* 1: inside a hook or an event write; 2: keeping a signal handler's record */
	/* Records of signal handlers that ran while fbusy was set, for the
	 * interrupted hook to write (func_hooks.c): written at fpw, read at
	 * fpr; a handler runs to completion, so no atomics. */
	uint32_t fpw, fpr;
	uint64_t fpend_tk[BT_FPEND], fpend_fn[BT_FPEND];
	uint8_t fpend_kind[BT_FPEND];
	/* Open calls (func_hooks.c), to close the ones a longjmp abandoned:
	 * fdepth of them, the outermost BT_FRAMES with the hook's frame
	 * address and function. Hooks only (fbusy set), never a handler's
	 * kept record. */
	uint32_t fdepth;
	uintptr_t fsp[BT_FRAMES];
	uint64_t ffn[BT_FRAMES];
};

extern _Atomic(struct app_buf *) btrace_buf_ BT_HIDDEN;
extern __thread struct tstate btrace_tls_ __attribute__((tls_model("initial-exec"))) BT_HIDDEN;

/* Reserve between min and max bytes of core's block (max if the block has
 * room, else what it has left); NULL when no block could be taken (counted). */
uint8_t *btrace_reserve_(struct app_buf *b, uint32_t core, uint32_t min, uint32_t max, uint32_t *lenp,
			 struct bt_app_meta **mtp) BT_HIDDEN BT_NOINSTR;

/* Confirm len bytes of the meta's current round. Release: the bytes written
 * before it are visible to whoever sees the count (the reader's acquire load
 * of conf, the next round's locking CAS). */
static inline BT_NOINSTR void btrace_confirm_(struct bt_app_meta *mt, uint32_t len)
{
	atomic_fetch_add_explicit(&mt->conf, len, memory_order_release);
}

/* An entry header, stored last and at once (release): a reader of a block
 * with writes in flight (app_reader.c) takes an entry whose header it sees
 * (with everything written before it), and stops at one still zero. */
static inline BT_NOINSTR void put_hdr(uint8_t *p, uint32_t len, uint32_t kind)
{
	struct bt_entry_hdr e = { .size = len, .kind = kind };
	uint64_t w;
	memcpy(&w, &e, sizeof(w));
	__atomic_store_n((uint64_t *)p, w, __ATOMIC_RELEASE);
}

static inline BT_NOINSTR uint64_t now_boot(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* app_early.c: the writers' view of a mapped buffer whose header is
 * checked (or ours); NULL when out of memory. */
struct app_buf *btrace_buf_view_(void *base, size_t total, int fd) BT_HIDDEN;
/* app_early.c: a buffer this process makes for itself to write in until
 * the recorder's answer (a forked child: its parent's geometry; a process
 * that starts: btrace_fresh_buffer_'s); NULL when it cannot be made. */
struct app_buf *btrace_early_buffer_(uint32_t bsize, uint32_t A, uint32_t N, uint32_t ncores, uint32_t pid) BT_HIDDEN;
struct app_buf *btrace_fresh_buffer_(uint32_t pid) BT_HIDDEN;

/* btrace_funcs.c: measure the tick rate (before the first attach; sleeps
 * ms once per process: 10 on the connection thread, 2 in a constructor
 * that writes before registering, refined over each second after); turn
 * the hooks on/off with the buffer; close this thread's batch (an event
 * takes a seq). */
void btrace_funcs_calibrate_(long ms) BT_HIDDEN BT_NOINSTR;
void btrace_funcs_attached_(int on) BT_HIDDEN BT_NOINSTR;
void btrace_funcs_break_(struct tstate *t) BT_HIDDEN BT_NOINSTR;
extern int btrace_funcs_on_ BT_HIDDEN; /* the hooks' one test */
/* An event not written because the thread was inside its own hook or
 * event write (a signal handler interrupted it): it takes a seq (the gap
 * shows where) and is counted with the buffer's drops. */
void btrace_dropped_nested_(struct tstate *t) BT_HIDDEN BT_NOINSTR;
#endif
