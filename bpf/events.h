/* SPDX-License-Identifier: MIT */
/*
 * events.h - the event ABI shared by the BPF programs (bpf/NAME.bpf.c, included
 * after vmlinux.h) and user space (included after <linux/types.h>).
 *
 * Fixed-width fields only, explicit padding, every struct a multiple of 8
 * bytes. In the recorder's buffer the drain stores a compact form of each
 * event (user/dump/compact.h: no CPU, tgid only for non-leader threads, narrow
 * syscall and sched_switch fields, batches of events per buffer entry): a
 * sched_switch takes 32 bytes there, a sys_enter/sys_exit pair 52.
 *
 * Every event starts with struct bt_event_hdr. `seq` is a per-CPU sequence
 * number taken for every event the BPF side tries to emit, including the ones
 * whose ring-buffer reservation fails, so gaps in seq prove where events are
 * missing (and the per-CPU drop counters say why).
 */
#ifndef BTRACE_EVENTS_H
#define BTRACE_EVENTS_H

#define BT_COMM_LEN 16
#define BT_MAX_UARGS 6

/* Event groups selectable with -e (bit i = group i). */
enum bt_group {
	BT_GROUP_SCHED = 0,
	BT_GROUP_IRQ = 1,
	BT_GROUP_POWER = 2,
	BT_GROUP_SYSCALLS = 3,
	BT_GROUP_UPROBE = 4,
	BT_GROUP_MAX = 5,
};

enum bt_event_type {
	BT_EV_NONE = 0,
	BT_EV_SCHED_SWITCH = 1,
	BT_EV_SCHED_WAKEUP = 2,
	BT_EV_SCHED_WAKEUP_NEW = 3,
	BT_EV_SCHED_WAKING = 4,
	BT_EV_SCHED_MIGRATE = 5,
	BT_EV_PROCESS_FORK = 6,
	BT_EV_PROCESS_EXEC = 7,
	BT_EV_PROCESS_EXIT = 8,
	BT_EV_TASK_RENAME = 9,
	BT_EV_IRQ_ENTRY = 10,
	BT_EV_IRQ_EXIT = 11,
	BT_EV_SOFTIRQ_ENTRY = 12,
	BT_EV_SOFTIRQ_EXIT = 13,
	BT_EV_CPU_FREQUENCY = 14,
	BT_EV_CPU_IDLE = 15,
	BT_EV_SYS_ENTER = 16,
	BT_EV_SYS_EXIT = 17,
	BT_EV_UPROBE_ENTRY = 18,
	BT_EV_UPROBE_RETURN = 19,
	BT_EV_USDT = 20,
	BT_EV_KERNEL_MAX = 21, /* types below come from the kernel (BPF) */
	/* written by applications through libbtrace (user/lib/btrace.h), not by BPF */
	BT_EV_APP_INSTANT = 21,
	BT_EV_APP_BEGIN = 22,
	BT_EV_APP_END = 23,
	BT_EV_APP_COUNTER = 24,
	BT_EV_APP_FUNCS = 25,      /* a batch of function entries/exits (struct bt_ev_app_funcs) */
	BT_EV_APP_FUNC_ENTRY = 26, /* decoded from batches by readers, never stored: */
	BT_EV_APP_FUNC_EXIT = 27,  /* struct bt_ev_app, args[0] = the function's address */
	BT_EV_MAX = 28,
};

struct bt_event_hdr {
	__u64 ts_ns; /* CLOCK_BOOTTIME, bpf_ktime_get_boot_ns() */
	__u32 seq;   /* per-CPU sequence (see above) */
	__u32 tid;   /* current thread (kernel pid) */
	__u32 tgid;  /* current process (kernel tgid) */
	__u16 cpu;   /* CPU the event happened on */
	__u16 type;  /* enum bt_event_type */
};

struct bt_ev_sched_switch {
	struct bt_event_hdr h;
	__u32 prev_tid;
	__u32 next_tid;
	__u32 prev_state; /* TASK_* bits of prev (0 = runnable, preempted) */
	__u16 prev_prio;
	__u16 next_prio;
};

/* sched_wakeup, sched_wakeup_new, sched_waking */
struct bt_ev_sched_wakeup {
	struct bt_event_hdr h;
	__u32 tid;        /* the task woken */
	__u16 target_cpu;
	__u16 prio;
};

struct bt_ev_sched_migrate {
	struct bt_event_hdr h;
	__u32 tid;
	__u16 orig_cpu;
	__u16 dest_cpu;
};

/* fork: h.tid is the parent; exec: h.tid is the task; rename: h.tid renamed;
 * exit: h.tid exits. comm is the new/child name (empty for exit). */
struct bt_ev_task {
	struct bt_event_hdr h;
	__u32 tid;   /* child (fork), old tid (exec), renamed/exiting tid */
	__u32 tgid;  /* child's tgid (fork), else the task's tgid */
	char comm[BT_COMM_LEN];
};

struct bt_ev_irq {
	struct bt_event_hdr h;
	__u32 irq; /* irq number, or softirq vector */
	__s32 ret; /* irq_handler_exit: IRQ_HANDLED etc; else 0 */
};

struct bt_ev_power {
	struct bt_event_hdr h;
	__u32 state;  /* cpu_frequency: kHz; cpu_idle: idle state, (u32)-1 = exit */
	__u32 cpu_id; /* the CPU the value is about */
};

struct bt_ev_syscall {
	struct bt_event_hdr h;
	__s64 id;
	__s64 ret; /* sys_exit only; 0 for sys_enter */
};

struct bt_ev_uprobe {
	struct bt_event_hdr h;
	__u32 probe_id; /* index into the dump's probe table */
	__u32 nargs;    /* entry: args captured; return: 0 */
	__u64 duration_ns; /* return: time since the matching entry, 0 if unknown */
	__u64 ret;      /* return value (return probes) */
	__u64 args[BT_MAX_UARGS];
};

/*
 * Application event (libbtrace, user/lib/btrace.h), written by the application
 * into its own shared-memory block buffer, never by BPF. Header fields mean
 * the same as for kernel events except seq: a per-thread sequence number
 * taken for every event the thread tried to write (gaps prove loss, per
 * thread). cpu is the CPU the thread ran on when it wrote. name_id indexes
 * the application's name table (in the dump's APPS section); 0 = no name
 * (BT_EV_APP_END). Counters carry their value in args[0].
 */
#define BT_APP_MAX_ARGS 4
struct bt_ev_app {
	struct bt_event_hdr h;
	__u32 name_id;
	__u16 nargs;  /* args that follow, 0..BT_APP_MAX_ARGS */
	__u16 flags;  /* 0 */
	__s64 args[]; /* nargs values */
};

/*
 * Function tracing (-finstrument-functions, user/lib/btrace_funcs.c): a
 * thread claims a run of a block (one entry of cap words) and fills it with
 * plain stores, one 8-byte word per entry or exit:
 *   bits 0..31   ticks since the previous record (the first: since tsc0)
 *   bits 32..33  BT_FREC_ENTRY, BT_FREC_EXIT, or the _LONG forms, whose
 *                address is the whole next word (delta does not fit)
 *   bits 34..63  the function's address - addr0, signed (30 bits)
 * count (words written so far) is stored with release after each record,
 * so a reader takes words[0..count) even while the batch is open. Times:
 * ts_ns + (ticks - tsc0) * mult_q32 / 2^32 (h.ts_ns and tsc0 are a
 * calibration pair taken when the batch was claimed; a batch never spans
 * more than 2^31 ticks). h.seq is the thread's seq of the first record; each
 * record takes the next one.
 */
#define BT_FREC_ENTRY 0u
#define BT_FREC_EXIT 1u
#define BT_FREC_ENTRY_LONG 2u
#define BT_FREC_EXIT_LONG 3u
struct bt_ev_app_funcs {
	struct bt_event_hdr h;
	__u64 tsc0;     /* ticks (TSC) at h.ts_ns */
	__u64 addr0;    /* base of the address deltas */
	__u64 mult_q32; /* ns per tick * 2^32 */
	__u32 count;    /* words written */
	__u32 cap;      /* words of room after this header */
	__u64 words[];
};

/* Per-CPU state of the BPF side (a BPF_MAP_TYPE_PERCPU_ARRAY with one slot). */
struct bt_cpu_state {
	__u64 seq;                   /* next sequence number */
	__u64 drops[BT_GROUP_MAX];   /* ring-buffer reservation failures per group */
	__u64 emitted[BT_GROUP_MAX]; /* events submitted per group */
};

#endif /* BTRACE_EVENTS_H */
