/* SPDX-License-Identifier: MIT */
/*
 * loader.h - the BPF side of `record`: open the skeleton, probe what the
 * running kernel has, set read-only data, load, attach, and drain the BPF
 * ring buffers into the block buffer.
 *
 *   BPF programs --(rings[cpu]: one ring buffer per CPU, --> drain thread
 *        |          no wakeup per event)                    |  bt_tasks_apply (lifecycle events,
 *   cpu_state map (seq, drops, emitted per CPU)             v   in time order)
 *                                                       bt_write(buf, ev->cpu, ev, len)
 *
 * One ring buffer per possible CPU (a shared ring makes CPUs contend on every
 * event), all drained by one thread today through one epoll set. struct
 * bt_drain owns a range of rings, so a many-core machine can get several
 * drain threads (CPUs / K each) without changing the API.
 */
#ifndef BTRACE_LOADER_H
#define BTRACE_LOADER_H
#include <stddef.h>
#include <stdint.h>

struct bt_trig_conf;

struct bt_buffer;
struct bt_task_table;
struct bt_event_hdr;

#define BT_DEFAULT_RING_SIZE (16u << 20)
#define BT_DEFAULT_DRAIN_MS 20
/* Nice level of the drain thread: a saturated machine must not starve it
 * (the rings would overflow). The dump thread runs at it too. */
#define BT_DRAIN_NICE (-10)

struct bt_loader_opts {
	uint32_t groups;       /* requested groups, bitmask of 1 << enum bt_group */
	uint32_t filter_tgid;  /* 0: every process */
	char filter_comm[16];  /* "": every name */
	int waking;            /* sched group: also sched_waking (Perfetto's runnable state) */
	uint64_t ring_size;    /* bytes, the total over all CPUs, 0 = default; each
				* possible CPU gets ring_size / ncpus rounded up to
				* a power of two and at least a page */
	uint64_t wakeup_bytes; /* force a wakeup past this fill of a CPU's ring;
				* 0 = half of a CPU's ring */
	unsigned drain_ms;     /* drain period; 0 = BT_DEFAULT_DRAIN_MS */
	/* call stacks (record_stacks.bpf.h); any of them needs `stacks` at start */
	uint32_t sample_hz;    /* --sample: CPU samples per second per CPU, 0 off */
	int stacks_switch;     /* --stacks switch: off-CPU stacks */
	int stacks_wakeup;     /* --stacks wakeup: waker stacks */
	uint64_t offcpu_min_ns;/* --offcpu-min */
	uint32_t max_stacks;   /* sizes the kernel's table of stacks already sent */
	uint64_t unwind_mem;   /* --unwind-mem: bytes of unwind rows; 0: user stacks by frame pointers */
	int python_frames;     /* CPython frames read where the unwinder walks (not --no-python-frames) */
	/* BT_TRIG_MAX trigger slots evaluated inside record's own programs
	 * (bt_trig_bpf_record_conf), or NULL: none. An armed sched-latency
	 * slot keeps sched_switch attached even when the sched group is off. */
	const struct bt_trig_conf *trig_conf;
};

struct bt_drain_stats {
	uint64_t events;    /* written into the block buffer */
	uint64_t rejected;  /* refused by bt_write() (e.g. -EMSGSIZE) */
	uint64_t malformed; /* too short, or a CPU out of range: dropped */
	uint64_t wakeups;   /* drain passes */
	uint64_t exec_wakes; /* long waits an exec ended (drain.c: DRAIN_IDLE_MS) */
	uint64_t sys_pair_records, sys_pairs; /* system-call pairs, and the ring records (batches) holding them */
	uint64_t ring_peak; /* the fullest a drain pass found a CPU's ring, bytes */
	uint32_t wait_ms;   /* the drain's wait now (loader drain_ms while events flow) */
	uint32_t drain_ms;
};

struct bt_loader;
struct bt_live;

/*
 * Open, probe, load and attach. On failure returns NULL, sets errno and
 * writes one line (cause and remedy) into err. Tracepoints the kernel lacks
 * are skipped with a warning on stderr.
 */
struct bt_loader *bt_loader_open(const struct bt_loader_opts *o, char *err, size_t errlen);

/* Groups that have at least one attached program (bitmask). */
uint32_t bt_loader_groups(const struct bt_loader *l);
/* The errno of CPU sampling refused by the kernel's policy (EACCES: Debian's
 * perf_event_paranoid=3), recording going on without it; 0: none. */
int bt_loader_sampling_refused(const struct bt_loader *l);
/* Number of attached programs; ring buffer bytes in use, total over all CPUs
 * and per CPU; the fill of a CPU's ring that forces a wakeup. */
unsigned bt_loader_nattached(const struct bt_loader *l);
uint64_t bt_loader_ring_size(const struct bt_loader *l);
uint64_t bt_loader_ring_size_per_cpu(const struct bt_loader *l);
uint64_t bt_loader_wakeup_bytes(const struct bt_loader *l);
/* The drain's wakeups the programs forced past wakeup_bytes, and the
 * checks that held one back (the drain had not moved since): a map read,
 * for ctl status only. */
void bt_loader_wake_stats(const struct bt_loader *l, uint64_t *forced, uint64_t *held);
/* Possible CPUs: the range of event cpu numbers and of the per-CPU arrays. */
uint32_t bt_loader_ncpus(const struct bt_loader *l);

/* File descriptors of the array of per-CPU ring buffers (`rings`, an
 * ARRAY_OF_MAPS indexed by CPU) and of the per-CPU state map, for other BPF
 * objects that emit into the same rings (uprobes.h). */
int bt_loader_rings_fd(const struct bt_loader *l);
/* The trigger ring and counters record's programs fire into; the trigger
 * loader shares them (trigger_bpf.h). */
void bt_loader_trig_maps(const struct bt_loader *l, int *ring_fd, int *counts_fd);
int bt_loader_cpu_state_fd(const struct bt_loader *l);
/* The unwinder's maps (bpf/unwind_walk.bpf.h) for unwind_procs.h; -1 if
 * user stacks are walked by frame pointers. */
struct bt_unwind_maps;
int bt_loader_unwind_fds(const struct bt_loader *l, struct bt_unwind_maps *m);
/* The stack maps (stack_scratch, stack_seen, stack_stats), for the uprobe
 * programs' --ustack. */
void bt_loader_stack_fds(const struct bt_loader *l, int fds[3]);

/* Start the drain thread(s): events go to buf (core = event cpu) and
 * lifecycle events to tasks first; stack hashes become ids of `stacks`
 * (NULL: no stacks asked for). 0 or -errno. */
struct bt_stack_table;
int bt_loader_start(struct bt_loader *l, struct bt_buffer *buf, struct bt_task_table *tasks,
		    struct bt_stack_table *stacks);
/* The kernel side's stack counters summed over CPUs (events.h); 0 or -errno. */
struct bt_stack_stats;
int bt_loader_read_stack_stats(const struct bt_loader *l, struct bt_stack_stats *sum);

/* The pending stack copies' counters (stack_copies.h; zeros: none). */
struct bt_stack_copy_counts;
void bt_loader_copy_counts(const struct bt_loader *l, struct bt_stack_copy_counts *c);

/* Wait until every event submitted before the call is in the block buffer
 * and every task event among them in the task table (the drain thread
 * finished a pass over the rings that started after the call), at most
 * timeout_ms. 0, or -ETIMEDOUT under a flood the drain cannot
 * catch up with. */
int bt_loader_flush(struct bt_loader *l, unsigned timeout_ms);

/* Detach every program: no new events after this returns. */
void bt_loader_detach(struct bt_loader *l);

/* Stop the drain thread(s) after a last full drain of the rings. */
void bt_loader_stop(struct bt_loader *l);

void bt_loader_drain_stats(const struct bt_loader *l, struct bt_drain_stats *st);

/*
 * Per-CPU counters of the BPF side, [ncpus * BT_GROUP_MAX] each (index
 * cpu * BT_GROUP_MAX + group); seq is [ncpus]. Any pointer may be NULL.
 * 0 or -errno.
 */
int bt_loader_read_cpu_state(const struct bt_loader *l, uint64_t *drops, uint64_t *emitted,
			     uint64_t *seq);

/* Called by the drain thread for every uprobe and USDT event, after it is in
 * the buffer (e.g. for dump triggers). Set before bt_loader_start(). */
typedef void (*bt_probe_hook)(void *ctx, const struct bt_event_hdr *h, uint32_t len);
void bt_loader_set_hook(struct bt_loader *l, bt_probe_hook fn, void *ctx);

/* The cold tier behind the buffer (cold_tier.h), NULL: none. Its blocks
 * hold events too, so the stack table keeps their stacks as long as it
 * holds them. Set before bt_loader_start(). */
struct bt_cold;
void bt_loader_set_cold(struct bt_loader *l, struct bt_cold *cold);

/* Called by the drain thread after each pass (the unwinder's kick: it
 * sleeps until then instead of polling); fn NULL: none. It returns 1 when
 * the pass gave it work: the drain then keeps its short period. Set before
 * bt_loader_start(); what ctx points to must outlive the drain
 * (bt_loader_stop). */
typedef int (*bt_pass_hook)(void *ctx);
void bt_loader_set_pass_hook(struct bt_loader *l, bt_pass_hook fn, void *ctx);

/* Runs the kernel skipped of each of the recorder's tracepoint programs
 * (prog_misses.h), at most max; returns how many were written. */
struct bt_prog_miss;
size_t bt_loader_prog_misses(const struct bt_loader *l, struct bt_prog_miss *out, size_t max);

/* The drain's record of what the buffer holds (live_window.h); NULL before
 * bt_loader_start(). */
struct bt_live *bt_loader_live(const struct bt_loader *l);

void bt_loader_destroy(struct bt_loader *l);

/* libbpf's messages: level 0 none (default), 1 warnings, 2 everything. */
void bt_loader_set_libbpf_verbosity(int level);
#endif
