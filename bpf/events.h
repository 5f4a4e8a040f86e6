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
	BT_GROUP_STACKS = 5, /* CPU samples, off-CPU and waker stacks (record --sample, --stacks) */
	BT_GROUP_MAX = 6,
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
	/* kernel again (stacks, record --sample / --stacks) */
	BT_EV_CPU_SAMPLE = 28,
	BT_EV_OFFCPU = 29,
	BT_EV_WAKER = 30,
	BT_EV_PROBE_STACK = 31,
	BT_EV_MAX = 32,
	/* Ring-buffer only, never stored: the drain turns them into the above
	 * (struct bt_raw_stacks) or into the stack table (struct bt_raw_stack_def). */
	BT_RAW_STACKS = 48,
	BT_RAW_STACK_DEF = 49,
	BT_RAW_SYS_PAIR = 50, /* struct bt_raw_sys_pair: a sys_enter and its sys_exit */
	BT_RAW_STACK_COPY = 51, /* struct bt_raw_stack_copy: a user stack's bytes where its walk stopped */
	BT_RAW_PY_CODE = 52,  /* struct bt_raw_py_code: a Python code object's names, once */
};

/* Types the BPF side emits and the drain stores (not application events). */
static inline int bt_event_is_kernel(unsigned type)
{
	return (type > BT_EV_NONE && type < BT_EV_KERNEL_MAX) || (type >= BT_EV_CPU_SAMPLE && type < BT_EV_MAX);
}

/* A probe hit: struct bt_ev_uprobe (-u entries and returns, -U USDT). */
static inline int bt_event_is_uprobe(unsigned type)
{
	return type == BT_EV_UPROBE_ENTRY || type == BT_EV_UPROBE_RETURN || type == BT_EV_USDT;
}

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
 * Call stacks (bpf/record_stacks.bpf.h, user/stacks/stack_table.h). An event
 * names its stacks by id in the dump's stack table (section STCK): 0 = no
 * stack of that kind (a kernel thread has no user stack; the user stack of a
 * sample taken in the kernel of a task is there), BT_STACK_LOST = the stack
 * could not be taken or stored (counted in the STCK section's counters),
 * BT_STACK_RECLAIMED = it was taken, but the table was full and gave its
 * entry to a newer stack before the dump (only in dumps: the recorder's
 * buffer never holds it).
 */
#define BT_STACK_LOST 0xffffffffu
#define BT_STACK_RECLAIMED 0xfffffffeu
/* Neither a stack nor none: no frames in the table. */
#define BT_STACK_ID_GONE(id) ((id) >= BT_STACK_RECLAIMED)
#define BT_MAX_FRAMES 127 /* perf's default kernel.perf_event_max_stack */

/* record --sample: a timer sample of the running thread. */
struct bt_ev_sample {
	struct bt_event_hdr h;
	__u32 kstack;
	__u32 ustack;
};

/* record --stacks switch: h.tid blocked (switched out sleeping) with these
 * stacks and was off the CPU for offcpu_ns; h.ts_ns is when it ran again. */
struct bt_ev_offcpu {
	struct bt_event_hdr h;
	__u32 kstack;
	__u32 ustack;
	__u64 offcpu_ns;
};

/* record --stacks wakeup: h.tid (the waker) woke `wakee` with these stacks. */
struct bt_ev_waker {
	struct bt_event_hdr h;
	__u32 kstack;
	__u32 ustack;
	__u32 wakee;
	__u32 reserved;
};

/* record -u/-U --ustack: the stacks of a probe hit, next to its uprobe/USDT
 * event (same thread and CPU, seq one less, a moment later in time). At a
 * function's entry its frame is not set up yet: the user stack goes from
 * the function to its caller's caller (as perf's). */
struct bt_ev_probe_stack {
	struct bt_event_hdr h;
	__u32 kstack;
	__u32 ustack;
	__u32 probe_id;
	__u32 reserved;
};

/* Ring form of the stack events above: stacks as 64-bit hashes the drain interns.
 * h.type = BT_RAW_STACKS, ev_type the event it becomes. A hash of 0 = no
 * stack, 1 = lost (see BT_STACK_LOST). */
struct bt_raw_stacks {
	struct bt_event_hdr h;
	__u16 ev_type;
	__u16 reserved;
	__u32 aux32; /* waker: wakee; probe stack: probe id */
	__u64 khash;
	__u64 uhash;
	__u64 aux64; /* off-CPU: offcpu_ns */
};
#define BT_HASH_NONE 0
#define BT_HASH_LOST 1

/* A system call whose sys_enter was still held in its CPU's slot (struct
 * bt_sys_pending) when its sys_exit ran: both events in one ring record, one
 * reservation instead of two. h is the exit's (h.type = BT_RAW_SYS_PAIR);
 * the drain stores a BT_EV_SYS_ENTER and a BT_EV_SYS_EXIT. A ring record of
 * this type holds 1 to BT_SYS_BATCH of them, one CPU's, in seq order
 * (struct bt_sys_batch). */
struct bt_raw_sys_pair {
	struct bt_event_hdr h;
	__s64 id;        /* the exit's system call number */
	__s64 ret;
	__u64 enter_ts;
	__s64 enter_id;
	__u32 enter_seq;
	__u32 reserved;
};

/* A stack seen for the first time (h.type = BT_RAW_STACK_DEF, no seq taken:
 * h.seq is 0): nframes return addresses, innermost first. */
#define BT_STACKDEF_USER 0x1      /* user stack of h.tgid (else kernel) */
#define BT_STACKDEF_FULL 0x2      /* BT_MAX_FRAMES frames: may be cut short */
#define BT_STACKDEF_CUT 0x4       /* the unwinder stopped before the outermost frame
				   * (bt_stack_stats' unw_* count why; bits 8..15 say
				   * it for this stack: enum bt_stack_cut) */
#define BT_STACKDEF_FILES 0x8     /* ips holds nframes struct bt_stack_frame_file (the unwinder's):
				   * each frame with the file the BPF side found it in */
#define BT_STACKDEF_COPY 0x10      /* the walk stopped at a binary whose table was not built yet: a
				   * BT_RAW_STACK_COPY of the same hash follows, the recorder
				   * finishes the walk from it (the hash is this event's alone) */
#define BT_STACKDEF_WHY_SHIFT 8
#define BT_STACKDEF_WHY(flags) (((flags) >> BT_STACKDEF_WHY_SHIFT) & 0xff)
/* Why an unwinder walk ended before the outermost frame. */
enum bt_stack_cut {
	BT_CUT_UNKNOWN = 0,   /* not said (an older recorder) */
	BT_CUT_NO_PROC = 1,   /* the process's mappings were not known yet: the leaf only */
	BT_CUT_NO_MAP = 2,    /* an address in no executable mapping */
	BT_CUT_ANON = 3,      /* anonymous executable memory (JIT code) */
	BT_CUT_SIGNAL = 4,    /* a signal frame */
	BT_CUT_BAD_FRAME = 5, /* an unreadable stack word or an invalid frame */
	BT_CUT_NO_TABLE = 6,  /* a binary with no table yet (being built, or refused) */
	BT_CUT_REASONS = 7,
};
#define BT_STACKDEF_CUT_BY(why) (BT_STACKDEF_CUT | ((__u32)(why) << BT_STACKDEF_WHY_SHIFT))
struct bt_raw_stack_def {
	struct bt_event_hdr h;
	__u64 hash;
	__u32 nframes;
	__u32 flags;
	__u64 ips[]; /* nframes */
};

/* A bounded copy of a user stack where the BPF walk stopped for a table not
 * built yet (as perf's --call-graph dwarf copies 8 KiB at each sample): the
 * recorder walks on from it in user space once the table is published
 * (user/stacks/stack_copies.c). h.type = BT_RAW_STACK_COPY, h.seq 0; it
 * follows the BT_RAW_STACK_DEF of `hash` (flag BT_STACKDEF_COPY) in the
 * same ring. At most BT_STACK_COPY_RATE per CPU per 100 ms. */
#define BT_STACK_COPY_BYTES 8192 /* stack bytes from sp (perf's default --call-graph dwarf size) */
#define BT_STACK_COPY_RATE 64    /* copies per CPU per 100 ms; past it the stack stays cut (counted) */
#define BT_STACK_COPY_YOUNG_NS (5ull * 1000000000ull) /* only processes younger: an older one's later
						       * samples walk whole once the table is in */
struct bt_raw_stack_copy {
	struct bt_event_hdr h;
	__u64 hash;       /* the definition it finishes */
	__u64 pc, sp, bp; /* registers of the frame the walk stopped at */
	__u32 nframes;    /* the definition's frames; the last is pc's */
	__u16 nmaps;      /* the process's executable mappings that follow */
	__u16 len;        /* stack bytes from sp that follow them */
	__u8 data[];      /* nmaps struct bt_unwind_map (bpf/unwind.h), then the len bytes */
};

/* A user frame as the BPF unwinder found it: the file it is in, as the
 * kernel knows it, so the recorder names it even after the process is
 * gone. dev_off: BT_FRAME_NO_FILE (not in a file, or not known), else the
 * file's s_dev (low 32 bits) and the ip's file offset (high 32 bits); the
 * vDSO is the file { 0, 0 }. */
struct bt_stack_frame_file {
	__u64 ip;
	__u64 ino;
	__u64 dev_off;
};
#define BT_FRAME_NO_FILE (~0ull)

/* A Python frame among a user stack's frames (bpf/python_frames.bpf.h):
 * ip = BT_FRAME_PY_BIT | 63 bits of a hash of the code object's address,
 * of its generation (a hash of its name and file pointers and first line:
 * a code object allocated later at the same address is another) and of
 * the offset of the instruction it runs, dev_off BT_FRAME_NO_FILE: one key
 * per place in the code, named with its line. */
#define BT_FRAME_PY_BIT (1ull << 63)

/* bt_raw_py_code.flags */
#define BT_PY_CODE_NO_NAME 1u   /* co_qualname unreadable */
#define BT_PY_CODE_NO_FILE 2u   /* co_filename unreadable */
#define BT_PY_CODE_NO_INSTR 4u  /* the instruction or the line table unknown: the first line */
#define BT_PY_CODE_LT_CUT 8u    /* the line table is longer than linetable[] */
#define BT_PY_CODE_LT_310 16u   /* 3.10's line table (pairs), else 3.11+'s locations */
#define BT_PY_LT_LEN 1024       /* line table bytes read */

/* A place in a code object met for the first time by a stack of process
 * h.tgid (h.type = BT_RAW_PY_CODE, no seq): its names and the code's line
 * table, read while the process lives, so its frames are named, with the
 * line being run (computed by the recorder: user/stacks/py_lines.c),
 * after it exits. Sent once per (tgid, key) while py_code_seen
 * remembers it. */
struct bt_raw_py_code {
	struct bt_event_hdr h;
	__u64 key;       /* the frames' ip (BT_FRAME_PY_BIT set) */
	__u32 line;      /* co_firstlineno */
	__u32 flags;     /* BT_PY_CODE_* */
	__s32 instr;     /* byte offset in the code of the instruction run (< 0: not started) */
	__u16 lt_len;    /* bytes of linetable read */
	__u16 pad;
	char name[96];   /* co_qualname, NUL-terminated (BT_PY_NAME_LEN) */
	char file[160];  /* co_filename (BT_PY_FILE_LEN) */
	__u8 linetable[BT_PY_LT_LEN]; /* co_linetable's first lt_len bytes */
};

/* Per-CPU counters of stacks not taken (a PERCPU_ARRAY, one slot). */
struct bt_stack_stats {
	__u64 kernel_err;  /* bpf_get_stack() failed for a kernel stack */
	__u64 user_err;    /* ... for a user stack (e.g. -EFAULT) */
	__u64 def_drops;   /* a new stack's definition did not fit in the ring */
	__u64 offcpu_short;/* blocks shorter than --offcpu-min, dropped (not a loss) */
	__u64 offcpu_nomem;/* switch-outs whose stacks found the pending table full */
	__u64 samples;     /* sample programs run (idle samples excluded) */
	/* user stacks walked with unwind tables (bpf/unwind_walk.bpf.h) */
	__u64 unw_walks;   /* walks of processes whose mappings were loaded */
	__u64 unw_no_proc; /* stacks of processes not loaded yet: the leaf only */
	__u64 unw_no_map;  /* walks ended at an address in no executable mapping */
	__u64 unw_anon;    /* frames in anonymous code (JIT): frame pointers followed */
	__u64 unw_signal;  /* ... at a signal frame */
	__u64 unw_bad;     /* ... at unreadable stack or an invalid frame */
	__u64 unw_fp;      /* frames with no unwind row: frame pointers followed */
	__u64 unw_no_table;/* frames of binaries without a table (memory bound, no .eh_frame) */
	__u64 unw_pending; /* walks ended at a file whose table was not built yet */
	__u64 unw_maps_new;/* executable mappings the kernel made, kept in the process's entry */
	__u64 unw_maps_full;/* ... dropped: the process had BT_UNWIND_MAPS already */
	__u64 unw_execs;   /* processes given a fresh entry at exec */
	__u64 unw_execs_full;/* ... not: the per-process map was full */
	__u64 unw_copies;  /* stacks copied where a walk stopped at a table not built yet */
	__u64 unw_copy_rate;/* ... not copied: over BT_STACK_COPY_RATE (the stack stays cut) */
	__u64 unw_copy_drops;/* ... copied, but the copy did not fit in the ring */
	__u64 unw_copy_old;/* ... not copied: a process older than BT_STACK_COPY_YOUNG_NS */
	/* Python frames (bpf/python_frames.bpf.h), of stacks with a frame in
	 * a CPython interpreter's _PyEval_EvalFrameDefault */
	__u64 py_walks;    /* stacks whose Python frames were read */
	__u64 py_frames;   /* Python frames put in stacks */
	__u64 py_unknown;  /* ... not read: an interpreter version without offsets */
	__u64 py_no_thread;/* ... not read: no thread state of the thread found */
	__u64 py_unreadable;/* walks cut by unreadable interpreter memory */
	__u64 py_cut;      /* walks cut at BT_PY_MAX_FRAMES or BT_MAX_FRAMES */
	__u64 py_code_drops;/* code objects' names that did not fit in the ring (frames unnamed) */
};

/* Value of offcpu_pending (key: tid): a task switched out sleeping, its
 * stacks until it runs again. The recorder reads the hashes so that the
 * stack table does not reclaim them meanwhile (stack_table.h). */
struct bt_offcpu_pending {
	__u64 ts;
	__u64 khash, uhash;
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

/* A sys_enter not yet in the ring (emit.bpf.h: deferred enters). The fields
 * are written while armed is 0, armed set last; whoever takes it clears armed
 * with an exchange, so a program nesting on the CPU never takes it twice. */
struct bt_sys_pending {
	__u64 ts_ns;
	__s64 id;
	__u32 seq;
	__u32 tid;
	__u32 tgid;
	__u32 reserved;
	__u64 armed; /* 1: held here (64 bits: clang 14's BPF atomics) */
};

/* A CPU's completed system calls not yet in its ring (emit.bpf.h: batched
 * pairs): one reservation for up to BT_SYS_BATCH calls. pairs[0..count)
 * are held; whoever puts them into the ring takes count with an exchange.
 * Apart from bt_cpu_state, whose layout a restarting recorder adopts.
 * 16: a reservation and its commit cost more than the calls they carry in
 * a VM (interrupts off and on, paravirtualized); against 4, sys_exit ran
 * ~20-30% shorter and the drain ~15% (fewer records). 32 gained no more. */
#define BT_SYS_BATCH 16
struct bt_sys_batch {
	__u64 count;
	struct bt_raw_sys_pair pairs[BT_SYS_BATCH];
};

/* Per-CPU state of the BPF side (a BPF_MAP_TYPE_PERCPU_ARRAY with one slot). */
struct bt_cpu_state {
	__u64 seq;                   /* next sequence number */
	__u64 drops[BT_GROUP_MAX];   /* ring-buffer reservation failures per group */
	__u64 emitted[BT_GROUP_MAX]; /* events submitted per group */
	struct bt_sys_pending sys;   /* this CPU's deferred sys_enter */
};

/* Per CPU, the drain's forced wakeups (emit.bpf.h: bt_submit_flags). Plain
 * increments: statistics, where a program nesting at the wrong instruction
 * may cost one count, never an event. */
struct bt_wake_state {
	__u64 cons;   /* the ring's consumer position + 1 at the last forced wakeup */
	__u64 forced; /* wakeups forced past wakeup_bytes */
	__u64 held;   /* checks past wakeup_bytes that did not wake: the drain had not moved since */
};

/*
 * The layouts user space, the BPF programs and dumps on disk share: a field
 * added, removed or moved changes a size here first (a compile error on
 * both sides), then docs/dump-format.md and the dump version where a dump
 * stores the struct.
 */
#define BT_ABI_SIZE(s, n) _Static_assert(sizeof(struct s) == (n), #s " layout (bpf/events.h)")
BT_ABI_SIZE(bt_event_hdr, 24);
BT_ABI_SIZE(bt_ev_sched_switch, 40);
BT_ABI_SIZE(bt_ev_sched_wakeup, 32);
BT_ABI_SIZE(bt_ev_sched_migrate, 32);
BT_ABI_SIZE(bt_ev_task, 48);
BT_ABI_SIZE(bt_ev_irq, 32);
BT_ABI_SIZE(bt_ev_power, 32);
BT_ABI_SIZE(bt_ev_syscall, 40);
BT_ABI_SIZE(bt_ev_uprobe, 96);
BT_ABI_SIZE(bt_ev_app, 32);
BT_ABI_SIZE(bt_ev_sample, 32);
BT_ABI_SIZE(bt_ev_offcpu, 40);
BT_ABI_SIZE(bt_ev_waker, 40);
BT_ABI_SIZE(bt_ev_probe_stack, 40);
BT_ABI_SIZE(bt_raw_stacks, 56);
BT_ABI_SIZE(bt_raw_sys_pair, 64);
BT_ABI_SIZE(bt_raw_stack_def, 40);
BT_ABI_SIZE(bt_raw_stack_copy, 64);
BT_ABI_SIZE(bt_stack_frame_file, 24);
BT_ABI_SIZE(bt_stack_stats, 240);
BT_ABI_SIZE(bt_raw_py_code, 24 + 16 + 8 + 96 + 160 + BT_PY_LT_LEN);
BT_ABI_SIZE(bt_offcpu_pending, 24);
BT_ABI_SIZE(bt_ev_app_funcs, 56);
BT_ABI_SIZE(bt_sys_pending, 40);
BT_ABI_SIZE(bt_cpu_state, 144);
BT_ABI_SIZE(bt_wake_state, 24);
#undef BT_ABI_SIZE

#endif /* BTRACE_EVENTS_H */
