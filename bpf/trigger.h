/* SPDX-License-Identifier: MIT */
/*
 * trigger.h - the ABI between bpf/trigger.bpf.c (dump triggers evaluated in
 * the kernel) and user space (user/triggers/trigger_bpf.c). Included after vmlinux.h
 * in BPF, after <linux/types.h> in user space. Fixed-width fields, explicit
 * padding, multiples of 8 bytes.
 *
 * The loader fills one struct bt_trig_conf per `record --trigger` whose
 * condition lives in the kernel into the program's read-only data; the
 * verifier sees the final values, so slots of other kinds and kinds nobody
 * asked for are pruned (and programs of kinds nobody asked for are not even
 * loaded). A condition that holds writes one struct bt_trig_hit into the
 * trigger ring, with a wakeup: the recorder's trigger thread sleeps on that
 * ring and learns of the hit at once, not at the next drain tick.
 */
#ifndef BTRACE_TRIGGER_ABI_H
#define BTRACE_TRIGGER_ABI_H

#define BT_TRIG_MAX 16      /* --trigger options per recorder */
#define BT_TRIG_FUNC_DEPTH 8 /* nested calls of one probed function timed per thread */

/* What a trigger watches. The first group is evaluated in BPF, the rest in
 * user space (still numbered here: the dump format stores the kind). */
enum bt_trig_kind {
	BT_TRIG_NONE = 0,
	BT_TRIG_SCHED_LATENCY = 1, /* value: wakeup -> running, ns */
	BT_TRIG_OFFCPU = 2,        /* value: switched out blocked -> back on a CPU, ns */
	BT_TRIG_SYSCALL = 3,       /* value: sys_enter -> sys_exit, ns; aux: syscall nr */
	BT_TRIG_FUNC = 4,          /* value: uprobe entry -> return, ns */
	BT_TRIG_CRASH = 5,         /* value: signal number */
	BT_TRIG_OOM = 6,           /* value: 0; tid/tgid/comm: the victim */
	BT_TRIG_KERNEL_MAX = 7,
	BT_TRIG_APP = 7,           /* BTRACE_TRIGGER("NAME") in an application */
	BT_TRIG_APP_SLICE = 8,     /* value: the application slice's duration, ns */
	BT_TRIG_CTL = 9,           /* `btrace-bpf ctl trigger NAME` */
	BT_TRIG_UPROBE = 10,       /* --trigger-uprobe: a hit of a probe */
	BT_TRIG_APP_FUNC = 11,     /* value: a traced function's call (-finstrument-functions), ns */
	BT_TRIG_KIND_MAX = 12,
};

struct bt_trig_conf {
	__u32 kind;         /* enum bt_trig_kind; 0: slot unused */
	__u32 tgid;         /* pid= filter; 0: any process */
	__u64 threshold_ns; /* the value must exceed this (durations) */
	__u64 holdoff_ns;   /* hits closer than this to the last one sent are only counted */
	__u64 after_ns;     /* after=: hits this close to the last one sent fall in its pending dump */
	__s64 nr;           /* syscall number; -1: any */
	__u64 sigmask;      /* crash: bit s = signal s counts */
	char comm[16];      /* comm= filter; "": any name */
};

/* One hit, as the trigger ring carries it. */
struct bt_trig_hit {
	__u64 ts_ns;  /* CLOCK_BOOTTIME of the triggering event (its end, for durations) */
	__u64 value;  /* see enum bt_trig_kind */
	__s64 aux;    /* syscall nr; -1 if none */
	__u32 trig;   /* index of the --trigger */
	__u32 tid;    /* the task the condition is about */
	__u32 tgid;
	__u32 cpu;    /* CPU the hit was seen on */
	char comm[16];
};

/* Per trigger, in the trig_counts array map. */
struct bt_trig_count {
	__u64 hits;       /* the condition held (filter passed) */
	__u64 suppressed; /* within holdoff_ns of the last hit sent, after its after_ns: rate-limited */
	__u64 lost;       /* the trigger ring was full */
	__u64 last_ns;    /* time of the last hit sent */
	__u64 merged;     /* within after_ns of the last hit sent: its dump, still pending, holds it */
};

#endif /* BTRACE_TRIGGER_ABI_H */
