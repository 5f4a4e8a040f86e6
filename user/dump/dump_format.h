/* SPDX-License-Identifier: MIT */
/*
 * dump_format.h - on-disk layout of btrace-bpf dump files (.btd), shared by
 * the writer (dump_write.c) and the reader (dump_open.c, dump_sections.c).
 * docs/dump-format.md is the prose version; keep both in step.
 *
 *   offset 0              header_size (512)                    + body_len
 *   +---------------------+-----------------------------------+
 *   | struct btd_header   | body: raw, or one zlib stream of: |
 *   | (never compressed)  |  TASK PROB LOSS PMIS BLCK... END  |
 *   +---------------------+-----------------------------------+
 *
 * Every body section is struct btd_section + len bytes of payload + zero
 * padding to a multiple of 8, so everything in the (uncompressed) body is
 * 8-byte aligned. All integers are little-endian.
 */
#ifndef BTRACE_DUMP_FORMAT_H
#define BTRACE_DUMP_FORMAT_H
#include <stdint.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the dump format is little-endian; add byte swapping for this host"
#endif

#define BTD_MAGIC "\x89" "BTD\r\n\x1a\n" /* PNG-style: catches text-mode mangling */
#define BTD_MAGIC_LEN 8
#define BTD_VERSION 1
#define BTD_HEADER_SIZE 512
#define BTD_COMP_NONE 0
#define BTD_COMP_ZLIB 1
#define BTD_CLOCK_BOOTTIME 7 /* CLOCK_BOOTTIME */
#define BTD_MAX_GROUPS 64
#define BTD_MAX_CPUS 4096

struct btd_header {
	uint8_t magic[8];              /*   0 BTD_MAGIC */
	uint32_t version;              /*   8 BTD_VERSION */
	uint32_t header_size;          /*  12 body starts here; >= 512 */
	uint32_t compression;          /*  16 BTD_COMP_* */
	uint32_t zlevel;               /*  20 zlib level used, 0 if none */
	uint64_t body_len;             /*  24 bytes stored after the header */
	uint64_t body_raw_len;         /*  32 bytes of the uncompressed body */
	uint32_t body_crc;             /*  40 crc32 of the stored body bytes */
	uint32_t raw_crc;              /*  44 crc32 of the uncompressed body */
	uint32_t clock_id;             /*  48 clock of event timestamps */
	uint32_t ncpus;                /*  52 */
	uint32_t ngroups;              /*  56 */
	uint32_t groups_enabled;       /*  60 bitmask of enum bt_group */
	uint32_t block_size;           /*  64 buffer geometry ... */
	uint32_t nblocks;              /*  68 */
	uint32_t active;               /*  72 */
	uint32_t flags;                /*  76 reserved, 0 */
	uint64_t buffer_size;          /*  80 */
	uint64_t created_realtime_ns;  /*  88 CLOCK_REALTIME when the dump started */
	uint64_t created_boottime_ns;  /*  96 CLOCK_BOOTTIME at the same instant */
	uint64_t dump_seq;             /* 104 */
	uint64_t overlaps_dump;        /* 112 */
	uint64_t recorder_pid;         /* 120 */
	uint64_t nblocks_stored;       /* 128 BLCK sections */
	uint64_t nevents_stored;       /* 136 entries in them */
	uint64_t nsections;            /* 144 sections, END included */
	char hostname[64];             /* 152 NUL-terminated */
	char kernel[128];              /* 216 uname release */
	char reason[16];               /* 344 */
	uint8_t reserved[148];         /* 360 zero */
	uint32_t header_crc;           /* 508 crc32 of bytes 0..507 */
};
_Static_assert(sizeof(struct btd_header) == BTD_HEADER_SIZE, "dump header layout");

#define BTD_FOURCC(a, b, c, d) \
	((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define BTD_SEC_TASKS BTD_FOURCC('T', 'A', 'S', 'K')
#define BTD_SEC_PROBES BTD_FOURCC('P', 'R', 'O', 'B')
#define BTD_SEC_LOSS BTD_FOURCC('L', 'O', 'S', 'S')
#define BTD_SEC_BLOCK BTD_FOURCC('B', 'L', 'C', 'K')
#define BTD_SEC_END BTD_FOURCC('E', 'N', 'D', '.')
#define BTD_SEC_APP_BLOCK BTD_FOURCC('A', 'B', 'L', 'K') /* optional: older readers skip them */
#define BTD_SEC_APPS BTD_FOURCC('A', 'P', 'P', 'S')
#define BTD_SEC_TRIGGERS BTD_FOURCC('T', 'R', 'I', 'G') /* optional: older readers skip it */
#define BTD_SEC_PROG_MISSES BTD_FOURCC('P', 'M', 'I', 'S') /* optional: older readers skip it */
#define BTD_SEC_STACKS BTD_FOURCC('S', 'T', 'C', 'K') /* optional: older readers skip it; no longer written */
#define BTD_SEC_STACKS_PACKED BTD_FOURCC('S', 'T', 'K', 'P') /* the stack table, packed; marked required */
#define BTD_SEC_STACK_WHY BTD_FOURCC('S', 'T', 'K', 'W') /* optional: why truncated stacks were cut */
#define BTD_SEC_SRCLOCS BTD_FOURCC('S', 'L', 'O', 'C') /* optional: source lines of the stacks' frames, after them */
#define BTD_SEC_UNW_LOST BTD_FOURCC('U', 'N', 'W', 'L') /* optional: binaries that lost their unwind table, why */
#define BTD_SEC_APP_FUNCS BTD_FOURCC('A', 'F', 'U', 'N') /* optional: older readers skip it */
#define BTD_SEC_F_REQUIRED 0x1 /* a reader that does not know the type must refuse the file */

struct btd_section {
	uint32_t type;  /* BTD_SEC_* */
	uint32_t flags; /* BTD_SEC_F_* */
	uint64_t len;   /* payload bytes, padding excluded */
};

/* TASK and PROB payloads: struct btd_table + count records of rec_size bytes
 * (rec_size may grow in later versions; readers use the prefix they know). */
struct btd_table {
	uint32_t count;
	uint32_t rec_size;
};

struct btd_task {
	uint32_t tid;
	uint32_t tgid;
	uint64_t exit_ts;
	char comm[16];
};

struct btd_probe {
	uint32_t id;
	uint32_t flags;
	int32_t pid;
	uint32_t nargs;
	uint64_t offset;
	char spec[256];
	char binary[256];
	char func[128];
};

/* LOSS: fixed part, then u64 counters[ncounters] (enum btd_counter order),
 * u64 rb_drops[ncpus * ngroups] (index cpu * ngroups + group), then, if
 * has_emitted, u64 rb_emitted[ncpus * ngroups]. */
struct btd_loss {
	uint32_t ncpus;
	uint32_t ngroups;
	uint32_t has_emitted;
	uint32_t ncounters;
	uint64_t drain_events;
	uint64_t drain_rejected;
};

enum btd_counter { /* struct bt_stats at dump start */
	BTD_CNT_ENTRIES_WRITTEN,
	BTD_CNT_BYTES_WRITTEN,
	BTD_CNT_ENTRIES_REJECTED,
	BTD_CNT_PADDING_BYTES,
	BTD_CNT_BLOCKS_USED,
	BTD_CNT_BLOCKS_CLOSED,
	BTD_CNT_BLOCKS_SKIPPED,
	BTD_CNT_POSITIONS_STALE,
	BTD_CNT_CORE_RACES,
	BTD_CNT_RESIZES,
	BTD_CNT_SIZE,
	BTD_CNT_MAX_SIZE,
	BTD_CNT_RESIDENT,
	BTD_CNT_METADATA_BYTES,
	BTD_CNT_BLOCK_SIZE,
	BTD_CNT_NBLOCKS,
	BTD_CNT_ACTIVE,
	BTD_CNT_NCORES,
	BTD_CNT_ENTRIES_DROPPED,
	/* the cold tier (user/coldtier, struct bt_cold_stats); COLD_SIZE 0: none */
	BTD_CNT_COLD_SIZE,
	BTD_CNT_COLD_CODEC,
	BTD_CNT_COLD_BLOCKS_IN,
	BTD_CNT_COLD_RAW_BYTES,
	BTD_CNT_COLD_STORED_BYTES,
	BTD_CNT_COLD_BLOCKS_EVICTED,
	BTD_CNT_COLD_GAPS,
	BTD_CNT_COLD_BLOCKS_HELD,
	BTD_CNT_COLD_CPU_NS,
	BTD_CNT_COLD_BLOCKS_RAW,      /* of BLOCKS_IN, stored uncompressed: the CPU budget paid for no more */
	BTD_CNT_COLD_BUDGET_PPM,      /* the compressor's CPU budget, ppm of one CPU; 0 none */
	BTD_CNT_COLD_HELD_BACK,       /* passes the budget held back */
	BTD_CNT_COLD_HELD_AGO_NS,     /* from the last of them to the dump's start; UINT64_MAX none */
	BTD_CNT_COLD_HOT_FROM,        /* blocks below this position came from the tier */
	/* later dumps: the tier's part of this dump, and its copies */
	BTD_CNT_COLD_BLOCKS_HELD_RAW, /* of BLOCKS_HELD, stored uncompressed */
	BTD_CNT_COLD_COPY_NS,         /* of CPU_NS, passes that only copied (past the budget) */
	BTD_CNT_COLD_DUMPED,          /* blocks of this dump read from the tier */
	BTD_CNT_COLD_DUMPED_RAW,      /* of them, stored uncompressed */
	BTD_CNT_COLD_BLOCKS_CUT,      /* tier blocks left out: older than a hole in their CPU's chain */
	/* a dump of the history a previous recorder left (reason restart,
	 * upgrade, recorder-died; user/handover); all 0 in a recorder's own */
	BTD_CNT_HANDED,               /* 1: this is one */
	BTD_CNT_HANDED_BLOCKS_REFUSED,/* blocks whose metadata was not believable, or a position seen twice */
	BTD_CNT_HANDED_BLOCKS_CUT,    /* open blocks kept only up to their last confirmed entry */
	BTD_CNT_HANDED_BATCHES_REFUSED, /* event batches with an event the reader would refuse */
	BTD_CNT_HANDED_TAIL_KNOWN,    /* 1: its programs' counters at its end were read (pinned) */
	BTD_CNT_HANDED_AFTER_NEWEST,  /* events they took a seq for after the newest kept, all CPUs */
	/* a recorder's own dump whose window continues across its start: the
	 * previous recorder's newest blocks (BTD_BLOCK_PRIOR) come first, their
	 * seqs renumbered to end PRIOR_LOST below this recorder's first (seq 0)
	 * on each CPU; all 0 when the dump holds none */
	BTD_CNT_PRIOR,                /* enum btd_prior_reason, 0: none */
	BTD_CNT_PRIOR_NEWEST_TS,      /* its newest event kept (CLOCK_BOOTTIME) */
	BTD_CNT_PRIOR_RESUMED_TS,     /* this recorder's programs attached: recording resumed */
	BTD_CNT_PRIOR_LOST_KNOWN,     /* 1: its programs' counters at its end were read */
	BTD_CNT_PRIOR_LOST,           /* events they took a seq for after its newest kept, all CPUs */
	BTD_CNT_PRIOR_BLOCKS_LEFT,    /* its blocks past this dump's window (the buffer's size), left out */
	BTD_NCOUNTERS
};

enum btd_prior_reason { BTD_PRIOR_RESTART = 1, BTD_PRIOR_UPGRADE = 2, BTD_PRIOR_DIED = 3 };

/* PMIS (after LOSS): struct btd_table + count records: runs of each loaded
 * BPF program the kernel skipped (bpf_prog_info.recursion_misses): its event
 * was never emitted and took no seq, so no gap shows it. */
struct btd_prog_miss {
	char name[64];     /* program name, NUL-padded */
	uint64_t misses;
	uint32_t prog_id;  /* kernel id while the recorder ran */
	uint32_t reserved; /* 0 */
};

/* BLCK: struct btd_block, then nentries entries, each struct btd_entry +
 * len bytes + zero padding to 8. Padding entries of the buffer are not stored. */
#define BTD_BLOCK_COMPLETE 0x1
#define BTD_BLOCK_PRIOR 0x2 /* the previous recorder's (BTD_CNT_PRIOR): its own position space */
struct btd_block {
	uint64_t pos;
	uint64_t prev_pos;
	uint32_t core;
	uint32_t flags;    /* BTD_BLOCK_* */
	uint32_t nentries;
	uint32_t used;     /* bytes the block used in the buffer, padding included */
};

/* ABLK: struct btd_app_block, then exactly a BLCK payload (struct btd_block
 * and its entries) of one application buffer block. Not counted in END. */
struct btd_app_block {
	uint32_t app;      /* index into the APPS table */
	uint32_t reserved; /* 0 */
};

/* APPS (after every ABLK): struct btd_table (rec_size 0: records vary),
 * then count records: struct btd_app, u64 counters[ncounters] (enum
 * bt_app_counter order), char names[nnames][64] (name id i+1, NUL-padded). */
struct btd_app {
	uint32_t pid;
	uint32_t flags;         /* BT_APP_EXITED */
	uint64_t registered_ts; /* CLOCK_BOOTTIME */
	uint64_t exit_ts;       /* 0 if alive at dump time */
	char name[16];
	uint32_t ncounters;
	uint32_t nnames;
};
#define BTD_APP_NAME_LEN 64
#define BTD_MAX_APPS 65536

/* AFUN (after APPS, at most one per application): the names of the
 * functions its function batches call, symbolized by the recorder from the
 * process's mappings. struct btd_app_funcs, then count records: u64 addr,
 * u32 len, u32 reserved (0), len bytes of name, zero-padded to 8. */
struct btd_app_funcs {
	uint32_t app;   /* index into the APPS table */
	uint32_t count;
};
#define BTD_FUNC_NAME_MAX 1024

/* TRIG (after LOSS, when the recorder has --trigger): struct btd_trig_head,
 * ntriggers records of trig_size bytes (struct btd_trigger prefix), then
 * nfired records of fired_size bytes (struct btd_fired prefix): the hit(s)
 * that caused this dump, none for a dump of another reason. Readers use the
 * prefix they know: records may grow. Strings NUL-padded. */
struct btd_trig_head {
	uint32_t ntriggers;
	uint32_t trig_size;
	uint32_t nfired;
	uint32_t fired_size;
};
struct btd_trigger {
	char name[32];
	char cond[160];         /* the condition as the user wrote it */
	uint32_t kind;          /* enum bt_trig_kind (bpf/trigger.h) */
	uint32_t reserved;
	uint64_t threshold_ns, after_ns, limit_ns;
	uint64_t hits, dumps, skipped, lost; /* since the recorder started */
	/* added later (a record of BTD_TRIGGER_V1_SIZE has none): how each hit
	 * ended, hits = dumps + merged + limited + dropped + pending */
	uint64_t merged, limited, dropped, pending;
	/* added later (BTD_TRIGGER_V2_SIZE has none): this dump's hits of the
	 * trigger that its hit records do not name (a dump names 64) */
	uint64_t unnamed;
};
#define BTD_TRIGGER_V1_SIZE 256 /* the record before merged..pending */
#define BTD_TRIGGER_V2_SIZE 288 /* the record before unnamed */
struct btd_fired {
	uint32_t trig;          /* index into the trigger records */
	uint32_t kind;          /* the trigger's kind, or ctl when `ctl trigger` fired it */
	uint64_t ts_ns;         /* CLOCK_BOOTTIME of the triggering event */
	uint64_t seen_ns;       /* when the recorder learned of it */
	uint64_t due_ns;        /* when the dump was asked for (seen + after) */
	uint64_t value;         /* measured: ns, or the signal number for crash */
	uint64_t threshold_ns;
	int64_t aux;            /* syscall number, -1 none */
	uint32_t tid, tgid, cpu, reserved; /* cpu 2^32-1: not from the kernel */
	char comm[16];
	char name[32];
	char cond[160];
};
_Static_assert(sizeof(struct btd_trigger) == 296 && sizeof(struct btd_fired) == 280, "TRIG layout (docs/dump-format.md)");
#define BTD_MAX_TRIGGERS 1024

#define BTD_ENTRY_KIND 0x41544144u /* "DATA" */
struct btd_entry {
	uint32_t len;  /* payload bytes (one event) */
	uint32_t kind; /* BTD_ENTRY_KIND */
};

/* END: counts of what precedes it (a check), and the read statistics of the
 * pass that produced the blocks. Must be the last section. */
struct btd_end {
	uint64_t nsections; /* sections before END */
	uint64_t nblocks;
	uint64_t nentries;
	uint64_t blocks_read;
	uint64_t blocks_lost;  /* overwritten while the dump read them */
	uint64_t blocks_busy;  /* active blocks with a write in flight: not dumped */
	uint64_t blocks_empty;
	uint64_t entries_read;
};

static inline uint64_t btd_pad8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}
#endif
