/* SPDX-License-Identifier: MIT */
/*
 * export_json_int.h - what the JSON exporter's files share (private to
 * user/export/export_json*.c): the exporter's state (struct jx), the pseudo
 * pids and tids of the CPU tracks, and the writers each file offers the
 * others. export_json.c has the metadata, the header and the main loop;
 * export_json_text.c the JSON text of an event and per-thread state;
 * export_json_kernel.c kernel events (scheduling, IRQs, syscalls, power,
 * seq gaps); export_json_user.c uprobe, application and function events;
 * export_json_stacks.c the call stacks (samples and their frames).
 */
#ifndef BTRACE_EXPORT_JSON_INT_H
#define BTRACE_EXPORT_JSON_INT_H
#include <stddef.h>
#include <stdint.h>
#include "export.h"
#include "event_names.h"

#define JSON_CPU_PID 0x7fff0000u /* above any kernel pid (PID_MAX_LIMIT is 2^22) */
#define CPU_TID(c) (JSON_CPU_PID + (c))
#define IRQ_TID(c) (JSON_CPU_PID + 0x2000u + (c))
#define LOSS_TID(c) (JSON_CPU_PID + 0x4000u + (c))
/* the "btrace-bpf" thread: dump info and CPU counters; apart from every CPU's
 * (CPU_TID(0) is JSON_CPU_PID itself) so each pseudo-thread has one name */
#define INFO_TID (JSON_CPU_PID + 0x6000u)
#define TRIGGER_TID (JSON_CPU_PID + 0x6001u) /* the "triggers" pseudo-thread */
_Static_assert(BT_DUMP_MAX_CPUS <= 0x2000, "CPU pseudo-thread ranges do not overlap");
#define IRQ_STACK 16
/* write a string literal */
#define JW(j, lit) bt_sink_write((j)->out, lit, sizeof(lit) - 1)

struct jirq {
	uint16_t type; /* BT_EV_IRQ_ENTRY or BT_EV_SOFTIRQ_ENTRY */
	uint32_t irq;
	uint64_t ts;
};

struct jcpu {
	int run_valid;      /* run_start is when the running task is known to have run from */
	uint64_t run_start;
	int have_run_tid;   /* run_tid: next of the CPU's last switch */
	uint32_t first_tid; /* the task of the CPU's first event: running at run_start until a switch */
	uint32_t run_tid;
	uint64_t last_ts;
	int have_ts;
	struct jirq irq[IRQ_STACK];
	uint32_t nirq;
};

struct jthread {
	uint32_t tid, tgid;
	int sys_open;
	int64_t sys_id;
	uint64_t sys_ts;
	const struct bt_ev_uprobe **ust; /* open matched uprobe entries */
	uint32_t nu, cap;
};

/* The output's bytes by the time of the records they hold (what a --time
 * window would keep): JX_SIZE_BINS bins over the kept events' span. */
#define JX_SIZE_BINS 4096
struct jx_size {
	uint64_t *bin;       /* NULL: not counted (out of memory: no hint) */
	uint64_t t0, span;   /* first event, last - first + 1 */
	uint64_t last_raw;   /* output bytes when the record in last_bin began */
	uint32_t last_bin;
	int open;            /* a record is being counted */
};

struct jx {
	const struct bt_export_prep *p;
	const struct bt_export_opts *o;
	struct bt_sink *out;
	struct bt_export_stats *st;
	struct bt_namer *nm;
	struct jcpu *cpu;
	uint32_t ncpus;
	struct bt_u32map tmap; /* tid -> index into th */
	struct jthread *th;
	size_t nth, capth;
	size_t uslot;
	size_t aslot;          /* next index into p->arole */
	int nevents_out;
	int nargs;             /* args written in the open event */
	struct jx_size size;
	char *err;
	size_t errlen;
};

/* export_json_text.c: an event ({"ph":...,"args":{...}}) and metadata */
#define JX_US_LEN 32
size_t jx_us(char *b, uint64_t ns);
void jx_jstr(struct jx *j, const char *s, size_t maxlen);
void jx_ev_open(struct jx *j, const char *ph, const char *name, const char *cat, uint64_t ts, uint32_t pid,
		uint32_t tid);
void jx_ev_dur(struct jx *j, uint64_t from, uint64_t to);
void jx_arg_u(struct jx *j, const char *k, uint64_t v);
void jx_arg_i(struct jx *j, const char *k, int64_t v);
void jx_arg_hex(struct jx *j, const char *k, uint64_t v);
void jx_arg_s(struct jx *j, const char *k, const char *v, size_t maxlen);
void jx_arg_b(struct jx *j, const char *k, int v);
void jx_ev_close(struct jx *j);
void jx_meta(struct jx *j, const char *what, uint32_t pid, uint32_t tid, const char *key, const char *sval,
	     int64_t ival);
/* threads: pid, name, per-thread state */
uint32_t jx_pid_of(struct jx *j, uint32_t tid, uint32_t tgid_hint);
const char *jx_comm(struct jx *j, uint32_t tid, uint32_t cpu);
struct jthread *jx_thread_state(struct jx *j, uint32_t tid);

/* export_json_kernel.c */
void jx_put_switch(struct jx *j, const struct bt_ev_sched_switch *e, int had_start);
void jx_run_tail(struct jx *j, uint32_t c, uint64_t to, int truncated);
void jx_put_irq(struct jx *j, const struct bt_event_hdr *h);
void jx_irq_flush(struct jx *j, uint32_t c);
int jx_put_task_event(struct jx *j, const struct bt_event_hdr *h);
int jx_put_syscall(struct jx *j, const struct bt_event_hdr *h);
void jx_sys_instant(struct jx *j, uint16_t type, uint32_t tid, uint32_t tgid, uint64_t ts, int64_t id,
		    int64_t ret, int has_ret);
void jx_put_power(struct jx *j, const struct bt_event_hdr *h);
void jx_put_gap(struct jx *j, const struct bt_seq_gap *g, uint64_t ts);

/* export_json_size.c: bytes by time, and the window that fits (st->json_fit_*) */
int jx_size_init(struct jx *j);
void jx_size_mark(struct jx *j, uint64_t ts); /* a record at ts begins (ends the previous) */
void jx_size_pause(struct jx *j);             /* what follows is no record's */
void jx_size_finish(struct jx *j, uint64_t max);

/* export_json_stacks.c: "samples" and "stackFrames" after traceEvents */
int jx_put_stacks(struct jx *j);

/* export_json_user.c */
int jx_put_uprobe(struct jx *j, const struct bt_event_hdr *h);
void jx_put_app(struct jx *j, const struct bt_dump_event *de);
void jx_put_app_gap(struct jx *j, const struct bt_app_gap *g, const struct bt_event_hdr *h);
void jx_put_enclosing(struct jx *j);
#endif
