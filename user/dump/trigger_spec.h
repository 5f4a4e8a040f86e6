/* SPDX-License-Identifier: MIT */
/*
 * trigger_spec.h - `record --trigger SPEC`: the syntax and its parser.
 *
 *   SPEC := CONDITION[,OPTION]...
 *
 *   CONDITION
 *     sched-latency>T      a task waited longer than T between wakeup and running
 *     offcpu>T             a task was off the CPU (blocked) longer than T
 *     syscall>T            a system call took longer than T
 *     syscall:NAME>T       ... only system call NAME (or option nr=N)
 *     func:PROBE>T         a user-space function (PROBE as for -u, no %return)
 *                          ran longer than T from entry to return
 *     crash                a fatal signal (SEGV BUS ILL FPE ABRT TRAP SYS, with
 *                          the default action) was delivered
 *     oom                  the OOM killer chose a victim
 *     app:NAME             an application called BTRACE_TRIGGER("NAME")
 *     app:NAME>T           an application slice NAME lasted longer than T
 *     app-func:NAME>T      a call of function NAME of a program built with
 *                          -finstrument-functions and libbtrace lasted longer
 *                          than T (NAME: the symbol, C++ demangled, with or
 *                          without its parameter list)
 *     ctl                  only `btrace-bpf ctl trigger NAME`
 *     uprobe:PROBE         a hit of a user-space probe (= --trigger-uprobe PROBE)
 *
 *   OPTION
 *     name=NAME            for `ctl trigger NAME` and the dumps (default: the
 *                          condition's kind, made unique with -2, -3, ...)
 *     comm=COMM            only tasks of this name (the task the condition is about)
 *     pid=PID              only this process
 *     nr=N                 syscall: only system call number N
 *     sig=SIG[+SIG]...     crash: these signals (names or numbers)
 *     after=T              dump T after the hit (default --trigger-delay)
 *     limit=T              at most one dump per T from this trigger; hits in
 *                          between are counted (default --min-dump-interval)
 *
 *   T: a duration with a unit, as everywhere (500us, 5ms, 2s).
 *
 * Any trigger can also be fired by name with `ctl trigger NAME`.
 */
#ifndef BTRACE_TRIGGER_SPEC_H
#define BTRACE_TRIGGER_SPEC_H
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "trigger.h"

#define BT_TRIG_NAME_LEN 32

struct bt_trigger_spec {
	uint32_t kind;          /* enum bt_trig_kind */
	char name[BT_TRIG_NAME_LEN];
	char cond[160];         /* the condition as written, for messages and dumps */
	char arg[256];          /* func/uprobe: the probe; app: the event name; app-func: the function */
	uint64_t threshold_ns;  /* 0: none (crash, oom, app:NAME, ctl, uprobe) */
	int64_t nr;             /* syscall number, -1: any */
	uint64_t sigmask;       /* crash */
	uint32_t tgid;          /* pid= */
	char comm[16];          /* comm= */
	uint64_t after_ns;      /* after=; has_after 0: the recorder's default */
	uint64_t limit_ns;      /* limit=; has_limit 0: the recorder's default */
	int has_after, has_limit;
};

/* One hit that asked for a dump. */
struct bt_trigger_fired {
	uint32_t trig;       /* index of the trigger */
	uint32_t kind;       /* enum bt_trig_kind (BT_TRIG_CTL when fired by `ctl trigger`) */
	uint64_t ts_ns;      /* CLOCK_BOOTTIME of the triggering event */
	uint64_t seen_ns;    /* CLOCK_BOOTTIME the recorder learned of it */
	uint64_t due_ns;     /* CLOCK_BOOTTIME the dump was asked for (seen + after) */
	uint64_t value;      /* measured value (ns, signal number), see enum bt_trig_kind */
	uint64_t threshold_ns;
	int64_t aux;         /* syscall nr, -1 none */
	uint32_t tid, tgid, cpu;
	char comm[16];
	char name[BT_TRIG_NAME_LEN];
	char cond[160];
};

/* Per-trigger counts, as stored in dumps. Every hit ends as exactly one of
 * dumps, merged, limited, dropped; until then it is pending:
 * hits = dumps + merged + limited + dropped + pending. */
struct bt_trigger_stats {
	uint64_t hits;    /* the condition held */
	uint64_t dumps;   /* hits that started a dump (the first hit a written dump names) */
	uint64_t skipped; /* merged + limited: hits without a dump of their own (older readers) */
	uint64_t lost;    /* hits the kernel could not send (its ring full); part of dropped */
	uint64_t merged;  /* hits taken into a dump another hit started, or still pending in its window */
	uint64_t limited; /* hits within limit= of the last accepted one: rate-limited */
	uint64_t dropped; /* hits in no dump: a ring or queue full, their dump failed or was skipped */
	uint64_t pending; /* hits whose dump is not written yet (waiting for after=, or queued) */
};

/* "sched-latency 12.4 ms > 5 ms, tid 4312 (nginx)": what fired, for logs and reports. */
const char *bt_trigger_describe(const struct bt_trigger_fired *f, char *buf, size_t len);

/* Parse one --trigger argument. 0, or -EINVAL with one line in err naming
 * what is wrong and what is expected. */
int bt_trigger_parse(const char *s, struct bt_trigger_spec *out, char *err, size_t errlen);
/* After every spec is parsed: fill defaults, give unnamed triggers unique
 * names, refuse duplicate names. 0 or -EINVAL + err. */
int bt_trigger_finish(struct bt_trigger_spec *v, size_t n, uint64_t default_after_ns, uint64_t default_limit_ns,
		      char *err, size_t errlen);
/* "sched-latency" for BT_TRIG_SCHED_LATENCY, ...; "?" if out of range. */
const char *bt_trigger_kind_name(uint32_t kind);
/* The measured value as text: "12.4 ms", "SIGSEGV", ... into buf. */
const char *bt_trigger_value_str(uint32_t kind, uint64_t value, char *buf, size_t len);
/* System call number of a name ("nanosleep"), -1 if this build does not know it. */
long bt_syscall_nr(const char *name);
/* Name of a system call number, NULL if unknown. */
const char *bt_syscall_name(long nr);
#endif
