/* SPDX-License-Identifier: MIT */
/*
 * handover.h - the recorder's block buffer in a memfd that outlives the
 * recorder (issue 42): systemd's fd store keeps it across a restart or a
 * crash, an exec keeps it across an in-place upgrade, a parent may hold it
 * (--resume-fd). The next recorder validates what it is handed as
 * untrusted input, writes it out as a dump first, then records on in the
 * same memory.
 *
 * The file (all offsets page-aligned; every part checked on open):
 *   page 0      struct bt_ho_header: magic, version, geometry, checksum;
 *               then struct bt_ho_live: writer pid, clean-stop state
 *   meta_off    the buffer's metadata words (bt_shm_place.meta_off)
 *   state_off   two slots of state_bytes: counters and task names, written
 *               alternately each second, each with its own checksum, so
 *               a writer that dies mid-write leaves the other intact
 *   data_off    the data blocks (bt_shm_place.data_off), max_size bytes
 *   then        two slots of the stack table's snapshot (names and births),
 *               saved alternately every 2 s, described at page 0 + 1024
 *               (struct bt_ho_stacks_desc; zeros in older recorders' files)
 */
#ifndef BTRACE_HANDOVER_H
#define BTRACE_HANDOVER_H
#include <stddef.h>
#include <stdint.h>
#include "btrace_buffer.h"

#define BT_HO_MAGIC 0x31564f4843544221ull /* "!BTCHOV1" */
#define BT_HO_VERSION 1
#define BT_HO_FDNAME "btrace-buffer"
#define BT_HO_COUNTERS_FDNAME "btrace-counters" /* the programs' cpu_state map, under systemd */
#define BT_HO_MAX_TASKS 65536u

enum bt_ho_state {
	BT_HO_RUNNING = 1, /* a recorder writes it (or died doing so) */
	BT_HO_STOPPED = 2, /* stopped cleanly (SIGTERM, systemctl restart) */
	BT_HO_EXEC = 3,    /* stopped cleanly, and the next start runs another binary (an upgrade) */
};

struct bt_task;
struct bt_event_hdr;

/* The BPF side's per-CPU counters of the previous recorder at its end
 * (handover_pins.c): known only if it pinned them and died (a clean stop
 * drains everything and removes the pin). */
struct bt_ho_tail {
	int known;
	uint32_t ncpus;
	uint64_t *seq_next; /* [ncpus] the next seq its programs would have taken */
	uint64_t *drops;    /* [ncpus * BT_GROUP_MAX] ring reservation failures */
	uint64_t *emitted;  /* [ncpus * BT_GROUP_MAX] events put into its rings */
};

/* The counters a dump of the handed buffer reports, as of the last save. */
struct bt_ho_counters {
	uint64_t saved_boot_ns;  /* CLOCK_BOOTTIME of the save */
	uint64_t drain_events;   /* events the drain wrote into the buffer */
	uint64_t drain_rejected;
	uint64_t ring_drops;     /* events lost in the BPF rings, all CPUs */
	uint64_t entries_written, bytes_written, padding_bytes, blocks_used;
	uint32_t ncpus, groups_enabled;
	uint64_t tasks_truncated; /* task names past BT_HO_MAX_TASKS not saved */
};

/* What a start found handed to it, after validation. */
struct bt_ho_found {
	int state;                 /* enum bt_ho_state of the previous recorder */
	uint32_t pid;              /* the previous recorder */
	uint64_t recorders;        /* how many recorders wrote this memory before */
	struct bt_capture *kbuf;   /* its blocks (bt_capture_salvage), owned */
	struct bt_salvage_stats ss;
	struct bt_ho_counters cnt; /* zero if no state slot was valid */
	int have_state;            /* a state slot passed its checks */
	struct bt_task *tasks;     /* its task names, owned */
	size_t ntasks;
	uint64_t newest_ts;        /* the newest event kept (CLOCK_BOOTTIME), 0 if none */
	struct bt_ho_tail tail;    /* its programs' counters at its death, if pinned */
	char tail_err[160];        /* why tail is not known, for a recorder that died */
	uint64_t after_newest;     /* set by bt_handover_dump: tail's events after the newest kept */
	uint32_t *seq_base;        /* set by bt_handover_dump: [cnt.ncpus] each CPU's next seq at its end */
	/* its stack table as last saved (bt_handover_save_stacks), checked
	 * against its checksum and sizes only: decoded by bt_handover_dump */
	uint8_t *stacks;           /* the slot, header included, owned; NULL none */
	uint64_t stacks_saved_ns;  /* CLOCK_BOOTTIME of that save */
	uint32_t stacks_named;     /* set by bt_handover_dump: stacks its table held */
	uint64_t stacks_reclaimed; /* set by bt_handover_dump: stack ids it could not name */
	char stacks_err[200];      /* set by bt_handover_dump: why the saved table did not decode */
};

struct bt_handover;

/* Take the memfd handed to this process (--resume-fd, or the one systemd
 * passed as BT_HO_FDNAME: sd_notify.h). An empty file is fresh memory; a
 * file with contents is validated and its blocks and state copied into
 * *found (found->kbuf NULL: nothing usable, the reason in found_err).
 * NULL with the reason in err if it is not usable at all (not a file this
 * process can map and resize): the caller starts on a new one. */
struct bt_handover *bt_handover_take(int fd, struct bt_ho_found *found, char *found_err, size_t found_errlen,
				     char *err, size_t errlen);
/* A new memfd for a recorder started with nothing handed. NULL, errno. */
struct bt_handover *bt_handover_new(char *err, size_t errlen);
/* Lay the file out for cfg's buffer (resized, header and state rewritten,
 * old contents gone) and say where the buffer goes. 0 or -errno. */
int bt_handover_prepare(struct bt_handover *h, const struct bt_config *cfg, uint32_t ncpus, struct bt_shm_place *place,
			char *err, size_t errlen);
int bt_handover_fd(const struct bt_handover *h);
/* Save counters and task names into the next state slot (the main loop,
 * each second, and at stop). 0 or -errno. */
int bt_handover_save(struct bt_handover *h, const struct bt_ho_counters *c, const struct bt_task *tasks, size_t n);
/* Save the stack table's snapshot (packed as a dump's STKP, names
 * included) and its births into the next stacks slot: what the next
 * start's dump of this memory names its stacks with. 0, -E2BIG (larger
 * than a slot: not saved) or -errno. */
struct bt_stack_births_arrays;
int bt_handover_save_stacks(struct bt_handover *h, const void *stacks, uint64_t len,
			    const struct bt_stack_births_arrays *b);
/* The state a next recorder will find: BT_HO_STOPPED after the final dump,
 * BT_HO_EXEC before an exec. */
void bt_handover_mark(struct bt_handover *h, enum bt_ho_state st);
/* Unmaps and closes the fd (systemd's store or a parent keeps its copy). */
void bt_handover_close(struct bt_handover *h);
void bt_ho_found_free(struct bt_ho_found *f);
/* The dump's reason for what was found: "restart", "upgrade", "recorder-died". */
const char *bt_ho_reason(const struct bt_ho_found *f);

/* Pin this recorder's per-CPU BPF counters (the cpu_state map) under a
 * name of the memfd and this pid in bpffs (/sys/fs/bpf/btrace-bpf, or
 * $BTRACE_PIN_DIR), for the next start if this process dies; a dead
 * writer's pin older than a day is swept. 0, or -errno with the reason.
 * (Under systemd, whose unit makes /sys read-only, the map goes to the fd
 * store instead: recorder.c.) */
int bt_ho_pin(int memfd, int cpu_state_fd, char *err, size_t errlen);
/* At a clean stop, after the last drain: nothing is left to count. */
void bt_ho_unpin(int memfd);
/* Read and remove the pin writer_pid left for memfd into *t. 0, or
 * -errno with the reason (-ENOENT: none). */
int bt_ho_take_pinned(int memfd, uint32_t writer_pid, struct bt_ho_tail *t, char *err, size_t errlen);
/* The same from the map's fd (systemd's fd store keeps it, BT_HO_COUNTERS_FDNAME). */
int bt_ho_read_counters(int map_fd, struct bt_ho_tail *t, char *err, size_t errlen);
void bt_ho_tail_free(struct bt_ho_tail *t);

/* The in-place upgrade: execute exe (the path this recorder started from)
 * with this process's command line and --resume-fd memfd. Returns only on
 * failure: -errno with the reason. */
int bt_ho_exec(const char *exe, int memfd, char *err, size_t errlen);

/* Write what was found (found->kbuf not NULL) as a dump into dir (a
 * generated name, written to out_path); its events counted in *events.
 * Entries with an event the dump's reader would refuse are dropped first
 * (counted in found->ss.entries_bad); stack ids become "reclaimed" (the
 * stack table did not outlive the recorder).
 * 0, or -errno with the reason in err. */
int bt_handover_dump(struct bt_ho_found *f, const char *dir, int zlevel, char *out_path, size_t out_len,
		     uint64_t *events, char *err, size_t errlen);

/* A stack event's ids as "reclaimed" (the stack table did not outlive
 * the recorder that took them): a dump's fix_event. */
void bt_ho_forget_stacks(void *ctx, struct bt_event_hdr *ev, uint32_t len);

/* The history found, after its dump, joined to this recorder's later
 * dumps (handover_prior.c): the window continues across the restart. */
struct bt_ho_prior;
struct bt_dump_prior;
/* Takes found's blocks, task names and seq bases (after bt_handover_dump).
 * NULL if there are none, or out of memory. */
struct bt_ho_prior *bt_ho_prior_take(struct bt_ho_found *f);
/* Its part of a dump whose own buffer of `capacity` bytes has used `used`
 * since this recorder started (resumed_ts: its programs attached): the
 * newest of its blocks that fit in the rest, as if the buffer had gone on.
 * 1 with *p filled, 0 if none is left (it can be freed). */
int bt_ho_prior_fill(const struct bt_ho_prior *h, uint64_t capacity, uint64_t used, uint64_t resumed_ts,
		     struct bt_dump_prior *p);
/* This recorder's task names t[n] (sorted by tid) and its names of other
 * threads: a new sorted array in *out. 0 or -ENOMEM. */
int bt_ho_prior_tasks(const struct bt_ho_prior *h, const struct bt_task *t, size_t n, struct bt_task **out,
		      size_t *nout);
void bt_ho_prior_free(struct bt_ho_prior *h);

/* Check and read a handed file mapped at base (len bytes) as untrusted
 * input; what bt_handover_take does after mapping. fd: the file, to skip
 * the data part's holes (-1: read all). 0, or -EINVAL / -ENOMEM with the
 * reason in err. */
int bt_ho_read(const uint8_t *base, size_t len, int fd, struct bt_ho_found *found, char *err, size_t errlen);
#endif
